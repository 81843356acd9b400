//! What a popup covers: an operable element whose centre lies under a fixed-position element painted above it
//! (a modal's backdrop, the popup itself, a bar that stays in view) is shown `covered` — a click there reaches the
//! cover, not the element — read from the DOM snapshot's layout boxes and paint order, not guessed from roles. A
//! cover as large as the viewport (a modal's backdrop) covers the whole document, scrolled or not: it moves with
//! the viewport. What an open modal dialog makes inert — the accessibility tree leaves it out — is one line that says
//! how many operable elements wait behind the dialog.

use std::collections::HashMap;

use super::renderer::Renderer;
use super::snapshot::{DomNode, holds};

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
                && !holds(docs, c.backend, backend, None)
                && !holds(docs, backend, c.backend, None)
        })
    }
}

/// An open `aria-modal` dialog whose backdrop covers the operable elements outside it (see
/// [`Renderer::find_covering_modal`]).
#[derive(Debug, Clone)]
pub(super) struct CoveringModal {
    pub(super) frame: String,
    pub(super) node: String,
    /// The dialog's ancestors and the kept parts' (walked for the way down, their other children left out).
    pub(super) ancestors: std::collections::HashSet<String>,
    /// Parts of the page outside the dialog that are walked as it is: where a popup of the dialog's own, not covered
    /// by the backdrop, hangs (a select's list drawn at the end of the body).
    pub(super) kept: std::collections::HashSet<String>,
    pub(super) behind: usize,
}

impl Renderer<'_> {
    /// Before the walk: a visible `aria-modal` dialog (not a `<dialog>`, whose page Chromium makes inert itself)
    /// while the operable elements outside it that have a box are covered by something painted above them (the
    /// dialog's backdrop), but for fewer left open: a popup of the dialog's own drawn at the end of the body (a
    /// select's list), shown with the dialog. The backdrop itself, a fixed element filling the viewport that takes
    /// the click that closes the dialog (Mantine's overlay), is not a control behind it. Apps that draw their modal
    /// so (Bootstrap, antd, Mantine, Element Plus) leave the page behind in the accessibility tree; a click there
    /// reaches the backdrop. The walk then shows the dialog alone, and one line says how many operable elements
    /// wait behind it, as for a page made inert.
    pub(super) fn find_covering_modal(&mut self, frame: &str) {
        let (Some(ax), Some(docs)) = (self.axs.get(frame), self.docs.get(frame)) else { return };
        let Some((id, modal)) = ax.nodes.iter().find(|(_, n)| {
            n.flag("modal")
                && !n.ignored
                && matches!(n.role.as_str(), "dialog" | "alertdialog")
                && n.backend
                    .and_then(|b| docs.get(&b))
                    .is_some_and(|d| d.tag != "dialog" && d.rect.is_some_and(|r| r[2] > 0.0 && r[3] > 0.0))
        }) else {
            return;
        };
        let Some(modal_backend) = modal.backend else { return };
        // The backdrop (a fixed element filling the viewport, outside the dialog) takes clicks to close it: it is the
        // cover, not a control of the page behind.
        let backdrops: std::collections::HashSet<i64> = {
            let mut memo = self.covers.borrow_mut();
            memo.entry(frame.to_owned())
                .or_insert_with(|| covers_of(docs))
                .iter()
                .filter(|c| c.whole)
                .map(|c| c.backend)
                .collect()
        };
        let mut behind = Vec::new();
        let mut open = Vec::new();
        for (b, d) in docs {
            if !looks_operable(d)
                || !d.rect.is_some_and(|r| r[2] > 0.0 && r[3] > 0.0)
                || backdrops.contains(b)
                || holds(docs, modal_backend, *b, None)
                || holds(docs, *b, modal_backend, None)
            {
                continue;
            }
            if self.covered(frame, *b) {
                behind.push(*b);
            } else {
                open.push(*b);
            }
        }
        // What outside the dialog still takes clicks is a popup of the dialog's own (a select's list drawn at the end
        // of the body) while most of the page is covered; when as much is open as covered, it is not modal in effect.
        if behind.is_empty() || open.len() >= behind.len() {
            return;
        }
        // The elements (by the DOM) that hold a covered control: a part kept open stops below them, or the page
        // behind would come with it (a cookie banner inside the app's root, beside the page it does not cover).
        let mut over_behind: std::collections::HashSet<i64> = std::collections::HashSet::new();
        for b in &behind {
            let mut at = docs.get(b).and_then(|d| d.parent);
            while let Some(p) = at {
                if !over_behind.insert(p) {
                    break;
                }
                at = docs.get(&p).and_then(|d| d.parent);
            }
        }
        let mut parents: HashMap<&str, &str> = HashMap::new();
        for (pid, n) in &ax.nodes {
            for c in &n.children {
                parents.insert(c.as_str(), pid.as_str());
            }
        }
        let mut ancestors = std::collections::HashSet::new();
        let mut cur = parents.get(id.as_str()).copied();
        while let Some(c) = cur {
            if !ancestors.insert(c.to_owned()) {
                break;
            }
            cur = parents.get(c).copied();
        }
        // Each open element is shown with the part of the page it hangs from (up to the dialog's ancestors).
        let by_backend: HashMap<i64, &str> =
            ax.nodes.iter().filter_map(|(nid, n)| Some((n.backend?, nid.as_str()))).collect();
        let mut kept = std::collections::HashSet::new();
        for b in open {
            let mut at = Some(b);
            let node = std::iter::from_fn(|| {
                let cur = at?;
                at = docs.get(&cur).and_then(|d| d.parent);
                Some(cur)
            })
            .find_map(|b| by_backend.get(&b).copied());
            let Some(mut top) = node else { continue };
            let holds_behind =
                |n: &str| ax.nodes.get(n).and_then(|n| n.backend).is_none_or(|b| over_behind.contains(&b));
            while let Some(up) = parents
                .get(top)
                .copied()
                .filter(|up| !ancestors.contains(*up) && *up != id.as_str() && !holds_behind(up))
            {
                top = up;
            }
            if !ancestors.contains(top) && !holds_behind(top) {
                kept.insert(top.to_owned());
            }
        }
        // The walk reaches a kept part through the nodes around it (the app's root), leaving their other children.
        for k in &kept {
            let mut up = parents.get(k.as_str()).copied();
            while let Some(u) = up.filter(|u| ancestors.insert((*u).to_owned())) {
                up = parents.get(u).copied();
            }
        }
        self.covering_modal =
            Some(CoveringModal { frame: frame.to_owned(), node: id.clone(), ancestors, kept, behind: behind.len() });
    }

    /// With a modal dialog holding the page (covering it, or making it inert), the refs already given to elements
    /// behind it that are still there with a box: left out of the lines, not gone (`Revision::behind_modal`).
    pub(super) fn refs_behind_modal(&self) -> Vec<String> {
        if self.covering_modal.is_none() && self.modal_at.is_none() {
            return Vec::new();
        }
        let shown: std::collections::HashSet<&str> =
            self.out.lines.iter().filter_map(|l| l.node_ref.as_deref()).collect();
        self.refs
            .by_ref
            .iter()
            .filter(|(r, e)| {
                !shown.contains(r.as_str())
                    && self.frames.get(&e.frame_id).is_some_and(|m| m.epoch == e.doc_epoch)
                    && self
                        .docs
                        .get(&e.frame_id)
                        .and_then(|d| d.get(&e.backend))
                        .is_some_and(|d| d.rect.is_some_and(|r| r[2] > 0.0 && r[3] > 0.0))
            })
            .map(|(r, _)| r.clone())
            .collect()
    }

    /// Whether the walk leaves out this node: outside the covering modal and not around it.
    pub(super) fn behind_covering_modal(&self, frame: &str, id: &str) -> bool {
        self.covering_modal.as_ref().is_some_and(|m| {
            !self.in_covering_modal
                && m.frame == frame
                && m.node != id
                && !m.ancestors.contains(id)
                && !m.kept.contains(id)
        })
    }
}

