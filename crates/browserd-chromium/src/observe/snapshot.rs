//! The DOM snapshot (`DOMSnapshot.captureSnapshot`) as per-frame maps of the facts the renderer reads: tag, kept
//! attributes, clickability (click listener or pointer cursor), whether the element is laid out as a block (its text
//! starts and ends a line, as `innerText` breaks it), fixed position, the parent and the frame a frame owner holds.

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
    "inert",
    "aria-label",
    "aria-labelledby",
    "title",
    "aria-current",
    "aria-sort",
    "aria-hidden",
    "role",
];

/// A DOM node's facts from the snapshot.
#[derive(Debug, Default, Clone)]
pub(crate) struct DomNode {
    pub(crate) tag: String,
    pub(crate) attrs: Vec<(String, String)>,
    pub(crate) clickable: bool,
    pub(crate) pointer: bool,
    pub(crate) parent_pointer: bool,
    /// Its parent is a list that floats over the page (`position: absolute` or `fixed`): a dropdown menu, whose
    /// items are targets of their own even where the pointer cursor looks inherited (a menu inside a clickable card).
    pub(crate) in_floating_list: bool,
    /// `position: fixed` (a popup, a toast, a bar that stays in view).
    pub(crate) fixed: bool,
    /// The parent node's backend id.
    pub(crate) parent: Option<i64>,
    /// Laid out as a block-level box (`display` other than `inline*`, `contents` or `none`): its text is a line of
    /// its own, as `innerText` shows it.
    pub(crate) block: bool,
    /// Laid out as a table cell (`display: table-cell`): `innerText` puts a tab between cells, the observation ` | `.
    pub(crate) cell: bool,
    /// Its previous sibling is rendered whitespace (a text node of spaces with a layout box): the space between two
    /// inline boxes that the accessibility tree may leave out.
    pub(crate) space_before: bool,
    pub(crate) content_frame: Option<String>,
    /// A `<canvas>` laid out and visible: its size in CSS pixels (what it draws only pixels show).
    pub(crate) canvas: Option<(f64, f64)>,
    /// Its layout box (x, y, width, height in document CSS pixels) and its paint order (higher paints on top).
    pub(crate) rect: Option<[f64; 4]>,
    pub(crate) paint: Option<i64>,
    /// Clicks pass through it (`pointer-events: none`) or it is not visible: it covers nothing.
    pub(crate) pass_through: bool,
    /// What its class list says of a disclosure (a tree row styled `expanded`, `collapsed`, `leaf`).
    pub(crate) disclosure: Option<super::disclosure::Disclosure>,
    /// A `<label>` whose checkbox or radio is not rendered (`hidden`, `display: none`: a switch drawn by CSS): the
    /// label is what a user clicks, and it shows the control's role and state.
    pub(crate) toggle: Option<Toggle>,
    /// A checkbox or radio whose `<label>` carries its [`Toggle`] (the input itself has no box a click can reach).
    pub(crate) by_label: bool,
    /// A sibling of the boxless input of a drawn control that takes its clicks (the track of Element Plus's switch):
    /// with no text of its own it is a part of that control, not one of its own.
    pub(crate) toggle_part: bool,
    /// On a label with a [`DomNode::toggle`]: the backend id of the input it stands for (whose accessible name is
    /// the label's text, even where Chromium leaves the label itself out of the tree).
    pub(crate) toggle_input: Option<i64>,
    /// Drawn struck through (`text-decoration-line: line-through`: `<s>`, `<del>`, a shop's "was" price styled by
    /// its class): its text is shown between `~~` marks, so a crossed-out price does not read as the current one.
    pub(crate) struck: bool,
    /// Its text keeps the line breaks it holds (`white-space: pre`, `pre-wrap`, `pre-line`, `break-spaces`: code,
    /// a chat message as typed), and with `keeps_spaces` its runs of spaces too (all of those but `pre-line`).
    pub(crate) keeps_breaks: bool,
    pub(crate) keeps_spaces: bool,
    /// Its `aria-current` value (`page`, `step`, `true`, ...), or its list item's: it is the one the user is on.
    pub(crate) current: Option<String>,
    /// What its class list (or `data-active`) says, or its list item's, where no ARIA state does: the current page
    /// of an antd or Bootstrap pagination, the open entry of a sidebar menu.
    pub(crate) class_state: Option<super::class_state::ClassState>,
    /// The icon it draws, or the first one drawn within three levels below it (`trash` for `<i class="fa
    /// fa-trash">`, see [`super::icon`]): what a button with no name shows.
    pub(crate) icon: Option<String>,
    /// An `<input>`'s value as it shows it (the snapshot's `inputValue`): what a spinbutton shows, where its
    /// `aria-valuenow` may lag behind what was typed.
    pub(crate) input_value: Option<String>,
    /// Its place in document order (tree order, parents first) within its frame's document.
    pub(crate) order: usize,
    /// On an `aria-hidden="true"` element that the page draws (laid out, visible, larger than 1 px) holding only
    /// text: that text, which the accessibility tree leaves out (MUI's badge count, a breadcrumb's separator).
    pub(crate) hidden_text: Option<String>,
    /// A scroll container whose scrolled content has, above or below what it shows, more than a screen of it with
    /// nothing rendered in it (a virtualised list: the rows there exist only once scrolled to).
    pub(crate) unrendered: Unrendered,
}

