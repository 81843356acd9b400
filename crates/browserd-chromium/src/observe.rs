//! Observation: the accessibility tree of every frame merged with a DOM snapshot (identity, geometry, clickability),
//! rendered as compact lines with stable, document-bound refs; budgets, region expansion, diffs and staleness checks.
//! A session's accessibility trees are reused while its page state (DOM snapshot + focus and script-set states) is
//! unchanged.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::hash::{Hash as _, Hasher as _};
use std::sync::Arc;
use std::time::Instant;

use browserd_cdp::SessionId;
use browserd_core::provider::{ProviderError, ProviderErrorKind, TabHandle};
use browserd_protocol::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_NODES, DEFAULT_WINDOW_LIMIT, FrameSummary, NodeRef, Observation, ObservationDiff,
    ObserveParams, StaleReason, Truncation, WindowShown,
};
use futures_util::future::join_all;
use serde_json::{Value, json};

pub(crate) use crate::ax::AxCache;
use crate::ax::{AxNode, AxTree, Entry, Refresh, SubtreeRead};
use crate::provider::{ChromiumProvider, cdp_err, gone, truncate};
use crate::state::{Line, NodeFacts, RefTable};

const INTERACTIVE: &[&str] = &[
    "button",
    "link",
    "textbox",
    "searchbox",
    "checkbox",
    "radio",
    "combobox",
    "listbox",
    "option",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "tab",
    "switch",
    "slider",
    "spinbutton",
    "treeitem",
    "ListBoxOption",
    "MenuListOption",
    "DisclosureTriangle",
    "PopUpButton",
    "ToggleButton",
];

const STRUCTURAL: &[&str] = &[
    "main",
    "navigation",
    "banner",
    "contentinfo",
    "complementary",
    "region",
    "form",
    "search",
    "dialog",
    "alertdialog",
    "alert",
    "status",
    "table",
    "grid",
    "treegrid",
    "menu",
    "menubar",
    "tablist",
    "tree",
    "toolbar",
    "radiogroup",
    "group",
    "row",
    "list",
];

/// Roles whose name is built from their content, so their text is not repeated.
const NAME_FROM_CONTENT: &[&str] =
    &["heading", "row", "link", "button", "option", "tab", "menuitem", "treeitem", "cell"];

/// The attributes the renderer reads; the others are not copied out of the snapshot.
const KEPT_ATTRS: &[&str] = &[
    "href",
    "type",
    "tabindex",
    "contenteditable",
    "maxlength",
    "placeholder",
    "aria-posinset",
    "aria-setsize",
    "aria-rowindex",
    "aria-rowcount",
];

/// Roles of the tables and lists a windowed read (`ObserveParams::window`) reads.
const COLLECTION_ROLES: &[&str] = &["table", "grid", "treegrid", "list", "listbox", "tree"];

/// Roles that are the rows or items of a windowed read (`ObserveParams::window`).
const ITEM_ROLES: &[&str] = &["row", "listitem", "option", "treeitem", "ListBoxOption", "MenuListOption"];

/// A windowed read in progress: which items of the `within` node are shown.
#[derive(Debug, Default)]
struct WindowState {
    offset: u32,
    limit: u32,
    /// Items met so far, in document order.
    met: u32,
    /// Index of the first item shown and how many were shown.
    first: Option<u32>,
    shown: u32,
    /// An item past the window is in the document.
    after: bool,
    /// Highest index met, +1.
    end: u32,
    /// Item indexes came from the page (`aria-posinset`/`aria-rowindex`): a virtual list.
    indexed: bool,
    /// `aria-setsize` of the items, or `aria-rowcount` of the container.
    total: Option<u32>,
    /// Depth inside a shown item (its own rows/items are not counted again).
    inside: u32,
}

/// A DOM node's facts from the snapshot.
#[derive(Debug, Default, Clone)]
pub(crate) struct DomNode {
    pub(crate) tag: String,
    pub(crate) attrs: Vec<(String, String)>,
    pub(crate) clickable: bool,
    pub(crate) pointer: bool,
    pub(crate) parent_pointer: bool,
    pub(crate) content_frame: Option<String>,
}

impl DomNode {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Parses `DOMSnapshot.captureSnapshot` into per-frame node maps.
fn parse_snapshot(v: &Value) -> HashMap<String, HashMap<i64, DomNode>> {
    let strings: Vec<&str> = v["strings"].as_array().into_iter().flatten().map(|s| s.as_str().unwrap_or("")).collect();
    let s = |i: &Value| {
        i.as_i64().and_then(|i| usize::try_from(i).ok()).and_then(|i| strings.get(i).copied()).unwrap_or("")
    };
    let docs = v["documents"].as_array().cloned().unwrap_or_default();
    let frame_ids: Vec<String> = docs.iter().map(|d| s(&d["frameId"]).to_owned()).collect();
    let mut out = HashMap::new();
    for (di, d) in docs.iter().enumerate() {
        let n = &d["nodes"];
        let backend = n["backendNodeId"].as_array().cloned().unwrap_or_default();
        let count = backend.len();
        let names = n["nodeName"].as_array().cloned().unwrap_or_default();
        let parents = n["parentIndex"].as_array().cloned().unwrap_or_default();
        let attrs = n["attributes"].as_array().cloned().unwrap_or_default();
        let mut nodes: Vec<DomNode> = (0..count)
            .map(|i| DomNode {
                tag: names.get(i).map(|x| s(x).to_ascii_lowercase()).unwrap_or_default(),
                attrs: attrs
                    .get(i)
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.chunks(2)
                            .filter(|c| c.len() == 2 && KEPT_ATTRS.contains(&s(&c[0])))
                            .map(|c| (s(&c[0]).to_owned(), s(&c[1]).to_owned()))
                            .collect()
                    })
                    .unwrap_or_default(),
                ..Default::default()
            })
            .collect();
        for i in n["isClickable"]["index"].as_array().into_iter().flatten().filter_map(Value::as_u64) {
            if let Some(node) = nodes.get_mut(usize::try_from(i).unwrap_or(usize::MAX)) {
                node.clickable = true;
            }
        }
        let cd = &n["contentDocumentIndex"];
        for (i, doc) in cd["index"].as_array().into_iter().flatten().zip(cd["value"].as_array().into_iter().flatten()) {
            if let (Some(i), Some(doc)) = (i.as_u64(), doc.as_u64())
                && let Some(node) = nodes.get_mut(usize::try_from(i).unwrap_or(usize::MAX))
            {
                node.content_frame = frame_ids.get(usize::try_from(doc).unwrap_or(usize::MAX)).cloned();
            }
        }
        let layout = &d["layout"];
        let mut pointer = vec![false; count];
        for (ni, st) in
            layout["nodeIndex"].as_array().into_iter().flatten().zip(layout["styles"].as_array().into_iter().flatten())
        {
            if let Some(ni) = ni.as_u64().and_then(|x| usize::try_from(x).ok())
                && ni < count
            {
                pointer[ni] = st.get(0).map(&s) == Some("pointer");
            }
        }
        let mut map = HashMap::with_capacity(count);
        for (i, mut node) in nodes.into_iter().enumerate() {
            node.pointer = pointer[i];
            node.parent_pointer = parents
                .get(i)
                .and_then(Value::as_i64)
                .and_then(|p| usize::try_from(p).ok())
                .is_some_and(|p| pointer.get(p).copied().unwrap_or(false));
            if let Some(b) = backend.get(i).and_then(Value::as_i64) {
                map.insert(b, node);
            }
        }
        out.insert(frame_ids[di].clone(), map);
    }
    out
}

/// What the accessibility tree depends on that a DOM snapshot does not show: the focused element (per document and
/// open shadow root), and elements in states set by script without an attribute (indeterminate, invalid, open
/// popover, modal). An in-process frame whose document cannot be read while it holds the focus makes the state
/// unique, so nothing is reused for it. Returned as `[document.readyState, location.href, signature]`: the first two
/// tell whether the document is ready to be observed (no extra round trip for it), only the signature is state.
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
  return [document.readyState, location.href, out.join(' ')];
})()";

/// The isolated world [`PAGE_STATE`] runs in: page scripts can neither see nor patch what runs there.
const STATE_WORLD: &str = "browserd-observe";

/// What reading the page state needs: the connection and the records (owned, so a check can finish after the
/// observation has returned).
#[derive(Clone)]
struct StateReader {
    cdp: browserd_cdp::Cdp,
    state: Arc<std::sync::Mutex<crate::state::State>>,
    tab: TabHandle,
    deadline: Instant,
}