impl Renderer<'_> {
    /// With a modal dialog open, the page behind it that takes no input (the `[inert]` an app sets for its modal;
    /// all outside a modal `<dialog>`) is gone from the accessibility tree: one line at the top says so, and how many
    /// operable elements (by the DOM: controls, links, focusable, clickable or pointer elements with a box) wait
    /// there until it closes. Nothing when none.
    pub(super) fn note_inert_background(&mut self) {
        let Some((frame, modal)) = self.modal_at.clone() else { return };
        let Some(docs) = self.docs.get(&frame) else { return };
        let dialog = docs.get(&modal).is_some_and(|d| d.tag == "dialog");
        let mut memo: HashMap<i64, Place> = HashMap::new();
        let mut count = docs
            .iter()
            .filter(|(_, d)| looks_operable(d) && d.rect.is_some_and(|r| r[2] > 0.0 && r[3] > 0.0))
            .filter(|(b, _)| inert(docs, **b, modal, dialog, &mut memo))
            .count();
        if count == 0
            && let Some(m) = &self.covering_modal
        {
            count = m.behind;
        }
        if count == 0 {
            return;
        }
        self.note_first(super::line::inert_background(count));
    }
}

/// Whether an element looks operable by the DOM alone (its accessibility node may be gone).
fn looks_operable(d: &DomNode) -> bool {
    match d.tag.as_str() {
        "button" | "select" | "textarea" | "summary" | "a" => true,
        "input" => d.attr("type") != Some("hidden"),
        "html" | "body" | "iframe" | "label" => d.toggle.is_some(),
        t if !t.starts_with(|c: char| c.is_ascii_alphabetic()) => false,
        _ => {
            d.clickable
                || d.own_pointer()
                || d.attr("contenteditable").is_some_and(|v| v != "false")
                || d.in_tab_order()
        }
    }
}

/// Whether an element waits behind the open modal until it closes: outside it, and inside `[inert]` when the modal is
/// not a `<dialog>` (the app made the rest inert for it); outside a modal `<dialog>`, which makes all the rest inert,
/// but not inside `[inert]` (that stays inert once the dialog is closed).
fn inert(docs: &HashMap<i64, DomNode>, b: i64, modal: i64, dialog: bool, memo: &mut HashMap<i64, Place>) -> bool {
    // Up to the first element whose place is known (the chain is then placed top down).
    let mut chain = Vec::new();
    let mut cur = Some(b);
    let mut known = Place { outside: true, inert: false };
    while let Some(c) = cur {
        if let Some(p) = memo.get(&c) {
            known = *p;
            break;
        }
        if c == modal {
            known = Place { outside: false, inert: docs.get(&c).is_some_and(|d| d.attr("inert").is_some()) };
            memo.insert(c, known);
            break;
        }
        chain.push(c);
        cur = docs.get(&c).and_then(|d| d.parent);
        if chain.len() > 4096 {
            break;
        }
    }
    for c in chain.into_iter().rev() {
        known.inert |= docs.get(&c).is_some_and(|d| d.attr("inert").is_some());
        memo.insert(c, known);
    }
    known.outside && known.inert != dialog
}

/// Where an element is: outside the open modal, inside `[inert]`.
#[derive(Debug, Clone, Copy)]
struct Place {
    outside: bool,
    inert: bool,
}