/// The text of each `aria-hidden="true"` element the page draws with only text in it (no control, no tabindex, no
/// pointer, no icon): [`DomNode::hidden_text`] on that element. Its text nodes are read in tree order; a text node
/// counts only where it is laid out.
#[allow(clippy::too_many_arguments)]
fn drawn_hidden_text<'a>(
    nodes: &mut [DomNode],
    attrs: &[Value],
    parents: &[Value],
    values: &[Value],
    laid_out: &[bool],
    pointer: &[bool],
    invisible: &[bool],
    s: &impl Fn(&Value) -> &'a str,
) {
    let count = nodes.len();
    let attr_of = |i: usize, name: &str| {
        attrs
            .get(i)
            .and_then(Value::as_array)
            .and_then(|a| a.chunks(2).find(|c| c.len() == 2 && s(&c[0]) == name).map(|c| s(&c[1]).to_owned()))
    };
    // The hidden root each node is in, and whether that root holds anything but text.
    let mut root: Vec<Option<usize>> = vec![None; count];
    let mut texts: HashMap<usize, (String, bool)> = HashMap::new();
    for i in 0..count {
        let parent = parents.get(i).and_then(Value::as_u64).and_then(|p| usize::try_from(p).ok()).filter(|&p| p < i);
        root[i] = parent.and_then(|p| root[p]);
        let is_text = nodes[i].tag == "#text";
        if root[i].is_none() && !is_text && nodes[i].attr("aria-hidden") == Some("true") {
            // A ligature icon font draws its text as a picture (`<span class="material-icons">delete</span>`).
            let ligature = nodes[i].tag == "mat-icon"
                || attr_of(i, "class").is_some_and(|c| {
                    c.split_whitespace().any(|t| t.starts_with("material-icons") || t.starts_with("material-symbols"))
                });
            let drawn = !ligature
                && laid_out[i]
                && !invisible[i]
                && nodes[i].rect.is_some_and(|[_, _, w, h]| w > 1.0 && h > 1.0);
            if drawn {
                root[i] = Some(i);
                texts.insert(i, (String::new(), true));
            }
            continue;
        }
        let Some(r) = root[i] else { continue };
        let Some((text, ok)) = texts.get_mut(&r) else { continue };
        if is_text {
            if laid_out[i] {
                text.push_str(values.get(i).map(s).unwrap_or_default());
            }
        } else if matches!(nodes[i].tag.as_str(), "button" | "a" | "input" | "select" | "textarea" | "svg" | "img")
            || nodes[i].attr("tabindex").is_some()
            || (pointer[i] && !pointer.get(r).copied().unwrap_or(false))
            || nodes[i].icon.is_some()
        {
            *ok = false;
        }
    }
    for (r, (text, ok)) in texts {
        let text = super::line::fold(&text);
        if ok && nodes[r].icon.is_none() && !text.is_empty() {
            nodes[r].hidden_text = Some(text);
        }
    }
}

/// Where a scroll container has content that is not rendered until scrolled to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unrendered {
    pub(crate) above: bool,
    pub(crate) below: bool,
}

/// The control a `<label>` toggles when that control is not rendered itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Toggle {
    /// `checkbox`, `radio` or `switch` (an input with `role="switch"`).
    pub(crate) role: &'static str,
    pub(crate) checked: bool,
}

impl DomNode {
    pub(super) fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// It shows a pointer cursor of its own: its parent shows none, or it is an item of a floating list (a menu that
    /// opened inside a clickable card inherits the card's pointer, yet each entry is what a user clicks).
    pub(super) fn own_pointer(&self) -> bool {
        self.pointer && (!self.parent_pointer || self.in_floating_list)
    }

    /// Its `tabindex` puts it in the tab order (0 or more): the page made it focusable, so a user can reach it.
    pub(super) fn in_tab_order(&self) -> bool {
        self.attr("tabindex").is_some_and(|t| t.trim().parse::<i32>().is_ok_and(|t| t >= 0))
    }
}

