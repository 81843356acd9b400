//! browserd's isolated world (`browserd-act`): where every script browserd runs for an action or a screenshot runs,
//! out of the reach of the page's own scripts.
//!
//! A page shares its DOM with an isolated world but not its globals or built-ins: whatever a page does to
//! `getComputedStyle`, `Element.prototype.getBoundingClientRect`, `elementFromPoint`, `closest`, the `parentNode`,
//! `isConnected` or `value` accessors, `Array.prototype.includes`, `scrollIntoView`, `devicePixelRatio`, ... the world
//! still sees the browser's own. So nodes that browserd inspects or operates on are resolved into this world
//! ([`node`]) and expressions are evaluated in it ([`eval`]), never in the page's main world. When the world cannot be
//! had for a frame, callers fail closed ([`WorldError::Unavailable`]); nothing falls back to the page's world.
//!
//! Each frame document has its own execution context of the world (an out-of-process frame on its own session). The
//! context is remembered per document ([`context`]): a new document makes the entry unused, and the next lookup
//! creates the world again (with the effect tracker installed), so the common path costs no extra round trip.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use browserd_cdp::{CdpError, SessionId};
use browserd_core::provider::TabHandle;
use serde_json::{Value, json};

use crate::provider::{ChromiumProvider, remaining};

/// The name of browserd's isolated world.
pub(crate) const WORLD: &str = "browserd-act";

/// (provider epoch, session, the frame's document epoch — unique within a tab).
type Key = (u64, SessionId, u64);
/// Execution contexts of the world, remembered per frame document.
static CONTEXTS: Mutex<Vec<(Key, i64)>> = Mutex::new(Vec::new());
/// How many remembered contexts are kept (oldest dropped first).
const KEPT: usize = 256;
/// The longest a single world call may take (within the caller's deadline).
const CALL_CAP: Duration = Duration::from_millis(2000);

fn contexts() -> MutexGuard<'static, Vec<(Key, i64)>> {
    CONTEXTS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Why the world could not be used.
#[derive(Debug)]
pub(crate) enum WorldError {
    /// The link to the page failed (connection, target, deadline or cancellation).
    Link(CdpError),
    /// The browser does not give browserd its world in this frame (or the frame is going away); `String` says what
    /// the browser answered.
    Unavailable(String),
    /// browserd's own script threw in the world; `String` is the exception.
    Script(String),
}

impl WorldError {
    fn of(e: CdpError) -> Self {
        match e {
            // The extension's gate refusing a script made for an action is not the world going away.
            CdpError::Protocol { message, .. }
                if !crate::act::target_went_away(&message) && crate::act::gate_refusal(&message).is_none() =>
            {
                Self::Unavailable(message)
            }
            e => Self::Link(e),
        }
    }
}

impl std::fmt::Display for WorldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Link(e) => write!(f, "{e}"),
            Self::Unavailable(why) => write!(f, "browserd's isolated world is not available in this frame ({why})"),
            Self::Script(why) => write!(f, "browserd's script failed in its isolated world ({why})"),
        }
    }
}

fn cap(deadline: Instant) -> Duration {
    remaining(deadline).min(CALL_CAP)
}

/// The root frame of a session: the tab's main frame for the page session, the frame an out-of-process child session
/// renders for a child.
pub(crate) fn root_frame(p: &ChromiumProvider, tab: TabHandle, session: &SessionId) -> Option<String> {
    let st = p.st();
    let t = st.tabs.get(&tab)?;
    if t.session.as_ref() == Some(session) { Some(t.target_id.clone()) } else { t.children.get(session).cloned() }
}

/// The remembered context of the document `key` names.
fn lookup(key: &Key) -> Option<i64> {
    contexts().iter().find(|(k, _)| k == key).map(|(_, id)| *id)
}

/// The execution context of the world remembered for the current document of `frame` (rendered by `session`), if
/// any; never makes one.
pub(crate) fn remembered(p: &ChromiumProvider, tab: TabHandle, session: &SessionId, frame: &str) -> Option<i64> {
    let epoch = p.st().tabs.get(&tab)?.frames.get(frame)?.doc_epoch;
    lookup(&(p.epoch, session.clone(), epoch))
}

