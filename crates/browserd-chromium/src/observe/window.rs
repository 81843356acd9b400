//! Windowed reads of tables and lists (`ObserveParams::window`, virtual lists included): which rows or items of
//! `within` are shown, and the scroll that first brings item `offset` into the document.

use std::time::Instant;

use browserd_cdp::SessionId;
use browserd_core::provider::{ProviderError, ProviderErrorKind};
use browserd_protocol::WindowShown;
use serde_json::json;

use super::line;
use super::renderer::Renderer;
use crate::provider::{ChromiumProvider, cdp_err};
use crate::state::Line;

/// Roles of the tables and lists a windowed read (`ObserveParams::window`) reads.
pub(super) const COLLECTION_ROLES: &[&str] = &["table", "grid", "treegrid", "list", "listbox", "tree"];

/// Roles that are the rows or items of a windowed read (`ObserveParams::window`).
pub(super) const ITEM_ROLES: &[&str] = &["row", "listitem", "option", "treeitem", "ListBoxOption", "MenuListOption"];

/// A windowed read in progress: which items of the `within` node are shown.
#[derive(Debug, Default)]
pub(super) struct WindowState {
    pub(super) offset: u32,
    pub(super) limit: u32,
    /// Items met so far, in document order.
    pub(super) met: u32,
    /// Index of the first item shown and how many were shown.
    pub(super) first: Option<u32>,
    pub(super) shown: u32,
    /// An item past the window is in the document.
    pub(super) after: bool,
    /// Highest index met, +1.
    pub(super) end: u32,
    /// Item indexes came from the page (`aria-posinset`/`aria-rowindex`): a virtual list.
    pub(super) indexed: bool,
    /// `aria-setsize` of the items, or `aria-rowcount` of the container.
    pub(super) total: Option<u32>,
    /// Depth inside a shown item (its own rows/items are not counted again).
    pub(super) inside: u32,
}

impl Renderer<'_> {
    /// The note that ends a windowed read of `within` (frame, backend) and what it showed. The items' total is the
    /// page's (`aria-setsize` of the items, `aria-rowcount` of the container), else, without indexes from the page,
    /// every item met: then every item is in the document.
    pub(super) fn window_shown(&mut self, w: &WindowState, frame: &str, backend: i64) -> (Line, WindowShown) {
        let rowcount = self
            .docs
            .get(frame)
            .and_then(|d| d.get(&backend))
            .and_then(|d| d.attr("aria-rowcount"))
            .and_then(|v| v.trim().parse::<u32>().ok());
        let total = w.total.or(rowcount).or((!w.indexed).then_some(w.met));
        let offset = w.first.unwrap_or(w.offset);
        let end = offset + w.shown;
        let truncated = w.after || total.is_some_and(|t| end < t) || (total.is_none() && w.end > end);
        let own = self.assign_ref(frame, backend);
        let note = line::window_note(w.offset, offset, w.shown, total, truncated.then_some(own.as_str()));
        (note, WindowShown { offset, count: w.shown, total, truncated })
    }

    /// Whether a node is a row/item of the window (`Some(shown)`), or not an item at all (`None`). Header rows are
    /// always shown and not counted.
    pub(super) fn window_item(&mut self, frame: &str, id: &str) -> Option<bool> {
        let ax = self.axs.get(frame)?;
        let n = ax.nodes.get(id)?;
        if n.ignored || !ITEM_ROLES.contains(&n.role.as_str()) {
            return None;
        }
        if n.role == "row" && n.children.iter().any(|c| ax.nodes.get(c).is_some_and(|c| c.role == "columnheader")) {
            return Some(true);
        }
        let dom = self.dom(frame, n);
        let attr = |name: &str| dom.and_then(|d| d.attr(name)).and_then(|v| v.trim().parse::<u32>().ok());
        let given = attr("aria-posinset").or_else(|| attr("aria-rowindex")).filter(|i| *i > 0);
        let setsize = attr("aria-setsize");
        let w = self.window.as_mut()?;
        let index = match given {
            Some(i) => {
                w.indexed = true;
                i - 1
            }
            None => w.met,
        };
        w.met += 1;
        w.end = w.end.max(index + 1);
        if setsize.is_some() {
            w.total = setsize;
        }
        let keep = index >= w.offset && index < w.offset.saturating_add(w.limit);
        if keep {
            w.first = Some(w.first.map_or(index, |f| f.min(index)));
            w.shown += 1;
        } else if index >= w.offset {
            w.after = true;
        }
        Some(keep)
    }
}

