//! Accessibility trees for observation: parsing Chromium's AX nodes, the per-session cache, and the incremental
//! refresh that re-reads only the subtrees whose DOM changed since the cached tree was read.
//!
//! `Accessibility.getFullAXTree` serialises every node of a frame with the sources of its name; on a page with
//! a thousand operable elements that is ~2 000 nodes and ~1 MB of JSON, most of an observation's cost. So each
//! session's trees are kept with the DOM facts ([`FrameFacts`]) of the snapshot they belong to. When the page
//! changed, the new snapshot's facts are compared with the cached ones ([`plan_frame`]): the elements whose own
//! facts or children changed, widened to everything whose accessible name or state can depend on them (the labels
//! around them, the elements that reference them by id, every ancestor), are re-read with
//! `Accessibility.queryAXTree` (their whole subtree) and `Accessibility.getPartialAXTree` (their ancestors and
//! siblings), and merged into a copy of the cached tree ([`merge`]). Anything the comparison cannot bound — a new
//! document, a changed `<style>`/`<head>`, `aria-owns`, script-set states other than focus, a change touching much
//! of the page, a merge that does not close — reads the frame's whole tree again.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash as _, Hasher as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use browserd_cdp::SessionId;
use serde_json::Value;

/// One accessibility node, as the renderer reads it. Ignored nodes keep only their children and DOM node, so a tree
/// read whole and one merged from subtree reads look the same.
#[derive(Debug, Default, Clone)]
pub(crate) struct AxNode {
    pub(crate) ignored: bool,
    /// Ignored because hidden (`aria-hidden`, not rendered, inert): so is everything below it.
    pub(crate) hidden: bool,
    /// Ignored because a modal dialog is open and this node is outside it (inert; its ancestors of the dialog are
    /// too, so unlike `hidden` this says nothing of what is below).
    pub(crate) blocked: bool,
    pub(crate) role: String,
    pub(crate) name: String,
    pub(crate) value: String,
    pub(crate) props: Vec<(String, Value)>,
    pub(crate) children: Vec<String>,
    pub(crate) backend: Option<i64>,
}

impl AxNode {
    pub(crate) fn prop(&self, name: &str) -> Option<&Value> {
        self.props.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
    pub(crate) fn flag(&self, name: &str) -> bool {
        match self.prop(name) {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => s == "true",
            _ => false,
        }
    }
}

/// A frame's accessibility tree.
#[derive(Debug, Default, Clone)]
pub(crate) struct AxTree {
    pub(crate) nodes: HashMap<String, AxNode>,
    pub(crate) root: Option<String>,
    /// Built from the DOM snapshot (`observe::dom_tree`), not read from Chromium: reused while the page state is
    /// unchanged, never the base of an incremental refresh.
    pub(crate) dom_built: bool,
}

/// Ignored reasons that hide a node's whole subtree.
const HIDING: &[&str] =
    &["ariaHiddenElement", "ariaHiddenSubtree", "notRendered", "notVisible", "inertElement", "inertSubtree"];

/// Parses protocol `AXNode`s. Inline text boxes are dropped (never rendered; their static text is), and so are the
/// children of static text (which are only those boxes).
pub(crate) fn parse_nodes(nodes: &[Value]) -> HashMap<String, AxNode> {
    let mut out = HashMap::with_capacity(nodes.len());
    for n in nodes {
        let role = n["role"]["value"].as_str().unwrap_or_default();
        if role == "InlineTextBox" {
            continue;
        }
        let id = n["nodeId"].as_str().unwrap_or_default().to_owned();
        let ignored = n["ignored"].as_bool().unwrap_or(false);
        let children: Vec<String> = if role == "StaticText" {
            Vec::new()
        } else {
            n["childIds"].as_array().into_iter().flatten().filter_map(|c| c.as_str().map(str::to_owned)).collect()
        };
        let backend = n["backendDOMNodeId"].as_i64();
        if ignored {
            // A whole-tree read reports ignored nodes as role `none` without name or properties; subtree reads
            // report their underlying role. Keep what both agree on.
            let reasons: Vec<&str> =
                n["ignoredReasons"].as_array().into_iter().flatten().filter_map(|r| r["name"].as_str()).collect();
            let hidden = reasons.iter().any(|r| HIDING.contains(r));
            let blocked = reasons.contains(&"activeModalDialog");
            out.insert(
                id,
                AxNode { ignored, hidden, blocked, role: "none".into(), children, backend, ..Default::default() },
            );
            continue;
        }
        let text = |v: &Value| match v {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        let props = n["properties"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                // A relation (`controls`, `owns`, `activedescendant`, ...) is kept as the backend ids it points at.
                let value = match p["value"]["relatedNodes"].as_array() {
                    Some(related) => {
                        related.iter().filter_map(|r| r["backendDOMNodeId"].as_i64()).map(Value::from).collect()
                    }
                    None => p["value"]["value"].clone(),
                };
                (p["name"].as_str().unwrap_or_default().to_owned(), value)
            })
            .collect();
        out.insert(
            id,
            AxNode {
                ignored,
                hidden: false,
                blocked: false,
                role: role.to_owned(),
                name: text(&n["name"]["value"]),
                value: text(&n["value"]["value"]),
                props,
                children,
                backend,
            },
        );
    }
    out
}

/// Parses `Accessibility.getFullAXTree`.
pub(crate) fn parse_full(v: &Value) -> AxTree {
    let empty = Vec::new();
    let raw = v["nodes"].as_array().unwrap_or(&empty);
    let root = raw
        .iter()
        .find(|n| n["parentId"].is_null() && n["role"]["value"] != "InlineTextBox")
        .and_then(|n| n["nodeId"].as_str().map(str::to_owned));
    let nodes = parse_nodes(raw);
    let root = root.or_else(|| {
        let has_parent: HashSet<&String> = nodes.values().flat_map(|n| n.children.iter()).collect();
        nodes.keys().find(|k| !has_parent.contains(*k)).cloned()
    });
    AxTree { nodes, root, dom_built: false }
}

/// What kind of DOM node a fact is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Element,
    /// Text: a change alters its element's name and children.
    Text,
    /// Comments, shadow roots, doctype: changes count for the nearest element above, subtree and all.
    Other,
    Document,
}

