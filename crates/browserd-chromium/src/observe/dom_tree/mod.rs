//! A frame's accessibility tree built from its DOM snapshot alone: the first look at a large page without
//! `Accessibility.getFullAXTree`, which on such a page is most of an observation's cost (about 1 MB of JSON for a
//! thousand operable elements). Only documents made entirely of elements whose accessibility Chromium derives in
//! ways this module reproduces are built (`tests/dom_tree.rs` renders each page both ways and compares, on the
//! generated benchmark pages and on random pages of the subset); anything else — another element or attribute, a
//! role or ARIA attribute, a shadow root, a frame, generated content, preserved or transformed whitespace, a scroll
//! container, a layout table, a script-set state — answers `None`, and the tree is read from Chromium as before. The
//! element in focus (the page state's signature names it) is marked as Chromium marks it.
//!
//! `doc` indexes the snapshot, `text` lays out its text as CSS collapses whitespace (the text Chromium's tree
//! holds) and names elements from their content, `fields` builds tables, labels and form fields; the roles of the
//! other elements are here.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::ax::{AxNode, AxTree};

mod doc;
mod fields;
mod text;

use doc::Doc;
use text::collapse;

/// The fewest snapshot nodes a document needs for its tree to be built from the DOM when the mode is `Auto`: on
/// smaller pages Chromium's own tree costs a few milliseconds, and stays the reference.
pub(crate) const MIN_NODES: usize = 1000;

/// The element in focus per a page-state signature (`page_state::PAGE_STATE`) of one document with no shadow root,
/// frame or script-set state — the only states a built tree can describe: the element's index among its parent's
/// element children, then its parent's, up to `<html>` (`[0]` is never given: `<body>` is `1.0`). `None`: the
/// signature says more than focus.
pub(crate) fn focus_path(signature: &str) -> Option<Vec<usize>> {
    let path = signature.strip_prefix("f0:")?;
    if path.is_empty() || path.contains(' ') {
        return None;
    }
    path.split('.').map(|k| k.parse().ok()).collect()
}

/// Indices into a snapshot's computed styles (the order `page_state` asks for them in).
const VISIBILITY: usize = 1;
const DISPLAY: usize = 2;
const OVERFLOW_Y: usize = 5;
const WHITE_SPACE: usize = 7;
const TEXT_TRANSFORM: usize = 8;

/// Attributes any element of the subset may carry (they change nothing Chromium derives for it).
fn neutral_attr(name: &str) -> bool {
    matches!(name, "class" | "id" | "style" | "lang" | "onclick") || name.starts_with("data-")
}

/// The tree being built.
struct Builder<'a> {
    doc: Doc<'a>,
    parent: Vec<Option<usize>>,
    /// Each rendered text node's text as laid out (whitespace collapsed as CSS `white-space: normal` does).
    text: HashMap<usize, String>,
    /// The `<label>`s of each `for` value.
    labels: HashMap<&'a str, Vec<usize>>,
    nodes: HashMap<String, AxNode>,
}

fn id(i: usize) -> String {
    format!("d{i}")
}

impl Builder<'_> {
    /// Inserts the node of DOM node `i` (its backend id set from the snapshot) and returns its id.
    fn put(&mut self, i: usize, node: AxNode) -> String {
        self.nodes.insert(id(i), AxNode { backend: Some(self.doc.backend[i]), ..node });
        id(i)
    }

    /// Whether an element carries only attributes that change nothing Chromium derives for it.
    fn plain(&self, i: usize) -> bool {
        self.doc.attrs[i].iter().all(|(k, _)| neutral_attr(k))
    }

    /// Whether an element has an ancestor of one of `tags`.
    fn inside(&self, i: usize, tags: &[&str]) -> bool {
        let mut a = self.parent[i];
        while let Some(p) = a {
            if tags.contains(&self.doc.tag[p].as_str()) {
                return true;
            }
            a = self.parent[p];
        }
        false
    }

    /// A landmark's name from its `aria-label`: whitespace collapsed and trimmed.
    fn label_attr(&self, i: usize) -> Option<String> {
        self.doc.attr(i, "aria-label").map(|l| collapse(l).trim().to_owned())
    }
}

