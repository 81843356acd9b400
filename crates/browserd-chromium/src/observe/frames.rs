//! The tab's frames as an observation sees them: which session holds which frames, the owners of out-of-process
//! frames, each frame's key, document and URL, the frame summaries, the title, and the node the walk starts from.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use browserd_cdp::SessionId;
use browserd_core::provider::{ProviderError, ProviderErrorKind, TabHandle};
use browserd_protocol::FrameSummary;
use futures_util::future::join_all;
use serde_json::json;

use super::Built;
use super::renderer::FrameMeta;
use crate::ax::AxTree;
use crate::provider::{ChromiumProvider, gone};
use crate::state::Tab;

/// Where a tab's frames live.
pub(super) struct Layout {
    /// Each session with the frames it holds: the main session first, frames in key order.
    pub(super) sessions: Vec<(SessionId, Vec<String>)>,
    pub(super) main_frame: String,
    /// The out-of-process frames: the frame, its parent frame and the parent's session.
    pub(super) oop: Vec<(String, String, SessionId)>,
}

/// The tab's [`Layout`]; `Ok(Err(built))` when a dialog blocks the page (nothing else is observed then).
pub(super) fn layout(
    p: &ChromiumProvider,
    tab: TabHandle,
    main_session: SessionId,
) -> Result<Result<Layout, Built>, ProviderError> {
    let st = p.st();
    let t = st.tabs.get(&tab).ok_or_else(|| gone(tab))?;
    if t.dialog.is_some() {
        return Ok(Err(Built { url: t.url.clone(), title: t.title.clone(), ready: true, ..Default::default() }));
    }
    let mut sessions: Vec<(SessionId, Vec<String>)> = vec![(main_session, Vec::new())];
    let mut frames: Vec<(&String, &crate::state::Frame)> = t.frames.iter().collect();
    frames.sort_by_key(|(_, f)| f.key);
    for (id, f) in frames {
        match sessions.iter_mut().find(|(s, _)| *s == f.session) {
            Some((_, ids)) => ids.push(id.clone()),
            None => sessions.push((f.session.clone(), vec![id.clone()])),
        }
    }
    let oop = t
        .frames
        .iter()
        .filter(|(_, f)| f.oop)
        .filter_map(|(id, f)| {
            let parent = f.parent.as_ref()?;
            let ps = t.frames.get(parent)?.session.clone();
            Some((id.clone(), parent.clone(), ps))
        })
        .collect();
    Ok(Ok(Layout { sessions, main_frame: t.target_id.clone(), oop }))
}

/// The frame owner element of each out-of-process frame, keyed by its parent frame and backend node id.
pub(super) async fn owners(
    p: &ChromiumProvider,
    oop: &[(String, String, SessionId)],
    deadline: Instant,
) -> HashMap<(String, i64), String> {
    let answers =
        join_all(oop.iter().map(|(id, _, ps)| p.call(Some(ps), "DOM.getFrameOwner", json!({"frameId": id}), deadline)))
            .await;
    let mut owners = HashMap::new();
    for ((id, parent, _), r) in oop.iter().zip(answers) {
        if let Some(b) = r.ok().and_then(|v| v["backendNodeId"].as_i64()) {
            owners.insert((parent.clone(), b), id.clone());
        }
    }
    owners
}

/// The document epoch of each frame.
pub(super) fn doc_epochs(p: &ChromiumProvider, tab: TabHandle) -> Result<HashMap<String, u64>, ProviderError> {
    let st = p.st();
    let t = st.tabs.get(&tab).ok_or_else(|| gone(tab))?;
    Ok(t.frames.iter().map(|(id, f)| (id.clone(), f.doc_epoch)).collect())
}

/// What the renderer needs of each frame: its key, document and URL.
pub(super) fn metas(t: &Tab) -> HashMap<String, FrameMeta> {
    t.frames
        .iter()
        .map(|(id, f)| (id.clone(), FrameMeta { key: f.key, epoch: f.doc_epoch, url: f.url.clone() }))
        .collect()
}

/// The frames of the observation, the main frame first; a frame whose origin is not authorised (`denied`) shows its
/// origin only.
pub(super) fn summaries(t: &Tab, denied: &dyn Fn(&str) -> bool) -> Vec<FrameSummary> {
    let mut summaries: Vec<FrameSummary> = t
        .frames
        .values()
        .map(|f| FrameSummary {
            frame: if f.key == 0 { String::new() } else { format!("f{}", f.key) },
            url: if denied(&f.url) { crate::origin::shown_origin(&f.url) } else { f.url.clone() },
            out_of_process: f.oop,
            document_epoch: f.doc_epoch,
        })
        .collect();
    summaries.sort_by(|a, b| a.frame.len().cmp(&b.frame.len()).then(a.frame.cmp(&b.frame)));
    summaries
}

/// The frame and node the walk starts from: the node of `within`, else the main frame's root.
pub(super) fn start(
    trees: &HashMap<String, Arc<AxTree>>,
    within: Option<&(String, i64)>,
    main_frame: &str,
) -> Result<(String, String), ProviderError> {
    match within {
        Some((frame, backend)) => {
            let tree = trees.get(frame).ok_or_else(|| {
                ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    "STALE_TARGET: the frame of `within` is gone; observe again",
                )
            })?;
            let id = tree.nodes.iter().find(|(_, n)| n.backend == Some(*backend)).map(|(k, _)| k.clone()).ok_or_else(
                || {
                    ProviderError::new(
                        ProviderErrorKind::InvalidRequest,
                        "STALE_TARGET: the node of `within` is no longer in the page; observe again",
                    )
                },
            )?;
            Ok((frame.clone(), id))
        }
        None => {
            let root = trees.get(main_frame).and_then(|t| t.root.clone()).unwrap_or_default();
            Ok((main_frame.to_owned(), root))
        }
    }
}

/// The page's title: the name of the main frame's root.
pub(super) fn title(trees: &HashMap<String, Arc<AxTree>>, main_frame: &str) -> String {
    trees
        .get(main_frame)
        .and_then(|t| t.root.as_ref().and_then(|root| t.nodes.get(root)))
        .map(|n| n.name.clone())
        .unwrap_or_default()
}
