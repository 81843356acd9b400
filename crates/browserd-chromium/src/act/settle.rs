//! The settle window after input (DOM quiet, or the load after a navigation, bounded) and the effect tracker that
//! measures it and collects announcements; the effect summary (a new observation diffed against the last one, and
//! what the tab's log recorded).

use std::time::{Duration, Instant};

use browserd_cdp::{Cdp, CdpError, SessionId};
use browserd_core::provider::ProviderError;
use browserd_protocol::{DownloadInfo, NodeRef};
use serde_json::{Value, json};

use super::run::{Run, ms};
use crate::observe::{build, diff};
use crate::state::LogEvent;
use crate::world::{self, WORLD, WorldError};

/// DOM quiet time that ends the settle window while the page has not changed since the input.
pub(super) const QUIET_MS: f64 = 40.0;
/// DOM quiet time when expectations decide the end of the wait, or once the page changed after the input.
pub(super) const QUIET_EXPECTING_MS: f64 = 15.0;
/// DOM quiet time that is enough once the page changed after the input and has since rendered a frame and run a
/// task after it with no further change: what the input set off in the same task, its microtasks (React, Vue and
/// Svelte commit there), the animation frame after it and the effects scheduled for after that frame's paint has
/// all run. A tab that renders no frames (a background tab throttles them) waits the [`QUIET_EXPECTING_MS`].
pub(super) const QUIET_FRAMED_MS: f64 = 4.0;
/// Longest settle window when nothing is expected.
pub(super) const MAX_SETTLE: Duration = Duration::from_millis(600);
/// Longest wait for what the input set on its way out (a menu fading, a dialog's leave animation) to finish.
pub(super) const EXIT_WAIT: Duration = Duration::from_millis(600);
/// Whether something the input set off is on its way out or in: a finite CSS transition or animation (at most a
/// second long: longer ones are timers, a toast's countdown) begun since the last pointer or key press, that takes
/// text out of view (opacity to 0, height to 0, visibility to hidden: a menu fading, an accordion closing) or, within
/// 600 ms, brings a popup of controls into view from none (opacity 0, height 0, scaled flat: Element Plus's select
/// list zooms in for 300 ms, its options without a box to list until then), or a Vue `<Transition>` leaving or
/// entering with controls (its `-leave-active` / `-enter-active` class is set a frame before the change itself
/// starts), or, for 300 ms
/// after the input collapsed a control (`aria-expanded` to false), the popup it controlled (`aria-controls`, also as
/// it was just before the page removed it, or labelled by the control) still shown: Mantine starts a menu's fade two
/// frames after its state changed, later than the page looks settled; or a backdrop (an element without text over
/// nine tenths of the viewport, fixed or absolute) fading in or out: Bootstrap fades its backdrop in before it shows
/// the modal, and out after the modal has gone, the page covered meanwhile; or a dialog (or a box of its controls)
/// moving or fading into place. What only recolours (a hover, a focus ring), carries no text and covers little (a
/// button's ripple) or brings no controls in (a toast's text sliding in) is not waited for.
const EXITS_RUNNING: &str = r#"(() => { const b = window.__browserd; if (!b || b.at == null) return false;
  const gone = (k, v) => {
    v = String(v).trim();
    if (k === 'opacity') return parseFloat(v) < 0.05;
    if (k === 'visibility') return v === 'hidden';
    if (/^(height|maxHeight|max-height|gridTemplateRows|grid-template-rows)$/.test(k)) return /^0(px|fr)?$/.test(v);
    return false;
  };
  // Out of view or squashed flat (a popup zooming in from scaleY(0)): where an entering popup starts.
  const hidden = (k, v) => {
    if (gone(k, v)) return true;
    if (k !== 'transform') return false;
    const m = String(v).match(/matrix\(([^)]+)\)/);
    const s = m ? m[1].split(',').map(parseFloat) : null;
    return s ? Math.abs(s[0]) < 0.05 || Math.abs(s[3]) < 0.05 : /scale[XY]?\(\s*0(\.0*)?\s*[,)]/.test(String(v));
  };
  const texty = (t) => t && t.nodeType === 1 && t.isConnected && (t.textContent || '').trim() !== '';
  const CONTROLS = '[role=option],[role=menuitem],[role=menuitemradio],[role=menuitemcheckbox],[role=treeitem],' +
    '[role=button],[role=link],a[href],button,input,select,textarea';
  const backdrop = (t) => {
    if (!t || t.nodeType !== 1 || !t.isConnected || texty(t)) return false;
    const p = getComputedStyle(t).position; if (p !== 'fixed' && p !== 'absolute') return false;
    const r = t.getBoundingClientRect(); return r.width >= innerWidth * 0.9 && r.height >= innerHeight * 0.9;
  };
  const moving = document.getAnimations().some((a) => {
    const e = a.effect; if (!e || !(a.playState === 'running' || a.pending)) return false;
    const cover = backdrop(e.target);
    if (!cover && !texty(e.target)) return false;
    const t = e.getComputedTiming();
    if (!Number.isFinite(t.endTime) || t.activeDuration > 1000) return false;
    if (a.startTime !== null && a.startTime < (b.atTl != null ? b.atTl : b.at) - 1) return false;
    if (cover) return true;
    const frames = e.getKeyframes();
    const first = frames[0] || {}; const last = frames.slice(-1)[0] || {};
    // A dialog still moving or fading into place (Bootstrap slides its modal down for 300 ms, and ignores a hide
    // until it is in): the dialog itself, or a box of its controls inside it.
    const DIALOG = '[role=dialog],[role=alertdialog],[aria-modal=true],dialog[open]';
    const t0 = e.target;
    if (Object.keys(last).some((k) => k === 'transform' || k === 'opacity') &&
        (t0.matches(DIALOG) || (t0.closest(DIALOG) && t0.querySelector(CONTROLS)))) return true;
    if (Object.keys(last).some((k) => gone(k, last[k]))) return true;
    // An entering popup of controls (a select's list zooming in): its options have no box to list until it is in.
    return t.activeDuration <= 600 && Object.keys(first).some((k) => hidden(k, first[k])) &&
      !!e.target.querySelector(CONTROLS);
  });
  if (moving) return true;
  for (const el of document.querySelectorAll('[class*="-leave-active"],[class*="-enter-active"]')) {
    if (texty(el) && el.getClientRects().length && (/-leave-active/.test(el.className) || el.querySelector(CONTROLS))) {
      return true;
    }
  }
  const shown = (e) => texty(e) && e.checkVisibility({ opacityProperty: true, visibilityProperty: true });
  return (b.shut || []).some((s) => {
    if (performance.now() - s.t > 300 || s.el.getAttribute('aria-expanded') !== 'false') return false;
    const pops = s.ids.map((id) => document.getElementById(id));
    if (s.el.id) pops.push(...document.querySelectorAll('[aria-labelledby~="' + CSS.escape(s.el.id) + '"]'));
    return pops.some(shown);
  }); })()"#;

