//! The page-side helper that finds what a wheel scrolls, shared by the `scroll` action and the windowed read of a
//! virtual list: `scrolls(e, vertical)` (the element scrolls along that axis and has content past its box) and
//! `scroller(target, x, y, vertical)` (the nearest element from `target`, or from the element at `x, y` without one,
//! up through shadow hosts, that scrolls; `null` for the page).

/// JavaScript declaring `scrolls` and `scroller`, for the start of a function body.
pub(crate) const SCROLLER: &str = r"
  const scrolls = (e, vertical) => {
    const cs = getComputedStyle(e);
    const overflow = vertical ? cs.overflowY : cs.overflowX;
    const room = vertical ? e.scrollHeight > e.clientHeight + 1 : e.scrollWidth > e.clientWidth + 1;
    return room && ['auto', 'scroll', 'overlay'].includes(overflow);
  };
  const scroller = (target, x, y, vertical) => {
    let e = target && target.nodeType === 1 ? target : document.elementFromPoint(x, y);
    for (; e && e !== document.body && e !== document.documentElement; e = e.parentElement || e.getRootNode().host) {
      if (scrolls(e, vertical)) return e;
    }
    return null;
  };";
