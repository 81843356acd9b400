//! Text assembly: page text gathered into text lines (whitespace folded, runs joined per indent, cut at 160 bytes),
//! the text of a subtree that names a generic clickable or labels a list item, and label text that only echoes a
//! name.

use super::line;
use super::operable::INTERACTIVE;
use super::renderer::Renderer;
use crate::ax::AxTree;

/// Roles whose name is built from their content, so their text is not repeated.
pub(super) const NAME_FROM_CONTENT: &[&str] =
    &["heading", "row", "link", "button", "option", "tab", "menuitem", "treeitem", "cell"];

impl Renderer<'_> {
    pub(super) fn text(&mut self, indent: u16, t: &str) {
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

    pub(super) fn flush_text(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        let t = line::text(&pending);
        if !t.is_empty() {
            self.push_raw(self.pending_indent, None, t);
        }
    }

    /// Text of a subtree (for names of generic clickables).
    pub(super) fn subtree_text(&self, ax: &AxTree, id: &str, out: &mut String) {
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

    /// The first text of a subtree outside operable nodes (the label of a list item).
    pub(super) fn first_text(&self, ax: &AxTree, id: &str, out: &mut String) {
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

    /// Drops label text that only repeats the name of the node right after it (or of its container).
    pub(super) fn drop_label_echoes(&mut self) {
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
