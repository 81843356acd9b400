//! The account settings fixture app (React 19 + Radix UI primitives), on real Chromium (issue 13 items 3, 4 and 5):
//! the active tab's panel reads as a panel holding its controls, though Radix makes it focusable; a Select whose listbox renders in a portal is shown under its combobox and picks with a click; a user menu that
//! opens on pointerdown takes pointer events from the rest of the page, so a click outside it is refused before any
//! input, and its items are clicked; a Dialog in a portal leaves only itself to act on.
mod common;

use browserd_protocol::{ActParams, ActionKind, Outcome, codes};
use common::{Page, env, recorded, ref_in, ref_line};

async fn click(tab: &Page, line: &str) -> browserd_protocol::ActionResult {
    tab.act(ActParams::new(ActionKind::Click).target(ref_in(line))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_active_tabs_panel_holds_its_controls() {
    // Radix makes the panel focusable (`tabindex="0"`): it still reads as the tab's panel, with its controls in it.
    let tab = Page::open("/apps/account.html").await;
    let o = tab.observe().await;
    let lines: Vec<&str> = o.untrusted_content.lines().collect();
    let at = lines.iter().position(|l| l.contains("tabpanel \"Profile\":")).unwrap_or_else(|| {
        panic!("no panel line in\n{}", o.untrusted_content);
    });
    let depth = |l: &str| l.len() - l.trim_start().len();
    let inside: Vec<&str> = lines[at + 1..].iter().take_while(|l| depth(l) > depth(lines[at])).copied().collect();
    for control in ["textbox \"Display name\"", "combobox \"Language\"", "switch \"Public profile\"", "Save changes"] {
        assert!(inside.iter().any(|l| l.contains(control)), "{control} in the panel:\n{}", o.untrusted_content);
    }
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_select_in_a_portal_opens_under_its_combobox_and_picks_with_a_click() {
    let tab = Page::open("/apps/account.html").await;
    let o = tab.observe().await;
    let r = click(&tab, ref_line(&o, "combobox \"Language\"")).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let o = tab.observe().await;
    let deutsch = ref_line(&o, "option \"Deutsch\"");
    let r = click(&tab, deutsch).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("lang:de").await, "the pick reached the page");
    let o = tab.observe().await;
    assert!(ref_line(&o, "combobox \"Language\"").contains("Deutsch"), "{}", o.untrusted_content);
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_menu_takes_pointer_events_from_the_page_and_its_items_are_clicked() {
    let tab = Page::open("/apps/account.html").await;
    let o = tab.observe().await;
    let save = ref_in(ref_line(&o, "button \"Save changes\""));
    let r = click(&tab, ref_line(&o, "button \"Ada Lovelace ▾\"")).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("menu:open").await);
    // While the menu is open, the page under it takes no pointer events: a click there would only close the menu.
    let r = tab.act(ActParams::new(ActionKind::Click).target(&save)).await;
    assert_eq!(r.code.as_deref(), Some(codes::NOT_ACTIONABLE), "{r:#?}");
    assert!(!env().site.records().iter().any(|e| e == "save"), "nothing reached Save");
    let o = tab.observe().await;
    let r = click(&tab, ref_line(&o, "menuitem \"Sign out\"")).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("menu:Sign out").await, "the item's onSelect ran");
    // The menu closed: Save takes the click now.
    let o = tab.observe().await;
    let r = click(&tab, ref_line(&o, "button \"Save changes\"")).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("save").await);
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialog_in_a_portal_leaves_only_itself_to_act_on() {
    let tab = Page::open("/apps/account.html").await;
    let o = tab.observe().await;
    let r = click(&tab, ref_line(&o, "tab \"Danger zone\"")).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let o = tab.observe().await;
    let r = click(&tab, ref_line(&o, "button \"Delete account\"")).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("delete:ask").await);
    let o = tab.observe().await;
    assert!(o.untrusted_content.contains("This removes 7 projects and cannot be undone."), "{}", o.untrusted_content);
    assert!(!o.untrusted_content.contains("Save changes"), "the page behind is hidden:\n{}", o.untrusted_content);
    let r = click(&tab, ref_line(&o, "button \"Cancel\"")).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("delete:close").await);
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accordion_question_is_one_line_its_button_in_the_headings_place() {
    // Each question is `<h3><button aria-expanded>…</button></h3>` (Radix Accordion): the button's line takes the
    // heading's place, rather than the heading and then its button repeating the same words.
    let tab = Page::open("/apps/account.html").await;
    let o = tab.observe().await;
    let lines: Vec<&str> = o.untrusted_content.lines().collect();
    let depth = |l: &str| l.len() - l.trim_start().len();
    let questions = lines.iter().position(|l| l.trim_start() == "## Questions").expect("the section's heading");
    for (k, q) in ["How do I export my data?", "Can I change my email address?"].iter().enumerate() {
        assert!(
            !o.untrusted_content.contains(&format!("# {q}")),
            "no heading line for {q:?}:\n{}",
            o.untrusted_content
        );
        let line = lines[questions + 1 + k];
        assert!(line.ends_with(&format!(" button \"{q}\" collapsed")), "{line:?} in\n{}", o.untrusted_content);
        assert_eq!(depth(line), depth(lines[questions]), "at the heading's place:\n{}", o.untrusted_content);
    }
    // It still opens its answer.
    let r = click(&tab, ref_line(&o, "How do I export my data?")).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let o = tab.observe().await;
    assert!(ref_line(&o, "How do I export my data?").contains(" expanded"), "{}", o.untrusted_content);
    tab.close().await;
}
