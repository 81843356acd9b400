//! Trees drawn flat: every item one after another in one list (antd's Tree, a virtual list), nesting shown only by
//! how far each item's text is indented (or by `aria-level`). Each item's depth is read from that, so its line is
//! indented under its parent as the tree is drawn, as for a tree built from nested groups.

use std::collections::HashMap;

use super::renderer::Renderer;
use crate::ax::AxTree;

/// Text starting within this many CSS pixels of another item's is at the same depth.
const SAME_DEPTH_PX: f64 = 4.0;

impl Renderer<'_> {
    /// On reaching a `tree`: when its items are all flat (no item holds another), the depth of each (0 for the
    /// outermost), kept for the walk ([`Renderer::flat_tree_depth`]). From `aria-level` where the items' levels
    /// differ, else from where each item's first text starts on the page.
    pub(super) fn note_flat_tree(&mut self, frame: &str, ax: &AxTree, tree: &str) {
        let mut items = Vec::new();
        collect_items(ax, tree, &mut items, 0);
        if items.len() < 2 || items.iter().any(|i| holds_item(ax, i, 0)) {
            return;
        }
        let levels: Vec<Option<u64>> =
            items.iter().map(|i| ax.nodes.get(*i).and_then(|n| n.prop("level")).and_then(|l| l.as_u64())).collect();
        let depths: Vec<u16> = if levels.iter().all(Option::is_some) && levels.iter().any(|l| *l != levels[0]) {
            let min = levels.iter().flatten().min().copied().unwrap_or(1);
            levels.iter().map(|l| u16::try_from(l.unwrap_or(min) - min).unwrap_or(0)).collect()
        } else {
            let Some(docs) = self.docs.get(frame) else { return };
            let starts: Option<Vec<f64>> = items
                .iter()
                .map(|i| first_text(ax, i, 0).and_then(|b| docs.get(&b)).and_then(|d| d.rect).map(|r| r[0]))
                .collect();
            let Some(starts) = starts else { return };
            let mut columns: Vec<f64> = Vec::new();
            let mut sorted = starts.clone();
            sorted.sort_by(f64::total_cmp);
            for x in sorted {
                if columns.last().is_none_or(|c| x - c > SAME_DEPTH_PX) {
                    columns.push(x);
                }
            }
            if columns.len() < 2 {
                return;
            }
            starts
                .iter()
                .map(|x| {
                    let at = columns.iter().rposition(|c| x + SAME_DEPTH_PX >= *c).unwrap_or(0);
                    u16::try_from(at).unwrap_or(0)
                })
                .collect()
        };
        for (item, depth) in items.iter().zip(depths) {
            if depth > 0 {
                self.flat_tree_depth.insert((frame.to_owned(), (*item).to_owned()), depth);
            }
        }
    }
}

/// The tree's items, in order: the `treeitem`s below it, not looking inside an item or a nested tree.
fn collect_items<'a>(ax: &'a AxTree, id: &str, out: &mut Vec<&'a str>, depth: u32) {
    let Some(n) = ax.nodes.get(id) else { return };
    if depth > 64 {
        return;
    }
    for c in &n.children {
        let Some((key, cn)) = ax.nodes.get_key_value(c) else { continue };
        if cn.hidden {
            continue;
        }
        match cn.role.as_str() {
            "treeitem" => out.push(key.as_str()),
            "tree" => {}
            _ => collect_items(ax, c, out, depth + 1),
        }
    }
}

/// Whether an item holds another item (a tree built from nested groups, which nests by itself).
fn holds_item(ax: &AxTree, id: &str, depth: u32) -> bool {
    let Some(n) = ax.nodes.get(id) else { return false };
    depth < 64
        && n.children.iter().any(|c| {
            ax.nodes.get(c).is_some_and(|cn| cn.role == "treeitem" || cn.role == "group")
                || holds_item(ax, c, depth + 1)
        })
}

/// The first text of an item (its backend id): where its title starts.
fn first_text(ax: &AxTree, id: &str, depth: u32) -> Option<i64> {
    let n = ax.nodes.get(id)?;
    if depth > 0 && n.role == "StaticText" && !n.name.trim().is_empty() {
        return n.backend;
    }
    if depth > 32 {
        return None;
    }
    n.children.iter().find_map(|c| first_text(ax, c, depth + 1))
}

/// The depth of each flat tree's items, by (frame, item id).
pub(super) type Depths = HashMap<(String, String), u16>;
