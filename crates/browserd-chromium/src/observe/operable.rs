//! Which nodes are operable and get a ref: the interactive roles, contenteditable, and the heuristic clickables
//! (`tabindex`, a click listener, a pointer cursor); whether a node has operable nodes below it, and the descendant
//! that takes a node's clicks.

use serde_json::Value;

use super::renderer::Renderer;
use crate::ax::AxTree;

/// What the operable pass makes of a node.
pub(super) enum Operability {
    /// It gets a line of its own, with the role shown.
    Line(String),
    /// A heuristic operable (focusable, pointer, listener) with operable nodes inside: a container that keeps a ref
    /// (to scroll it or expand it) because it is focusable or shows a pointer; its ref and the role shown.
    Container(String, String),
    /// A heuristic operable whose one operable node inside is all a user sees of it (antd's tab wrapper around its
    /// `role="tab"`, a pagination `<li tabindex=0 title="2">` around its `<a>`, a Select's clickable box around its
    /// unnamed input): no line of its own; that node's line says the wrapper's name ([`Fold`]).
    Fold(Fold),
    /// Not operable, a heuristic operable inside an operable node, or a container that keeps no ref: its children
    /// are walked as for any other node.
    Plain,
}

/// A wrapper folded into the one operable node inside it.
pub(super) struct Fold {
    /// The node inside (its id in the frame's tree).
    pub(super) inner: String,
    /// The wrapper's name, said on the inner node's line (its name when it has none, else `title=`).
    pub(super) name: String,
    /// Whether the wrapper's own text is that name (a Select's placeholder beside its input): not read again.
    pub(super) text_is_name: bool,
}

pub(super) const INTERACTIVE: &[&str] = &[
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
    "Date",
    "DateTime",
    "InputTime",
    "ColorWell",
];

/// Fields drawn as parts of their own (a date's month, day and year; a time's hours and minutes; a colour's well):
/// one line with the field's value, its parts not listed (`fill` sets the whole value).
pub(super) const WHOLE_FIELDS: &[&str] = &["date", "time", "color"];

