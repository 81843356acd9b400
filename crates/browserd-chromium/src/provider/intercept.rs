//! Stops a navigation to an origin the site policy refuses before its request is sent: the CDP `Fetch` domain pauses
//! every document request at the request stage (`Fetch.enable` on the browser session of a managed or remote browser,
//! so a popup's first navigation is caught too; on each page session over the extension relay, where the extension's
//! gate checks the same request again), the broker's [`crate::OriginCheck`] judges its URL for the session using the
//! tab, and the request is failed (`BlockedByClient`) or continued.
//!
//! A top-level stop is logged on the tab and on its opener (`effects.blocked`), so the action that led there is
//! answered with `ORIGIN_NOT_AUTHORISED` by the broker. A frame's document of a refused origin is stopped the same
//! way (the denied site never receives the request, nor the user's cookies for it) without failing the page around
//! it: the frame's error page stands for the stopped URL, shown as one line and never acted on (`origin.rs`). A
//! frame is known by its tab from `Page.frameAttached`; a frame browserd does not know is judged for the tab whose
//! session paused it, else by the policy that applies whatever the session (it fails closed).

use std::time::Duration;

use browserd_cdp::{Cdp, SessionId};
use browserd_core::provider::{ProviderError, ProviderEvent, ProviderKind};
use serde_json::{Value, json};

use crate::OriginCheck;
use crate::state::{LogEvent, State};

/// What `Fetch.enable` pauses: document requests (top-level and frame navigations), before they are sent.
#[must_use]
pub(crate) fn patterns() -> Value {
    json!({"patterns": [{"urlPattern": "*", "resourceType": "Document", "requestStage": "Request"}]})
}

/// A paused document request (`Fetch.requestPaused`).
#[derive(Debug)]
pub(super) struct Paused {
    pub(super) session: Option<SessionId>,
    pub(super) request_id: String,
    pub(super) url: String,
    pub(super) frame_id: String,
}

impl Paused {
    pub(super) fn of(session: Option<&SessionId>, p: &Value) -> Option<Paused> {
        Some(Paused {
            session: session.cloned(),
            request_id: p["requestId"].as_str()?.to_owned(),
            url: p["request"]["url"].as_str().unwrap_or_default().to_owned(),
            frame_id: p["frameId"].as_str().unwrap_or_default().to_owned(),
        })
    }
}

/// Whether the request may go on: `None`, or why its origin is refused (then logged on the tab and its opener). A
/// top-level navigation is one whose frame is a page target (a page's main frame has its target's id; a popup's
/// target is announced, `Target.targetCreated`, before its first request); every other document is a frame's.
pub(super) fn judge(
    st: &mut State,
    check: &OriginCheck,
    real_profile: bool,
    paused: &Paused,
    updated: &mut Option<ProviderEvent>,
) -> Option<String> {
    let Some(tab) = st.by_target.get(&paused.frame_id).copied() else {
        return judge_frame(st, check, real_profile, paused);
    };
    let opener = st.tabs.get(&tab).and_then(|t| t.opener);
    // A popup obeys its opener's session too (it becomes that session's tab).
    let why = (check.0)(Some(tab), &paused.url, real_profile)
        .or_else(|| opener.and_then(|o| (check.0)(Some(o), &paused.url, real_profile)))?;
    let origin = crate::origin::shown_origin(&paused.url);
    for t in std::iter::once(tab).chain(opener) {
        st.log(t, LogEvent::Blocked(origin.clone()));
    }
    // The browser's "blocked" page the tab shows next stands for the stopped URL (`origin.rs`), and a new tab (a
    // popup) with no URL of its own yet is listed by it: by its origin only, never read.
    if let Some(t) = st.tabs.get_mut(&tab) {
        t.blocked = Some(paused.url.clone());
        if t.url.is_empty() || t.url == "about:blank" {
            t.url.clone_from(&paused.url);
            *updated = Some(ProviderEvent::TabUpdated(super::ChromiumProvider::tab_info(t, false)));
        }
    }
    tracing::info!(%origin, tab = tab.0, "stopped a navigation the site policy refuses before it was sent");
    Some(why)
}

