//! A click on a ref whose centre lands on another control inside it (issue 13 item 5): the result names the control
//! the input reached first (`hit`), so "succeeded" on a clickable card never hides that its child link took the click;
//! a plain inner element (a `<span>` in a button) or the control itself is not reported. Real Chromium.
mod common;

use browserd_protocol::{ActParams, ActionKind, Outcome};
use common::Page;

/// The ref of the first line of `content` that contains `needle`.
fn ref_of(content: &str, needle: &str) -> String {
    let line = content.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle} in\n{content}"));
    browserd_protocol::line_ref(line).expect("a ref line").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_whose_point_lands_on_a_child_link_names_the_link_it_reached() {
    let page = "data:text/html,<title>t</title>\
        <div style='cursor:pointer;border:1px solid;width:320px' onclick=\"document.title='card'\">\
        <a href='%23details' style='display:block;padding:30px'>Open details</a><small>Updated today</small></div>\
        <button style='padding:10px' onclick=\"document.title='saved'\"><span>Save now</span></button>";
    let tab = Page::open(page).await;
    let o = tab.observe().await;
    let content = &o.untrusted_content;
    let card = ref_of(content, "clickable");
    let link = ref_of(content, "link \"Open details\"");
    let button = ref_of(content, "button \"Save now\"");
    assert_ne!(card, link, "the card and its link have refs of their own:\n{content}");

    let r = tab.act(ActParams::new(ActionKind::Click).target(&card)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let hit = r.hit.as_ref().unwrap_or_else(|| panic!("the result names what the click reached: {r:#?}"));
    assert_eq!((hit.role.as_str(), hit.name.as_str()), ("link", "Open details"), "{r:#?}");
    assert_eq!(hit.node.0, link, "the hit is the link's own ref: {r:#?}");

    for target in [&link, &button] {
        let r = tab.act(ActParams::new(ActionKind::Click).target(target)).await;
        assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
        assert!(r.hit.is_none(), "the control itself (or a plain element inside it) took the click: {r:#?}");
    }
    tab.close().await;
}