/// The DOM facts of every frame in the sessions' snapshots.
pub(super) fn parse_all(snapshots: &[std::sync::Arc<Value>]) -> HashMap<String, HashMap<i64, DomNode>> {
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
                disclosure: attrs.get(i).and_then(Value::as_array).and_then(|a| {
                    a.chunks(2)
                        .find(|c| c.len() == 2 && s(&c[0]) == "class")
                        .and_then(|c| super::disclosure::from_class(s(&c[1])))
                }),
                class_state: attrs.get(i).and_then(Value::as_array).and_then(|a| {
                    let attr = |name: &str| a.chunks(2).find(|c| c.len() == 2 && s(&c[0]) == name).map(|c| s(&c[1]));
                    super::class_state::from_attrs(attr("class"), attr("data-active"), attr("data-selected"))
                }),
                ..Default::default()
            })
            .collect();
        let iv = &n["inputValue"];
        for (i, v) in iv["index"].as_array().into_iter().flatten().zip(iv["value"].as_array().into_iter().flatten()) {
            if let Some(node) = i.as_u64().and_then(|i| nodes.get_mut(usize::try_from(i).unwrap_or(usize::MAX)))
                && node.tag == "input"
            {
                node.input_value = Some(s(v).to_owned());
            }
        }
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
        let mut fixed = vec![false; count];
        let mut floating = vec![false; count];
        let mut block = vec![false; count];
        let mut cell = vec![false; count];
        let mut scroller = vec![false; count];
        let mut invisible = vec![false; count];
        let bounds = layout["bounds"].as_array().cloned().unwrap_or_default();
        let paints = layout["paintOrders"].as_array().cloned().unwrap_or_default();
        for (li, (ni, st)) in layout["nodeIndex"]
            .as_array()
            .into_iter()
            .flatten()
            .zip(layout["styles"].as_array().into_iter().flatten())
            .enumerate()
        {
            if let Some(ni) = ni.as_u64().and_then(|x| usize::try_from(x).ok())
                && ni < count
            {
                if nodes[ni].tag == "canvas" && st.get(1).map(&s) != Some("hidden") {
                    let b = bounds.get(li).and_then(Value::as_array);
                    let dim = |k: usize| b.and_then(|b| b.get(k)).and_then(Value::as_f64).unwrap_or(0.0);
                    nodes[ni].canvas = Some((dim(2), dim(3)));
                }
                pointer[ni] = st.get(0).map(&s) == Some("pointer");
                block[ni] = st.get(2).map(&s).is_some_and(is_block);
                cell[ni] = st.get(2).map(&s).is_some_and(|d| d.split_whitespace().next() == Some("table-cell"));
                fixed[ni] = st.get(3).map(&s) == Some("fixed");
                floating[ni] = matches!(st.get(3).map(&s), Some("fixed" | "absolute"));
                scroller[ni] = matches!(st.get(5).map(&s), Some("auto" | "scroll" | "overlay"));
                invisible[ni] = st.get(1).map(&s).is_some_and(|v| v != "visible");
                nodes[ni].struck = st.get(6).map(&s).is_some_and(|v| v.contains("line-through"));
                let white_space = st.get(7).map(&s).unwrap_or_default();
                nodes[ni].keeps_spaces = matches!(white_space, "pre" | "pre-wrap" | "break-spaces");
                nodes[ni].keeps_breaks = nodes[ni].keeps_spaces || white_space == "pre-line";
                if nodes[ni].rect.is_none()
                    && let Some(b) = bounds.get(li).and_then(Value::as_array)
                    && let [Some(x), Some(y), Some(w), Some(h)] = [0, 1, 2, 3].map(|k| b.get(k).and_then(Value::as_f64))
                {
                    nodes[ni].rect = Some([x, y, w, h]);
                    nodes[ni].paint = paints.get(li).and_then(Value::as_i64);
                    nodes[ni].pass_through =
                        st.get(4).map(&s) == Some("none") || st.get(1).map(&s).is_some_and(|v| v != "visible");
                }
            }
        }
        let values = n["nodeValue"].as_array().cloned().unwrap_or_default();
        let mut laid_out = vec![false; count];
        for ni in layout["nodeIndex"].as_array().into_iter().flatten() {
            if let Some(ni) = ni.as_u64().and_then(|x| usize::try_from(x).ok())
                && ni < count
            {
                laid_out[ni] = true;
            }
        }
        // Tree order, parents first: what a node takes from its parent is known by the time it is reached.
        let parent_of = |i: usize| parents.get(i).and_then(Value::as_u64).and_then(|p| usize::try_from(p).ok());
        for i in 0..count {
            let parent = parent_of(i).filter(|&p| p < i);
            // `aria-current` of an element, or of the list item it sits in.
            let li = parent.map(|p| &nodes[p]).filter(|p| p.tag == "li");
            let current = aria_current(&nodes[i]).or_else(|| li.and_then(aria_current)).map(str::to_owned);
            let li_state = li.and_then(|l| l.class_state);
            nodes[i].current = current;
            nodes[i].class_state = nodes[i].class_state.or(li_state);
            // A line-through is drawn across the text of every descendant (the computed value is not inherited).
            if parent.is_some_and(|p| nodes[p].struck) {
                nodes[i].struck = true;
            }
            // The icons drawn, each also the icon of its parents up to three levels (a button around an `<i>`).
            let Some(a) = attrs.get(i).and_then(Value::as_array).filter(|a| !a.is_empty()) else { continue };
            let attr = |name: &str| a.chunks(2).find(|c| c.len() == 2 && s(&c[0]) == name).map(|c| s(&c[1]).to_owned());
            let Some(icon) = super::icon::of(&nodes[i].tag, attr) else { continue };
            let mut cur = Some(i);
            for _ in 0..4 {
                let Some(c) = cur else { break };
                nodes[c].icon.get_or_insert_with(|| icon.clone());
                cur = parent_of(c).filter(|&p| p < c);
            }
        }
        // A tree item whose disclosure icon is styled a leaf (Element Plus's `el-tree-node__expand-icon is-leaf`,
        // two levels below the item) is a leaf, whatever `aria-expanded="false"` it carries.
        for i in 0..count {
            if nodes[i].disclosure != Some(super::disclosure::Disclosure::Leaf) {
                continue;
            }
            let mut cur = parent_of(i).filter(|&p| p < i);
            for _ in 0..3 {
                let Some(c) = cur else { break };
                if nodes[c].attr("role") == Some("treeitem") {
                    nodes[c].disclosure.get_or_insert(super::disclosure::Disclosure::Leaf);
                    break;
                }
                cur = parent_of(c).filter(|&p| p < c);
            }
        }
        label_toggles(&mut nodes, &attrs, &parents, &backend, &n["inputChecked"], &laid_out, &pointer, &s);
        drawn_hidden_text(&mut nodes, &attrs, &parents, &values, &laid_out, &pointer, &invisible, &s);
        // Tree order, parents first: a node's previous sibling is the last node seen with the same parent.
        let mut last_child: HashMap<i64, usize> = HashMap::new();
        let mut space_before = vec![false; count];
        let mut inherited = vec![false; count];
        for (i, space) in space_before.iter_mut().enumerate() {
            let Some(p) = parents.get(i).and_then(Value::as_i64) else { continue };
            match last_child.get(&p) {
                Some(&prev) => {
                    *space = laid_out[prev]
                        && nodes[prev].tag == "#text"
                        && values.get(prev).map(&s).is_some_and(|v| !v.is_empty() && v.trim().is_empty());
                }
                // A first child starts where its inline parent starts: the space before the parent is before it
                // (the accessibility tree often has no node for an inline `<span>`, only for its text).
                None => *space = usize::try_from(p).ok().is_some_and(|p| p < i && inherited[p] && !block[p]),
            }
            inherited[i] = *space;
            last_child.insert(p, i);
        }
        // A list (`ul`, `ol`, `menu`, or a list-like role) that floats over the page: a dropdown menu. The role is read
        // only for the few floating elements.
        let floating_list: Vec<bool> = (0..count)
            .map(|i| {
                floating[i]
                    && (matches!(nodes[i].tag.as_str(), "ul" | "ol" | "menu")
                        || attrs.get(i).and_then(Value::as_array).is_some_and(|a| {
                            a.chunks(2).any(|c| {
                                c.len() == 2 && s(&c[0]) == "role" && matches!(s(&c[1]), "list" | "menu" | "listbox")
                            })
                        }))
            })
            .collect();
        unrendered_regions(&mut nodes, &scroller, &parents);
        let mut map = HashMap::with_capacity(count);
        for (i, mut node) in nodes.into_iter().enumerate() {
            node.order = i;
            node.pointer = pointer[i];
            node.fixed = fixed[i];
            node.block = block[i] && !node.tag.starts_with('#');
            node.cell = cell[i] && !node.tag.starts_with('#');
            node.space_before = space_before[i];
            let parent = parents.get(i).and_then(Value::as_i64).and_then(|p| usize::try_from(p).ok());
            node.parent_pointer = parent.is_some_and(|p| pointer.get(p).copied().unwrap_or(false));
            node.in_floating_list = parent.is_some_and(|p| floating_list.get(p).copied().unwrap_or(false));
            node.parent = parent.and_then(|p| backend.get(p)).and_then(Value::as_i64);
            if let Some(b) = backend.get(i).and_then(Value::as_i64) {
                map.insert(b, node);
            }
        }
        out.insert(frame_ids[di].clone(), map);
    }
    out
}

