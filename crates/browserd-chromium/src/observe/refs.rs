//! Ref and cursor checks: a ref resolved to its node (same connection, frame and document still current), the
//! `nodeVersion` re-check of an action's targets, the nodes an observation marks as seen, and the diff cursor.

use std::time::Instant;

use browserd_cdp::SessionId;
use browserd_core::provider::{ProviderError, ProviderErrorKind, TabHandle};
use browserd_protocol::{NodeRef, StaleReason};
use serde_json::json;

use super::NodeSummary;
use crate::provider::{ChromiumProvider, gone, truncate};
use crate::state::NodeFacts;

/// Validates a ref: it must be from this connection, known, and its document must still be current.
pub(crate) fn resolve_ref(p: &ChromiumProvider, tab: TabHandle, r: &str) -> Result<Resolved, RefError> {
    if let Some(parts) = crate::state::parse_ref(r)
        && parts.epoch != p.epoch
    {
        return Err(RefError::Stale(Staleness::new(
            StaleReason::ConnectionChanged,
            format!(
                "it was issued on browser connection {} and the browser connection changed since (now {}; a \
                 reconnect or relaunch)",
                parts.epoch, p.epoch
            ),
        )));
    }
    let st = p.st();
    let t = st.tabs.get(&tab).ok_or(RefError::TabGone)?;
    let Some(e) = t.refs.by_ref.get(r) else {
        if t.refs.voided.contains(r) {
            return Err(RefError::Stale(Staleness::new(
                StaleReason::ControlEpochChanged,
                "it was read before the user pressed Stop, and refs from before a Stop stay void after the resume; \
                 use the refs of the resume's observation (or observe again)",
            )));
        }
        return Err(RefError::Unknown);
    };
    let Some(f) = t.frames.get(&e.frame_id) else {
        return Err(RefError::Stale(Staleness::new(StaleReason::FrameRemoved, "its frame was removed from the page")));
    };
    if f.doc_epoch != e.doc_epoch {
        let what = if f.key == 0 { "the page" } else { "its frame" };
        return Err(RefError::Stale(Staleness::new(
            StaleReason::DocumentChanged,
            format!("{what} navigated to a new document ({})", truncate(&f.url, 80)),
        )));
    }
    Ok(Resolved {
        frame_id: e.frame_id.clone(),
        session: f.session.clone(),
        backend: e.backend,
        point_backend: e.click_backend.unwrap_or(e.backend),
    })
}

/// The longest an action waits for an out-of-process frame its refs point into to be attached again.
const FRAME_REATTACH_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Waits until every out-of-process frame the given refs point into is attached and knows its document again.
///
/// After an idle detach (or any re-attach of the page session) the browser attaches each OOPIF's own session
/// anew, and that session tells its document (loader id) only once its frame tree is read. Until then the frame
/// cannot be told from one that navigated, so resolving a ref into it then would call a valid ref stale. Bounded by
/// [`FRAME_REATTACH_WAIT`] and the deadline: a frame that does not come back is then judged as it stands (its ref
/// resolves stale, never to a guess).
pub(crate) async fn await_reattached_frames(
    p: &ChromiumProvider,
    tab: TabHandle,
    refs: &[Option<&NodeRef>],
    deadline: Instant,
) {
    let until = deadline.min(Instant::now() + FRAME_REATTACH_WAIT);
    let frames: Vec<String> = {
        let st = p.st();
        let Some(t) = st.tabs.get(&tab) else { return };
        refs.iter().flatten().filter_map(|r| t.refs.by_ref.get(r.as_str().trim()).map(|e| e.frame_id.clone())).collect()
    };
    if frames.is_empty() {
        return;
    }
    loop {
        let pending = {
            let st = p.st();
            let Some(t) = st.tabs.get(&tab) else { return };
            frames.iter().any(|id| {
                t.frames
                    .get(id)
                    .is_some_and(|f| f.oop && (f.before_attach.is_some() || !t.children.contains_key(&f.session)))
            })
        };
        if !pending || Instant::now() >= until {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// The node of a `within` ref, or the error that tells the caller what to do.
pub(super) fn resolve_within(p: &ChromiumProvider, tab: TabHandle, r: &NodeRef) -> Result<Resolved, ProviderError> {
    resolve_ref(p, tab, r.as_str()).map_err(|e| match e {
        RefError::TabGone => gone(tab),
        RefError::Unknown => ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            format!("TARGET_NOT_FOUND: `within` ref {r} was never issued for this tab; observe first"),
        ),
        RefError::Stale(why) => ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            format!("STALE_TARGET ({}): `within` ref {r} is stale: {why}; observe again", why.reason.as_str()),
        ),
    })
}

/// A ref resolved to its node.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub(crate) frame_id: String,
    pub(crate) session: SessionId,
    pub(crate) backend: i64,
    /// Where to point the mouse (the node, or the descendant that takes its clicks).
    pub(crate) point_backend: i64,
}

