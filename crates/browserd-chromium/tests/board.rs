//! The sprint board fixture app (Svelte 5, every click delegated to the app's root), on real Chromium (issue 13
//! items 3, 4 and 5): a column heading the page folds on click reads as a heading with its level and stays the
//! context of what follows; a task's "⋯" menu that flies in is addressable entry by entry, and its "Delete" reaches
//! the handler with the toast it raises in the action's effects.
mod common;

use browserd_protocol::{ActParams, ActionKind, Outcome};
use common::{Page, recorded, ref_in, ref_line};

async fn click(tab: &Page, line: &str) -> browserd_protocol::ActionResult {
    tab.act(ActParams::new(ActionKind::Click).target(ref_in(line))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_column_heading_the_page_folds_on_click_reads_as_a_heading_with_its_level() {
    let tab = Page::open("/apps/board.html").await;
    let o = tab.observe().await;
    // CSS shows the heading uppercase; the page folds the column when it is clicked (no listener of its own).
    let heading = ref_line(&o, "DOING (2)");
    assert!(heading.ends_with(" heading \"DOING (2)\" level=2"), "{heading}\n{}", o.untrusted_content);
    let r = click(&tab, heading).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("column:Doing").await, "the click reached the page's handler");
    let o = tab.observe().await;
    assert!(!o.untrusted_content.contains("Design the empty states"), "the column folded:\n{}", o.untrusted_content);
    tab.close().await;

    // Clickable headings tell the namesakes after them apart, as any heading does.
    let page = "data:text/html,<title>t</title>\
        <h2 style='cursor:pointer' onclick='this.title=1'>Drafts</h2><button>Delete</button>\
        <h2 style='cursor:pointer' onclick='this.title=2'>Sent</h2><button>Delete</button>";
    let tab = Page::open(page).await;
    let o = tab.observe().await;
    for (heading, context) in [("Drafts", "(in \"Drafts\")"), ("Sent", "(in \"Sent\")")] {
        assert!(ref_line(&o, heading).ends_with(&format!(" heading \"{heading}\" level=2")), "{}", o.untrusted_content);
        let delete = format!("button \"Delete\" {context}");
        assert!(o.untrusted_content.lines().any(|l| l.ends_with(&delete)), "{delete}:\n{}", o.untrusted_content);
    }
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_menu_that_flies_in_is_addressable_and_its_delete_reaches_the_handler_with_the_toast_in_the_effects() {
    let tab = Page::open("/apps/board.html").await;
    let o = tab.observe().await;
    let r = click(&tab, ref_line(&o, "More actions for SB-3")).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("menu:SB-3").await);
    // The menu's entries are <li>s with a pointer cursor whose clicks Svelte handles at the root.
    assert!(r.effects.appeared.iter().any(|l| l.contains("\"Delete\"")), "the menu appeared: {r:#?}");
    let o = tab.observe().await;
    let r = click(&tab, ref_line(&o, "Delete")).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("delete:SB-3").await, "the click reached the entry's handler");
    assert!(r.effects.announced.iter().any(|a| a == "Deleted SB-3"), "the toast is in the effects: {r:#?}");
    let o = tab.observe().await;
    assert!(!o.untrusted_content.contains("Fix the flaky login test"), "{}", o.untrusted_content);
    assert!(o.untrusted_content.contains("TO DO (2)"), "{}", o.untrusted_content);
    tab.close().await;
}
