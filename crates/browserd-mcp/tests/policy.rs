//! The site policy and approvals through the MCP server, as a host meets them: rmcp's client → `browserd_mcp::serve`
//! with the session policy of `browserd mcp --blocked-origins` (`BrokerBackend::with_policy`) → the broker → a real
//! managed Chromium on the two-origin fixture site. A blocked origin is an error result naming
//! `ORIGIN_NOT_AUTHORISED` and what to change; a "Delete account" click is an `APPROVAL_REQUIRED` error result naming
//! what to confirm and the approval id, and runs once the user approves it (the fixture server records the click).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use browserd_broker::Broker;
use browserd_broker::client::{Client, ConnectOptions};
use browserd_broker::config::{BrokerConfig, PolicyConfig};
use browserd_ipc::RuntimeDir;
use browserd_mcp::{BrokerBackend, HostIdentity, ServerOptions};
use browserd_protocol::hello::ComponentRole;
use browserd_protocol::lifecycle::HostKind;
use browserd_protocol::policy::{ApprovalGrantParams, SessionPolicy};
use browserd_test_support::fixtures::FixtureSite;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/lib/chromium/chromium";

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_else(JsonObject::new))
}

fn text(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

fn ok(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(false), "expected success: {}", text(result));
    serde_json::from_str(&result.content[0].as_text().unwrap().text).unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_hosts_get_origin_refusals_and_approval_requests_that_say_what_to_do() {
    assert!(Path::new(CHROMIUM).exists(), "this test needs Debian's chromium at {CHROMIUM}");
    let site = FixtureSite::start().await.unwrap();
    let temp = tempfile::tempdir().unwrap();
    let dir = RuntimeDir::ensure(temp.path().join("rt")).unwrap();
    let config = BrokerConfig {
        chromium_path: Some(CHROMIUM.into()),
        profile_dir: Some(temp.path().join("profile")),
        idle_exit_secs: 0,
        policy: PolicyConfig { require_approval: vec!["highRisk".into()], ..PolicyConfig::default() },
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
    let mut user = None;
    for _ in 0..500 {
        if let Ok(c) = Client::connect(&connect).await {
            user = Some(c);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let user = user.expect("the broker started");

    let options =
        ServerOptions::new(HostIdentity { host: HostKind::Mcp, host_session_id: "mcp-policy".into(), from_host: true });
    let (server_io, client_io) = tokio::io::duplex(1 << 22);
    // `browserd mcp --blocked-origins localhost`.
    let policy = SessionPolicy { allowed_origins: vec![], blocked_origins: vec!["localhost".into()] };
    let backend = Arc::new(BrokerBackend::new(connect, false).with_policy(Some(policy)));
    let _server = tokio::spawn(browserd_mcp::serve(backend, options, server_io, std::future::pending::<()>()));
    let client = ().serve(client_io).await.unwrap();

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
    let target = &line[line.find('[').unwrap() + 1..line.find(']').unwrap()];
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
    broker.shutdown_token().cancel();
    running.await.unwrap().unwrap();
    site.shutdown().await;
}