/// Resolves once two frames have been rendered and a task run after them: the animation events of a transition that
/// ended before the first (dispatched in the frame's rendering steps, before its animation frame callbacks) have been
/// handled.
const AFTER_TWO_FRAMES: &str =
    "new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => r(true), 0))))";
/// Longest wait for [`AFTER_TWO_FRAMES`] (a tab that renders no frames never resolves it).
const EXIT_EVENTS_WAIT: Duration = Duration::from_millis(100);

/// How long after the input a field that offers suggestions is given to show them: search-as-you-type lists wait
/// for a pause in the typing first (jQuery UI's autocomplete 300 ms; most debounce 150–300 ms).
pub(super) const SUGGEST_WAIT: Duration = Duration::from_millis(500);

/// The effect tracker, run in browserd's isolated world ([`crate::world`]) of every document: DOM quiet time,
/// whether a frame was rendered (and a task run after it) since the last DOM change, and live-region / toast text for
/// effect summaries. Page scripts can neither see it nor break it (by replacing
/// `MutationObserver`, `Array.prototype.push`, `Element.prototype.getAttribute`, ...). Idempotent.
pub(crate) const TRACKER: &str = r#"(() => {
  if (window.__browserd) return;
  const st = { last: performance.now(), ann: [], framed: true, wake: [] };
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
  // The element a pointer press went to (the input's target, wherever the page moves it); a key press clears it.
  // Controls the input collapsed since (`aria-expanded` to false), with what they controlled: `EXITS_RUNNING` waits
  // while that is still shown.
  // `atTl`: the animation timeline's time at the press, what an animation the press sets off starts at or after (a
  // frame begun before the press was handled, as under load, starts it at that frame's time, before `at`).
  const pressed = () => { st.at = performance.now(); st.atTl = document.timeline.currentTime; st.shut = []; };
  document.addEventListener('pointerdown', (e) => { st.target = e.composedPath()[0]; pressed(); }, true);
  document.addEventListener('keydown', () => { st.target = null; pressed(); }, true);
  new MutationObserver((ms) => {
    const mark = performance.now();
    st.last = mark;
    st.framed = false;
    requestAnimationFrame(() => setTimeout(() => {
      if (st.last !== mark) return;
      st.framed = true;
      const wake = st.wake; st.wake = [];
      for (const w of wake) w();
    }, 0));
    const controlled = new Map();
    for (const m of ms) {
      if (m.type === 'attributes' && m.attributeName === 'aria-controls' && m.oldValue) controlled.set(m.target, m.oldValue);
    }
    for (const m of ms) {
      if (st.shut && m.type === 'attributes' && m.attributeName === 'aria-expanded' && m.oldValue === 'true' &&
          m.target.getAttribute('aria-expanded') === 'false' && st.shut.length < 8) {
        const ids = (m.target.getAttribute('aria-controls') || controlled.get(m.target) || '').split(/\s+/).filter(Boolean);
        st.shut.push({ el: m.target, ids, t: mark });
      }
      const nodes = m.type === 'characterData' ? [m.target] : m.addedNodes;
      for (const n of nodes) {
        if (live(n)) { const t = (n.textContent || '').trim().replace(/\s+/g, ' '); if (t) st.ann.push(t.slice(0, 200)); }
      }
    }
  }).observe(document, { subtree: true, childList: true, characterData: true, attributes: true, attributeOldValue: true });
})()"#;

