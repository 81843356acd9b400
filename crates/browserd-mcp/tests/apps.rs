//! The fixture apps (React, Vue, jQuery-style) through the MCP server on real Chromium (issue 13 items 3 and 5):
//! every operable element of their server-side ground truth has a ref in what `browser_observe` shows, clicking it
//! with `browser_act` reaches the page's handler (the fixture site records it), and a click that changes nothing
//! says `effects.none`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use browserd_broker::Broker;
use browserd_broker::client::{Client, ConnectOptions};
use browserd_broker::config::BrokerConfig;
use browserd_ipc::RuntimeDir;
use browserd_mcp::{BrokerBackend, HostIdentity, ServerOptions};
use browserd_protocol::hello::ComponentRole;
use browserd_protocol::lifecycle::HostKind;
use browserd_test_support::fixtures::{FixtureSite, app_truth};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, RequestMetaObject};
use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/lib/chromium/chromium";

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(name.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_else(JsonObject::new));
    let mut meta = RequestMetaObject::new();
    meta.insert("x-codex-turn-metadata".into(), json!({"session_id": "codex-apps", "turn_id": "t1"}));
    params.meta = Some(meta);
    params
}

fn text(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(false), "{result:?}");
    result.content[0].as_text().expect("text first").text.clone()
}

/// The ref of the last line (not in `taken`) showing an operable with `role` (any role for `generic`) named `name`
/// (for `generic`: whose name holds it; a name cut with `…` by its start).
fn ref_for(page: &str, role: &str, name: &str, taken: &[String]) -> Option<String> {
    for line in page.lines().rev() {
        let l = line.trim_start();
        let Some(rest) = l.strip_prefix('[') else { continue };
        let Some(end) = rest.find(']') else { continue };
        let r = &rest[..end];
        if taken.iter().any(|t| t == r) {
            continue;
        }
        let after = rest[end + 1..].trim_start();
        let (shown_role, tail) = after.split_once(' ').unwrap_or((after, ""));
        if role != "generic" && shown_role != role {
            continue;
        }
        let Some(quoted) = tail.strip_prefix('"') else { continue };
        let shown = quoted.find('"').map_or(quoted, |end| &quoted[..end]);
        let matches = if role == "generic" { shown.contains(name) } else { shown == name };
        if matches || shown.strip_suffix('…').is_some_and(|cut| name.starts_with(cut)) {
            return Some(r.to_owned());
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_app_operable_is_addressed_and_clicked_through_mcp() {
    assert!(Path::new(CHROMIUM).exists(), "this test needs Debian's chromium at {CHROMIUM}");
    let site = FixtureSite::start().await.unwrap();
    let temp = tempfile::tempdir().unwrap();
    let dir = RuntimeDir::ensure(temp.path().join("rt")).unwrap();
    let config = BrokerConfig {
        chromium_path: Some(CHROMIUM.into()),
        profile_dir: Some(temp.path().join("profile")),
        idle_exit_secs: 0,
        ..BrokerConfig::default()
    };
    let broker = Broker::from_config(config, Some(&temp.path().join("state")));
    let running = tokio::spawn({
        let broker = broker.clone();
        let dir = dir.clone();
        async move { broker.run(&dir).await }
    });
    let connect = ConnectOptions {
        role: ComponentRole::Mcp,
        runtime_dir: Some(dir.path().to_path_buf()),
        spawn: false,
        timeout: Some(Duration::from_secs(60)),
        broker_exe: None,
    };
    let mut ready = false;
    for _ in 0..500 {
        if Client::connect(&connect).await.is_ok() {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(ready, "the broker started");
    let options =
        ServerOptions::new(HostIdentity { host: HostKind::Mcp, host_session_id: "unused".into(), from_host: false });
    let (server_io, client_io) = tokio::io::duplex(1 << 22);
    let backend = Arc::new(BrokerBackend::new(connect, false));
    let _server = tokio::spawn(browserd_mcp::serve(backend, options, server_io, std::future::pending::<()>()));
    let client = ().serve(client_io).await.unwrap();

    for page in FixtureSite::pages().iter().filter(|p| p.category == "app") {
        let truth = app_truth(page.path).expect("ground truth");
        text(&client.call_tool(call("browser_open", json!({"url": site.url(page.path)}))).await.unwrap());
        // Last first (a folder folds after its children are clicked); the confirmation popup last of all.
        let mut ops: Vec<_> = truth.operable.iter().rev().filter(|op| op.records.is_some()).collect();
        ops.sort_by_key(|op| match op.records.as_deref() {
            Some(r) if r.starts_with("archive:") => 2, // the modal covers the whole page: last of all
            Some(r) if r.starts_with("delete:") => 1,
            _ => 0,
        });
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
    broker.shutdown_token().cancel();
    let _ = running.await;
    site.shutdown().await;
}