/// The facts of one DOM node that its accessibility can depend on.
#[derive(Debug, Clone)]
struct Fact {
    /// Name, value, every attribute, form state, clickability, frame, pseudo type, layout presence, the `cursor`
    /// and `visibility` styles and layout text — not geometry.
    hash: u64,
    /// The node's children, in order.
    kids: u64,
    parent: Option<i64>,
    kind: Kind,
    /// `<label>`.
    label: bool,
    /// An autonomous custom element (a `-` in its tag): it may set its role and states through `ElementInternals`,
    /// which no DOM snapshot shows.
    custom: bool,
    /// Inside `<head>`, `<style>`, `<script>`, `<template>`, ...: not rendered, but may change everything (styles,
    /// the title).
    unrendered: bool,
    id: Option<Box<str>>,
    label_for: Option<Box<str>>,
    /// Nodes in the subtree, this one included.
    size: u32,
}

/// The DOM facts of one frame's document, from a DOM snapshot.
#[derive(Debug, Default)]
pub(crate) struct FrameFacts {
    nodes: HashMap<i64, Fact>,
    /// Id → the elements whose accessible name, description or state reads that id (`aria-labelledby`, ...,
    /// `label for`).
    referrers: HashMap<Box<str>, Vec<i64>>,
    /// Some element uses `aria-owns` (it moves nodes in the accessibility tree: subtree reads cannot be bounded).
    owns: bool,
    /// Hosts of closed shadow roots: focus can move inside them without any sign the page-state reader can see.
    closed_hosts: Vec<i64>,
}

/// Attributes whose id references make another element's name, description or state depend on the target.
const IDREF_ATTRS: &[&str] = &[
    "aria-labelledby",
    "aria-describedby",
    "aria-details",
    "aria-errormessage",
    "aria-activedescendant",
    "aria-controls",
    "aria-flowto",
];

const UNRENDERED: &[&str] = &["head", "style", "script", "template", "noscript", "link", "meta", "title", "base"];

fn mix(h: u64, x: u64) -> u64 {
    (h.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95)
}

fn hash_str(tag: u8, s: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    h.write_u8(tag);
    s.hash(&mut h);
    h.finish()
}

