//! Real-Chromium tests on the fixture apps (React, Vue, Lit, Svelte, jQuery and jQuery-style pages): every operable element of their
//! server-side ground truth has a ref, and clicking that ref reaches the page's handler (the site records it).
mod common;

use std::time::Duration;

use browserd_protocol::{ActParams, ActionKind, Observation};
use browserd_test_support::app_refs::app_ref;
use browserd_test_support::fixtures::{FixtureSite, app_truth};
use common::{Page, env};

/// The ref of the line showing a ground-truth operable (see [`app_ref`]); from the last line up when `from_end`.
fn ref_for(o: &Observation, role: &str, name: &str, taken: &[String], from_end: bool) -> Option<String> {
    app_ref(&o.untrusted_content, role, name, taken, from_end)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_ground_truth_operable_of_the_apps_has_a_ref() {
    let mut missing = Vec::new();
    for page in FixtureSite::pages().iter().filter(|p| p.category == "app") {
        let truth = app_truth(page.path).expect("ground truth");
        let tab = Page::open(page.path).await;
        let o = tab.observe().await;
        println!("=== {}\n{}", page.path, o.untrusted_content);
        let mut taken = Vec::new();
        for op in &truth.operable {
            match ref_for(&o, op.role, &op.name, &taken, false) {
                Some(r) => taken.push(r),
                None => missing.push(format!("{}: {} {:?}", page.path, op.role, op.name)),
            }
        }
        tab.close().await;
    }
    assert!(missing.is_empty(), "operable elements without a ref:\n{}", missing.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clicking_each_operable_of_the_apps_reaches_its_handler() {
    let site = &env().site;
    for page in FixtureSite::pages().iter().filter(|p| p.category == "app") {
        let truth = app_truth(page.path).expect("ground truth");
        let tab = Page::open(page.path).await;
        // Last first, so a folder is clicked (which folds it) after its children; the confirmation popup covers the
        // page once asked for: ask last of all.
        let mut ops: Vec<_> = truth.operable.iter().rev().filter(|op| op.records.is_some()).collect();
        ops.sort_by_key(|op| match op.records.as_deref() {
            // The modals cover the whole page: last of all.
            Some(r) if r.starts_with("archive:") || r.starts_with("invoice:") => 2,
            Some(r) if r.starts_with("delete:") => 1,
            Some("cookie:accept") => 1, // accepting removes the cookie banner, its link with it
            _ => 0,
        });
        let mut taken = Vec::new();
        for op in ops {
            let o = tab.observe().await;
            let r = ref_for(&o, op.role, &op.name, &taken, true).unwrap_or_else(|| {
                panic!("{}: no ref for {} {:?} in\n{}", page.path, op.role, op.name, o.untrusted_content)
            });
            taken.push(r.clone());
            let result = tab.act(ActParams::new(ActionKind::Click).target(&r)).await;
            let record = op.records.as_deref().unwrap_or_default();
            assert!(
                site.wait_for_record(record, Duration::from_secs(5)).await,
                "{}: clicking [{r}] {} {:?} did not reach its handler ({record:?} not recorded); result {result:?}",
                page.path,
                op.role,
                op.name
            );
        }
        tab.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_of_nested_lists_is_indented_and_a_fixed_popup_is_its_own_container() {
    let tab = Page::open("/apps/mail.html").await;
    let o = tab.observe().await;
    let lines: Vec<&str> = o.untrusted_content.lines().collect();
    let indent_of = |needle: &str| {
        let l = lines
            .iter()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in\n{}", o.untrusted_content));
        l.len() - l.trim_start().len()
    };
    // Apollo and Gemini are children of the open Projects folder; Archive is a sibling of Projects.
    assert_eq!(indent_of("\"▸ Apollo\""), indent_of("\"▾ Projects\"") + 1, "{}", o.untrusted_content);
    assert_eq!(indent_of("\"Gemini\""), indent_of("\"▾ Projects\"") + 1, "{}", o.untrusted_content);
    assert_eq!(indent_of("\"▸ Archive\""), indent_of("\"▾ Projects\""), "{}", o.untrusted_content);
    tab.close().await;

    let tab = Page::open("/apps/tracker.html").await;
    let o = tab.observe().await;
    let r = ref_for(&o, "button", "Delete selected", &[], false).expect("Delete selected");
    tab.act(ActParams::new(ActionKind::Click).target(&r)).await;
    let o = tab.observe().await;
    let text = &o.untrusted_content;
    let lines: Vec<&str> = text.lines().collect();
    let popup =
        lines.iter().position(|l| l.trim() == "popup:").unwrap_or_else(|| panic!("no popup container in\n{text}"));
    let depth = |l: &str| l.len() - l.trim_start().len();
    let inside: Vec<&str> = lines[popup + 1..].iter().take_while(|l| depth(l) > depth(lines[popup])).copied().collect();
    assert!(inside.iter().any(|l| l.contains("Delete the selected issue?")), "{text}");
    assert!(inside.iter().any(|l| l.contains("button \"Cancel\"")), "{text}");
    assert!(inside.iter().any(|l| l.contains("button \"Delete\"")), "{text}");
    assert!(!inside.iter().any(|l| l.contains("Delete selected")), "the popup holds only its own content: {text}");
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_with_no_observable_effect_says_effects_none() {
    let tab = Page::open("/apps/delegated.html").await;
    let o = tab.observe().await;
    // The Beta badge shows a pointer but nothing handles its click.
    let beta = ref_for(&o, "generic", "Beta", &[], false).expect("the badge has a ref");
    let r = tab.act(ActParams::new(ActionKind::Click).target(&beta)).await;
    assert!(r.effects.none, "nothing happened, and the result must say so: {r:?}");
    assert!(r.effects.changed.is_empty(), "{r:?}");
    // A click that changes the page is not `none`, and says what text it brought.
    let o = tab.observe().await;
    let billing = ref_for(&o, "generic", "Billing", &[], false).expect("Billing has a ref");
    let r = tab.act(ActParams::new(ActionKind::Click).target(&billing)).await;
    assert!(!r.effects.none, "{r:?}");
    assert!(r.effects.changed.iter().any(|l| l.contains("Section: Billing")), "{r:?}");
    assert!(env().site.wait_for_record("section:Billing", Duration::from_secs(5)).await);
    tab.close().await;
}

/// The line of the operable whose quoted name is `name` exactly (panics with the observation when none).
fn line_of<'a>(o: &'a Observation, name: &str) -> &'a str {
    let needle = format!("\"{name}\"");
    o.untrusted_content
        .lines()
        .find(|l| browserd_protocol::line_ref(l).is_some() && l.contains(&needle))
        .unwrap_or_else(|| panic!("no line for {name:?} in\n{}", o.untrusted_content))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_of_a_nested_list_tree_say_expanded_collapsed_or_leaf_and_follow_a_toggle() {
    // The Vue mail app's folder tree has no ARIA: only a shown child list, a triangle drawn by CSS and a class.
    let tab = Page::open("/apps/mail.html").await;
    let o = tab.observe().await;
    for (name, state) in
        [("▾ Projects", "expanded"), ("▸ Apollo", "collapsed"), ("Gemini", "leaf"), ("▸ Archive", "collapsed")]
    {
        let l = line_of(&o, name);
        assert!(l.contains(&format!("\" {state}")), "{name} should be {state}: {l:?}\n{}", o.untrusted_content);
    }
    // The mail rows are a list of clickable rows, not a tree: no disclosure state.
    assert!(!line_of(&o, "Grace Hopper Compiler meeting moved to Thursday 09:12").contains("leaf"));
    let archive = ref_for(&o, "generic", "Archive", &[], false).expect("Archive");
    tab.act(ActParams::new(ActionKind::Click).target(&archive)).await;
    assert!(env().site.wait_for_record("folder:Archive", Duration::from_secs(5)).await);
    let o = tab.observe().await;
    assert!(line_of(&o, "▾ Archive").contains(" expanded"), "{}", o.untrusted_content);
    assert!(line_of(&o, "2025").contains(" leaf"), "{}", o.untrusted_content);
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modal_leaves_out_what_it_covers_and_a_covered_ref_is_not_clicked() {
    let site = &env().site;
    let tab = Page::open("/apps/tracker.html").await;
    let o = tab.observe().await;
    assert!(!o.untrusted_content.contains("covered"), "nothing covers the page yet:\n{}", o.untrusted_content);
    let archive_all = ref_for(&o, "button", "Archive all", &[], false).expect("Archive all");
    let delete = ref_for(&o, "button", "Delete selected", &[], false).expect("Delete selected");
    tab.act(ActParams::new(ActionKind::Click).target(&archive_all)).await;
    assert!(site.wait_for_record("archive:ask", Duration::from_secs(5)).await);
    let o = tab.observe().await;
    let text = &o.untrusted_content;
    // The `aria-modal` dialog's backdrop covers every operable behind it (the app does not make them inert): the
    // dialog is shown alone, with one line saying how many wait behind it; its own buttons are not covered.
    assert!(text.starts_with("(page behind the dialog is inert: "), "{text}");
    let refs: Vec<&str> = text.lines().filter(|l| browserd_protocol::line_ref(l).is_some()).collect();
    assert_eq!(refs.len(), 2, "only the dialog's buttons: {text}");
    assert!(!line_of(&o, "Keep them").contains("covered") && !line_of(&o, "Archive").contains("covered"), "{text}");
    // A click on a covered ref would reach the backdrop: refused, not dispatched, and the page never saw it.
    let r = tab.act(ActParams::new(ActionKind::Click).target(&delete)).await;
    assert_eq!(
        (r.outcome, r.code.as_deref(), r.dispatch),
        (browserd_protocol::Outcome::Failed, Some("NOT_ACTIONABLE"), browserd_protocol::Dispatch::NotDispatched),
        "{r:#?}"
    );
    assert!(!site.wait_for_record("delete:ask", Duration::from_millis(300)).await);
    let keep = ref_for(&o, "button", "Keep them", &[], false).expect("Keep them");
    tab.act(ActParams::new(ActionKind::Click).target(&keep)).await;
    assert!(site.wait_for_record("archive:cancel", Duration::from_secs(5)).await);
    let o = tab.observe().await;
    assert!(!o.untrusted_content.contains("covered"), "the modal is gone:\n{}", o.untrusted_content);
    tab.close().await;
}
