//! The operable-element pass: the line of an operable node (ref, role shown, name, states, value, placeholder, link
//! target, a select's options), recorded in the ref table and the observation's node summaries.

use serde_json::Value;

use super::NodeSummary;
use super::context::Operable;
use super::line::{self, RefLine};
use super::renderer::Renderer;
use super::snapshot::DomNode;
use crate::ax::{AxNode, AxTree};
use crate::state::NodeFacts;

/// Roles whose own ARIA states say which one is chosen (`selected`, `checked`), and the tab panel, the one shown:
/// their class never adds a state.
const ROLES_WITH_CHOICE_STATE: &[&str] = &[
    "option",
    "tab",
    "treeitem",
    "radio",
    "checkbox",
    "switch",
    "menuitemradio",
    "menuitemcheckbox",
    "row",
    "gridcell",
    "columnheader",
    "rowheader",
    // Only the shown panel is there: `ant-tabs-tabpane-active` says nothing more.
    "tabpanel",
];

impl Renderer<'_> {
    /// The line of an operable node (`shown`: the role it shows), then the operable nodes inside it (a select's
    /// options are on its own line). Past the node budget, or once the byte budget is spent, it is counted as
    /// omitted and its container offered to expand.
    pub(super) fn interactive(&mut self, frame: &str, id: &str, indent: u16, shown: &str) {
        let ax = &self.axs[frame];
        let n = &ax.nodes[id];
        if self.nodes_full() || self.bytes_full.is_some() {
            self.omitted += 1;
            self.omitted_lines += 1;
            if let Some(c) = self.containers.last()
                && !self.expand.contains(c)
            {
                self.expand.push(c.clone());
            }
            return;
        }
        let dom = self.dom(frame, n).cloned();
        let facts = NodeFacts::new(&n.role, &n.name);
        let toggle = dom.as_ref().and_then(|d| d.toggle);
        let mut name = n.name.clone();
        if name.trim().is_empty()
            && (matches!(shown, "clickable" | "focusable" | "button" | "link") || toggle.is_some())
        {
            let mut t = String::new();
            self.subtree_text(frame, ax, id, &mut t);
            let t = t.trim_end().to_owned();
            name = t;
        }
        if name.trim().is_empty()
            && let Some(input) = dom.as_ref().and_then(|d| d.toggle_input)
        {
            // A label standing for its visually hidden radio (Tailwind's `sr-only`, Bootstrap's `btn-check`) that
            // Chromium leaves out of the tree, its text with it, when the label sits in a named group: the input's
            // name is that text.
            name = super::controls::node_of(ax, input).map(|(_, x)| x.name.clone()).unwrap_or_default();
        }
        if name.trim().is_empty()
            && matches!(shown, "clickable" | "button" | "link")
            && let Some(label) = n.backend.and_then(|b| self.host_label(frame, b))
        {
            name = label;
        }
        // A clickable wrapper folded into this node (`operable::Fold`) names it, or says what it does beside the
        // name it has (a pagination `<li title="Next Page">` around a button named by its arrow icon).
        let mut wrapper_title = None;
        if let Some(w) = self.wrapper_names.get(&(frame.to_owned(), id.to_owned())) {
            if name.trim().is_empty() {
                name = w.clone();
            } else {
                wrapper_title = Some(w.clone());
            }
        }
        let name = self.without_icon_names(frame, &name);
        let mut states = self.states(n, shown, dom.as_ref());
        if let Some(order) = n.backend.and_then(|b| self.sorted_by(frame, b)) {
            states.push(format!("sorted={order}"));
        }
        // A control with no name that draws an icon (a bin, a pencil): the icon tells it from its neighbours.
        let icon = dom.as_ref().and_then(|d| d.icon.clone()).filter(|_| name.trim().is_empty());
        if let Some(icon) = &icon {
            states.insert(0, format!("icon={icon}"));
        }
        if let Some(t) = toggle {
            let input = dom.as_ref().and_then(|d| d.toggle_input);
            states.insert(0, self.toggle_state(frame, t, input).to_owned());
        }
        let disclosed = states.iter().any(|s| matches!(s.as_str(), "expanded" | "collapsed" | "leaf" | "branch"));
        if let Some(d) = self.tree_row_state(frame, id, &name, disclosed) {
            states.insert(0, d.label().to_owned());
        }
        if let Some(b) = n.backend
            && self.covered(frame, b)
        {
            states.push("covered".into());
        }
        // A tooltip says what a control does where its name does not (an icon button named by its glyph):
        // `e16 button "⋮" title="Actions"`.
        if let Some(tip) = dom.as_ref().and_then(|d| d.attr("title")).map(line::fold).or(wrapper_title)
            && !tip.is_empty()
            && !line::fold(&name).contains(tip.as_str())
        {
            states.push(format!("title={}", line::quote(&tip)));
        }
        let is_select = dom.as_ref().is_some_and(|d| d.tag == "select");
        if is_select {
            // A closed native select says nothing by being collapsed; it is operated with the `select` action.
            states.retain(|s| s != "collapsed");
        }
        let Some(backend) = n.backend else {
            self.walk_children(frame, &n.children, indent);
            return;
        };
        let r = self.assign_ref(frame, backend);
        // A spinbutton drawn by an `<input>` shows what is typed in it, whatever its `aria-valuenow` still says (a
        // jQuery UI spinner updates that only when it spins).
        let typed =
            dom.as_ref().filter(|d| shown == "spinbutton" && d.tag == "input").and_then(|d| d.input_value.as_ref());
        let selection = if shown == "combobox" { self.combobox_value(frame, ax, n) } else { None };
        let value = typed.or(selection.as_ref()).unwrap_or(&n.value);
        // A multi-line field keeps its line breaks, written `\n` (its line is one line): `Line one\nLine two`, not
        // `Line one Line two`, which is not what it holds.
        let fold = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let clean_value = if states.iter().any(|s| s == "multiline") {
            value.trim().lines().map(fold).collect::<Vec<_>>().join("\\n")
        } else {
            fold(value)
        };
        let whole_field = super::operable::WHOLE_FIELDS.contains(&shown);
        if whole_field {
            // The role says it: `e3 date "Date": 2026-12-24`, not `type=date` too.
            states.retain(|s| !s.starts_with("type="));
        }
        let shown_value = ((matches!(shown, "textbox" | "searchbox" | "combobox" | "spinbutton" | "slider")
            || whole_field)
            && !clean_value.is_empty()
            && *value != name)
            .then(|| {
                let masked = states.iter().any(|s| s == "type=password");
                if masked { "•••".to_owned() } else { clean_value.clone() }
            });
        // What an empty field shows in it: its format or an example (`MM / YY`, `you@example.com`), unless the name
        // says it already.
        let placeholder = dom.as_ref().and_then(|d| d.attr("placeholder")).filter(|p| {
            let p = line::fold(p);
            shown_value.is_none()
                && matches!(shown, "textbox" | "searchbox" | "combobox")
                && value.is_empty()
                && !p.is_empty()
                && !line::fold(&name).contains(p.as_str())
        });
        // A target that goes nowhere (`#`, `javascript:void(0)`: the page's script does the rest) says nothing.
        let href = dom.as_ref().and_then(|d| d.attr("href")).filter(|h| shown == "link" && !inert_href(h));
        let mut options = Vec::new();
        if is_select {
            self.collect_options(ax, id, &mut options);
        }
        let (line, tail) = line::ref_line(
            &RefLine {
                node_ref: &r,
                role: shown,
                name: &name,
                states: &states,
                placeholder,
                href,
                options: &options,
                value: shown_value.as_deref(),
            },
            &self.origin,
        );
        if shown_value.is_some() {
            states.push(format!("value={value}"));
        }
        if n.flag("focused") {
            self.out.focused = Some(r.clone());
        }
        // Where the click goes when the node itself does not take it: a value widget (a slider, a rating drawn as
        // one) at its own centre, as a user's click would land; a control with no box of its own (the 0×0 input of a
        // drawn switch) on the drawn wrapper that handles it; anything else through its descendant that does.
        let sets_value = matches!(shown, "slider" | "scrollbar" | "spinbutton");
        if dom.as_ref().is_some_and(|d| d.rect.is_some_and(|[_, _, w, h]| w <= 1.0 || h <= 1.0)) {
            let wrapper = n.backend.and_then(|b| self.drawn_click_wrapper(frame, b));
            self.refs.set_click_backend(&r, wrapper);
        } else if !sets_value && !dom.as_ref().is_some_and(|d| d.clickable || d.pointer) {
            let inner = self.click_descendant(frame, ax, id, 0);
            self.refs.set_click_backend(&r, inner);
        }
        let context = self.context.clone();
        if let Some(idx) = self.push(indent, Some(r.clone()), line) {
            self.out.node_count += 1;
            // A link inline in a sentence: the sentence may be shown whole, with the link under it.
            if matches!(shown, "link" | "clickable") && dom.as_ref().is_some_and(|d| !d.block) {
                let mut t = String::new();
                self.subtree_text(frame, ax, id, &mut t);
                self.inline_operable(idx, t);
            }
            let scope = self.scope(frame);
            self.inter.push(Operable {
                line: idx,
                role: shown.to_owned(),
                // Nameless controls that draw different icons are not namesakes.
                name: icon.map_or_else(|| name.trim().to_owned(), |i| format!("icon={i}")),
                context,
                tail,
                scope,
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
        if !is_select && !whole_field {
            // Operable things inside operable things (options in a listbox, links in a clickable card), and the text
            // inside when the name is not that text: a focusable tab panel named by its tab (`aria-labelledby`, as
            // Radix, Headless UI and antd name theirs) holds the panel's sentences, which a reader sees.
            let named = !self.content_beside_name(frame, id, shown, &name);
            let held = self.held_hidden.len();
            self.in_operable += 1;
            for c in &n.children {
                self.walk(frame, c, indent + 1, named);
            }
            self.in_operable -= 1;
            // What the page draws inside it that its name leaves out (an `aria-hidden` count badge on a folder
            // link): a text line under it.
            let drawn: Vec<String> = self.held_hidden.drain(held..).collect();
            let drawn = drawn.join(" ");
            if !drawn.is_empty() && !line::fold(&name).contains(&drawn) {
                self.flush_text();
                self.push(indent + 1, None, line::text(&drawn));
            }
            self.hidden_controls_in(frame, backend, indent + 1);
            // What an expanded combobox or menu button points at (suggestions in a portal): under it.
            self.walk_controlled(frame, id, &name, indent + 1);
        }
    }

    /// The state a label standing for its checkbox shows: the input's `mixed` (an indeterminate checkbox: the
    /// snapshot's `checked` cannot say it, the tree's node of the input does), else checked or unchecked.
    fn toggle_state(&self, frame: &str, t: super::snapshot::Toggle, input: Option<i64>) -> &'static str {
        let mixed = input
            .and_then(|b| super::controls::node_of(self.axs.get(frame)?, b))
            .is_some_and(|(_, x)| x.prop("checked").and_then(Value::as_str) == Some("mixed"));
        if mixed { "mixed" } else { t.state() }
    }

    /// A text whose element the accessibility tree leaves out altogether (an inline `<a>` without `href` or a
    /// `span` with a pointer cursor, whose click a listener on an ancestor handles): that element gets a
    /// `clickable` line named by the text, once. False when the text is plain text.
    pub(super) fn inline_clickable(&mut self, frame: &str, n: &AxNode, indent: u16) -> bool {
        let Some(element) = self.inline_clickable_element(frame, n) else { return false };
        let toggle = self.docs.get(frame).and_then(|d| d.get(&element)).and_then(|d| d.toggle);
        if !self.inline_done.insert((frame.to_owned(), element)) {
            return true; // a later text of the same element: its line is written
        }
        if self.out.node_count >= self.max_nodes || self.bytes_full.is_some() {
            self.omitted += 1;
            return true;
        }
        let name = n.name.split_whitespace().collect::<Vec<_>>().join(" ");
        let role = toggle.map_or("clickable", |t| t.role);
        let input = self.docs.get(frame).and_then(|d| d.get(&element)).and_then(|d| d.toggle_input);
        let states: Vec<String> = toggle.map(|t| self.toggle_state(frame, t, input).to_owned()).into_iter().collect();
        if let Some(idx) = self.element_line(frame, element, indent, role, name, states) {
            self.inline_operable(idx, n.name.clone());
        }
        true
    }

    /// The controls inside an operable element that the accessibility tree hides or does not have at all (Chromium
    /// drops an `aria-hidden` icon inside a `role="button"`), that users see and click on their own: a pointer cursor
    /// the parent does not show, a painted box of 8 px or more, not covered. MUI's `Chip` with `onDelete` draws its
    /// delete icon so. Each gets a line under the operable's, named by the icon it draws (`icon=cancel`).
    fn hidden_controls_in(&mut self, frame: &str, owner: i64, indent: u16) {
        let Some(docs) = self.docs.get(frame) else { return };
        let due: Vec<i64> = self.with_hidden_candidates(frame, |all| {
            all.iter().copied().filter(|&c| c != owner && super::snapshot::holds(docs, owner, c, None)).collect()
        });
        for c in due {
            self.hidden_control_line(frame, c, indent);
        }
    }

    /// The line of a control the tree hides or lacks (`clickable icon=…`), once, unless it is covered or the budget
    /// is spent (then counted as omitted).
    fn hidden_control_line(&mut self, frame: &str, c: i64, indent: u16) {
        if self.covered(frame, c) || !self.inline_done.insert((frame.to_owned(), c)) {
            return;
        }
        if self.out.node_count >= self.max_nodes || self.bytes_full.is_some() {
            self.omitted += 1;
            return;
        }
        let icon = self.docs.get(frame).and_then(|d| d.get(&c)).and_then(|d| d.icon.clone());
        let states: Vec<String> = icon.map(|i| format!("icon={i}")).into_iter().collect();
        self.element_line(frame, c, indent, "clickable", String::new(), states);
    }

    /// The controls drawn as icons that the accessibility tree hides or does not have, outside any operable node,
    /// whose nearest node of the tree is `id` (antd's `×` on each chosen tag of a multiple Select: an `aria-hidden`
    /// span with a pointer around a close icon): a line each once that node's children are walked, named by the icon.
    pub(super) fn hidden_controls_after(&mut self, frame: &str, owner: i64, indent: u16) {
        if self.in_operable > 0 {
            return; // `hidden_controls_in` lists them under their operable
        }
        if !self.hidden_icon_controls.contains_key(frame) {
            let by_anchor = self.icon_controls_by_anchor(frame);
            self.hidden_icon_controls.insert(frame.to_owned(), by_anchor);
        }
        let Some(due) = self.hidden_icon_controls.get_mut(frame).and_then(|m| m.remove(&owner)) else { return };
        self.flush_text();
        for c in due {
            self.hidden_control_line(frame, c, indent);
        }
    }

    /// The controls drawn as icons that the tree does not have at all (an `aria-hidden` subtree; not those it keeps
    /// as inert or hidden, as the page behind a modal dialog), by the tree node nearest around each when the walk
    /// shows that node (not hidden, not behind a modal), in document order.
    fn icon_controls_by_anchor(&self, frame: &str) -> std::collections::HashMap<i64, Vec<i64>> {
        let mut by_anchor: std::collections::HashMap<i64, Vec<i64>> = std::collections::HashMap::new();
        let (Some(docs), Some(ax)) = (self.docs.get(frame), self.axs.get(frame)) else { return by_anchor };
        let icons: Vec<i64> = self.with_hidden_candidates(frame, |all| {
            all.iter().copied().filter(|c| docs.get(c).is_some_and(|d| d.icon.is_some())).collect()
        });
        // The tree keeps an element that says `aria-hidden` itself as a hidden node (Mantine's pill remove
        // `<button aria-hidden>`): drawn, and clicked, as any other.
        let icons: Vec<i64> = icons
            .into_iter()
            .filter(|&c| !self.in_tree(frame, c) || docs.get(&c).is_some_and(|d| d.attr("aria-hidden") == Some("true")))
            .collect();
        if icons.is_empty() {
            return by_anchor;
        }
        let shown: std::collections::HashSet<i64> =
            ax.nodes.values().filter(|x| !x.hidden && !x.blocked).filter_map(|x| x.backend).collect();
        for c in icons {
            let parent = docs.get(&c).and_then(|d| d.parent);
            if let Some(anchor) = self.tree_ancestor(frame, parent, |_| {}).filter(|a| shown.contains(a)) {
                by_anchor.entry(anchor).or_default().push(c);
            }
        }
        for v in by_anchor.values_mut() {
            v.sort_by_key(|c| docs.get(c).map_or(0, |d| d.order));
        }
        by_anchor
    }

    /// `f` of the elements drawn to be clicked on their own that the accessibility tree hides or does not have
    /// (found once per frame).
    fn with_hidden_candidates<R>(&self, frame: &str, f: impl FnOnce(&[i64]) -> R) -> R {
        let mut memo = self.hidden_candidates.borrow_mut();
        if !memo.contains_key(frame) {
            // Those the walk reads from the tree are not candidates: it lists what it shows.
            let shown: std::collections::HashSet<i64> = self
                .axs
                .get(frame)
                .map(|ax| ax.nodes.values().filter(|x| !x.hidden).filter_map(|x| x.backend).collect())
                .unwrap_or_default();
            let found: Vec<i64> = self
                .docs
                .get(frame)
                .map(|docs| {
                    docs.iter()
                        .filter(|(b, d)| super::operable::pointer_control(d) && !shown.contains(b))
                        .map(|(b, _)| *b)
                        .collect()
                })
                .unwrap_or_default();
            memo.insert(frame.to_owned(), found);
        }
        f(memo.get(frame).map_or(&[], Vec::as_slice))
    }

    /// Writes the ref line of an element the accessibility tree does not have, with its role, name and states, and
    /// registers it as any operable line (for telling it from its namesakes, an unnamed one by the icon it draws).
    /// The line's index, or `None` when the budget left it out (counted as omitted).
    fn element_line(
        &mut self,
        frame: &str,
        element: i64,
        indent: u16,
        role: &str,
        name: String,
        states: Vec<String>,
    ) -> Option<usize> {
        let r = self.assign_ref(frame, element);
        let (line, tail) = line::ref_line(
            &RefLine {
                node_ref: &r,
                role,
                name: &name,
                states: &states,
                placeholder: None,
                href: None,
                options: &[],
                value: None,
            },
            &self.origin,
        );
        let context = self.context.clone();
        let Some(idx) = self.push(indent, Some(r.clone()), line) else {
            self.omitted += 1;
            return None;
        };
        self.out.node_count += 1;
        let scope = self.element_scope(frame, element);
        let namesake = match states.iter().find(|s| s.starts_with("icon=")) {
            Some(icon) if name.is_empty() => icon.clone(),
            _ => name.clone(),
        };
        self.inter.push(Operable { line: idx, role: role.into(), name: namesake, context, tail, scope });
        self.refs.describe(&r, role, &name, &states);
        self.refs.observed(&r, NodeFacts::new("generic", &name));
        self.out.nodes.push(NodeSummary { node_ref: r, role: role.into(), name, states });
        Some(idx)
    }

    /// Whether an operable line's content shows text its name does not say (the name comes from `aria-labelledby`,
    /// `aria-label` or `title`, not from that content), so that text is read under the line. Not for the roles whose
    /// content is presentational (a button's or a tab's content is its name, whatever `aria-label` calls it).
    fn content_beside_name(&self, frame: &str, id: &str, shown: &str, name: &str) -> bool {
        // Only the markup names an element other than by its content: no need to read the content of every link.
        // A button may be named by a `<label for>` too (Mantine's date input: `<label for=d>Due date</label><button
        // id=d>March 14, 2024</button>`), which only its content tells: the date it shows is read under it.
        let named_apart = shown == "button"
            || self.axs[frame].nodes.get(id).and_then(|n| self.dom(frame, n)).is_some_and(|d| {
                d.attr("aria-labelledby").is_some() || d.attr("aria-label").is_some() || d.attr("title").is_some()
            });
        if !named_apart || !matches!(shown, "clickable" | "focusable" | "link" | "treeitem" | "menuitem" | "button") {
            return false;
        }
        let mut t = String::new();
        self.subtree_text(frame, &self.axs[frame], id, &mut t);
        let (t, name) = (line::fold(&t), line::fold(name));
        // A button's glyph beside its label (`×` of a "Close" button) is not read again.
        if shown == "button" && t.chars().filter(|c| c.is_alphanumeric()).count() < 2 {
            return false;
        }
        // Either in the other: a name taken from the content (with or without a list marker, an icon's text). A
        // content that says more than its name around it (antd's panel `Members of the team`, named `Members`) is
        // read.
        let name_and_marker = t.contains(name.as_str()) && t.len() <= name.len() + 4;
        !(t.is_empty() || name.contains(t.as_str()) || name_and_marker)
    }

    /// A name read from content without the names of the icons drawn at its ends (`caret-down caret-down Projects`
    /// is `Projects`: antd's tree draws its switcher as `role="img" aria-label="caret-down"`); a name made only of
    /// one icon's name said once (`star star`, a rating's two half stars).
    pub(super) fn without_icon_names(&self, frame: &str, name: &str) -> String {
        let mut memo = self.icon_names.borrow_mut();
        if !memo.contains_key(frame) {
            let icons = self.axs.get(frame).map(|ax| {
                ax.nodes
                    .values()
                    .filter(|n| n.role == "image" && !n.name.trim().is_empty())
                    // Named by the icon library's own name for it (antd's `aria-label="caret-down"` on
                    // `anticon-caret-down`), not by words of the page's.
                    .filter(|n| self.dom(frame, n).and_then(|d| d.icon.as_deref()) == Some(n.name.trim()))
                    .map(|n| n.name.trim().to_owned())
                    .collect()
            });
            memo.insert(frame.to_owned(), icons.unwrap_or_default());
        }
        let Some(icons) = memo.get(frame).filter(|i| !i.is_empty()) else { return name.to_owned() };
        let words: Vec<&str> = name.split_whitespace().collect();
        let is_icon = |w: &&str| icons.contains(*w);
        let (mut start, mut end) = (0, words.len());
        while start < end && is_icon(&words[start]) {
            start += 1;
        }
        while end > start && is_icon(&words[end - 1]) {
            end -= 1;
        }
        if start == end {
            // Only icons: one of them, once, when they are all the same.
            return if words.len() > 1 && words.iter().all(|w| *w == words[0]) {
                words[0].to_owned()
            } else {
                name.to_owned()
            };
        }
        if start == 0 && end == words.len() { name.to_owned() } else { words[start..end].join(" ") }
    }

    pub(super) fn walk_children(&mut self, frame: &str, children: &[String], indent: u16) {
        for c in children {
            self.walk(frame, c, indent, true);
        }
    }

    pub(super) fn collect_options(&self, ax: &AxTree, id: &str, out: &mut Vec<String>) {
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

    /// The `aria-label` of the nearest custom element (a tag with a `-`) around `backend`: the name a web
    /// component's author put on the host (`<icon-button aria-label="Refresh">`) for the unnamed control it renders in
    /// its shadow root (the DOM snapshot has no node for the shadow root: the control's parent is the host).
    fn host_label(&self, frame: &str, backend: i64) -> Option<String> {
        let doc = self.docs.get(frame)?;
        let mut node = doc.get(&backend)?;
        for _ in 0..256 {
            node = doc.get(&node.parent?)?;
            if node.tag.contains('-') {
                let label = node.attr("aria-label")?.split_whitespace().collect::<Vec<_>>().join(" ");
                return Some(label).filter(|l| !l.is_empty());
            }
        }
        None
    }

    /// How the table is sorted by the column whose header this is, or whose header holds it (a sort button in a
    /// `<th aria-sort>`): `ascending`, `descending` or `other`.
    fn sorted_by(&self, frame: &str, backend: i64) -> Option<String> {
        let docs = self.docs.get(frame)?;
        let mut cur = Some(backend);
        for _ in 0..3 {
            let d = docs.get(&cur?)?;
            if let Some(sort) = d.attr("aria-sort").filter(|v| matches!(*v, "ascending" | "descending" | "other")) {
                return Some(sort.to_owned());
            }
            if matches!(d.tag.as_str(), "th" | "td") {
                return None;
            }
            cur = d.parent;
        }
        None
    }

    pub(super) fn states(&self, n: &AxNode, role: &str, dom: Option<&DomNode>) -> Vec<String> {
        let mut s = Vec::new();
        if let Some(c) = n.prop("checked") {
            let v = c.as_str().map(str::to_owned).unwrap_or_else(|| c.to_string());
            match v.as_str() {
                "true" => s.push("checked".to_owned()),
                "mixed" => s.push("mixed".to_owned()),
                // Element Plus says `aria-checked="false"` on every tree node, with checkboxes or not (where it draws
                // them, their own lines say so): a tree item is told checked only when it is.
                _ if role == "treeitem" => {}
                _ => s.push("unchecked".to_owned()),
            }
        }
        if let Some(p) = n.prop("pressed")
            && (p.as_str() == Some("true") || p.as_bool() == Some(true))
        {
            s.push("pressed".into());
        }
        // The page, step or item the user is on (`aria-current`, on the element or, as Bootstrap's pagination has
        // it, on its list item): which nav link is the open page.
        if let Some(c) = dom.and_then(|d| d.current.as_deref()) {
            s.push(if c == "true" { "current".to_owned() } else { format!("current={c}") });
        }
        // The same said only by the page's styling (`ant-pagination-item-active`, Bootstrap's `active`, `is-active`,
        // `Mui-selected`), on an element whose role has no state of its own for it and where no ARIA state says it.
        if let Some(c) = dom.and_then(|d| d.class_state)
            && !ROLES_WITH_CHOICE_STATE.contains(&role)
            && !ROLES_WITH_CHOICE_STATE.contains(&n.role.as_str())
            && !s.iter().any(|st| st.starts_with("current") || matches!(st.as_str(), "checked" | "pressed"))
            && !n.flag("selected")
        {
            s.push(c.label().to_owned());
        }
        if role == "heading"
            && let Some(level) = n.prop("level").and_then(Value::as_u64)
        {
            s.push(format!("level={level}"));
        }
        // A leaf that says `aria-expanded="false"` (Element Plus sets it on every node) is still a leaf: its
        // disclosure icon is styled so.
        let styled_leaf = role == "treeitem"
            && dom.is_some_and(|d| d.disclosure == Some(super::disclosure::Disclosure::Leaf))
            && n.prop("expanded").and_then(Value::as_bool) != Some(true);
        if role == "treeitem" {
            s.push(if n.prop("expanded").is_some() && !styled_leaf { "branch" } else { "leaf" }.into());
        }
        if let Some(e) = n.prop("expanded").filter(|_| !styled_leaf) {
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
        // A link or button that takes no pointer events (`pointer-events: none`, the way Bootstrap and Mantine
        // disable links) is disabled to a user: a click goes through it, and `act` refuses it.
        if matches!(role, "link" | "button" | "clickable" | "menuitem" | "tab")
            && dom.is_some_and(|d| d.pass_through && d.rect.is_some())
            && !s.iter().any(|st| st == "disabled")
        {
            s.push("disabled".into());
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
}

/// A link target that leads nowhere of its own: `#` (or nothing) and `javascript:` URLs, whose click only runs the
/// page's script.
fn inert_href(href: &str) -> bool {
    let h = href.trim();
    h.is_empty() || h == "#" || h.get(..11).is_some_and(|p| p.eq_ignore_ascii_case("javascript:"))
}
