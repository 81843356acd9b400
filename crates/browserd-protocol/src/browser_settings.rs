//! The browser settings a session asks for (`browserd mcp --headed --viewport 1280x800 …`) and how `browser_status`
//! shows them next to the settings in force: the browser-wide ones of the browser the session runs on (headless,
//! executable, profile) and the session's own (isolated, viewport).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A page viewport size in CSS pixels (`innerWidth` × `innerHeight`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Viewport {
    /// Width, 100..=10000.
    pub width: u32,
    /// Height, 100..=10000.
    pub height: u32,
}

impl Viewport {
    /// Parses `WxH` (`1280x800`), each side 100..=10000.
    ///
    /// # Errors
    /// When the text is not two numbers joined by `x` within range.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (w, h) = text
            .trim()
            .split_once(['x', 'X'])
            .ok_or_else(|| format!("viewport `{text}` is not WIDTHxHEIGHT (e.g. 1280x800)"))?;
        let side = |s: &str| s.trim().parse::<u32>().ok().filter(|n| (100..=10_000).contains(n));
        match (side(w), side(h)) {
            (Some(width), Some(height)) => Ok(Viewport { width, height }),
            _ => Err(format!("viewport `{text}`: each side must be a whole number from 100 to 10000 (e.g. 1280x800)")),
        }
    }
}

impl std::fmt::Display for Viewport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

/// Browser settings; in `session.open` each field set is one the session asks for, each absent one is "whatever the
/// broker's browser has".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrowserSettings {
    /// `true`: no window; `false`: a visible window (needs a display).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headless: Option<bool>,
    /// The absolute path of the Chromium/Chrome/Edge executable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable_path: Option<String>,
    /// `true`: this session's tabs open in a browser context of their own (cookies, storage apart from every other
    /// session), disposed when the session ends; `false`/absent: the browser's profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolated: Option<bool>,
    /// The absolute path of a persistent profile directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_data_dir: Option<String>,
    /// The page viewport of every tab the session opens or claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub viewport: Option<Viewport>,
}

impl BrowserSettings {
    /// Whether nothing is asked for.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == BrowserSettings::default()
    }

    /// `Err` when the settings contradict themselves or name a relative path.
    ///
    /// # Errors
    /// A message naming the setting.
    pub fn validate(&self) -> Result<(), String> {
        if self.isolated == Some(true) && self.user_data_dir.is_some() {
            return Err("browser: isolated and userDataDir exclude each other (a throwaway profile or that one)".into());
        }
        for (name, path) in [("executablePath", &self.executable_path), ("userDataDir", &self.user_data_dir)] {
            if let Some(path) = path
                && !std::path::Path::new(path).is_absolute()
            {
                return Err(format!("browser.{name} must be an absolute path, not `{path}`"));
            }
        }
        if let Some(v) = self.viewport {
            Viewport::parse(&v.to_string())?;
        }
        Ok(())
    }
}

/// What `browser_status` shows of the browser settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrowserSettingsStatus {
    /// What this session asked for at `session.open` (absent: nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested: Option<BrowserSettings>,
    /// What is in force for this session: the broker's managed browser's settings (as it runs or will run) and the
    /// session's own `isolated` and `viewport`; absent for a remote or extension browser.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective: Option<BrowserSettings>,
    /// Who chose the browser's settings in `effective`: `config` (the broker's configuration) or `session <id>` (the
    /// first session that asked for them).
    pub set_by: String,
    /// The browser this session's tabs open in (`b1`: the broker's default browser; `b2`, …: a managed browser of its
    /// own for settings `b1` does not have), as `status` lists it in `browsers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viewport_parses_width_x_height_in_range() {
        assert_eq!(Viewport::parse("1280x800"), Ok(Viewport { width: 1280, height: 800 }));
        assert_eq!(Viewport::parse(" 800X600 ").map(|v| v.to_string()), Ok("800x600".to_owned()));
        for bad in ["1280", "x800", "12x800", "1280x0", "axb", "20000x800"] {
            assert!(Viewport::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn settings_refuse_contradictions_and_relative_paths() {
        let both = BrowserSettings { isolated: Some(true), user_data_dir: Some("/p".into()), ..Default::default() };
        assert!(both.validate().unwrap_err().contains("exclude"));
        let relative = BrowserSettings { executable_path: Some("chromium".into()), ..Default::default() };
        assert!(relative.validate().unwrap_err().contains("absolute"));
        assert!(BrowserSettings::default().is_empty());
        let json = serde_json::to_value(BrowserSettings { headless: Some(false), ..Default::default() }).unwrap();
        assert_eq!(json, serde_json::json!({"headless": false}));
    }
}
