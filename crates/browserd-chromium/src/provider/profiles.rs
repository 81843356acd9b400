//! Per-session tab settings on a shared browser: a session's page viewport (every tab it opens or claims gets
//! `Emulation.setDeviceMetricsOverride`, held while the tab is the session's) and its own browser context (an
//! isolated session's tabs open in a `Target.createBrowserContext` of their own — cookies, storage and cache apart
//! from every other session — disposed when the session ends).
//!
//! The broker registers what each session asked for in [`SessionTabs`] (shared by every connection a broker makes, so
//! a relaunched browser applies them too); the contexts themselves belong to one browser connection.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use browserd_core::provider::{ProviderError, SessionKey, TabHandle};
use serde_json::json;

use super::{ChromiumProvider, cdp_err};

/// What one session asked for its tabs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TabSettings {
    /// The page viewport (CSS pixels) of its tabs: `window.innerWidth` × `window.innerHeight` in the page.
    pub viewport: Option<(u32, u32)>,
    /// Its tabs open in a browser context of their own, disposed when the session ends.
    pub isolated: bool,
}

/// The sessions' tab settings (see the module doc).
#[derive(Debug, Default)]
pub struct SessionTabs {
    map: Mutex<HashMap<SessionKey, TabSettings>>,
}

impl SessionTabs {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionKey, TabSettings>> {
        self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records what `session` asked for (a default value forgets it).
    pub fn set(&self, session: &SessionKey, settings: TabSettings) {
        if settings == TabSettings::default() {
            self.lock().remove(session);
        } else {
            self.lock().insert(session.clone(), settings);
        }
    }

    /// What `session` asked for (the default when nothing).
    #[must_use]
    pub fn get(&self, session: &SessionKey) -> TabSettings {
        self.lock().get(session).copied().unwrap_or_default()
    }

    /// Forgets `session`, returning what it had asked for.
    pub fn remove(&self, session: &SessionKey) -> TabSettings {
        self.lock().remove(session).unwrap_or_default()
    }
}

/// The browser contexts of isolated sessions on one connection.
#[derive(Debug, Default)]
pub(crate) struct Contexts {
    by_session: Mutex<HashMap<SessionKey, String>>,
}

impl Contexts {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionKey, String>> {
        self.by_session.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl ChromiumProvider {
    /// The browser context a new tab of `session` opens in: its own when it is isolated (created on its first tab),
    /// else `None` (the browser's default context).
    pub(crate) async fn context_for(
        &self,
        session: &SessionKey,
        deadline: Instant,
    ) -> Result<Option<String>, ProviderError> {
        if !self.config.session_tabs.get(session).isolated {
            return Ok(None);
        }
        if let Some(id) = self.contexts.lock().get(session) {
            return Ok(Some(id.clone()));
        }
        let r = self
            .call(None, "Target.createBrowserContext", json!({"disposeOnDetach": true}), deadline)
            .await
            .map_err(|e| cdp_err(&e, "creating the isolated session's browser context"))?;
        let id = r["browserContextId"].as_str().unwrap_or_default().to_owned();
        tracing::debug!(session = %session.0, context = %id, "an isolated session's browser context");
        // Two first tabs at once: the first context recorded wins, the other is disposed.
        let kept = self.contexts.lock().entry(session.clone()).or_insert_with(|| id.clone()).clone();
        if kept != id {
            let _ = self.call(None, "Target.disposeBrowserContext", json!({"browserContextId": id}), deadline).await;
        }
        Ok(Some(kept))
    }

    /// Ends `session`'s tab settings on this browser: its browser context, if it had one, is disposed (its tabs,
    /// cookies and storage go with it). Returns whether a context was disposed.
    ///
    /// # Errors
    /// When the browser refuses to dispose the context.
    pub async fn end_session(&self, session: &SessionKey, deadline: Instant) -> Result<bool, ProviderError> {
        let Some(id) = self.contexts.lock().remove(session) else { return Ok(false) };
        self.call(None, "Target.disposeBrowserContext", json!({"browserContextId": id}), deadline)
            .await
            .map_err(|e| cdp_err(&e, "disposing the isolated session's browser context"))?;
        Ok(true)
    }

    /// The viewport `tab` holds for the session whose tab it is (set when it is opened or claimed).
    pub(crate) fn pinned_viewport(&self, tab: TabHandle) -> Option<(u32, u32)> {
        self.st().tabs.get(&tab).and_then(|t| t.viewport)
    }

    /// Sets `tab`'s page viewport on its page session (called whenever a page session is set up).
    pub(crate) async fn apply_viewport(
        &self,
        session: &browserd_cdp::SessionId,
        tab: TabHandle,
        deadline: Instant,
    ) -> Result<(), ProviderError> {
        let Some((width, height)) = self.pinned_viewport(tab) else { return Ok(()) };
        self.call(
            Some(session),
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 0, "mobile": false}),
            deadline,
        )
        .await
        .map_err(|e| cdp_err(&e, "setting the session's page viewport"))?;
        Ok(())
    }

    /// Gives `tab` the viewport of `session` (a claim), or none; an attached page session is updated at once.
    pub(crate) async fn pin_viewport(
        &self,
        tab: TabHandle,
        viewport: Option<(u32, u32)>,
        deadline: Instant,
    ) -> Result<(), ProviderError> {
        let session = {
            let mut st = self.st();
            let Some(t) = st.tabs.get_mut(&tab) else { return Ok(()) };
            if t.viewport == viewport {
                return Ok(());
            }
            t.viewport = viewport;
            t.session.clone()
        };
        let Some(session) = session else { return Ok(()) };
        if viewport.is_some() {
            self.apply_viewport(&session, tab, deadline).await
        } else {
            self.call(Some(&session), "Emulation.clearDeviceMetricsOverride", json!({}), deadline)
                .await
                .map(drop)
                .map_err(|e| cdp_err(&e, "clearing the page viewport"))
        }
    }
}
