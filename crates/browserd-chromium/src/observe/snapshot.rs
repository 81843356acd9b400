//! The DOM snapshot (`DOMSnapshot.captureSnapshot`) as per-frame maps of the facts the renderer reads: tag, kept
//! attributes, clickability (click listener or pointer cursor) and the frame a frame owner holds.

use std::collections::HashMap;

use serde_json::Value;

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
    pub(super) fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// The DOM facts of every frame in the sessions' snapshots.
pub(super) fn parse_all(snapshots: &[Value]) -> HashMap<String, HashMap<i64, DomNode>> {
    let mut docs = HashMap::new();
    for v in snapshots {
        docs.extend(parse_snapshot(v));
    }
    docs
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
