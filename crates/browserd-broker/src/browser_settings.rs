//! A session's browser settings against the broker's one browser (`browserd mcp --headed --isolated …`).
//!
//! The broker has one browser, shared by every session (that is what lets a user's tab, the CLI and every host see
//! the same tabs). So a session's settings are honoured only where they fit that browser:
//! - a setting equal to what the browser runs with is accepted;
//! - before the managed browser has started, the first session that asks for a setting sets it for the browser
//!   (`set_by: session <id>`); sessions that ask for nothing take the browser as it is;
//! - any other request — a different value once the browser runs or another session chose it, or any setting with a
//!   remote endpoint or the user's browser (extension) — is refused at `session.open` with
//!   `UNSUPPORTED_BY_IMPLEMENTATION`, naming the setting, the value in force and who chose it, and saying what to do
//!   (drop the flag, or `browserd broker stop` so the next session's settings apply). Nothing is silently ignored.

use std::path::PathBuf;

use browserd_cdp::LaunchOptions;
use browserd_protocol::browser_settings::{BrowserSettings, BrowserSettingsStatus, Viewport};
use browserd_protocol::{ErrorCode, ErrorData};

use crate::config::BrowserChoice;
use crate::lazy::{BrowserTarget, LazyChromium};

/// The settings a managed launch means, in the wire's terms (every field set).
#[must_use]
pub fn effective(opts: &LaunchOptions) -> BrowserSettings {
    let executable =
        opts.executable.clone().or_else(|| browserd_cdp::find_executable(None).ok()).map(|p| p.display().to_string());
    BrowserSettings {
        headless: Some(opts.headless),
        executable_path: executable,
        isolated: Some(opts.user_data_dir.is_none()),
        user_data_dir: opts.user_data_dir.as_ref().map(|p| p.display().to_string()),
        viewport: opts.window_size.map(|(width, height)| Viewport { width, height }),
    }
}

/// `opts` with what `asked` sets applied.
fn apply(opts: &LaunchOptions, asked: &BrowserSettings) -> LaunchOptions {
    let mut next = opts.clone();
    if let Some(headless) = asked.headless {
        next.headless = headless;
    }
    if let Some(path) = &asked.executable_path {
        next.executable = Some(PathBuf::from(path));
    }
    if asked.isolated == Some(true) {
        next.user_data_dir = None;
    }
    if let Some(dir) = &asked.user_data_dir {
        next.user_data_dir = Some(PathBuf::from(dir));
    }
    if let Some(v) = asked.viewport {
        next.window_size = Some((v.width, v.height));
    }
    next
}

/// The first setting of `asked` that differs from `now`, as (flag, asked, in force).
fn conflict(asked: &BrowserSettings, now: &BrowserSettings) -> Option<(&'static str, String, String)> {
    let shown = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".to_owned());
    if let Some(h) = asked.headless
        && Some(h) != now.headless
    {
        let word = |h: bool| if h { "headless" } else { "headed" }.to_owned();
        return Some(("--headless/--headed", word(h), word(!h)));
    }
    if asked.executable_path.is_some() && asked.executable_path != now.executable_path {
        return Some(("--executable-path", shown(&asked.executable_path), shown(&now.executable_path)));
    }
    let profile = |s: &BrowserSettings| match (&s.user_data_dir, s.isolated) {
        (Some(dir), _) => format!("profile {dir}"),
        (None, _) => "a throwaway (isolated) profile".to_owned(),
    };
    if (asked.isolated == Some(true) && now.isolated != Some(true))
        || (asked.isolated == Some(false) && now.isolated == Some(true))
        || (asked.user_data_dir.is_some() && asked.user_data_dir != now.user_data_dir)
    {
        let flag = if asked.user_data_dir.is_some() { "--user-data-dir" } else { "--isolated" };
        let wanted = if asked.isolated == Some(false) { "a persistent profile".to_owned() } else { profile(asked) };
        return Some((flag, wanted, profile(now)));
    }
    if let Some(v) = asked.viewport
        && Some(v) != now.viewport
    {
        return Some((
            "--viewport",
            v.to_string(),
            now.viewport.map_or_else(|| "the default".into(), |v| v.to_string()),
        ));
    }
    None
}

fn refuse(message: String) -> ErrorData {
    ErrorData::new(ErrorCode::UnsupportedByImplementation, message).with_next_step(
        "remove the browser flag from this MCP entry, or run `browserd broker stop` (ends every session of the \
         broker) so the next session's settings apply",
    )
}

