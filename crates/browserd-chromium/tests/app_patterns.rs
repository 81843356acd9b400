//! Patterns of real products on the admin (Vue) and shop (React) fixture apps, on real Chromium (issue 13 items 1, 3,
//! 4 and 5): a menu teleported to `<body>`, switches built from a hidden checkbox inside a `<label>`, a breadcrumb
//! whose clicks its parent handles, the remove icon of each chip, suggestions a combobox renders in a portal, a
//! clickable card named by its text, and a modal that makes the rest of the page inert.
mod common;

use std::time::Duration;

use browserd_protocol::{ActParams, ActionKind, Dispatch, Observation, Outcome};
use browserd_test_support::fixtures::app_truth;
use common::{Page, env, recorded, ref_in};

/// The line of the operable whose quoted name holds `name` (panics with the observation when none).
fn line_of<'a>(o: &'a Observation, name: &str) -> &'a str {
    o.untrusted_content
        .lines()
        .find(|l| browserd_protocol::line_ref(l).is_some() && l.split_once('"').is_some_and(|(_, q)| q.contains(name)))
        .unwrap_or_else(|| panic!("no line for {name:?} in\n{}", o.untrusted_content))
}

/// The lines indented under the first line that is exactly `head` (trimmed).
fn inside<'a>(o: &'a Observation, head: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = o.untrusted_content.lines().collect();
    let depth = |l: &str| l.len() - l.trim_start().len();
    let at = lines
        .iter()
        .position(|l| l.trim() == head)
        .unwrap_or_else(|| panic!("no {head:?} in\n{}", o.untrusted_content));
    lines[at + 1..].iter().take_while(|l| depth(l) > depth(lines[at])).copied().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switches_drawn_around_a_checkbox_nobody_can_click_are_their_labels_with_its_role_and_state() {
    // Two switches hide their checkbox (`hidden`), the third keeps it rendered, transparent and 0×0: in each the
    // label is what a user clicks, and it says the checkbox's state.
    let tab = Page::open("/apps/admin.html").await;
    let o = tab.observe().await;
    for (name, state) in
        [("Email notifications", "checked"), ("Weekly digest", "unchecked"), ("Mentions only", "unchecked")]
    {
        let l = line_of(&o, name);
        assert!(l.contains(&format!("checkbox \"{name}\" {state}")), "{l:?} in\n{}", o.untrusted_content);
        let lines = o.untrusted_content.lines().filter(|l| l.contains(name)).count();
        assert_eq!(lines, 1, "{name} is read once, on its control's line:\n{}", o.untrusted_content);
    }
    for (name, id, now) in [("Email notifications", "email", "off"), ("Mentions only", "mentions", "on")] {
        let r = tab.act(ActParams::new(ActionKind::Click).target(ref_in(line_of(&o, name)))).await;
        assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
        assert!(recorded(&format!("toggle:{id}:{now}")).await, "{name}: {r:#?}");
    }
    let o = tab.observe().await;
    assert!(line_of(&o, "Email notifications").contains(" unchecked"), "{}", o.untrusted_content);
    assert!(line_of(&o, "Mentions only").contains(" checked"), "{}", o.untrusted_content);
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crumbs_whose_clicks_their_bar_handles_and_a_teleported_menu_are_operable_one_by_one() {
    let tab = Page::open("/apps/admin.html").await;
    let o = tab.observe().await;
    // The bar's listener serves every crumb: each crumb is its own line, not one line for the bar.
    for crumb in ["Home", "Acme Corp", "Workspace"] {
        assert!(line_of(&o, crumb).ends_with(&format!("clickable \"{crumb}\"")), "{}", o.untrusted_content);
    }
    let r = tab.act(ActParams::new(ActionKind::Click).target(ref_in(line_of(&o, "Acme Corp")))).await;
    assert!(recorded("crumb:Acme Corp").await, "{r:#?}");
    // Icon-font glyphs drawn by `::before` are no text; the title reads as rendered, upper case.
    assert!(!o.untrusted_content.chars().any(|c| ('\u{e000}'..='\u{f8ff}').contains(&c)), "{}", o.untrusted_content);
    assert!(o.untrusted_content.lines().any(|l| l.trim() == "## NOTIFICATIONS"), "{}", o.untrusted_content);
    // The menu renders into <body> through a Teleport: its own popup, its items clicked one by one.
    let r = tab.act(ActParams::new(ActionKind::Click).target(ref_in(line_of(&o, "Actions")))).await;
    assert!(recorded("menu:toggle").await, "{r:#?}");
    let o = tab.observe().await;
    let popup = inside(&o, "popup:");
    for item in ["Duplicate workspace", "Export settings", "Archive workspace"] {
        assert!(
            popup.iter().any(|l| l.contains(&format!("\"{item}\""))),
            "{item} in the popup:\n{}",
            o.untrusted_content
        );
    }
    let r = tab.act(ActParams::new(ActionKind::Click).target(ref_in(line_of(&o, "Export settings")))).await;
    assert!(recorded("action:Export settings").await, "{r:#?}");
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clickable_card_with_buttons_is_named_by_its_text_and_a_modal_leaves_nothing_else_to_click() {
    let site = &env().site;
    let truth = app_truth("/apps/shop.html").expect("the shop's ground truth");
    let tab = Page::open("/apps/shop.html").await;
    let o = tab.observe().await;
    // The card is a container named by its first text (shown once, whole), holding its own buttons.
    let name = "Desk lamp with an adjustable arm and a warm dimmable light";
    let card = format!("clickable \"{name}\":");
    let head = o.untrusted_content.lines().find(|l| l.ends_with(&card)).map(str::trim).unwrap_or_else(|| {
        panic!("no card line {card:?} in\n{}", o.untrusted_content);
    });
    let held = inside(&o, head);
    assert!(held.iter().any(|l| l.contains("button \"Add to cart\"")), "{}", o.untrusted_content);
    assert_eq!(o.untrusted_content.matches(name).count(), 1, "{}", o.untrusted_content);
    for text in &truth.texts {
        assert!(o.untrusted_content.lines().any(|l| l.contains(text.as_str())), "{text:?} in\n{}", o.untrusted_content);
    }
    let r = tab.act(ActParams::new(ActionKind::Click).target(ref_in(head))).await;
    assert!(recorded("view:p2").await, "{r:#?}");
    let add = held.iter().find(|l| l.contains("Add to cart")).expect("Add to cart");
    let r = tab.act(ActParams::new(ActionKind::Click).target(ref_in(add))).await;
    assert!(recorded("add:p2").await, "{r:#?}");

    // The combobox's suggestions render in a portal at the end of <body>: still addressable, and they work.
    let search = ref_in(line_of(&o, "Search products"));
    let r = tab.act(ActParams::new(ActionKind::Type).target(&search).value("grind")).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let o = tab.observe().await;
    // The suggestion is shown under the combobox that points at it (the card of the same product is named the same).
    let suggestion =
        inside(&o, o.untrusted_content.lines().find(|l| l.contains("combobox")).unwrap_or_default().trim())
            .into_iter()
            .find(|l| l.contains("clickable \"Burr coffee grinder"));
    let suggestion =
        suggestion.unwrap_or_else(|| panic!("the suggestion under the combobox:\n{}", o.untrusted_content));
    let r = tab.act(ActParams::new(ActionKind::Click).target(ref_in(suggestion))).await;
    assert!(recorded("search:p3").await, "{r:#?} {:?}", site.records());

    // The checkout modal makes the rest of the page inert: only the dialog is offered (no ref for the framework
    // root whose listener serves the inert app), and a ref from before is refused, not clicked.
    let o = tab.observe().await;
    let save = ref_in(line_of(&o, "Save Trail runner for later"));
    let r = tab.act(ActParams::new(ActionKind::Click).target(ref_in(line_of(&o, "Checkout")))).await;
    assert!(recorded("checkout:open").await, "{r:#?}");
    let o = tab.observe().await;
    let refs: Vec<&str> = o.untrusted_content.lines().filter(|l| browserd_protocol::line_ref(l).is_some()).collect();
    assert!(
        refs.len() == 2 && refs.iter().all(|l| l.contains("Back to shop") || l.contains("Pay now")),
        "only the dialog's buttons:\n{}",
        o.untrusted_content
    );
    let r = tab.act(ActParams::new(ActionKind::Click).target(&save)).await;
    assert_eq!((r.outcome, r.dispatch), (Outcome::Failed, Dispatch::NotDispatched), "{r:#?}");
    assert!(r.message.as_deref().is_some_and(|m| m.contains("inert")), "{r:#?}");
    assert!(!site.wait_for_record("like:p1", Duration::from_millis(300)).await);
    let r = tab.act(ActParams::new(ActionKind::Click).target(ref_in(line_of(&o, "Pay now")))).await;
    assert!(recorded("checkout:pay").await, "{r:#?}");
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_behind_a_modal_dialog_is_refused_as_inert_and_one_inside_it_goes_through() {
    let page = "data:text/html,<button onclick=\"document.title='outside'\">Outside</button>\
                <dialog id=d><custom-x></custom-x><button onclick=\"document.title='inside'\">Inside</button></dialog>\
                <button onclick=\"d.showModal()\">Open</button>";
    let tab = Page::open(page).await;
    let o = tab.observe().await;
    let outside = ref_in(line_of(&o, "Outside"));
    tab.act(ActParams::new(ActionKind::Click).target(ref_in(line_of(&o, "Open")))).await;
    let o = tab.observe().await;
    let r = tab.act(ActParams::new(ActionKind::Click).target(&outside)).await;
    assert_eq!((r.outcome, r.dispatch), (Outcome::Failed, Dispatch::NotDispatched), "{r:#?}");
    assert!(r.message.as_deref().is_some_and(|m| m.contains("inert")), "{r:#?}");
    let r = tab.act(ActParams::new(ActionKind::Click).target(ref_in(line_of(&o, "Inside")))).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    tab.close().await;
}
