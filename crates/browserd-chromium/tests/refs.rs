//! Real-Chromium ref tests: refs bound to their browser connection (`connectionChanged` after a reconnect), per-node
//! versions (`nodeChanged` when a node's role or name changed, but not for sibling changes, typing or toggling), and
//! windowed reads of a large table and of the 10 000-row virtual list.
mod common;

use std::time::Duration;

use browserd_chromium::{ChromiumConfig, ChromiumProvider};
use browserd_core::provider::{CreateTab, HandleAllocator, Provider};
use browserd_protocol::{
    ActParams, ActionKind, Dispatch, Expectation, ObserveParams, ObserveWindow, Outcome, Postcondition, StaleReason,
    codes,
};
use common::{Page, ctx, env, ref_of};

fn data_url(html: &str) -> String {
    format!("data:text/html,{}", html.replace('#', "%23"))
}

fn click(r: &str) -> ActParams {
    ActParams::new(ActionKind::Click).target(r)
}

/// A Chromium with a DevTools port, and its `ws://` endpoint.
async fn remote_chromium(dir: &std::path::Path) -> (tokio::process::Child, String) {
    let child = tokio::process::Command::new(browserd_cdp::find_executable(None).unwrap())
        .args([
            "--headless=new",
            "--no-sandbox",
            "--remote-debugging-port=0",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--disable-sync",
            "--disable-gpu",
            "--disable-quic",
            &format!("--user-data-dir={}", dir.join("profile").display()),
            "about:blank",
        ])
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let port_file = dir.join("profile").join("DevToolsActivePort");
    let mut text = String::new();
    for _ in 0..200 {
        if let Ok(t) = std::fs::read_to_string(&port_file)
            && t.lines().count() >= 2
        {
            text = t;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut lines = text.lines();
    let url = format!("ws://127.0.0.1:{}{}", lines.next().expect("a port"), lines.next().expect("a path"));
    (child, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ref_from_before_a_reconnect_is_stale_with_connection_changed() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, url) = remote_chromium(dir.path()).await;
    let page = data_url(
        "<title>reconnect</title><p id=s>clicks: 0</p>\
         <button onclick=\"s.textContent='clicks: 1'\">Go</button>",
    );
    let first =
        ChromiumProvider::connect_remote(&url, HandleAllocator::new(), ChromiumConfig::default()).await.unwrap();
    let tab = first.create_tab(&ctx(), CreateTab::default()).await.unwrap().tab;
    let r = first.act(&ctx(), tab, &ActParams::new(ActionKind::Navigate).value(&page)).await.unwrap();
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let o = first.observe(&ctx(), tab, &ObserveParams::default()).await.unwrap();
    let old = ref_of(&o, "button \"Go\"");
    drop(first);

    // The same browser through a new connection: the same tab, new refs.
    let second =
        ChromiumProvider::connect_remote(&url, HandleAllocator::new(), ChromiumConfig::default()).await.unwrap();
    let tabs = second.list_tabs(&ctx()).await.unwrap();
    let tab = tabs.iter().find(|t| t.title == "reconnect").expect("the tab is still there").tab;
    let r = second.act(&ctx(), tab, &click(&old)).await.unwrap();
    assert_eq!(r.code.as_deref(), Some(codes::STALE_TARGET), "{r:#?}");
    assert_eq!(r.stale_reason, Some(StaleReason::ConnectionChanged), "{r:#?}");
    assert_eq!(r.dispatch, Dispatch::NotDispatched);
    let msg = r.message.unwrap();
    assert!(msg.contains("connection changed") && msg.contains("observe again"), "{msg}");

    let err = second
        .observe(&ctx(), tab, &ObserveParams { within: Some(old.as_str().into()), ..Default::default() })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("connectionChanged"), "{err}");

    let o = second.observe(&ctx(), tab, &ObserveParams::default()).await.unwrap();
    assert!(o.untrusted_content.contains("clicks: 0"), "the stale click was not dispatched:\n{}", o.untrusted_content);
    let fresh = ref_of(&o, "button \"Go\"");
    assert_ne!(fresh, old, "a new connection issues refs of its own");
    let r = second
        .act(&ctx(), tab, &click(&fresh).expect(Expectation::TextPresent { text: "clicks: 1".into() }))
        .await
        .unwrap();
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    child.kill().await.unwrap();
}

const EDITOR: &str = "<title>versions</title><p id=s>saved: no</p><ul id=l><li>first</li></ul>\
    <button id=save onclick=\"s.textContent='saved: '+this.textContent\">Save</button>\
    <button onclick=\"save.textContent='Delete'\">Rename</button>\
    <button onclick=\"save.remove()\">Remove</button>\
    <button onclick=\"l.insertAdjacentHTML('afterbegin','<li>new</li><li>newer</li>');\
      document.body.insertAdjacentHTML('afterbegin','<h2>Banner</h2>')\">Add</button>\
    <label>Name <input id=n></label><input placeholder=Search>\
    <label><input type=checkbox> Agree</label>\
    <select aria-label=Size><option>S</option><option>M</option></select>\
    <button aria-expanded=false onclick=\"this.setAttribute('aria-expanded', this.getAttribute('aria-expanded')=='false')\">Menu</button>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renamed_button_is_stale_with_node_changed_until_observed_again() {
    let page = Page::open(&data_url(EDITOR)).await;
    let o = page.observe().await;
    let save = ref_of(&o, "button \"Save\"");
    let rename = ref_of(&o, "button \"Rename\"");
    let r = page.act(click(&rename)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");

    let r = page.act(click(&save)).await;
    assert_eq!(r.code.as_deref(), Some(codes::STALE_TARGET), "{r:#?}");
    assert_eq!(r.stale_reason, Some(StaleReason::NodeChanged), "{r:#?}");
    assert_eq!(r.dispatch, Dispatch::NotDispatched, "refused before any input");
    let msg = r.message.unwrap();
    assert!(msg.contains("name was \"Save\" and is now \"Delete\""), "{msg}");

    // Once an observation has shown the new name, the same ref acts on it.
    let o = page.observe().await;
    assert!(o.untrusted_content.contains("saved: no"), "{}", o.untrusted_content);
    assert_eq!(ref_of(&o, "button \"Delete\""), save, "the node is the same, so is its ref");
    let r = page.act(click(&save).expect(Expectation::TextPresent { text: "saved: Delete".into() })).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");

    // A node removed from the document reads `nodeRemoved`.
    let remove = ref_of(&o, "button \"Remove\"");
    let r = page.act(click(&remove)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let r = page.act(click(&save)).await;
    assert_eq!(r.stale_reason, Some(StaleReason::NodeRemoved), "{r:#?}");
    assert!(r.message.as_deref().unwrap_or_default().contains("removed from the document"), "{r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sibling_changes_typing_and_toggling_keep_refs_valid() {
    let page = Page::open(&data_url(EDITOR)).await;
    let o = page.observe().await;
    let save = ref_of(&o, "button \"Save\"");
    let add = ref_of(&o, "button \"Add\"");
    let name = ref_of(&o, "textbox \"Name\"");
    let search = ref_of(&o, "textbox \"Search\"");
    let agree = ref_of(&o, "checkbox \"Agree\"");
    let size = ref_of(&o, "combobox \"Size\"");
    let menu = ref_of(&o, "button \"Menu\"");

    // New siblings before the button move it and change the list: the ref stays valid.
    let r = page.act(click(&add)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let r = page.act(click(&save).expect(Expectation::TextPresent { text: "saved: Save".into() })).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");

    // Typing changes a field's value, not what the field is.
    for (field, first, more) in [(&name, "Ann", " Lee"), (&search, "shoes", " red")] {
        let r = page.act(ActParams::new(ActionKind::Fill).target(field.as_str()).value(first)).await;
        assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
        let r = page
            .act(
                ActParams::new(ActionKind::Type)
                    .target(field.as_str())
                    .value(more)
                    .expect(Expectation::Value { target: field.as_str().into(), equals: format!("{first}{more}") }),
            )
            .await;
        assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    }
    // Checked, selected and expanded states change by acting; they do not stale the ref.
    for kind in [ActionKind::Check, ActionKind::Uncheck, ActionKind::Check] {
        let r = page.act(ActParams::new(kind).target(agree.as_str())).await;
        assert_eq!(r.outcome, Outcome::Succeeded, "{kind:?}: {r:#?}");
    }
    for option in ["M", "S"] {
        let r = page.act(ActParams::new(ActionKind::Select).target(size.as_str()).value(option)).await;
        assert_eq!(r.outcome, Outcome::Succeeded, "{option}: {r:#?}");
    }
    for state in ["expanded", "collapsed"] {
        let r = page
            .act(click(&menu).expect(Expectation::State { target: menu.as_str().into(), state: state.into() }))
            .await;
        assert_eq!(r.postcondition, Postcondition::Passed, "{state}: {r:#?}");
    }
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_500_to_520_of_a_large_table_are_read_by_window() {
    let page = Page::open("/large-table.html").await;
    let o = page.observe().await;
    let t = o.truncated.as_ref().expect("1000 rows do not fit the default budget");
    let table = t.expand.first().expect("the table is offered for expansion").to_string();

    let w = page
        .observe_with(ObserveParams {
            within: Some(table.as_str().into()),
            window: Some(ObserveWindow { offset: 500, limit: Some(20) }),
            ..Default::default()
        })
        .await;
    let shown = w.window.expect("a windowed read reports its window");
    assert_eq!((shown.offset, shown.count, shown.total, shown.truncated), (500, 20, Some(1000), true), "{shown:?}");
    assert!(
        w.untrusted_content.contains("Order | Customer | Total | Action"),
        "the header row is kept:\n{}",
        w.untrusted_content
    );
    for i in 501..=520 {
        assert!(w.untrusted_content.contains(&format!("Order {i} |")), "row {i} missing:\n{}", w.untrusted_content);
    }
    for i in [1, 500, 521, 1000] {
        assert!(
            !w.untrusted_content.contains(&format!("Order {i} |")),
            "row {i} is outside the window:\n{}",
            w.untrusted_content
        );
    }
    assert!(w.untrusted_content.contains("items 501–520 of 1000 shown"), "{}", w.untrusted_content);
    assert!(w.truncated.is_none(), "the window fits the budget");

    // A ref from the window acts on its row.
    let view = ref_of(&w, "Order 505 |");
    let r = page.act(click(&view).expect(Expectation::TextPresent { text: "Viewing: Order 505".into() })).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");

    // The end of the table: fewer rows than asked, nothing more.
    let w = page
        .observe_with(ObserveParams {
            within: Some(table.as_str().into()),
            window: Some(ObserveWindow { offset: 990, limit: Some(20) }),
            ..Default::default()
        })
        .await;
    let shown = w.window.unwrap();
    assert_eq!((shown.offset, shown.count, shown.truncated), (990, 10, false), "{shown:?}");
    assert!(w.untrusted_content.contains("Order 1000 |"), "{}", w.untrusted_content);

    let err = env()
        .provider
        .observe(
            &ctx(),
            page.tab,
            &ObserveParams { window: Some(ObserveWindow { offset: 5, limit: None }), ..Default::default() },
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("also pass `within`"), "{err}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_of_the_virtual_list_beyond_those_rendered_are_read_by_window() {
    let page = Page::open("/virtual-list.html").await;
    let o = page.observe().await;
    assert!(!o.untrusted_content.contains("Row 501"), "row 501 is not rendered at first");
    let list = ref_of(&o, "list \"Virtual rows\"");

    let mut next = 500;
    let mut seen = Vec::new();
    while next < 520 {
        let w = page
            .observe_with(ObserveParams {
                within: Some(list.as_str().into()),
                window: Some(ObserveWindow { offset: next, limit: Some(520 - next) }),
                ..Default::default()
            })
            .await;
        let shown = w.window.expect("a windowed read reports its window");
        assert_eq!(shown.offset, next, "the window starts where asked: {shown:?}\n{}", w.untrusted_content);
        assert!(shown.count > 0 && shown.count <= 520 - next, "{shown:?}");
        assert_eq!(shown.total, Some(10_000));
        assert!(shown.truncated, "{shown:?}");
        assert!(!w.untrusted_content.contains(&format!("Row {next}\n")), "the row before the window is left out");
        for i in next..next + shown.count {
            assert!(
                w.untrusted_content.contains(&format!("\"Open row {}\"", i + 1)),
                "row {} missing:\n{}",
                i + 1,
                w.untrusted_content
            );
            seen.push(i + 1);
        }
        next += shown.count;
    }
    assert_eq!(seen, (501..=520).collect::<Vec<_>>());

    let w = page
        .observe_with(ObserveParams {
            within: Some(list.as_str().into()),
            window: Some(ObserveWindow { offset: 504, limit: Some(3) }),
            ..Default::default()
        })
        .await;
    let open = ref_of(&w, "button \"Open row 505\"");
    let r = page.act(click(&open).expect(Expectation::TextPresent { text: "Selected: Row 505".into() })).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_list_cut_by_the_byte_budget_is_offered_and_read_by_window() {
    let page = Page::open("/long-list.html").await;
    let o = page.observe_with(ObserveParams { max_bytes: Some(2000), ..Default::default() }).await;
    let t = o.truncated.expect("1000 items do not fit 2000 bytes");
    assert_eq!(t.reason, "maxBytes");
    let list = t.expand.first().expect("the cut list is offered for expansion").to_string();
    let w = page
        .observe_with(ObserveParams {
            within: Some(list.as_str().into()),
            window: Some(ObserveWindow { offset: 500, limit: Some(20) }),
            ..Default::default()
        })
        .await;
    let shown = w.window.expect("a windowed read reports its window");
    assert_eq!((shown.offset, shown.count, shown.total, shown.truncated), (500, 20, Some(1000), true), "{shown:?}");
    let items: Vec<&str> = w.untrusted_content.lines().filter(|l| l.trim_start().starts_with("Item ")).collect();
    assert_eq!(items.first().map(|l| l.trim()), Some("Item 501"), "{}", w.untrusted_content);
    assert_eq!(items.last().map(|l| l.trim()), Some("Item 520"), "{}", w.untrusted_content);
    page.close().await;
}

/// The refs on the lines containing `needle`, in order (the same-origin frame's first, then the out-of-process one's).
fn refs_of(o: &browserd_protocol::Observation, needle: &str) -> Vec<String> {
    o.untrusted_content
        .lines()
        .filter(|l| l.contains(needle))
        .map(|l| browserd_protocol::line_ref(l).expect("a ref line").to_owned())
        .collect()
}

/// Drill "navigation replaces a frame": refs held into a frame that the page then removes (a same-origin frame and an
/// out-of-process one) or navigates (a new document in the same frame) fail closed with the right `staleReason` —
/// `frameRemoved` and `documentChanged` — before any input, while the page's own refs keep working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refs_into_a_removed_or_replaced_frame_read_frame_removed_or_document_changed() {
    let page = Page::open("/iframes.html").await;
    let o = page.observe().await;
    let inner = refs_of(&o, "button \"Inner button\"");
    assert_eq!(inner.len(), 2, "one button per frame: {}", o.untrusted_content);
    let outer = ref_of(&o, "button \"Outer button\"");
    let run = |expr: &str| {
        let params = browserd_protocol::tools::EvaluateParams {
            tab: browserd_protocol::TabId(page.tab.0),
            expression: expr.to_owned(),
            await_promise: true,
        };
        async move { env().provider.evaluate(&ctx(), page.tab, &params).await.unwrap() }
    };
    // The page replaces the same-origin frame's document and removes the out-of-process frame.
    run("new Promise(r => { const f = document.getElementById('same'); f.onload = () => r(true); \
         f.src = '/frame-inner.html?frame=replaced'; })")
    .await;
    run("document.getElementById('cross').remove(), true").await;
    // The removal reaches the provider as an event; a model's next call comes later than this.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for (r, reason) in [(&inner[0], StaleReason::DocumentChanged), (&inner[1], StaleReason::FrameRemoved)] {
        let res = page.act(click(r)).await;
        assert_eq!(res.code.as_deref(), Some(codes::STALE_TARGET), "{r}: {res:#?}");
        assert_eq!(res.stale_reason, Some(reason), "{r}: {res:#?}");
        assert_eq!(res.dispatch, Dispatch::NotDispatched, "{r}: refused before any input");
    }
    let r = page.act(click(&outer).expect(Expectation::TextPresent { text: "Outer clicks: 1".into() })).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "the page's own refs still work: {r:#?}");
    page.close().await;
}
