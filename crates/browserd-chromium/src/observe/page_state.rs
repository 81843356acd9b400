//! A session's page state, read in browserd's state world (`browserd-observe`): its DOM snapshot and a signature
//! of focus and script-set states, digested into the key its accessibility trees are cached under; and the second
//! read that confirms fresh trees before they are cached.

use std::collections::HashMap;
use std::hash::{Hash as _, Hasher as _};
use std::sync::Arc;
use std::time::Instant;

use browserd_cdp::SessionId;
use browserd_core::provider::TabHandle;
use serde_json::{Value, json};

use crate::ax::Entry;
use crate::provider::ChromiumProvider;

/// What the accessibility tree depends on that a DOM snapshot does not show: the focused element (per document and
/// open shadow root), and elements in states set by script without an attribute (indeterminate, invalid, open
/// popover, modal). An in-process frame whose document cannot be read while it holds the focus makes the state
/// unique, so nothing is reused for it. Returned as `[document.readyState, location.href, signature,
/// document.visibilityState, token]`: the first two tell whether the document is ready to be observed and the fourth
/// whether its tab is in the background (no extra round trip for either), only the signature is state. The token
/// ([`WATCH`]) says whether the DOM snapshot taken at the last token can stand for a new one (`null`: it cannot).
const PAGE_STATE: &str = r"(() => {
  WATCH
  const out = [];
  const idx = (e) => { let i = 0; while ((e = e.previousElementSibling)) i++; return i; };
  const path = (e) => { const p = []; for (; e; e = e.parentElement || (e.parentNode && e.parentNode.host)) p.push(idx(e)); return p.join('.'); };
  const roots = [document];
  for (let k = 0; k < roots.length && k < 4096; k++) {
    const r = roots[k];
    const a = r.activeElement;
    out.push('f' + k + ':' + (a ? path(a) : ''));
    for (const e of r.querySelectorAll(':indeterminate,:invalid,:popover-open,:modal')) out.push('m' + path(e));
    for (const e of r.querySelectorAll('*')) {
      if (e.shadowRoot) roots.push(e.shadowRoot);
      if (e.tagName === 'IFRAME' || e.tagName === 'FRAME') {
        let d = null;
        try { d = e.contentDocument; } catch (_) { d = null; }
        if (d) roots.push(d); else if (a === e) out.push('x' + Math.random());
      }
    }
  }
  return [document.readyState, location.href, out.join(' '), document.visibilityState, token(roots)];
})()";