impl StateReader {
    fn new(p: &ChromiumProvider, tab: TabHandle, deadline: Instant) -> Self {
        Self { cdp: p.cdp.clone(), state: Arc::clone(&p.state), tab, deadline }
    }

    fn st(&self) -> std::sync::MutexGuard<'_, crate::state::State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn call(&self, session: &SessionId, method: &str, params: Value) -> Result<Value, browserd_cdp::CdpError> {
        self.cdp.call(Some(session), method, params, self.deadline.saturating_duration_since(Instant::now())).await
    }

    /// The execution context of [`STATE_WORLD`] in a session's top document, made once per document.
    async fn world(&self, session: &SessionId) -> Option<i64> {
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
    async fn read(&self, session: &SessionId) -> Result<PageState, browserd_cdp::CdpError> {
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
            json!({"computedStyles": ["cursor", "visibility"], "includeDOMRects": false}),
        );
        let (signature, snapshot) = tokio::join!(signature, snapshot);
        let snapshot = snapshot?;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        hash_value(&snapshot, &mut h);
        let value = signature.as_ref().map(|v| &v["result"]["value"]);
        let signature: Option<Arc<str>> = value.and_then(|v| v[2].as_str()).map(Arc::from);
        let document = value.and_then(|v| Some((v[0].as_str()?.to_owned(), v[1].as_str()?.to_owned())));
        match &signature {
            Some(s) => s.hash(&mut h),
            // No signature (e.g. a context being replaced): a state no other read has.
            None => Instant::now().hash(&mut h),
        }
        Ok(PageState { snapshot, digest: h.finish(), signature, document })
    }

    /// The backend node id of the element that has the focus in a session's documents (through open shadow roots
    /// and same-process frames), read in [`STATE_WORLD`].
    async fn focused(&self, session: &SessionId) -> Option<i64> {
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
    async fn confirm(self, session: SessionId, ids: Vec<String>, entry: Entry) {
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
struct PageState {
    snapshot: Value,
    digest: u64,
    signature: Option<Arc<str>>,
    /// The top document's `readyState` and URL (`None` when the state could not be read).
    document: Option<(String, String)>,
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
fn session_key(digest: u64, frame_ids: &[String], epochs: &HashMap<String, u64>) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    digest.hash(&mut h);
    for id in frame_ids {
        id.hash(&mut h);
        epochs.get(id).hash(&mut h);
    }
    h.finish()
}

/// What one node looked like (for expectations).
#[derive(Debug, Clone)]
pub(crate) struct NodeSummary {
    pub(crate) node_ref: String,
    pub(crate) role: String,
    pub(crate) name: String,
    pub(crate) states: Vec<String>,
}

/// An observation before it becomes wire data.
#[derive(Debug, Default)]
pub(crate) struct Built {
    pub(crate) lines: Vec<Line>,
    pub(crate) node_count: u32,
    pub(crate) truncated: Option<Truncation>,
    pub(crate) focused: Option<String>,
    pub(crate) modal: Option<String>,
    pub(crate) title: String,
    pub(crate) nodes: Vec<NodeSummary>,
    pub(crate) frames: Vec<FrameSummary>,
    pub(crate) url: String,
    /// The items a windowed read showed.
    pub(crate) window: Option<WindowShown>,
    /// The main document was ready to be observed: loaded past `loading`, and not the initial blank document of a
    /// tab that is opening a page (see [`note_document`]).
    pub(crate) ready: bool,
}

struct FrameMeta {
    key: u32,
    epoch: u64,
    url: String,
}

struct Renderer<'a> {
    frames: &'a HashMap<String, FrameMeta>,
    docs: &'a HashMap<String, HashMap<i64, DomNode>>,
    axs: &'a HashMap<String, Arc<AxTree>>,
    owners: &'a HashMap<(String, i64), String>,
    refs: &'a mut RefTable,
    origin: String,
    out: Built,
    pending: String,
    pending_indent: u16,
    bytes: usize,
    max_nodes: u32,
    max_bytes: usize,
    omitted: u32,
    bytes_full: bool,
    containers: Vec<(String, i64)>,
    expand: Vec<(String, i64)>,
    context: Vec<String>,
    /// Interactive lines, in order.
    inter: Vec<Operable>,
    /// Depth of table rows being rendered (their cells share one line, joined with ` | `).
    row_depth: u32,
    /// Depth of operable ancestors (heuristic clickables inside them get no ref of their own).
    in_operable: u32,
    /// Whether a node has a semantic operable node below it (memo).
    below: std::cell::RefCell<HashMap<(String, String), bool>>,
    /// A windowed read of `within` (`None`: every item).
    window: Option<WindowState>,
    /// Tables and lists being walked, innermost last.
    collections: Vec<(String, i64)>,
}

/// An interactive line, for disambiguation.
struct Operable {
    /// Index in `Built::lines`.
    line: usize,
    role: String,
    name: String,
    /// Context chain, outermost first: the quoted names of the rows, items, containers and headings around it.
    context: Vec<String>,
    /// Where the line's value (`: Draft`) starts in its text (its length when it has none): context is inserted
    /// there, so the value, which may hold any text, always ends the line.
    tail: usize,
}

impl Operable {
    /// Adds `extra` (` (in …)`) to the line, before its value.
    fn annotate(&mut self, lines: &mut [Line], extra: &str) {
        lines[self.line].text.insert_str(self.tail, extra);
        self.tail += extra.len();
    }
}

fn quote(s: &str, max: usize) -> String {
    let clean: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("\"{}\"", truncate(&clean, max).replace('"', "\\\""))
}

impl Renderer<'_> {
    fn dom(&self, frame: &str, n: &AxNode) -> Option<&DomNode> {
        n.backend.and_then(|b| self.docs.get(frame).and_then(|d| d.get(&b)))
    }

    fn push(&mut self, indent: u16, node_ref: Option<String>, text: String) -> Option<usize> {
        self.flush_text();
        self.push_raw(indent, node_ref, text)
    }

    fn push_raw(&mut self, indent: u16, node_ref: Option<String>, text: String) -> Option<usize> {
        let size = text.len() + usize::from(indent) * 2 + 1;
        if self.bytes + size > self.max_bytes {
            self.bytes_full = true;
            // Offer the table or list (else the region) that was cut, to read by `within` + `window`.
            if let Some(c) = self.collections.last().or(self.containers.last())
                && !self.expand.contains(c)
            {
                self.expand.push(c.clone());
            }
            return None;
        }
        self.bytes += size;
        self.out.lines.push(Line { indent, node_ref, text });
        Some(self.out.lines.len() - 1)
    }

    fn text(&mut self, indent: u16, t: &str) {
        let t = t.split_whitespace().collect::<Vec<_>>().join(" ");
        if t.is_empty() {
            return;
        }
        if !self.pending.is_empty() && self.pending_indent != indent {
            self.flush_text();
        }
        if self.pending.is_empty() {
            self.pending_indent = indent;
        } else {
            self.pending.push(' ');
        }
        self.pending.push_str(&t);
    }

    fn flush_text(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        let t = truncate(pending.trim_end_matches(" |"), 160);
        if !t.is_empty() {
            self.push_raw(self.pending_indent, None, t);
        }
    }

    /// Text of a subtree (for names of generic clickables).
    fn subtree_text(&self, ax: &AxTree, id: &str, out: &mut String) {
        let Some(n) = ax.nodes.get(id) else { return };
        if n.role == "StaticText" {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(n.name.trim());
            return;
        }
        for c in &n.children {
            if out.len() > 80 {
                return;
            }
            self.subtree_text(ax, c, out);
        }
    }

    fn has_operable_descendant(&self, frame: &str, ax: &AxTree, id: &str, depth: u32) -> bool {
        let Some(n) = ax.nodes.get(id) else { return false };
        if depth > 0 && !n.ignored && self.operable(frame, ax, id).is_some_and(|(_, semantic)| semantic) {
            return true;
        }
        if depth >= 40 {
            return false;
        }
        // Memoised per node: nested clickables would otherwise rescan the same subtrees.
        let key = (frame.to_owned(), id.to_owned());
        if let Some(v) = self.below.borrow().get(&key) {
            return *v;
        }
        let v = n.children.iter().any(|c| self.has_operable_descendant(frame, ax, c, depth + 1));
        self.below.borrow_mut().insert(key, v);
        v
    }

    /// Whether a node gets a ref, with the role to show and whether that role is semantic (not a heuristic).
    fn operable(&self, frame: &str, ax: &AxTree, id: &str) -> Option<(String, bool)> {
        let n = ax.nodes.get(id)?;
        let role = n.role.as_str();
        if INTERACTIVE.contains(&role) {
            if matches!(role, "option" | "MenuListOption" | "ListBoxOption")
                && self.dom(frame, n).is_some_and(|d| d.tag == "option")
            {
                // Native options are listed on their select's line and chosen with the `select` action.
                return None;
            }
            let shown = match role {
                "ListBoxOption" | "MenuListOption" => "option",
                "PopUpButton" => "combobox",
                "ToggleButton" => "button",
                "DisclosureTriangle" => "button",
                r => r,
            };
            return Some((shown.to_owned(), true));
        }
        if matches!(role, "RootWebArea" | "StaticText" | "InlineTextBox" | "Iframe" | "LineBreak" | "WebArea") {
            return None;
        }
        let dom = self.dom(frame, n);
        let editable = n.prop("editable").and_then(Value::as_str).is_some_and(|e| e == "richtext" || e == "plaintext");
        if editable && dom.is_some_and(|d| d.attr("contenteditable").is_some()) {
            return Some(("textbox".to_owned(), true));
        }
        let d = dom?;
        if matches!(d.tag.as_str(), "html" | "body" | "iframe" | "label") {
            return None;
        }
        if d.attr("tabindex").is_some_and(|t| t.trim().parse::<i32>().is_ok_and(|t| t >= 0)) {
            return Some(("focusable".to_owned(), false));
        }
        if d.clickable || (d.pointer && !d.parent_pointer) {
            return Some(("clickable".to_owned(), false));
        }
        None
    }

    fn states(&self, n: &AxNode, role: &str, dom: Option<&DomNode>) -> Vec<String> {
        let mut s = Vec::new();
        if let Some(c) = n.prop("checked") {
            let v = c.as_str().map(str::to_owned).unwrap_or_else(|| c.to_string());
            s.push(match v.as_str() {
                "true" => "checked".to_owned(),
                "mixed" => "mixed".to_owned(),
                _ => "unchecked".to_owned(),
            });
        }
        if let Some(p) = n.prop("pressed")
            && (p.as_str() == Some("true") || p.as_bool() == Some(true))
        {
            s.push("pressed".into());
        }
        if role == "treeitem" {
            s.push(if n.prop("expanded").is_some() { "branch" } else { "leaf" }.into());
        }
        if let Some(e) = n.prop("expanded") {
            s.push(if e.as_bool() == Some(true) { "expanded" } else { "collapsed" }.into());
        }
        for (prop, label) in [
            ("selected", "selected"),
            ("disabled", "disabled"),
            ("required", "required"),
            ("focused", "focused"),
            ("readonly", "readonly"),
            ("multiline", "multiline"),
            ("modal", "modal"),
        ] {
            if n.flag(prop) {
                s.push(label.into());
            }
        }
        if n.prop("invalid").and_then(Value::as_str).is_some_and(|v| v != "false") {
            s.push("invalid".into());
        }
        if let Some(d) = dom {
            if role == "textbox" && d.attr("contenteditable").is_some() {
                s.push("richtext".into());
            }
            if let Some(t) = d.attr("type")
                && d.tag == "input"
                && matches!(
                    t,
                    "email"
                        | "password"
                        | "number"
                        | "tel"
                        | "url"
                        | "date"
                        | "time"
                        | "datetime-local"
                        | "month"
                        | "week"
                        | "file"
                        | "color"
                )
            {
                s.push(format!("type={t}"));
            }
            if let Some(m) = d.attr("maxlength") {
                s.push(format!("maxlength={m}"));
            }
        }
        s
    }

    /// Walks a node, leaving out the rows/items outside the window of a windowed read, and keeping track of the
    /// tables and lists it is in (what a cut by the byte budget offers to expand).
    fn walk(&mut self, frame: &str, id: &str, indent: u16, named: bool) {
        let collection =
            self.axs.get(frame).and_then(|ax| ax.nodes.get(id)).and_then(|n| {
                (!n.ignored && COLLECTION_ROLES.contains(&n.role.as_str())).then_some(n.backend).flatten()
            });
        match collection {
            Some(b) => {
                self.collections.push((frame.to_owned(), b));
                self.walk_windowed(frame, id, indent, named);
                self.collections.pop();
            }
            None => self.walk_windowed(frame, id, indent, named),
        }
    }

    fn walk_windowed(&mut self, frame: &str, id: &str, indent: u16, named: bool) {
        if self.window.as_ref().is_some_and(|w| w.inside == 0)
            && let Some(keep) = self.window_item(frame, id)
        {
            if !keep {
                return;
            }
            if let Some(w) = self.window.as_mut() {
                w.inside += 1;
            }
            self.walk_node(frame, id, indent, named);
            if let Some(w) = self.window.as_mut() {
                w.inside -= 1;
            }
            return;
        }
        self.walk_node(frame, id, indent, named);
    }

    /// Whether a node is a row/item of the window (`Some(shown)`), or not an item at all (`None`). Header rows are
    /// always shown and not counted.
    fn window_item(&mut self, frame: &str, id: &str) -> Option<bool> {
        let ax = self.axs.get(frame)?;
        let n = ax.nodes.get(id)?;
        if n.ignored || !ITEM_ROLES.contains(&n.role.as_str()) {
            return None;
        }
        if n.role == "row" && n.children.iter().any(|c| ax.nodes.get(c).is_some_and(|c| c.role == "columnheader")) {
            return Some(true);
        }
        let dom = self.dom(frame, n);
        let attr = |name: &str| dom.and_then(|d| d.attr(name)).and_then(|v| v.trim().parse::<u32>().ok());
        let given = attr("aria-posinset").or_else(|| attr("aria-rowindex")).filter(|i| *i > 0);
        let setsize = attr("aria-setsize");
        let w = self.window.as_mut()?;
        let index = match given {
            Some(i) => {
                w.indexed = true;
                i - 1
            }
            None => w.met,
        };
        w.met += 1;
        w.end = w.end.max(index + 1);
        if setsize.is_some() {
            w.total = setsize;
        }
        let keep = index >= w.offset && index < w.offset.saturating_add(w.limit);
        if keep {
            w.first = Some(w.first.map_or(index, |f| f.min(index)));
            w.shown += 1;
        } else if index >= w.offset {
            w.after = true;
        }
        Some(keep)
    }

    fn walk_node(&mut self, frame: &str, id: &str, indent: u16, named: bool) {
        let Some(ax) = self.axs.get(frame) else { return };
        let Some(n) = ax.nodes.get(id) else { return };
        let children = n.children.clone();
        if n.ignored {
            for c in &children {
                self.walk(frame, c, indent, named);
            }
            return;
        }
        let role = n.role.clone();
        match role.as_str() {
            "InlineTextBox" | "LineBreak" => return,
            "StaticText" => {
                if !named {
                    let name = n.name.clone();
                    self.text(indent, &name);
                }
                return;
            }
            "Iframe" => {
                let child = n.backend.and_then(|b| {
                    self.owners
                        .get(&(frame.to_owned(), b))
                        .cloned()
                        .or_else(|| self.docs.get(frame).and_then(|d| d.get(&b)).and_then(|d| d.content_frame.clone()))
                });
                let label = format!("iframe {}", quote(&n.name, 60));
                match child.filter(|c| self.axs.contains_key(c)) {
                    Some(c) => {
                        let (key, url) = self.frames.get(&c).map_or((0, ""), |f| (f.key, f.url.as_str()));
                        // The frame's URL (as a link's: relative to the page's origin when it shares it).
                        let url = url.strip_prefix(&self.origin).filter(|x| x.starts_with('/')).unwrap_or(url);
                        let src = if url.is_empty() { String::new() } else { format!(" -> {}", truncate(url, 80)) };
                        self.push(indent, None, format!("{label} [f{key}]{src}:"));
                        let root = self.axs[&c].root.clone();
                        if let Some(r) = root {
                            self.walk(&c, &r, indent + 1, false);
                        }
                        self.flush_text();
                    }
                    None => {
                        self.push(indent, None, format!("{label} (not loaded)"));
                    }
                }
                return;
            }
            _ => {}
        }
        if self.dom(frame, n).is_some_and(|d| d.tag == "option") {
            // A native option outside a select (its select lists the others): plain text.
            let name = n.name.clone();
            self.text(indent, &name);
            return;
        }
        let op = self.operable(frame, ax, id);
        // A heuristic operable (focusable, pointer, listener) that contains operable nodes is a container: it keeps
        // a ref (to scroll it or expand it) only when it is focusable or shows a pointer, and its children are listed
        // under it.
        let mut container_ref = None;
        let op = match op {
            Some((shown, false)) if self.in_operable == 0 && self.has_operable_descendant(frame, ax, id, 0) => {
                let d = self.dom(frame, n);
                let keep = d.is_some_and(|d| d.attr("tabindex").is_some() || (d.pointer && !d.parent_pointer));
                if keep && let Some(b) = n.backend {
                    let (key, epoch) = self.frames.get(frame).map_or((0, 0), |m| (m.key, m.epoch));
                    container_ref = Some((self.refs.assign(frame, key, epoch, b), shown));
                }
                None
            }
            Some((_, false)) if self.in_operable > 0 => None,
            o => o,
        };
        if let Some((shown, _)) = op {
            self.interactive(frame, id, indent, &shown);
            return;
        }
        if role == "heading" {
            let level = n.prop("level").and_then(Value::as_u64).unwrap_or(2).clamp(1, 6);
            let text = format!(
                "{} {}",
                "#".repeat(usize::try_from(level).unwrap_or(2)),
                n.name.split_whitespace().collect::<Vec<_>>().join(" ")
            );
            // A heading that only repeats the name of the container just opened (`region "Inbox":`) is left out.
            let label = format!(" {}:", quote(&n.name, 60));
            let repeats = indent > 0
                && self.pending.is_empty()
                && self
                    .out
                    .lines
                    .last()
                    .is_some_and(|l| l.node_ref.is_none() && l.indent + 1 == indent && l.text.ends_with(&label));
            if !repeats {
                self.push(indent, None, truncate(&text, 120));
            }
            let q = quote(&n.name, 40);
            if self.context.last() != Some(&q) {
                self.context.push(q);
            }
            for c in &children {
                self.walk(frame, c, indent + 1, true);
            }
            self.flush_text();
            // A heading stays the context of what follows until the next structural change.
            return;
        }
        if role == "row" && container_ref.is_none() {
            // One line per row: cells joined with ` | `; operable cells get their own lines right after it.
            self.flush_text();
            let ctx_len = self.context.len();
            let mut t = String::new();
            self.first_text(ax, id, &mut t);
            if t.is_empty() {
                t.clone_from(&n.name);
            }
            if !t.trim().is_empty() {
                self.context.push(quote(&t, 40));
            }
            let start = self.out.lines.len();
            let inter_start = self.inter.len();
            self.row_depth += 1;
            for c in &children {
                self.walk(frame, c, indent, false);
            }
            self.row_depth -= 1;
            self.flush_text();
            self.context.truncate(ctx_len);
            self.merge_row(start, inter_start);
            return;
        }
        let structural = container_ref.is_some()
            || (STRUCTURAL.contains(&role.as_str())
                && (!matches!(role.as_str(), "region" | "group" | "list") || !n.name.is_empty()));
        if structural {
            let shown_role = match &container_ref {
                Some((_, shown)) if !STRUCTURAL.contains(&role.as_str()) => shown.clone(),
                _ => role.clone(),
            };
            let mut label = if n.name.is_empty() {
                format!("{shown_role}:")
            } else {
                format!("{shown_role} {}:", quote(&n.name, if role == "row" { 50 } else { 60 }))
            };
            if let Some((r, _)) = &container_ref {
                label = format!("[{r}] {label}");
            }
            if n.flag("modal") && self.out.modal.is_none() {
                self.out.modal = Some(format!("{role} {}", quote(&n.name, 60)));
            }
            let start = self.out.lines.len();
            let start_bytes = self.bytes;
            let idx = self.push(indent, container_ref.as_ref().map(|(r, _)| r.clone()), label);
            let ctx_len = self.context.len();
            if !n.name.is_empty() {
                self.context.push(quote(&n.name, 40));
            }
            if let Some(b) = n.backend {
                self.containers.push((frame.to_owned(), b));
            }
            let named_children = role == "row" && !n.name.is_empty();
            for c in &children {
                self.walk(frame, c, indent + 1, named_children);
            }
            self.flush_text();
            if n.backend.is_some() {
                self.containers.pop();
            }
            self.context.truncate(ctx_len);
            if idx.is_some() && self.out.lines.len() == start + 1 && container_ref.is_none() {
                // Nothing inside: drop the empty container line.
                self.out.lines.truncate(start);
                self.bytes = start_bytes;
            }
            return;
        }
        let ctx_len = self.context.len();
        if matches!(role.as_str(), "listitem" | "article" | "row") {
            let mut t = String::new();
            self.first_text(ax, id, &mut t);
            if !t.is_empty() {
                self.context.push(quote(&t, 40));
            }
        }
        let block = matches!(
            role.as_str(),
            "paragraph"
                | "listitem"
                | "cell"
                | "gridcell"
                | "columnheader"
                | "rowheader"
                | "blockquote"
                | "article"
                | "section"
                | "term"
                | "definition"
        );
        let cell = matches!(role.as_str(), "cell" | "gridcell" | "columnheader" | "rowheader");
        if cell && self.row_depth > 0 {
            if !self.pending.is_empty() && !self.pending.ends_with(" |") {
                self.pending.push_str(" |");
            }
        } else if block {
            self.flush_text();
        }
        let child_named = named || (NAME_FROM_CONTENT.contains(&role.as_str()) && !n.name.is_empty() && role != "cell");
        for c in &children {
            self.walk(frame, c, indent, child_named);
        }
        if block && !(cell && self.row_depth > 0) {
            self.flush_text();
        }
        self.context.truncate(ctx_len);
    }

    /// A row with exactly one operable cell becomes that cell's line, with the other cells as its context:
    /// `[e4] button "Edit" (row: Ann | Active | $12)`.
    fn merge_row(&mut self, start: usize, inter_start: usize) {
        let lines = &self.out.lines[start..];
        if self.inter.len() != inter_start + 1
            || lines.iter().filter(|l| l.node_ref.is_some()).count() != 1
            || lines.iter().any(|l| l.indent != lines[0].indent)
        {
            return;
        }
        let Some(pos) = lines.iter().position(|l| l.node_ref.is_some()) else { return };
        if self.inter[inter_start].line != start + pos {
            return;
        }
        let cells: Vec<&str> = lines.iter().filter(|l| l.node_ref.is_none()).map(|l| l.text.as_str()).collect();
        if cells.is_empty() {
            return;
        }
        let context = truncate(&cells.join(" | "), 120);
        let removed: usize = lines.iter().map(|l| l.text.len() + usize::from(l.indent) * 2 + 1).sum();
        let line = self.out.lines.remove(start + pos);
        self.out.lines.truncate(start);
        self.out.lines.push(line);
        let entry = &mut self.inter[inter_start];
        entry.line = start;
        entry.annotate(&mut self.out.lines, &format!(" (row: {context})"));
        let line = &self.out.lines[start];
        self.bytes = self.bytes.saturating_sub(removed) + line.text.len() + usize::from(line.indent) * 2 + 1;
        // The row text tells it apart from its namesakes in other rows; only identical rows still need context.
        entry.name = format!("{}\u{0}{context}", entry.name);
    }

    /// The first descendant (outside other operable nodes) with a click listener or a pointer cursor.
    fn click_descendant(&self, frame: &str, ax: &AxTree, id: &str, depth: u32) -> Option<i64> {
        let n = ax.nodes.get(id)?;
        if depth > 0 {
            if INTERACTIVE.contains(&n.role.as_str()) {
                return None;
            }
            if let Some(d) = self.dom(frame, n)
                && (d.clickable || (d.pointer && !d.parent_pointer))
            {
                return n.backend;
            }
        }
        if depth > 6 {
            return None;
        }
        n.children.iter().find_map(|c| self.click_descendant(frame, ax, c, depth + 1))
    }

    /// The first text of a subtree outside operable nodes (the label of a list item).
    fn first_text(&self, ax: &AxTree, id: &str, out: &mut String) {
        let Some(n) = ax.nodes.get(id) else { return };
        if !out.is_empty() || INTERACTIVE.contains(&n.role.as_str()) {
            return;
        }
        if n.role == "StaticText" && !n.name.trim().is_empty() {
            out.push_str(n.name.trim());
            return;
        }
        for c in &n.children {
            self.first_text(ax, c, out);
        }
    }

    fn interactive(&mut self, frame: &str, id: &str, indent: u16, shown: &str) {
        let ax = &self.axs[frame];
        let n = &ax.nodes[id];
        let children = n.children.clone();
        if self.out.node_count >= self.max_nodes || self.bytes_full {
            self.omitted += 1;
            if let Some(c) = self.containers.last()
                && !self.expand.contains(c)
            {
                self.expand.push(c.clone());
            }
            return;
        }
        let dom = self.dom(frame, n).cloned();
        let facts = NodeFacts::new(&n.role, &n.name);
        let mut name = n.name.clone();
        if name.trim().is_empty()
            && matches!(shown, "clickable" | "focusable" | "button" | "link" | "textbox")
            && shown != "textbox"
        {
            let mut t = String::new();
            self.subtree_text(ax, id, &mut t);
            name = t;
        }
        let mut states = self.states(n, shown, dom.as_ref());
        if dom.as_ref().is_some_and(|d| d.tag == "select") {
            // A closed native select says nothing by being collapsed; it is operated with the `select` action.
            states.retain(|s| s != "collapsed");
        }
        let meta = self.frames.get(frame);
        let (key, epoch) = meta.map_or((0, 0), |m| (m.key, m.epoch));
        let Some(backend) = n.backend else {
            self.walk_children(frame, &children, indent);
            return;
        };
        let r = self.refs.assign(frame, key, epoch, backend);
        let mut line = format!("[{r}] {shown}");
        if !name.trim().is_empty() {
            line.push(' ');
            line.push_str(&quote(&name, 80));
        }
        for s in &states {
            line.push(' ');
            line.push_str(s);
        }
        let is_password = states.iter().any(|s| s == "type=password");
        let value = n.value.clone();
        // The value ends the line, after everything else (context is inserted before it): `: Draft`.
        let mut value_suffix = String::new();
        let clean_value = value.split_whitespace().collect::<Vec<_>>().join(" ");
        if matches!(shown, "textbox" | "searchbox" | "combobox" | "spinbutton" | "slider")
            && !clean_value.is_empty()
            && value != name
        {
            let v = if is_password { "•••".to_owned() } else { truncate(&clean_value, 60) };
            value_suffix = format!(": {v}");
            states.push(format!("value={value}"));
        } else if shown == "textbox"
            && value.is_empty()
            && name.trim().is_empty()
            && let Some(p) = dom.as_ref().and_then(|d| d.attr("placeholder"))
        {
            let _ = write!(line, " placeholder={}", quote(p, 40));
        }
        if shown == "link"
            && let Some(h) = dom.as_ref().and_then(|d| d.attr("href"))
        {
            let h = h.strip_prefix(&self.origin).filter(|x| x.starts_with('/')).unwrap_or(h);
            let _ = write!(line, " -> {}", truncate(h, 80));
        }
        let is_select = dom.as_ref().is_some_and(|d| d.tag == "select");
        if is_select {
            let mut opts = Vec::new();
            self.collect_options(ax, id, &mut opts);
            if !opts.is_empty() {
                let total = opts.len();
                let shown_opts: Vec<String> = opts.iter().take(10).map(|o| truncate(o, 30)).collect();
                let _ = write!(
                    line,
                    " options=[{}{}]",
                    shown_opts.join("|"),
                    if total > 10 { format!("|+{}", total - 10) } else { String::new() }
                );
            }
        }
        if n.flag("focused") {
            self.out.focused = Some(r.clone());
        }
        if !dom.as_ref().is_some_and(|d| d.clickable || d.pointer) {
            let inner = self.click_descendant(frame, ax, id, 0);
            self.refs.set_click_backend(&r, inner);
        }
        let tail = line.len();
        line.push_str(&value_suffix);
        let context = self.context.clone();
        if let Some(idx) = self.push(indent, Some(r.clone()), line) {
            self.out.node_count += 1;
            self.inter.push(Operable {
                line: idx,
                role: shown.to_owned(),
                name: name.trim().to_owned(),
                context,
                tail,
            });
            self.refs.describe(&r, shown, name.trim(), &states);
            self.refs.observed(&r, facts);
            self.out.nodes.push(NodeSummary {
                node_ref: r,
                role: shown.to_owned(),
                name: name.trim().to_owned(),
                states,
            });
        } else {
            self.omitted += 1;
        }
        if !is_select {
            // Operable things inside operable things (options in a listbox, links in a clickable card).
            self.in_operable += 1;
            self.walk_children(frame, &children, indent + 1);
            self.in_operable -= 1;
        }
    }

    fn walk_children(&mut self, frame: &str, children: &[String], indent: u16) {
        for c in children {
            self.walk(frame, c, indent, true);
        }
    }

    fn collect_options(&self, ax: &AxTree, id: &str, out: &mut Vec<String>) {
        let Some(n) = ax.nodes.get(id) else { return };
        for c in &n.children {
            if let Some(cn) = ax.nodes.get(c) {
                if matches!(cn.role.as_str(), "option" | "MenuListOption" | "ListBoxOption") {
                    out.push(cn.name.clone());
                } else {
                    self.collect_options(ax, c, out);
                }
            }
        }
    }

    /// Adds context to interactive lines of one frame that share a role and name: the nearest context (row, list
    /// item, named container, heading) that no other line of the group shares, `(in "Team lunch")`; else the nearest
    /// with the nearest outer one that together no other line shares, `(in "Invoice 1042" in "Inbox")`; an ordinal
    /// only where no context is enough, `(in "Inbox"; 2 of 3)`. A context is the quoted name (or first text) of its
    /// row, item, container or heading, which the lines above show with their role; contexts are compared as shown,
    /// so two lines never get the same annotation.
    fn disambiguate(&mut self) {
        // Namesakes in different frames are told apart by their refs already: `[f2e1]` is in the frame whose line
        // reads `iframe "…" [f2]`, `[e5]` in the page itself.
        let mut groups: HashMap<(u32, String, String), Vec<usize>> = HashMap::new();
        for (i, o) in self.inter.iter().enumerate() {
            let frame = self.out.lines[o.line].node_ref.as_deref().and_then(crate::state::parse_ref).map(|r| r.frame);
            groups.entry((frame.unwrap_or(0), o.role.clone(), o.name.clone())).or_default().push(i);
        }
        for idxs in groups.values().filter(|g| g.len() > 1) {
            let mut unresolved: HashMap<Option<String>, Vec<usize>> = HashMap::new();
            let mut extras = Vec::new();
            for &i in idxs {
                let chain = &self.inter[i].context;
                let others = || idxs.iter().filter(|&&j| j != i).map(|&j| &self.inter[j].context);
                let unique = chain.iter().rev().find(|c| others().all(|o| !o.contains(c)));
                // Else the nearest context with the nearest outer one that, together, no other line shares.
                let pair = || {
                    let (near, outer) = chain.split_last()?;
                    let far = outer.iter().rev().find(|c| others().all(|o| !(o.contains(near) && o.contains(c))))?;
                    Some(format!("{near} in {far}"))
                };
                match unique.cloned().or_else(pair) {
                    Some(c) => extras.push((i, format!(" (in {c})"))),
                    None => unresolved.entry(chain.last().cloned()).or_default().push(i),
                }
            }
            for (ctx, members) in &unresolved {
                let total = members.len();
                for (nth, &i) in members.iter().enumerate() {
                    let extra = match (ctx, total) {
                        (Some(c), 1) => format!(" (in {c})"),
                        (Some(c), _) => format!(" (in {c}; {} of {total})", nth + 1),
                        (None, _) => format!(" ({} of {})", nth + 1, total),
                    };
                    extras.push((i, extra));
                }
            }
            for (i, extra) in extras {
                self.inter[i].annotate(&mut self.out.lines, &extra);
            }
        }
    }

    /// Drops label text that only repeats the name of the node right after it (or of its container).
    fn drop_label_echoes(&mut self) {
        let lines = std::mem::take(&mut self.out.lines);
        let mut keep = Vec::with_capacity(lines.len());
        let mut removed_before: Vec<usize> = Vec::with_capacity(lines.len());
        let mut removed = 0;
        for (i, l) in lines.iter().enumerate() {
            removed_before.push(removed);
            let echo = l.node_ref.is_none() && !l.text.starts_with('#') && !l.text.ends_with(':') && {
                let q = format!("\"{}\"", l.text.replace('"', "\\\""));
                lines.get(i + 1).is_some_and(|n| n.node_ref.is_some() && n.text.contains(&q))
                    || (i > 0 && lines[i - 1].node_ref.is_none() && lines[i - 1].text.ends_with(&format!("{q}:")))
            };
            if echo {
                removed += 1;
            } else {
                keep.push(l.clone());
            }
        }
        for entry in &mut self.inter {
            entry.line -= removed_before[entry.line];
        }
        self.out.lines = keep;
    }
}