impl Renderer<'_> {
    /// Whether a node gets a line of its own, is a container that keeps a ref, or neither. A heuristic operable that
    /// contains operable nodes is a container: its children are listed under it.
    pub(super) fn operability(&mut self, frame: &str, ax: &AxTree, id: &str) -> Operability {
        let Some(n) = ax.nodes.get(id) else { return Operability::Plain };
        match self.operable(frame, ax, id) {
            // A dialog's own listener (a click on its backdrop closes it) and the panel filling it do not make them
            // controls: the dialog keeps its line, named as it is, with its content under it.
            Some((_, false))
                if matches!(n.role.as_str(), "dialog" | "alertdialog")
                    || self.dialog_panels.contains(&(frame.to_owned(), id.to_owned())) =>
            {
                Operability::Plain
            }
            Some((shown, false)) if self.in_operable == 0 && self.has_operable_descendant(frame, ax, id, 0) => {
                if let Some(fold) = self.fold(frame, ax, id) {
                    return Operability::Fold(fold);
                }
                let d = self.dom(frame, n);
                let keep = d.is_some_and(|d| d.attr("tabindex").is_some() || d.own_pointer());
                if keep && self.bare_wrapper(frame, ax, id) {
                    return Operability::Plain;
                }
                match n.backend {
                    Some(b) if keep => Operability::Container(self.assign_ref(frame, b), shown),
                    _ => Operability::Plain,
                }
            }
            Some((_, false)) if self.in_operable > 0 => Operability::Plain,
            Some((shown, _)) => Operability::Line(shown),
            None => Operability::Plain,
        }
    }

    /// A heuristic operable to fold into the one operable node inside it: one whose text outside that node is none
    /// (icons aside); for a field with no name of its own (an input whose placeholder is a sibling `<div>`), the
    /// text that names it; for a named field, a short text beside it, read as text.
    fn fold(&self, frame: &str, ax: &AxTree, id: &str) -> Option<Fold> {
        let mut inner = Vec::new();
        let mut outside = String::new();
        self.split_content(frame, ax, id, 0, 2, &mut inner, &mut outside);
        let [inner] = inner.as_slice() else { return None };
        let n = ax.nodes.get(id)?;
        let i = ax.nodes.get(inner)?;
        let outside = super::line::fold(&outside);
        if outside.is_empty() {
            let own = super::line::fold(&n.name);
            let name = if own.is_empty() || own == super::line::fold(&i.name) { String::new() } else { own };
            return Some(Fold { inner: inner.clone(), name, text_is_name: false });
        }
        let field = matches!(i.role.as_str(), "combobox" | "textbox" | "searchbox" | "spinbutton");
        if !field || i.ignored {
            return None;
        }
        if i.name.trim().is_empty() {
            return Some(Fold { inner: inner.clone(), name: outside, text_is_name: true });
        }
        // A named field whose box draws a short text beside it (Element Plus's Select: its placeholder or chosen
        // value in a `<span>` over the invisible input, the box taking the clicks): the field's line, the text read
        // under it, no line for the box (it was `clickable "Choose a region":` over the combobox).
        (outside.chars().count() <= 80).then(|| Fold { inner: inner.clone(), name: String::new(), text_is_name: false })
    }

    /// A pointer-only wrapper (no `tabindex`, no name of its own) around several operable nodes and nothing else to
    /// read (MUI's Rating: a `<span>` with a pointer around its stars' labels): it was a container line named by its
    /// first star, `clickable "1 Star":`; its nodes are listed without it.
    fn bare_wrapper(&self, frame: &str, ax: &AxTree, id: &str) -> bool {
        let named = ax.nodes.get(id).and_then(|n| self.dom(frame, n)).is_none_or(|d| {
            d.attr("tabindex").is_some() || d.attr("aria-label").is_some() || d.attr("title").is_some()
        });
        if named {
            return false;
        }
        let mut inner = Vec::new();
        let mut outside = String::new();
        self.split_content(frame, ax, id, 0, 64, &mut inner, &mut outside);
        (2..64).contains(&inner.len()) && super::line::fold(&outside).is_empty()
    }

    /// The outermost operable nodes below `id` (as [`Renderer::has_operable_descendant`] counts them, the scan ends
    /// past `cap` of them) and the text outside them.
    #[allow(clippy::too_many_arguments)]
    fn split_content(
        &self,
        frame: &str,
        ax: &AxTree,
        id: &str,
        depth: u32,
        cap: usize,
        inner: &mut Vec<String>,
        outside: &mut String,
    ) {
        let Some(n) = ax.nodes.get(id) else { return };
        if n.hidden {
            return;
        }
        if depth > 0 && self.operable_inside(frame, ax, id, n) {
            inner.push(id.to_owned());
            return;
        }
        if n.role == "StaticText" {
            outside.push(' ');
            outside.push_str(&n.name);
            return;
        }
        if depth >= 40 || inner.len() >= cap {
            return;
        }
        for c in &n.children {
            self.split_content(frame, ax, c, depth + 1, cap, inner, outside);
        }
    }

    /// Whether a node counts as an operable node inside another one: a semantic operable; one the DOM makes operable
    /// (a list whose click listener serves the title links and chips of its rows, as React's `onClick` on the list
    /// does, lists them rather than swallowing them into one line); or the text of a clickable the accessibility tree
    /// leaves out (a breadcrumb of pointer `<span>`s whose clicks the bar's listener handles).
    fn operable_inside(&self, frame: &str, ax: &AxTree, id: &str, n: &crate::ax::AxNode) -> bool {
        (!n.ignored && self.operable(frame, ax, id).is_some_and(|(_, semantic)| semantic))
            || self.dom_operable(frame, n)
            || (n.role == "StaticText" && self.inline_clickable_element(frame, n).is_some())
    }

    pub(super) fn has_operable_descendant(&self, frame: &str, ax: &AxTree, id: &str, depth: u32) -> bool {
        let Some(n) = ax.nodes.get(id) else { return false };
        if depth > 0 && self.operable_inside(frame, ax, id, n) {
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

    /// How many operable nodes (as [`Renderer::has_operable_descendant`] counts them) are below `id`, counting to 2.
    pub(super) fn operables_below(&self, frame: &str, ax: &AxTree, id: &str, depth: u32) -> usize {
        let Some(n) = ax.nodes.get(id) else { return 0 };
        if depth > 0 && self.operable_inside(frame, ax, id, n) {
            return 1;
        }
        if depth >= 40 {
            return 0;
        }
        let mut count = 0;
        for c in &n.children {
            count += self.operables_below(frame, ax, c, depth + 1);
            if count >= 2 {
                break;
            }
        }
        count
    }

    /// The first operable node below `id` (as [`Renderer::operables_below`] finds them), not looking inside it.
    pub(super) fn first_operable_below(&self, frame: &str, ax: &AxTree, id: &str, depth: u32) -> Option<String> {
        let n = ax.nodes.get(id)?;
        if depth > 0 && self.operable_inside(frame, ax, id, n) {
            return Some(id.to_owned());
        }
        if depth >= 40 {
            return None;
        }
        n.children.iter().find_map(|c| self.first_operable_below(frame, ax, c, depth + 1))
    }

    /// Whether a node gets a ref, with the role to show and whether that role is semantic (not a heuristic).
    pub(super) fn operable(&self, frame: &str, ax: &AxTree, id: &str) -> Option<(String, bool)> {
        let n = ax.nodes.get(id)?;
        let role = n.role.as_str();
        if matches!(role, "tooltip" | "separator") {
            // What a tooltip says is read where it is; the tooltip itself is never a control (Mantine's takes focus
            // for its floating layer, which made it a `clickable` ref in some observations and not in others). A
            // separator divides a menu's items (Element Plus's `<li role="separator">` under the menu's listener
            // was a nameless `clickable`).
            return None;
        }
        if INTERACTIVE.contains(&role) {
            if self.dom(frame, n).is_some_and(|d| d.by_label) {
                // Its label is the control a user clicks, and has the line.
                return None;
            }
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
                "Date" | "DateTime" => "date",
                "InputTime" => "time",
                "ColorWell" => "color",
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
        if let Some(t) = d.toggle {
            // A switch drawn by CSS around a checkbox that is not rendered: the label is the control.
            return Some((t.role.to_owned(), true));
        }
        if matches!(d.tag.as_str(), "html" | "body" | "iframe" | "label") {
            return None;
        }
        if self.in_toggle_label(frame, ax, d) || self.textless_toggle_part(frame, ax, id, d) {
            // A part of the label of a checkbox, radio or switch (Element Plus's radio button: `<label><input
            // type=radio><span class="el-radio-button__inner">Large</span></label>`, the span with a pointer): a
            // click there is a click on the label, which the control's own line takes.
            return None;
        }
        // A heading the page handles clicks on (a column's title that folds it) still reads as a heading.
        let shown = |kind: &str| Some((if role == "heading" { "heading" } else { kind }.to_owned(), false));
        // A tab panel in the tab order is focusable so the keyboard can scroll it (as ARIA's practices advise: antd,
        // Radix): it is the tab's panel, read as such, not a control (it was `e48 focusable "Members"`).
        if d.in_tab_order() && !focus_sentinel(d, n) && role != "tabpanel" {
            return shown("focusable");
        }
        if d.own_pointer() || anchor_without_href(d) {
            return shown("clickable");
        }
        if d.clickable
            && !listener_over_nothing(ax, n)
            && !listener_over_tooltip(ax, n, d)
            && !self.inert_listener(frame, d)
        {
            return shown("clickable");
        }
        if self.delegated_item(frame, d) {
            return shown("clickable");
        }
        None
    }

    /// An item of a list whose listener or pointer cursor serves its items (jQuery UI's sortable binds the `<ul>`, a
    /// Vue `<ul @click>` picks the `<li>` clicked, jQuery's `.on('click', 'li', ...)`): each item is what a user
    /// clicks or drags, so each gets a ref, and the list is not one clickable line of all their texts.
    fn delegated_item(&self, frame: &str, d: &super::snapshot::DomNode) -> bool {
        d.tag == "li"
            && d.parent.and_then(|p| self.docs.get(frame)?.get(&p)).is_some_and(|list| {
                matches!(list.tag.as_str(), "ul" | "ol" | "menu") && (list.clickable || list.own_pointer())
            })
    }

    /// Whether a click listener of `d`'s own is no sign that a click on `d` does anything of its own: in a clicked
    /// row ([`Self::in_clicked_row`]) or a quiet header cell ([`Self::quiet_header`]). One rule for `operable`,
    /// `dom_operable` and `inline_clickable_element`.
    fn inert_listener(&self, frame: &str, d: &super::snapshot::DomNode) -> bool {
        self.in_clicked_row(frame, d) || self.quiet_header(frame, d)
    }

    /// Whether `d` lies in a table row that takes clicks itself (a listener or a pointer cursor on its `<tr>` or
    /// `role=row`): a click listener of `d`'s own with no pointer cursor of its own is then the row's content, a click
    /// on it a click on the row (Element Plus's status tag listens for clicks whether or not the app handles them; the
    /// row opens on `@row-click`). The row has the ref, `d` its text.
    fn in_clicked_row(&self, frame: &str, d: &super::snapshot::DomNode) -> bool {
        let Some(docs) = self.docs.get(frame) else { return false };
        let mut at = d.parent;
        for _ in 0..8 {
            let Some(e) = at.and_then(|b| docs.get(&b)) else { return false };
            if e.tag == "tr" || e.attr("role") == Some("row") {
                return e.clickable || e.own_pointer();
            }
            if matches!(e.tag.as_str(), "table" | "tbody" | "thead" | "body") {
                return false;
            }
            at = e.parent;
        }
        false
    }

    /// Whether `d` is a header cell whose only sign is a click listener of its own, in a header row where another
    /// cell shows a pointer cursor of its own: the page marks the headers a click does something on (Element Plus
    /// listens on every header cell, and sorts only the sortable ones, which it draws with a pointer). It reads as the
    /// header's text.
    fn quiet_header(&self, frame: &str, d: &super::snapshot::DomNode) -> bool {
        if d.tag != "th" || d.own_pointer() {
            return false;
        }
        let Some(parent) = d.parent else { return false };
        let mut memo = self.pointer_header_rows.borrow_mut();
        let rows = memo.entry(frame.to_owned()).or_insert_with(|| {
            let docs = self.docs.get(frame);
            docs.into_iter()
                .flat_map(|m| m.values())
                .filter(|h| h.tag == "th" && h.own_pointer())
                .filter_map(|h| h.parent)
                .collect()
        });
        rows.contains(&parent)
    }

    /// Whether the DOM alone makes a node operable, whatever the accessibility tree says of it: a non-negative
    /// `tabindex`, a click listener of its own, a pointer cursor its parent does not show, an `<a>` without `href`.
    pub(super) fn dom_operable(&self, frame: &str, n: &crate::ax::AxNode) -> bool {
        // Behind an open modal dialog nothing takes a click, whatever its listeners.
        !n.hidden
            && !n.blocked
            && self.dom(frame, n).is_some_and(|d| {
                d.toggle.is_some()
                    || !matches!(d.tag.as_str(), "html" | "body" | "iframe" | "label")
                        && !matches!(d.attr("role"), Some("tooltip" | "separator"))
                        && ((d.in_tab_order() && !focus_sentinel(d, n))
                            || (d.clickable
                                && !self.inert_listener(frame, d)
                                && !self
                                    .axs
                                    .get(frame)
                                    .is_some_and(|ax| listener_over_nothing(ax, n) || listener_over_tooltip(ax, n, d)))
                            || d.own_pointer()
                            || anchor_without_href(d)
                            || self.delegated_item(frame, d))
                        && !self.axs.get(frame).is_some_and(|ax| {
                            self.in_toggle_label(frame, ax, d) || self.textless_toggle_part_node(frame, ax, n, d)
                        })
            })
    }

    /// The element outside the accessibility tree whose text `n` is, when the DOM makes that element operable (an
    /// inline `<a>` without `href`, a `span` with a pointer cursor or a click listener, a switch's `<label>`).
    pub(super) fn inline_clickable_element(&self, frame: &str, n: &crate::ax::AxNode) -> Option<i64> {
        let docs = self.docs.get(frame)?;
        let element = docs.get(&n.backend?)?.parent?;
        let d = docs.get(&element)?;
        let operable = d.toggle.is_some()
            || (!matches!(d.tag.as_str(), "html" | "body" | "iframe" | "label" | "option")
                && ((d.clickable && !self.inert_listener(frame, d)) || d.own_pointer() || anchor_without_href(d)));
        if !operable {
            return None;
        }
        (!self.in_tree(frame, element)).then_some(element)
    }

    /// Whether the accessibility tree of `frame` has a node for `backend` (hidden or not); the set is built once per
    /// frame.
    pub(super) fn in_tree(&self, frame: &str, backend: i64) -> bool {
        let mut memo = self.ax_backends.borrow_mut();
        if !memo.contains_key(frame) {
            let set = self.axs.get(frame).map(|ax| ax.nodes.values().filter_map(|x| x.backend).collect());
            memo.insert(frame.to_owned(), set.unwrap_or_default());
        }
        memo.get(frame).is_some_and(|set| set.contains(&backend))
    }

    /// The nearest element at or above `from` that the accessibility tree has (its backend id), calling `visit` on
    /// each element met on the way, that one included. What the tree leaves out (an `aria-hidden` subtree) is shown
    /// where that node is walked.
    pub(super) fn tree_ancestor(
        &self,
        frame: &str,
        from: Option<i64>,
        mut visit: impl FnMut(&super::snapshot::DomNode),
    ) -> Option<i64> {
        let docs = self.docs.get(frame)?;
        let mut at = from;
        for _ in 0..64 {
            let b = at?;
            let d = docs.get(&b)?;
            visit(d);
            if self.in_tree(frame, b) {
                return Some(b);
            }
            at = d.parent;
        }
        None
    }

    /// Whether node `id` is a [`DomNode::toggle_part`] with no text and no icon.
    fn textless_toggle_part(&self, frame: &str, ax: &AxTree, id: &str, d: &super::snapshot::DomNode) -> bool {
        ax.nodes.get(id).is_some_and(|n| self.textless_toggle_part_node(frame, ax, n, d))
    }

    fn textless_toggle_part_node(
        &self,
        frame: &str,
        ax: &AxTree,
        n: &crate::ax::AxNode,
        d: &super::snapshot::DomNode,
    ) -> bool {
        if !d.toggle_part || d.icon.is_some() || !n.name.trim().is_empty() {
            return false;
        }
        let mut t = String::new();
        for c in &n.children {
            self.subtree_text(frame, ax, c, &mut t);
        }
        t.trim().is_empty()
    }

    /// Whether one of the three elements around `d` is the `<label>` that names a checkbox, radio or switch.
    fn in_toggle_label(&self, frame: &str, ax: &AxTree, d: &super::snapshot::DomNode) -> bool {
        let Some(docs) = self.docs.get(frame) else { return false };
        let mut at = d.parent;
        for _ in 0..3 {
            let Some(b) = at else { return false };
            let Some(p) = docs.get(&b) else { return false };
            if p.tag == "label" {
                return self.labels_a_toggle(frame, ax, b);
            }
            at = p.parent;
        }
        false
    }

    /// The nearest of the two elements around a control with no box of its own that is drawn and takes clicks (a
    /// listener or a pointer cursor): what a user clicks to operate it.
    pub(super) fn drawn_click_wrapper(&self, frame: &str, backend: i64) -> Option<i64> {
        let docs = self.docs.get(frame)?;
        let mut at = docs.get(&backend)?.parent;
        for _ in 0..2 {
            let b = at?;
            let d = docs.get(&b)?;
            if (d.clickable || d.pointer) && d.rect.is_some_and(|[_, _, w, h]| w > 1.0 && h > 1.0) {
                return Some(b);
            }
            at = d.parent;
        }
        None
    }

    /// The descendant (outside other operable nodes) with a click listener or a pointer cursor that takes the node's
    /// click: the first that holds text (a tree row's title, not the switcher icon before it, which only expands the
    /// row), else the first.
    pub(super) fn click_descendant(&self, frame: &str, ax: &AxTree, id: &str, depth: u32) -> Option<i64> {
        let mut found = Vec::new();
        self.click_descendants(frame, ax, id, depth, &mut found);
        let has_text = |id: &str| {
            let mut t = String::new();
            self.subtree_text(frame, ax, id, &mut t);
            !t.trim().is_empty()
        };
        found.iter().find(|(node, _)| has_text(node)).or(found.first()).map(|(_, backend)| *backend)
    }

    /// The descendants with a click listener or a pointer cursor, outermost only, outside other operable nodes.
    fn click_descendants(&self, frame: &str, ax: &AxTree, id: &str, depth: u32, out: &mut Vec<(String, i64)>) {
        let Some(n) = ax.nodes.get(id) else { return };
        if depth > 0 {
            if INTERACTIVE.contains(&n.role.as_str()) {
                return;
            }
            if let Some(d) = self.dom(frame, n)
                && (d.clickable || d.own_pointer())
                && let Some(b) = n.backend
            {
                out.push((id.to_owned(), b));
                return;
            }
        }
        if depth > 6 || out.len() >= 8 {
            return;
        }
        for c in &n.children {
            self.click_descendants(frame, ax, c, depth + 1, out);
        }
    }
}

/// A click listener (no pointer cursor, no `tabindex`) on an element whose only content is a tooltip: the container
/// React renders a portal into, which it listens on for every event (Mantine's open tooltip read as a `clickable`;
/// beside it, the empty or hidden elements other portals leave there).
fn listener_over_tooltip(ax: &AxTree, n: &crate::ax::AxNode, d: &super::snapshot::DomNode) -> bool {
    let shown: Vec<&crate::ax::AxNode> =
        n.children.iter().filter_map(|c| ax.nodes.get(c)).filter(|c| !c.hidden && !empty(ax, c, 4)).collect();
    !d.own_pointer() && d.attr("tabindex").is_none() && matches!(shown.as_slice(), [only] if only.role == "tooltip")
}

/// Nothing shown in it: no name, and the same of everything in it (to `depth` levels; deeper counts as shown).
fn empty(ax: &AxTree, n: &crate::ax::AxNode, depth: u8) -> bool {
    n.hidden
        || (n.name.trim().is_empty()
            && depth > 0
            && n.children.iter().all(|c| ax.nodes.get(c).is_none_or(|c| empty(ax, c, depth - 1))))
}

/// A click listener on an element all of whose content is hidden (a framework's root, whose listener serves the
/// whole app, while a modal makes that app inert): nothing there takes a click.
fn listener_over_nothing(ax: &AxTree, n: &crate::ax::AxNode) -> bool {
    !n.children.is_empty() && n.children.iter().all(|c| ax.nodes.get(c).is_none_or(|c| c.hidden))
}

/// An element drawn to be clicked on its own: a `<button>`, or a pointer cursor its parent does not show, with a
/// painted box of 8 px or more (a chip's delete icon, Mantine's `aria-hidden` pill remove button inside a box whose
/// pointer it shares; `element::hidden_controls_in`).
pub(super) fn pointer_control(d: &super::snapshot::DomNode) -> bool {
    (d.own_pointer() || d.tag == "button")
        && d.paint.is_some()
        && d.rect.is_some_and(|[_, _, w, h]| w >= 8.0 && h >= 8.0)
        && !matches!(d.tag.as_str(), "html" | "body" | "iframe" | "label" | "option")
}

/// An empty element in the tab order with no box to see (at most 1 px on a side): a focus trap's sentinel (MUI,
/// react-focus-lock and Headless UI put one before and after every popup and dialog, to send Tab back into it). It
/// takes focus only to pass it on; nothing there is seen or clicked.
fn focus_sentinel(d: &super::snapshot::DomNode, n: &crate::ax::AxNode) -> bool {
    n.children.is_empty() && n.name.trim().is_empty() && d.rect.is_some_and(|[_, _, w, h]| w <= 1.0 || h <= 1.0)
}

/// An `<a>` without `href` is not a link to the accessibility tree, but users click it: apps handle it by script.
fn anchor_without_href(d: &super::snapshot::DomNode) -> bool {
    d.tag == "a" && d.attr("href").is_none()
}