/// Builds the tree of a session's snapshot holding exactly one document, with the element at `focus` (see
/// [`focus_path`]) focused, or `None` when the document is not made only of what this module models.
pub(crate) fn build(snapshot: &Value, focus: &[usize]) -> Option<AxTree> {
    let doc = Doc::parse(snapshot)?;
    let count = doc.tag.len();
    let mut parent = vec![None; count];
    for (p, kids) in doc.kids.iter().enumerate() {
        for &k in kids {
            parent[k] = Some(p);
        }
    }
    let mut labels: HashMap<&str, Vec<usize>> = HashMap::new();
    for l in (0..count).filter(|&l| doc.tag[l] == "label") {
        if let Some(f) = doc.attr(l, "for") {
            labels.entry(f).or_default().push(l);
        }
    }
    let mut b = Builder { doc, parent, text: HashMap::new(), labels, nodes: HashMap::with_capacity(count) };
    let root = 0;
    if b.doc.kind.first() != Some(&9) {
        return None;
    }
    let element = |b: &Builder<'_>, p: usize, tag: &str| {
        b.doc.kids[p].iter().copied().find(|&k| b.doc.kind[k] == 1 && b.doc.tag[k] == tag)
    };
    let html = element(&b, root, "html")?;
    let body = element(&b, html, "body")?;
    b.lay_out_text(body)?;
    let body_id = b.element(body, 0)?.pop()?;
    let html_id =
        b.put(html, AxNode { ignored: true, role: "none".into(), children: vec![body_id], ..Default::default() });
    let title = b.doc.kids[html]
        .iter()
        .find(|&&k| b.doc.tag[k] == "head")
        .and_then(|&h| b.doc.kids[h].iter().find(|&&k| b.doc.tag[k] == "title"))
        .map(|&t| b.doc.kids[t].iter().map(|&k| b.doc.value[k]).collect::<String>())
        .map(|t| collapse(&t).trim().to_owned())
        .unwrap_or_default();
    // The element in focus, found by its path from `<html>` (element children only, pseudo-elements aside).
    let mut focused = root;
    for &k in focus.iter().rev() {
        let d = &b.doc;
        focused = d.kids[focused].iter().copied().filter(|&c| d.kind[c] == 1 && d.pseudo[c].is_none()).nth(k)?;
    }
    if focused != body {
        let n = b.nodes.get_mut(&id(focused))?;
        let at = n.props.iter().position(|(k, _)| k == "focusable")?;
        n.props.insert(at + 1, ("focused".into(), json!(true)));
    }
    let props =
        vec![("focusable".into(), json!(true)), ("focused".into(), json!(true)), ("url".into(), json!(b.doc.url))];
    let children = vec![html_id];
    let root_id =
        b.put(root, AxNode { role: "RootWebArea".into(), name: title, props, children, ..Default::default() });
    Some(AxTree { nodes: b.nodes, root: Some(root_id), dom_built: true })
}