/// What can change a DOM snapshot, watched in [`STATE_WORLD`] from the document's first observation: every DOM
/// mutation (of the document and of each open shadow root the page-state walk finds), and the events of what
/// changes layout, style or a control's state with none — scrolling, resizing (the window, a video), loads (images,
/// fonts, a video's size), transitions and animations, hover and focus, input, toggles, the URL's fragment. The
/// token is this watcher's id and count, with what script can set unseen by both: each field's value and checked
/// state, the stylesheets' rule counts, the number of animations in effect. `null` while an animation runs or is
/// pending (the page moves with no event), for a document with frames in it (their documents are not watched) or not
/// yet loaded: its snapshot is always taken. An animation that loops for ever and only turns, moves, fades or
/// recolours its element (a loading spinner, a pulsing dot, a skeleton's shimmer) does not count: nothing the
/// snapshot is read for changes with it (only its own box turns), and a page showing one was snapshotted afresh,
/// `<style>` texts and all, at every observation for as long as it spun.
const WATCH: &str = r"
  const w = window.__browserdWatch || (() => {
    const w = { id: Math.random().toString(36).slice(2), n: 0, seen: new WeakSet() };
    const bump = () => { w.n++; };
    w.mo = new MutationObserver(bump);
    w.watch = (r) => { if (!w.seen.has(r)) { w.seen.add(r); w.mo.observe(r, { subtree: true, childList: true, attributes: true, characterData: true }); } };
    for (const t of ['input', 'change', 'scroll', 'scrollend', 'load', 'error', 'transitionrun', 'transitionstart',
      'transitionend', 'transitioncancel', 'animationstart', 'animationend', 'animationcancel', 'animationiteration',
      'pointerover', 'pointerout', 'mouseover', 'mouseout', 'focusin', 'focusout', 'toggle', 'beforematch',
      'fullscreenchange', 'visibilitychange', 'contentvisibilityautostatechange', 'loadedmetadata', 'resize']) {
      document.addEventListener(t, bump, { capture: true, passive: true });
    }
    for (const t of ['resize', 'hashchange', 'popstate', 'pageshow']) window.addEventListener(t, bump, { passive: true });
    if (document.fonts) document.fonts.addEventListener('loadingdone', bump);
    // A looping animation of paint-only properties (see the token).
    const PAINT = /^(offset|easing|composite|computedOffset|transform|rotate|scale|translate|opacity|color|fill|stroke|strokeDash(offset|array)|filter|boxShadow|outlineColor|borderColor|border(Top|Right|Bottom|Left)Color|background(Color|Position|PositionX|PositionY))$/;
    w.decor = (a) => {
      const e = a.effect;
      if (!e || typeof e.getKeyframes !== 'function' || e.getComputedTiming().iterations !== Infinity) return false;
      return e.getKeyframes().every((k) => Object.keys(k).every((p) => PAINT.test(p)));
    };
    window.__browserdWatch = w;
    return w;
  })();
  const token = (roots) => {
    for (const r of roots) if (r !== document && r.host) w.watch(r);
    w.watch(document);
    const anims = document.getAnimations();
    // A watcher an older broker made in this document has no `decor`: every running animation counts there.
    const moving = (a) => (a.pending || a.playState === 'running') && !(w.decor && w.decor(a));
    if (document.readyState !== 'complete' || anims.some(moving) ||
        document.querySelector('iframe,frame,object,embed')) return null;
    let h = 0;
    const mix = (s) => { for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0; h = (h * 31 + 7) | 0; };
    for (const r of roots) {
      for (const e of r.querySelectorAll('input,textarea,select')) {
        mix(e.value || ''); mix(e.checked ? '1' : '0'); mix(String(e.selectedIndex));
      }
    }
    let rules = 0;
    const sheets = [...document.styleSheets, ...(document.adoptedStyleSheets || [])];
    for (const r of roots) if (r !== document && r.adoptedStyleSheets) sheets.push(...r.adoptedStyleSheets);
    for (const sh of sheets) { try { rules += sh.cssRules.length; } catch (_) { rules += 1e6; } }
    return [w.id, w.n, h, rules, anims.length].join(':');
  };
";

/// [`PAGE_STATE`] with [`WATCH`] in it.
fn page_state_script() -> &'static str {
    static SCRIPT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SCRIPT.get_or_init(|| PAGE_STATE.replacen("WATCH", WATCH, 1))
}

/// What the DOM snapshot is asked for: the computed styles the renderer reads, paint order, no text boxes.
fn snapshot_params() -> Value {
    json!({
        "computedStyles": [
            "cursor",
            "visibility",
            "display",
            "position",
            "pointer-events",
            "overflow-y",
            "text-decoration-line",
            "white-space",
            "text-transform",
        ],
        "includeDOMRects": false,
        "includePaintOrder": true,
    })
}

/// The token of a [`PAGE_STATE`] value (its fifth entry; `None` when the snapshot cannot be kept).
fn token_of(value: Option<&Value>) -> Option<String> {
    value.and_then(|v| v[4].as_str().map(str::to_owned))
}

/// Whether a snapshot can be kept for a later read: one document (no frame inside, whose document the watcher does
/// not see) and no closed shadow root (whose mutations it cannot observe).
fn keepable(snapshot: &Value) -> bool {
    let Some([doc]) = snapshot["documents"].as_array().map(Vec::as_slice) else { return false };
    let strings = snapshot["strings"].as_array();
    let closed = doc["nodes"]["shadowRootType"]["value"].as_array().into_iter().flatten().any(|i| {
        let s = i.as_u64().and_then(|i| strings?.get(usize::try_from(i).ok()?)?.as_str());
        s == Some("closed")
    });
    !closed
}

/// The isolated world [`PAGE_STATE`] runs in: page scripts can neither see nor patch what runs there.
const STATE_WORLD: &str = "browserd-observe";

