//! A session's browser settings (`browserd mcp --headed --isolated --viewport …`, `session.open`'s `browser`): what
//! they mean for a managed launch, and the session's own ones.
//!
//! Two kinds of setting:
//! - **the session's own** — `--isolated` (its tabs open in a browser context of its own: cookies, storage and cache
//!   apart from every other session, all gone when the session ends) and `--viewport WxH` (every tab it opens or
//!   claims has a page of exactly that size: `innerWidth` × `innerHeight`). Any number of sessions with different
//!   values share a browser; the Chromium provider applies them per tab (`browserd_chromium::SessionTabs`).
//! - **the browser's** — `--headless/--headed`, `--executable-path`, `--user-data-dir`: one browser process has one
//!   of each. Which managed browser runs them is `browsers.rs`'s: the default one when they are its settings, else a
//!   browser of their own.
//!
//! With a remote endpoint or the user's browser (extension) every setting is refused
//! (`UNSUPPORTED_BY_IMPLEMENTATION`). Nothing is silently ignored.

use browserd_cdp::LaunchOptions;
use browserd_chromium::TabSettings;
use browserd_core::provider::SessionKey;
use browserd_protocol::browser_settings::BrowserSettings;
use browserd_protocol::{ErrorCode, ErrorData};

use crate::config::BrowserChoice;
use crate::lazy::{BrowserTarget, LazyChromium};

/// The browser-wide settings a managed launch means, in the wire's terms (the session's own ones unset).
#[must_use]
pub fn effective(opts: &LaunchOptions) -> BrowserSettings {
    let executable =
        opts.executable.clone().or_else(|| browserd_cdp::find_executable(None).ok()).map(|p| p.display().to_string());
    BrowserSettings {
        headless: Some(opts.headless),
        executable_path: executable,
        isolated: None,
        user_data_dir: opts.user_data_dir.as_ref().map(|p| p.display().to_string()),
        viewport: None,
    }
}

/// The session's own settings (applied per tab, never to the browser).
#[must_use]
pub fn tab_settings(asked: &BrowserSettings) -> TabSettings {
    TabSettings { viewport: asked.viewport.map(|v| (v.width, v.height)), isolated: asked.isolated == Some(true) }
}

fn refuse(message: String) -> ErrorData {
    ErrorData::new(ErrorCode::UnsupportedByImplementation, message).with_next_step(
        "remove the browser flag from this MCP entry (or the adapter's options), or set `browser = \"managed\"` in \
         the browserd config (`browserd config`) so the broker runs managed browsers",
    )
}

impl LazyChromium {
    /// Refuses every setting when the browser is not a managed one (a remote endpoint, the user's browser through
    /// the extension), changing nothing.
    ///
    /// # Errors
    /// `UNSUPPORTED_BY_IMPLEMENTATION` naming the browser the broker drives.
    pub fn refuse_unmanaged(&self, asked: &BrowserSettings) -> Result<(), ErrorData> {
        if asked.is_empty() {
            return Ok(());
        }
        let extension_flags = "browser settings such as --headed, --isolated or --viewport do not apply to it";
        if !matches!(self.target(), BrowserTarget::Managed(_)) {
            return Err(refuse(format!(
                "this broker drives a remote browser endpoint (remote_cdp): {extension_flags}"
            )));
        }
        if self.choice() == BrowserChoice::Extension || self.extension_in_use().is_some() {
            return Err(refuse(format!(
                "this broker drives your own browser through the browserd extension: {extension_flags}"
            )));
        }
        Ok(())
    }

    /// The configured managed launch, when the browser is a managed one.
    #[must_use]
    pub fn managed_options(&self) -> Option<&LaunchOptions> {
        match self.target() {
            BrowserTarget::Managed(opts) if self.extension_in_use().is_none() => Some(opts),
            _ => None,
        }
    }

    /// Records the session's own settings (`--isolated`, `--viewport`) for the tabs it opens or claims from now on.
    pub fn set_session_tabs(&self, session: &SessionKey, asked: &BrowserSettings) {
        self.session_tabs().set(session, tab_settings(asked));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_endpoint_refuses_every_browser_setting() {
        let lazy = LazyChromium::new(BrowserTarget::Remote("ws://127.0.0.1:9/x".into()), Default::default());
        let e = lazy.refuse_unmanaged(&BrowserSettings { headless: Some(false), ..Default::default() });
        assert!(e.unwrap_err().message.contains("remote"));
        lazy.refuse_unmanaged(&BrowserSettings::default()).unwrap();
        assert!(lazy.managed_options().is_none());
    }
}