/// The execution context of the world in the current document of `frame` (rendered by `session`): the remembered
/// one unless `fresh`; otherwise made (`Page.createIsolatedWorld` returns the existing context of a document that
/// has one) with the effect tracker installed, and remembered.
pub(crate) async fn context(
    p: &ChromiumProvider,
    tab: TabHandle,
    session: &SessionId,
    frame: &str,
    fresh: bool,
    deadline: Instant,
) -> Result<i64, WorldError> {
    // A frame missing from the records has no document epoch: its context is looked up each time.
    let epoch = {
        let st = p.st();
        let t = st
            .tabs
            .get(&tab)
            .ok_or_else(|| WorldError::Link(CdpError::TargetClosed { reason: "the tab closed".into() }))?;
        t.frames.get(frame).map(|f| f.doc_epoch)
    };
    let key = epoch.map(|e| (p.epoch, session.clone(), e));
    if !fresh && let Some(id) = key.as_ref().and_then(lookup) {
        return Ok(id);
    }
    let s = Some(session);
    let w = p
        .cdp
        .call(s, "Page.createIsolatedWorld", json!({"frameId": frame, "worldName": WORLD}), cap(deadline))
        .await
        .map_err(WorldError::of)?;
    let id = w["executionContextId"]
        .as_i64()
        .ok_or_else(|| WorldError::Unavailable("the browser named no execution context for it".into()))?;
    let _ = p
        .cdp
        .call(s, "Runtime.evaluate", json!({"expression": crate::act::TRACKER, "contextId": id}), cap(deadline))
        .await;
    if let Some(key) = key {
        let mut c = contexts();
        c.retain(|(k, _)| *k != key);
        c.push((key, id));
        if c.len() > KEPT {
            c.remove(0);
        }
    }
    Ok(id)
}

/// A node as an object of the world of its frame, in `group`; `Ok(None)` when the node is no longer in its document.
/// A remembered context that no longer answers (its document was replaced) is made again, once.
pub(crate) async fn node(
    p: &ChromiumProvider,
    tab: TabHandle,
    session: &SessionId,
    frame: &str,
    backend: i64,
    group: &str,
    deadline: Instant,
) -> Result<Option<String>, WorldError> {
    let mut last = None;
    for fresh in [false, true] {
        let id = context(p, tab, session, frame, fresh, deadline).await?;
        if fresh && last == Some(id) {
            // The same, live context: it is the node that is gone.
            return Ok(None);
        }
        match resolve_in(p, session, backend, id, group, deadline).await {
            Ok(object) => return Ok(object),
            Err(e) => match WorldError::of(e) {
                WorldError::Unavailable(_) => last = Some(id),
                link => return Err(link),
            },
        }
    }
    Ok(None)
}

/// Resolves a node into the execution context `context` of the world, in `group`: its object id, `None` when the
/// browser names none. Used by [`node`], and directly by a caller that already holds the document's context.
pub(crate) async fn resolve_in(
    p: &ChromiumProvider,
    session: &SessionId,
    backend: i64,
    context: i64,
    group: &str,
    deadline: Instant,
) -> Result<Option<String>, CdpError> {
    let params = json!({"backendNodeId": backend, "executionContextId": context, "objectGroup": group});
    let v = p.call(Some(session), "DOM.resolveNode", params, deadline).await?;
    Ok(v["object"]["objectId"].as_str().map(str::to_owned))
}

/// Evaluates `expression` (by value, awaiting a promise) in the world of the root frame of `session`. A remembered
/// context that no longer answers is made again, once; a script exception is [`WorldError::Script`].
pub(crate) async fn eval(
    p: &ChromiumProvider,
    tab: TabHandle,
    session: &SessionId,
    expression: &str,
    deadline: Instant,
) -> Result<Value, WorldError> {
    eval_marked(p, tab, session, expression, deadline, false).await
}

/// Like [`eval`], for a script that changes the page as part of an action: the extension relay's last-hop gate checks
/// it as a write (see [`browserd_cdp::Cdp::call_for_action`]).
pub(crate) async fn eval_for_action(
    p: &ChromiumProvider,
    tab: TabHandle,
    session: &SessionId,
    expression: &str,
    deadline: Instant,
) -> Result<Value, WorldError> {
    eval_marked(p, tab, session, expression, deadline, true).await
}

async fn eval_marked(
    p: &ChromiumProvider,
    tab: TabHandle,
    session: &SessionId,
    expression: &str,
    deadline: Instant,
    for_action: bool,
) -> Result<Value, WorldError> {
    let frame = root_frame(p, tab, session)
        .ok_or_else(|| WorldError::Link(CdpError::TargetClosed { reason: "the frame's session is gone".into() }))?;
    let mut why = String::new();
    for fresh in [false, true] {
        let id = context(p, tab, session, &frame, fresh, deadline).await?;
        let args = json!({"expression": expression, "contextId": id, "returnByValue": true, "awaitPromise": true});
        let r = p.call_marked(Some(session), "Runtime.evaluate", args, cap(deadline), for_action).await;
        match r {
            Ok(v) => match v.get("exceptionDetails") {
                None => return Ok(v["result"]["value"].clone()),
                Some(ex) => {
                    let text = ex["exception"]["description"].as_str().or(ex["text"].as_str());
                    return Err(WorldError::Script(text.unwrap_or("an exception").to_owned()));
                }
            },
            // An error means the context is gone (a new document): look it up again, once.
            Err(e) => match WorldError::of(e) {
                WorldError::Unavailable(m) => why = m,
                link => return Err(link),
            },
        }
    }
    Err(WorldError::Unavailable(why))
}