/// Brings item `offset` of a list into the document before a windowed read: when the page renders only the items
/// in view (items carry `aria-posinset`/`aria-rowindex` and the wanted one is missing), the list's scroll container
/// is scrolled until it is rendered at the top. Lists whose items are all in the document are left alone.
pub(super) async fn scroll_window_into_view(
    p: &ChromiumProvider,
    session: &SessionId,
    backend: i64,
    offset: u32,
    deadline: Instant,
) -> Result<(), ProviderError> {
    const BRING: &str = r"
  const sel = '[role=row],[role=listitem],[role=option],[role=treeitem],tr,li';
  const given = (el) => el.getAttribute('aria-posinset') || el.getAttribute('aria-rowindex');
  const items = () => [...this.querySelectorAll(sel)].map((el, i) => [given(el) ? parseInt(given(el), 10) - 1 : i, el]);
  const settle = () => new Promise((r) => { requestAnimationFrame(() => requestAnimationFrame(r)); setTimeout(r, 150); });
  for (let round = 0; round < 8; round++) {
    const list = items();
    if (!list.length || !list.some(([, el]) => given(el))) return 'static';
    const hit = list.find(([i]) => i === offset);
    const sc = scroller(list[0][1].parentElement, 0, 0, true) || document.scrollingElement;
    if (hit) {
      const delta = hit[1].getBoundingClientRect().top - (sc === document.scrollingElement ? 0 : sc.getBoundingClientRect().top);
      if (Math.abs(delta) < 2) return 'shown';
      // Instant, whatever the page's `scroll-behavior`: an animated scroll would not be where it is read next.
      sc.scrollTo({ top: sc.scrollTop + delta, behavior: 'instant' });
      await settle();
      continue;
    }
    const [i0, e0] = list[0];
    const [i1, e1] = list[list.length - 1];
    const h = list.length > 1 && i1 !== i0 ? (e1.getBoundingClientRect().top - e0.getBoundingClientRect().top) / (i1 - i0) : e0.getBoundingClientRect().height;
    if (!(h > 0)) return 'unknown';
    const before = sc.scrollTop;
    sc.scrollTo({ top: sc.scrollTop + (offset - i0) * h, behavior: 'instant' });
    if (sc.scrollTop === before) return 'end';
    await settle();
  }
  return 'unknown';";
    let bring = format!("async function(offset) {{ {} {BRING} }}", crate::scroller::SCROLLER);
    let obj = p
        .call(
            Some(session),
            "DOM.resolveNode",
            json!({"backendNodeId": backend, "objectGroup": "browserd-window"}),
            deadline,
        )
        .await
        .map_err(|e| cdp_err(&e, "resolving the `within` node"))?;
    let Some(object) = obj["object"]["objectId"].as_str() else {
        return Err(ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            "STALE_TARGET (nodeRemoved): the node of `within` is no longer in the page; observe again",
        ));
    };
    let r = p
        .call(
            Some(session),
            "Runtime.callFunctionOn",
            json!({"objectId": object, "functionDeclaration": bring, "arguments": [{"value": offset}],
                   "returnByValue": true, "awaitPromise": true}),
            deadline,
        )
        .await;
    let _ =
        p.call(Some(session), "Runtime.releaseObjectGroup", json!({"objectGroup": "browserd-window"}), deadline).await;
    r.map_err(|e| cdp_err(&e, "scrolling the list to the window"))?;
    Ok(())
}
