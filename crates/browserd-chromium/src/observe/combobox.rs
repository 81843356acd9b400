//! A combobox drawn with elements (Select2, a `div role=combobox`): what it shows as its value. Its content holds the
//! selection — a read-only textbox showing the choice, the chips of a multiple choice — and often controls of its own
//! (a chip's remove button, the search field typed into); Chromium's value reads all of it ("Remove item red Remove
//! item blue Search"). The value shown is the content's text without those controls, and the read-only textbox is
//! that value, not a control listed again under the combobox.

use super::operable::INTERACTIVE;
use super::renderer::Renderer;
use crate::ax::{AxNode, AxTree};

impl Renderer<'_> {
    /// The value an element combobox shows (`None`: a native field, whose own value stands), and the read-only
    /// textboxes in it that show it (skipped where they are, as their text is on the combobox's line).
    pub(super) fn combobox_value(&mut self, frame: &str, ax: &AxTree, n: &AxNode) -> Option<String> {
        let native = self.dom(frame, n).is_none_or(|d| matches!(d.tag.as_str(), "input" | "select" | "textarea"));
        if native || n.children.is_empty() {
            return None;
        }
        let mut text = String::new();
        for c in &n.children {
            self.selection_text(frame, ax, c, &mut text);
        }
        Some(text.split_whitespace().collect::<Vec<_>>().join(" "))
    }

    /// The text of a combobox's content outside its controls; a read-only textbox's text counts, and the textbox is
    /// not listed again.
    fn selection_text(&mut self, frame: &str, ax: &AxTree, id: &str, out: &mut String) {
        let Some(n) = ax.nodes.get(id) else { return };
        if !n.ignored && INTERACTIVE.contains(&n.role.as_str()) {
            if n.role != "textbox" || !n.flag("readonly") {
                return;
            }
            if let Some(b) = n.backend {
                self.moved.insert((frame.to_owned(), b));
            }
        }
        match n.role.as_str() {
            "StaticText" => {
                out.push(' ');
                out.push_str(&n.name);
            }
            _ => {
                for c in &n.children {
                    self.selection_text(frame, ax, c, out);
                }
            }
        }
    }
}