/// Why a ref does not resolve.
#[derive(Debug, Clone)]
pub(crate) enum RefError {
    TabGone,
    Unknown,
    /// Stale: why (the wire reason) and how, in words (its `Display`).
    Stale(Staleness),
}

/// Why a ref is stale: the wire reason and the explanation (which is what it displays as).
#[derive(Debug, Clone)]
pub(crate) struct Staleness {
    pub(crate) reason: StaleReason,
    pub(crate) text: String,
}

impl Staleness {
    pub(super) fn new(reason: StaleReason, text: impl Into<String>) -> Self {
        Self { reason, text: text.into() }
    }
}

impl std::fmt::Display for Staleness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Checks the `nodeVersion` of the refs an action targets (`target`, `to`): the node's accessibility role and name
/// now must be those the caller was last shown (see [`NodeFacts`] for what counts). Also binds the tab's refs to
/// this connection. Returns the reason and message of the first stale ref. Targets given as `role "name"` are
/// matched against the latest observation, so they are not checked; refs that do not resolve are left to the
/// action's own resolution, which reports them.
pub(crate) async fn check_node_versions(
    p: &ChromiumProvider,
    tab: TabHandle,
    refs: &[Option<&NodeRef>],
    deadline: Instant,
) -> Result<(), (StaleReason, String)> {
    if let Some(t) = p.st().tabs.get_mut(&tab) {
        t.refs.bind(p.epoch);
    }
    for r in refs.iter().flatten().map(|r| r.as_str().trim()) {
        if crate::state::parse_ref(r).is_none() {
            continue;
        }
        let Ok(res) = resolve_ref(p, tab, r) else { continue };
        let Some(seen) = p.st().tabs.get(&tab).and_then(|t| t.refs.by_ref.get(r)).and_then(|e| e.seen.clone()) else {
            continue;
        };
        let v = match p
            .call(
                Some(&res.session),
                "Accessibility.getPartialAXTree",
                json!({"backendNodeId": res.backend, "fetchRelatives": false}),
                deadline,
            )
            .await
        {
            Ok(v) => v,
            Err(browserd_cdp::CdpError::Protocol { message, .. }) if message.contains("No node") => {
                return Err((
                    StaleReason::NodeRemoved,
                    format!("ref {r} is stale: its node was removed from the document; observe again"),
                ));
            }
            Err(_) => continue, // The action's own calls report a broken connection or deadline.
        };
        let Some(node) = v["nodes"]
            .as_array()
            .and_then(|ns| ns.iter().find(|n| n["backendDOMNodeId"].as_i64() == Some(res.backend)))
        else {
            continue;
        };
        if node["ignored"].as_bool() == Some(true) {
            // Hidden (the action's checks report it) or removed from the document.
            if !still_connected(p, &res, deadline).await {
                return Err((
                    StaleReason::NodeRemoved,
                    format!("ref {r} is stale: its node was removed from the document; observe again"),
                ));
            }
            continue;
        }
        let now = NodeFacts::new(
            node["role"]["value"].as_str().unwrap_or_default(),
            node["name"]["value"].as_str().unwrap_or_default(),
        );
        if let Some(change) = now.change_from(&seen) {
            return Err((
                StaleReason::NodeChanged,
                format!("ref {r} is stale: {change} since it was observed; observe again and use the new ref"),
            ));
        }
    }
    Ok(())
}

/// Whether a node is still in its document (`true` when that cannot be read: the action's own checks decide).
async fn still_connected(p: &ChromiumProvider, res: &Resolved, deadline: Instant) -> bool {
    const GROUP: &str = "browserd-version";
    let session = Some(&res.session);
    let Ok(v) =
        p.call(session, "DOM.resolveNode", json!({"backendNodeId": res.backend, "objectGroup": GROUP}), deadline).await
    else {
        return true;
    };
    let Some(object) = v["object"]["objectId"].as_str() else { return true };
    let connected = p
        .call(
            session,
            "Runtime.callFunctionOn",
            json!({"objectId": object, "functionDeclaration": "function() { return this.isConnected; }",
                   "returnByValue": true}),
            deadline,
        )
        .await
        .map_or(true, |v| v["result"]["value"].as_bool() != Some(false));
    let _ = p.call(session, "Runtime.releaseObjectGroup", json!({"objectGroup": GROUP}), deadline).await;
    connected
}

/// Marks the nodes of an observation handed to the caller as seen (their `nodeVersion` becomes the current one).
pub(crate) fn commit_seen(p: &ChromiumProvider, tab: TabHandle, nodes: &[NodeSummary]) {
    if let Some(t) = p.st().tabs.get_mut(&tab) {
        t.refs.commit_seen(nodes.iter().map(|n| n.node_ref.as_str()));
    }
}

/// The cursor of a revision on this provider's connection (`7`, `7b`; see [`crate::state::cursor_string`]).
pub(crate) fn cursor(p: &ChromiumProvider, rev: u64) -> String {
    crate::state::cursor_string(p.epoch, rev)
}