impl LazyChromium {
    /// Honours `asked` for `session` as the module doc says, or refuses it (changing nothing).
    ///
    /// # Errors
    /// `UNSUPPORTED_BY_IMPLEMENTATION` naming the setting that cannot be honoured.
    pub fn request_settings(&self, session: &str, asked: &BrowserSettings) -> Result<(), ErrorData> {
        if asked.is_empty() {
            return Ok(());
        }
        let BrowserTarget::Managed(base) = self.target() else {
            return Err(refuse(
                "this broker drives a remote browser endpoint (remote_cdp): browser settings such as --headed or \
                 --viewport do not apply to it"
                    .to_owned(),
            ));
        };
        if self.choice() == BrowserChoice::Extension || self.extension_in_use().is_some() {
            return Err(refuse(
                "this broker drives your own browser through the browserd extension: browser settings such as \
                 --headed or --viewport do not apply to it"
                    .to_owned(),
            ));
        }
        let mut pinned = self.pinned();
        let (now, set_by) = match pinned.as_ref() {
            Some((opts, by)) => (effective(opts), by.clone()),
            None => (effective(base), "config".to_owned()),
        };
        let Some((flag, wanted, in_force)) = conflict(asked, &now) else { return Ok(()) };
        if pinned.is_none() && !self.is_started() {
            *pinned = Some((Box::new(apply(base, asked)), format!("session {session}")));
            return Ok(());
        }
        let why = if self.is_started() { "is running" } else { "was set up" };
        Err(refuse(format!(
            "{flag}: this session asks for {wanted}, but the broker's one browser {why} with {in_force} (chosen by \
             {set_by}); every session of a broker shares its browser"
        )))
    }

    /// What `browser_status` shows: `requested` by the session, the settings in force and who chose them.
    #[must_use]
    pub fn settings_status(&self, requested: Option<BrowserSettings>) -> BrowserSettingsStatus {
        let (effective, set_by) = match (self.target(), self.pinned().as_ref()) {
            (_, Some((opts, by))) => (Some(effective(opts)), by.clone()),
            (BrowserTarget::Managed(_), None) if self.extension_in_use().is_some() => (None, "extension".into()),
            (BrowserTarget::Managed(opts), None) => (Some(effective(opts)), "config".to_owned()),
            (BrowserTarget::Remote(_), None) => (None, "remote endpoint".to_owned()),
        };
        BrowserSettingsStatus { requested, effective, set_by }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> LaunchOptions {
        LaunchOptions {
            executable: Some("/usr/bin/chromium".into()),
            user_data_dir: Some("/state/profile".into()),
            ..LaunchOptions::default()
        }
    }

    fn lazy() -> LazyChromium {
        LazyChromium::with_choice(
            BrowserTarget::Managed(Box::new(base())),
            browserd_chromium::ChromiumConfig::default(),
            BrowserChoice::Managed,
        )
    }

    #[test]
    fn the_first_session_sets_what_the_browser_has_not_and_a_different_ask_is_refused() {
        let lazy = lazy();
        let isolated =
            BrowserSettings { isolated: Some(true), viewport: Viewport::parse("800x600").ok(), ..Default::default() };
        lazy.request_settings("s1", &isolated).unwrap();
        // The same ask, or one the browser already has, is fine; no ask at all is fine.
        lazy.request_settings("s2", &isolated).unwrap();
        lazy.request_settings("s3", &BrowserSettings { headless: Some(true), ..Default::default() }).unwrap();
        lazy.request_settings("s4", &BrowserSettings::default()).unwrap();
        let status = lazy.settings_status(None);
        assert_eq!(status.set_by, "session s1");
        let eff = status.effective.unwrap();
        assert_eq!(
            (eff.isolated, eff.user_data_dir, eff.viewport.unwrap().to_string()),
            (Some(true), None, "800x600".into())
        );
        let headed = lazy.request_settings("s5", &BrowserSettings { headless: Some(false), ..Default::default() });
        let e = headed.unwrap_err();
        assert_eq!(e.code, ErrorCode::UnsupportedByImplementation);
        assert!(e.message.contains("--headless/--headed") && e.message.contains("session s1"), "{}", e.message);
        assert!(e.next_step.contains("browserd broker stop"), "{}", e.next_step);
        let persistent =
            lazy.request_settings("s6", &BrowserSettings { user_data_dir: Some("/p".into()), ..Default::default() });
        assert!(persistent.unwrap_err().message.contains("--user-data-dir"));
        assert_eq!(lazy.settings_status(None).set_by, "session s1", "a refused ask changes nothing");
    }

    #[test]
    fn a_remote_endpoint_refuses_every_browser_setting() {
        let lazy = LazyChromium::new(BrowserTarget::Remote("ws://127.0.0.1:9/x".into()), Default::default());
        let e = lazy.request_settings("s1", &BrowserSettings { headless: Some(false), ..Default::default() });
        assert!(e.unwrap_err().message.contains("remote"));
        lazy.request_settings("s1", &BrowserSettings::default()).unwrap();
        assert_eq!(lazy.settings_status(None).effective, None);
    }
}
