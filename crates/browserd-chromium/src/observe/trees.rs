//! Accessibility trees of the sessions whose page state changed: how each frame's tree is brought up to date
//! (reused, refreshed by subtree, or read whole) and the reads that do it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use browserd_cdp::SessionId;
use browserd_core::provider::{ProviderError, TabHandle};
use futures_util::future::join_all;
use serde_json::{Value, json};

use super::page_state::{PageState, StateReader, session_key};
use crate::ax::{AxTree, Entry, Refresh, SubtreeRead};
use crate::provider::{ChromiumProvider, cdp_err, gone};

/// A session whose trees are not cached for its current state.
pub(super) struct Miss {
    pub(super) session: SessionId,
    pub(super) ids: Vec<String>,
    pub(super) key: u64,
    pub(super) signature: Option<Arc<str>>,
    /// The session's cached entry from an earlier state, if any: the base of an incremental refresh.
    pub(super) base: Option<Entry>,
    /// The DOM facts of the current snapshot.
    pub(super) facts: Option<Arc<HashMap<String, crate::ax::FrameFacts>>>,
}

/// How one frame of a missed session is brought up to date. `moved`: the elements focus left and reached, when
/// focus is all the page-state signature says changed (`None`: the signature says more, or nothing).
pub(super) fn plan_refresh(m: &Miss, frame: &str, epochs: &HashMap<String, u64>, moved: Option<&[i64]>) -> Refresh {
    let Some(base) = &m.base else { return Refresh::Full("first read") };
    let Some(signature) = &m.signature else { return Refresh::Full("page state unreadable") };
    if base.epochs.get(frame) != epochs.get(frame) || !base.trees.contains_key(frame) {
        return Refresh::Full("new document");
    }
    // A tree built from the DOM is reused as it is, never refreshed by merging Chromium's subtrees into it.
    if base.trees.get(frame).is_some_and(|t| t.dom_built) {
        return Refresh::Full("built from the DOM");
    }
    if moved.is_none()
        && base.signature != *signature
        && crate::ax::non_focus_state(&base.signature) != crate::ax::non_focus_state(signature)
    {
        return Refresh::Full("script-set state changed");
    }
    let volatile = base.volatile.get(frame).map(Vec::as_slice).unwrap_or_default();
    if volatile.len() > crate::ax::MAX_VOLATILE {
        return Refresh::Full("many elements that change unseen");
    }
    let plan = match (base.facts.get(frame), m.facts.as_ref().and_then(|f| f.get(frame))) {
        (Some(old), Some(new)) => crate::ax::plan_frame(old, new, moved.unwrap_or_default()),
        _ => return Refresh::Full("frame not in the snapshot"),
    };
    if volatile.is_empty() {
        return plan;
    }
    let (mut subtrees, mut nodes) = match plan {
        Refresh::Reuse => (Vec::new(), Vec::new()),
        Refresh::Partial { subtrees, nodes } => (subtrees, nodes),
        full @ Refresh::Full(_) => return full,
    };
    for &(b, whole) in volatile {
        let list = if whole { &mut subtrees } else { &mut nodes };
        if !list.contains(&b) {
            list.push(b);
        }
    }
    Refresh::Partial { subtrees, nodes }
}