/// Builds an observation of a tab (records refs; does not store a revision).
pub(crate) async fn build(
    p: &ChromiumProvider,
    tab: TabHandle,
    within: Option<(String, i64)>,
    max_nodes: u32,
    max_bytes: usize,
    deadline: Instant,
) -> Result<Built, ProviderError> {
    build_in(p, tab, within, None, max_nodes, max_bytes, true, deadline).await
}

/// [`build`], showing only the items `offset..offset + limit` of `within` when `window` is given. Unless `force`, a
/// main document that is not ready yet ends the build right after the page-state read, with `ready: false`.
#[allow(clippy::too_many_arguments)]
async fn build_in(
    p: &ChromiumProvider,
    tab: TabHandle,
    within: Option<(String, i64)>,
    window: Option<(u32, u32)>,
    max_nodes: u32,
    max_bytes: usize,
    force: bool,
    deadline: Instant,
) -> Result<Built, ProviderError> {
    let main_session = p.ensure_attached(tab, deadline).await?;
    let (sessions, main_frame) = {
        let st = p.st();
        let t = st.tabs.get(&tab).ok_or_else(|| gone(tab))?;
        if t.dialog.is_some() {
            return Ok(Built { url: t.url.clone(), title: t.title.clone(), ready: true, ..Default::default() });
        }
        let mut sessions: Vec<(SessionId, Vec<String>)> = vec![(main_session.clone(), Vec::new())];
        let mut frames: Vec<(&String, &crate::state::Frame)> = t.frames.iter().collect();
        frames.sort_by_key(|(_, f)| f.key);
        for (id, f) in frames {
            match sessions.iter_mut().find(|(s, _)| *s == f.session) {
                Some((_, ids)) => ids.push(id.clone()),
                None => sessions.push((f.session.clone(), vec![id.clone()])),
            }
        }
        (sessions, t.target_id.clone())
    };
    // Per session: the page-state signature and a DOM snapshot (their digest is the session's state); the OOPIF
    // owners alongside. Accessibility trees are then fetched only for sessions whose state changed since their
    // trees were cached: `Accessibility.getFullAXTree` is most of an observation's cost on a large page.
    let oop: Vec<(String, String, SessionId)> = {
        let st = p.st();
        let t = st.tabs.get(&tab).ok_or_else(|| gone(tab))?;
        t.frames
            .iter()
            .filter(|(_, f)| f.oop)
            .filter_map(|(id, f)| {
                let parent = f.parent.as_ref()?;
                let ps = t.frames.get(parent)?.session.clone();
                Some((id.clone(), parent.clone(), ps))
            })
            .collect()
    };
    let owners_f =
        join_all(oop.iter().map(|(id, _, ps)| p.call(Some(ps), "DOM.getFrameOwner", json!({"frameId": id}), deadline)));
    let t_calls = Instant::now();
    let reader = StateReader::new(p, tab, deadline);
    let states = join_all(sessions.iter().map(|(s, _)| reader.read(s)));
    let (states, owner_res) = tokio::join!(states, owners_f);
    let snap_ms = t_calls.elapsed().as_secs_f64() * 1000.0;
    let epochs: HashMap<String, u64> = {
        let st = p.st();
        let t = st.tabs.get(&tab).ok_or_else(|| gone(tab))?;
        t.frames.iter().map(|(id, f)| (id.clone(), f.doc_epoch)).collect()
    };
    let ready = match states.first() {
        Some(Ok(PageState { document: Some((state, href)), .. })) => note_document(p, tab, state, href),
        _ => false, // A document being replaced: look again.
    };
    if !ready && !force {
        return Ok(Built::default());
    }
    let mut snapshots = Vec::with_capacity(sessions.len());
    let mut misses = Vec::new();
    let mut trees: HashMap<String, Arc<AxTree>> = HashMap::new();
    {
        let mut st = p.st();
        let t = st.tabs.get_mut(&tab).ok_or_else(|| gone(tab))?;
        t.ax_cache.keep_sessions(sessions.iter().map(|(s, _)| s));
        for ((session, ids), state) in sessions.iter().zip(states) {
            let state = state.map_err(|e| cdp_err(&e, "capturing the DOM snapshot"))?;
            let key = session_key(state.digest, ids, &epochs);
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
    }
    // Misses: each frame's tree is brought up to date from the session's cached entry — re-reading only the
    // subtrees whose DOM facts changed — or read whole. The result is cached only once the state, read again after
    // it, is still the one read before it (`StateReader::confirm`): a cached tree always belongs to its key.
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
    let refetch = join_all(misses.iter().zip(&focus).map(|(m, moved)| {
        join_all(m.ids.iter().map(|id| {
            let plan = plan_refresh(m, id, &epochs, moved.as_deref());
            let base = m.base.as_ref().and_then(|b| b.trees.get(id)).cloned();
            read_tree(p, &m.session, id, plan, base, deadline)
        }))
    }))
    .await;
    let ax_ms = t_calls.elapsed().as_secs_f64() * 1000.0;
    let ax_fetched = misses.len();
    let t_render = Instant::now();
    // Large CDP answers are freed off the observation's path.
    let mut garbage = Vec::new();
    for (m, axs) in misses.into_iter().zip(refetch) {
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
    let mut docs = HashMap::new();
    for v in &snapshots {
        docs.extend(parse_snapshot(v));
    }
    garbage.extend(snapshots);
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => drop(rt.spawn_blocking(move || drop(garbage))),
        Err(_) => drop(garbage),
    }
    let mut owners = HashMap::new();
    for ((id, parent, _), r) in oop.iter().zip(owner_res) {
        if let Some(b) = r.ok().and_then(|v| v["backendNodeId"].as_i64()) {
            owners.insert((parent.clone(), b), id.clone());
        }
    }
    let mut st = p.st();
    let t = st.tabs.get_mut(&tab).ok_or_else(|| gone(tab))?;
    t.refs.bind(p.epoch);
    let frames: HashMap<String, FrameMeta> = t
        .frames
        .iter()
        .map(|(id, f)| (id.clone(), FrameMeta { key: f.key, epoch: f.doc_epoch, url: f.url.clone() }))
        .collect();
    let mut summaries: Vec<FrameSummary> = t
        .frames
        .values()
        .map(|f| FrameSummary {
            frame: if f.key == 0 { String::new() } else { format!("f{}", f.key) },
            url: f.url.clone(),
            out_of_process: f.oop,
            document_epoch: f.doc_epoch,
        })
        .collect();
    summaries.sort_by(|a, b| a.frame.len().cmp(&b.frame.len()).then(a.frame.cmp(&b.frame)));
    let url = t.url.clone();
    let origin = origin_of(&url);
    let mut r = Renderer {
        frames: &frames,
        docs: &docs,
        axs: &trees,
        owners: &owners,
        refs: &mut t.refs,
        origin,
        out: Built::default(),
        pending: String::new(),
        pending_indent: 0,
        bytes: 0,
        max_nodes,
        max_bytes,
        omitted: 0,
        bytes_full: false,
        containers: Vec::new(),
        expand: Vec::new(),
        context: Vec::new(),
        inter: Vec::new(),
        in_operable: 0,
        row_depth: 0,
        below: std::cell::RefCell::new(HashMap::new()),
        window: window.map(|(offset, limit)| WindowState { offset, limit: limit.max(1), ..Default::default() }),
        collections: Vec::new(),
    };
    let (start_frame, start_id) = match &within {
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
            (frame.clone(), id)
        }
        None => {
            let root = trees.get(&main_frame).and_then(|t| t.root.clone()).unwrap_or_default();
            (main_frame.clone(), root)
        }
    };
    r.out.title = trees
        .get(&main_frame)
        .and_then(|t| t.root.as_ref().and_then(|root| t.nodes.get(root)))
        .map(|n| n.name.clone())
        .unwrap_or_default();
    r.walk(&start_frame, &start_id, 0, false);
    r.flush_text();
    r.drop_label_echoes();
    r.disambiguate();
    // Context added after budgeting may overflow: trim from the end.
    let mut size: usize = r.out.lines.iter().map(|l| l.text.len() + usize::from(l.indent) * 2 + 1).sum();
    while size > max_bytes {
        let Some(l) = r.out.lines.pop() else { break };
        size -= l.text.len() + usize::from(l.indent) * 2 + 1;
        r.bytes_full = true;
        if let Some(gone) = &l.node_ref {
            r.omitted += 1;
            r.out.node_count = r.out.node_count.saturating_sub(1);
            r.out.nodes.retain(|n| n.node_ref != *gone);
        }
    }
    let omitted = r.omitted;
    let bytes_full = r.bytes_full;
    let expand_nodes = std::mem::take(&mut r.expand);
    let win = r.window.take();
    let mut out = std::mem::take(&mut r.out);
    if let (Some(w), Some((frame, backend))) = (win, &within) {
        let rowcount = docs
            .get(frame)
            .and_then(|d| d.get(backend))
            .and_then(|d| d.attr("aria-rowcount"))
            .and_then(|v| v.trim().parse::<u32>().ok());
        // Without indexes from the page every item is in the document: what was met is all there is.
        let total = w.total.or(rowcount).or((!w.indexed).then_some(w.met));
        let offset = w.first.unwrap_or(w.offset);
        let end = offset + w.shown;
        let truncated = w.after || total.is_some_and(|t| end < t) || (total.is_none() && w.end > end);
        let m = frames.get(frame).map_or((0, 0), |m| (m.key, m.epoch));
        let own = t.refs.assign(frame, m.0, m.1, *backend);
        let of = total.map_or(String::new(), |t| format!(" of {t}"));
        let note = match (w.shown, truncated) {
            (0, _) => format!("… no items at offset {}{of}", w.offset),
            (_, true) => {
                format!("… items {}–{end}{of} shown; next: within={own} window={{\"offset\":{end}}}", offset + 1)
            }
            (_, false) => format!("… items {}–{end}{of} shown", offset + 1),
        };
        out.lines.push(Line { indent: 0, node_ref: None, text: note });
        out.window = Some(WindowShown { offset, count: w.shown, total, truncated });
    }
    if omitted > 0 || bytes_full {
        let mut expand = Vec::new();
        for (frame, backend) in expand_nodes.into_iter().take(8) {
            let m = frames.get(&frame).map_or((0, 0), |m| (m.key, m.epoch));
            expand.push(NodeRef(t.refs.assign(&frame, m.0, m.1, backend)));
        }
        let note = if expand.is_empty() {
            format!("… {omitted} more operable nodes omitted")
        } else {
            format!(
                "… {omitted} more operable nodes omitted; observe with within={} to expand",
                expand.iter().map(NodeRef::as_str).collect::<Vec<_>>().join("|")
            )
        };
        out.lines.push(Line { indent: 0, node_ref: None, text: note });
        out.truncated = Some(Truncation {
            omitted_nodes: omitted,
            reason: if out.node_count >= max_nodes { "maxNodes".into() } else { "maxBytes".into() },
            expand,
        });
    }
    if out.title.is_empty() {
        out.title.clone_from(&t.title);
    }
    out.frames = summaries;
    out.url = url;
    out.ready = ready;
    tracing::debug!(
        snap_ms,
        ax_ms,
        ax_fetched,
        render_ms = t_render.elapsed().as_secs_f64() * 1000.0,
        nodes = out.node_count,
        "observation built"
    );
    Ok(out)
}

