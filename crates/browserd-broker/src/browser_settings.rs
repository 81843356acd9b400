//! A session's browser settings (`browserd mcp --headed --isolated --viewport …`) against the broker's one managed
//! browser.
//!
//! Two kinds of setting:
//! - **the session's own** — `--isolated` (its tabs open in a browser context of its own: cookies, storage and cache
//!   apart from every other session, all gone when the session ends) and `--viewport WxH` (every tab it opens or
//!   claims has a page of exactly that size: `innerWidth` × `innerHeight`). Any number of sessions with different
//!   values share the browser; the Chromium provider applies them per tab (`browserd_chromium::SessionTabs`).
//! - **the browser's** — `--headless/--headed`, `--executable-path`, `--user-data-dir`: one browser process has one
//!   of each. A value equal to what the browser runs with is accepted; before the managed browser has started, the
//!   first session that asks sets it (`set_by: session <id>`); sessions that ask for nothing take the browser as it
//!   is. Any other value — a different one once the browser runs or another session chose it — is refused at
//!   `session.open` with `UNSUPPORTED_BY_IMPLEMENTATION`, naming the flag, the value in force, who chose it and the
//!   exact commands that fix it (drop the flag, or `browserd broker stop` and start the MCP server again). The broker
//!   does not run a second browser for it (one browser per broker: its tabs, leases and Stop are that browser's).
//!
//! With a remote endpoint or the user's browser (extension) every setting is refused. Nothing is silently ignored.

use std::path::PathBuf;

use browserd_cdp::LaunchOptions;
use browserd_chromium::TabSettings;
use browserd_core::provider::SessionKey;
use browserd_protocol::browser_settings::{BrowserSettings, BrowserSettingsStatus, Viewport};
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

/// `opts` with the browser-wide settings `asked` sets applied.
fn apply(opts: &LaunchOptions, asked: &BrowserSettings) -> LaunchOptions {
    let mut next = opts.clone();
    if let Some(headless) = asked.headless {
        next.headless = headless;
    }
    if let Some(path) = &asked.executable_path {
        next.executable = Some(PathBuf::from(path));
    }
    if let Some(dir) = &asked.user_data_dir {
        next.user_data_dir = Some(PathBuf::from(dir));
    }
    next
}

/// The first browser-wide setting of `asked` that differs from `now`, as (the flag asked, what it asks, in force).
fn conflict(asked: &BrowserSettings, now: &BrowserSettings) -> Option<(String, String, String)> {
    let shown = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".to_owned());
    if let Some(h) = asked.headless
        && Some(h) != now.headless
    {
        let word = |h: bool| if h { "a headless browser" } else { "a headed (windowed) browser" }.to_owned();
        let flag = if h { "--headless" } else { "--headed" };
        return Some((flag.to_owned(), word(h), word(!h)));
    }
    if asked.executable_path.is_some() && asked.executable_path != now.executable_path {
        return Some(("--executable-path".to_owned(), shown(&asked.executable_path), shown(&now.executable_path)));
    }
    if asked.user_data_dir.is_some() && asked.user_data_dir != now.user_data_dir {
        let profile = |s: &BrowserSettings| match &s.user_data_dir {
            Some(dir) => format!("profile {dir}"),
            None => "a throwaway profile".to_owned(),
        };
        return Some(("--user-data-dir".to_owned(), profile(asked), profile(now)));
    }
    None
}

