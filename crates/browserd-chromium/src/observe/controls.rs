//! What an expanded combobox or popup button points at — its suggestions or menu, often rendered in a portal at the
//! end of `<body>` (React's `createPortal`, Vue's `<Teleport>`) — is shown under its line, where a reader looks for
//! it, not after the rest of the page where the DOM puts it: the elements of its `controls` and `owns` relations
//! (`aria-controls`, `aria-owns`) and the popup holding its active descendant (`aria-activedescendant`).

use serde_json::Value;

use super::line::quote_cut;
use super::renderer::Renderer;
use super::snapshot::holds;
use crate::ax::{AxNode, AxTree};

/// The roles of a popup that holds a control's active descendant.
const POPUP_ROLES: &[&str] = &["listbox", "menu", "tree", "grid", "treegrid", "dialog"];

impl Renderer<'_> {
    /// The nodes (tree id and element) an operable node shows under its line: only for an expanded combobox or
    /// control with a popup, the rendered elements it points at that come after it in the document and are
    /// neither inside it nor around it (those are walked where they are).
    fn controlled(&self, frame: &str, ax: &AxTree, n: &AxNode) -> Vec<(String, i64)> {
        let popup = n.role == "combobox" || n.prop("hasPopup").and_then(Value::as_str).is_some_and(|p| p != "false");
        if !popup || !n.flag("expanded") {
            return Vec::new();
        }
        let (Some(docs), Some(own)) = (self.docs.get(frame), n.backend) else { return Vec::new() };
        let Some(order) = docs.get(&own).map(|d| d.order) else { return Vec::new() };
        let related = |name: &str| -> Vec<i64> {
            n.prop(name).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_i64).collect()
        };
        let mut targets = related("controls");
        targets.extend(related("owns"));
        // The active descendant's popup: its nearest element the tree shows as a listbox, menu, ...
        for active in related("activedescendant") {
            let mut at = Some(active);
            for _ in 0..8 {
                let Some(b) = at else { break };
                if node_of(ax, b).is_some_and(|(_, x)| POPUP_ROLES.contains(&x.role.as_str())) {
                    targets.push(b);
                    break;
                }
                at = docs.get(&b).and_then(|d| d.parent);
            }
        }
        let mut out: Vec<(String, i64)> = Vec::new();
        for b in targets {
            let Some(d) = docs.get(&b) else { continue };
            if d.order <= order
                || holds(docs, own, b, None)
                || holds(docs, b, own, None)
                || out.iter().any(|(_, x)| *x == b)
            {
                continue;
            }
            let Some((id, t)) = node_of(ax, b) else { continue };
            if t.hidden || self.moved.contains(&(frame.to_owned(), b)) || in_subtree(ax, n, id, 0) {
                continue;
            }
            out.push((id.to_owned(), b));
        }
        out
    }

    /// Walks what an expanded popup control points at under its line (`indent`), read as it is read where it is (not
    /// inside an operable node, a row or a list), with the control's name as its context; the walk then skips it
    /// where the DOM puts it.
    pub(super) fn walk_controlled(&mut self, frame: &str, id: &str, name: &str, indent: u16) {
        let axs = self.axs;
        let Some(ax) = axs.get(frame) else { return };
        let Some(n) = ax.nodes.get(id) else { return };
        let targets = self.controlled(frame, ax, n);
        if targets.is_empty() {
            return;
        }
        self.flush_text();
        let saved = (self.in_operable, self.row_depth, self.list_depth, self.tree_depth, self.in_popup);
        let items = std::mem::take(&mut self.tree_items);
        (self.in_operable, self.row_depth, self.list_depth, self.tree_depth, self.in_popup) = (0, 0, 0, 0, false);
        let ctx_len = self.context.len();
        if !name.trim().is_empty() {
            self.context.push(quote_cut(name, 40));
        }
        for (target, backend) in targets {
            self.walk(frame, &target, indent, false);
            self.flush_text();
            self.moved.insert((frame.to_owned(), backend));
        }
        self.context.truncate(ctx_len);
        (self.in_operable, self.row_depth, self.list_depth, self.tree_depth, self.in_popup) = saved;
        self.tree_items = items;
    }

    /// Whether the walk has shown a node already, under the control that points at it.
    pub(super) fn moved_away(&self, frame: &str, n: &AxNode) -> bool {
        !self.moved.is_empty() && n.backend.is_some_and(|b| self.moved.contains(&(frame.to_owned(), b)))
    }
}

/// The tree node of an element.
pub(super) fn node_of(ax: &AxTree, backend: i64) -> Option<(&str, &AxNode)> {
    ax.nodes.iter().find(|(_, n)| n.backend == Some(backend)).map(|(id, n)| (id.as_str(), n))
}

/// Whether tree node `id` is below `n` (the tree may already hold an owned element there).
fn in_subtree(ax: &AxTree, n: &AxNode, id: &str, depth: u32) -> bool {
    depth < 40
        && n.children.iter().any(|c| c == id || ax.nodes.get(c).is_some_and(|c| in_subtree(ax, c, id, depth + 1)))
}
