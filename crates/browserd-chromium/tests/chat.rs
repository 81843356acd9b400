//! The team chat fixture app (React 19 + @tanstack/react-virtual), on real Chromium: a tab opened the way agents open
//! them (in the background) still runs the page's rendering steps, so the virtualised message list shows its newest
//! rows at the first look, and says that more is above them, not rendered; a scroll inside the list reaches messages
//! that exist only once scrolled to (with a row as
//! the target, which the list unmounts as it scrolls, and without a target, the wheel landing on the list of a page
//! that does not scroll itself); the contenteditable composer takes a mention picked from its floating listbox and
//! sends with Enter.
mod common;

use std::time::Duration;

use browserd_core::provider::{CreateTab, Provider};
use browserd_protocol::{ActParams, ActionKind, ActionResult, Outcome, ScrollDirection};
use common::{Page, ctx, env, recorded, ref_in, ref_line};

const NEWEST: &str = "Lunch at 12:30 — the usual place?";
const FIRST: &str = "Welcome to #general — say hi to the team!";

/// A scroll that must succeed: from `target` (else the page), by a screen or until `text` is on screen.
async fn scroll(tab: &Page, target: Option<String>, direction: ScrollDirection, text: Option<&str>) -> ActionResult {
    let mut p = ActParams::new(ActionKind::Scroll);
    p.target = target.map(browserd_protocol::NodeRef);
    p.direction = Some(direction);
    p.until_text = text.map(str::to_owned);
    let r = tab.act(p).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "scroll until {text:?}: {r:#?}");
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tab_opened_in_the_background_renders_the_newest_messages_at_the_first_look() {
    // `browser_open` opens tabs in the background (it must not take the user's focus). On the managed browser such a
    // tab used to be hidden: the page never ran its rendering steps, so the list had not scrolled to its newest rows
    // and showed the oldest ones instead, until the first action brought the tab to the front.
    let e = env();
    let req = CreateTab { url: e.site.url("/apps/chat.html"), background: true, group_for: None };
    let info = e.provider.create_tab(&ctx(), req).await.expect("the tab opens");
    let tab = Page { tab: info.tab };
    let mut o = tab.observe().await;
    for _ in 0..50 {
        if o.untrusted_content.contains(NEWEST) || o.untrusted_content.contains(FIRST) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        o = tab.observe().await;
    }
    assert!(o.untrusted_content.contains(NEWEST), "the newest message is shown:\n{}", o.untrusted_content);
    assert!(!o.untrusted_content.contains(FIRST), "the oldest one is not rendered yet:\n{}", o.untrusted_content);
    // What is not rendered is said: the list has more above its first row, nothing below its last.
    assert!(o.untrusted_content.contains("… more above, not rendered"), "{}", o.untrusted_content);
    assert!(!o.untrusted_content.contains("… more below"), "{}", o.untrusted_content);
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scroll_from_a_row_of_the_list_reaches_the_first_message_though_the_row_unmounts() {
    let tab = Page::open("/apps/chat.html").await;
    let o = tab.observe().await;
    assert!(!o.untrusted_content.contains(FIRST), "{}", o.untrusted_content);
    // The row's author name: the list unmounts it after a few screens.
    let row = ref_in(ref_line(&o, "\"Grace Hopper\""));
    scroll(&tab, Some(row), ScrollDirection::Up, Some(FIRST)).await;
    let o = tab.observe().await;
    assert!(o.untrusted_content.contains(FIRST), "{}", o.untrusted_content);
    assert!(!o.untrusted_content.contains(NEWEST), "the list scrolled, not the page:\n{}", o.untrusted_content);
    // At the top of the list: the rows below are the ones not rendered now.
    assert!(o.untrusted_content.contains("… more below, not rendered"), "{}", o.untrusted_content);
    assert!(!o.untrusted_content.contains("… more above"), "{}", o.untrusted_content);
    // And back down with no target: the page does not scroll, the wheel lands on the list.
    scroll(&tab, None, ScrollDirection::Down, Some(NEWEST)).await;
    let o = tab.observe().await;
    assert!(o.untrusted_content.contains(NEWEST), "{}", o.untrusted_content);
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scroll_by_a_screen_inside_the_list_says_it_moved() {
    // Without `untilText`: one screen up from a row; the list moves, so the answer must not say nothing moved.
    let tab = Page::open("/apps/chat.html").await;
    let o = tab.observe().await;
    let row = ref_in(ref_line(&o, "\"Barbara Liskov\""));
    let r = scroll(&tab, Some(row), ScrollDirection::Up, None).await;
    assert!(r.message.as_deref().is_none_or(|m| !m.contains("nothing moved")), "{r:#?}");
    let o = tab.observe().await;
    assert!(!o.untrusted_content.contains(NEWEST), "the newest row scrolled away:\n{}", o.untrusted_content);
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_composer_takes_a_mention_from_its_picker_and_sends_with_enter() {
    let tab = Page::open("/apps/chat.html").await;
    let o = tab.observe().await;
    let composer = ref_in(ref_line(&o, "textbox \"Message #general\""));
    let r = tab.act(ActParams::new(ActionKind::Type).target(&composer).value("Hi @gr")).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let o = tab.observe().await;
    let grace = ref_in(ref_line(&o, "option \"Grace Hopper\""));
    let r = tab.act(ActParams::new(ActionKind::Click).target(&grace)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("mention:grace").await);
    let r = tab.act(ActParams::new(ActionKind::Type).target(&composer).value("please check")).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let r = tab.act(ActParams::new(ActionKind::Press).target(&composer).value("Enter")).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("send:Hi @Grace Hopper please check").await, "{:?}", env().site.records());
    let o = tab.observe().await;
    assert!(o.untrusted_content.contains("Hi @Grace Hopper please check"), "{}", o.untrusted_content);
    tab.close().await;
}