/// What reading the page state needs: the connection and the records (owned, so a check can finish after the
/// observation has returned).
#[derive(Clone)]
pub(super) struct StateReader {
    cdp: browserd_cdp::Cdp,
    state: Arc<std::sync::Mutex<crate::state::State>>,
    counters: Arc<crate::ax::AxCounters>,
    tab: TabHandle,
    deadline: Instant,
}

impl StateReader {
    pub(super) fn new(p: &ChromiumProvider, tab: TabHandle, deadline: Instant) -> Self {
        Self { cdp: p.cdp.clone(), state: Arc::clone(&p.state), counters: Arc::clone(&p.ax_stats), tab, deadline }
    }

    pub(super) fn st(&self) -> std::sync::MutexGuard<'_, crate::state::State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) async fn call(
        &self,
        session: &SessionId,
        method: &str,
        params: Value,
    ) -> Result<Value, browserd_cdp::CdpError> {
        self.cdp.call(Some(session), method, params, self.deadline.saturating_duration_since(Instant::now())).await
    }

    /// The execution context of [`STATE_WORLD`] in a session's top document, made once per document.
    pub(super) async fn world(&self, session: &SessionId) -> Option<i64> {
        let (frame, epoch) = {
            let st = self.st();
            let t = st.tabs.get(&self.tab)?;
            let frame = if t.session.as_ref() == Some(session) {
                t.target_id.clone()
            } else {
                t.children.get(session)?.clone()
            };
            let epoch = t.frames.get(&frame)?.doc_epoch;
            if let Some(id) = t.ax_cache.world(session, epoch) {
                return Some(id);
            }
            (frame, epoch)
        };
        let made = self
            .call(session, "Page.createIsolatedWorld", json!({"frameId": frame, "worldName": STATE_WORLD}))
            .await
            .ok()?;
        let id = made["executionContextId"].as_i64()?;
        if let Some(t) = self.st().tabs.get_mut(&self.tab) {
            t.ax_cache.worlds.insert(session.clone(), (epoch, id));
        }
        Some(id)
    }

    /// One session's page state: its DOM snapshot, a digest of the snapshot and [`PAGE_STATE`], and the signature
    /// itself (`None` when it could not be read: the state is then unlike any other). The snapshot kept from the
    /// last read stands for a new one when the page-state token ([`WATCH`]) is the one it was taken at: then the state
    /// is read first and the snapshot (on a page that inlines its CSS, most of an unchanged observation's cost, the
    /// styles' text being in it) is taken only if the token moved. Otherwise both are asked for together, the state
    /// written first, so its token speaks for the snapshot taken after it.
    pub(super) async fn read(&self, session: &SessionId) -> Result<PageState, browserd_cdp::CdpError> {
        let world = self.world(session).await;
        let kept = self.st().tabs.get(&self.tab).and_then(|t| t.ax_cache.kept.get(session).cloned());
        let expr = world.map(|id| json!({"expression": page_state_script(), "contextId": id, "returnByValue": true}));
        let (value, snapshot, snap_digest) = match (expr, kept) {
            (Some(expr), Some(kept)) => {
                let value = self.state_value(session, self.call(session, "Runtime.evaluate", expr).await);
                let token = token_of(value.as_ref());
                if token.as_deref() == Some(kept.token.as_str()) {
                    self.kept_used();
                    (value, kept.snapshot, kept.digest)
                } else {
                    let snapshot =
                        Arc::new(self.call(session, "DOMSnapshot.captureSnapshot", snapshot_params()).await?);
                    let digest = self.keep(session, token, &snapshot);
                    (value, snapshot, digest)
                }
            }
            (expr, _) => {
                let timeout = self.deadline.saturating_duration_since(Instant::now());
                let state = match expr {
                    Some(e) => Some(self.cdp.enqueue(Some(session), "Runtime.evaluate", e, timeout).await),
                    None => None,
                };
                let snapshot =
                    self.cdp.enqueue(Some(session), "DOMSnapshot.captureSnapshot", snapshot_params(), timeout).await;
                let state = async {
                    match state {
                        Some(Ok(q)) => Some(q.answer().await),
                        Some(Err(e)) => Some(Err(e)),
                        None => None,
                    }
                };
                let snapshot = async { snapshot?.answer().await };
                let (state, snapshot) = tokio::join!(state, snapshot);
                let value = state.and_then(|r| self.state_value(session, r));
                let snapshot = Arc::new(snapshot?);
                let token = token_of(value.as_ref());
                let digest = self.keep(session, token, &snapshot);
                (value, snapshot, digest)
            }
        };
        let mut h = std::collections::hash_map::DefaultHasher::new();
        snap_digest.hash(&mut h);
        let signature: Option<Arc<str>> = value.as_ref().and_then(|v| v[2].as_str()).map(Arc::from);
        let document = value.as_ref().and_then(|v| Some((v[0].as_str()?.to_owned(), v[1].as_str()?.to_owned())));
        let hidden = value.as_ref().is_some_and(|v| v[3].as_str() == Some("hidden"));
        match &signature {
            Some(s) => s.hash(&mut h),
            // No signature (e.g. a context being replaced): a state no other read has.
            None => Instant::now().hash(&mut h),
        }
        Ok(PageState { snapshot, digest: h.finish(), signature, document, hidden })
    }

    /// The value of a [`PAGE_STATE`] read; a failed one forgets the world (its document is gone: it is made again).
    fn state_value(&self, session: &SessionId, r: Result<Value, browserd_cdp::CdpError>) -> Option<Value> {
        if r.is_err()
            && let Some(t) = self.st().tabs.get_mut(&self.tab)
        {
            t.ax_cache.worlds.remove(session);
        }
        r.ok().map(|mut r| r["result"]["value"].take())
    }

    /// Digests a fresh snapshot and keeps it for the next read when its token says it can stand for one (a
    /// document without frames or closed shadow roots, whose changes the watcher cannot see).
    fn keep(&self, session: &SessionId, token: Option<String>, snapshot: &Arc<Value>) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        hash_value(snapshot, &mut h);
        let digest = h.finish();
        if let Some(t) = self.st().tabs.get_mut(&self.tab) {
            match token.filter(|_| keepable(snapshot)) {
                Some(token) => {
                    let kept = crate::ax::KeptSnapshot { token, snapshot: Arc::clone(snapshot), digest };
                    t.ax_cache.kept.insert(session.clone(), kept);
                }
                None => drop(t.ax_cache.kept.remove(session)),
            }
        }
        digest
    }

    fn kept_used(&self) {
        self.counters.snapshots_kept.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The backend node id of the element that has the focus in a session's documents (through open shadow roots
    /// and same-process frames), read in [`STATE_WORLD`].
    pub(super) async fn focused(&self, session: &SessionId) -> Option<i64> {
        let id = self.world(session).await?;
        let expr = json!({"expression": DEEP_FOCUS, "contextId": id, "objectGroup": STATE_WORLD});
        let r = self.call(session, "Runtime.evaluate", expr).await.ok()?;
        let object = r["result"]["objectId"].as_str()?.to_owned();
        let node = self.call(session, "DOM.describeNode", json!({"objectId": object})).await;
        let _ = self.call(session, "Runtime.releaseObject", json!({"objectId": object})).await;
        node.ok()?["node"]["backendNodeId"].as_i64()
    }

    /// Caches freshly read trees once the session's state, read again after them, is still `entry.key`: then no
    /// change happened while they were read. Runs after the observation has returned (it needs nothing from it).
    ///
    /// When the state changed meanwhile but only in the DOM (same script-set state, same documents: boxes that move
    /// under a running animation, a table still laying itself out), the trees are kept as the base of the next
    /// refresh only, never reused as they are: the nodes that changed between the two reads are marked unknown
    /// ([`crate::ax::unconfirmed`]) and read again then. Without it every read of such a page read every tree whole.
    pub(super) async fn confirm(self, session: SessionId, ids: Vec<String>, entry: Entry) {
        let Ok(state) = self.read(&session).await else { return };
        let confirmed = session_key(state.digest, &ids, &entry.epochs) == entry.key;
        let entry = if confirmed {
            drop(state.snapshot);
            entry
        } else {
            if state.signature.as_deref() != Some(&*entry.signature) {
                return;
            }
            let after = crate::ax::snapshot_facts(&state.snapshot);
            drop(state.snapshot);
            let facts = Arc::new(crate::ax::unconfirmed(&entry.facts, &after));
            Entry { key: crate::ax::UNCONFIRMED_KEY, facts, ..entry }
        };
        if let Some(t) = self.st().tabs.get_mut(&self.tab) {
            t.ax_cache.put(session, entry);
        }
    }
}

