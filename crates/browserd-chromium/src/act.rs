//! Actions: resolve the target, check actionability (attached, visible, stable, enabled/editable, hit test), dispatch
//! real input, settle, gather effects and verify `expected` under one deadline; de-duplication by request id. Every
//! script of an action runs on nodes resolved into browserd's isolated world ([`crate::world`]); when that world
//! cannot be had the step fails closed (nothing sent, or `unknown` once input was sent, or `unverified`).

// `Fail` carries the covering element and candidates by value; it is built once per failed action.
#![allow(clippy::result_large_err)]

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use browserd_cdp::{Cdp, CdpError, SessionId};
use browserd_core::provider::{OpContext, ProviderError, ProviderErrorKind, TabHandle};
use browserd_protocol::{
    ActParams, ActionKind, ActionResult, CoveringElement, Dispatch, DownloadInfo, Expectation, ExpectationResult,
    ImagePoint, NodeRef, Observation, Outcome, Postcondition, ScrollDirection, codes,
};
use serde_json::{Value, json};

use crate::input::{KeyDef, char_def, parse_chord};
use crate::observe::{Built, RefError, Resolved, build, diff, render, resolve_ref};
use crate::point::{IMAGE_WINDOW, current_viewport, map_point};
use crate::provider::{ChromiumProvider, Dedup, gone, remaining, truncate};
use crate::state::{Line, LogEvent};
use crate::world::{self, WORLD, WorldError};

/// How long an obstacle that is still changing (a fading toast, a moving target) is waited for before
/// `NOT_ACTIONABLE`.
const PATIENCE: Duration = Duration::from_millis(1000);
/// How long an obstacle must stay the same (same covering node, box and opacity, no running animation; or the same
/// reason) before it is reported: a persistent overlay is answered this quickly.
const OBSTACLE_STABLE: Duration = Duration::from_millis(150);
/// The re-check cadence while an obstacle is watched: about one animation frame.
const FRAME: Duration = Duration::from_millis(16);
/// DOM quiet time that ends the settle window.
const QUIET_MS: f64 = 40.0;
/// DOM quiet time when expectations decide the end of the wait.
const QUIET_EXPECTING_MS: f64 = 15.0;
/// Longest settle window when nothing is expected.
const MAX_SETTLE: Duration = Duration::from_millis(600);
const GROUP: &str = "browserd-act";
/// How long the answer to an input is still awaited once a dialog opened while it was pending, to tell whether the
/// page handled it before the dialog (then the dialog came from a later input).
const DIALOG_GRACE: Duration = Duration::from_millis(100);

/// The effect tracker, run in browserd's isolated world ([`crate::world`]) of every document: DOM quiet time and
/// live-region / toast text for effect summaries. Page scripts can neither see it nor break it (by replacing
/// `MutationObserver`, `Array.prototype.push`, `Element.prototype.getAttribute`, ...). Idempotent.
pub(crate) const TRACKER: &str = r#"(() => {
  if (window.__browserd) return;
  const st = { last: performance.now(), ann: [] };
  window.__browserd = st;
  const live = (n) => {
    for (let e = n && n.nodeType === 1 ? n : n && n.parentElement; e; e = e.parentElement) {
      const l = e.getAttribute('aria-live'); const r = e.getAttribute('role');
      if (l === 'off') return null;
      if (l || r === 'alert' || r === 'status' || r === 'log' ||
          (typeof e.className === 'string' && /\b(toast|snackbar|notification)/i.test(e.className))) return e;
    }
    return null;
  };
  new MutationObserver((ms) => {
    st.last = performance.now();
    for (const m of ms) {
      const nodes = m.type === 'characterData' ? [m.target] : m.addedNodes;
      for (const n of nodes) {
        if (live(n)) { const t = (n.textContent || '').trim().replace(/\s+/g, ' '); if (t) st.ann.push(t.slice(0, 200)); }
      }
    }
  }).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
})()"#;

/// Reads the tracker: `null` when this world has none yet, else `[ms since the last DOM change, new announcements]`.
const TRACKER_READ: &str = "(() => { const b = window.__browserd; if (!b) return null; return [performance.now() - b.last, b.ann.splice(0)]; })()";

/// Installs the effect tracker in browserd's isolated world of a page or frame session: for every later document
/// (before its scripts run) and for the current one. Only the registration for later documents must succeed; the
/// current document is covered again when an action starts.
pub(crate) async fn install_tracker(cdp: &Cdp, session: &SessionId, timeout: Duration) -> Result<(), CdpError> {
    let s = Some(session);
    let (registered, tree) = tokio::join!(
        cdp.call(s, "Page.addScriptToEvaluateOnNewDocument", json!({"source": TRACKER, "worldName": WORLD}), timeout),
        cdp.call(s, "Page.getFrameTree", json!({}), timeout),
    );
    registered?;
    if let Some(frame) = tree.ok().as_ref().and_then(|t| t["frameTree"]["frame"]["id"].as_str())
        && let Ok(w) =
            cdp.call(s, "Page.createIsolatedWorld", json!({"frameId": frame, "worldName": WORLD}), timeout).await
    {
        let _ = cdp
            .call(s, "Runtime.evaluate", json!({"expression": TRACKER, "contextId": w["executionContextId"]}), timeout)
            .await;
    }
    Ok(())
}

/// One round trip of actionability for same-process targets: state, scroll into view, box in top-level viewport
/// coordinates (through same-origin frames), running animations, and whether the centre point hits the target. Runs
/// on the node as an object of browserd's isolated world, so the built-ins it calls (`getComputedStyle`,
/// `elementFromPoint`, `getClientRects`, `closest`, `parentNode`, ...) are the browser's, whatever the page replaced.
const CHECK: &str = r"function(pointNode, checkHit) {
  const e = this; const el = e.nodeType === 1 ? e : e.parentElement;
  const out = { connected: e.isConnected };
  if (!out.connected || !el) return out;
  const cs = getComputedStyle(el);
  const tag = el.tagName;
  const textual = (tag === 'INPUT' && !['checkbox','radio','button','submit','reset','file','image','range','color'].includes(el.type)) || tag === 'TEXTAREA';
  out.visible = cs.visibility !== 'hidden' && cs.display !== 'none';
  out.disabled = !!(el.disabled || (el.closest && el.closest('[aria-disabled=true],fieldset[disabled]')));
  out.readonly = !!el.readOnly;
  out.editable = (textual && !el.readOnly && !el.disabled) || !!el.isContentEditable;
  out.tag = tag; out.type = el.type || '';
  out.animating = document.getAnimations().length > 0;
  const p = pointNode || el;
  if (p.scrollIntoViewIfNeeded) p.scrollIntoViewIfNeeded(true); else p.scrollIntoView({ block: 'center' });
  let r = null;
  for (const x of p.getClientRects()) { if (x.width >= 1 && x.height >= 1) { r = x; break; } }
  if (!r) { out.box = null; return out; }
  const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
  let ox = 0, oy = 0, w = el.ownerDocument.defaultView, outer = null;
  try {
    while (w.frameElement) {
      const f = w.frameElement, fr = f.getBoundingClientRect(), fs = getComputedStyle(f);
      ox += fr.left + parseFloat(fs.borderLeftWidth) + parseFloat(fs.paddingLeft);
      oy += fr.top + parseFloat(fs.borderTopWidth) + parseFloat(fs.paddingTop);
      outer = f; w = w.parent;
    }
  } catch (err) { out.crossFrame = true; return out; }
  out.box = [r.left + ox, r.top + oy, r.width, r.height];
  if (checkHit) {
    let h = el.ownerDocument.elementFromPoint(cx, cy);
    while (h && h.shadowRoot) { const d = h.shadowRoot.elementFromPoint(cx, cy); if (!d || d === h) break; h = d; }
    let inside = false;
    for (let n = h; n; n = n.parentNode || n.host) { if (n === e) { inside = true; break; } }
    if (!inside && h) { const l = h.closest && h.closest('label'); if (l && l.control === e) inside = true; }
    if (inside && outer) inside = w.document.elementFromPoint(cx + ox, cy + oy) === outer;
    out.hitInside = inside;
  }
  return out;
}";

/// The tab or frame went away (the protocol's `codes` has no constant for it yet).
const TARGET_CLOSED: &str = browserd_protocol::ErrorCode::TargetClosed.as_str();
/// The input was sent and whether it took effect could not be established.
const OUTCOME_UNKNOWN: &str = browserd_protocol::ErrorCode::OutcomeUnknown.as_str();

/// A failure that ends the action.
#[derive(Debug)]
struct Fail {
    code: &'static str,
    message: String,
    outcome: Outcome,
    covering: Option<CoveringElement>,
    candidates: Vec<String>,
    /// The link to the page failed (connection, target, deadline or cancellation on a CDP call): once input may
    /// have been sent, such a failure makes the outcome unknown.
    link: bool,
    /// The node that would receive the input instead of the target (session, frame id, backend id); described as
    /// `covering` only when the failure is final.
    cover_at: Option<(SessionId, String, i64)>,
    /// browserd's isolated world could not be used, so a check or read-back could not be made out of the page's
    /// reach (it is never made in the page's world instead).
    world: bool,
}

impl Fail {
    fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            outcome: Outcome::Failed,
            covering: None,
            candidates: Vec::new(),
            link: false,
            cover_at: None,
            world: false,
        }
    }

    fn covered_at(session: &SessionId, frame: &str, backend: i64) -> Self {
        let mut f = Self::new(codes::NOT_ACTIONABLE, "the target is covered by another element");
        f.cover_at = Some((session.clone(), frame.to_owned(), backend));
        f
    }
    fn unknown(mut self) -> Self {
        self.outcome = Outcome::Unknown;
        self
    }
}

fn cdp_fail(e: &CdpError, what: &str, dispatched: bool) -> Fail {
    let f = match e {
        CdpError::Timeout { .. } => Fail::new(codes::DEADLINE_EXCEEDED, format!("{what}: the deadline passed")),
        CdpError::ConnectionClosed { .. } | CdpError::Transport(_) => {
            Fail::new(codes::CONNECTION_LOST, format!("{what}: {e}"))
        }
        CdpError::TargetClosed { reason } => {
            Fail::new(TARGET_CLOSED, format!("{what}: the tab or frame went away ({reason})"))
        }
        CdpError::Cancelled => {
            Fail { outcome: Outcome::Cancelled, ..Fail::new(codes::CANCELLED, format!("{what}: cancelled")) }
        }
        CdpError::Protocol { message, .. } if target_went_away(message) => {
            Fail::new(TARGET_CLOSED, format!("{what}: the tab or frame went away ({message})"))
        }
        _ => return Fail::new(codes::ACTION_FAILED, format!("{what}: {e}")),
    };
    let f = Fail { link: true, ..f };
    if dispatched { f.unknown() } else { f }
}

/// What a look for a text found.
enum Seen {
    Present,
    Absent,
    /// Not found where it could be read, and some frame could not be read out of the page's reach (why).
    Unverifiable(String),
    /// Not found before the look was cut short (the deadline passed, or the link failed: judged by the caller).
    Unread,
}

/// A failure to use browserd's isolated world while `what`: a link failure is one like any other call's; otherwise the
/// step fails closed (see [`Fail::world`]), and `act_inner` says whether anything had been sent.
fn world_fail(e: WorldError, what: &str) -> Fail {
    match e {
        WorldError::Link(e) => cdp_fail(&e, what, false),
        WorldError::Unavailable(why) => Fail {
            world: true,
            ..Fail::new(
                codes::ACTION_FAILED,
                format!(
                    "{what}: browserd could not use its isolated world in this frame ({why}); it never checks or reads \
                     the page from the page's own world, where the page's scripts could fake the answer"
                ),
            )
        },
        WorldError::Script(why) => Fail::new(
            codes::ACTION_FAILED,
            format!("{what}: browserd's script failed ({why}); observe the page and try another way"),
        ),
    }
}

/// Whether a protocol error says the target or its session went away while the command was handled (Chromium's
/// and `chrome.debugger`'s wordings).
pub(crate) fn target_went_away(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "detached while handling",
        "target closed",
        "session with given id not found",
        "no session with given id",
        "no target with given id",
        "inspected target navigated or closed",
        "debugger is not attached",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// The message of an action whose input may have reached the page when the link failed.
fn unknown_message(why: &str) -> String {
    format!(
        "{why}; the input may already have reached the page, so the outcome is unknown: it is not retried \
         automatically — observe the page (reconnecting first if needed) before deciding to act again"
    )
}

/// The failure of an action (other than `dialog`) tried while a dialog is open.
fn blocked_by(d: &browserd_protocol::DialogInfo) -> Fail {
    Fail::new(
        codes::DIALOG_BLOCKING,
        format!(
            "a {} dialog is open ({:?}); handle it with the dialog action (accept or dismiss) first",
            d.kind,
            truncate(&d.message, 80)
        ),
    )
}

/// The box of a node in top-level viewport coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct QuadBox {
    pub(crate) left: f64,
    pub(crate) top: f64,
    pub(crate) width: f64,
    pub(crate) height: f64,
}

impl QuadBox {
    fn center(&self) -> (f64, f64) {
        (self.left + self.width / 2.0, self.top + self.height / 2.0)
    }
}

/// The offset of a frame's viewport inside the top-level viewport (sums OOPIF owner boxes).
async fn frame_offset(
    p: &ChromiumProvider,
    tab: TabHandle,
    frame: &str,
    deadline: Instant,
) -> Result<(f64, f64), String> {
    let mut off = (0.0, 0.0);
    let mut current = frame.to_owned();
    for _ in 0..16 {
        let (oop, parent, parent_session) = {
            let st = p.st();
            let t = st.tabs.get(&tab).ok_or("the tab is gone")?;
            let f = t.frames.get(&current).ok_or("the frame is gone")?;
            let parent_session = f.parent.as_ref().and_then(|pa| t.frames.get(pa)).map(|pf| pf.session.clone());
            (f.oop, f.parent.clone(), parent_session)
        };
        let Some(parent) = parent else { break };
        if oop {
            let ps = parent_session.ok_or("the parent frame is gone")?;
            let owner = p
                .call(Some(&ps), "DOM.getFrameOwner", json!({"frameId": current}), deadline)
                .await
                .map_err(|e| format!("finding the frame's owner: {e}"))?;
            let bm = p
                .call(Some(&ps), "DOM.getBoxModel", json!({"backendNodeId": owner["backendNodeId"]}), deadline)
                .await
                .map_err(|e| format!("measuring the frame's owner: {e}"))?;
            let c = &bm["model"]["content"];
            off.0 += c[0].as_f64().unwrap_or(0.0);
            off.1 += c[1].as_f64().unwrap_or(0.0);
        }
        current = parent;
    }
    Ok(off)
}