/// The DOM facts of every document of a `DOMSnapshot.captureSnapshot` answer, by frame id.
pub(crate) fn snapshot_facts(v: &Value) -> HashMap<String, FrameFacts> {
    let strings: Vec<&str> = v["strings"].as_array().into_iter().flatten().map(|s| s.as_str().unwrap_or("")).collect();
    let s = |i: &Value| {
        i.as_i64().and_then(|i| usize::try_from(i).ok()).and_then(|i| strings.get(i).copied()).unwrap_or("")
    };
    let idx = |i: &Value| i.as_u64().and_then(|i| usize::try_from(i).ok());
    let empty = Vec::new();
    let mut out = HashMap::new();
    for d in v["documents"].as_array().unwrap_or(&empty) {
        let n = &d["nodes"];
        let arr = |k: &str| n[k].as_array().unwrap_or(&empty);
        let backend = arr("backendNodeId");
        let count = backend.len();
        let names = arr("nodeName");
        let values = arr("nodeValue");
        let types = arr("nodeType");
        let parents = arr("parentIndex");
        let attrs = arr("attributes");
        let mut hash = Vec::with_capacity(count);
        let mut facts: Vec<Fact> = Vec::with_capacity(count);
        let mut ff = FrameFacts::default();
        for i in 0..count {
            let name = names.get(i).map(&s).unwrap_or("");
            let ty = types.get(i).and_then(Value::as_i64).unwrap_or(0);
            let mut h = mix(hash_str(1, name), hash_str(2, values.get(i).map(&s).unwrap_or("")));
            h = mix(h, u64::try_from(ty).unwrap_or(0));
            let mut id = None;
            let mut label_for = None;
            if let Some(a) = attrs.get(i).and_then(Value::as_array) {
                for c in a.chunks(2) {
                    let (k, val) = (s(&c[0]), c.get(1).map(&s).unwrap_or(""));
                    h = mix(h, hash_str(3, k));
                    h = mix(h, hash_str(4, val));
                    match k {
                        "id" => id = Some(Box::from(val)),
                        "for" => label_for = Some(Box::from(val)),
                        "aria-owns" => ff.owns = true,
                        k if IDREF_ATTRS.contains(&k) => {
                            if let Some(b) = backend.get(i).and_then(Value::as_i64) {
                                for r in val.split_whitespace() {
                                    ff.referrers.entry(Box::from(r)).or_default().push(b);
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
            let parent = parents.get(i).and_then(Value::as_i64).and_then(|p| usize::try_from(p).ok());
            let tag = name.to_ascii_lowercase();
            let unrendered = UNRENDERED.contains(&tag.as_str()) || parent.is_some_and(|p| facts[p].unrendered);
            hash.push(h);
            facts.push(Fact {
                hash: 0,
                kids: 0,
                parent: parent.and_then(|p| backend.get(p)).and_then(Value::as_i64),
                kind: match ty {
                    1 => Kind::Element,
                    3 => Kind::Text,
                    9 => Kind::Document,
                    _ => Kind::Other,
                },
                label: tag == "label",
                custom: ty == 1 && tag.contains('-'),
                unrendered,
                id,
                label_for,
                size: 1,
            });
        }
        // Rare per-node data: form state, clickability, frames, pseudo and shadow-root types.
        let mut rare = |key: &str, tag: u8, with_value: bool| {
            let r = &n[key];
            let values = r["value"].as_array();
            for (k, i) in r["index"].as_array().into_iter().flatten().enumerate() {
                if let Some(i) = idx(i).filter(|i| *i < count) {
                    let x = match values.and_then(|vs| vs.get(k)) {
                        Some(v) if with_value && key == "contentDocumentIndex" => hash_str(tag, &v.to_string()),
                        Some(v) if with_value => hash_str(tag, s(v)), // A string index.
                        _ => u64::from(tag),
                    };
                    hash[i] = mix(hash[i], x);
                }
            }
        };
        rare("textValue", 10, true);
        rare("inputValue", 11, true);
        rare("inputChecked", 12, false);
        rare("optionSelected", 13, false);
        rare("isClickable", 14, false);
        rare("contentDocumentIndex", 15, true);
        rare("pseudoType", 16, true);
        rare("shadowRootType", 17, true);
        let shadow = &n["shadowRootType"];
        for (k, i) in shadow["index"].as_array().into_iter().flatten().enumerate() {
            if let Some(i) = idx(i).filter(|i| *i < count)
                && shadow["value"].get(k).map(&s) == Some("closed")
                && let Some(host) = parents.get(i).and_then(Value::as_i64).and_then(|p| usize::try_from(p).ok())
                && let Some(b) = backend.get(host).and_then(Value::as_i64)
            {
                ff.closed_hosts.push(b);
            }
        }
        let layout = &d["layout"];
        let styles = layout["styles"].as_array();
        let texts = layout["text"].as_array();
        for (j, ni) in layout["nodeIndex"].as_array().into_iter().flatten().enumerate() {
            let Some(i) = idx(ni).filter(|i| *i < count) else { continue };
            let mut x = 18u64;
            if let Some(st) = styles.and_then(|a| a.get(j)).and_then(Value::as_array) {
                for v in st {
                    x = mix(x, hash_str(19, s(v)));
                }
            }
            if let Some(t) = texts.and_then(|a| a.get(j)) {
                x = mix(x, hash_str(20, s(t)));
            }
            hash[i] = mix(hash[i], x);
        }
        // Children in order (the snapshot lists nodes in tree order, parents first) and subtree sizes.
        let mut kids = vec![0u64; count];
        for i in 0..count {
            if let Some(p) = parents.get(i).and_then(Value::as_i64).and_then(|p| usize::try_from(p).ok())
                && p < i
            {
                kids[p] = mix(kids[p], backend.get(i).and_then(Value::as_u64).unwrap_or(0));
            }
        }
        for i in (0..count).rev() {
            if let Some(p) = parents.get(i).and_then(Value::as_i64).and_then(|p| usize::try_from(p).ok())
                && p < i
            {
                let size = facts[i].size;
                facts[p].size += size;
            }
        }
        for (i, mut f) in facts.into_iter().enumerate() {
            f.hash = hash[i];
            f.kids = kids[i];
            if let Some(b) = backend.get(i).and_then(Value::as_i64) {
                ff.nodes.insert(b, f);
            }
        }
        out.insert(s(&d["frameId"]).to_owned(), ff);
    }
    out
}

/// The key of a cache entry whose trees were read while the page changed (see [`unconfirmed`]): no page state has it,
/// so the entry is never reused as it is, only refreshed.
pub(crate) const UNCONFIRMED_KEY: u64 = u64::MAX;

/// A node fact no snapshot gives (see [`unconfirmed`]).
const UNKNOWN: u64 = u64::MAX;

/// The facts of trees read while the page changed: `before` is what the snapshot read before the trees said, `after`
/// what the one read after them says. A node whose facts differ between the two (or that is gone from `after`) may
/// have been read in either state: it gets facts no later snapshot matches, so the next refresh reads it again, with
/// its children. What did not change in between was read as it is. A frame missing from `after` is left out (the next
/// refresh reads it whole).
pub(crate) fn unconfirmed(
    before: &HashMap<String, FrameFacts>,
    after: &HashMap<String, FrameFacts>,
) -> HashMap<String, FrameFacts> {
    before
        .iter()
        .filter_map(|(frame, b)| {
            let a = after.get(frame)?;
            let mut nodes = b.nodes.clone();
            for (id, f) in &mut nodes {
                let same =
                    a.nodes.get(id).is_some_and(|g| g.hash == f.hash && g.parent == f.parent && g.kids == f.kids);
                if !same {
                    f.hash = UNKNOWN;
                    f.kids = UNKNOWN;
                }
            }
            let facts = FrameFacts {
                nodes,
                referrers: b.referrers.clone(),
                owns: b.owns || a.owns,
                closed_hosts: b.closed_hosts.clone(),
            };
            Some((frame.clone(), facts))
        })
        .collect()
}

/// How a frame's tree is brought up to date.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refresh {
    /// Nothing it depends on changed: the cached tree is current.
    Reuse,
    /// Re-read these elements' subtrees (and their ancestors and siblings), and these single elements (with their
    /// ancestors and siblings), and merge them.
    Partial { subtrees: Vec<i64>, nodes: Vec<i64> },
    /// Read the whole tree again; says why (for the debug log).
    Full(&'static str),
}

/// More dirty subtrees than this read the whole tree instead.
const MAX_SUBTREES: usize = 48;

/// Compares a frame's cached facts with the new ones and says what must be read again. `extra` are elements known
/// to have changed without a DOM trace (focus moved to or from them).
///
/// An element whose own facts changed, or that is new or moved in, is re-read with its subtree (an attribute can
/// change everything below it); an element whose children or text changed, or whose name or state takes from a
/// changed element (by id reference, `label for`), is re-read alone — with its ancestors, siblings and children,
/// which is what a new child or a text change alters.
pub(crate) fn plan_frame(old: &FrameFacts, new: &FrameFacts, extra: &[i64]) -> Refresh {
    if old.owns || new.owns {
        return Refresh::Full("aria-owns");
    }
    // The nearest element at or above a node (`None` for the document itself).
    let element_of = |mut b: i64| -> Option<i64> {
        loop {
            let f = new.nodes.get(&b).or_else(|| old.nodes.get(&b))?;
            match f.kind {
                Kind::Element => return Some(b),
                Kind::Document => return None,
                Kind::Text | Kind::Other => b = f.parent?,
            }
        }
    };
    let mut subtrees: HashSet<i64> = HashSet::new();
    let mut nodes: HashSet<i64> = extra.iter().copied().collect();
    let mut document = false;
    // A new, moved-in or changed node: an element is read with its subtree; text alone changes its element (and
    // that element's children, which a single read includes); a shadow root or other node, its element's subtree.
    let mut changed =
        |b: i64, kind: Kind, parent: Option<i64>, subtrees: &mut HashSet<i64>, nodes: &mut HashSet<i64>| match kind {
            Kind::Element => drop(subtrees.insert(b)),
            Kind::Text => match parent.and_then(element_of) {
                Some(e) => drop(nodes.insert(e)),
                None => document = true,
            },
            Kind::Other => match element_of(b) {
                Some(e) => drop(subtrees.insert(e)),
                None => document = true,
            },
            Kind::Document => document = true,
        };
    for (b, nf) in &new.nodes {
        match old.nodes.get(b) {
            None => match nf.parent {
                Some(p) if old.nodes.contains_key(&p) => changed(*b, nf.kind, nf.parent, &mut subtrees, &mut nodes),
                Some(_) => {} // Inside a new subtree: read with its root.
                None => return Refresh::Full("new document root"),
            },
            Some(of) => {
                if of.parent != nf.parent || of.hash != nf.hash {
                    changed(*b, nf.kind, nf.parent, &mut subtrees, &mut nodes);
                }
                if of.kids != nf.kids {
                    match element_of(*b) {
                        Some(e) if nf.kind == Kind::Element => drop(nodes.insert(e)),
                        Some(e) => drop(subtrees.insert(e)), // A shadow root's children: its host's subtree.
                        None => return Refresh::Full("document changed"),
                    }
                }
            }
        }
    }
    if document {
        return Refresh::Full("document changed");
    }
    // What took its name or state from a removed element: referrers of its id, the control of a removed label.
    let mut removed_ids: Vec<&str> = Vec::new();
    for (b, of) in &old.nodes {
        if !new.nodes.contains_key(b) {
            removed_ids.extend(of.id.as_deref());
            if of.label
                && let Some(target) = &of.label_for
            {
                removed_ids.push(target);
            }
        }
    }
    let mut ids: Option<HashMap<&str, i64>> = None;
    let mut by_id = |id: &str| -> Option<i64> {
        ids.get_or_insert_with(|| new.nodes.iter().filter_map(|(b, f)| f.id.as_deref().map(|i| (i, *b))).collect())
            .get(id)
            .copied()
    };
    for id in removed_ids {
        nodes.extend(new.referrers.get(id).into_iter().flatten().copied());
        nodes.extend(by_id(id));
    }
    // Whatever takes its name, description or state from a changed element or one of its ancestors: referrers by
    // id, the control of an enclosing label (both versions' ids and `for` count: either may be the one that changed).
    let touched: Vec<i64> = subtrees.iter().chain(nodes.iter()).copied().collect();
    for e in touched {
        let mut cur = Some(e);
        let mut depth = 0;
        while let Some(c) = cur {
            for facts in [new, old] {
                let Some(cf) = facts.nodes.get(&c) else { continue };
                if cf.unrendered {
                    return Refresh::Full("head, style or script changed");
                }
                if let Some(id) = &cf.id {
                    for fs in [new, old] {
                        nodes.extend(fs.referrers.get(id).into_iter().flatten().copied());
                    }
                }
                if cf.label {
                    subtrees.insert(c);
                    if let Some(target) = &cf.label_for {
                        nodes.extend(by_id(target));
                    }
                }
            }
            cur = new.nodes.get(&c).and_then(|f| f.parent);
            depth += 1;
            if depth > 512 {
                return Refresh::Full("tree too deep");
            }
        }
        if subtrees.len() + nodes.len() > MAX_SUBTREES * 2 {
            return Refresh::Full("too many changes");
        }
    }
    let keep = |b: &i64| new.nodes.get(b).is_some_and(|f| f.kind == Kind::Element && !f.unrendered);
    subtrees.retain(keep);
    nodes.retain(keep);
    // Keep only the outermost subtrees, and single reads outside them.
    let inside = |b: &i64, set: &HashSet<i64>| {
        let mut p = new.nodes.get(b).and_then(|f| f.parent);
        while let Some(x) = p {
            if set.contains(&x) {
                return true;
            }
            p = new.nodes.get(&x).and_then(|f| f.parent);
        }
        false
    };
    let mut out: Vec<i64> = subtrees.iter().copied().filter(|b| !inside(b, &subtrees)).collect();
    let mut single: Vec<i64> = nodes.into_iter().filter(|b| !subtrees.contains(b) && !inside(b, &subtrees)).collect();
    if out.is_empty() && single.is_empty() {
        return Refresh::Reuse;
    }
    let covered: u64 = out.iter().filter_map(|b| new.nodes.get(b)).map(|f| u64::from(f.size)).sum();
    if out.len() + single.len() > MAX_SUBTREES || covered * 10 > new.nodes.len() as u64 * 3 {
        return Refresh::Full("change covers much of the page");
    }
    out.sort_unstable();
    single.sort_unstable();
    Refresh::Partial { subtrees: out, nodes: single }
}

/// The fresh reads of one dirty element: its subtree (`queryAXTree`, when `whole`) and its relatives
/// (`getPartialAXTree`: the element, its ancestors, siblings and children).
#[derive(Debug)]
pub(crate) struct SubtreeRead {
    pub(crate) backend: i64,
    pub(crate) whole: bool,
    pub(crate) subtree: Vec<Value>,
    pub(crate) relatives: Vec<Value>,
}

/// Merges fresh subtree reads into a copy of `old`. `None` when the result does not hold together (a child that
/// is in no read and not in the cached tree): the caller reads the whole tree instead.
pub(crate) fn merge(old: &AxTree, reads: &[SubtreeRead]) -> Option<AxTree> {
    let mut tree = old.clone();
    let by_backend: HashMap<i64, &String> = old.nodes.iter().filter_map(|(id, n)| n.backend.map(|b| (b, id))).collect();
    // First drop every old subtree, then insert every fresh one: a node that moved from one dirty subtree into
    // another must not be removed after it was inserted.
    for r in reads.iter().filter(|r| r.whole) {
        let Some(id) = by_backend.get(&r.backend) else { continue };
        let mut stack = vec![(*id).clone()];
        while let Some(x) = stack.pop() {
            if let Some(n) = tree.nodes.remove(&x) {
                stack.extend(n.children);
            }
        }
    }
    // An empty subtree read: the element is not in the accessibility tree any more (e.g. `display: none`); its
    // relatives read says what its parent holds now.
    for r in reads {
        tree.nodes.extend(parse_nodes(&r.subtree));
    }
    // Nodes without a DOM node (list markers, generated content) get new ids in every read: a fresh child list
    // that names one the tree does not know is mapped to the cached node of the same role in the same place.
    for r in reads {
        let mut rel = parse_nodes(&r.relatives);
        undo_injection(&mut rel, r.backend);
        let mut mapped: HashSet<String> = HashSet::new();
        let roles: HashMap<String, String> = rel.iter().map(|(id, n)| (id.clone(), n.role.clone())).collect();
        for (id, n) in &mut rel {
            let Some(cached) = tree.nodes.get(id) else { continue };
            let mut old_free = cached.children.iter().filter(|c| is_synthetic(c));
            for c in &mut n.children {
                if !is_synthetic(c) {
                    continue;
                }
                let Some(o) = old_free.next() else { break };
                if tree.nodes.contains_key(c.as_str()) {
                    continue;
                }
                let same_role = match (roles.get(c.as_str()), tree.nodes.get(o)) {
                    (Some(fresh), Some(old)) => *fresh == old.role,
                    (None, Some(_)) => true, // Not in this read: only the cached one can be it.
                    _ => false,
                };
                if same_role {
                    mapped.insert(c.clone());
                    c.clone_from(o);
                }
            }
        }
        tree.nodes.extend(rel.into_iter().filter(|(id, _)| !mapped.contains(id)));
    }
    // Everything reachable from the root must be there; what is not reachable is dropped. A missing child of a
    // hidden node (subtree reads leave out hidden descendants, which Chromium may also list under the nearest
    // shown ancestor) is hidden too.
    let hidden_kids: HashSet<String> =
        tree.nodes.values().filter(|n| n.hidden).flat_map(|n| n.children.iter().cloned()).collect();
    // Every node has one parent and is listed once: a partial read of an element that is not in the tree lists it
    // (and may list its children) under its parent too; such a merge is refused.
    let root = tree.root.clone()?;
    let mut seen: HashSet<String> = HashSet::with_capacity(tree.nodes.len());
    let mut stack = vec![(root, false)];
    while let Some((x, under_hidden)) = stack.pop() {
        let n = match tree.nodes.get(&x) {
            Some(n) => n,
            None if under_hidden || hidden_kids.contains(&x) => {
                if !seen.insert(x.clone()) {
                    return None;
                }
                tree.nodes.insert(x, AxNode { ignored: true, hidden: true, role: "none".into(), ..Default::default() });
                continue;
            }
            None => return None,
        };
        let hidden = under_hidden || n.hidden;
        if !seen.insert(x.clone()) {
            return None;
        }
        stack.extend(n.children.iter().map(|c| (c.clone(), hidden)));
    }
    tree.nodes.retain(|k, _| seen.contains(k));
    Some(tree)
}

/// Whether an accessibility node id names a node without a DOM node (Chromium numbers those below zero).
fn is_synthetic(id: &str) -> bool {
    id.starts_with('-')
}

/// A partial read (`getPartialAXTree` with relatives) of an ignored element puts that element first in its
/// parent's children even when the parent already lists it, or lists the element's children itself because the
/// element is not in the tree: then the first entry is the read's own addition, and is taken out.
fn undo_injection(rel: &mut HashMap<String, AxNode>, backend: i64) {
    let Some((target, kids)) = rel
        .iter()
        .find(|(_, n)| n.backend == Some(backend) && n.ignored)
        .map(|(id, n)| (id.clone(), n.children.clone()))
    else {
        return;
    };
    for n in rel.values_mut() {
        if n.children.first() != Some(&target) {
            continue;
        }
        let rest = &n.children[1..];
        if rest.contains(&target) || kids.iter().any(|k| rest.contains(k)) {
            n.children.remove(0);
        }
    }
}

/// More elements than this that must be read at every observation ([`volatile`]) read the frame whole instead.
pub(crate) const MAX_VOLATILE: usize = 32;

/// The elements of a frame whose accessibility can change without any trace in the DOM snapshot or the page-state
/// signature, so they are read again at every observation: custom elements the tree shows with a role of their own
/// (set through `ElementInternals`, or in a way a later `ElementInternals` call can change) alone, and hosts of
/// closed shadow roots with their subtree (focus moves inside them unseen). `(backend, with subtree)`.
pub(crate) fn volatile(tree: &AxTree, facts: &FrameFacts) -> Vec<(i64, bool)> {
    let mut out: Vec<(i64, bool)> = facts.closed_hosts.iter().map(|b| (*b, true)).collect();
    for n in tree.nodes.values() {
        let Some(b) = n.backend else { continue };
        if !n.ignored
            && !matches!(n.role.as_str(), "generic" | "none" | "GenericContainer")
            && facts.nodes.get(&b).is_some_and(|f| f.custom)
            && !out.iter().any(|(x, _)| *x == b)
        {
            out.push((b, false));
        }
    }
    out.sort_unstable();
    out
}

/// The focused element per the tree (`focused` property), if any.
pub(crate) fn focused_backend(tree: &AxTree) -> Option<i64> {
    tree.nodes.values().find(|n| n.flag("focused") && n.role != "RootWebArea").and_then(|n| n.backend)
}

/// The parts of the page-state signature (see `observe::page_state::PAGE_STATE`) that are not focus: when they
/// differ, script set a state the DOM does not show, and the trees are read whole.
pub(crate) fn non_focus_state(signature: &str) -> Vec<&str> {
    signature.split(' ').filter(|p| !p.starts_with('f')).collect()
}

/// Frame tree reads by kind, counted per connection.
#[derive(Debug, Default)]
pub(crate) struct AxCounters {
    pub(crate) reused: AtomicU64,
    pub(crate) subtrees: AtomicU64,
    pub(crate) full: AtomicU64,
    pub(crate) dom: AtomicU64,
    pub(crate) snapshots_kept: AtomicU64,
}

impl AxCounters {
    pub(crate) fn snapshot(&self) -> AxStats {
        AxStats {
            reused: self.reused.load(Ordering::Relaxed),
            subtrees: self.subtrees.load(Ordering::Relaxed),
            full: self.full.load(Ordering::Relaxed),
            dom: self.dom.load(Ordering::Relaxed),
            snapshots_kept: self.snapshots_kept.load(Ordering::Relaxed),
        }
    }
}

/// How observations got their frames' accessibility trees ([`crate::ChromiumProvider::ax_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AxStats {
    /// Frames whose cached tree was current.
    pub reused: u64,
    /// Frames brought up to date by re-reading the subtrees that changed.
    pub subtrees: u64,
    /// Frames read whole (first read, new document, or a change the subtree refresh cannot bound).
    pub full: u64,
    /// Frames whose tree was built from the DOM snapshot instead of read whole ([`DomFirst`]).
    pub dom: u64,
    /// Session reads that used the DOM snapshot kept from the last one, nothing having changed since
    /// (`observe/page_state.rs`).
    pub snapshots_kept: u64,
}

/// When an observation that must read a frame's tree whole builds it from the DOM snapshot instead
/// ([`crate::ChromiumProvider::set_dom_first`]). Only a document made entirely of elements whose accessibility
/// browserd reproduces exactly is ever built; any other is read from Chromium.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DomFirst {
    /// Documents of at least `dom_tree::MIN_NODES` nodes (a large page, where the whole tree is slow to read).
    #[default]
    Auto = 0,
    /// Every document the subset holds (for tests: the built tree must render as Chromium's does).
    Always = 1,
    /// None: every tree is Chromium's.
    Never = 2,
}

impl DomFirst {
    /// The mode stored as its discriminant (see [`crate::ChromiumProvider::set_dom_first`]).
    pub(crate) fn from_u8(v: u8) -> DomFirst {
        match v {
            1 => DomFirst::Always,
            2 => DomFirst::Never,
            _ => DomFirst::Auto,
        }
    }
}

/// One session's cached trees, with what they were read from.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The session's page-state key (DOM snapshot, state signature, frames and their documents).
    pub(crate) key: u64,
    pub(crate) trees: HashMap<String, Arc<AxTree>>,
    /// The DOM facts of each frame, from the same snapshot.
    pub(crate) facts: Arc<HashMap<String, FrameFacts>>,
    /// The page-state signature.
    pub(crate) signature: Arc<str>,
    /// Document epoch of each frame.
    pub(crate) epochs: HashMap<String, u64>,
    /// Per frame, the elements read again at every observation ([`volatile`]).
    pub(crate) volatile: HashMap<String, Vec<(i64, bool)>>,
}

/// Parsed accessibility trees of a tab's sessions, each kept with the page state it was read in: reused whole while
/// the session's state is the same, and the base of an incremental refresh when it is not.
#[derive(Debug, Default)]
pub(crate) struct AxCache {
    entries: HashMap<SessionId, Entry>,
    /// The isolated world of the page-state reader per session: (document epoch of the session's top frame,
    /// execution context).
    pub(crate) worlds: HashMap<SessionId, (u64, i64)>,
    /// The last DOM snapshot of each session, with the page-state token it was taken at (`observe/page_state.rs`).
    pub(crate) kept: HashMap<SessionId, KeptSnapshot>,
}

/// A session's DOM snapshot kept for the next read: the token of the page state it was taken at, the snapshot and its
/// digest.
#[derive(Debug, Clone)]
pub(crate) struct KeptSnapshot {
    pub(crate) token: String,
    pub(crate) snapshot: Arc<Value>,
    pub(crate) digest: u64,
}

impl AxCache {
    pub(crate) fn world(&self, session: &SessionId, epoch: u64) -> Option<i64> {
        self.worlds.get(session).filter(|(e, _)| *e == epoch).map(|(_, id)| *id)
    }

    /// The session's entry, whatever state it was read in.
    pub(crate) fn entry(&self, session: &SessionId) -> Option<&Entry> {
        self.entries.get(session)
    }

    pub(crate) fn put(&mut self, session: SessionId, entry: Entry) {
        self.entries.insert(session, entry);
    }

    /// Forgets sessions the tab no longer has (a detached out-of-process frame).
    pub(crate) fn keep_sessions<'a>(&mut self, sessions: impl Iterator<Item = &'a SessionId>) {
        let live: HashSet<&SessionId> = sessions.collect();
        self.entries.retain(|s, _| live.contains(s));
        self.worlds.retain(|s, _| live.contains(s));
        self.kept.retain(|s, _| live.contains(s));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A snapshot of one document: (parent index, node type, name, attributes, value).
    fn snap(nodes: &[Row]) -> Value {
        let mut strings: Vec<String> = Vec::new();
        let mut sid = |x: &str| {
            if let Some(i) = strings.iter().position(|s| s == x) {
                return i;
            }
            strings.push(x.to_owned());
            strings.len() - 1
        };
        let frame = sid("main");
        let mut parents = Vec::new();
        let mut types = Vec::new();
        let mut names = Vec::new();
        let mut values = Vec::new();
        let mut attrs = Vec::new();
        let mut backend = Vec::new();
        for (i, (p, t, name, a, v)) in nodes.iter().enumerate() {
            parents.push(*p);
            types.push(*t);
            names.push(sid(name));
            values.push(sid(v));
            attrs.push(a.iter().flat_map(|(k, v)| [sid(k), sid(v)]).collect::<Vec<_>>());
            backend.push(i as i64 + 100);
        }
        json!({"strings": strings, "documents": [{"frameId": frame, "nodes": {
            "parentIndex": parents, "nodeType": types, "nodeName": names, "nodeValue": values,
            "attributes": attrs, "backendNodeId": backend}, "layout": {"nodeIndex": [], "styles": []}}]})
    }

    fn facts(v: &Value) -> FrameFacts {
        snapshot_facts(v).remove("main").unwrap()
    }

    const E: i64 = 1;
    const T: i64 = 3;

    type Row = (i64, i64, &'static str, &'static [(&'static str, &'static str)], String);

    fn page(button: &str, label: &str) -> Vec<Row> {
        let rows: Vec<Row> = vec![
            (-1, 9, "#document", &[], String::new()),                      // 100
            (0, E, "HTML", &[], String::new()),                            // 101
            (1, E, "HEAD", &[], String::new()),                            // 102
            (1, E, "BODY", &[], String::new()),                            // 103
            (3, E, "BUTTON", &[], String::new()),                          // 104
            (4, T, "#text", &[], button.to_owned()),                       // 105
            (3, E, "SPAN", &[("id", "lbl")], String::new()),               // 106
            (6, T, "#text", &[], label.to_owned()),                        // 107
            (3, E, "INPUT", &[("aria-labelledby", "lbl")], String::new()), // 108
            (3, E, "LABEL", &[("for", "x")], String::new()),               // 109
            (9, T, "#text", &[], "Email".to_owned()),                      // 110
            (3, E, "INPUT", &[("id", "x")], String::new()),                // 111
            (3, E, "DIV", &[], String::new()),                             // 112
        ];
        // Filler, so that each change stays a small part of the page.
        rows.into_iter().chain((0..30).map(|_| -> Row { (12, E, "P", &[], String::new()) })).collect()
    }

    fn build(rows: &[Row]) -> FrameFacts {
        facts(&snap(rows))
    }

    #[test]
    fn an_unchanged_snapshot_reuses_the_tree() {
        let a = build(&page("Save", "Name"));
        let b = build(&page("Save", "Name"));
        assert_eq!(plan_frame(&a, &b, &[]), Refresh::Reuse);
    }

    #[test]
    fn trees_read_while_the_page_changed_reread_what_changed_between_the_reads_even_once_it_changed_back() {
        let set = |v: FrameFacts| HashMap::from([("main".to_owned(), v)]);
        let before = build(&page("Save", "Name"));
        // The button's text changed while the trees were read: which of the two they show is unknown.
        let base = unconfirmed(&set(build(&page("Save", "Name"))), &set(build(&page("Saving", "Name"))));
        let base = &base["main"];
        // Back as it was before: the button is read again all the same (the tree may show "Saving"); nothing else.
        assert_eq!(plan_frame(base, &before, &[]), Refresh::Partial { subtrees: vec![104], nodes: vec![] });
        assert_eq!(plan_frame(&before, &before, &[]), Refresh::Reuse, "confirmed facts would have reused the tree");
        // Still as it was after: read again too.
        let after = build(&page("Saving", "Name"));
        assert!(matches!(plan_frame(base, &after, &[]), Refresh::Partial { .. }));
        // A frame the later read does not have is left out (read whole next time).
        assert!(unconfirmed(&set(build(&page("Save", "Name"))), &HashMap::new()).is_empty());
    }

    #[test]
    fn a_text_change_rereads_its_element() {
        let a = build(&page("Save", "Name"));
        let b = build(&page("Delete", "Name"));
        // Its element alone (with its children, which a single read includes).
        assert_eq!(plan_frame(&a, &b, &[]), Refresh::Partial { subtrees: vec![], nodes: vec![104] });
    }

    #[test]
    fn a_change_in_a_referenced_element_rereads_its_referrers() {
        let a = build(&page("Save", "Name"));
        let b = build(&page("Save", "Full name"));
        assert_eq!(plan_frame(&a, &b, &[]), Refresh::Partial { subtrees: vec![], nodes: vec![106, 108] });
    }

    #[test]
    fn a_change_inside_a_label_rereads_its_control() {
        let mut rows = page("Save", "Name");
        rows[10].4 = "E-mail".to_owned();
        let a = build(&page("Save", "Name"));
        let b = build(&rows);
        assert_eq!(plan_frame(&a, &b, &[]), Refresh::Partial { subtrees: vec![109], nodes: vec![111] });
    }

    #[test]
    fn added_and_removed_nodes_reread_their_parent() {
        let a = build(&page("Save", "Name"));
        let mut rows = page("Save", "Name");
        rows.push((4, E, "SPAN", &[], String::new()));
        let b = build(&rows);
        let added = 100 + rows.len() as i64 - 1;
        // The new element with its subtree; its parent alone (its children changed).
        assert_eq!(plan_frame(&a, &b, &[]), Refresh::Partial { subtrees: vec![added], nodes: vec![104] });
        assert_eq!(plan_frame(&b, &a, &[]), Refresh::Partial { subtrees: vec![], nodes: vec![104] });
        // An attribute change: the element with its subtree.
        let mut rows = page("Save", "Name");
        rows[4].3 = &[("class", "primary")];
        assert_eq!(plan_frame(&a, &build(&rows), &[]), Refresh::Partial { subtrees: vec![104], nodes: vec![] });
        // An attribute of an element that holds most of the page: read whole.
        let mut rows = page("Save", "Name");
        rows[3].3 = &[("class", "dark")];
        assert!(matches!(plan_frame(&a, &build(&rows), &[]), Refresh::Full(_)));
    }

    #[test]
    fn head_changes_aria_owns_and_focus() {
        let a = build(&page("Save", "Name"));
        let mut rows = page("Save", "Name");
        rows.push((2, E, "STYLE", &[], String::new()));
        assert!(matches!(plan_frame(&a, &build(&rows), &[]), Refresh::Full(_)));
        let mut rows = page("Save", "Name");
        rows[4].3 = &[("aria-owns", "x")];
        assert!(matches!(plan_frame(&a, &build(&rows), &[]), Refresh::Full(_)));
        // Focus moved: the elements alone.
        let (same, moved) = (build(&page("Save", "Name")), build(&page("Delete", "Name")));
        assert_eq!(plan_frame(&a, &same, &[104, 999]), Refresh::Partial { subtrees: vec![], nodes: vec![104] });
        assert_eq!(plan_frame(&a, &moved, &[104, 111]), Refresh::Partial { subtrees: vec![], nodes: vec![104, 111] });
    }

    fn ax(id: &str, role: &str, name: &str, backend: i64, children: &[&str]) -> Value {
        json!({"nodeId": id, "role": {"value": role}, "name": {"value": name}, "backendDOMNodeId": backend,
               "childIds": children, "ignored": false})
    }

    #[test]
    fn merge_replaces_a_subtree_and_refreshes_ancestors() {
        let old = parse_full(&json!({"nodes": [
            ax("1", "RootWebArea", "T", 100, &["2"]),
            ax("2", "generic", "", 103, &["3", "5"]),
            ax("3", "button", "Save", 104, &["4"]),
            ax("4", "StaticText", "Save", 105, &[]),
            ax("5", "paragraph", "", 106, &[]),
        ]}));
        let read = SubtreeRead {
            backend: 104,
            whole: true,
            subtree: vec![ax("3", "button", "Delete", 104, &["9"]), ax("9", "StaticText", "Delete", 107, &[])],
            relatives: vec![ax("1", "RootWebArea", "T", 100, &["2"]), ax("2", "generic", "", 103, &["3", "5"])],
        };
        let t = merge(&old, &[read]).unwrap();
        assert_eq!(t.nodes["3"].name, "Delete");
        assert!(!t.nodes.contains_key("4"), "the old text is gone");
        assert_eq!(t.nodes["9"].name, "Delete");
        assert_eq!(t.nodes.len(), 5);
        // A child that no read brought and the cache does not have: not a tree.
        let broken = SubtreeRead {
            backend: 104,
            whole: true,
            subtree: vec![ax("3", "button", "Delete", 104, &["77"])],
            relatives: vec![],
        };
        assert!(merge(&old, &[broken]).is_none());
        // A node listed by two parents: refused.
        let twice = SubtreeRead {
            backend: 106,
            whole: true,
            subtree: vec![ax("5", "paragraph", "", 106, &["3"])],
            relatives: vec![],
        };
        assert!(merge(&old, &[twice]).is_none());
    }

    #[test]
    fn a_partial_read_of_an_ignored_element_is_not_listed_twice() {
        let old = parse_full(&json!({"nodes": [
            ax("1", "RootWebArea", "T", 100, &["2"]),
            ax("2", "generic", "", 103, &["3", "5"]),
            ax("3", "button", "Save", 104, &[]),
            ax("5", "paragraph", "", 106, &[]),
        ]}));
        let ignored = |id: &str, backend: i64, children: &[&str]| json!({"nodeId": id, "ignored": true, "role": {"value": "none"}, "backendDOMNodeId": backend, "childIds": children});
        // The read adds the ignored element first although its parent lists it already.
        let read = SubtreeRead {
            backend: 106,
            whole: false,
            subtree: vec![],
            relatives: vec![ignored("5", 106, &[]), ax("2", "generic", "", 103, &["5", "3", "5"])],
        };
        let t = merge(&old, &[read]).unwrap();
        assert_eq!(t.nodes["2"].children, vec!["3", "5"]);
        // An element not in the tree: its parent lists its children, the read adds the element in front.
        let read = SubtreeRead {
            backend: 106,
            whole: false,
            subtree: vec![],
            relatives: vec![ignored("5", 106, &["3"]), ax("2", "generic", "", 103, &["5", "3"])],
        };
        let t = merge(&old, &[read]).unwrap();
        assert_eq!(t.nodes["2"].children, vec!["3"]);
        assert!(!t.nodes.contains_key("5"), "unreachable: dropped");
    }

    #[test]
    fn ignored_nodes_read_alike_whole_or_by_subtree() {
        let whole = json!({"nodeId": "7", "ignored": true, "role": {"value": "none"}, "childIds": ["8"], "backendDOMNodeId": 5});
        let sub = json!({"nodeId": "7", "ignored": true, "role": {"value": "rowgroup"}, "name": {"value": ""},
                         "properties": [{"name": "hidden", "value": {"value": true}}], "childIds": ["8"], "backendDOMNodeId": 5});
        let a = &parse_nodes(&[whole])["7"];
        let b = &parse_nodes(&[sub])["7"];
        assert_eq!((a.role.as_str(), a.props.len(), &a.children), (b.role.as_str(), b.props.len(), &b.children));
    }
}
