//! Actionability: the target is attached, visible, stable, enabled (editable) and receives the input at its centre
//! (hit tests, through out-of-process frames); an obstacle is watched until it is stable, then described (the
//! covering element, with a ref).

use std::time::{Duration, Instant};

use browserd_cdp::SessionId;
use browserd_core::provider::TabHandle;
use browserd_protocol::{CoveringElement, NodeRef, codes};
use serde_json::{Value, json};

use super::GROUP;
use super::fail::{Fail, cdp_fail, world_fail};
use super::run::{Run, ms};
use crate::observe::Resolved;
use crate::provider::{ChromiumProvider, remaining, truncate};
use crate::world;

/// How long an obstacle that is still changing (a fading toast, a moving target) is waited for before
/// `NOT_ACTIONABLE`; a cover whose finite animations (at most 3 s) end later is waited for until they end, within the
/// caller's deadline.
const PATIENCE: Duration = Duration::from_millis(1000);
/// How long an obstacle must stay the same (same covering node, box and opacity, no running animation; or the same
/// reason) before it is reported: a persistent overlay is answered this quickly.
const OBSTACLE_STABLE: Duration = Duration::from_millis(150);
/// The re-check cadence while an obstacle is watched: about one animation frame.
const FRAME: Duration = Duration::from_millis(16);

