//! The MCP server over the real broker: an in-process `Broker` on the fake browser, reached through its Unix
//! socket in a temporary runtime directory by [`BrokerBackend`], driven by rmcp's client over an in-memory pipe.

use std::sync::Arc;
use std::time::Duration;

use browserd_broker::Broker;
use browserd_broker::client::{Client, ConnectOptions};
use browserd_broker::config::BrokerConfig;
use browserd_core::clock::SystemClock;
use browserd_ipc::RuntimeDir;
use browserd_mcp::{BrokerBackend, HostIdentity, ServerOptions, ShutdownOutcome};
use browserd_protocol::hello::ComponentRole;
use browserd_protocol::lifecycle::HostKind;
use browserd_test_support::fake_provider::FakeProvider;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, RequestMetaObject};
use serde_json::{Value, json};

fn call(name: &str, arguments: Value, turn: &str) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(name.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_else(JsonObject::new));
    let mut meta = RequestMetaObject::new();
    meta.insert("x-codex-turn-metadata".into(), json!({"session_id": "codex-thread-1", "turn_id": turn}));
    params.meta = Some(meta);
    params
}

fn body(result: &CallToolResult) -> Value {
    serde_json::from_str(&result.content[0].as_text().expect("text first").text).expect("JSON text")
}

fn ok(result: &CallToolResult) -> Value {
    let value = body(result);
    assert_eq!(result.is_error, Some(false), "expected success: {value}");
    value
}

fn own_tabs(list: &Value) -> Vec<u64> {
    list["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|tab| tab["provenance"] != "user" && tab["provenance"] != "otherSession")
        .filter_map(|tab| tab["tab"].as_u64())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_turns_and_stdin_eof_run_through_the_broker() {
    let temp = tempfile::tempdir().unwrap();
    let dir = RuntimeDir::ensure(temp.path().join("rt")).unwrap();
    let broker =
        Broker::with_provider(Arc::new(FakeProvider::new()), Arc::new(SystemClock::new()), BrokerConfig::default());
    let running = tokio::spawn({
        let broker = broker.clone();
        let dir = dir.clone();
        async move { broker.run(&dir).await }
    });
    let connect = ConnectOptions {
        role: ComponentRole::Mcp,
        runtime_dir: Some(dir.path().to_path_buf()),
        spawn: false,
        timeout: Some(Duration::from_secs(30)),
        broker_exe: None,
    };
    // Wait until the broker answers (readiness, not a timing assertion).
    let mut ready = None;
    for _ in 0..500 {
        if let Ok(client) = Client::connect(&connect).await {
            ready = Some(client);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(ready.expect("the broker started"));

    let options =
        ServerOptions::new(HostIdentity { host: HostKind::Mcp, host_session_id: "unused".into(), from_host: false });
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let backend = Arc::new(BrokerBackend::new(connect, false));
    let server = tokio::spawn(browserd_mcp::serve(backend, options, server_io, std::future::pending::<()>()));
    let client = ().serve(client_io).await.unwrap();

    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 13, "the core tier");

    // Turn 1: open a scratch tab.
    let opened = ok(&client.call_tool(call("browser_open", json!({"url": "https://a.test/"}), "t1")).await.unwrap());
    let scratch = opened["tab"].as_u64().expect("a tab id");
    let listed = ok(&client.call_tool(call("browser_list", json!({}), "t1")).await.unwrap());
    assert_eq!(own_tabs(&listed), vec![scratch], "{listed}");
    // The broker narrows tools/list to what the session sees: still the core tier.
    assert_eq!(client.list_all_tools().await.unwrap().len(), 13);

    // Turn 2 begins: the new turn id ends turn 1 first, which closes the unmarked scratch tab.
    let listed = ok(&client.call_tool(call("browser_list", json!({}), "t2")).await.unwrap());
    assert!(own_tabs(&listed).is_empty(), "turn end closed the scratch tab: {listed}");

    // A deliverable tab survives the session's end; errors keep their stable code.
    let kept = ok(&client.call_tool(call("browser_open", json!({"url": "https://b.test/"}), "t2")).await.unwrap());
    let deliverable = kept["tab"].as_u64().unwrap();
    ok(&client.call_tool(call("browser_mark_deliverable", json!({"tab": deliverable}), "t2")).await.unwrap());
    let failed = client.call_tool(call("browser_close", json!({"tabs": [424242]}), "t2")).await.unwrap();
    assert_eq!(failed.is_error, Some(true));
    assert!(body(&failed)["error"]["code"].is_string(), "{}", body(&failed));

    // stdin EOF: the session is closed through the broker's disposal path.
    client.cancel().await.unwrap();
    let outcome = server.await.unwrap().unwrap();
    let ShutdownOutcome::Closed(result) = outcome else { panic!("the session was closed: {outcome:?}") };
    assert!(result.kept.iter().any(|tab| tab.0 == deliverable), "the deliverable tab is kept: {result:?}");
    assert!(!result.closed.iter().any(|tab| tab.0 == deliverable));

    broker.shutdown_token().cancel();
    running.await.unwrap().unwrap();
}
