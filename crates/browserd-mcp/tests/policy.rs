//! The site policy and approvals through the MCP server, as a host meets them: rmcp's client → `browserd_mcp::serve`
//! with the session policy of `browserd mcp --blocked-origins` (`BrokerBackend::with_policy`) → the broker → a real
//! managed Chromium on the two-origin fixture site. A blocked origin is an error result naming
//! `ORIGIN_NOT_AUTHORISED` and what to change; a "Delete account" click is an `APPROVAL_REQUIRED` error result naming
//! what to confirm and the approval id, and runs once the user approves it (the fixture server records the click).

mod common;

use std::sync::Arc;
use std::time::Duration;

use browserd_broker::config::PolicyConfig;
use browserd_mcp::BrokerBackend;
use browserd_protocol::policy::{ApprovalGrantParams, SessionPolicy};
use browserd_test_support::fixtures::FixtureSite;
use common::{TestBroker, call};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

fn text(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

fn ok(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(false), "expected success: {}", text(result));
    serde_json::from_str(&result.content[0].as_text().unwrap().text).unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_hosts_get_origin_refusals_and_approval_requests_that_say_what_to_do() {
    let site = FixtureSite::start().await.unwrap();
    let broker = TestBroker::chromium(|config| {
        config.policy = PolicyConfig { require_approval: vec!["highRisk".into()], ..PolicyConfig::default() };
    })
    .await;
    let user = broker.client().await;

    let mut options = common::options("mcp-policy");
    options.identity.from_host = true;
    // `browserd mcp --blocked-origins localhost`.
    let policy = SessionPolicy { allowed_origins: vec![], blocked_origins: vec!["localhost".into()] };
    let backend = Arc::new(BrokerBackend::new(broker.connect.clone(), false).with_policy(Some(policy)));
    let (client, _server) = common::mcp(backend, options).await;

    // The blocked origin: an error result that names the code, the origin and the flag.
    let refused = client
        .call_tool(call("browser_open", json!({"url": site.cross_origin_url("/policy-landing.html")})))
        .await
        .unwrap();
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
    let said = text(&refused);
    assert!(said.contains("ORIGIN_NOT_AUTHORISED") && said.contains("--blocked-origins"), "{said}");
    assert!(!said.contains("Landing secret"), "{said}");

    // browser_status shows the policy in force for this session.
    let status = ok(&client.call_tool(call("browser_status", json!({}))).await.unwrap());
    assert_eq!(status["policy"]["session"]["blockedOrigins"], json!(["localhost"]), "{status}");
    assert_eq!(status["policy"]["requireApproval"], json!(["highRisk"]), "{status}");

    // A high-risk click: an approval request the host's UI can show, nothing sent.
    ok(&client.call_tool(call("browser_open", json!({"url": site.url("/delete-account.html")}))).await.unwrap());
    let observed = client.call_tool(call("browser_observe", json!({}))).await.unwrap();
    let page = text(&observed);
    let line = page.lines().find(|l| l.contains("button \"Delete account\"")).unwrap_or_else(|| panic!("{page}"));
    let target = browserd_protocol::line_ref(line).expect("a ref line");
    let asked = client.call_tool(call("browser_act", json!({"action": "click", "target": target}))).await.unwrap();
    assert_eq!(asked.is_error, Some(true), "{}", text(&asked));
    let said = text(&asked);
    assert!(said.contains("APPROVAL_REQUIRED") && said.contains("Delete account"), "{said}");
    let at = said.find("browserd approve ").expect("the approval id is named") + "browserd approve ".len();
    let id: String = said[at..].chars().take_while(|c| c.is_alphanumeric() || *c == '-').collect();
    assert!(!site.records().iter().any(|r| r == "account:delete"), "nothing was sent");

    // The user approves (the host's UI, or `browserd approve`); the same call runs once.
    user.call(&ApprovalGrantParams { approval: id }).await.unwrap();
    let done = client.call_tool(call("browser_act", json!({"action": "click", "target": target}))).await.unwrap();
    assert_eq!(done.is_error, Some(false), "{}", text(&done));
    assert!(site.wait_for_record("account:delete", Duration::from_secs(5)).await, "{:?}", site.records());

    client.cancel().await.unwrap();
    broker.stop().await;
    site.shutdown().await;
}