impl Builder<'_> {
    /// The nodes an element adds to its parent's children: its own (its subtree inserted), or, for an inline element
    /// the tree leaves out (a plain `<span>`, `<b>`), its children's; `None`: the document is not built.
    fn element(&mut self, i: usize, list_level: u32) -> Option<Vec<String>> {
        let d = &self.doc;
        let tag = d.tag[i].clone();
        let style_ok = d.style(i, VISIBILITY) == Some("visible")
            && !matches!(d.style(i, OVERFLOW_Y), Some("auto" | "scroll" | "overlay"))
            && d.style(i, TEXT_TRANSFORM) == Some("none");
        if !style_ok || d.pseudo[i].is_some() {
            return None;
        }
        let attrs_ok = d.attrs[i].iter().all(|(k, v)| {
            neutral_attr(k)
                || match (tag.as_str(), *k) {
                    ("a" | "button", "aria-label") => !v.trim().is_empty(),
                    ("a" | "button", "title") | ("a", "target" | "rel") => true,
                    // An empty icon hidden from assistive technology (`<i class="fa fa-trash" aria-hidden="true">`
                    // with no glyph of its own in the DOM): no node, as Chromium has none for it.
                    ("i" | "span", "aria-hidden") => *v == "true" && d.kids[i].is_empty() && !d.clickable[i],
                    ("a", "href") => {
                        !v.trim().is_empty() && !v.trim_start().to_ascii_lowercase().starts_with("javascript:")
                    }
                    ("button", "type") => matches!(*v, "button" | "submit" | "reset"),
                    ("input", "type") => matches!(*v, "text" | "email" | "checkbox"),
                    ("input" | "select", "name") => true,
                    ("input", "checked") => d.attr(i, "type") == Some("checkbox"),
                    ("option", "selected") => true,
                    ("label", "for") => true,
                    ("option", "value") => true,
                    ("img", "src" | "alt" | "width" | "height") => true,
                    ("nav" | "form" | "section", "aria-label") => !v.trim().is_empty(),
                    ("section", "aria-labelledby") => d.ids.contains_key(v.trim()),
                    _ => false,
                }
        });
        if !attrs_ok {
            return None;
        }
        let block = d.block(i);
        let display = d.display(i).unwrap_or("");
        // Sectioning content (and `<main>`) scopes a header or footer; sectioning content alone an `<aside>`.
        let in_landmark = || self.inside(i, &["article", "aside", "main", "nav", "section"]);
        let in_section = || self.inside(i, &["article", "aside", "nav", "section"]);
        let mut props: Vec<(String, Value)> = Vec::new();
        let mut name = String::new();
        let role: &str = match tag.as_str() {
            "body" => "none",
            "header" if block && !in_landmark() => "banner",
            "footer" if block && !in_landmark() => "contentinfo",
            "nav" if block => {
                name = self.label_attr(i).unwrap_or_default();
                "navigation"
            }
            "main" if block => "main",
            "section" if block => {
                if let Some(l) = self.label_attr(i) {
                    name = l;
                    "region"
                } else if let Some(l) = d.attr(i, "aria-labelledby") {
                    let target = *d.ids.get(l.trim())?;
                    name = self.content_name(target)?;
                    props.push(("labelledby".into(), json!([d.backend[target]])));
                    "region"
                } else {
                    "generic"
                }
            }
            "form" if block => {
                name = self.label_attr(i).unwrap_or_default();
                "form"
            }
            // A `<div>` with a click listener is always kept.
            "div" if d.clickable[i] => "generic",
            "div" => self.generic_block(i)?,
            // A `<span>` is left out unless it takes clicks (a listener); blockified (a flex item) too.
            "span" if d.clickable[i] => "generic",
            "span" => "none",
            "b" | "i" | "small" | "u" if display == "inline" && !d.clickable[i] => "none",
            "b" | "i" | "small" | "u" if !d.clickable[i] => self.generic_block(i)?,
            "strong" if !d.clickable[i] => "strong",
            "em" if !d.clickable[i] => "emphasis",
            "code" if !d.clickable[i] => "code",
            "article" if block => "article",
            "aside" if block && !in_section() => "complementary",
            "header" if block => "sectionheader",
            "footer" if block => "sectionfooter",
            "blockquote" if block => "blockquote",
            "img" if display == "inline" => match d.attr(i, "alt").map(|a| collapse(a).trim().to_owned()) {
                Some(alt) if alt.is_empty() => return Some(Vec::new()),
                Some(alt) => {
                    name = alt;
                    "image"
                }
                None => return None,
            },
            // An empty paragraph is left out (its box kept).
            "p" if block && self.shows_something(i) => "paragraph",
            "p" if block => "none",
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" if block => {
                name = self.content_name(i)?;
                props.push(("level".into(), json!(tag[1..].parse::<u32>().ok()?)));
                "heading"
            }
            "ul" | "ol" if block => "list",
            "li" if display == "list-item"
                && matches!(self.parent[i].map(|p| d.tag[p].as_str()), Some("ul" | "ol")) =>
            {
                props.push(("level".into(), json!(list_level.max(1))));
                "listitem"
            }
            "a" if d.attr(i, "href").is_some() => {
                name = self.control_name(i)?;
                props.push(("focusable".into(), json!(true)));
                props.push(("url".into(), json!(d.attr(i, "href"))));
                "link"
            }
            "button" => {
                name = self.control_name(i)?;
                props.push(("invalid".into(), json!("false")));
                props.push(("focusable".into(), json!(true)));
                "button"
            }
            "hr" if block => {
                props.push(("settable".into(), json!(true)));
                props.push(("orientation".into(), json!("horizontal")));
                "separator"
            }
            "br" => "LineBreak",
            "table" => return self.table(i).map(|t| vec![t]),
            "label" if display != "inline-block" => return self.label(i).map(|l| vec![l]),
            "input" if display != "inline" => return self.input(i).map(|f| vec![f]),
            "select" if display != "inline" => return self.select(i).map(|f| vec![f]),
            _ => return None,
        };
        if tag == "br" {
            name = "\n".into();
        }
        let level = list_level + u32::from(role == "list");
        let mut children = Vec::new();
        if role == "listitem" {
            // The list marker (`• `, `1. `): its own node, its text as laid out.
            if let Some(&m) = d.kids[i].iter().find(|&&k| d.pseudo[k] == Some("marker")) {
                let name = d.layout_text[m].filter(|t| !t.is_empty())?.to_owned();
                children.push(self.put(m, AxNode { role: "ListMarker".into(), name, ..Default::default() }));
            }
        }
        if tag != "br" {
            children.extend(self.children(i, level)?);
        }
        let ignored = role == "none";
        if ignored && display == "inline" {
            return Some(children);
        }
        Some(vec![self.put(i, AxNode { ignored, role: role.into(), name, props, children, ..Default::default() })])
    }

    /// A `<div>` (or a blockified `<b>`, `<i>`): kept (`generic`) when it is a block whose children are laid out on lines
    /// (text, inline boxes), else left out of the tree (`none`, its children kept).
    fn generic_block(&self, i: usize) -> Option<&'static str> {
        let d = &self.doc;
        match d.display(i)? {
            "block" | "inline-block" => {}
            "flex" | "grid" => return Some("none"),
            _ => return None,
        }
        let rendered: Vec<usize> =
            d.kids[i].iter().copied().filter(|&k| d.rendered(k) && d.pseudo[k].is_none()).collect();
        if rendered.is_empty() {
            return Some("none");
        }
        let lines = rendered.iter().all(|&k| d.inline(k) || d.atomic(k));
        let blocks = rendered.iter().all(|&k| d.block(k) || (d.kind[k] == 3 && !self.text.contains_key(&k)));
        if lines && rendered.iter().any(|&k| d.kind[k] != 3 || self.text.contains_key(&k)) {
            Some("generic")
        } else if blocks || !lines {
            Some("none")
        } else {
            None
        }
    }

    /// Whether an element shows text or a box of its own (an empty paragraph does not).
    fn shows_something(&self, i: usize) -> bool {
        self.doc.kids[i].iter().any(|&c| {
            self.text.contains_key(&c)
                || (self.doc.kind[c] == 1
                    && self.doc.rendered(c)
                    && self.doc.pseudo[c].is_none()
                    && (!self.doc.inline(c) || self.shows_something(c)))
        })
    }

    /// The nodes of an element's children, in order.
    fn children(&mut self, i: usize, level: u32) -> Option<Vec<String>> {
        let kids = self.doc.kids[i].clone();
        let mut out = Vec::new();
        for c in kids {
            match self.doc.kind[c] {
                1 if self.doc.pseudo[c].is_some() => {
                    if self.doc.pseudo[c] != Some("marker") {
                        return None;
                    }
                }
                1 if !self.doc.rendered(c) => {
                    let hidden_input = self.doc.tag[c] == "input" && self.doc.attr(c, "type") == Some("hidden");
                    if !hidden_input
                        && !matches!(self.doc.tag[c].as_str(), "script" | "style" | "template" | "noscript")
                    {
                        return None;
                    }
                }
                1 => out.extend(self.element(c, level)?),
                3 => {
                    if let Some(name) = self.text.get(&c).cloned() {
                        out.push(self.put(c, AxNode { role: "StaticText".into(), name, ..Default::default() }));
                    }
                }
                8 => {}
                _ => return None,
            }
        }
        Some(out)
    }
}
