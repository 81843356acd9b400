//! The walk of the accessibility tree in document order: each node becomes text, a heading, a row, a container
//! line, an iframe with its frame's tree, or the line of an operable node.

use serde_json::Value;

use super::line::{self, quote, quote_cut};
use super::operable::Operability;
use super::renderer::Renderer;
use super::text::{Drawn, NAME_FROM_CONTENT};
use super::window::COLLECTION_ROLES;
use crate::ax::{AxNode, AxTree};

pub(super) const STRUCTURAL: &[&str] = &[
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
    "tabpanel",
    "tree",
    "toolbar",
    "radiogroup",
    "group",
    "row",
    "list",
];

impl Renderer<'_> {
    /// Walks a node, leaving out the rows/items outside the window of a windowed read, and keeping track of the
    /// tables and lists it is in (what a cut by the byte budget offers to expand) and of the path to it.
    pub(super) fn walk(&mut self, frame: &str, id: &str, indent: u16, named: bool) {
        let axs = self.axs;
        let Some((key, n)) = axs.get(frame).and_then(|ax| ax.nodes.get_key_value(id)) else { return };
        if self.moved_away(frame, n) || self.behind_covering_modal(frame, id) {
            return;
        }
        if n.role == "tree"
            && let Some(ax) = axs.get(frame)
        {
            self.note_flat_tree(frame, ax, id);
        }
        let indent = if self.flat_tree_depth.is_empty() {
            indent
        } else {
            indent + self.flat_tree_depth.get(&(frame.to_owned(), id.to_owned())).copied().unwrap_or(0)
        };
        let entering_modal = self
            .covering_modal
            .as_ref()
            .is_some_and(|m| !self.in_covering_modal && m.frame == frame && (m.node == id || m.kept.contains(id)));
        self.in_covering_modal |= entering_modal;
        self.path.push((key.as_str(), self.context.len()));
        let collection = (!n.ignored && COLLECTION_ROLES.contains(&n.role.as_str())).then_some(n.backend).flatten();
        match collection {
            Some(b) => {
                self.collections.push((frame.to_owned(), b));
                self.walk_windowed(frame, id, indent, named);
                self.collections.pop();
            }
            None => self.walk_windowed(frame, id, indent, named),
        }
        self.path.pop();
        if entering_modal {
            self.in_covering_modal = false;
        }
    }

    /// A node, unless it is a row/item outside the window of a windowed read.
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

    /// One node: a block-level box starts and ends a line of text, as `innerText` breaks it (two sibling `<div>`s
    /// are two lines, never one), whatever its role (an ignored or generic `<div>` too).
    fn walk_node(&mut self, frame: &str, id: &str, indent: u16, named: bool) {
        let dom = self.axs.get(frame).and_then(|ax| ax.nodes.get(id)).and_then(|n| self.dom(frame, n));
        let block = dom.is_some_and(|d| d.block);
        let space = dom.is_some_and(|d| d.space_before);
        let unrendered = dom.map(|d| d.unrendered).unwrap_or_default();
        let pre = dom.is_some_and(|d| d.tag == "pre");
        let order = dom.map(|d| d.order);
        // A cell of a table the accessibility tree reads as layout (no `cell` role, no `row:` line) after a cell
        // with text: `innerText` puts a tab there, the observation ` | ` (`Total | $4`, never `Total$4`).
        let layout_cell = dom.is_some_and(|d| d.cell)
            && self.row_depth == 0
            && self.axs.get(frame).and_then(|ax| ax.nodes.get(id)).is_none_or(|n| {
                n.ignored || !matches!(n.role.as_str(), "cell" | "gridcell" | "columnheader" | "rowheader")
            });
        if let Some(order) = order {
            // What the page draws before it that the tree leaves out (`aria-hidden` text).
            self.hidden_text_before(frame, order, indent, named);
        }
        if block {
            self.text_break();
        } else if layout_cell {
            self.cell_separator();
        } else if space && !self.pending.is_empty() && !self.pending.ends_with(' ') {
            self.pending.push(' ');
        }
        if unrendered.above {
            self.push(indent, None, line::unrendered("above", "up"));
        }
        // A `<pre>` block (code, a config file, a log) is fenced as Markdown has it, its lines as they are inside.
        let fence = !named && self.row_depth == 0 && pre;
        let fence_at = fence.then(|| self.push(indent, None, line::FENCE.to_owned())).flatten();
        self.walk_inner(frame, id, indent, named);
        if let Some(at) = fence_at {
            self.flush_text();
            if self.out.lines.len() == at + 1 {
                // Nothing inside: no fence.
                self.out.lines.truncate(at);
                self.run.clear();
            } else {
                self.push(indent, None, line::FENCE.to_owned());
            }
        }
        if unrendered.below {
            self.push(indent, None, line::unrendered("below", "down"));
        }
        if let Some(b) = self.axs.get(frame).and_then(|ax| ax.nodes.get(id)).and_then(|n| n.backend) {
            // What the page draws inside it that the tree leaves out, once its children are walked.
            self.hidden_text_after(frame, b, indent, named);
            self.hidden_controls_after(frame, b, indent);
        }
        if block {
            self.text_break();
        }
    }

    /// What a node is decides its lines (`named`: its text is already in the name of an ancestor's line).
    fn walk_inner(&mut self, frame: &str, id: &str, indent: u16, named: bool) {
        let Some(ax) = self.axs.get(frame) else { return };
        let Some(n) = ax.nodes.get(id) else { return };
        // A header, sidebar or footer fixed in place (Mantine's AppShell) is the page's own landmark, not a popup.
        if !self.in_popup
            && !n.hidden
            && !matches!(n.role.as_str(), "banner" | "navigation" | "contentinfo" | "complementary" | "main")
            && self.dom(frame, n).is_some_and(|d| d.fixed)
            && self.has_operable_descendant(frame, ax, id, 0)
        {
            return self.popup(frame, id, indent);
        }
        // An element the accessibility tree ignores (a `div` or an `<a>` without `href` whose click a listener on an
        // ancestor handles, as React, Vue and jQuery's `.on(selector)` do) is still operable when the DOM says so.
        if n.ignored && !(self.in_operable == 0 && self.dom_operable(frame, n)) {
            for c in &n.children {
                self.walk(frame, c, indent, named);
            }
            return;
        }
        if n.role == "listbox" && self.drawn_nowhere(frame, ax, n) {
            // A listbox with no box whose options have none either: a screen reader's copy of a list drawn elsewhere
            // (antd's Select keeps its open options so, beside the ones a user sees and clicks). Nothing there can
            // be clicked.
            return;
        }
        if n.role == "LabelText"
            && !named
            // A label that is the control itself (its input has no box a click reaches: visually hidden, as
            // Bootstrap's `btn-check`, Tailwind's `sr-only` and MUI's Rating draw them) keeps its line.
            && self.dom(frame, n).is_none_or(|d| d.toggle.is_none())
            && self.names_a_toggle(frame, ax, n)
            && !self.has_operable_descendant(frame, ax, id, 0)
        {
            // The `<label for>` of a checkbox, radio or switch that the tree keeps beside it (Bootstrap's form checks:
            // the input, then an inline-block label) is the control's name, not a line again. A label holding the
            // control or links is read as before (`labels_with_links`).
            return;
        }
        if n.role == "LabelText" && !named && self.label_is_its_toggles_name(frame, ax, id, n) {
            // A label holding its checkbox, radio or switch and only the text that names it, in boxes of their own
            // (MUI's `FormControlLabel`: `<label><span><input></span><span>Accept terms</span></label>`): the
            // control's line says that text; it is not read again.
            for c in &n.children {
                self.walk(frame, c, indent, true);
            }
            return;
        }
        match n.role.as_str() {
            "InlineTextBox" => return,
            "LineBreak" => {
                if !named {
                    self.text_break();
                }
                return;
            }
            "StaticText" => {
                if !named && self.in_operable == 0 && self.inline_clickable(frame, n, indent) {
                    return;
                }
                if !named {
                    let dom = self.dom(frame, n);
                    let drawn = Drawn {
                        struck: self.deleted > 0 || dom.is_some_and(|d| d.struck),
                        // In a table row rendered as one line its cells' text stays on that line.
                        keeps_breaks: self.row_depth == 0 && dom.is_some_and(|d| d.keeps_breaks),
                        keeps_spaces: self.row_depth == 0 && dom.is_some_and(|d| d.keeps_spaces),
                    };
                    self.text_drawn(indent, &n.name, drawn);
                }
                return;
            }
            "Iframe" => return self.iframe(frame, n, indent),
            _ => {}
        }
        if self.dom(frame, n).is_some_and(|d| d.tag == "option") {
            // A native option outside a select (its select lists the others): plain text.
            self.text(indent, &n.name);
            return;
        }
        let container_ref = match self.operability(frame, ax, id) {
            Operability::Line(shown) if shown == "heading" => {
                // An operable heading is still the context of what follows it, as any heading.
                self.interactive(frame, id, indent, &shown);
                return self.heading_context(&n.name);
            }
            Operability::Line(shown) => return self.interactive(frame, id, indent, &shown),
            Operability::Container(node_ref, shown) => Some((node_ref, shown)),
            Operability::Fold(fold) => {
                if !fold.name.is_empty() {
                    self.wrapper_names.insert((frame.to_owned(), fold.inner), fold.name);
                }
                for c in &n.children {
                    self.walk(frame, c, indent, named || fold.text_is_name);
                }
                return;
            }
            Operability::Plain => None,
        };
        let role = n.role.as_str();
        let shown_alone = !named && self.in_operable == 0 && self.row_depth == 0;
        if role == "image" && shown_alone && !n.name.trim().is_empty() {
            // Its alternative says what it shows (a `role="img"` of stars is `Rated 4 out of 5`, not its glyphs).
            self.push(indent, None, line::image(&n.name));
        } else if matches!(role, "progressbar" | "meter") && shown_alone {
            let num = |k: &str| n.prop(k).and_then(|v| v.as_f64().or_else(|| v.as_str()?.parse().ok()));
            let value = n.value.parse::<f64>().ok();
            let text = n.prop("valuetext").and_then(Value::as_str).unwrap_or_default();
            let (min, max) = (num("valuemin").unwrap_or(0.0), num("valuemax").unwrap_or(100.0));
            self.push(indent, None, line::progress(role, &n.name, value, min, max, text));
        } else if role == "heading" {
            self.heading(frame, n, indent);
        } else if role == "row" && container_ref.is_none() {
            self.row(frame, ax, id, indent);
        } else if container_ref.is_some()
            || (STRUCTURAL.contains(&role) && (!matches!(role, "region" | "group" | "list") || !n.name.is_empty()))
        {
            self.container(frame, id, n, indent, container_ref);
        } else {
            self.block(frame, ax, id, indent, named);
        }
    }

    /// Whether a node and its options have no area (`width` or `height` 0, or not laid out at all).
    fn drawn_nowhere(&self, frame: &str, ax: &AxTree, n: &AxNode) -> bool {
        let no_area =
            |n: &AxNode| self.dom(frame, n).is_none_or(|d| d.rect.is_none_or(|[_, _, w, h]| w < 1.0 || h < 1.0));
        let options: Vec<&AxNode> =
            n.children.iter().filter_map(|c| ax.nodes.get(c)).filter(|c| c.role == "option").collect();
        n.backend.is_some() && no_area(n) && !options.is_empty() && options.into_iter().all(no_area)
    }

    /// A fixed-position element with operable nodes inside (a confirmation popup, a cookie banner): its own
    /// `popup:` container, so its text and buttons are not read as part of what it covers.
    fn popup(&mut self, frame: &str, id: &str, indent: u16) {
        self.flush_text();
        let start = self.out.lines.len();
        let start_bytes = self.bytes;
        let idx = self.push(indent, None, line::container(None, "popup", ""));
        self.in_popup = true;
        self.walk_node(frame, id, indent + 1, false);
        self.in_popup = false;
        self.flush_text();
        if idx.is_some() && self.out.lines.len() == start + 1 {
            self.out.lines.truncate(start);
            self.bytes = start_bytes;
        }
    }

    /// A frame owner: the frame's document under it, or `(not loaded)`.
    fn iframe(&mut self, frame: &str, n: &AxNode, indent: u16) {
        let child = n.backend.and_then(|b| {
            self.owners
                .get(&(frame.to_owned(), b))
                .cloned()
                .or_else(|| self.docs.get(frame).and_then(|d| d.get(&b)).and_then(|d| d.content_frame.clone()))
        });
        match child.filter(|c| self.axs.contains_key(c)) {
            Some(c) if self.frames.get(&c).is_some_and(|f| (self.denied)(&f.url)) => {
                let url = self.frames.get(&c).map_or("", |f| f.url.as_str());
                self.push(indent, None, line::frame_not_authorised(&crate::origin::shown_origin(url)));
            }
            Some(c) => {
                let (key, url) = self.frames.get(&c).map_or((0, ""), |f| (f.key, f.url.as_str()));
                self.push(indent, None, line::iframe(&n.name, key, url, &self.origin));
                let root = self.axs[&c].root.clone();
                // What is around a node is looked for in its own frame only.
                let path = std::mem::take(&mut self.path);
                if let Some(r) = root {
                    self.walk(&c, &r, indent + 1, false);
                }
                self.path = path;
                self.flush_text();
            }
            None => {
                self.push(indent, None, line::iframe_not_loaded(&n.name));
            }
        }
    }

    /// A heading line, and its content (its text is the heading's). A heading that only repeats the name of the
    /// container just opened (`region "Inbox":`) is left out. It stays the context of what follows until the next
    /// structural change.
    fn heading(&mut self, frame: &str, n: &AxNode, indent: u16) {
        let level = n.prop("level").and_then(Value::as_u64).unwrap_or(2);
        let label = format!(" {}:", quote(&n.name));
        let repeats = indent > 0
            && self.pending.is_empty()
            && self
                .out
                .lines
                .last()
                .is_some_and(|l| l.node_ref.is_none() && l.indent + 1 == indent && l.text.ends_with(&label));
        if !repeats {
            self.push(indent, None, line::heading(level, &n.name));
        }
        self.heading_context(&n.name);
        for c in &n.children {
            self.walk(frame, c, indent + 1, true);
        }
        self.flush_text();
    }

    /// A heading is the context of what follows it until the next structural change (the enclosing walk truncates
    /// the context when it leaves).
    fn heading_context(&mut self, name: &str) {
        let q = quote_cut(name, 40);
        if self.context.last() != Some(&q) {
            self.context.push(q);
        }
    }

    /// A table row: one line, its cells joined with ` | `; operable cells get their own lines right after it (and
    /// one operable cell takes the row as its context, see `merge_row`).
    fn row(&mut self, frame: &str, ax: &AxTree, id: &str, indent: u16) {
        let n = &ax.nodes[id];
        self.flush_text();
        // Two controls in the row, or one that holds another (a sortable header cell with its sort button): one row
        // line of all its cells, the controls under it.
        let controls = if self.row_depth == 0 { self.operables_below(frame, ax, id, 0) } else { 0 };
        let nested = controls == 1
            && self
                .first_operable_below(frame, ax, id, 0)
                .is_some_and(|o| self.has_operable_descendant(frame, ax, &o, 0));
        if controls >= 2 || nested {
            return self.row_of_controls(frame, ax, id, indent);
        }
        let ctx_len = self.context.len();
        let mut t = String::new();
        self.first_text(ax, id, &mut t);
        if t.is_empty() {
            t.clone_from(&n.name);
        }
        if !t.trim().is_empty() {
            self.context.push(quote_cut(&t, 40));
        }
        let start = self.out.lines.len();
        let inter_start = self.inter.len();
        self.row_depth += 1;
        for c in &n.children {
            self.walk(frame, c, indent, false);
        }
        self.row_depth -= 1;
        self.flush_text();
        self.context.truncate(ctx_len);
        self.merge_row(start, inter_start);
    }

    /// A table row with two or more operable cells (a checkbox, a name link and a menu button): one line of all its
    /// cells, `row "Ada Lovelace | ada@acme.test | Active":`, with its operable nodes under it, so each control is
    /// seen in its row and its cells' text is not split around them.
    fn row_of_controls(&mut self, frame: &str, ax: &AxTree, id: &str, indent: u16) {
        let name = match self.row_cells(frame, ax, id) {
            Some(cells) => line::fold(&cells.join(" | ")),
            None => {
                let mut t = String::new();
                self.subtree_text(frame, ax, id, &mut t);
                line::fold(&t).trim_matches(|c: char| c == ' ' || c == '|').to_owned()
            }
        };
        self.push(indent, None, line::container(None, "row", &name));
        let ctx_len = self.context.len();
        if !name.is_empty() {
            self.context.push(quote_cut(&name, 40));
        }
        self.row_depth += 1;
        for c in &ax.nodes[id].children {
            // Its text is the row line's: only its operable nodes (and their own lines) follow.
            self.walk(frame, c, indent + 1, true);
        }
        self.row_depth -= 1;
        self.flush_text();
        self.context.truncate(ctx_len);
    }

    /// A container's name without the names of the operable nodes inside it, where it ends with them (the name
    /// Chromium reads from its content); the name unchanged when nothing would be left.
    fn without_inner_names(&self, frame: &str, ax: &AxTree, id: &str, name: &str) -> String {
        let mut inner = Vec::new();
        self.operable_names(frame, ax, id, 0, &mut inner);
        let mut rest = name.trim_end();
        for n in inner.iter().rev() {
            let n = n.trim();
            if n.is_empty() {
                continue;
            }
            match rest.strip_suffix(n) {
                Some(r) => rest = r.trim_end(),
                None => break,
            }
        }
        if rest.trim().is_empty() { name.to_owned() } else { rest.to_owned() }
    }

    /// The names of the outermost semantic operable nodes below `id`, in document order.
    fn operable_names(&self, frame: &str, ax: &AxTree, id: &str, depth: u32, out: &mut Vec<String>) {
        let Some(n) = ax.nodes.get(id) else { return };
        for c in &n.children {
            let Some(cn) = ax.nodes.get(c) else { continue };
            if !cn.ignored && self.operable(frame, ax, c).is_some_and(|(_, semantic)| semantic) {
                out.push(cn.name.clone());
            } else if depth < 12 {
                self.operable_names(frame, ax, c, depth + 1, out);
            }
        }
    }

    /// The texts of a row's cells, when its children are all cells: an empty cell keeps its place (a calendar's
    /// week that starts on a Tuesday reads `| | 1 | 2 | …` under `Su | Mo | Tu | …`), but one that holds only a
    /// control (a row's checkbox) is left out at the start, and empty cells at the end are left out.
    fn row_cells(&self, frame: &str, ax: &AxTree, id: &str) -> Option<Vec<String>> {
        let n = ax.nodes.get(id)?;
        let mut cells = Vec::with_capacity(n.children.len());
        for c in &n.children {
            let cell = ax.nodes.get(c)?;
            let is_cell = matches!(cell.role.as_str(), "cell" | "gridcell" | "columnheader" | "rowheader")
                || self.dom(frame, cell).is_some_and(|d| d.cell);
            if !is_cell {
                return None;
            }
            let mut t = String::new();
            self.subtree_text(frame, ax, c, &mut t);
            let text = line::fold(&t).trim_matches(|ch: char| ch == ' ' || ch == '|').to_owned();
            let control_only = text.is_empty() && self.has_operable_descendant(frame, ax, c, 0);
            if !(control_only && cells.is_empty()) {
                cells.push(text);
            }
        }
        while cells.last().is_some_and(String::is_empty) {
            cells.pop();
        }
        Some(cells)
    }

    /// A landmark, named region or group, table, list, dialog, ... (or a heuristic operable that keeps a ref and has
    /// operable nodes inside): a line that opens its children, dropped again when nothing is inside. Its name is the
    /// context of what it holds.
    fn container(&mut self, frame: &str, id: &str, n: &AxNode, indent: u16, container_ref: Option<(String, String)>) {
        let role = n.role.as_str();
        let shown_role = match &container_ref {
            Some((_, shown)) if !STRUCTURAL.contains(&role) => shown.as_str(),
            _ => role,
        };
        let node_ref = container_ref.as_ref().map(|(r, _)| r.as_str());
        // A clickable card or row with buttons of its own has no name of its own: its first text names it (the line
        // of that text inside it is then dropped as an echo, see `drop_label_echoes`).
        let mut name = n.name.clone();
        if container_ref.is_some()
            && !name.trim().is_empty()
            && let Some(ax) = self.axs.get(frame)
        {
            // Its name read from its content takes in the names of the controls inside it, which have lines of
            // their own: a sortable header `Name Name: Activate to sort` around its sort button is `Name`.
            name = self.without_inner_names(frame, ax, id, &name);
        }
        if name.trim().is_empty()
            && container_ref.is_some()
            && let Some(ax) = self.axs.get(frame)
        {
            self.first_text(ax, id, &mut name);
        }
        let label = line::container(node_ref, shown_role, &name);
        if n.flag("modal") && self.out.modal.is_none() {
            self.out.modal = Some(format!("{role} {}", quote(&n.name)));
            self.modal_at = n.backend.map(|b| (frame.to_owned(), b));
        }
        let start = self.out.lines.len();
        let start_bytes = self.bytes;
        let tail = label.len() - 1;
        let idx = self.push(indent, node_ref.map(str::to_owned), label);
        if let (Some(line), Some(_)) = (idx, node_ref) {
            // A container that keeps a ref (a clickable card) is told apart from its namesakes like any operable line.
            let (role, name, context) = (shown_role.to_owned(), line::fold(&name), self.context.clone());
            let scope = self.scope(frame);
            self.inter.push(super::context::Operable { line, role, name, context, tail, scope });
        }
        let ctx_len = self.context.len();
        if !name.is_empty() {
            self.context.push(quote_cut(&name, 40));
        }
        if let Some(b) = n.backend {
            self.containers.push((frame.to_owned(), b));
        }
        let named_children = role == "row" && !n.name.is_empty();
        if matches!(role, "dialog" | "alertdialog")
            && let [panel] = n.children.as_slice()
        {
            self.dialog_panels.insert((frame.to_owned(), panel.clone()));
        }
        for c in &n.children {
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
    }

    /// Any other node: its children at the same indent; a paragraph, list item, cell, ... starts and ends a text
    /// line (cells of a row being rendered share the row's line), and a list item, article or row is the context of
    /// what it holds.
    fn block(&mut self, frame: &str, ax: &AxTree, id: &str, indent: u16, named: bool) {
        let n = &ax.nodes[id];
        let role = n.role.as_str();
        let ctx_len = self.context.len();
        if matches!(role, "listitem" | "article" | "row") {
            let mut t = String::new();
            self.first_text(ax, id, &mut t);
            if !t.is_empty() {
                self.context.push(quote_cut(&t, 40));
            }
        }
        let block = matches!(
            role,
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
        let cell = matches!(role, "cell" | "gridcell" | "columnheader" | "rowheader");
        if cell && self.row_depth > 0 {
            self.cell_separator();
        } else if block {
            self.flush_text();
        }
        let child_named = named || (NAME_FROM_CONTENT.contains(&role) && !n.name.is_empty() && role != "cell");
        // Text removed from the document (`<del>`, `<s>`) is shown struck through even where CSS draws it plain.
        let deletion = role == "deletion";
        self.deleted += u32::from(deletion);
        // A list inside a list (a tree built from nested lists) is indented under its item.
        let list = role == "list";
        let child_indent = if list && self.list_depth > 0 { indent + 1 } else { indent };
        let tree = list && (self.tree_depth > 0 || self.list_is_tree(frame, ax, id, 0));
        let item = role == "listitem" && self.tree_depth > 0;
        if list {
            self.list_depth += 1;
        }
        if tree {
            self.tree_depth += 1;
        }
        if item {
            let nested = self.has_nested_list(frame, ax, id);
            let (frame, id) = (frame.to_owned(), id.to_owned());
            self.tree_items.push(super::disclosure::TreeItem { frame, id, nested, stated: false });
        }
        for c in &n.children {
            self.walk(frame, c, child_indent, child_named);
        }
        self.deleted -= u32::from(deletion);
        if item {
            self.tree_items.pop();
        }
        if tree {
            self.tree_depth -= 1;
        }
        if list {
            self.list_depth -= 1;
        }
        if block && !(cell && self.row_depth > 0) {
            self.flush_text();
        }
        self.context.truncate(ctx_len);
    }
}

impl Renderer<'_> {
    /// Whether a `LabelText` node holds one operable node, a checkbox, radio or switch, named by exactly the label's
    /// text.
    fn label_is_its_toggles_name(&self, frame: &str, ax: &AxTree, id: &str, n: &AxNode) -> bool {
        fn toggle_below<'a>(ax: &'a AxTree, id: &str, depth: u32) -> Option<&'a AxNode> {
            let n = ax.nodes.get(id)?;
            if depth > 0 && !n.ignored && matches!(n.role.as_str(), "checkbox" | "radio" | "switch") {
                return Some(n);
            }
            if depth > 8 {
                return None;
            }
            n.children.iter().find_map(|c| toggle_below(ax, c, depth + 1))
        }
        // A label that is the control itself (its input hidden) has the line.
        if self.dom(frame, n).is_some_and(|d| d.toggle.is_some()) || self.operables_below(frame, ax, id, 0) != 1 {
            return false;
        }
        let Some(toggle) = toggle_below(ax, id, 0) else { return false };
        let mut t = String::new();
        self.subtree_text(frame, ax, id, &mut t);
        let name = line::fold(&toggle.name);
        !name.is_empty() && line::fold(&t) == name
    }

    /// Whether a `LabelText` node is the label a checkbox, radio or switch of its frame is named by (`labelledby`).
    fn names_a_toggle(&self, frame: &str, ax: &AxTree, n: &AxNode) -> bool {
        n.backend.is_some_and(|b| self.labels_a_toggle(frame, ax, b))
    }

    /// Whether the element `b` is the label a checkbox, radio or switch of its frame is named by (`labelledby`).
    pub(super) fn labels_a_toggle(&self, frame: &str, ax: &AxTree, b: i64) -> bool {
        let mut memo = self.toggle_labels.borrow_mut();
        let labels = memo.entry(frame.to_owned()).or_insert_with(|| {
            ax.nodes
                .values()
                .filter(|t| matches!(t.role.as_str(), "checkbox" | "radio" | "switch"))
                .filter_map(|t| t.prop("labelledby").and_then(Value::as_array))
                .flatten()
                .filter_map(Value::as_i64)
                .collect()
        });
        labels.contains(&b)
    }
}
