//! Whether the main document is ready to be observed (past `loading`, and not the initial blank document of a tab
//! that is opening a page), and the wait for it.

use std::time::Instant;

use browserd_core::provider::{ProviderError, TabHandle};
use serde_json::json;

use super::page_state::PageState;
use crate::provider::ChromiumProvider;

/// Whether the main document is ready, from the main session's page-state read (see [`note_document`]); a document
/// being replaced is not: look again.
pub(super) fn main_ready(
    p: &ChromiumProvider,
    tab: TabHandle,
    main: Option<&Result<PageState, browserd_cdp::CdpError>>,
) -> bool {
    match main {
        Some(Ok(PageState { document: Some((state, href)), .. })) => note_document(p, tab, state, href),
        _ => false,
    }
}

/// Records what the main document said of itself and tells whether it is ready to be observed: past `loading`, and
/// not the initial blank document of a tab that is opening a page.
pub(super) fn note_document(p: &ChromiumProvider, tab: TabHandle, state: &str, href: &str) -> bool {
    let blank = href.is_empty() || href == "about:blank";
    let mut st = p.st();
    let Some(t) = st.tabs.get_mut(&tab) else { return true };
    let expects_page = t.awaiting_url.is_some() || (!t.url.is_empty() && t.url != "about:blank");
    if !blank {
        // A real document is showing: from now on an about:blank is the page's own choice. The target-info event
        // with its URL may still be on its way: the page's own word is newer.
        t.awaiting_url = None;
        if t.url.is_empty() || t.url == "about:blank" {
            href.clone_into(&mut t.url);
        }
    }
    state != "loading" && !(expects_page && blank)
}

/// Waits (until `stop`) for the main document to be ready to be observed (see [`note_document`]), looking at its
/// `readyState` and URL every [`READY_POLL`].
pub(super) async fn wait_until_ready(p: &ChromiumProvider, tab: TabHandle, stop: Instant) -> Result<(), ProviderError> {
    let session = p.ensure_attached(tab, stop).await?;
    let expr = json!({"expression": "[document.readyState, location.href]", "returnByValue": true});
    loop {
        let ready = match p.call(Some(&session), "Runtime.evaluate", expr.clone(), stop).await {
            Ok(v) => {
                let value = &v["result"]["value"];
                note_document(p, tab, value[0].as_str().unwrap_or("loading"), value[1].as_str().unwrap_or(""))
            }
            // A navigation can destroy the context mid-call; look again.
            Err(_) => false,
        };
        if ready || Instant::now() + READY_POLL >= stop {
            return Ok(());
        }
        tokio::time::sleep(READY_POLL).await;
    }
}

/// The longest an observation waits for a loading document before it reports `loadState: loading` instead.
pub(super) const READY_WAIT_CAP: std::time::Duration = std::time::Duration::from_secs(5);
/// How often a document that is not ready is looked at again.
const READY_POLL: std::time::Duration = std::time::Duration::from_millis(15);
