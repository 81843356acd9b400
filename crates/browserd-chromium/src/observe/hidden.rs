//! Text the page draws but hides from the accessibility tree (`aria-hidden`: a badge's count, a stepper's number, a
//! breadcrumb's separator), read from the DOM snapshot and shown where it sits in the walk.

use std::collections::HashMap;

use super::renderer::Renderer;
use super::snapshot::DomNode;

/// The drawn text of an `aria-hidden` element, waiting for its place in the walk.
pub(super) struct HiddenText {
    order: usize,
    text: String,
    block: bool,
    space_before: bool,
}

impl Renderer<'_> {
    /// The `aria-hidden` texts of a frame, by the backend id of the accessibility node nearest around each, in
    /// document order (last first, so they are taken with `pop`).
    fn hidden_texts_of(&mut self, frame: &str) -> &mut HashMap<i64, Vec<HiddenText>> {
        if !self.hidden_texts.contains_key(frame) {
            let mut by_anchor: HashMap<i64, Vec<HiddenText>> = HashMap::new();
            let roots: Vec<&DomNode> = self
                .docs
                .get(frame)
                .map(|docs| docs.values().filter(|d| d.hidden_text.is_some()).collect())
                .unwrap_or_default();
            for d in roots {
                // Inside an element named by `aria-label` (Select2's remove button around its `×`), the text is what
                // that name says: not read again.
                let mut labelled = false;
                let anchor = self.tree_ancestor(frame, d.parent, |p| {
                    labelled |= p.attr("aria-label").is_some() || p.attr("aria-labelledby").is_some();
                });
                let Some(anchor) = anchor.filter(|_| !labelled) else { continue };
                by_anchor.entry(anchor).or_default().push(HiddenText {
                    order: d.order,
                    text: d.hidden_text.clone().unwrap_or_default(),
                    // `innerText` puts an SVG's text on a line of its own (a stepper's `2`).
                    block: d.block || d.tag == "svg",
                    space_before: d.space_before,
                });
            }
            for v in by_anchor.values_mut() {
                v.sort_by_key(|h| std::cmp::Reverse(h.order));
            }
            self.hidden_texts.insert(frame.to_owned(), by_anchor);
        }
        self.hidden_texts.get_mut(frame).expect("just inserted")
    }

    /// Shows the `aria-hidden` texts that come before the node at `order` under the node walked around it.
    pub(super) fn hidden_text_before(&mut self, frame: &str, order: usize, indent: u16, named: bool) {
        let Some(&(parent, _)) = self.path.len().checked_sub(2).and_then(|i| self.path.get(i)) else { return };
        let Some(parent) = self.axs.get(frame).and_then(|ax| ax.nodes.get(parent)).and_then(|n| n.backend) else {
            return;
        };
        let mut due = Vec::new();
        if let Some(queue) = self.hidden_texts_of(frame).get_mut(&parent) {
            while queue.last().is_some_and(|h| h.order < order) {
                due.extend(queue.pop());
            }
        }
        self.show_hidden(due, indent, named);
    }

    /// Shows the `aria-hidden` texts left inside node `backend` once its children are walked.
    pub(super) fn hidden_text_after(&mut self, frame: &str, backend: i64, indent: u16, named: bool) {
        let due: Vec<HiddenText> =
            self.hidden_texts_of(frame).remove(&backend).map(|v| v.into_iter().rev().collect()).unwrap_or_default();
        self.show_hidden(due, indent, named);
    }

    fn show_hidden(&mut self, due: Vec<HiddenText>, indent: u16, named: bool) {
        if self.in_operable > 0 {
            // Inside an operable line: shown under it (`element.rs`).
            self.held_hidden.extend(due.into_iter().map(|h| h.text));
            return;
        }
        if named {
            return;
        }
        for h in due {
            if h.block {
                self.text_break();
            } else if h.space_before && !self.pending.is_empty() && !self.pending.ends_with(' ') {
                self.pending.push(' ');
            }
            self.text(indent, &h.text);
            if h.block {
                self.text_break();
            }
        }
    }
}