/// Brings one frame's tree up to date as planned; a subtree refresh that fails or does not merge reads the whole
/// tree instead. Returns the tree and the raw answer to free later.
pub(super) async fn read_tree(
    p: &ChromiumProvider,
    session: &SessionId,
    frame: &str,
    plan: Refresh,
    base: Option<Arc<AxTree>>,
    deadline: Instant,
) -> Result<(Arc<AxTree>, Option<Value>), browserd_cdp::CdpError> {
    use std::sync::atomic::Ordering::Relaxed;
    let why = match (plan, base) {
        (Refresh::Reuse, Some(base)) => {
            p.ax_stats.reused.fetch_add(1, Relaxed);
            return Ok((base, None));
        }
        (Refresh::Partial { subtrees, nodes }, Some(base)) => {
            let roots: Vec<(i64, bool)> =
                subtrees.iter().map(|b| (*b, true)).chain(nodes.iter().map(|b| (*b, false))).collect();
            let reads = join_all(roots.iter().map(|&(b, whole)| async move {
                let q = async {
                    if !whole {
                        return Ok(Value::Null);
                    }
                    p.call(Some(session), "Accessibility.queryAXTree", json!({"backendNodeId": b}), deadline).await
                };
                let r = p.call(
                    Some(session),
                    "Accessibility.getPartialAXTree",
                    json!({"backendNodeId": b, "fetchRelatives": true}),
                    deadline,
                );
                let (q, r) = tokio::join!(q, r);
                let nodes = |v: Value| match v {
                    Value::Object(mut o) => match o.remove("nodes") {
                        Some(Value::Array(a)) => a,
                        _ => Vec::new(),
                    },
                    _ => Vec::new(),
                };
                Ok::<_, browserd_cdp::CdpError>(SubtreeRead {
                    backend: b,
                    whole,
                    subtree: nodes(q?),
                    relatives: nodes(r?),
                })
            }))
            .await;
            match reads.into_iter().collect::<Result<Vec<_>, _>>() {
                Ok(reads) => match crate::ax::merge(&base, &reads) {
                    Some(tree) => {
                        p.ax_stats.subtrees.fetch_add(1, Relaxed);
                        tracing::debug!(
                            frame,
                            subtrees = subtrees.len(),
                            nodes = nodes.len(),
                            "accessibility tree refreshed by subtree"
                        );
                        return Ok((Arc::new(tree), None));
                    }
                    None => "subtree reads did not merge",
                },
                Err(browserd_cdp::CdpError::Protocol { .. }) => "a subtree read was refused",
                Err(e) => return Err(e),
            }
        }
        (Refresh::Full(why), _) => why,
        (_, None) => "nothing cached",
    };
    p.ax_stats.full.fetch_add(1, Relaxed);
    tracing::debug!(frame, why, "accessibility tree read whole");
    let v = p.call(Some(session), "Accessibility.getFullAXTree", json!({"frameId": frame}), deadline).await?;
    Ok((Arc::new(crate::ax::parse_full(&v)), Some(v)))
}

/// A frame's tree as read: the tree and the raw answer to free later.
type TreeRead = Result<(Arc<AxTree>, Option<Value>), browserd_cdp::CdpError>;

/// What the cache holds for the sessions' current states.
pub(super) struct Lookup {
    /// The sessions' DOM snapshots, in session order.
    pub(super) snapshots: Vec<Arc<Value>>,
    /// The sessions whose trees are not cached for their current state.
    pub(super) misses: Vec<Miss>,
    /// The reused trees, by frame.
    pub(super) trees: HashMap<String, Arc<AxTree>>,
}

/// The trees cached for each session's current state (its key), and the sessions that have none (misses).
pub(super) fn lookup(
    p: &ChromiumProvider,
    tab: TabHandle,
    sessions: &[(SessionId, Vec<String>)],
    states: Vec<Result<PageState, browserd_cdp::CdpError>>,
    epochs: &HashMap<String, u64>,
) -> Result<Lookup, ProviderError> {
    let mut snapshots = Vec::with_capacity(sessions.len());
    let mut misses = Vec::new();
    let mut trees: HashMap<String, Arc<AxTree>> = HashMap::new();
    let mut st = p.st();
    let t = st.tabs.get_mut(&tab).ok_or_else(|| gone(tab))?;
    t.ax_cache.keep_sessions(sessions.iter().map(|(s, _)| s));
    for ((session, ids), state) in sessions.iter().zip(states) {
        let state = state.map_err(|e| cdp_err(&e, "capturing the DOM snapshot"))?;
        let key = session_key(state.digest, ids, epochs);
        let current = t.ax_cache.entry(session).filter(|e| e.key == key);
        match current {
            // Elements whose accessibility can change unseen are read again even when nothing else changed.
            Some(cached) if cached.volatile.values().all(Vec::is_empty) => {
                p.ax_stats.reused.fetch_add(ids.len() as u64, std::sync::atomic::Ordering::Relaxed);
                trees.extend(cached.trees.iter().map(|(id, tree)| (id.clone(), Arc::clone(tree))));
            }
            // The entry of the current state has the snapshot's facts already; others get them below.
            _ => misses.push(Miss {
                session: session.clone(),
                ids: ids.clone(),
                key,
                signature: state.signature,
                facts: current.map(|c| Arc::clone(&c.facts)),
                base: t.ax_cache.entry(session).cloned(),
            }),
        }
        snapshots.push(state.snapshot);
    }
    Ok(Lookup { snapshots, misses, trees })
}