/// A frame's document request: refused when its origin is refused for the session using the frame's tab; the frame
/// then shows the browser's error page, which stands for the stopped URL. It fails closed: a frame browserd does not
/// know (attached while the tab's page session was detached, an idle detach, so its `Page.frameAttached` was never
/// seen) is judged for the tab whose session paused it, or, paused on the browser session, by the policy that applies
/// whatever the session.
fn judge_frame(st: &mut State, check: &OriginCheck, real_profile: bool, paused: &Paused) -> Option<String> {
    let tab = st
        .tab_of_frame(&paused.frame_id)
        .or_else(|| paused.session.as_ref().and_then(|s| st.by_session.get(s).copied()));
    let why = (check.0)(tab, &paused.url, real_profile)?;
    let origin = crate::origin::shown_origin(&paused.url);
    match tab.and_then(|tab| st.tabs.get_mut(&tab)) {
        Some(t) => t.blocked_frames.insert_value(paused.frame_id.clone(), paused.url.clone()),
        None => st.unplaced_blocked.insert_value(paused.frame_id.clone(), paused.url.clone()),
    }
    tracing::info!(%origin, tab = tab.map(|t| t.0), "stopped a frame's document the site policy refuses before it was sent");
    Some(why)
}

/// Answers a paused request: failed as blocked when `refused`, else continued unchanged.
pub(super) fn answer(cdp: &Cdp, paused: Paused, refused: bool) {
    let cdp = cdp.clone();
    tokio::spawn(async move {
        let s = paused.session.as_ref();
        let t = Duration::from_secs(10);
        let r = if refused {
            cdp.call(
                s,
                "Fetch.failRequest",
                json!({"requestId": paused.request_id, "errorReason": "BlockedByClient"}),
                t,
            )
            .await
        } else {
            cdp.call(s, "Fetch.continueRequest", json!({"requestId": paused.request_id}), t).await
        };
        if let Err(e) = r {
            // The request is gone (its tab closed, the navigation was replaced) or the gate refused it: nothing more
            // can be done for it.
            tracing::debug!(error = %e, refused, "answering a paused document request failed");
        }
    });
}

impl super::ChromiumProvider {
    /// Browser-wide interception of a managed or remote browser (its browser session sees every tab's requests,
    /// popups included), once at connect; nothing without a site policy. A remote endpoint that does not offer it
    /// keeps the after-the-fact check only, and says so in the log.
    pub(super) async fn intercept_browser(&self, deadline: std::time::Instant) -> Result<(), ProviderError> {
        if self.config.origin_check.is_none() || self.kind == ProviderKind::Extension {
            return Ok(());
        }
        match self.call(None, "Fetch.enable", patterns(), deadline).await {
            Ok(_) => Ok(()),
            Err(e) if self.kind == ProviderKind::Remote => {
                tracing::warn!(error = %e, "the remote browser refused request interception: navigations to refused \
                    origins are caught only after they load");
                Ok(())
            }
            Err(e) => Err(super::cdp_err(&e, "enabling request interception for the site policy")),
        }
    }

    /// A page session's interception over the extension relay (chrome.debugger has no browser session; the
    /// extension's gate checks each request again before it continues).
    pub(super) async fn intercept_page(
        &self,
        session: &SessionId,
        deadline: std::time::Instant,
    ) -> Result<(), ProviderError> {
        if self.config.origin_check.is_none() || self.kind != ProviderKind::Extension {
            return Ok(());
        }
        self.call(Some(session), "Fetch.enable", patterns(), deadline)
            .await
            .map(drop)
            .map_err(|e| super::cdp_err(&e, "enabling request interception for the site policy"))
    }
}