/// One round trip of actionability for same-process targets: state, scroll into view, box in top-level viewport
/// coordinates (through same-origin frames), running animations, and whether the centre point hits the target. Runs
/// on the node as an object of browserd's isolated world, so the built-ins it calls (`getComputedStyle`,
/// `elementFromPoint`, `getClientRects`, `closest`, `parentNode`, ...) are the browser's, whatever the page replaced.
const CHECK: &str = r"function(pointNode, checkHit) {
  const OTHER = 'a[href], button, input, select, textarea, summary, label, [role=link], [role=button], [role=checkbox], [role=radio], [role=switch], [role=tab], [role=menuitem], [role=option], [role=treeitem]';
  const e = this; const el = e.nodeType === 1 ? e : e.parentElement;
  const out = { connected: e.isConnected };
  if (!out.connected || !el) return out;
  const cs = getComputedStyle(el);
  const tag = el.tagName;
  const textual = (tag === 'INPUT' && !['checkbox','radio','button','submit','reset','file','image','range','color'].includes(el.type)) || tag === 'TEXTAREA';
  out.visible = cs.visibility !== 'hidden' && cs.display !== 'none';
  // `pointer-events: none` (inherited, so set here or on an ancestor): clicks go through it to what is under it.
  out.noPointer = cs.pointerEvents === 'none';
  out.disabled = !!(el.disabled || (el.closest && el.closest('[aria-disabled=true],fieldset[disabled]')));
  // Inside any modal element (stacked dialogs: the browser makes the lower one inert itself and the hit test sees it
  // covered), or no modal at all: not kept from input by a modal.
  let anyModal = false; try { anyModal = !!el.ownerDocument.querySelector(':modal'); } catch (err) {}
  let inModal = !anyModal;
  for (let n = el; n && !inModal; n = n.parentNode || n.host) { try { inModal = n.nodeType === 1 && n.matches(':modal'); } catch (err) { inModal = true; } }
  out.inert = !!((el.closest && el.closest('[inert]')) || !inModal);
  out.readonly = !!el.readOnly;
  out.editable = (textual && !el.readOnly && !el.disabled) || !!el.isContentEditable;
  out.tag = tag; out.type = el.type || '';
  out.animating = document.getAnimations().length > 0;
  const p = pointNode || el;
  // Scrolled into view only when it is not already in view, and instantly: a page's `scroll-behavior: smooth`
  // (Bootstrap's reboot sets it on :root) would make the scroll an animation and the box read next a stale one.
  const inView = (() => {
    const r = p.getBoundingClientRect(), win = p.ownerDocument.defaultView;
    if (r.top < 0 || r.left < 0 || r.bottom > win.innerHeight || r.right > win.innerWidth) return false;
    for (let a = p.parentElement; a; a = a.parentElement) {
      if (a.scrollHeight <= a.clientHeight && a.scrollWidth <= a.clientWidth) continue;
      const s = getComputedStyle(a);
      if (!/(auto|scroll|hidden|overlay)/.test(s.overflowX + ' ' + s.overflowY)) continue;
      const ar = a.getBoundingClientRect();
      if (r.top < ar.top || r.bottom > ar.bottom || r.left < ar.left || r.right > ar.right) return false;
    }
    return true;
  })();
  if (!inView) p.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
  const measure = () => {
    let r = null;
    for (const x of p.getClientRects()) { if (x.width >= 1 && x.height >= 1) { r = x; break; } }
    if (!r) { out.box = null; return null; }
    const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
    let ox = 0, oy = 0, w = el.ownerDocument.defaultView, outer = null;
    try {
      while (w.frameElement) {
        const f = w.frameElement, fr = f.getBoundingClientRect(), fs = getComputedStyle(f);
        ox += fr.left + parseFloat(fs.borderLeftWidth) + parseFloat(fs.paddingLeft);
        oy += fr.top + parseFloat(fs.borderTopWidth) + parseFloat(fs.paddingTop);
        outer = f; w = w.parent;
      }
    } catch (err) { out.crossFrame = true; return null; }
    out.box = [r.left + ox, r.top + oy, r.width, r.height];
    if (!checkHit) return null;
    let h = el.ownerDocument.elementFromPoint(cx, cy);
    while (h && h.shadowRoot) { const d = h.shadowRoot.elementFromPoint(cx, cy); if (!d || d === h) break; h = d; }
    let inside = false;
    // Inside the target, or inside the element browserd clicks for it (the drawn switch around a 0×0 input).
    for (let n = h; n; n = n.parentNode || n.host) { if (n === e || n === p) { inside = true; break; } }
    if (!inside && h) { const l = h.closest && h.closest('label'); if (l && l.control === e) inside = true; }
    if (!inside && h && (tag === 'INPUT' || el.getAttribute('role') === 'combobox')) {
      // A field under its own widget's parts (a Select's placeholder drawn over its invisible input; the box that
      // takes the clicks for an input with `pointer-events: none`): the click reaches the widget the field is part
      // of, as a user's does, unless another control of it is at the point (its clear button).
      let a = el.parentElement;
      for (let i = 0; i < 3 && a; i++, a = a.parentElement) {
        if (!a.contains(h)) continue;
        let other = false;
        for (let n = h; n && n !== a; n = n.parentElement) { if (n.matches(OTHER)) { other = true; break; } }
        inside = !other;
        break;
      }
    }
    if (inside && outer) inside = w.document.elementFromPoint(cx + ox, cy + oy) === outer;
    out.hitInside = inside;
    out.hitOther = false;
    // The point is the target's, but the element under it is another control (a child link, a button inside a
    // clickable row, the label of a field): the input reaches that one first, and the result must say so.
    if (inside && h !== e) {
      for (let n = h; n && n !== e; n = n.parentNode || n.host) {
        if (n.nodeType === 1 && n.matches(OTHER)) { out.hitOther = true; break; }
      }
    }
    return h;
  };
  const h = measure();
  if (out.crossFrame || !checkHit || out.hitInside !== false || !inView || !h) return out;
  // In view but under a bar that stays in view (a cookie banner fixed at the bottom, a sticky header): a user
  // scrolls it out from under the bar. Not for a cover of most of the view (a modal's backdrop): that one must be
  // dealt with first, and the page is left where it is.
  const win = el.ownerDocument.defaultView;
  for (let n = h; n && n.nodeType === 1; n = n.parentElement) {
    const pos = getComputedStyle(n).position;
    if (pos !== 'fixed' && pos !== 'sticky') continue;
    const fr = n.getBoundingClientRect();
    if (fr.width * fr.height < 0.5 * win.innerWidth * win.innerHeight) {
      p.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
      measure();
    }
    break;
  }
  return out;
}";

/// The box of a node in top-level viewport coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct QuadBox {
    pub(crate) left: f64,
    pub(crate) top: f64,
    pub(crate) width: f64,
    pub(crate) height: f64,
}