/// Records what the main document said of itself and tells whether it is ready to be observed: past `loading`, and
/// not the initial blank document of a tab that is opening a page.
fn note_document(p: &ChromiumProvider, tab: TabHandle, state: &str, href: &str) -> bool {
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
async fn wait_until_ready(p: &ChromiumProvider, tab: TabHandle, stop: Instant) -> Result<(), ProviderError> {
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
const READY_WAIT_CAP: std::time::Duration = std::time::Duration::from_secs(5);
/// How often a document that is not ready is looked at again.
const READY_POLL: std::time::Duration = std::time::Duration::from_millis(15);

/// A session whose trees are not cached for its current state.
struct Miss {
    session: SessionId,
    ids: Vec<String>,
    key: u64,
    signature: Option<Arc<str>>,
    /// The session's cached entry from an earlier state, if any: the base of an incremental refresh.
    base: Option<Entry>,
    /// The DOM facts of the current snapshot.
    facts: Option<Arc<HashMap<String, crate::ax::FrameFacts>>>,
}

/// How one frame of a missed session is brought up to date. `moved`: the elements focus left and reached, when
/// focus is all the page-state signature says changed (`None`: the signature says more, or nothing).
fn plan_refresh(m: &Miss, frame: &str, epochs: &HashMap<String, u64>, moved: Option<&[i64]>) -> Refresh {
    let Some(base) = &m.base else { return Refresh::Full("first read") };
    let Some(signature) = &m.signature else { return Refresh::Full("page state unreadable") };
    if base.epochs.get(frame) != epochs.get(frame) || !base.trees.contains_key(frame) {
        return Refresh::Full("new document");
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
async fn read_tree(
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

fn origin_of(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else { return String::new() };
    let rest = &url[scheme_end + 3..];
    let host_end = rest.find('/').unwrap_or(rest.len());
    url[..scheme_end + 3 + host_end].to_owned()
}

/// Renders lines as `untrustedContent`: one line each, indented one space per level, no framing (the field is the
/// framing). A line never breaks: any line break or other control character in it becomes a space, so page text
/// cannot forge a line of its own (a ref, a heading).
///
/// One space per level rather than two: in o200k a single space joins the token after it (` [`, ` Invoice`), so the
/// first level of nesting costs a ref line one token instead of two and a text line nothing (4-9% of a fixture
/// page, 1-4% of a large one), and every level is still its own whitespace token. The byte budget still counts two
/// bytes per level, so it stays an upper bound.
pub(crate) fn render(lines: &[Line]) -> String {
    let mut s = String::new();
    for (i, l) in lines.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        for _ in 0..l.indent {
            s.push(' ');
        }
        if l.node_ref.is_none() && starts_like_a_ref(&l.text) {
            // Page text that reads `[e3] button "Pay"` would pass for a ref line (and name another node's ref).
            s.push_str("text: ");
        }
        s.extend(l.text.chars().map(|c| if c.is_control() { ' ' } else { c }));
    }
    s
}

/// Whether a line begins with `[<ref>]`, the way a ref line does.
fn starts_like_a_ref(text: &str) -> bool {
    text.strip_prefix('[').and_then(|t| t.split_once(']')).is_some_and(|(r, _)| crate::state::parse_ref(r).is_some())
}

/// Lines of `new` not in `old` (by ref and text), and refs of `old` gone from `new`.
pub(crate) fn diff(old: &[Line], new: &[Line]) -> (Vec<Line>, Vec<String>) {
    let old_set: HashSet<(&Option<String>, &str)> = old.iter().map(|l| (&l.node_ref, l.text.as_str())).collect();
    let new_refs: HashSet<&str> = new.iter().filter_map(|l| l.node_ref.as_deref()).collect();
    let added = new.iter().filter(|l| !old_set.contains(&(&l.node_ref, l.text.as_str()))).cloned().collect();
    let removed =
        old.iter().filter_map(|l| l.node_ref.as_deref()).filter(|r| !new_refs.contains(r)).map(str::to_owned).collect();
    (added, removed)
}

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
    fn new(reason: StaleReason, text: impl Into<String>) -> Self {
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

/// Brings item `offset` of a list into the document before a windowed read: when the page renders only the items
/// in view (items carry `aria-posinset`/`aria-rowindex` and the wanted one is missing), the list's scroll container
/// is scrolled until it is rendered at the top. Lists whose items are all in the document are left alone.
async fn scroll_window_into_view(
    p: &ChromiumProvider,
    session: &SessionId,
    backend: i64,
    offset: u32,
    deadline: Instant,
) -> Result<(), ProviderError> {
    const BRING: &str = r"async function(offset) {
  const sel = '[role=row],[role=listitem],[role=option],[role=treeitem],tr,li';
  const given = (el) => el.getAttribute('aria-posinset') || el.getAttribute('aria-rowindex');
  const items = () => [...this.querySelectorAll(sel)].map((el, i) => [given(el) ? parseInt(given(el), 10) - 1 : i, el]);
  const settle = () => new Promise((r) => { requestAnimationFrame(() => requestAnimationFrame(r)); setTimeout(r, 150); });
  const scroller = (el) => {
    for (let e = el.parentElement; e; e = e.parentElement) {
      const oy = getComputedStyle(e).overflowY;
      if ((oy === 'auto' || oy === 'scroll') && e.scrollHeight > e.clientHeight) return e;
    }
    return document.scrollingElement;
  };
  for (let round = 0; round < 8; round++) {
    const list = items();
    if (!list.length || !list.some(([, el]) => given(el))) return 'static';
    const hit = list.find(([i]) => i === offset);
    const sc = scroller(list[0][1]);
    if (hit) {
      const delta = hit[1].getBoundingClientRect().top - (sc === document.scrollingElement ? 0 : sc.getBoundingClientRect().top);
      if (Math.abs(delta) < 2) return 'shown';
      sc.scrollTop += delta;
      await settle();
      continue;
    }
    const [i0, e0] = list[0];
    const [i1, e1] = list[list.length - 1];
    const h = list.length > 1 && i1 !== i0 ? (e1.getBoundingClientRect().top - e0.getBoundingClientRect().top) / (i1 - i0) : e0.getBoundingClientRect().height;
    if (!(h > 0)) return 'unknown';
    const before = sc.scrollTop;
    sc.scrollTop += (offset - i0) * h;
    if (sc.scrollTop === before) return 'end';
    await settle();
  }
  return 'unknown';
}";
    let obj = p
        .call(
            Some(session),
            "DOM.resolveNode",
            json!({"backendNodeId": backend, "objectGroup": "browserd-window"}),
            deadline,
        )
        .await
        .map_err(|e| cdp_err(&e, "resolving the `within` node"))?;
    let Some(object) = obj["object"]["objectId"].as_str() else {
        return Err(ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            "STALE_TARGET (nodeRemoved): the node of `within` is no longer in the page; observe again",
        ));
    };
    let r = p
        .call(
            Some(session),
            "Runtime.callFunctionOn",
            json!({"objectId": object, "functionDeclaration": BRING, "arguments": [{"value": offset}],
                   "returnByValue": true, "awaitPromise": true}),
            deadline,
        )
        .await;
    let _ =
        p.call(Some(session), "Runtime.releaseObjectGroup", json!({"objectGroup": "browserd-window"}), deadline).await;
    r.map_err(|e| cdp_err(&e, "scrolling the list to the window"))?;
    Ok(())
}

/// `browser_observe`.
pub(crate) async fn observe(
    p: &ChromiumProvider,
    tab: TabHandle,
    params: &ObserveParams,
    deadline: Instant,
) -> Result<browserd_protocol::Observation, ProviderError> {
    if params.within.is_some() && params.since.is_some() {
        return Err(ProviderError::new(ProviderErrorKind::InvalidRequest, "use either `within` or `since`, not both"));
    }
    if params.window.is_some() && params.within.is_none() {
        return Err(ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            "`window` reads rows/items of a region: also pass `within` (the ref of the table, list or its container, \
             e.g. from `truncated.expand`)",
        ));
    }
    let mut within_session = None;
    let within = match &params.within {
        None => None,
        Some(r) => match resolve_ref(p, tab, r.as_str()) {
            Ok(res) => {
                within_session = Some(res.session);
                Some((res.frame_id, res.backend))
            }
            Err(RefError::TabGone) => return Err(gone(tab)),
            Err(RefError::Unknown) => {
                return Err(ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    format!("TARGET_NOT_FOUND: `within` ref {r} was never issued for this tab; observe first"),
                ));
            }
            Err(RefError::Stale(why)) => {
                return Err(ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    format!("STALE_TARGET ({}): `within` ref {r} is stale: {why}; observe again", why.reason.as_str()),
                ));
            }
        },
    };
    let max_nodes = params.max_nodes.unwrap_or(DEFAULT_MAX_NODES).max(1);
    let max_bytes = usize::try_from(params.max_bytes.unwrap_or(DEFAULT_MAX_BYTES)).unwrap_or(usize::MAX).max(512) - 300;
    let window = params.window.map(|w| (w.offset, w.limit.unwrap_or(DEFAULT_WINDOW_LIMIT).clamp(1, max_nodes)));
    if let (Some((offset, _)), Some((_, backend)), Some(session)) = (window, &within, &within_session) {
        scroll_window_into_view(p, session, *backend, offset, deadline).await?;
    }
    // The page-state read of the build also says whether the document is ready: a document still loading (or the
    // initial blank document of an opening tab) is waited for, up to `READY_WAIT_CAP`, then observed as it is.
    let stop = deadline.min(Instant::now() + READY_WAIT_CAP);
    let mut built = build_in(p, tab, within.clone(), window, max_nodes, max_bytes, false, deadline).await?;
    if !built.ready {
        wait_until_ready(p, tab, stop).await?;
        built = build_in(p, tab, within.clone(), window, max_nodes, max_bytes, true, deadline).await?;
    }
    commit_seen(p, tab, &built.nodes);
    let mut obs = Observation {
        window: built.window,
        url: built.url.clone(),
        title: built.title.clone(),
        frames: built.frames.clone(),
        node_count: built.node_count,
        truncated: built.truncated.clone(),
        connection_epoch: p.epoch,
        modal: built.modal.clone(),
        focused: built.focused.clone().map(NodeRef),
        ..Default::default()
    };
    {
        let mut st = p.st();
        let t = st.tabs.get_mut(&tab).ok_or_else(|| gone(tab))?;
        obs.dialog = t.dialog.clone();
        obs.load_state = t.load_state;
        if let Some(d) = &t.dialog {
            // The page is blocked: show the dialog only, and keep the revision history as it was.
            let line = Line {
                indent: 0,
                node_ref: None,
                text: format!("{} dialog {} blocks the page; use the dialog action", d.kind, quote(&d.message, 120)),
            };
            obs.untrusted_content = render(&[line]);
            obs.revision = t.revision;
            obs.cursor = cursor(p, t.revision);
        } else if within.is_some() {
            obs.untrusted_content = render(&built.lines);
            obs.revision = t.revision;
            obs.cursor = cursor(p, t.revision);
        } else {
            let base =
                params.since.as_ref().map(|c| t.revision_lines(p.epoch, c).map(|lines| (c.clone(), lines.to_vec())));
            let rev = t.push_revision(built.lines.clone());
            obs.revision = rev;
            obs.cursor = cursor(p, rev);
            match base {
                Some(Some((since, old))) => {
                    let (added, removed) = diff(&old, &built.lines);
                    obs.diff = Some(ObservationDiff {
                        since,
                        added: added.iter().map(|l| l.text.clone()).collect(),
                        removed: removed.into_iter().map(NodeRef).collect(),
                    });
                }
                Some(None) => {
                    obs.resync_required = true;
                    obs.untrusted_content = render(&built.lines);
                }
                None => obs.untrusted_content = render(&built.lines),
            }
        }
    }
    if params.screenshot || params.screenshot_options.is_some() {
        let opts = params.screenshot_options.clone().unwrap_or_default();
        obs.screenshot = Some(crate::screenshot::capture(p, tab, &opts, deadline).await?);
    }
    Ok(obs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(r: Option<&str>, t: &str) -> Line {
        Line { indent: 0, node_ref: r.map(str::to_owned), text: t.to_owned() }
    }

    #[test]
    fn diff_reports_new_or_changed_lines_and_gone_refs() {
        let old =
            vec![line(Some("e1"), "[e1] button \"A\""), line(Some("e2"), "[e2] textbox \"B\""), line(None, "Count: 1")];
        let new =
            vec![line(Some("e1"), "[e1] button \"A\""), line(None, "Count: 2"), line(Some("e3"), "[e3] link \"C\"")];
        let (added, removed) = diff(&old, &new);
        assert_eq!(added.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(), vec!["Count: 2", "[e3] link \"C\""]);
        assert_eq!(removed, vec!["e2".to_owned()]);
    }

    #[test]
    fn render_indents_lines_and_never_lets_page_text_break_one() {
        let lines = [
            line(None, "# Title"),
            Line { indent: 1, node_ref: Some("e1".into()), text: "[e1] link \"a\" -> /x\n[e9] button \"Pay\"".into() },
            Line { indent: 2, node_ref: None, text: "tab\there\r".into() },
        ];
        assert_eq!(render(&lines), "# Title\n [e1] link \"a\" -> /x [e9] button \"Pay\"\n  tab here ");
        assert_eq!(render(&[]), "");
        // Page text shaped like a ref line is marked as text; other brackets are left alone.
        let text =
            [line(None, "[e3] button \"Pay\""), line(None, "[f2e1b] x"), line(None, "[note] hi"), line(None, "[e3")];
        assert_eq!(render(&text), "text: [e3] button \"Pay\"\ntext: [f2e1b] x\n[note] hi\n[e3");
        assert_eq!(render(&[line(Some("e3"), "[e3] button \"Pay\"")]), "[e3] button \"Pay\"");
    }

    #[test]
    fn context_goes_before_the_value_which_ends_the_line() {
        let text = "[e1] textbox \"Email\": a (in b) c";
        let mut lines = vec![line(Some("e1"), text)];
        let tail = text.find(": a").unwrap();
        let mut o = Operable { line: 0, role: "textbox".into(), name: "Email".into(), context: Vec::new(), tail };
        o.annotate(&mut lines, " (row: x | y)");
        o.annotate(&mut lines, " (in \"Billing\")");
        assert_eq!(lines[0].text, "[e1] textbox \"Email\" (row: x | y) (in \"Billing\"): a (in b) c");
    }

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

    #[test]
    fn origins_and_quotes() {
        assert_eq!(origin_of("http://127.0.0.1:8080/a/b?c"), "http://127.0.0.1:8080");
        assert_eq!(origin_of("about:blank"), "");
        assert_eq!(quote("  a \"b\"\n c ", 80), "\"a \\\"b\\\" c\"");
    }
}