fn refuse(message: String) -> ErrorData {
    ErrorData::new(ErrorCode::UnsupportedByImplementation, message).with_next_step(
        "remove the browser flag from this MCP entry (or the adapter's options); or run `browserd broker stop` \
         (it ends every session of this broker and its browser) and start this MCP server again, so its settings \
         apply to the next browser",
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
        let extension_flags = "browser settings such as --headed, --isolated or --viewport do not apply to it";
        let BrowserTarget::Managed(base) = self.target() else {
            return Err(refuse(format!(
                "this broker drives a remote browser endpoint (remote_cdp): {extension_flags}"
            )));
        };
        if self.choice() == BrowserChoice::Extension || self.extension_in_use().is_some() {
            return Err(refuse(format!(
                "this broker drives your own browser through the browserd extension: {extension_flags}"
            )));
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
             {set_by}); every session of a broker shares its browser. Fix: drop {flag} from this MCP entry, or run \
             `browserd broker stop` and start this MCP server again (the next browser starts with its settings)"
        )))
    }

    /// Records the session's own settings (`--isolated`, `--viewport`) for the tabs it opens or claims from now on.
    pub fn set_session_tabs(&self, session: &SessionKey, asked: &BrowserSettings) {
        self.session_tabs().set(session, tab_settings(asked));
    }

    /// The session ended: its own settings are forgotten and its isolated browser context, if it had one, is
    /// disposed with everything in it (tabs, cookies, storage).
    pub async fn end_session(&self, session: &SessionKey) {
        let had = self.session_tabs().remove(session);
        if !had.isolated {
            return;
        }
        if let Some(chromium) = self.chromium() {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            match chromium.end_session(session, deadline).await {
                Ok(disposed) => tracing::debug!(session = %session.0, disposed, "the isolated session's context ended"),
                Err(e) => {
                    tracing::warn!(session = %session.0, error = %e.message, "disposing a browser context failed")
                }
            }
        }
    }

    /// What `browser_status` shows: `requested` by the session, the settings in force and who chose them.
    #[must_use]
    pub fn settings_status(&self, session: &SessionKey, requested: Option<BrowserSettings>) -> BrowserSettingsStatus {
        let (effective, set_by) = match (self.target(), self.pinned().as_ref()) {
            (_, Some((opts, by))) => (Some(effective(opts)), by.clone()),
            (BrowserTarget::Managed(_), None) if self.extension_in_use().is_some() => (None, "extension".into()),
            (BrowserTarget::Managed(opts), None) => (Some(effective(opts)), "config".to_owned()),
            (BrowserTarget::Remote(_), None) => (None, "remote endpoint".to_owned()),
        };
        // The session's own settings, as its tabs get them.
        let own = self.session_tabs().get(session);
        let effective = effective.map(|mut e| {
            e.isolated = Some(own.isolated);
            e.viewport = own.viewport.map(|(width, height)| Viewport { width, height });
            e
        });
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
        let headed = BrowserSettings { headless: Some(false), ..Default::default() };
        lazy.request_settings("s1", &headed).unwrap();
        // The same ask, or one the browser already has, is fine; no ask at all is fine; the session's own settings
        // (isolated, viewport) never conflict.
        lazy.request_settings("s2", &headed).unwrap();
        let own =
            BrowserSettings { isolated: Some(true), viewport: Viewport::parse("800x600").ok(), ..Default::default() };
        lazy.request_settings("s3", &own).unwrap();
        lazy.request_settings("s4", &BrowserSettings::default()).unwrap();
        let s3 = SessionKey("s3".into());
        lazy.set_session_tabs(&s3, &own);
        let status = lazy.settings_status(&s3, None);
        assert_eq!(status.set_by, "session s1");
        let eff = status.effective.unwrap();
        assert_eq!(
            (eff.headless, eff.isolated, eff.user_data_dir.as_deref(), eff.viewport.unwrap().to_string()),
            (Some(false), Some(true), Some("/state/profile"), "800x600".into())
        );
        let other = lazy.settings_status(&SessionKey("s4".into()), None).effective.unwrap();
        assert_eq!((other.isolated, other.viewport), (Some(false), None), "s3's own settings are s3's");
        let headless = lazy.request_settings("s5", &BrowserSettings { headless: Some(true), ..Default::default() });
        let e = headless.unwrap_err();
        assert_eq!(e.code, ErrorCode::UnsupportedByImplementation);
        assert!(e.message.contains("--headless:") && e.message.contains("session s1"), "{}", e.message);
        assert!(e.message.contains("`browserd broker stop`"), "{}", e.message);
        assert!(e.next_step.contains("browserd broker stop"), "{}", e.next_step);
        let persistent =
            lazy.request_settings("s6", &BrowserSettings { user_data_dir: Some("/p".into()), ..Default::default() });
        assert!(persistent.unwrap_err().message.contains("--user-data-dir"));
        assert_eq!(lazy.settings_status(&s3, None).set_by, "session s1", "a refused ask changes nothing");
    }

    #[test]
    fn a_remote_endpoint_refuses_every_browser_setting() {
        let lazy = LazyChromium::new(BrowserTarget::Remote("ws://127.0.0.1:9/x".into()), Default::default());
        let e = lazy.request_settings("s1", &BrowserSettings { headless: Some(false), ..Default::default() });
        assert!(e.unwrap_err().message.contains("remote"));
        lazy.request_settings("s1", &BrowserSettings::default()).unwrap();
        assert_eq!(lazy.settings_status(&SessionKey("s1".into()), None).effective, None);
    }
}