/// What [`StateReader::read`] reads of one session.
pub(super) struct PageState {
    pub(super) snapshot: Arc<Value>,
    pub(super) digest: u64,
    pub(super) signature: Option<Arc<str>>,
    /// The top document's `readyState` and URL (`None` when the state could not be read).
    pub(super) document: Option<(String, String)>,
    /// The document is hidden (`visibilityState`): a background tab, which runs no rendering steps.
    pub(super) hidden: bool,
}

/// The deepest focused element: `document.activeElement`, then into open shadow roots and same-process frames.
const DEEP_FOCUS: &str = r"(() => {
  let a = document.activeElement;
  for (let i = 0; a && i < 64; i++) {
    if (a.shadowRoot && a.shadowRoot.activeElement) { a = a.shadowRoot.activeElement; continue; }
    if (a.tagName === 'IFRAME' || a.tagName === 'FRAME') {
      let d = null;
      try { d = a.contentDocument; } catch (_) { d = null; }
      if (d && d.activeElement) { a = d.activeElement; continue; }
    }
    break;
  }
  return a;
})()";

/// Digests JSON (object keys in their order; scroll offsets left out: scrolling alone does not change the tree).
fn hash_value(v: &Value, h: &mut impl std::hash::Hasher) {
    match v {
        Value::Null => h.write_u8(0),
        Value::Bool(b) => h.write_u8(if *b { 1 } else { 2 }),
        Value::Number(n) => {
            h.write_u8(3);
            match n.as_i64() {
                Some(i) => h.write_i64(i),
                None => h.write_u64(n.as_f64().unwrap_or_default().to_bits()),
            }
        }
        Value::String(s) => {
            h.write_u8(4);
            s.hash(h);
        }
        Value::Array(a) => {
            h.write_u8(5);
            h.write_usize(a.len());
            for x in a {
                hash_value(x, h);
            }
        }
        Value::Object(o) => {
            h.write_u8(6);
            for (k, x) in o {
                if k == "scrollOffsetX" || k == "scrollOffsetY" {
                    continue;
                }
                k.hash(h);
                hash_value(x, h);
            }
        }
    }
}

