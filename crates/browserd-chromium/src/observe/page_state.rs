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
/// document.visibilityState]`: the first two tell whether the document is ready to be observed and the last whether
/// its tab is in the background (no extra round trip for either), only the signature is state.
const PAGE_STATE: &str = r"(() => {
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
  return [document.readyState, location.href, out.join(' '), document.visibilityState];
})()";

/// The isolated world [`PAGE_STATE`] runs in: page scripts can neither see nor patch what runs there.
const STATE_WORLD: &str = "browserd-observe";

/// What reading the page state needs: the connection and the records (owned, so a check can finish after the
/// observation has returned).
#[derive(Clone)]
pub(super) struct StateReader {
    cdp: browserd_cdp::Cdp,
    state: Arc<std::sync::Mutex<crate::state::State>>,
    tab: TabHandle,
    deadline: Instant,
}

impl StateReader {
    pub(super) fn new(p: &ChromiumProvider, tab: TabHandle, deadline: Instant) -> Self {
        Self { cdp: p.cdp.clone(), state: Arc::clone(&p.state), tab, deadline }
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
    /// itself (`None` when it could not be read: the state is then unlike any other).
    pub(super) async fn read(&self, session: &SessionId) -> Result<PageState, browserd_cdp::CdpError> {
        let world = self.world(session).await;
        let signature = async {
            let id = world?;
            let expr = json!({"expression": PAGE_STATE, "contextId": id, "returnByValue": true});
            let r = self.call(session, "Runtime.evaluate", expr).await;
            if r.is_err()
                && let Some(t) = self.st().tabs.get_mut(&self.tab)
            {
                t.ax_cache.worlds.remove(session); // Its document is gone: make the world again next time.
            }
            r.ok()
        };
        let snapshot = self.call(
            session,
            "DOMSnapshot.captureSnapshot",
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
            }),
        );
        let (signature, snapshot) = tokio::join!(signature, snapshot);
        let snapshot = snapshot?;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        hash_value(&snapshot, &mut h);
        let value = signature.as_ref().map(|v| &v["result"]["value"]);
        let signature: Option<Arc<str>> = value.and_then(|v| v[2].as_str()).map(Arc::from);
        let document = value.and_then(|v| Some((v[0].as_str()?.to_owned(), v[1].as_str()?.to_owned())));
        let hidden = value.is_some_and(|v| v[3].as_str() == Some("hidden"));
        match &signature {
            Some(s) => s.hash(&mut h),
            // No signature (e.g. a context being replaced): a state no other read has.
            None => Instant::now().hash(&mut h),
        }
        Ok(PageState { snapshot, digest: h.finish(), signature, document, hidden })
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
    pub(super) async fn confirm(self, session: SessionId, ids: Vec<String>, entry: Entry) {
        let Ok(state) = self.read(&session).await else { return };
        drop(state.snapshot);
        if session_key(state.digest, &ids, &entry.epochs) == entry.key
            && let Some(t) = self.st().tabs.get_mut(&self.tab)
        {
            t.ax_cache.put(session, entry);
        }
    }
}

/// What [`StateReader::read`] reads of one session.
pub(super) struct PageState {
    pub(super) snapshot: Value,
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