/// The bounding box of a node's first visible quad, in top-level viewport coordinates.
pub(crate) async fn quad_center(
    p: &ChromiumProvider,
    tab: TabHandle,
    res: &Resolved,
    deadline: Instant,
) -> Result<QuadBox, String> {
    let q = p
        .call(Some(&res.session), "DOM.getContentQuads", json!({"backendNodeId": res.point_backend}), deadline)
        .await
        .map_err(|e| format!("the node has no box ({e})"))?;
    let quads = q["quads"].as_array().cloned().unwrap_or_default();
    let mut best: Option<QuadBox> = None;
    for quad in quads {
        let pts: Vec<f64> = quad.as_array().into_iter().flatten().filter_map(Value::as_f64).collect();
        if pts.len() < 8 {
            continue;
        }
        let xs = [pts[0], pts[2], pts[4], pts[6]];
        let ys = [pts[1], pts[3], pts[5], pts[7]];
        let left = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let right = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let top = ys.iter().copied().fold(f64::INFINITY, f64::min);
        let bottom = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if right - left >= 1.0 && bottom - top >= 1.0 {
            best = Some(QuadBox { left, top, width: right - left, height: bottom - top });
            break;
        }
    }
    let mut b = best.ok_or_else(|| "the node has no visible box (zero size or hidden)".to_owned())?;
    let (ox, oy) = frame_offset(p, tab, &res.frame_id, deadline).await?;
    b.left += ox;
    b.top += oy;
    Ok(b)
}

struct Run<'a> {
    p: &'a ChromiumProvider,
    tab: TabHandle,
    deadline: Instant,
    session: SessionId,
    res: ActionResult,
    seq0: u64,
    baseline: Option<Vec<Line>>,
    announced: Vec<String>,
    sessions_used: Vec<SessionId>,
    last_built: Option<Built>,
    /// The expectations (indices) whose latest completed check could not be made out of the page's reach. A check cut
    /// short by the deadline leaves the entry as it was; a definite answer removes it.
    unverified: Vec<u32>,
    /// Set as soon as a command that changes the page (input, navigation, selection, files, dialog) is handed to the
    /// browser; read by the caller when the action is cancelled midway.
    sent: &'a AtomicBool,
    /// Nodes of the target resolved into browserd's world ahead of the first check (see [`Run::prefetch`]), each used
    /// once.
    prefetched: std::sync::Mutex<Vec<Prefetched>>,
}

/// A node resolved into browserd's world ahead of its first use: where it lives, the context it was resolved in, and
/// its object id.
struct Prefetched {
    session: SessionId,
    frame: String,
    backend: i64,
    context: i64,
    object: String,
}

fn index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0 * 100.0).round() / 100.0
}

fn payload_hash(params: &ActParams) -> u64 {
    let mut p = params.clone();
    p.request_id = None;
    let mut h = DefaultHasher::new();
    serde_json::to_string(&p).unwrap_or_default().hash(&mut h);
    h.finish()
}

/// `browser_act`.
pub(crate) async fn act(
    p: &ChromiumProvider,
    ctx: &OpContext,
    tab: TabHandle,
    params: &ActParams,
) -> Result<ActionResult, ProviderError> {
    let hash = payload_hash(params);
    if let Some(id) = &params.request_id {
        let mut d = p.dedup.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match d.get(id) {
            Some(Dedup::Done(h, r)) if *h == hash => {
                let mut r = (**r).clone();
                r.deduplicated = true;
                return Ok(r);
            }
            Some(Dedup::Done(..)) => {
                return Ok(refused(
                    ctx,
                    codes::PAYLOAD_MISMATCH,
                    format!("requestId {id} was already used with another payload; use a new requestId"),
                ));
            }
            Some(Dedup::Running) => {
                return Ok(refused(
                    ctx,
                    codes::DUPLICATE_REQUEST,
                    format!("requestId {id} is still running; wait for its result instead of resending"),
                ));
            }
            None => {
                d.insert(id.clone(), Dedup::Running);
                if d.len() > 4096 {
                    d.retain(|_, v| matches!(v, Dedup::Running));
                }
            }
        }
    }
    let sent = AtomicBool::new(false);
    let out = tokio::select! {
        r = act_inner(p, ctx, tab, params, &sent) => r,
        () = ctx.cancel.cancelled() => Ok(if sent.load(Ordering::SeqCst) {
            ActionResult {
                trace_id: ctx.trace_id.clone(),
                outcome: Outcome::Unknown,
                dispatch: Dispatch::Dispatched,
                code: Some(codes::CANCELLED.into()),
                message: Some(unknown_message("the action was cancelled after input was sent")),
                ..Default::default()
            }
        } else {
            ActionResult {
                trace_id: ctx.trace_id.clone(),
                outcome: Outcome::Cancelled,
                code: Some(codes::CANCELLED.into()),
                message: Some("the action was cancelled before any input was sent; nothing reached the page".into()),
                ..Default::default()
            }
        }),
    };
    if let Some(id) = &params.request_id {
        let mut d = p.dedup.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match &out {
            Ok(r) if r.dispatch != Dispatch::NotDispatched || r.outcome == Outcome::Succeeded => {
                d.insert(id.clone(), Dedup::Done(hash, Box::new(r.clone())));
            }
            _ => {
                // Nothing reached the page: the same id may be retried.
                d.remove(id);
            }
        }
    }
    out
}

fn refused(ctx: &OpContext, code: &str, message: String) -> ActionResult {
    ActionResult {
        trace_id: ctx.trace_id.clone(),
        outcome: Outcome::Failed,
        dispatch: Dispatch::NotDispatched,
        code: Some(code.into()),
        message: Some(message),
        ..Default::default()
    }
}