impl QuadBox {
    pub(super) fn center(&self) -> (f64, f64) {
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

/// The backend id, in the top-level document, of the frame element that holds `frame` (its outermost ancestor frame
/// below the top level); `None` when it cannot be read.
async fn top_owner(
    p: &ChromiumProvider,
    tab: TabHandle,
    frame: &str,
    top_session: &SessionId,
    deadline: Instant,
) -> Option<i64> {
    let outermost = {
        let st = p.st();
        let t = st.tabs.get(&tab)?;
        let mut current = frame.to_owned();
        for _ in 0..16 {
            let parent = t.frames.get(&current)?.parent.clone()?;
            if t.frames.get(&parent)?.parent.is_none() {
                break;
            }
            current = parent;
        }
        current
    };
    let owner = p.call(Some(top_session), "DOM.getFrameOwner", json!({"frameId": outermost}), deadline).await.ok()?;
    owner["backendNodeId"].as_i64()
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

impl Run<'_> {
    /// The node's state without geometry (for a file input, which is often visually hidden).
    pub(super) async fn probe(&self, res: &Resolved, obj: &str) -> Result<Value, Fail> {
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
    pub(super) async fn actionable(
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
        let mut give_up = (start + PATIENCE).min(self.deadline.checked_sub(margin).unwrap_or(start));
        let mut last: Option<Fail> = None;
        let mut seen: Option<Value> = None;
        let mut same_since = start;
        loop {
            match self.actionable_once(res, editable, hit, enabled).await {
                Ok(pt) => return Ok(pt),
                Err(f) if f.code == codes::NOT_ACTIONABLE => {
                    let now = Instant::now();
                    let (state, changing, left) = self.obstacle_state(&f).await;
                    // A cover fading out within the deadline (its animation's end is known) is waited for to the end.
                    if changing && left > 0.0 {
                        let end = now + Duration::from_secs_f64(left / 1000.0) + FRAME * 2;
                        give_up = give_up.max(end.min(self.deadline.checked_sub(margin).unwrap_or(start)));
                    }
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
    /// Last, the milliseconds the cover's finite animations have left (0 when none or unknown).
    async fn obstacle_state(&self, f: &Fail) -> (Value, bool, f64) {
        const COVER_STATE: &str = r"function() {
          const e = this.nodeType === 1 ? this : this.parentElement;
          if (!e || !e.isConnected) return null;
          const r = e.getBoundingClientRect();
          let opacity = 1, animating = false, left = 0;
          for (let n = e; n && n.nodeType === 1; n = n.parentElement || (n.getRootNode().host || null)) {
            opacity *= parseFloat(getComputedStyle(n).opacity);
            for (const a of n.getAnimations()) {
              if (a.playState !== 'running') continue;
              animating = true;
              const t = a.effect && a.effect.getComputedTiming();
              if (t && Number.isFinite(t.endTime) && t.endTime <= 3000) left = Math.max(left, t.endTime - (t.localTime || 0));
            }
          }
          return [Math.round(r.left), Math.round(r.top), Math.round(r.width), Math.round(r.height), Math.round(opacity * 100), animating, Math.round(left)];
        }";
        let Some((session, frame, backend)) = &f.cover_at else {
            let moving = f.message.contains("moving");
            return (json!(f.message), moving, 0.0);
        };
        // A node that cannot be read (gone, or no isolated world) reads as changing: it is watched, never believed.
        let obj = self.node(session, frame, *backend).await.ok();
        let mut state = match obj {
            Some(obj) => self.call_on(session, &obj, COVER_STATE, json!([])).await.unwrap_or(Value::Null),
            None => Value::Null,
        };
        let changing = state.is_null() || state[5] == json!(true);
        // How long its finite animations have left: not part of what is compared (it changes every frame).
        let left = match &mut state {
            Value::Array(v) if v.len() > 6 => v.pop().and_then(|l| l.as_f64()).unwrap_or(0.0),
            _ => 0.0,
        };
        (json!([backend, state]), changing, left)
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
        if enabled && pr["inert"] == json!(true) {
            // Behind a modal (an `inert` ancestor, or a modal <dialog>): the page ignores input there.
            return Err(Fail::new(
                codes::NOT_ACTIONABLE,
                "the node is inert: a modal dialog keeps input from it; act on the dialog first (observe to see it)",
            ));
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
            // Always two samples a frame apart: scrolling the node into view scrolls the parent documents from the
            // frame's own process, and the owner's box in the parent may not have moved yet when first measured.
            tokio::time::sleep(Duration::from_millis(16)).await;
            let b = quad_center(self.p, self.tab, res, self.deadline)
                .await
                .map_err(|e| Fail::new(codes::NOT_ACTIONABLE, e))?;
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
        if hit && last["hitInside"] != json!(true) && last["noPointer"] == json!(true) {
            // The browser's hit test (which the check below asks to see through `pointer-events: none`) would find
            // the target itself, yet a real click goes through it.
            return Err(Fail::new(
                codes::NOT_ACTIONABLE,
                "the target takes no pointer events (CSS `pointer-events: none`, the way pages often disable a \
                 control): a click would reach what is under it, not the target; nothing was sent",
            ));
        }
        if hit && last["hitInside"] != json!(true) {
            // Something else takes the point: describe it precisely through CDP (this also re-checks the hit).
            self.hit_test(res, &obj, x, y).await?;
        } else if hit && last["hitOther"] == json!(true) {
            self.note_hit_inside(res, x, y).await;
        }
        Ok((x, y))
    }

    /// The click point is inside the target but on another control within it (a child link, a button in a clickable
    /// row, the field's label): that control gets the input first, so the result names it (`hit`). Best effort: the
    /// action goes on whatever this finds.
    async fn note_hit_inside(&mut self, res: &Resolved, x: f64, y: f64) {
        let Ok((ox, oy)) = frame_offset(self.p, self.tab, &res.frame_id, self.deadline).await else { return };
        let (sx, sy) = self.scroll_of(&res.session).await;
        let at = json!({"x": (x - ox + sx).round() as i64, "y": (y - oy + sy).round() as i64,
            "includeUserAgentShadowDOM": false, "ignorePointerEventsNone": true});
        let Ok(h) = self.p.call(Some(&res.session), "DOM.getNodeForLocation", at, self.deadline).await else { return };
        let Some(hb) = h["backendNodeId"].as_i64().filter(|hb| *hb != res.backend) else { return };
        let frame = h["frameId"].as_str().unwrap_or(&res.frame_id).to_owned();
        let el = self.describe_element(&res.session, &frame, hb).await;
        self.res.hit = Some(el);
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
            // The point must land on the owner of this frame's outermost frame, not merely on some frame.
            let owner = top_owner(self.p, self.tab, &res.frame_id, &self.session, self.deadline).await;
            let lands = (tag == "iframe" || tag == "frame")
                && owner.is_none_or(|owner| top["backendNodeId"].as_i64() == Some(owner));
            if !lands {
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

    /// The node that receives input at a top-level viewport point: its session, frame id and backend id. Descends into
    /// out-of-process frames, whose content the top-level hit test cannot see.
    pub(super) async fn node_at(&mut self, x: f64, y: f64) -> Result<(SessionId, String, i64), Fail> {
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
            // A frame the site policy does not authorise is not hit-tested inside: input there is refused.
            if let Some(why) = child.as_deref().and_then(|c| self.frame_refusal(c)) {
                return Err(Fail::new(
                    codes::ORIGIN_NOT_AUTHORISED,
                    format!("the point is in a frame that shows {why}; nothing was sent"),
                ));
            }
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
    pub(super) async fn describe_element(&mut self, session: &SessionId, frame: &str, backend: i64) -> CoveringElement {
        let (role, name, chosen) = self.role_and_name(session, frame, backend).await;
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

    /// The role and name of a node's nearest meaningful accessible ancestor (the node itself when it is one), and
    /// which node that is; `generic` and an empty name when the browser cannot say.
    pub(super) async fn role_and_name(&self, session: &SessionId, frame: &str, backend: i64) -> (String, String, i64) {
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
        (role, name, chosen)
    }
}