/// Reads the trees of the misses: each frame's tree is brought up to date from the session's cached entry —
/// re-reading only the subtrees whose DOM facts changed — or read whole. Fills in the misses' snapshot facts first.
pub(super) async fn read_misses(
    p: &ChromiumProvider,
    reader: &StateReader,
    sessions: &[(SessionId, Vec<String>)],
    snapshots: &[Arc<Value>],
    misses: &mut [Miss],
    epochs: &HashMap<String, u64>,
    deadline: Instant,
) -> Vec<Vec<TreeRead>> {
    for m in misses.iter_mut().filter(|m| m.facts.is_none()) {
        if let Some(i) = sessions.iter().position(|(s, _)| *s == m.session) {
            m.facts = Some(Arc::new(crate::ax::snapshot_facts(&snapshots[i])));
        }
    }
    let focus = join_all(misses.iter().map(|m| async {
        // Focus is the one script-visible state an incremental refresh follows: the elements it left and reached.
        let base = m.base.as_ref()?;
        let (old, new): (&str, &str) = (&base.signature, m.signature.as_deref()?);
        if old == new || crate::ax::non_focus_state(old) != crate::ax::non_focus_state(new) {
            return None;
        }
        let mut moved: Vec<i64> = base.trees.values().filter_map(|t| crate::ax::focused_backend(t)).collect();
        moved.extend(reader.focused(&m.session).await);
        Some(moved)
    }))
    .await;
    join_all(misses.iter().zip(&focus).map(|(m, moved)| {
        let snapshot = sessions.iter().position(|(s, _)| *s == m.session).and_then(|i| snapshots.get(i));
        join_all(m.ids.iter().map(move |id| async move {
            let plan = plan_refresh(m, id, epochs, moved.as_deref());
            if matches!(plan, Refresh::Full(_))
                && let Some(tree) = snapshot.and_then(|s| dom_first(p, m, s))
            {
                p.ax_stats.dom.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::debug!(frame = id, "accessibility tree built from the DOM snapshot");
                return Ok((Arc::new(tree), None));
            }
            let base = m.base.as_ref().and_then(|b| b.trees.get(id)).cloned();
            read_tree(p, &m.session, id, plan, base, deadline).await
        }))
    }))
    .await
}

/// The tree of a session's only frame built from its DOM snapshot (`dom_tree`), when the mode allows it: the frame
/// is large (or the mode says always), the page state is plain (no script-set state; focus anywhere) and the
/// document is made only of what the builder models.
fn dom_first(p: &ChromiumProvider, m: &Miss, snapshot: &Value) -> Option<AxTree> {
    use crate::ax::DomFirst;
    let mode = p.dom_first();
    if mode == DomFirst::Never || m.ids.len() != 1 {
        return None;
    }
    let focus = super::dom_tree::focus_path(m.signature.as_deref()?)?;
    let nodes = snapshot["documents"][0]["nodes"]["parentIndex"].as_array().map_or(0, Vec::len);
    if mode == DomFirst::Auto && nodes < super::dom_tree::MIN_NODES {
        return None;
    }
    super::dom_tree::build(snapshot, &focus)
}

/// Adds the trees read for the misses to `trees` (a frame that went away mid-observation is shown as not loaded;
/// the main frame's tree must be read). A session whose trees were all read is cached only once its state, read
/// again after them, is still the one read before (`StateReader::confirm`): a cached tree always belongs to its
/// key. Returns the raw answers, to free off the observation's path.
pub(super) fn apply(
    reader: &StateReader,
    misses: Vec<Miss>,
    reads: Vec<Vec<TreeRead>>,
    epochs: &HashMap<String, u64>,
    main_frame: &str,
    trees: &mut HashMap<String, Arc<AxTree>>,
) -> Result<Vec<Value>, ProviderError> {
    let mut garbage = Vec::new();
    for (m, axs) in misses.into_iter().zip(reads) {
        let mut fresh = HashMap::new();
        let mut complete = true;
        for (id, r) in m.ids.iter().zip(axs) {
            match r {
                Ok((tree, raw)) => {
                    fresh.insert(id.clone(), tree);
                    garbage.extend(raw);
                }
                Err(e) if *id == main_frame => return Err(cdp_err(&e, "reading the accessibility tree")),
                Err(_) => complete = false, // A frame that went away mid-observation is shown as not loaded.
            }
        }
        if complete
            && let (Some(signature), Some(facts)) = (m.signature, m.facts)
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            let volatile = fresh
                .iter()
                .filter_map(|(id, tree)| Some((id.clone(), crate::ax::volatile(tree, facts.get(id)?))))
                .collect();
            let entry = Entry { key: m.key, trees: fresh.clone(), facts, signature, epochs: epochs.clone(), volatile };
            drop(rt.spawn(reader.clone().confirm(m.session, m.ids, entry)));
        }
        trees.extend(fresh);
    }
    Ok(garbage)
}
