//! Trees built from nested lists without ARIA (a folder tree of `<ul>`/`<li>` whose rows toggle their children, a
//! menu with submenus): the `expanded` / `collapsed` / `leaf` state of each row, read from what the user sees — a
//! shown child list, a disclosure triangle in the row's text (often CSS generated content), a class such as
//! `expanded` — since the accessibility tree has no state for them.

use super::renderer::Renderer;
use crate::ax::{AxNode, AxTree};

/// A row's disclosure state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Disclosure {
    Expanded,
    Collapsed,
    Leaf,
}

impl Disclosure {
    pub(super) fn label(self) -> &'static str {
        match self {
            Self::Expanded => "expanded",
            Self::Collapsed => "collapsed",
            Self::Leaf => "leaf",
        }
    }
}

/// A list item being walked inside a tree of nested lists: whether a child list is shown under it, and whether its
/// row (the first operable line inside it) has had its state.
#[derive(Debug)]
pub(super) struct TreeItem {
    pub(super) frame: String,
    pub(super) id: String,
    pub(super) nested: bool,
    pub(super) stated: bool,
}

/// What a class list says: `expanded`, `is-open`, `open` → expanded; `collapsed`, `closed` → collapsed; `leaf` →
/// leaf (whole tokens only, with an optional `is-` prefix).
pub(crate) fn from_class(class: &str) -> Option<Disclosure> {
    class.split_ascii_whitespace().find_map(|t| {
        match t.strip_prefix("is-").unwrap_or(t).to_ascii_lowercase().as_str() {
            "expanded" | "open" => Some(Disclosure::Expanded),
            "collapsed" | "closed" => Some(Disclosure::Collapsed),
            "leaf" => Some(Disclosure::Leaf),
            _ => None,
        }
    })
}

/// A disclosure triangle opening the row's text: `▸ Archive` is collapsed, `▾ Projects` expanded.
pub(super) fn from_glyph(name: &str) -> Option<Disclosure> {
    match name.trim_start().chars().next()? {
        '▸' | '▶' | '►' | '▹' | '▷' | '⏵' | '⊞' | '›' => Some(Disclosure::Collapsed),
        '▾' | '▼' | '▿' | '⏷' | '⊟' | '⌄' => Some(Disclosure::Expanded),
        _ => None,
    }
}

impl Renderer<'_> {
    /// Whether a list holds a tree: a list item with a shown child list, or a row opening with a disclosure
    /// triangle. Only then do its rows get a disclosure state (a flat list of links is not a tree).
    pub(super) fn list_is_tree(&self, frame: &str, ax: &AxTree, id: &str, depth: u32) -> bool {
        let Some(n) = ax.nodes.get(id) else { return false };
        if depth > 64 || n.hidden {
            return false;
        }
        if n.role == "listitem" && self.has_nested_list(frame, ax, id) {
            return true;
        }
        if depth > 0 && n.role == "StaticText" && from_glyph(&n.name).is_some() {
            return true;
        }
        n.children.iter().any(|c| self.list_is_tree(frame, ax, c, depth + 1))
    }

    /// Whether a list item shows a child list of its own (not one of a nested item's). A list that floats over the
    /// page (`position: absolute` or `fixed`: a navbar's dropdown menu) is a popup its item opens, not a branch: it
    /// does not make its list a tree (whose other items would turn `leaf` only while the popup is open).
    pub(super) fn has_nested_list(&self, frame: &str, ax: &AxTree, id: &str) -> bool {
        let floats = |list: &AxNode| {
            list.children
                .iter()
                .filter_map(|g| ax.nodes.get(g))
                .any(|gn| self.dom(frame, gn).is_some_and(|d| d.in_floating_list))
        };
        fn find(ax: &AxTree, id: &str, depth: u32, floats: &dyn Fn(&AxNode) -> bool) -> bool {
            let Some(n) = ax.nodes.get(id) else { return false };
            n.children.iter().any(|c| {
                ax.nodes.get(c).is_some_and(|cn| {
                    !cn.hidden
                        && depth < 16
                        && match cn.role.as_str() {
                            "list" | "tree" | "group" | "menu" => {
                                cn.children.iter().any(|g| ax.nodes.get(g).is_some_and(|gn| !gn.hidden)) && !floats(cn)
                            }
                            "listitem" => false,
                            _ => find(ax, c, depth + 1, floats),
                        }
                })
            })
        }
        find(ax, id, 0, &floats)
    }

    /// The disclosure state of the row line being written (the first operable line inside a list item of a tree),
    /// or `None` (not in a tree, not the row, or the accessibility tree already gives a state).
    pub(super) fn tree_row_state(&mut self, frame: &str, id: &str, name: &str, has_state: bool) -> Option<Disclosure> {
        let ax = self.axs.get(frame)?;
        let n = ax.nodes.get(id)?;
        // An operable list item (an `<li>` with a click handler) is its own row.
        let own = (n.role == "listitem" && self.tree_depth > 0).then(|| self.has_nested_list(frame, ax, id));
        let nested = match own {
            Some(nested) => nested,
            None => {
                let item = self.tree_items.last_mut().filter(|i| !i.stated && i.frame == frame)?;
                item.stated = true;
                item.nested
            }
        };
        if has_state {
            return None;
        }
        let item_class = if own.is_some() {
            None
        } else {
            self.tree_items
                .last()
                .and_then(|i| self.axs.get(&i.frame)?.nodes.get(&i.id))
                .and_then(|li| self.dom(frame, li))
                .and_then(|d| d.disclosure)
        };
        let row_class = self.dom(frame, n).and_then(|d| d.disclosure);
        Some(if nested {
            Disclosure::Expanded
        } else {
            row_class.or(item_class).or_else(|| from_glyph(name)).unwrap_or(Disclosure::Leaf)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_glyphs_read_as_states() {
        assert_eq!(from_class("folder-row expanded active"), Some(Disclosure::Expanded));
        assert_eq!(from_class("node is-collapsed"), Some(Disclosure::Collapsed));
        assert_eq!(from_class("folder-row leaf"), Some(Disclosure::Leaf));
        assert_eq!(from_class("open-source-badge"), None, "whole tokens only");
        assert_eq!(from_glyph("▸ Archive"), Some(Disclosure::Collapsed));
        assert_eq!(from_glyph("▾ Projects"), Some(Disclosure::Expanded));
        assert_eq!(from_glyph("Gemini"), None);
    }
}