/// The cache key of a session's trees: its page state and the documents of its frames.
pub(super) fn session_key(digest: u64, frame_ids: &[String], epochs: &HashMap<String, u64>) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    digest.hash(&mut h);
    for id in frame_ids {
        id.hash(&mut h);
        epochs.get(id).hash(&mut h);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn page_state_digest_ignores_scrolling_only() {
        let digest = |v: Value| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            hash_value(&v, &mut h);
            h.finish()
        };
        let doc = |scroll: i64, value: &str| {
            json!({"documents": [{"scrollOffsetY": scroll, "nodes": {"inputValue": {"index": [3], "value": [0]}}}],
                   "strings": [value]})
        };
        assert_eq!(digest(doc(0, "a")), digest(doc(400, "a")), "scrolling alone keeps the trees");
        assert_ne!(digest(doc(0, "a")), digest(doc(0, "b")), "a changed value does not");
        assert_ne!(digest(json!([1, 2])), digest(json!([2, 1])));
        let epochs = HashMap::from([("main".to_owned(), 1), ("child".to_owned(), 2)]);
        let ids = ["main".to_owned(), "child".to_owned()];
        let moved = HashMap::from([("main".to_owned(), 1), ("child".to_owned(), 3)]);
        assert_ne!(session_key(7, &ids, &epochs), session_key(7, &ids, &moved), "a frame's new document");
        assert_eq!(session_key(7, &ids, &epochs), session_key(7, &ids, &epochs.clone()));
    }
}