/// Marks the scroll containers whose scrolled content ([`DomNode::unrendered`]) runs more than their own height
/// past the first or last text rendered in them: a virtualised list's spacer, rows in the DOM only near the scroll
/// position. The content's extent is that of the container's children (their boxes move as it scrolls); only
/// containers whose content overflows them are looked into.
fn unrendered_regions(nodes: &mut [DomNode], scroller: &[bool], parents: &[Value]) {
    if !scroller.contains(&true) {
        return;
    }
    let parent = |i: usize| parents.get(i).and_then(Value::as_i64).and_then(|p| usize::try_from(p).ok());
    // The vertical extent of each scroll container's children.
    let mut extent: HashMap<usize, (f64, f64)> = HashMap::new();
    for (i, node) in nodes.iter().enumerate() {
        if let (Some(p), Some([_, y, _, h])) = (parent(i), node.rect)
            && scroller.get(p).copied().unwrap_or(false)
        {
            let e = extent.entry(p).or_insert((y, y + h));
            *e = (e.0.min(y), e.1.max(y + h));
        }
    }
    extent.retain(|&c, &mut (top, bottom)| {
        nodes[c].rect.is_some_and(|[_, y, _, h]| h > 0.0 && (top < y - 1.0 || bottom > y + h + 1.0))
    });
    if extent.is_empty() {
        return;
    }
    // The text rendered inside each of them.
    let mut text: HashMap<usize, (f64, f64)> = HashMap::new();
    for (i, node) in nodes.iter().enumerate() {
        let Some([_, y, _, h]) = node.rect.filter(|_| node.tag == "#text") else { continue };
        let mut cur = parent(i);
        for _ in 0..256 {
            let Some(c) = cur else { break };
            if extent.contains_key(&c) {
                let e = text.entry(c).or_insert((y, y + h));
                *e = (e.0.min(y), e.1.max(y + h));
                break;
            }
            cur = parent(c);
        }
    }
    for (c, (top, bottom)) in extent {
        let (Some([_, _, _, h]), Some(&(first, last))) = (nodes[c].rect, text.get(&c)) else { continue };
        nodes[c].unrendered = Unrendered { above: first - top > h, below: bottom - last > h };
    }
}

