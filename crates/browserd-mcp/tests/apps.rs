//! The fixture apps (React, Vue, Svelte, jQuery, Radix) through the MCP server on real Chromium (issue 13 items 1, 3
//! and 5): every text of their server-side ground truth is read whole on one line, every operable element has a ref
//! in what `browser_observe` shows, clicking it with `browser_act` reaches the page's handler (the fixture site
//! records it), and a click that changes nothing says `effects.none`.

mod common;

use std::time::Duration;

use browserd_test_support::app_refs::app_ref;
use browserd_test_support::fixtures::{FixtureSite, app_truth};
use common::{TestBroker, text};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    common::codex_call(name, arguments, "codex-apps", "t1")
}

/// The ref of the last line showing a ground-truth operable (see [`app_ref`]).
fn ref_for(page: &str, role: &str, name: &str, taken: &[String]) -> Option<String> {
    app_ref(page, role, name, taken, true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_app_operable_is_addressed_and_clicked_through_mcp() {
    let site = FixtureSite::start().await.unwrap();
    let broker = TestBroker::chromium(|_| {}).await;
    let (client, _server) = broker.mcp(common::options("unused")).await;

    for page in FixtureSite::pages().iter().filter(|p| p.category == "app") {
        let truth = app_truth(page.path).expect("ground truth");
        text(&client.call_tool(call("browser_open", json!({"url": site.url(page.path)}))).await.unwrap());
        // Last first (a folder folds after its children are clicked); the confirmation popup last of all.
        let mut ops: Vec<_> = truth.operable.iter().rev().filter(|op| op.records.is_some()).collect();
        ops.sort_by_key(|op| match op.records.as_deref() {
            // The modals cover the whole page: last of all.
            Some(r) if r.starts_with("archive:") || r.starts_with("invoice:") => 2,
            Some(r) if r.starts_with("delete:") => 1,
            Some("cookie:accept") => 1, // accepting removes the cookie banner, its link with it
            _ => 0,
        });
        // Every text the page must show is read whole on one line of its own (a sentence with a link in it too).
        let first = text(&client.call_tool(call("browser_observe", json!({}))).await.unwrap());
        for want in &truth.texts {
            assert!(
                first.lines().any(|l| l.contains(want.as_str()) || l.replace("\\\"", "\"").contains(want.as_str())),
                "{}: {want:?} is not whole on one line of\n{first}",
                page.path
            );
        }
        if page.path == "/apps/chat.html" {
            // The virtualised message list opens at its newest rows and says the older ones are not rendered.
            assert!(first.contains("… more above, not rendered: scroll up"), "{first}");
        }
        let mut taken = Vec::new();
        if page.path == "/apps/mail.html" {
            // The folder tree (nested lists, no ARIA) says which rows are open, closed or leaves.
            let observed = text(&client.call_tool(call("browser_observe", json!({}))).await.unwrap());
            for shown in ["\"▾ Projects\" expanded", "\"▸ Archive\" collapsed", "\"Gemini\" leaf"] {
                assert!(observed.contains(shown), "{shown} in\n{observed}");
            }
        }
        for op in ops {
            let observed = text(&client.call_tool(call("browser_observe", json!({}))).await.unwrap());
            let r = ref_for(&observed, op.role, &op.name, &taken)
                .unwrap_or_else(|| panic!("{}: no ref for {} {:?} in\n{observed}", page.path, op.role, op.name));
            taken.push(r.clone());
            let acted = client.call_tool(call("browser_act", json!({"action": "click", "target": r}))).await.unwrap();
            let record = op.records.as_deref().unwrap_or_default();
            assert!(
                site.wait_for_record(record, Duration::from_secs(5)).await,
                "{}: browser_act click [{r}] on {} {:?} did not reach its handler: {acted:?}",
                page.path,
                op.role,
                op.name
            );
        }
        // The app's tab is done: a session keeps at most 3 tabs open.
        text(&client.call_tool(call("browser_cleanup", json!({}))).await.unwrap());
    }

    // A badge that shows a pointer but has no handler: the click says nothing happened.
    text(&client.call_tool(call("browser_open", json!({"url": site.url("/apps/delegated.html")}))).await.unwrap());
    let observed = text(&client.call_tool(call("browser_observe", json!({}))).await.unwrap());
    let beta = ref_for(&observed, "generic", "Beta", &[]).expect("the badge has a ref");
    let acted = text(&client.call_tool(call("browser_act", json!({"action": "click", "target": beta}))).await.unwrap());
    assert!(acted.contains("\"none\":true"), "the result says no effect: {acted}");

    client.cancel().await.unwrap();
    broker.broker.shutdown_token().cancel();
    let _ = broker.running.await;
    site.shutdown().await;
}