async fn act_inner(
    p: &ChromiumProvider,
    ctx: &OpContext,
    tab: TabHandle,
    params: &ActParams,
    sent: &AtomicBool,
) -> Result<ActionResult, ProviderError> {
    let t0 = Instant::now();
    let default = if matches!(
        params.action,
        ActionKind::Navigate | ActionKind::Back | ActionKind::Forward | ActionKind::Reload
    ) {
        Duration::from_secs(30)
    } else {
        Duration::from_secs(10)
    };
    let budget = params.timeout_ms.map_or(default, Duration::from_millis).min(ctx.timeout);
    let deadline = t0 + budget;
    let lock = p.tab_lock(tab);
    let _guard = tokio::time::timeout(remaining(deadline), lock.lock()).await.map_err(|_| {
        ProviderError::new(
            ProviderErrorKind::Timeout,
            format!("tab {tab} stayed busy with another operation until the deadline; retry later"),
        )
    })?;
    let queue = t0.elapsed();
    let session = p.ensure_attached(tab, deadline).await?;
    let (seq0, baseline) = {
        let st = p.st();
        let t = st.tabs.get(&tab).ok_or_else(|| gone(tab))?;
        (st.seq, t.history.back().map(|(_, l)| l.clone()))
    };
    let mut run = Run {
        p,
        tab,
        deadline,
        session: session.clone(),
        res: ActionResult { trace_id: ctx.trace_id.clone(), ..Default::default() },
        seq0,
        baseline,
        announced: Vec::new(),
        sessions_used: vec![session],
        last_built: None,
        unverified: Vec::new(),
        sent,
        prefetched: std::sync::Mutex::new(Vec::new()),
    };
    run.res.timings.queue = ms(queue);
    let foreground = !matches!(
        params.action,
        ActionKind::Wait
            | ActionKind::Dialog
            | ActionKind::Navigate
            | ActionKind::Back
            | ActionKind::Forward
            | ActionKind::Reload
    );
    // Before any input, and independent of each other, so done together: the page is brought forward if hidden and
    // the effect tracker is in place (so effects of this action are seen); the nodes must still be what the caller
    // saw (`nodeVersion`); and the target is resolved into browserd's world for its first check. The time counts as
    // resolving the target.
    let targets = [params.target.as_ref(), params.to.as_ref()];
    let v0 = Instant::now();
    let page = async {
        if foreground {
            run.ensure_visible().await;
        }
        if run.dialog_open().is_none() {
            let _ = run.tracker_context(false).await;
        }
    };
    // The browser answers the version check only once a dialog that blocks the page is closed: it is not waited for
    // while one is open.
    let versions = async {
        if run.dialog_open().is_some() {
            return None;
        }
        tokio::select! {
            r = crate::observe::check_node_versions(p, tab, &targets, deadline) => Some(r),
            () = run.dialog_opened() => None,
        }
    };
    let (versions, (), prefetched) = tokio::join!(versions, page, run.prefetch(params));
    *run.prefetched.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner) = prefetched;
    let versions = match versions {
        Some(v) => Ok(v),
        // Checked now if the dialog is gone; otherwise the action stops at the dialog, before any input.
        None if run.dialog_open().is_none() => {
            Ok(crate::observe::check_node_versions(p, tab, &targets, deadline).await)
        }
        None if params.action == ActionKind::Dialog => Ok(Ok(())),
        None => Err(run.dialog_open().map_or_else(
            || Fail::new(codes::DIALOG_BLOCKING, "a dialog blocked the page; handle it with the dialog action first"),
            |d| blocked_by(&d),
        )),
    };
    let versions_ms = ms(v0.elapsed());
    let result = match versions {
        Ok(Ok(())) => run.perform(params).await,
        Ok(Err((reason, message))) => {
            run.res.stale_reason = Some(reason);
            Err(Fail::new(codes::STALE_TARGET, message))
        }
        Err(f) => Err(f),
    };
    run.res.timings.resolve += versions_ms;
    match result {
        Ok(()) => {
            if run.res.outcome == Outcome::Unknown {
                run.res.outcome = Outcome::Succeeded;
            }
        }
        Err(f) if f.link && sent.load(Ordering::SeqCst) => {
            // The link failed after input may have reached the page: never "failed", never retried.
            run.res.outcome = Outcome::Unknown;
            if run.res.dispatch == Dispatch::NotDispatched {
                run.res.dispatch = Dispatch::Dispatched;
            }
            run.res.code = Some(f.code.into());
            run.res.message = Some(unknown_message(&f.message));
            if f.code == TARGET_CLOSED {
                // The browser's target-destroyed event may still be on its way: give it a moment, so the effect
                // summary below names the tab when the tab itself (not only a frame) went away.
                let until = deadline.min(Instant::now() + Duration::from_millis(500));
                while p.st().tabs.contains_key(&tab) && Instant::now() < until {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
        Err(f) if f.world && sent.load(Ordering::SeqCst) => {
            // The input was sent and its read-back could not be made out of the page's reach: unknown, never
            // success on the page's word, never "failed".
            run.res.outcome = Outcome::Unknown;
            if run.res.dispatch == Dispatch::NotDispatched {
                run.res.dispatch = Dispatch::Dispatched;
            }
            run.res.code = Some(OUTCOME_UNKNOWN.into());
            run.res.message = Some(format!(
                "{}; the input was already sent, so whether it took effect is unknown: it is not retried \
                 automatically — observe the page before deciding to act again",
                f.message
            ));
        }
        Err(f) => {
            run.res.outcome = f.outcome;
            run.res.code = Some(f.code.into());
            run.res.message = Some(if f.world {
                format!(
                    "{}; nothing was sent to the page — observe again and retry; if it keeps failing, this browser \
                     connection does not let browserd check this frame: act on the page another way",
                    f.message
                )
            } else {
                f.message
            });
            run.res.covering = f.covering;
            run.res.candidates = f.candidates;
        }
    }
    let dispatched = run.res.dispatch != Dispatch::NotDispatched;
    // Effects and expectations, once anything reached the page (or for `wait`).
    if dispatched || params.action == ActionKind::Wait {
        let w0 = Instant::now();
        run.settle_and_verify(params).await;
        run.res.timings.wait = ms(w0.elapsed()) - run.res.timings.observe;
    }
    let s0 = Instant::now();
    if params.observe {
        if run.last_built.is_none() && p.st().tabs.get(&tab).is_some_and(|t| t.dialog.is_none()) {
            let _ = run.effects_snapshot().await;
        }
        if let Some(b) = run.last_built.take() {
            crate::observe::commit_seen(p, tab, &b.nodes);
            let st = p.st();
            let t = st.tabs.get(&tab);
            run.res.observation = Some(Box::new(Observation {
                url: b.url.clone(),
                title: b.title.clone(),
                untrusted_content: render(&b.lines),
                frames: b.frames.clone(),
                node_count: b.node_count,
                truncated: b.truncated.clone(),
                cursor: crate::observe::cursor(p, t.map_or(0, |t| t.revision)),
                revision: t.map_or(0, |t| t.revision),
                connection_epoch: p.epoch,
                dialog: t.and_then(|t| t.dialog.clone()),
                modal: b.modal.clone(),
                focused: b.focused.clone().map(NodeRef),
                load_state: t.map(|t| t.load_state).unwrap_or_default(),
                ..Default::default()
            }));
        }
    }
    let blocked = p.st().tabs.get(&tab).is_some_and(|t| t.dialog.is_some());
    // The action's objects are released without waiting for the answer: the command is queued before the tab is
    // free for the next action, so it reaches the browser before anything that action sends.
    for s in run.sessions_used.iter().filter(|_| !blocked) {
        let release = json!({"objectGroup": GROUP});
        if let Ok(q) = p.cdp.enqueue(Some(s), "Runtime.releaseObjectGroup", release, Duration::from_millis(200)).await {
            // The answer is waited for elsewhere: a command whose answer nobody waits for is not sent.
            drop(tokio::spawn(q.answer()));
        }
    }
    run.res.timings.serialize = ms(s0.elapsed());
    Ok(run.res)
}

impl Run<'_> {
    fn dialog_open(&self) -> Option<browserd_protocol::DialogInfo> {
        self.p.st().tabs.get(&self.tab).and_then(|t| t.dialog.clone())
    }

    /// Resolves once a dialog is open on the tab (at once if one is).
    async fn dialog_opened(&self) {
        loop {
            let notified = self.p.dialog_notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.dialog_open().is_some() {
                return;
            }
            notified.await;
        }
    }

    /// Resolves a target (a ref, or `role "name"` matched against the latest observation).
    fn resolve(&mut self, target: Option<&NodeRef>) -> Result<Resolved, Fail> {
        let Some(target) = target else {
            return Err(Fail::new(codes::INVALID_PARAMS, "this action needs a `target` ref from an observation"));
        };
        let s = target.as_str().trim();
        let is_ref = crate::state::parse_ref(s).is_some();
        let r = if is_ref {
            s.to_owned()
        } else {
            let (role, name) = match s.find('"') {
                Some(i) => (s[..i].trim().to_owned(), s[i..].trim().trim_matches('"').to_owned()),
                None => (String::new(), s.to_owned()),
            };
            let st = self.p.st();
            let t = st.tabs.get(&self.tab).ok_or_else(|| Fail::new(codes::STALE_TARGET, "the tab is gone"))?;
            let latest = t.history.back().map(|(_, l)| l.clone()).unwrap_or_default();
            let matches: Vec<(String, String)> = latest
                .iter()
                .filter_map(|l| {
                    let r = l.node_ref.as_ref()?;
                    let e = t.refs.by_ref.get(r)?;
                    let ok = (role.is_empty() || e.role == role) && e.name.eq_ignore_ascii_case(&name);
                    ok.then(|| (r.clone(), l.text.clone()))
                })
                .collect();
            match matches.len() {
                0 => {
                    return Err(Fail::new(
                        codes::TARGET_NOT_FOUND,
                        format!("nothing in the latest observation matches {s}; observe and use a ref"),
                    ));
                }
                1 => matches[0].0.clone(),
                n => {
                    let mut f = Fail::new(
                        codes::AMBIGUOUS_TARGET,
                        format!("{s} matches {n} nodes; pick one of the candidate refs"),
                    );
                    f.candidates = matches.into_iter().map(|(_, line)| line).collect();
                    return Err(f);
                }
            }
        };
        match resolve_ref(self.p, self.tab, &r) {
            Ok(res) => {
                if !self.sessions_used.contains(&res.session) {
                    self.sessions_used.push(res.session.clone());
                }
                Ok(res)
            }
            Err(RefError::TabGone) => {
                self.res.stale_reason = Some(browserd_protocol::StaleReason::TabClosed);
                Err(Fail::new(codes::STALE_TARGET, "the tab is gone"))
            }
            Err(RefError::Unknown) => Err(Fail::new(
                codes::TARGET_NOT_FOUND,
                format!("ref {r} was never issued for this tab (refs are per tab); observe and use a ref from it"),
            )),
            Err(RefError::Stale(why)) => {
                self.res.stale_reason = Some(why.reason);
                Err(Fail::new(
                    codes::STALE_TARGET,
                    format!("ref {r} is stale: {why}; observe again and use the new ref"),
                ))
            }
        }
    }

    /// The ref's node as an object of browserd's isolated world in its frame (see [`crate::world`]): every script
    /// browserd runs on a node runs there, never in the page's own world.
    async fn object(&self, res: &Resolved) -> Result<String, Fail> {
        self.node(&res.session, &res.frame_id, res.backend).await
    }

    /// The target's nodes (the node, and the node the mouse points at when another) resolved into browserd's world
    /// ahead of the first check, so that doing so costs no round trip of its own: only with a world context already
    /// remembered for the node's document (one is never made here, so every object of the action belongs to the one
    /// context), and nothing on failure (the first check then resolves the node itself and reports what fails).
    async fn prefetch(&self, params: &ActParams) -> Vec<Prefetched> {
        // A node cannot be resolved while a dialog blocks the page (the answer waits for the dialog): given up as soon
        // as one is open.
        tokio::select! {
            () = self.dialog_opened() => Vec::new(),
            nodes = self.prefetch_nodes(params) => nodes,
        }
    }

    async fn prefetch_nodes(&self, params: &ActParams) -> Vec<Prefetched> {
        let Some(target) = params.target.as_ref().map(|t| t.as_str().trim()) else { return Vec::new() };
        if params.at.is_some()
            || crate::state::parse_ref(target).is_none()
            || matches!(params.action, ActionKind::Wait | ActionKind::Dialog | ActionKind::Navigate)
        {
            return Vec::new();
        }
        let Ok(res) = resolve_ref(self.p, self.tab, target) else { return Vec::new() };
        let Some(context) = world::remembered(self.p, self.tab, &res.session, &res.frame_id) else { return Vec::new() };
        let mut backends = vec![res.backend];
        if res.point_backend != res.backend {
            backends.push(res.point_backend);
        }
        let resolved = futures_util::future::join_all(
            backends.iter().map(|b| world::resolve_in(self.p, &res.session, *b, context, GROUP, self.deadline)),
        )
        .await;
        backends
            .into_iter()
            .zip(resolved)
            .filter_map(|(backend, r)| {
                let object = r.ok()??;
                Some(Prefetched { session: res.session.clone(), frame: res.frame_id.clone(), backend, context, object })
            })
            .collect()
    }

    /// A node of `frame` (rendered by `session`) as an object of browserd's isolated world there.
    async fn node(&self, session: &SessionId, frame: &str, backend: i64) -> Result<String, Fail> {
        let early = {
            let mut pre = self.prefetched.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let at = pre.iter().position(|n| n.session == *session && n.frame == frame && n.backend == backend);
            at.map(|i| pre.swap_remove(i))
        };
        // Used only while its context is still the remembered one of the node's document.
        if let Some(n) = early
            && world::remembered(self.p, self.tab, session, frame) == Some(n.context)
        {
            return Ok(n.object);
        }
        match world::node(self.p, self.tab, session, frame, backend, GROUP, self.deadline).await {
            Ok(Some(id)) => Ok(id),
            Ok(None) => Err(Fail::new(
                codes::STALE_TARGET,
                "the node was removed from the document; observe again and use the new ref",
            )),
            Err(e) => Err(world_fail(e, "resolving the node")),
        }
    }

    /// Calls browserd's function `f` on `object` (an object of browserd's world, from [`Run::node`]): it runs in that
    /// world, with the browser's built-ins.
    async fn call_on(&self, session: &SessionId, object: &str, f: &str, args: Value) -> Result<Value, Fail> {
        let v = self
            .p
            .call(
                Some(session),
                "Runtime.callFunctionOn",
                json!({"objectId": object, "functionDeclaration": f, "arguments": args, "returnByValue": true, "awaitPromise": true}),
                self.deadline,
            )
            .await
            .map_err(|e| cdp_fail(&e, "reading the node", false))?;
        if let Some(ex) = v.get("exceptionDetails") {
            return Err(Fail::new(
                codes::ACTION_FAILED,
                format!(
                    "browserd's script failed in its isolated world ({}); observe the page and try another way",
                    ex["exception"]["description"].as_str().or(ex["text"].as_str()).unwrap_or("an exception")
                ),
            ));
        }
        Ok(v["result"]["value"].clone())
    }

    /// The node's state without geometry (for a file input, which is often visually hidden).
    async fn probe(&self, res: &Resolved, obj: &str) -> Result<Value, Fail> {
        const PROBE: &str = r"function() {
          const e = this; const el = e.nodeType === 1 ? e : e.parentElement;
          const cs = el ? getComputedStyle(el) : null;
          const disabled = !!(el && (el.disabled || (el.closest && el.closest('[aria-disabled=true],fieldset[disabled]'))));
          const tag = el ? el.tagName : '';
          const textual = (tag === 'INPUT' && !['checkbox','radio','button','submit','reset','file','image','range','color'].includes(el.type)) || tag === 'TEXTAREA';
          return { connected: e.isConnected, disabled, readonly: !!(el && el.readOnly), editable: (textual && !el.readOnly && !el.disabled) || !!(el && el.isContentEditable),
                   visible: !!cs && cs.visibility !== 'hidden' && cs.display !== 'none', tag, type: (el && el.type) || '',
                   ce: !!(el && el.isContentEditable), maxlength: el && el.maxLength > 0 ? el.maxLength : null,
                   animating: document.getAnimations().length > 0 };
        }";
        self.call_on(&res.session, obj, PROBE, json!([])).await
    }

    /// Waits for the node to be attached, visible, stable, enabled (and editable), and — with `hit` — to be what
    /// receives a click at its centre. Returns the click point in top-level viewport coordinates.
    async fn actionable(
        &mut self,
        res: &Resolved,
        editable: bool,
        hit: bool,
        enabled: bool,
    ) -> Result<(f64, f64), Fail> {
        // An obstacle is re-checked about once a frame. One that stays the same for `OBSTACLE_STABLE` is reported at
        // once (a modal, a cookie banner); one that is still changing (fading, moving) is waited for up to
        // `PATIENCE`. Both end early enough before the deadline to describe the obstacle precisely.
        let start = Instant::now();
        let margin = remaining(self.deadline).mul_f64(0.2).min(Duration::from_millis(200));
        let give_up = (start + PATIENCE).min(self.deadline.checked_sub(margin).unwrap_or(start));
        let mut last: Option<Fail> = None;
        let mut seen: Option<Value> = None;
        let mut same_since = start;
        loop {
            match self.actionable_once(res, editable, hit, enabled).await {
                Ok(pt) => return Ok(pt),
                Err(f) if f.code == codes::NOT_ACTIONABLE => {
                    let now = Instant::now();
                    let (state, changing) = self.obstacle_state(&f).await;
                    if seen.as_ref() != Some(&state) {
                        seen = Some(state);
                        same_since = now;
                    }
                    let settled = !changing && now.duration_since(same_since) >= OBSTACLE_STABLE;
                    if settled || now + FRAME >= give_up {
                        let f = self.describe_obstacle(f).await;
                        self.res.timings.actionability = ms(start.elapsed());
                        return Err(f);
                    }
                    last = Some(f);
                    tokio::time::sleep(FRAME).await;
                }
                Err(f) if f.code == codes::DEADLINE_EXCEEDED && last.is_some() => {
                    let last = last.take().unwrap_or(f);
                    return Err(self.describe_obstacle(last).await);
                }
                Err(f) => return Err(f),
            }
        }
    }

    /// What an obstacle looks like now, and whether it is still changing. For a covering node: its box, its
    /// effective opacity and whether an animation runs on it or an ancestor (a gone node reads as changing). For
    /// any other reason (hidden, disabled, read-only, moving): the reason itself; only a moving target is changing.
    async fn obstacle_state(&self, f: &Fail) -> (Value, bool) {
        const COVER_STATE: &str = r"function() {
          const e = this.nodeType === 1 ? this : this.parentElement;
          if (!e || !e.isConnected) return null;
          const r = e.getBoundingClientRect();
          let opacity = 1, animating = false;
          for (let n = e; n && n.nodeType === 1; n = n.parentElement || (n.getRootNode().host || null)) {
            opacity *= parseFloat(getComputedStyle(n).opacity);
            if (n.getAnimations().some((a) => a.playState === 'running')) animating = true;
          }
          return [Math.round(r.left), Math.round(r.top), Math.round(r.width), Math.round(r.height), Math.round(opacity * 100), animating];
        }";
        let Some((session, frame, backend)) = &f.cover_at else {
            let moving = f.message.contains("moving");
            return (json!(f.message), moving);
        };
        // A node that cannot be read (gone, or no isolated world) reads as changing: it is watched, never believed.
        let obj = self.node(session, frame, *backend).await.ok();
        let state = match obj {
            Some(obj) => self.call_on(session, &obj, COVER_STATE, json!([])).await.unwrap_or(Value::Null),
            None => Value::Null,
        };
        let changing = state.is_null() || state[5] == json!(true);
        (json!([backend, state]), changing)
    }

    /// Turns a final `NOT_ACTIONABLE` into its report: a covering node is described (role, name, a ref).
    async fn describe_obstacle(&mut self, mut f: Fail) -> Fail {
        match f.cover_at.take() {
            Some((session, frame, backend)) => self.covered(&session, &frame, backend).await,
            None => f,
        }
    }

    async fn actionable_once(
        &mut self,
        res: &Resolved,
        editable: bool,
        hit: bool,
        enabled: bool,
    ) -> Result<(f64, f64), Fail> {
        if let Some(d) = self.dialog_open() {
            return Err(Fail::new(
                codes::DIALOG_BLOCKING,
                format!(
                    "a {} dialog is open ({}); handle it with the dialog action first",
                    d.kind,
                    truncate(&d.message, 80)
                ),
            ));
        }
        let obj = self.object(res).await?;
        let point_arg = if res.point_backend == res.backend {
            json!({"value": null})
        } else {
            let p = Resolved { point_backend: res.point_backend, backend: res.point_backend, ..res.clone() };
            json!({"objectId": self.object(&p).await?})
        };
        let oop = res.session != self.session;
        let args = json!([point_arg.clone(), {"value": hit && !oop}]);
        let pr = self.call_on(&res.session, &obj, CHECK, args.clone()).await?;
        if pr["connected"] != json!(true) {
            return Err(Fail::new(codes::STALE_TARGET, "the node was removed from the document; observe again"));
        }
        if pr["visible"] != json!(true) {
            return Err(Fail::new(codes::NOT_ACTIONABLE, "the node is hidden (display:none or visibility:hidden)"));
        }
        if enabled && pr["disabled"] == json!(true) {
            return Err(Fail::new(codes::NOT_ACTIONABLE, "the node is disabled"));
        }
        if editable && pr["editable"] != json!(true) {
            let why = if pr["readonly"] == json!(true) { "read-only" } else { "not an editable field" };
            return Err(Fail::new(codes::NOT_ACTIONABLE, format!("the node is {why}")));
        }
        if oop || pr["crossFrame"] == json!(true) {
            // Out-of-process frame: geometry through CDP quads plus the owner chain, hit test per session.
            let _ = self
                .p
                .call(
                    Some(&res.session),
                    "DOM.scrollIntoViewIfNeeded",
                    json!({"backendNodeId": res.point_backend}),
                    self.deadline,
                )
                .await;
            let a = quad_center(self.p, self.tab, res, self.deadline)
                .await
                .map_err(|e| Fail::new(codes::NOT_ACTIONABLE, e))?;
            let b = if pr["animating"] == json!(true) {
                tokio::time::sleep(Duration::from_millis(16)).await;
                quad_center(self.p, self.tab, res, self.deadline)
                    .await
                    .map_err(|e| Fail::new(codes::NOT_ACTIONABLE, e))?
            } else {
                a
            };
            if (a.left - b.left).abs() > 1.0 || (a.top - b.top).abs() > 1.0 || (a.width - b.width).abs() > 1.0 {
                return Err(Fail::new(codes::NOT_ACTIONABLE, "the node is moving (animation or layout shift)"));
            }
            let (x, y) = b.center();
            if hit {
                self.hit_test(res, &obj, x, y).await?;
            }
            return Ok((x, y));
        }
        let boxed = |v: &Value| -> Option<QuadBox> {
            let b = v["box"].as_array()?;
            Some(QuadBox {
                left: b.first()?.as_f64()?,
                top: b.get(1)?.as_f64()?,
                width: b.get(2)?.as_f64()?,
                height: b.get(3)?.as_f64()?,
            })
        };
        let a =
            boxed(&pr).ok_or_else(|| Fail::new(codes::NOT_ACTIONABLE, "the node has no visible box (zero size)"))?;
        let mut last = pr;
        if last["animating"] == json!(true) {
            // Stable box: with animations running, two samples one frame apart must agree.
            tokio::time::sleep(Duration::from_millis(16)).await;
            last = self.call_on(&res.session, &obj, CHECK, args).await?;
            let b = boxed(&last).ok_or_else(|| Fail::new(codes::NOT_ACTIONABLE, "the node lost its box"))?;
            if (a.left - b.left).abs() > 1.0 || (a.top - b.top).abs() > 1.0 || (a.width - b.width).abs() > 1.0 {
                return Err(Fail::new(codes::NOT_ACTIONABLE, "the node is moving (animation or layout shift)"));
            }
        }
        let (x, y) = boxed(&last).unwrap_or(a).center();
        if hit && last["hitInside"] != json!(true) {
            // Something else takes the point: describe it precisely through CDP (this also re-checks the hit).
            self.hit_test(res, &obj, x, y).await?;
        }
        Ok((x, y))
    }

    async fn hit_test(&mut self, res: &Resolved, obj: &str, x: f64, y: f64) -> Result<(), Fail> {
        // Hit-test in the target's own frame session at frame-local coordinates; for OOPIFs also check that the
        // top-level point lands on the frame's owner chain.
        let (ox, oy) = frame_offset(self.p, self.tab, &res.frame_id, self.deadline)
            .await
            .map_err(|e| Fail::new(codes::NOT_ACTIONABLE, e))?;
        if res.session != self.session {
            let (tsx, tsy) = self.scroll_of(&self.session.clone()).await;
            let top = self
                .p
                .call(Some(&self.session), "DOM.getNodeForLocation", json!({"x": (x + tsx).round() as i64, "y": (y + tsy).round() as i64, "includeUserAgentShadowDOM": false, "ignorePointerEventsNone": true}), self.deadline)
                .await
                .map_err(|e| cdp_fail(&e, "hit-testing the point", false))?;
            let tag = self
                .p
                .call(
                    Some(&self.session),
                    "DOM.describeNode",
                    json!({"backendNodeId": top["backendNodeId"]}),
                    self.deadline,
                )
                .await
                .map(|v| v["node"]["nodeName"].as_str().unwrap_or_default().to_ascii_lowercase())
                .unwrap_or_default();
            if tag != "iframe" && tag != "frame" {
                let main = self.p.st().tabs.get(&self.tab).map(|t| t.target_id.clone()).unwrap_or_default();
                let frame = top["frameId"].as_str().unwrap_or(&main).to_owned();
                return Err(Fail::covered_at(&self.session, &frame, top["backendNodeId"].as_i64().unwrap_or(0)));
            }
        }
        let (sx, sy) = self.scroll_of(&res.session).await;
        let (lx, ly) = (x - ox + sx, y - oy + sy);
        let h = self
            .p
            .call(Some(&res.session), "DOM.getNodeForLocation", json!({"x": lx.round() as i64, "y": ly.round() as i64, "includeUserAgentShadowDOM": false, "ignorePointerEventsNone": true}), self.deadline)
            .await
            .map_err(|e| cdp_fail(&e, "hit-testing the point", false))?;
        let hb = h["backendNodeId"].as_i64().unwrap_or(0);
        if hb == res.backend {
            return Ok(());
        }
        let hit_frame = h["frameId"].as_str().unwrap_or(&res.frame_id).to_owned();
        if hit_frame == res.frame_id {
            // The node at the point, in the same world as the target: whether it is inside the target is decided
            // by the browser's `parentNode`/`closest`, not the page's.
            let hobj = world::node(self.p, self.tab, &res.session, &hit_frame, hb, GROUP, self.deadline)
                .await
                .map_err(|e| world_fail(e, "reading the node at the click point"))?;
            if let Some(hobj) = hobj {
                const INSIDE: &str = r"function(h) {
                  for (let n = h; n; n = n.parentNode || n.host) { if (n === this) return true; }
                  const l = h.closest && h.closest('label');
                  return !!(l && l.control === this);
                }";
                let inside = self.call_on(&res.session, obj, INSIDE, json!([{"objectId": hobj}])).await?;
                if inside == json!(true) {
                    return Ok(());
                }
            }
        }
        Err(Fail::covered_at(&res.session, &hit_frame, hb))
    }

    /// Re-validates a screenshot point against the current page (document, viewport size, zoom, scroll) and hit-tests
    /// it. Returns the point in top-level viewport coordinates; the receiving element goes to `res.hit`.
    async fn at_point(&mut self, pt: &ImagePoint, report_hit: bool) -> Result<(f64, f64), Fail> {
        let (geom, epoch, elsewhere) = {
            let st = self.p.st();
            let t = st.tabs.get(&self.tab).ok_or_else(|| Fail::new(codes::STALE_TARGET, "the tab is gone"))?;
            let g = t.images.get(&pt.image_id).cloned();
            let elsewhere = g.is_none() && st.tabs.values().any(|o| o.images.get(&pt.image_id).is_some());
            (g, t.main_epoch(), elsewhere)
        };
        let Some(geom) = geom else {
            let why = if elsewhere {
                "belongs to another tab".to_owned()
            } else {
                format!("is unknown for this tab (only its last {IMAGE_WINDOW} screenshots are kept)")
            };
            return Err(Fail::new(
                codes::TARGET_NOT_FOUND,
                format!("image {} {why}; take a screenshot of this tab and use its imageId", pt.image_id),
            ));
        };
        let session = self.session.clone();
        let now = current_viewport(self.p, self.tab, &session, self.deadline)
            .await
            .map_err(|e| world_fail(e, "reading the viewport"))?;
        let m = map_point(&geom, pt, epoch, &now).map_err(|r| Fail::new(r.code, r.message))?;
        if let Some((dx, dy)) = m.scrolled {
            self.res.message = Some(format!(
                "the page scrolled by ({dx:.0}, {dy:.0}) CSS px since screenshot {}; the point was moved with the page",
                geom.image_id
            ));
        }
        let needs_hit = report_hit || m.scrolled.is_some();
        let hit = if needs_hit { Some(self.node_at(m.x, m.y).await?) } else { None };
        if let (Some((dx, dy)), Some((hs, frame, backend))) = (m.scrolled, &hit) {
            // Moving the point with the page is wrong for content that does not scroll with it.
            let (ox, oy) = (m.x + dx, m.y + dy);
            let mut pinned = None;
            if self.pinned(hs, frame, *backend).await? {
                pinned = Some(("now lands on", hs.clone(), frame.clone(), *backend));
            } else if ox >= 0.0 && oy >= 0.0 && ox < now.width && oy < now.height {
                let (os, of, ob) = self.node_at(ox, oy).await?;
                if self.pinned(&os, &of, ob).await? {
                    pinned = Some(("was on", os, of, ob));
                }
            }
            if let Some((verb, ps, pf, pb)) = pinned {
                let el = self.describe_element(&ps, &pf, pb).await;
                return Err(Fail::new(
                    codes::STALE_TARGET,
                    format!(
                        "the page scrolled by ({dx:.0}, {dy:.0}) CSS px since screenshot {} and the point {verb} \
                         fixed-position {} {:?} [{}], which does not move with the page; take a new screenshot",
                        geom.image_id, el.role, el.name, el.node
                    ),
                ));
            }
        }
        if let Some((hs, frame, backend)) = hit {
            if hs != self.session {
                // The browser routes input to out-of-process frames by the last composited frame's hit-test data:
                // let both renderers present a frame so a recent scroll is reflected before the input is sent.
                let main = self.session.clone();
                let until = self.deadline.min(Instant::now() + Duration::from_millis(500));
                for s in [&main, &hs] {
                    let frames = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))";
                    let _ = world::eval(self.p, self.tab, s, frames, until).await;
                }
            }
            if report_hit {
                let el = self.describe_element(&hs, &frame, backend).await;
                self.res.hit = Some(el);
            }
        }
        Ok((m.x, m.y))
    }

    /// Whether a node is inside fixed- or sticky-positioned content (which does not scroll with the page).
    async fn pinned(&self, session: &SessionId, frame: &str, backend: i64) -> Result<bool, Fail> {
        const PINNED: &str = r"function() {
          for (let e = this.nodeType === 1 ? this : this.parentElement; e; e = e.parentElement || (e.getRootNode() && e.getRootNode().host)) {
            const p = getComputedStyle(e).position;
            if (p === 'fixed' || p === 'sticky') return true;
          }
          return false;
        }";
        let obj = world::node(self.p, self.tab, session, frame, backend, GROUP, self.deadline)
            .await
            .map_err(|e| world_fail(e, "checking whether the point is on fixed content"))?;
        let Some(obj) = obj else { return Ok(false) };
        Ok(self.call_on(session, &obj, PINNED, json!([])).await? == json!(true))
    }

    /// The node that receives input at a top-level viewport point: its session, frame id and backend id. Descends into
    /// out-of-process frames, whose content the top-level hit test cannot see.
    async fn node_at(&mut self, x: f64, y: f64) -> Result<(SessionId, String, i64), Fail> {
        let main = self.p.st().tabs.get(&self.tab).map(|t| t.target_id.clone()).unwrap_or_default();
        let (mut session, mut frame, mut lx, mut ly) = (self.session.clone(), main, x, y);
        for _ in 0..8 {
            let (sx, sy) = self.scroll_of(&session).await;
            let h = self
                .p
                .call(Some(&session), "DOM.getNodeForLocation", json!({"x": (lx + sx).round() as i64, "y": (ly + sy).round() as i64, "includeUserAgentShadowDOM": false, "ignorePointerEventsNone": true}), self.deadline)
                .await
                .map_err(|e| cdp_fail(&e, "hit-testing the point", false))?;
            let backend = h["backendNodeId"].as_i64().unwrap_or(0);
            let hit_frame = h["frameId"].as_str().unwrap_or(&frame).to_owned();
            let d = self
                .p
                .call(Some(&session), "DOM.describeNode", json!({"backendNodeId": backend}), self.deadline)
                .await
                .map_err(|e| cdp_fail(&e, "describing the node at the point", false))?;
            let child = d["node"]["frameId"].as_str().map(str::to_owned);
            let oop_child = child.and_then(|c| {
                let st = self.p.st();
                let f = st.tabs.get(&self.tab)?.frames.get(&c)?;
                f.oop.then(|| (c.clone(), f.session.clone()))
            });
            let Some((child, child_session)) = oop_child else {
                if !self.sessions_used.contains(&session) {
                    self.sessions_used.push(session.clone());
                }
                return Ok((session, hit_frame, backend));
            };
            let (ox, oy) = frame_offset(self.p, self.tab, &child, self.deadline)
                .await
                .map_err(|e| Fail::new(codes::ACTION_FAILED, format!("locating the frame at the point: {e}")))?;
            (session, frame, lx, ly) = (child_session, child, x - ox, y - oy);
        }
        Err(Fail::new(codes::UNSUPPORTED_CAPABILITY, "frames are nested more than 8 deep at this point; unsupported"))
    }

    /// The scroll offset of a session's main document (hit tests take document coordinates).
    async fn scroll_of(&self, session: &SessionId) -> (f64, f64) {
        match self.p.call(Some(session), "Page.getLayoutMetrics", json!({}), self.deadline).await {
            Ok(m) => {
                let v = &m["cssLayoutViewport"];
                (v["pageX"].as_f64().unwrap_or(0.0), v["pageY"].as_f64().unwrap_or(0.0))
            }
            Err(_) => (0.0, 0.0),
        }
    }

    /// Describes the element covering the target, giving it a ref.
    async fn covered(&mut self, session: &SessionId, frame: &str, backend: i64) -> Fail {
        let el = self.describe_element(session, frame, backend).await;
        let mut f = Fail::new(
            codes::NOT_ACTIONABLE,
            format!(
                "the target is covered by {} {:?} [{}] which would receive the click; act on it first (e.g. dismiss it)",
                el.role, el.name, el.node
            ),
        );
        f.covering = Some(el);
        f
    }

    /// Names the element at a point (its nearest meaningful accessible ancestor), giving it a frame-qualified ref.
    async fn describe_element(&mut self, session: &SessionId, frame: &str, backend: i64) -> CoveringElement {
        let mut role = "generic".to_owned();
        let mut name = String::new();
        let mut chosen = backend;
        if let Ok(v) = self
            .p
            .call(
                Some(session),
                "Accessibility.getPartialAXTree",
                json!({"backendNodeId": backend, "fetchRelatives": true}),
                self.deadline,
            )
            .await
        {
            let nodes = v["nodes"].as_array().cloned().unwrap_or_default();
            let by_id: std::collections::HashMap<&str, &Value> =
                nodes.iter().filter_map(|n| n["nodeId"].as_str().map(|i| (i, n))).collect();
            let mut cur = nodes.iter().find(|n| n["backendDOMNodeId"].as_i64() == Some(backend));
            for _ in 0..32 {
                let Some(n) = cur else { break };
                let r = n["role"]["value"].as_str().unwrap_or_default();
                let nm = n["name"]["value"].as_str().unwrap_or_default();
                let boring = matches!(
                    r,
                    "generic"
                        | "none"
                        | "StaticText"
                        | "paragraph"
                        | "InlineTextBox"
                        | "LineBreak"
                        | ""
                        | "presentation"
                );
                if !n["ignored"].as_bool().unwrap_or(false) && (!boring || !nm.is_empty()) && r != "RootWebArea" {
                    role = r.to_owned();
                    nm.clone_into(&mut name);
                    chosen = n["backendDOMNodeId"].as_i64().unwrap_or(backend);
                    break;
                }
                cur = n["parentId"].as_str().and_then(|pid| by_id.get(pid).copied());
            }
        }
        if name.is_empty()
            // Read in browserd's world, so the page cannot rename what covers the target.
            && let Ok(oid) = self.node(session, frame, chosen).await
            && let Ok(v) = self
                .call_on(session, &oid, "function(){ const e = this.nodeType === 1 ? this : this.parentElement; return (e && (e.getAttribute('aria-label') || e.id && ('#' + e.id) || '')) + '|' + ((e && e.textContent) || '').trim().replace(/\\s+/g, ' ').slice(0, 60); }", json!([]))
                .await
        {
            let s = v.as_str().unwrap_or_default();
            let (label, text) = s.split_once('|').unwrap_or((s, ""));
            name = if label.is_empty() || label.starts_with('#') && !text.is_empty() { text.to_owned() } else { label.to_owned() };
        }
        let node_ref = {
            let mut st = self.p.st();
            let t = st.tabs.get_mut(&self.tab);
            match t {
                Some(t) => {
                    let (key, epoch) = t.frames.get(frame).map_or((0, 0), |f| (f.key, f.doc_epoch));
                    let r = t.refs.assign(frame, key, epoch, chosen);
                    t.refs.describe(&r, &role, &name, &[]);
                    r
                }
                None => String::new(),
            }
        };
        CoveringElement { node: NodeRef(node_ref), role, name: truncate(&name, 60) }
    }

    /// Whether the link to the page is gone: the connection closed, the tab closed, or its session detached.
    fn link_lost(&self) -> Option<Fail> {
        if let Some(reason) = self.p.cdp.close_reason() {
            return Some(Fail {
                link: true,
                ..Fail::new(codes::CONNECTION_LOST, format!("the connection to the browser closed ({reason})"))
            });
        }
        let st = self.p.st();
        let why = match st.tabs.get(&self.tab) {
            None => "the tab closed",
            Some(t) if t.session.as_ref() != Some(&self.session) => "the debugger was detached from the tab",
            Some(_) => return None,
        };
        Some(Fail { link: true, ..Fail::new(TARGET_CLOSED, why) })
    }

    /// Marks that a command changing the page is about to be handed to the browser. Fails (nothing sent) when the
    /// link is already known to be gone.
    fn sending(&mut self) -> Result<(), Fail> {
        if let Some(f) = self.link_lost() {
            return Err(f);
        }
        self.sent.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Sends one input command to the page session (see [`Run::inputs`]).
    async fn input(&mut self, method: &str, params: Value) -> Result<(), Fail> {
        self.inputs(vec![(method, params)]).await
    }

    /// Sends input commands to the page session. All of them are handed to the browser, in order, before any answer is
    /// awaited: the browser (and, over the extension relay, the last-hop gate, which checks and dispatches each input in
    /// turn) handles them in that order, and each waits only as long as the page takes to handle the ones before it.
    /// Nothing is sent while a dialog is open once some input of this action went out; a dialog opening while they are
    /// pending counts as delivered. Once a command is handed to the browser a lost connection or target makes the
    /// outcome unknown (the input may have been delivered), never "failed"; so is a command the browser refuses when
    /// one sent after it may have reached the page (the page got the input incomplete).
    async fn inputs(&mut self, cmds: Vec<(&str, Value)>) -> Result<(), Fail> {
        if self.dialog_open().is_some() && self.res.dispatch != Dispatch::NotDispatched {
            return Ok(());
        }
        self.sending()?;
        let mut queued = Vec::with_capacity(cmds.len());
        let mut unqueued = None;
        for (method, params) in cmds {
            // Named by the event type in messages (`mousePressed`), else by the method.
            let label = params["type"].as_str().map_or_else(|| method.to_owned(), str::to_owned);
            match self.p.cdp.enqueue(Some(&self.session), method, params, remaining(self.deadline)).await {
                Ok(q) => queued.push((method, label, q)),
                Err(e) => {
                    // Nothing after it is sent: the input stops here.
                    unqueued = Some((method, label, e));
                    break;
                }
            }
        }
        // The answers, in order. A dialog opening while one is awaited counts as that input delivered; the inputs sent
        // after it may reach the page once the dialog is closed (or be dropped by the browser), which is unknown.
        let mut answers = Vec::with_capacity(queued.len());
        let mut queued = queued.into_iter();
        while let Some((method, label, q)) = queued.next() {
            let answer = q.answer();
            tokio::pin!(answer);
            let mut r = loop {
                let notified = self.p.dialog_notify.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.dialog_open().is_some() && self.res.dispatch != Dispatch::NotDispatched {
                    break None;
                }
                tokio::select! {
                    r = &mut answer => break Some(r),
                    () = &mut notified => {
                        if self.dialog_open().is_some() {
                            self.res.dispatch = Dispatch::Dispatched;
                            break None;
                        }
                    }
                }
            };
            if r.is_none() && !queued.as_slice().is_empty() {
                // Which input opened the dialog: one the page has handled is answered even while the dialog is open
                // (though the answer may come just after the dialog's news), one whose handler opened it is not.
                r = tokio::time::timeout(DIALOG_GRACE, &mut answer).await.ok();
            }
            match r {
                Some(r) => {
                    if r.is_ok() {
                        // Seen by the dialog check above while the next answer is awaited.
                        self.res.dispatch = Dispatch::Dispatched;
                    }
                    answers.push((method, label, r));
                }
                None => {
                    let behind: Vec<String> = queued.map(|(_, l, _)| l).collect();
                    if behind.is_empty() {
                        return Ok(());
                    }
                    let kind = self.dialog_open().map_or_else(|| "JavaScript".to_owned(), |d| d.kind);
                    return Err(Fail::new(
                        OUTCOME_UNKNOWN,
                        format!(
                            "a dialog ({kind}) opened before the page had handled {label}; the input sent after it \
                             ({}) may reach the page once the dialog is closed, or be dropped by the browser, so the \
                             outcome is unknown: it is not retried automatically — handle the dialog, then observe the \
                             page before deciding to act again",
                            behind.join(", ")
                        ),
                    )
                    .unknown());
                }
            }
        }
        // The first failure decides, unless an input after it may have reached the page: then the page got the input
        // incomplete.
        let mut failed: Option<(Fail, String)> = None;
        let mut reached_after = false;
        let results =
            answers.into_iter().map(|(m, l, r)| (m, l, r.map(drop))).chain(unqueued.map(|(m, l, e)| (m, l, Err(e))));
        for (method, label, r) in results {
            let e = match r {
                Ok(()) => {
                    self.res.dispatch = Dispatch::Dispatched;
                    reached_after |= failed.is_some();
                    continue;
                }
                Err(e) => e,
            };
            let mut f = cdp_fail(&e, method, true);
            if !f.link
                && let Some(gone) = self.link_lost()
            {
                // Rejected because the link went away meanwhile (the state already knows).
                f = Fail { outcome: Outcome::Unknown, ..gone };
            }
            if f.link {
                self.res.dispatch = Dispatch::Dispatched;
                reached_after |= failed.is_some();
            }
            if failed.is_none() {
                failed = Some((f, format!("{label}: {e}")));
            }
        }
        match failed {
            None => Ok(()),
            Some((f, why)) if reached_after && !f.link => Err(Fail::new(
                OUTCOME_UNKNOWN,
                format!(
                    "the browser refused one input ({why}) but an input sent after it may have reached the page, so \
                     the page may have got it incomplete and the outcome is unknown: it is not retried automatically \
                     — observe the page before deciding to act again"
                ),
            )
            .unknown()),
            Some((f, _)) => Err(f),
        }
    }

    fn mouse_params(kind: &str, x: f64, y: f64, clicks: u32) -> Value {
        let mut p = json!({"type": kind, "x": x, "y": y, "modifiers": 0});
        if kind != "mouseMoved" {
            p["button"] = json!("left");
            p["clickCount"] = json!(clicks);
        } else {
            p["button"] = json!("none");
        }
        p
    }

    async fn mouse(&mut self, kind: &str, x: f64, y: f64, clicks: u32) -> Result<(), Fail> {
        self.input("Input.dispatchMouseEvent", Self::mouse_params(kind, x, y, clicks)).await
    }

    async fn click_at(&mut self, x: f64, y: f64, count: u32) -> Result<(), Fail> {
        // The move and the first press go out together: the page handles the press right after the move, instead of
        // first acknowledging the move at its next animation frame. Every release waits for its press to be handled,
        // so a press that opens a dialog is followed by no release, as with a real mouse.
        const MOUSE: &str = "Input.dispatchMouseEvent";
        self.inputs(vec![
            (MOUSE, Self::mouse_params("mouseMoved", x, y, 0)),
            (MOUSE, Self::mouse_params("mousePressed", x, y, 1)),
        ])
        .await?;
        for c in 1..=count {
            if c > 1 {
                self.mouse("mousePressed", x, y, c).await?;
            }
            if self.dialog_open().is_some() {
                return Ok(());
            }
            self.mouse("mouseReleased", x, y, c).await?;
            if self.dialog_open().is_some() {
                return Ok(());
            }
        }
        Ok(())
    }

    async fn key(&mut self, def: &KeyDef, modifiers: u32, down: bool) -> Result<(), Fail> {
        let kind = if !down {
            "keyUp"
        } else if def.text.is_some() {
            "keyDown"
        } else {
            "rawKeyDown"
        };
        let mut p = json!({"type": kind, "key": def.key, "code": def.code, "windowsVirtualKeyCode": def.vk, "modifiers": modifiers});
        if down && let Some(t) = &def.text {
            p["text"] = json!(t);
            p["unmodifiedText"] = json!(t);
        }
        self.input("Input.dispatchKeyEvent", p).await
    }

    async fn press_chord(&mut self, chord: &str) -> Result<(), Fail> {
        let (mods, bits, key) = parse_chord(chord).map_err(|e| Fail::new(codes::INVALID_PARAMS, e))?;
        let mut held = 0;
        for m in &mods {
            held |= crate::input::modifier_bit(&m.key).unwrap_or(0);
            self.key(m, held, true).await?;
        }
        self.key(&key, bits, true).await?;
        self.key(&key, bits, false).await?;
        for m in mods.iter().rev() {
            held &= !crate::input::modifier_bit(&m.key).unwrap_or(0);
            self.key(m, held, false).await?;
        }
        Ok(())
    }

    /// Types text: printable ASCII as key events, other text (e.g. Chinese) through IME composition.
    async fn type_text(&mut self, text: &str) -> Result<(), Fail> {
        let mut run = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\n' || (c.is_ascii() && !c.is_ascii_control()) {
                if c == '\n' {
                    let enter = crate::input::key_def("Enter").expect("Enter is defined");
                    self.key(&enter, 0, true).await?;
                    self.key(&enter, 0, false).await?;
                } else {
                    let d = char_def(c);
                    self.key(&d, 0, true).await?;
                    self.key(&d, 0, false).await?;
                }
                continue;
            }
            run.push(c);
            if chars.peek().is_none_or(|n| n.is_ascii()) {
                let chunk = std::mem::take(&mut run);
                let len = chunk.encode_utf16().count();
                self.input(
                    "Input.imeSetComposition",
                    json!({"text": chunk, "selectionStart": len, "selectionEnd": len}),
                )
                .await?;
                self.input("Input.insertText", json!({"text": chunk})).await?;
            }
        }
        Ok(())
    }

    /// What a field holds, read out of the page's reach.
    async fn read_value(&self, res: &Resolved) -> Result<String, Fail> {
        let obj = self.object(res).await?;
        let v = self
            .call_on(
                &res.session,
                &obj,
                "function(){ const t = this.tagName; if (t === 'INPUT' || t === 'TEXTAREA' || t === 'SELECT') return this.value; return this.isContentEditable ? this.innerText : (this.textContent || ''); }",
                json!([]),
            )
            .await?;
        Ok(v.as_str().unwrap_or_default().to_owned())
    }

    /// Whether a checkbox, radio or switch is checked (`None`: it is none of them), read out of the page's reach.
    async fn checked(&self, res: &Resolved) -> Result<Option<bool>, Fail> {
        let obj = self.object(res).await?;
        let v = self
            .call_on(&res.session, &obj, "function(){ if (this.type === 'checkbox' || this.type === 'radio') return this.checked; const a = this.getAttribute && this.getAttribute('aria-checked'); return a === null ? null : a === 'true'; }", json!([]))
            .await?;
        Ok(v.as_bool())
    }

    /// A hidden (background) tab gets no frames, so the browser holds input to it for seconds: bring it to the
    /// front first. Only done when the page reports itself hidden.
    async fn ensure_visible(&self) {
        if self.dialog_open().is_some() {
            return;
        }
        let s = self.session.clone();
        // A page that cannot be read is not brought to the front on a guess (that would take the user's focus).
        if self.eval("document.visibilityState", "reading the page's visibility").await.ok() != Some(json!("hidden")) {
            return;
        }
        let _ = self.p.call(Some(&s), "Page.bringToFront", json!({}), self.deadline).await;
        for _ in 0..20 {
            let seen = self.eval("document.visibilityState", "reading the page's visibility").await.ok();
            if seen != Some(json!("hidden")) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn perform(&mut self, params: &ActParams) -> Result<(), Fail> {
        let r0 = Instant::now();
        if params.action != ActionKind::Dialog
            && let Some(d) = self.dialog_open()
        {
            return Err(blocked_by(&d));
        }
        let pointable =
            matches!(params.action, ActionKind::Click | ActionKind::Dblclick | ActionKind::Hover | ActionKind::Drag);
        if (params.at.is_some() && !pointable) || (params.drop_at.is_some() && params.action != ActionKind::Drag) {
            return Err(Fail::new(
                codes::INVALID_PARAMS,
                "`at` is for click, dblclick, hover and drag, and `dropAt` for drag only; use a `target` ref here",
            ));
        }
        match params.action {
            ActionKind::Click | ActionKind::Dblclick | ActionKind::Hover => {
                let (x, y) = if let Some(pt) = &params.at {
                    if params.target.is_some() {
                        return Err(Fail::new(codes::INVALID_PARAMS, "give either `target` or `at`, not both"));
                    }
                    let (x, y) = self.at_point(pt, true).await?;
                    self.res.timings.resolve = ms(r0.elapsed());
                    (x, y)
                } else {
                    let res = self.resolve(params.target.as_ref())?;
                    self.res.timings.resolve = ms(r0.elapsed());
                    let a0 = Instant::now();
                    let xy = self.actionable(&res, false, true, params.action != ActionKind::Hover).await?;
                    self.res.timings.actionability = ms(a0.elapsed());
                    xy
                };
                let d0 = Instant::now();
                match params.action {
                    ActionKind::Hover => self.mouse("mouseMoved", x, y, 0).await?,
                    ActionKind::Dblclick => self.click_at(x, y, 2).await?,
                    _ => self.click_at(x, y, 1).await?,
                }
                self.res.timings.dispatch = ms(d0.elapsed());
            }
            ActionKind::Fill | ActionKind::Type => {
                let text = params
                    .value
                    .clone()
                    .ok_or_else(|| Fail::new(codes::INVALID_PARAMS, "fill/type need `value` (the text)"))?;
                if params.target.is_none() && params.action == ActionKind::Type {
                    let d0 = Instant::now();
                    self.type_text(&text).await?;
                    self.res.timings.dispatch = ms(d0.elapsed());
                    return Ok(());
                }
                let res = self.resolve(params.target.as_ref())?;
                self.res.timings.resolve = ms(r0.elapsed());
                let a0 = Instant::now();
                self.actionable(&res, true, false, true).await?;
                self.res.timings.actionability = ms(a0.elapsed());
                let d0 = Instant::now();
                let before = self.read_value(&res).await?;
                self.p
                    .call(Some(&res.session), "DOM.focus", json!({"backendNodeId": res.backend}), self.deadline)
                    .await
                    .map_err(|e| cdp_fail(&e, "focusing the field", false))?;
                let obj = self.object(&res).await?;
                let select = if params.action == ActionKind::Fill {
                    "function(){ if ('select' in this && (this.tagName === 'INPUT' || this.tagName === 'TEXTAREA')) { this.select(); } else { const r = document.createRange(); r.selectNodeContents(this); const s = getSelection(); s.removeAllRanges(); s.addRange(r); } }"
                } else {
                    "function(){ if (this.tagName === 'INPUT' || this.tagName === 'TEXTAREA') { try { const n = this.value.length; this.setSelectionRange(n, n); } catch (e) {} } else { const r = document.createRange(); r.selectNodeContents(this); r.collapse(false); const s = getSelection(); s.removeAllRanges(); s.addRange(r); } }"
                };
                self.call_on(&res.session, &obj, select, json!([])).await?;
                if params.action == ActionKind::Fill && !before.is_empty() {
                    let del = crate::input::key_def("Delete").expect("Delete is defined");
                    self.key(&del, 0, true).await?;
                    self.key(&del, 0, false).await?;
                }
                self.type_text(&text).await?;
                self.res.timings.dispatch = ms(d0.elapsed());
                let after = self.read_value(&res).await?;
                let norm = |s: &str| s.replace("\r\n", "\n").trim_end_matches('\n').to_owned();
                let ok = if params.action == ActionKind::Fill {
                    norm(&after) == norm(&text)
                } else {
                    norm(&after).ends_with(&norm(&text)) || after.len() > before.len()
                };
                self.res.effects.value = Some(truncate(&after, 200));
                if !ok {
                    self.res.dispatch = Dispatch::Observed;
                    return Err(Fail::new(
                        codes::INPUT_NOT_APPLIED,
                        format!(
                            "after typing, the field holds {:?} instead of {:?} (maxlength, input filtering or a script rewrote it)",
                            truncate(&after, 80),
                            truncate(&text, 80)
                        ),
                    ));
                }
                self.res.dispatch = Dispatch::Observed;
            }
            ActionKind::Press => {
                let chord = params.value.clone().ok_or_else(|| {
                    Fail::new(codes::INVALID_PARAMS, "press needs `value`, e.g. `Enter` or `Control+A`")
                })?;
                if params.target.is_some() {
                    let res = self.resolve(params.target.as_ref())?;
                    self.res.timings.resolve = ms(r0.elapsed());
                    let a0 = Instant::now();
                    self.actionable(&res, false, false, true).await?;
                    self.p
                        .call(Some(&res.session), "DOM.focus", json!({"backendNodeId": res.backend}), self.deadline)
                        .await
                        .map_err(|e| cdp_fail(&e, "focusing the node", false))?;
                    self.res.timings.actionability = ms(a0.elapsed());
                }
                let d0 = Instant::now();
                for c in chord.split_whitespace() {
                    self.press_chord(c).await?;
                }
                self.res.timings.dispatch = ms(d0.elapsed());
            }
            ActionKind::Select => {
                let want = params.value.clone().ok_or_else(|| {
                    Fail::new(codes::INVALID_PARAMS, "select needs `value` (an option label or value)")
                })?;
                let res = self.resolve(params.target.as_ref())?;
                self.res.timings.resolve = ms(r0.elapsed());
                let a0 = Instant::now();
                self.actionable(&res, false, false, true).await?;
                self.res.timings.actionability = ms(a0.elapsed());
                let d0 = Instant::now();
                let obj = self.object(&res).await?;
                const SELECT: &str = r"function(want) {
                  if (this.tagName !== 'SELECT') return { error: 'not a <select>' };
                  const w = want.trim().toLowerCase();
                  const opts = Array.from(this.options);
                  const o = opts.find(o => o.label.trim().toLowerCase() === w) || opts.find(o => o.value.toLowerCase() === w);
                  if (!o) return { error: 'no option ' + JSON.stringify(want) + '; options: ' + opts.map(o => o.label.trim()).join(' | ') };
                  if (o.disabled) return { error: 'option ' + JSON.stringify(want) + ' is disabled' };
                  this.focus();
                  o.selected = true;
                  this.dispatchEvent(new Event('input', { bubbles: true }));
                  this.dispatchEvent(new Event('change', { bubbles: true }));
                  return { value: this.value, label: o.label };
                }";
                self.sending()?;
                let v = self.call_on(&res.session, &obj, SELECT, json!([{"value": want}])).await?;
                if let Some(e) = v["error"].as_str() {
                    let code = if e.starts_with("no option") { codes::TARGET_NOT_FOUND } else { codes::NOT_ACTIONABLE };
                    return Err(Fail::new(code, e.to_owned()));
                }
                self.res.dispatch = Dispatch::Dispatched;
                self.res.timings.dispatch = ms(d0.elapsed());
                let after = self.read_value(&res).await?;
                self.res.effects.value = Some(after.clone());
                if after != v["value"].as_str().unwrap_or_default() {
                    return Err(Fail::new(
                        codes::INPUT_NOT_APPLIED,
                        format!("the select holds {after:?} after choosing {want:?}; a script reverted it"),
                    ));
                }
                self.res.dispatch = Dispatch::Observed;
            }
            ActionKind::Check | ActionKind::Uncheck => {
                let want = params.action == ActionKind::Check;
                let res = self.resolve(params.target.as_ref())?;
                self.res.timings.resolve = ms(r0.elapsed());
                let a0 = Instant::now();
                let Some(now) = self.checked(&res).await? else {
                    return Err(Fail::new(codes::NOT_ACTIONABLE, "the node is not a checkbox, radio or switch"));
                };
                if now == want {
                    self.res.message =
                        Some(format!("already {}; nothing sent", if want { "checked" } else { "unchecked" }));
                    self.res.outcome = Outcome::Succeeded;
                    return Ok(());
                }
                let (x, y) = self.actionable(&res, false, true, true).await?;
                self.res.timings.actionability = ms(a0.elapsed());
                let d0 = Instant::now();
                self.click_at(x, y, 1).await?;
                self.res.timings.dispatch = ms(d0.elapsed());
                let after = self.checked(&res).await?;
                if after != Some(want) {
                    self.res.dispatch = Dispatch::Observed;
                    return Err(Fail::new(
                        codes::INPUT_NOT_APPLIED,
                        format!(
                            "the click did not {} it (a radio cannot be unchecked by clicking; a script may revert it)",
                            if want { "check" } else { "uncheck" }
                        ),
                    ));
                }
                self.res.dispatch = Dispatch::Observed;
            }
            ActionKind::Scroll => self.scroll(params).await?,
            ActionKind::Navigate | ActionKind::Back | ActionKind::Forward | ActionKind::Reload => {
                self.navigate(params).await?
            }
            ActionKind::Upload => {
                let path = params.value.clone().ok_or_else(|| {
                    Fail::new(codes::INVALID_PARAMS, "upload needs `value` (an authorised file path)")
                })?;
                let canon = std::fs::canonicalize(&path)
                    .map_err(|e| Fail::new(codes::INVALID_PARAMS, format!("cannot read {path}: {e}")))?;
                let allowed = self
                    .p
                    .config
                    .upload_roots
                    .iter()
                    .any(|root| std::fs::canonicalize(root).is_ok_and(|r| canon.starts_with(r)));
                if !allowed || !canon.is_file() {
                    return Err(Fail::new(
                        codes::POLICY_DENIED,
                        format!("{path} is not inside an authorised upload directory; ask the user to authorise it"),
                    ));
                }
                let res = self.resolve(params.target.as_ref())?;
                self.res.timings.resolve = ms(r0.elapsed());
                let obj = self.object(&res).await?;
                let pr = self.probe(&res, &obj).await?;
                if pr["tag"] != json!("INPUT") || pr["type"] != json!("file") {
                    return Err(Fail::new(codes::NOT_ACTIONABLE, "the target is not a file input (<input type=file>)"));
                }
                let d0 = Instant::now();
                self.sending()?;
                self.p
                    .call(
                        Some(&res.session),
                        "DOM.setFileInputFiles",
                        json!({"files": [canon], "backendNodeId": res.backend}),
                        self.deadline,
                    )
                    .await
                    .map_err(|e| cdp_fail(&e, "setting the file", false))?;
                self.res.dispatch = Dispatch::Dispatched;
                self.res.timings.dispatch = ms(d0.elapsed());
                let n = self
                    .call_on(
                        &res.session,
                        &obj,
                        "function(){ return Array.from(this.files || []).map(f => f.name).join(','); }",
                        json!([]),
                    )
                    .await?;
                let name = Path::new(&canon).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                if n.as_str() != Some(name.as_str()) {
                    return Err(Fail::new(codes::INPUT_NOT_APPLIED, format!("the input holds {n} instead of {name}")));
                }
                self.res.effects.value = Some(name);
                self.res.dispatch = Dispatch::Observed;
            }
            ActionKind::Wait => {
                if params.expected.is_empty() {
                    return Err(Fail::new(codes::INVALID_PARAMS, "wait needs `expected` (what to wait for)"));
                }
            }
            ActionKind::Drag => {
                if (params.at.is_some() && params.target.is_some()) || (params.drop_at.is_some() && params.to.is_some())
                {
                    return Err(Fail::new(
                        codes::INVALID_PARAMS,
                        "give either `target` or `at` for the start, and either `to` or `dropAt` for the drop",
                    ));
                }
                let from = if params.at.is_some() { None } else { Some(self.resolve(params.target.as_ref())?) };
                let to = if params.drop_at.is_some() { None } else { Some(self.resolve(params.to.as_ref())?) };
                self.res.timings.resolve = ms(r0.elapsed());
                let a0 = Instant::now();
                let (x1, y1) = match (&from, &params.at) {
                    (Some(from), _) => self.actionable(from, false, true, true).await?,
                    (None, Some(pt)) => self.at_point(pt, true).await?,
                    (None, None) => unreachable!("`at` is set when there is no `target`"),
                };
                let (x2, y2) = match (&to, &params.drop_at) {
                    (Some(to), _) => self.actionable(to, false, false, false).await?,
                    (None, Some(pt)) => self.at_point(pt, false).await?,
                    (None, None) => unreachable!("`dropAt` is set when there is no `to`"),
                };
                self.res.timings.actionability = ms(a0.elapsed());
                let d0 = Instant::now();
                self.drag(x1, y1, x2, y2).await?;
                self.res.timings.dispatch = ms(d0.elapsed());
            }
            ActionKind::Dialog => {
                let Some(d) = self.dialog_open() else {
                    return Err(Fail::new(codes::INVALID_PARAMS, "no dialog is open"));
                };
                let accept = params.accept.unwrap_or(true);
                let mut p = json!({"accept": accept});
                if let Some(t) = &params.value {
                    p["promptText"] = json!(t);
                }
                let d0 = Instant::now();
                self.sending()?;
                self.p
                    .call(Some(&self.session), "Page.handleJavaScriptDialog", p, self.deadline)
                    .await
                    .map_err(|e| cdp_fail(&e, "handling the dialog", false))?;
                self.res.dispatch = Dispatch::Dispatched;
                if let Some(t) = self.p.st().tabs.get_mut(&self.tab) {
                    t.dialog = None;
                }
                self.res.timings.dispatch = ms(d0.elapsed());
                self.res.message =
                    Some(format!("{} the {} dialog", if accept { "accepted" } else { "dismissed" }, d.kind));
            }
        }
        Ok(())
    }

    async fn drag(&mut self, x1: f64, y1: f64, x2: f64, y2: f64) -> Result<(), Fail> {
        let _ =
            self.p.call(Some(&self.session), "Input.setInterceptDrags", json!({"enabled": true}), self.deadline).await;
        let mut events = self.p.cdp.session_events(&self.session);
        self.mouse("mouseMoved", x1, y1, 0).await?;
        self.mouse("mousePressed", x1, y1, 1).await?;
        let mut intercepted: Option<Value> = None;
        for i in 1..=5 {
            let f = f64::from(i) / 5.0;
            let (x, y) = (x1 + (x2 - x1) * f, y1 + (y2 - y1) * f);
            self.input(
                "Input.dispatchMouseEvent",
                json!({"type": "mouseMoved", "x": x, "y": y, "button": "left", "buttons": 1}),
            )
            .await?;
            if intercepted.is_none() {
                // HTML5 drag-and-drop: the browser hands the drag to us once the pointer moved far enough.
                let wait = if i == 1 { 150 } else { 20 };
                let until = Instant::now() + Duration::from_millis(wait);
                while let Ok(Ok(ev)) =
                    tokio::time::timeout(until.saturating_duration_since(Instant::now()), events.recv()).await
                {
                    if ev.method == "Input.dragIntercepted" {
                        intercepted = Some(ev.params["data"].clone());
                        break;
                    }
                }
            }
        }
        if let Some(data) = intercepted {
            for kind in ["dragEnter", "dragOver", "drop"] {
                self.input("Input.dispatchDragEvent", json!({"type": kind, "x": x2, "y": y2, "data": data})).await?;
            }
        }
        self.mouse("mouseReleased", x2, y2, 1).await?;
        let _ =
            self.p.call(Some(&self.session), "Input.setInterceptDrags", json!({"enabled": false}), self.deadline).await;
        Ok(())
    }

    /// The execution context of browserd's world in the tab's current main-frame document (the effect tracker is
    /// installed when it is made). Looked up when none is remembered for this document, or when `fresh`.
    async fn tracker_context(&self, fresh: bool) -> Result<i64, WorldError> {
        let frame = world::root_frame(self.p, self.tab, &self.session)
            .ok_or_else(|| WorldError::Link(CdpError::TargetClosed { reason: "the tab closed".into() }))?;
        world::context(self.p, self.tab, &self.session, &frame, fresh, self.deadline).await
    }

    /// Reads (and drains) the tracker of the current main-frame document; `None` when it cannot be read. `null` is a
    /// world without the tracker: the world is made again (installing it) and read once more.
    async fn read_tracker(&self) -> Option<Value> {
        for attempt in 0..2 {
            if attempt > 0 {
                self.tracker_context(true).await.ok()?;
            }
            let v = world::eval(self.p, self.tab, &self.session, TRACKER_READ, self.deadline).await.ok()?;
            if !v.is_null() {
                return Some(v);
            }
        }
        None
    }

    /// Evaluates `expr` in browserd's world of the tab's main frame (never in the page's own world); `what` names the
    /// step in a failure.
    async fn eval(&self, expr: &str, what: &str) -> Result<Value, Fail> {
        world::eval(self.p, self.tab, &self.session, expr, self.deadline).await.map_err(|e| world_fail(e, what))
    }

    async fn scroll(&mut self, params: &ActParams) -> Result<(), Fail> {
        let r0 = Instant::now();
        let dir = params.direction.unwrap_or_default();
        let target = match &params.target {
            Some(_) => Some(self.resolve(params.target.as_ref())?),
            None => None,
        };
        self.res.timings.resolve = ms(r0.elapsed());
        let a0 = Instant::now();
        let (x, y, obj, session) = match &target {
            Some(res) => {
                let (x, y) = self.actionable(res, false, false, false).await?;
                (x, y, Some(self.object(res).await?), res.session.clone())
            }
            None => {
                let v = self.eval("[innerWidth / 2, innerHeight / 2]", "reading the viewport").await?;
                (v[0].as_f64().unwrap_or(400.0), v[1].as_f64().unwrap_or(300.0), None, self.session.clone())
            }
        };
        self.res.timings.actionability = ms(a0.elapsed());
        let d0 = Instant::now();
        const POS: &str = "function(){ const e = this && this.nodeType === 1 ? this : document.scrollingElement; return [e.scrollLeft, e.scrollTop, e.clientWidth, e.clientHeight, e.scrollWidth, e.scrollHeight]; }";
        const FIND: &str = r"function(t) {
          const root = this && this.nodeType === 1 ? this : document.body;
          const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
          for (let n = w.nextNode(); n; n = w.nextNode()) {
            if (n.data.includes(t) && n.parentElement && n.parentElement.getClientRects().length) {
              n.parentElement.scrollIntoView({ block: 'center', inline: 'nearest' });
              return true;
            }
          }
          return false;
        }";
        let mut rounds = 0;
        loop {
            if let Some(t) = &params.until_text
                && self.scroll_find(&session, obj.as_deref(), FIND, t).await? == json!(true)
            {
                self.res.dispatch = Dispatch::Observed;
                self.res.message = Some(format!("{t:?} is on screen"));
                break;
            }
            if params.until_text.is_some() && rounds > 0 && Instant::now() >= self.deadline {
                return Err(Fail::new(codes::DEADLINE_EXCEEDED, "the text did not appear before the deadline"));
            }
            let before = self.scroll_pos(&session, obj.as_deref(), POS).await?;
            let h = before[3].as_f64().unwrap_or(600.0) * 0.8;
            let w = before[2].as_f64().unwrap_or(800.0) * 0.8;
            let (dx, dy) = match dir {
                ScrollDirection::Down => (0.0, h),
                ScrollDirection::Up => (0.0, -h),
                ScrollDirection::Left => (-w, 0.0),
                ScrollDirection::Right => (w, 0.0),
            };
            self.input(
                "Input.dispatchMouseEvent",
                json!({"type": "mouseWheel", "x": x, "y": y, "deltaX": dx, "deltaY": dy}),
            )
            .await?;
            // Wait for the scroll to land (wheel scrolling is asynchronous).
            let mut moved = false;
            for _ in 0..20 {
                tokio::time::sleep(Duration::from_millis(15)).await;
                let after = self.scroll_pos(&session, obj.as_deref(), POS).await?;
                if after[0] != before[0] || after[1] != before[1] {
                    moved = true;
                    break;
                }
            }
            rounds += 1;
            if params.until_text.is_none() {
                if !moved {
                    self.res.message = Some("already at the end; nothing moved".into());
                }
                break;
            }
            if !moved {
                if let Some(t) = &params.until_text
                    && self.scroll_find(&session, obj.as_deref(), FIND, t).await? == json!(true)
                {
                    self.res.dispatch = Dispatch::Observed;
                    break;
                }
                // Not moved: at the end, or the wheel event was slow to land (a busy page); only the geometry says.
                let f = |i: usize| before[i].as_f64().unwrap_or(0.0);
                let at_end = match dir {
                    ScrollDirection::Down => f(1) + f(3) >= f(5) - 1.0,
                    ScrollDirection::Up => f(1) <= 0.0,
                    ScrollDirection::Right => f(0) + f(2) >= f(4) - 1.0,
                    ScrollDirection::Left => f(0) <= 0.0,
                };
                if !at_end && Instant::now() < self.deadline {
                    continue;
                }
                return Err(Fail::new(
                    codes::TARGET_NOT_FOUND,
                    format!("scrolled to the end without finding {:?}", params.until_text.clone().unwrap_or_default()),
                ));
            }
        }
        self.res.timings.dispatch = ms(d0.elapsed());
        Ok(())
    }

    async fn scroll_pos(&self, session: &SessionId, obj: Option<&str>, f: &str) -> Result<Value, Fail> {
        match obj {
            Some(o) => self.call_on(session, o, f, json!([])).await,
            None => {
                self.eval(
                    "(() => { const e = document.scrollingElement; return [scrollX, scrollY, innerWidth, innerHeight, e.scrollWidth, e.scrollHeight]; })()",
                    "reading the scroll position",
                )
                .await
            }
        }
    }

    async fn scroll_find(&self, session: &SessionId, obj: Option<&str>, f: &str, t: &str) -> Result<Value, Fail> {
        match obj {
            Some(o) => self.call_on(session, o, f, json!([{"value": t}])).await,
            None => {
                let expr = format!("({f}).call(null, {})", serde_json::to_string(t).unwrap_or_default());
                self.eval(&expr, "searching the text").await
            }
        }
    }

    async fn navigate(&mut self, params: &ActParams) -> Result<(), Fail> {
        let d0 = Instant::now();
        let s = self.session.clone();
        let r = match params.action {
            ActionKind::Navigate => {
                let url = params
                    .value
                    .clone()
                    .ok_or_else(|| Fail::new(codes::INVALID_PARAMS, "navigate needs `value` (the URL)"))?;
                self.sending()?;
                self.res.dispatch = Dispatch::Dispatched;
                let r = self
                    .p
                    .call(Some(&s), "Page.navigate", json!({"url": url}), self.deadline)
                    .await
                    .map_err(|e| cdp_fail(&e, "navigating", true))?;
                if let Some(err) = r["errorText"].as_str().filter(|e| !e.is_empty()) {
                    return Err(Fail::new(codes::NAVIGATION_FAILED, format!("navigation to {url} failed: {err}")));
                }
                r
            }
            ActionKind::Reload => {
                self.sending()?;
                self.res.dispatch = Dispatch::Dispatched;
                self.p
                    .call(Some(&s), "Page.reload", json!({}), self.deadline)
                    .await
                    .map_err(|e| cdp_fail(&e, "reloading", true))?
            }
            _ => {
                let h = self
                    .p
                    .call(Some(&s), "Page.getNavigationHistory", json!({}), self.deadline)
                    .await
                    .map_err(|e| cdp_fail(&e, "reading history", false))?;
                let cur = h["currentIndex"].as_i64().unwrap_or(0);
                let idx = if params.action == ActionKind::Back { cur - 1 } else { cur + 1 };
                let entry =
                    h["entries"].as_array().and_then(|e| usize::try_from(idx).ok().and_then(|i| e.get(i))).cloned();
                let Some(entry) = entry else {
                    return Err(Fail::new(
                        codes::ACTION_FAILED,
                        format!(
                            "there is no history entry to go {}",
                            if params.action == ActionKind::Back { "back to" } else { "forward to" }
                        ),
                    ));
                };
                self.sending()?;
                self.res.dispatch = Dispatch::Dispatched;
                self.p
                    .call(Some(&s), "Page.navigateToHistoryEntry", json!({"entryId": entry["id"]}), self.deadline)
                    .await
                    .map_err(|e| cdp_fail(&e, "navigating history", true))?
            }
        };
        let same_doc = params.action == ActionKind::Navigate && r.get("loaderId").is_none();
        // Wait for the commit and the load event (or a same-document navigation).
        let mut polls = 0u32;
        loop {
            let (committed, loaded, same) = {
                let st = self.p.st();
                let evs = st.log_since(self.tab, self.seq0);
                let committed = evs.iter().any(|e| matches!(e, LogEvent::Navigated(_)));
                let loaded = committed
                    && evs
                        .iter()
                        .skip_while(|e| !matches!(e, LogEvent::Navigated(_)))
                        .any(|e| matches!(e, LogEvent::Loaded));
                let same = evs.iter().any(|e| matches!(e, LogEvent::SameDocument(_)));
                (committed, loaded, same)
            };
            if loaded || (same && !committed) || (same_doc && same) {
                break;
            }
            if self.dialog_open().is_some() {
                break;
            }
            if committed
                && polls % 10 == 9
                && self.eval("document.readyState", "reading the load state").await.ok() == Some(json!("complete"))
            {
                break;
            }
            polls += 1;
            if Instant::now() >= self.deadline {
                if committed {
                    self.res.message = Some("the page committed but is still loading".into());
                    break;
                }
                return Err(Fail::new(
                    codes::DEADLINE_EXCEEDED,
                    "the navigation did not commit before the deadline; it may still happen",
                )
                .unknown());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.res.timings.dispatch = ms(d0.elapsed());
        Ok(())
    }

    /// Waits for DOM quiet (or the load after a navigation), bounded.
    async fn settle(&mut self, quiet_ms: f64) {
        let start = Instant::now();
        let max = (start + MAX_SETTLE).min(self.deadline);
        loop {
            if self.dialog_open().is_some() || self.link_lost().is_some() {
                return;
            }
            let pending_load = {
                let st = self.p.st();
                let evs = st.log_since(self.tab, self.seq0);
                let nav = evs.iter().rposition(|e| matches!(e, LogEvent::Navigated(_)));
                nav.is_some_and(|i| !evs[i..].iter().any(|e| matches!(e, LogEvent::Loaded)))
            };
            let quiet = if pending_load {
                None
            } else {
                match self.read_tracker().await {
                    Some(v) => {
                        for a in v[1].as_array().into_iter().flatten() {
                            if let Some(s) = a.as_str()
                                && !self.announced.iter().any(|x| x == s)
                            {
                                self.announced.push(s.to_owned());
                            }
                        }
                        v[0].as_f64()
                    }
                    None => None,
                }
            };
            let limit = if pending_load { self.deadline } else { max };
            // Quiet counts from the dispatch at the latest, so late effects (timers, toasts) still land.
            let quiet = quiet.map(|q| q.min(start.elapsed().as_secs_f64() * 1000.0));
            if let Some(q) = quiet
                && q >= quiet_ms
            {
                return;
            }
            if Instant::now() >= limit {
                return;
            }
            let wait = quiet.map_or(15.0, |q| (quiet_ms - q).clamp(3.0, 40.0));
            tokio::time::sleep(Duration::from_secs_f64(wait / 1000.0)).await;
        }
    }

    /// Observes the page for the effect summary, storing a new revision.
    async fn effects_snapshot(&mut self) -> Result<(), ProviderError> {
        let o0 = Instant::now();
        let built = build(
            self.p,
            self.tab,
            None,
            browserd_protocol::DEFAULT_MAX_NODES,
            browserd_protocol::DEFAULT_MAX_BYTES as usize,
            self.deadline,
        )
        .await?;
        {
            let mut st = self.p.st();
            if let Some(t) = st.tabs.get_mut(&self.tab) {
                t.push_revision(built.lines.clone());
            }
        }
        if let Some(base) = &self.baseline {
            let (added, removed) = diff(base, &built.lines);
            self.res.effects.appeared =
                added.iter().filter(|l| l.node_ref.is_some()).take(15).map(|l| l.text.clone()).collect();
            self.res.effects.disappeared = removed.into_iter().take(30).map(NodeRef).collect();
        }
        self.res.effects.focused = built.focused.as_ref().and_then(|f| {
            built.lines.iter().find(|l| l.node_ref.as_deref() == Some(f.as_str())).map(|l| l.text.clone())
        });
        self.last_built = Some(built);
        self.res.timings.observe += ms(o0.elapsed());
        Ok(())
    }

    fn log_effects(&mut self) {
        let (evs, url) = {
            let st = self.p.st();
            (st.log_since(self.tab, self.seq0), st.tabs.get(&self.tab).map(|t| t.url.clone()))
        };
        let mut downloads: Vec<(String, DownloadInfo)> = Vec::new();
        let e = &mut self.res.effects;
        e.console_errors.clear();
        e.tabs_opened.clear();
        e.tabs_closed.clear();
        for ev in evs {
            match ev {
                LogEvent::Navigated(u) | LogEvent::SameDocument(u) => e.navigated = Some(u),
                LogEvent::Dialog(d) => e.dialog = Some(d),
                LogEvent::Popup(h) => e.tabs_opened.push(browserd_protocol::TabId(h.0)),
                LogEvent::TabClosed(h) => e.tabs_closed.push(browserd_protocol::TabId(h.0)),
                LogEvent::Console(c) => {
                    if e.console_errors.len() < 5 {
                        e.console_errors.push(c);
                    }
                }
                LogEvent::Download { guid, info } => match downloads.iter_mut().find(|(g, _)| *g == guid) {
                    Some((_, d)) => *d = info,
                    None => downloads.push((guid, info)),
                },
                LogEvent::Loaded | LogEvent::DialogClosed => {}
            }
        }
        if e.navigated.is_some() {
            e.navigated = url;
        }
        e.downloads = downloads.into_iter().map(|(_, d)| d).collect();
        e.announced = self.announced.iter().take(5).cloned().collect();
    }

    /// Whether `text` is shown in the page or any of its frames. Read in browserd's world, so a page cannot fake the
    /// answer (by replacing `String.prototype.includes` or `innerText`). A frame whose world cannot be had is never
    /// read from the page's own world instead: without a match elsewhere the answer is [`Seen::Unverifiable`] (and
    /// [`Seen::Unread`] when a look was cut short).
    async fn text_present(&self, text: &str) -> Seen {
        let roots: Vec<SessionId> = {
            let st = self.p.st();
            let Some(t) = st.tabs.get(&self.tab) else {
                return Seen::Unverifiable("the tab closed".into());
            };
            t.session.iter().cloned().chain(t.children.keys().cloned()).collect()
        };
        let expr = format!(
            "(() => {{ const t = {}; const has = (d) => {{ try {{ if (d.body && d.body.innerText.includes(t)) return true; for (const f of d.querySelectorAll('iframe')) {{ try {{ if (f.contentDocument && has(f.contentDocument)) return true; }} catch (e) {{}} }} }} catch (e) {{}} return false; }}; return has(document); }})()",
            serde_json::to_string(text).unwrap_or_default()
        );
        let (mut unread, mut cut) = (None, false);
        for s in roots {
            match world::eval(self.p, self.tab, &s, &expr, self.deadline).await {
                Ok(Value::Bool(true)) => return Seen::Present,
                Ok(_) => {}
                // Cut short by the deadline (or a lost link, judged by the caller).
                Err(WorldError::Link(_)) => cut = true,
                Err(e) => unread = Some(e.to_string()),
            }
        }
        match (unread, cut) {
            (Some(why), _) => Seen::Unverifiable(why),
            (None, true) => Seen::Unread,
            (None, false) => Seen::Absent,
        }
    }

    /// Records whether expectation `i` could be checked out of the page's reach (`Some(false)`: it could not;
    /// `None`: the check was cut short, which proves nothing either way).
    fn verifiable(&mut self, i: usize, checked: Option<bool>) {
        let i = index(i);
        match checked {
            Some(true) => self.unverified.retain(|x| *x != i),
            Some(false) if !self.unverified.contains(&i) => self.unverified.push(i),
            _ => {}
        }
    }

    /// Checks the expectations once. Those that could not be checked out of the page's reach fail and are listed in
    /// `self.unverified`: they are never passed on the page's word.
    async fn check(&mut self, exps: &[Expectation]) -> Vec<ExpectationResult> {
        let mut out = Vec::new();
        let evs = {
            let st = self.p.st();
            st.log_since(self.tab, self.seq0)
        };
        let dialog = self.dialog_open();
        for (i, e) in exps.iter().enumerate() {
            let (passed, detail) = match e {
                Expectation::Navigated => {
                    let n = evs.iter().any(|e| matches!(e, LogEvent::Navigated(_) | LogEvent::SameDocument(_)));
                    (n, if n { "navigated".into() } else { "no navigation".into() })
                }
                Expectation::NewTab => {
                    let t: Vec<String> = evs
                        .iter()
                        .filter_map(|e| if let LogEvent::Popup(h) = e { Some(h.to_string()) } else { None })
                        .collect();
                    (!t.is_empty(), if t.is_empty() { "no new tab".into() } else { format!("new tab {}", t.join(",")) })
                }
                Expectation::Dialog => {
                    let d = dialog.is_some() || evs.iter().any(|e| matches!(e, LogEvent::Dialog(_)));
                    (d, if d { "a dialog opened".into() } else { "no dialog".into() })
                }
                Expectation::DownloadFinished => {
                    let d =
                        evs.iter().any(|e| matches!(e, LogEvent::Download { info, .. } if info.state == "completed"));
                    (d, if d { "download completed".into() } else { "no finished download".into() })
                }
                Expectation::Url { contains } => {
                    let url = self.p.st().tabs.get(&self.tab).map(|t| t.url.clone()).unwrap_or_default();
                    (url.contains(contains.as_str()), format!("url is {}", truncate(&url, 120)))
                }
                _ if dialog.is_some() => (false, "a dialog blocks the page; cannot check".into()),
                Expectation::TextPresent { text } => match self.text_present(text).await {
                    Seen::Present => {
                        self.verifiable(i, Some(true));
                        (true, "text found".into())
                    }
                    Seen::Absent => {
                        self.verifiable(i, Some(true));
                        (false, "text not found".into())
                    }
                    Seen::Unverifiable(why) => {
                        self.verifiable(i, Some(false));
                        (false, format!("not found, and could not be checked everywhere: {why}"))
                    }
                    Seen::Unread => (false, "text not found before the deadline".into()),
                },
                Expectation::Value { target, equals } => match resolve_ref(self.p, self.tab, target.as_str()) {
                    Ok(res) => match self.read_value(&res).await {
                        Ok(v) => {
                            self.verifiable(i, Some(true));
                            (v == *equals, format!("value is {:?}", truncate(&v, 80)))
                        }
                        Err(f) => {
                            // Not readable out of the page's reach is not "does not hold"; a read cut short proves
                            // nothing (a lost link is judged after); a field that is gone does not hold the value.
                            let checked = if f.world { Some(false) } else { (!f.link).then_some(true) };
                            self.verifiable(i, checked);
                            (false, f.message)
                        }
                    },
                    Err(_) => {
                        self.verifiable(i, Some(true));
                        (false, format!("{target} is stale or unknown"))
                    }
                },
                Expectation::Appears { role, name } => {
                    let found = self.last_built.as_ref().and_then(|b| {
                        b.nodes.iter().find(|n| {
                            role.as_ref().is_none_or(|r| n.role == *r)
                                && name.as_ref().is_none_or(|nm| n.name.to_lowercase().contains(&nm.to_lowercase()))
                        })
                    });
                    match found {
                        Some(n) => (true, format!("found [{}] {} {:?}", n.node_ref, n.role, n.name)),
                        None => (false, "no such node".into()),
                    }
                }
                Expectation::Disappears { target, text } => {
                    let mut gone = true;
                    let mut detail = "gone".to_owned();
                    if let Some(t) = target {
                        let listed =
                            self.last_built.as_ref().is_some_and(|b| b.nodes.iter().any(|n| n.node_ref == t.as_str()));
                        if listed {
                            gone = false;
                            detail = format!("{t} is still shown");
                        }
                    }
                    if let Some(tx) = text {
                        // Not seeing a text where it cannot be read, or not in time, is no evidence that it is gone.
                        match self.text_present(tx).await {
                            Seen::Present => {
                                self.verifiable(i, Some(true));
                                gone = false;
                                detail = format!("{tx:?} is still on the page");
                            }
                            Seen::Absent => self.verifiable(i, Some(true)),
                            Seen::Unverifiable(why) => {
                                self.verifiable(i, Some(!gone));
                                if gone {
                                    gone = false;
                                    detail = format!("whether {tx:?} is gone could not be checked: {why}");
                                }
                            }
                            Seen::Unread if gone => {
                                gone = false;
                                detail = format!("whether {tx:?} is gone was not checked before the deadline");
                            }
                            Seen::Unread => {}
                        }
                    }
                    (gone, detail)
                }
                Expectation::State { target, state } => {
                    let node = self
                        .last_built
                        .as_ref()
                        .and_then(|b| b.nodes.iter().find(|n| n.node_ref == target.as_str()).cloned());
                    match node {
                        None => (false, format!("{target} is not shown")),
                        Some(n) => {
                            let has = |s: &str| n.states.iter().any(|x| x == s);
                            let focused = self.last_built.as_ref().and_then(|b| b.focused.clone()).as_deref()
                                == Some(target.as_str());
                            let ok = match state.as_str() {
                                "enabled" => !has("disabled"),
                                "unchecked" => has("unchecked") || !has("checked"),
                                "focused" => focused,
                                "visible" => true,
                                s => has(s),
                            };
                            (ok, format!("states: {}", n.states.join(" ")))
                        }
                    }
                }
            };
            out.push(ExpectationResult { index: index(i), passed, detail });
        }
        out
    }

    /// The link went away after the action's input: effects gathered so far stay; expectations not yet seen to hold
    /// cannot be verified, and then the outcome is unknown (or failed, for a `wait` that sent nothing).
    fn link_lost_while_settling(&mut self, params: &ActParams, f: &Fail) {
        let verified = !params.expected.is_empty()
            && self.res.expectations.len() == params.expected.len()
            && self.res.expectations.iter().all(|r| r.passed);
        if verified {
            self.res.postcondition = Postcondition::Passed;
            return;
        }
        let sent = self.sent.load(Ordering::SeqCst);
        if params.expected.is_empty() {
            if self.res.message.is_none() {
                self.res.message =
                    Some(format!("{} while the effects were gathered; later effects are unknown", f.message));
            }
            return;
        }
        self.res.postcondition = Postcondition::Unverified;
        if self.res.outcome != Outcome::Succeeded {
            return;
        }
        self.res.code = Some(f.code.into());
        if sent {
            self.res.outcome = Outcome::Unknown;
            self.res.message = Some(format!(
                "{} before the expectation could be verified; the input was sent, so its effect is unknown: it is not \
                 retried automatically — observe the page (reconnecting first if needed) before acting again",
                f.message
            ));
        } else {
            self.res.outcome = Outcome::Failed;
            self.res.message = Some(format!("{} before the expectation held; nothing was sent to the page", f.message));
        }
    }

    async fn settle_and_verify(&mut self, params: &ActParams) {
        let quiet = if params.expected.is_empty() { QUIET_MS } else { QUIET_EXPECTING_MS };
        let mut lost;
        loop {
            self.settle(quiet).await;
            lost = self.link_lost();
            if lost.is_none()
                && self.dialog_open().is_none()
                && let Err(e) = self.effects_snapshot().await
            {
                self.res.message.get_or_insert_with(|| format!("effects could not be observed: {}", e.message));
            }
            self.log_effects();
            if params.expected.is_empty() || lost.is_some() {
                break;
            }
            let results = self.check(&params.expected).await;
            // A check that ran while the link went away proves nothing.
            lost = self.link_lost();
            if lost.is_some() {
                break;
            }
            let all = results.iter().all(|r| r.passed);
            self.res.expectations = results;
            if all || Instant::now() + Duration::from_millis(30) >= self.deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        if let Some(f) = lost {
            self.link_lost_while_settling(params, &f);
        } else if !params.expected.is_empty() {
            let all = self.res.expectations.iter().all(|r| r.passed);
            // Failed only when some expectation is known not to hold; when every one that did not pass could not be
            // checked out of the page's reach, nothing is known.
            let unverifiable =
                !all && self.res.expectations.iter().filter(|r| !r.passed).all(|r| self.unverified.contains(&r.index));
            self.res.postcondition = if all {
                Postcondition::Passed
            } else if unverifiable {
                Postcondition::Unverified
            } else {
                Postcondition::Failed
            };
            if all && self.res.dispatch == Dispatch::Dispatched {
                self.res.dispatch = Dispatch::Observed;
            }
            // What did not hold, for the message: `#1: text not found; #2: …`.
            let why = {
                let failed: Vec<String> = self
                    .res
                    .expectations
                    .iter()
                    .filter(|r| !r.passed)
                    .map(|r| format!("#{}: {}", r.index, r.detail))
                    .collect();
                failed.join("; ")
            };
            if unverifiable && self.res.code.is_none() {
                if self.sent.load(Ordering::SeqCst) {
                    self.res.outcome = Outcome::Unknown;
                    self.res.code = Some(OUTCOME_UNKNOWN.into());
                    self.res.message = Some(format!(
                        "the input was sent but the expectation could not be verified out of the page's reach ({why}); \
                         its effect is unknown: it is not retried automatically — observe the page before acting again"
                    ));
                } else {
                    self.res.outcome = Outcome::Failed;
                    self.res.code = Some(codes::ACTION_FAILED.into());
                    self.res.message = Some(format!(
                        "the expectation could not be verified out of the page's reach ({why}); nothing was sent to \
                         the page — observe it instead"
                    ));
                }
            } else if !all && self.res.code.is_none() {
                self.res.code = Some(codes::EXPECTATION_FAILED.into());
                self.res.message = Some(format!(
                    "the action ran but the expectation did not hold before the deadline ({why}); check the effects before retrying"
                ));
            }
        }
        let e = &self.res.effects;
        if self.res.dispatch == Dispatch::Dispatched
            && (e.navigated.is_some()
                || !e.appeared.is_empty()
                || !e.disappeared.is_empty()
                || !e.announced.is_empty()
                || e.dialog.is_some()
                || !e.tabs_opened.is_empty())
        {
            self.res.dispatch = Dispatch::Observed;
        }
    }
}
