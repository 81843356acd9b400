//! The MCP server over the real broker: an in-process `Broker` on the fake browser, reached through its Unix
//! socket in a temporary runtime directory by [`BrokerBackend`], driven by rmcp's client over an in-memory pipe.

mod common;

use browserd_mcp::ShutdownOutcome;
use common::TestBroker;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};

fn call(name: &str, arguments: Value, turn: &str) -> CallToolRequestParams {
    common::codex_call(name, arguments, "codex-thread-1", turn)
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
    let broker = TestBroker::fake().await;
    let (client, server) = broker.mcp(common::options("unused")).await;

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

    broker.stop().await;
}