/// An element's `aria-current` when it says the element is current (`page`, `step`, `true`; not `false`).
fn aria_current(d: &DomNode) -> Option<&str> {
    d.attr("aria-current").map(str::trim).filter(|c| !c.is_empty() && *c != "false")
}

/// Whether element `a` is `b` or holds it: `b`'s DOM parents followed up, and not past `stop`.
pub(super) fn holds(docs: &HashMap<i64, DomNode>, a: i64, b: i64, stop: Option<i64>) -> bool {
    let mut cur = Some(b);
    for _ in 0..4096 {
        match cur {
            Some(c) if c == a => return true,
            Some(c) if Some(c) == stop => return false,
            Some(c) => cur = docs.get(&c).and_then(|d| d.parent),
            None => return false,
        }
    }
    false
}

impl Toggle {
    /// The state its line shows.
    pub(crate) fn state(self) -> &'static str {
        if self.checked { "checked" } else { "unchecked" }
    }
}

/// Gives each `<label>` whose checkbox or radio has no box a click can reach (not laid out: `hidden`, `display:
/// none`; or at most 1 px wide or high: the transparent 0×0 input of a CSS switch) that control's role and checked
/// state ([`DomNode::toggle`]); the label is what a user clicks. The control is the label's descendant or the
/// element its `for` names — unless the input sits in a drawn switch that takes the clicks itself (Element Plus's
/// `<div class="el-switch" @click.prevent>` around its 0×0 input): a user clicks what is drawn, and a click on the
/// form's `<label for>` would reach the input without the switch's handler.
#[allow(clippy::too_many_arguments)]
fn label_toggles<'a>(
    nodes: &mut [DomNode],
    attrs: &[Value],
    parents: &[Value],
    backend: &[Value],
    checked: &Value,
    laid_out: &[bool],
    pointer: &[bool],
    s: &impl Fn(&Value) -> &'a str,
) {
    let attr = |i: usize, name: &str| -> Option<&'a str> {
        attrs.get(i)?.as_array()?.chunks(2).find(|c| c.len() == 2 && s(&c[0]) == name).map(|c| s(&c[1]))
    };
    let mut toggles: Vec<(usize, Toggle)> = Vec::new();
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    for (i, node) in nodes.iter().enumerate() {
        let reachable =
            laid_out.get(i).copied().unwrap_or(true) && node.rect.is_none_or(|[_, _, w, h]| w > 1.0 && h > 1.0);
        if node.tag != "input" || reachable {
            continue;
        }
        let role = match (attr(i, "type").map(str::to_ascii_lowercase).as_deref(), attr(i, "role")) {
            (Some("checkbox"), Some("switch")) => "switch",
            (Some("checkbox"), _) => "checkbox",
            (Some("radio"), _) => "radio",
            _ => continue,
        };
        if attr(i, "disabled").is_some() {
            continue;
        }
        toggles.push((i, Toggle { role, checked: false }));
        if let Some(id) = attr(i, "id").filter(|id| !id.is_empty()) {
            by_id.insert(id, i);
        }
    }
    if toggles.is_empty() {
        return;
    }
    let is_checked: std::collections::HashSet<usize> = checked["index"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i.as_u64().and_then(|i| usize::try_from(i).ok()))
        .collect();
    let parent = |i: usize| parents.get(i).and_then(Value::as_i64).and_then(|p| usize::try_from(p).ok());
    // The first `<label>` (tree order) naming each id in its `for`, built once for the document: a page of many hidden
    // switches must not rescan every node for each of them.
    let mut label_for: Option<HashMap<&str, usize>> = None;
    let mut drawn: std::collections::HashSet<usize> = std::collections::HashSet::new();
    for (input, mut toggle) in toggles {
        toggle.checked = is_checked.contains(&input);
        // The nearest `<label>` around the input, else a label whose `for` names it.
        let mut label = None;
        let mut cur = parent(input);
        for _ in 0..64 {
            match cur {
                Some(p) if nodes[p].tag == "label" => {
                    label = Some(p);
                    break;
                }
                Some(p) => cur = parent(p),
                None => break,
            }
        }
        // The drawn control around the input that takes its clicks, when the label is not inside it (MUI's Rating
        // keeps each star's `<label for>` inside the root that has the pointer: there the label is the star).
        let drawn_wrapper = |label: usize| {
            std::iter::successors(parent(input), |&p| parent(p)).take(2).any(|p| {
                let n = &nodes[p];
                (n.clickable || pointer.get(p).copied().unwrap_or(false))
                    && laid_out.get(p).copied().unwrap_or(false)
                    && n.rect.is_some_and(|[_, _, w, h]| w > 1.0 && h > 1.0)
                    && !std::iter::successors(Some(label), |&l| parent(l)).take(64).any(|l| l == p)
            })
        };
        if label.is_none()
            && let Some(id) = attr(input, "id").filter(|id| by_id.get(id) == Some(&input))
        {
            let label_for = label_for.get_or_insert_with(|| {
                let mut m = HashMap::new();
                for l in (0..nodes.len()).filter(|&l| nodes[l].tag == "label") {
                    if let Some(f) = attr(l, "for") {
                        m.entry(f).or_insert(l);
                    }
                }
                m
            });
            let found = label_for.get(id).copied();
            label = found.filter(|&l| !drawn_wrapper(l));
            if found.is_some() && label.is_none() {
                drawn.extend(parent(input));
            }
        }
        if let Some(l) = label.filter(|&l| laid_out.get(l).copied().unwrap_or(false)) {
            nodes[l].toggle = Some(toggle);
            nodes[l].toggle_input = backend.get(input).and_then(Value::as_i64);
            nodes[input].by_label = true;
        }
    }
    // The parts drawn beside the input of a drawn control (Element Plus's `el-switch__core` with its pointer): a
    // click there is the control's, whose own line takes it.
    if !drawn.is_empty() {
        for (i, node) in nodes.iter_mut().enumerate() {
            if parent(i).is_some_and(|p| drawn.contains(&p)) && node.tag != "input" {
                node.toggle_part = true;
            }
        }
    }
}