/// Reads the tracker: `null` when this world has none yet, else `[ms since the last DOM change, new announcements,
/// whether a frame and a task after it ran since that change]`.
const TRACKER_READ: &str = "(() => { const b = window.__browserd; if (!b) return null; return [performance.now() - b.last, b.ann.splice(0), b.framed === true]; })()";

/// Reads the tracker like [`TRACKER_READ`] once a frame (and a task after it) has run since the last DOM change: at
/// once when one has, else the moment the tracker marks it. The caller bounds the wait (a tab that renders no frames
/// never marks one); a tracker made before `wake` existed is waited for until that bound too.
const TRACKER_READ_FRAMED: &str = "(() => { const b = window.__browserd; if (!b) return null; \
  const read = () => [performance.now() - b.last, b.ann.splice(0), b.framed === true]; \
  if (b.framed) return read(); \
  if (!Array.isArray(b.wake)) return new Promise(() => {}); \
  return new Promise((r) => b.wake.push(() => r(read()))); })()";

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

impl Run<'_> {
    /// The execution context of browserd's world in the tab's current main-frame document (the effect tracker is
    /// installed when it is made). Looked up when none is remembered for this document, or when `fresh`.
    pub(super) async fn tracker_context(&self, fresh: bool) -> Result<i64, WorldError> {
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

    /// After typing into a field that offers suggestions and shows none yet (`suggests`): waits until the page
    /// changes (its list renders) and is quiet again, or [`SUGGEST_WAIT`] after the input when nothing comes, so the
    /// effects list the suggestions instead of an agent observing again to find them.
    pub(super) async fn await_suggestions(&mut self) {
        let Some(input) = self.input_at else { return };
        let bound = (input + SUGGEST_WAIT).min(self.deadline);
        let start = Instant::now();
        while Instant::now() < bound {
            if self.dialog_open().is_some() || self.link_lost().is_some() {
                return;
            }
            let Some(v) = self.read_tracker().await else { return };
            self.note_announcements(&v);
            if v[0].as_f64().is_some_and(|q| q < start.elapsed().as_secs_f64() * 1000.0) {
                // The page changed since the settle ended: let it finish rendering.
                self.settle(QUIET_EXPECTING_MS).await;
                return;
            }
            tokio::time::sleep(Duration::from_millis(15)).await;
        }
    }

    /// Keeps the live-region and toast texts a tracker read brought (once each).
    fn note_announcements(&mut self, v: &Value) {
        for a in v[1].as_array().into_iter().flatten() {
            if let Some(s) = a.as_str()
                && !self.announced.iter().any(|x| x == s)
            {
                self.announced.push(s.to_owned());
            }
        }
    }

    /// Reads the tracker once the page has rendered a frame since its last DOM change ([`TRACKER_READ_FRAMED`]), or
    /// reads it as it is when that takes longer than `bound`.
    async fn read_tracker_framed(&self, bound: Duration) -> Option<Value> {
        let framed = world::eval(self.p, self.tab, &self.session, TRACKER_READ_FRAMED, self.deadline);
        match tokio::time::timeout(bound, framed).await {
            Ok(Ok(v)) if !v.is_null() => Some(v),
            _ => self.read_tracker().await,
        }
    }

    /// Waits for DOM quiet (or the load after a navigation), bounded.
    pub(super) async fn settle(&mut self, quiet_ms: f64) {
        let start = Instant::now();
        let max = (start + MAX_SETTLE).min(self.deadline);
        // Set when the page changed and has not rendered a frame since: the next read waits for that frame, at most
        // this long (the quiet time that ends the window without one).
        let mut frame_bound: Option<Duration> = None;
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
            let mut framed = false;
            let quiet = if pending_load {
                None
            } else {
                let read = match frame_bound.take() {
                    Some(bound) => self.read_tracker_framed(bound).await,
                    None => self.read_tracker().await,
                };
                match read {
                    Some(v) => {
                        self.note_announcements(&v);
                        framed = v[2].as_bool() == Some(true);
                        let q = v[0].as_f64();
                        // The last DOM change came after the input began when the quiet time is shorter than the
                        // time since then (the settle starts right after the dispatch).
                        if let Some(q) = q {
                            let since_input = start.elapsed().as_secs_f64() * 1000.0 + self.res.timings.dispatch;
                            let changed = q < since_input;
                            self.dom_changed = Some(self.dom_changed.unwrap_or(false) || changed);
                        }
                        q
                    }
                    None => None,
                }
            };
            let limit = if pending_load { self.deadline } else { max };
            // Quiet counts from the dispatch at the latest, so late effects (timers, toasts) still land.
            let quiet = quiet.map(|q| q.min(start.elapsed().as_secs_f64() * 1000.0));
            // Once the page has answered the input (its DOM changed since), the shorter quiet of an expectation is
            // enough to let the answer finish; a page that has shown nothing yet gets the whole window, so an
            // answer that comes a little later (a timer, a local fetch) is still seen before `effects` says none.
            // Once it has also rendered a frame since its last change, what the answer scheduled has run.
            let changed = self.dom_changed == Some(true);
            let needed = match (changed, framed) {
                (true, true) => quiet_ms.min(QUIET_FRAMED_MS),
                (true, false) => quiet_ms.min(QUIET_EXPECTING_MS),
                (false, _) => quiet_ms,
            };
            if let Some(q) = quiet
                && q >= needed
            {
                return;
            }
            if Instant::now() >= limit {
                return;
            }
            // A changed page that has not rendered a frame since is read again the moment it has (its frame may come
            // before the quiet time is up); one that has is read again when its quiet time is up.
            let wait = match quiet {
                None => 15.0,
                Some(q) if changed && !framed => {
                    let bound = Duration::from_secs_f64((needed - q).max(1.0) / 1000.0);
                    frame_bound = Some(bound.min(limit.saturating_duration_since(Instant::now())));
                    continue;
                }
                Some(q) if changed => (needed - q).max(0.5),
                Some(q) => (needed - q).clamp(3.0, 40.0),
            };
            tokio::time::sleep(Duration::from_secs_f64(wait / 1000.0)).await;
        }
    }

    /// When the input changed the page and set something on its way out (a menu or dialog fading before it is
    /// removed, see [`EXITS_RUNNING`]): waits, bounded, for that to end and the DOM to be quiet, so the effects and
    /// the next observation say what the page settles on, not a frame of its transition. Once per action.
    pub(super) async fn await_exits(&mut self) {
        if self.exits_awaited || self.dom_changed != Some(true) {
            return;
        }
        self.exits_awaited = true;
        let bound = (Instant::now() + EXIT_WAIT).min(self.deadline);
        // What ended may set off the next step, looked for again within the same bound: Bootstrap shows its modal
        // once the backdrop has faded in, and fades the backdrop out once the modal has faded out.
        for _ in 0..4 {
            let mut waited = false;
            while Instant::now() < bound {
                if self.dialog_open().is_some() || self.link_lost().is_some() {
                    return;
                }
                let running = world::eval(self.p, self.tab, &self.session, EXITS_RUNNING, self.deadline).await;
                if !matches!(running, Ok(Value::Bool(true))) {
                    break;
                }
                waited = true;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            if !waited {
                return;
            }
            // A transition or animation that has just ended leaves the page's animations a frame before its
            // `transitionend` / `animationend` handlers run, and those remove what faded out (a menu's invisible
            // backdrop, still over the page meanwhile: seen in a loaded run, every line `covered`).
            let frames = world::eval(self.p, self.tab, &self.session, AFTER_TWO_FRAMES, self.deadline);
            let _ = tokio::time::timeout(EXIT_EVENTS_WAIT, frames).await;
            self.settle(QUIET_EXPECTING_MS).await;
            if Instant::now() >= bound {
                return;
            }
        }
    }

    /// The effect summary, unless the link went away or a JavaScript dialog holds the page; a failure to observe is
    /// said in the result's message.
    pub(super) async fn take_effects(&mut self) {
        if self.link_lost().is_none()
            && self.dialog_open().is_none()
            && let Err(e) = self.effects_snapshot().await
        {
            self.res.message.get_or_insert_with(|| format!("effects could not be observed: {}", e.message));
        }
    }

    /// Observes the page for the effect summary, storing a new revision.
    pub(super) async fn effects_snapshot(&mut self) -> Result<(), ProviderError> {
        let o0 = Instant::now();
        let built = build(
            self.p,
            self.tab,
            None,
            browserd_protocol::DEFAULT_MAX_NODES,
            crate::observe::Budget::default(),
            self.deadline,
        )
        .await?;
        {
            let mut st = self.p.st();
            if let Some(t) = st.tabs.get_mut(&self.tab) {
                t.push_revision(built.revision());
            }
        }
        if let Some(base) = &self.baseline {
            let (added, removed) = diff(base, &built.lines, &built.behind_modal);
            // A ref shown before whose line changed is `updated`, not new: `button "Account" expanded` beside the
            // menu it opened. A modal's backdrop changes every line behind it to `covered`; those say nothing the
            // dialog under `appeared` does not.
            let page = base.page_behind();
            let before: std::collections::HashMap<&str, &str> = page
                .iter()
                .chain(&base.lines)
                .filter_map(|l| Some((l.node_ref.as_deref()?, l.text.as_str())))
                .collect();
            let (mut appeared, mut updated) = (Vec::new(), Vec::new());
            for l in added.iter() {
                let Some(r) = l.node_ref.as_deref() else { continue };
                match before.get(r) {
                    None => appeared.push(l.text.clone()),
                    Some(old) if !same_but_cover_or_focus(old, &l.text) => updated.push(l.text.clone()),
                    Some(_) => {}
                }
            }
            self.res.effects.appeared = appeared.into_iter().take(15).collect();
            self.res.effects.updated = updated.into_iter().take(10).collect();
            // A container's bare header (`status:`, `popup:`) says nothing the lines under it do not.
            let bare_header = |i: usize, l: &crate::state::Line| {
                crate::observe::is_bare_container(&l.text) && added.get(i + 1).is_some_and(|n| n.indent > l.indent)
            };
            self.res.effects.changed = added
                .iter()
                .enumerate()
                .filter(|(i, l)| l.node_ref.is_none() && !l.text.trim().is_empty() && !bare_header(*i, l))
                .take(10)
                .map(|(_, l)| l.text.clone())
                .collect();
            self.res.effects.disappeared = removed.into_iter().take(30).map(NodeRef).collect();
        }
        self.res.effects.focused = built.focused.as_ref().and_then(|f| {
            built.lines.iter().find(|l| l.node_ref.as_deref() == Some(f.as_str())).map(|l| l.text.clone())
        });
        self.last_built = Some(built);
        self.res.timings.observe += ms(o0.elapsed());
        Ok(())
    }

    pub(super) fn log_effects(&mut self) {
        let (evs, url) = {
            let st = self.p.st();
            (st.log_since(self.tab, self.seq0), st.tabs.get(&self.tab).map(|t| t.url.clone()))
        };
        let mut downloads: Vec<(String, DownloadInfo)> = Vec::new();
        let e = &mut self.res.effects;
        e.console_errors.clear();
        e.tabs_opened.clear();
        e.tabs_closed.clear();
        e.blocked.clear();
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
                LogEvent::Blocked(origin) => {
                    if !e.blocked.contains(&origin) {
                        e.blocked.push(origin);
                    }
                }
                LogEvent::Loaded | LogEvent::DialogClosed => {}
            }
        }
        if e.navigated.is_some() {
            e.navigated = url;
        }
        e.downloads = downloads.into_iter().map(|(_, d)| d).collect();
        e.announced = self.announced.iter().take(5).cloned().collect();
    }
}

/// Whether two lines of one ref differ only in being `covered` (a backdrop came or went over it) or `focused` (which
/// `effects.focused` tells): states the input did not change on the element itself.
fn same_but_cover_or_focus(old: &str, new: &str) -> bool {
    let strip = |s: &str| {
        s.split(' ')
            .filter_map(|w| match w {
                "covered" | "focused" => None,
                "covered:" | "focused:" => Some(":"),
                w => Some(w),
            })
            .collect::<Vec<_>>()
            .join(" ")
            .replace(" :", ":")
    };
    strip(old) == strip(new)
}
