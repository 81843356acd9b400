//! What a popup covers: an operable element whose centre lies under a fixed-position element painted above it
//! (a modal's backdrop, the popup itself, a bar that stays in view) is shown `covered` — a click there reaches the
//! cover, not the element — read from the DOM snapshot's layout boxes and paint order, not guessed from roles. A
//! cover as large as the viewport (a modal's backdrop) covers the whole document, scrolled or not: it moves with
//! the viewport.

use std::collections::HashMap;

use super::renderer::Renderer;
use super::snapshot::DomNode;

/// A fixed-position element of a frame that takes clicks (visible, `pointer-events` not `none`, with a box), and
/// whether it fills the viewport.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cover {
    backend: i64,
    whole: bool,
}

/// The most a scrollbar takes off the viewport a fixed element can fill.
const SCROLLBAR: f64 = 20.0;

fn covers_of(docs: &HashMap<i64, DomNode>) -> Vec<Cover> {
    // The document node's layout box is the viewport, scrollbars included (a classic scrollbar takes up to ~17 px).
    let viewport = docs.values().find(|d| d.tag == "#document" && d.parent.is_none()).and_then(|d| d.rect);
    docs.iter()
        .filter(|(_, d)| {
            d.fixed && !d.pass_through && d.paint.is_some() && d.rect.is_some_and(|r| r[2] > 0.0 && r[3] > 0.0)
        })
        .map(|(b, d)| Cover {
            backend: *b,
            whole: matches!((d.rect, viewport), (Some(r), Some(v)) if r[2] >= v[2] - SCROLLBAR && r[3] >= v[3] - SCROLLBAR),
        })
        .collect()
}

/// Whether `a` is `b` or an ancestor of it.
pub(super) fn contains(docs: &HashMap<i64, DomNode>, a: i64, b: i64) -> bool {
    let mut cur = Some(b);
    for _ in 0..4096 {
        match cur {
            Some(c) if c == a => return true,
            Some(c) => cur = docs.get(&c).and_then(|d| d.parent),
            None => return false,
        }
    }
    false
}

impl Renderer<'_> {
    /// Whether the element's centre is under a fixed-position element painted above it that is neither inside it
    /// nor around it.
    pub(super) fn covered(&self, frame: &str, backend: i64) -> bool {
        let Some(docs) = self.docs.get(frame) else { return false };
        let Some(node) = docs.get(&backend) else { return false };
        let (Some([x, y, w, h]), Some(paint)) = (node.rect, node.paint) else { return false };
        if w <= 0.0 || h <= 0.0 {
            return false;
        }
        let (cx, cy) = (x + w / 2.0, y + h / 2.0);
        let mut memo = self.covers.borrow_mut();
        let covers = memo.entry(frame.to_owned()).or_insert_with(|| covers_of(docs));
        covers.iter().any(|c| {
            let Some(cover) = docs.get(&c.backend) else { return false };
            let (Some([x, y, w, h]), Some(p)) = (cover.rect, cover.paint) else { return false };
            p > paint
                && (c.whole || (cx >= x && cx < x + w && cy >= y && cy < y + h))
                && !contains(docs, c.backend, backend)
                && !contains(docs, backend, c.backend)
        })
    }
}