/// Smallest side of a canvas that counts as content (smaller ones are icons, sparklines, decorations).
const MIN_CANVAS_SIDE: f64 = 64.0;

/// The drawing canvases of every frame: how many of at least [`MIN_CANVAS_SIDE`] on both sides, and the largest
/// (width, height) in CSS pixels.
pub(super) fn canvases(docs: &HashMap<String, HashMap<i64, DomNode>>) -> Option<(u32, (f64, f64))> {
    let mut count = 0u32;
    let mut largest = (0.0, 0.0);
    for (w, h) in docs.values().flat_map(HashMap::values).filter_map(|n| n.canvas) {
        if w >= MIN_CANVAS_SIDE && h >= MIN_CANVAS_SIDE {
            count += 1;
            if w * h > largest.0 * largest.1 {
                largest = (w, h);
            }
        }
    }
    (count > 0).then_some((count, largest))
}

/// Whether a computed `display` lays the element out as a block-level box, whose text `innerText` puts on lines of
/// its own (`block`, `flex`, `grid`, `list-item`, `table`, `table-row`, `flow-root`, ...). Inline-level boxes
/// (`inline`, `inline-block`, `inline-flex`, ...) and `contents` (no box of its own) continue the line; table cells
/// are joined by the row rendering.
fn is_block(display: &str) -> bool {
    let outer = display.split_whitespace().next().unwrap_or("");
    !(outer.is_empty()
        || outer.starts_with("inline")
        || matches!(outer, "contents" | "none" | "table-cell" | "ruby" | "ruby-text"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_label_whose_checkbox_has_no_box_to_click_carries_its_role_and_state() {
        // 0 document; 1 label > 2 hidden checked switch; 3 label for=x, 4 its 0×0 checkbox; 5 label > 6 a checkbox a
        // click can reach (it keeps its own line).
        let strings = [
            "",
            "#document",
            "LABEL",
            "INPUT",
            "type",
            "checkbox",
            "hidden",
            "for",
            "x",
            "id",
            "frame1",
            "auto",
            "visible",
            "inline",
            "static",
            "role",
            "switch",
            "auto",
        ];
        let style = json!([11, 12, 13, 14, 17]);
        let snapshot = json!({
            "strings": strings,
            "documents": [{
                "frameId": 10,
                "nodes": {
                    "backendNodeId": [100, 101, 102, 103, 104, 105, 106],
                    "nodeName": [1, 2, 3, 2, 3, 2, 3],
                    "parentIndex": [-1, 0, 1, 0, 0, 0, 5],
                    "attributes": [[], [], [4, 5, 6, 0, 15, 16], [7, 8], [4, 5, 9, 8], [], [4, 5]],
                    "inputChecked": {"index": [2]},
                },
                "layout": {
                    "nodeIndex": [0, 1, 3, 4, 5, 6],
                    "styles": [style, style, style, style, style, style],
                    "bounds": [[0, 0, 800, 600], [0, 0, 90, 20], [0, 30, 90, 20], [0, 30, 0, 0], [0, 60, 90, 20],
                        [0, 60, 16, 16]],
                },
            }],
        });
        let docs = parse_all(&[std::sync::Arc::new(snapshot)]);
        let d = &docs["frame1"];
        assert_eq!(d[&101].toggle, Some(Toggle { role: "switch", checked: true }));
        assert!(d[&102].by_label);
        assert_eq!(d[&103].toggle, Some(Toggle { role: "checkbox", checked: false }));
        assert!(d[&104].by_label);
        assert_eq!(d[&105].toggle, None);
        assert!(!d[&106].by_label);
    }

    #[test]
    fn drawn_aria_hidden_text_is_kept_unless_an_icon_a_control_or_not_drawn() {
        // 0 document; 1 span aria-hidden > 2 "4" (a badge); 3 span.material-icons aria-hidden > 4 "info" (a ligature
        // icon); 5 span aria-hidden > 6 button > 7 "×"; 8 span aria-hidden 1×1 > 9 "sr" (clipped away); 10 span
        // aria-hidden, visibility hidden > 11 "gone".
        let strings = [
            "",
            "#document",
            "SPAN",
            "#text",
            "BUTTON",
            "aria-hidden",
            "true",
            "class",
            "material-icons",
            "4",
            "info",
            "\u{d7}",
            "sr",
            "gone",
            "frame1",
            "auto",
            "visible",
            "inline",
            "static",
            "hidden",
        ];
        let style = json!([15, 16, 17, 18, 15]);
        let unseen = json!([15, 19, 17, 18, 15]);
        let snapshot = json!({
            "strings": strings,
            "documents": [{
                "frameId": 14,
                "nodes": {
                    "backendNodeId": [100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111],
                    "nodeName": [1, 2, 3, 2, 3, 2, 4, 3, 2, 3, 2, 3],
                    "parentIndex": [-1, 0, 1, 0, 3, 0, 5, 6, 0, 8, 0, 10],
                    "attributes": [[], [5, 6], [], [7, 8, 5, 6], [], [5, 6], [], [], [5, 6], [], [5, 6], []],
                    "nodeValue": [0, 0, 9, 0, 10, 0, 0, 11, 0, 12, 0, 13],
                },
                "layout": {
                    "nodeIndex": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
                    "styles": [style, style, style, style, style, style, style, style, style, style, unseen, unseen],
                    "bounds": [[0, 0, 800, 600], [0, 0, 20, 20], [0, 0, 8, 16], [0, 30, 18, 18], [0, 30, 18, 18],
                        [0, 60, 30, 20], [0, 60, 30, 20], [0, 60, 8, 16], [0, 90, 1, 1], [0, 90, 1, 1],
                        [0, 120, 40, 20], [0, 120, 30, 16]],
                },
            }],
        });
        let docs = parse_all(&[std::sync::Arc::new(snapshot)]);
        let d = &docs["frame1"];
        assert_eq!(d[&101].hidden_text.as_deref(), Some("4"));
        assert_eq!(d[&103].hidden_text, None, "a ligature icon's name is not text");
        assert_eq!(d[&105].hidden_text, None, "a control inside: not only text");
        assert_eq!(d[&108].hidden_text, None, "clipped to 1 px: not drawn");
        assert_eq!(d[&110].hidden_text, None, "visibility: hidden");
    }

    #[test]
    fn many_hidden_checkboxes_each_give_their_state_to_the_first_label_that_names_them() {
        // 0 document; then per k: a label for=c{k} (before its input when k is even, after it when odd) and the hidden
        // checkbox c{k}, checked when k % 3 == 0; every fifth has a second label for it later, which is not used.
        let n = 600usize;
        let mut strings: Vec<String> =
            ["", "#document", "LABEL", "INPUT", "type", "checkbox", "hidden", "for", "id"].map(str::to_owned).to_vec();
        strings.extend(["frame1", "auto", "visible", "inline", "static"].map(str::to_owned));
        let style = json!([10, 11, 12, 13, 10]);
        let (mut backend, mut names, mut parents, mut attrs) = (vec![1000i64], vec![1], vec![-1i64], vec![json!([])]);
        let (mut checked, mut laid, mut styles, mut bounds) = (vec![], vec![0usize], vec![style.clone()], vec![]);
        bounds.push(json!([0, 0, 800, 600]));
        let mut push = |name: usize, attr: Value, laid_out: bool, b: &mut Vec<i64>| {
            let i = b.len();
            b.push(1000 + i64::try_from(i).unwrap());
            names.push(name);
            parents.push(0);
            attrs.push(attr);
            if laid_out {
                laid.push(i);
                styles.push(style.clone());
                bounds.push(json!([0, i, 90, 20]));
            }
            i
        };
        let mut expect = Vec::new();
        let mut decoys = Vec::new();
        for k in 0..n {
            strings.push(format!("c{k}"));
            let id = strings.len() - 1;
            let input_attr = json!([4, 5, 6, 0, 8, id]);
            let (label, input) = if k % 2 == 0 {
                let l = push(2, json!([7, id]), true, &mut backend);
                (l, push(3, input_attr, false, &mut backend))
            } else {
                let i = push(3, input_attr, false, &mut backend);
                (push(2, json!([7, id]), true, &mut backend), i)
            };
            if k % 3 == 0 {
                checked.push(input);
            }
            if k % 5 == 0 {
                decoys.push(id);
            }
            expect.push((label, input, k % 3 == 0));
        }
        let decoy_nodes: Vec<usize> = decoys.iter().map(|&id| push(2, json!([7, id]), true, &mut backend)).collect();
        let snapshot = json!({
            "strings": strings,
            "documents": [{
                "frameId": 9,
                "nodes": {
                    "backendNodeId": backend,
                    "nodeName": names,
                    "parentIndex": parents,
                    "attributes": attrs,
                    "inputChecked": {"index": checked},
                },
                "layout": {"nodeIndex": laid, "styles": styles, "bounds": bounds},
            }],
        });
        let docs = parse_all(&[std::sync::Arc::new(snapshot)]);
        let d = &docs["frame1"];
        let node = |i: usize| &d[&(1000 + i64::try_from(i).unwrap())];
        for (label, input, on) in expect {
            assert_eq!(node(label).toggle, Some(Toggle { role: "checkbox", checked: on }), "label {label}");
            assert!(node(input).by_label, "input {input}");
        }
        for l in decoy_nodes {
            assert_eq!(node(l).toggle, None, "a later label for the same id gets nothing: {l}");
        }
    }
}
