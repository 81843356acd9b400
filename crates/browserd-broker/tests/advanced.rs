//! The advanced tier through the broker: refused by default (policyBlocked, a next step naming the config key, no
//! `tools.changed`), enabled by the `[advanced]` policy on a real managed Chromium (`tools.changed` with the advanced
//! names, evaluate / console / network / raw CDP, oversize values spilled to a file), denied raw methods refused before
//! anything is sent, and the CLI subcommands.

use std::time::Duration;

use browserd_broker::cli::{self, Command, Common};
use browserd_broker::client::{Client, ConnectOptions};
use browserd_broker::config::{AdvancedConfig, BrokerConfig};
use browserd_broker::lazy::BrowserTarget;
use browserd_broker::server::Broker;
use browserd_cdp::LaunchOptions;
use browserd_ipc::RuntimeDir;
use browserd_protocol::hello::ComponentRole;
use browserd_protocol::jsonrpc::Notification;
use browserd_protocol::lifecycle::{
    ContextResetParams, HostKind, SessionOpenParams, StatusParams, ToolActivation, ToolsActivateParams,
    UnsupportedReason,
};
use browserd_protocol::methods::{TOOLS_CHANGED, ToolsListParams};
use browserd_protocol::tools::ToolCallParams;
use browserd_protocol::{ErrorCode, SessionId};
use browserd_test_support::fixtures::FixtureSite;
use serde_json::{Value, json};
use tokio::sync::mpsc;

struct Harness {
    _tmp: tempfile::TempDir,
    client: Client,
    notes: mpsc::Receiver<Notification>,
    broker: std::sync::Arc<Broker>,
    options: ConnectOptions,
}

async fn start(config: BrokerConfig) -> Harness {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rt");
    let rdir = RuntimeDir::ensure(&dir).unwrap();
    let target = BrowserTarget::Managed(Box::new(LaunchOptions {
        user_data_dir: Some(tmp.path().join("profile")),
        env: vec![("XDG_CONFIG_HOME".into(), tmp.path().join("xdg").display().to_string())],
        window_size: Some((1000, 800)),
        ..LaunchOptions::default()
    }));
    let broker = Broker::with_target(target, BrokerConfig { idle_exit_secs: 0, ..config });
    broker.set_journal_path(tmp.path().join("journal.sqlite3"));
    tokio::spawn({
        let broker = broker.clone();
        async move { broker.run(&rdir).await }
    });
    let options = ConnectOptions {
        role: ComponentRole::Cli,
        runtime_dir: Some(dir.clone()),
        spawn: false,
        timeout: Some(Duration::from_secs(60)),
        broker_exe: None,
    };
    for _ in 0..500 {
        if let Ok(client) = Client::connect(&options).await {
            let notes = client.take_notifications().unwrap();
            return Harness { _tmp: tmp, client, notes, broker, options };
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the broker does not listen");
}

impl Harness {
    async fn session(&self, id: &str) -> SessionId {
        let open = SessionOpenParams {
            host: HostKind::Codex,
            host_session_id: id.into(),
            label: None,
            policy: None,
            browser: None,
        };
        self.client.call(&open).await.unwrap().session
    }

    /// Another connection (its sessions' notifications do not reach `client`).
    async fn other_client(&self) -> Client {
        Client::connect(&self.options).await.unwrap()
    }

    async fn next_note(&mut self) -> Value {
        let note = tokio::time::timeout(Duration::from_secs(30), self.notes.recv()).await.unwrap().unwrap();
        assert_eq!(note.method, TOOLS_CHANGED);
        note.params.unwrap()
    }

    /// Stops the broker; the returned directory (journal, profile) lives as long as the caller keeps it.
    async fn shutdown(self) -> tempfile::TempDir {
        self.client.shutdown_broker().await.unwrap();
        let _ = tokio::time::timeout(Duration::from_secs(30), self.broker.shutdown_token().cancelled()).await;
        self._tmp
    }
}

fn names(set: &Value) -> Vec<String> {
    set["names"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_advanced_tier_is_refused_by_default_without_tools_changed() {
    let mut h = start(BrokerConfig::default()).await;
    let s = h.session("default-policy").await;
    h.client.call(&ToolsActivateParams { session: s.clone(), advanced: false }).await.unwrap();
    let core = h.next_note().await;
    assert_eq!((core["tools"].as_str(), core["advanced"].as_bool()), (Some("activeSticky"), Some(false)));

    let set = h.client.call(&ToolsActivateParams { session: s.clone(), advanced: true }).await.unwrap();
    assert_eq!(set.tools, ToolActivation::ActiveSticky);
    assert!(!set.advanced);
    assert_eq!(set.advanced_refused, Some(UnsupportedReason::PolicyBlocked));
    let next = set.advanced_next_step.expect("a next step");
    assert!(next.contains("[advanced]") && next.contains("enabled = true"), "{next}");
    assert!(!set.names.iter().any(|n| n == "browser_evaluate"), "{:?}", set.names);
    let listed = h.client.call(&ToolsListParams { session: s.clone() }).await.unwrap();
    assert!(listed.tools.iter().all(|t| !t.name.starts_with("browser_evaluate")));

    let err = h.client.tool(&s, "browser_evaluate", json!({"tab": 1, "expression": "1"})).await.unwrap_err();
    let err = err.into_error_data();
    assert_eq!(err.code, ErrorCode::CapabilityNotActivated, "{err:?}");
    assert!(err.next_step.contains("[advanced]"), "{err:?}");

    // The refusal sent no notification: the next one is the reset's.
    h.client.call(&ContextResetParams { session: s.clone(), disconnect_client: false }).await.unwrap();
    let reset = h.next_note().await;
    assert_eq!(reset["tools"], "inactive", "{reset}");

    // The CLI says the same, with the config key.
    let common = Common { session: Some("cli-default".into()), json: false };
    let cmd = Command::Eval { expression: "1".into(), tab: 1, no_await: false, common: common.clone() };
    let err = cli::execute(&h.client, cmd, &common).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::PolicyBlocked, "{err:?}");
    assert!(err.next_step.contains("BROWSERD_ADVANCED=1"), "{err:?}");
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enabled_policy_brings_the_advanced_tools_on_a_real_chromium() {
    let site = FixtureSite::start().await.unwrap();
    let advanced = AdvancedConfig { enabled: true, raw_cdp: true, ..AdvancedConfig::default() };
    let mut h = start(BrokerConfig { advanced, ..BrokerConfig::default() }).await;
    let s = h.session("enabled-policy").await;
    h.client.call(&ToolsActivateParams { session: s.clone(), advanced: false }).await.unwrap();
    let core = h.next_note().await;
    assert!(!names(&core).contains(&"browser_evaluate".to_owned()));

    let set = h.client.call(&ToolsActivateParams { session: s.clone(), advanced: true }).await.unwrap();
    assert!(set.advanced && set.advanced_refused.is_none(), "{set:?}");
    let changed = h.next_note().await;
    assert_eq!(changed["advanced"], true, "{changed}");
    for tool in ["browser_evaluate", "browser_console", "browser_network", "browser_cdp", "browser_open"] {
        assert!(names(&changed).iter().any(|n| n == tool), "{tool} in {changed}");
    }
    let listed = h.client.call(&ToolsListParams { session: s.clone() }).await.unwrap();
    assert!(listed.tools.iter().any(|t| t.name == "browser_cdp"));
    let status = h.client.call(&StatusParams { session: Some(s.clone()) }).await.unwrap();
    assert!(status.sessions[0].advanced, "{:?}", status.sessions);

    let opened = h.client.tool(&s, "browser_open", json!({"url": site.url("/form.html")})).await.unwrap();
    let tab = opened["tab"].as_u64().unwrap();
    let console = h.client.tool(&s, "browser_console", json!({"tab": tab})).await.unwrap();
    let since = console["cursor"].as_u64().unwrap();
    h.client.tool(&s, "browser_network", json!({"tab": tab})).await.unwrap();

    let r = h
        .client
        .tool(&s, "browser_evaluate", json!({"tab": tab, "expression": "console.error('broker saw this'); 6 * 7"}))
        .await
        .unwrap();
    assert_eq!(r["value"], 42, "{r}");
    let r = h
        .client
        .tool(&s, "browser_evaluate", json!({"tab": tab, "expression": "Promise.reject(new Error('nope'))"}))
        .await
        .unwrap();
    assert!(r["exception"].as_str().unwrap().contains("nope"), "{r}");

    // An oversize value is spilled to a private file, with a summary.
    let r =
        h.client.tool(&s, "browser_evaluate", json!({"tab": tab, "expression": "'y'.repeat(100000)"})).await.unwrap();
    assert_eq!(r["value"], Value::Null, "{}", &r.to_string()[..200.min(r.to_string().len())]);
    let path = r["spill"]["path"].as_str().expect("a spill path");
    assert!(r["spill"]["summary"].as_str().unwrap().contains("100000 characters"), "{r}");
    let spilled: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    assert_eq!(spilled.as_str().map(str::len), Some(100_000));
    std::fs::remove_file(path).unwrap();

    // Evaluate is a write: a repeated call id is answered from the journal (DUPLICATE_REQUEST with the first outcome)
    // and the script does not run again; the same id with another expression is refused.
    let counted = |expression: &str| ToolCallParams {
        session: s.clone(),
        name: "browser_evaluate".into(),
        arguments: json!({"tab": tab, "expression": expression}),
        call_id: Some("eval-once".into()),
    };
    let bump = "window.__runs = (window.__runs || 0) + 1";
    let first: Value = h.client.call_as("tool.call", &counted(bump)).await.unwrap();
    assert_eq!(first["value"], 1, "{first}");
    let again = h.client.call_as::<Value, _>("tool.call", &counted(bump)).await.unwrap_err().into_error_data();
    assert_eq!(again.code, ErrorCode::DuplicateRequest, "{again:?}");
    assert_eq!(again.details.as_deref().unwrap()["outcome"], "succeeded", "{again:?}");
    let runs = h.client.tool(&s, "browser_evaluate", json!({"tab": tab, "expression": "window.__runs"})).await.unwrap();
    assert_eq!(runs["value"], 1, "the repeated call was answered from the journal, not run again");
    let other = h.client.call_as::<Value, _>("tool.call", &counted("1")).await.unwrap_err().into_error_data();
    assert_eq!(other.code, ErrorCode::PayloadMismatch, "{other:?}");

    let console = h.client.tool(&s, "browser_console", json!({"tab": tab, "since": since})).await.unwrap();
    let entries = console["entries"].as_array().unwrap();
    assert!(entries.iter().any(|e| e["level"] == "error" && e["text"] == "broker saw this"), "{console}");

    h.client
        .tool(
            &s,
            "browser_evaluate",
            json!({"tab": tab, "expression": "fetch('/index.html?q=secret').then(r => r.text()).then(t => t.length)"}),
        )
        .await
        .unwrap();
    let mut found = None;
    for _ in 0..50 {
        let net =
            h.client.tool(&s, "browser_network", json!({"tab": tab, "urlContains": "/index.html"})).await.unwrap();
        if let Some(e) = net["requests"].as_array().unwrap().iter().find(|e| e["status"] == 200) {
            found = Some(e.clone());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let entry = found.expect("the fetch is listed");
    assert_eq!(entry["kind"], "fetch");
    assert!(!entry["url"].as_str().unwrap().contains("secret"), "{entry}");

    let r = h
        .client
        .tool(&s, "browser_cdp", json!({"tab": tab, "method": "Runtime.evaluate", "params": {"expression": "document.title", "returnByValue": true}}))
        .await
        .unwrap();
    assert!(r["result"]["result"]["value"].is_string(), "{r}");
    let err = h
        .client
        .tool(&s, "browser_cdp", json!({"tab": tab, "method": "Network.getAllCookies"}))
        .await
        .unwrap_err()
        .into_error_data();
    assert_eq!(err.code, ErrorCode::PolicyDenied, "{err:?}");
    assert!(err.message.contains("denied_cdp_methods"), "{err:?}");

    // The CLI subcommands.
    let cli_client = h.other_client().await;
    let common = Common { session: Some("cli-advanced".into()), json: false };
    let cmd = Command::Open { url: site.url("/form.html"), background: true, observe: false, common: common.clone() };
    let out = cli::execute(&cli_client, cmd, &common).await.unwrap();
    let cli_tab: u64 = out.text.split_whitespace().nth(1).unwrap().parse().unwrap();
    let cmd =
        Command::Eval { expression: "[1, 2].length".into(), tab: cli_tab, no_await: false, common: common.clone() };
    assert_eq!(cli::execute(&cli_client, cmd, &common).await.unwrap().text, "2");
    let cmd = Command::Cdp { method: "Browser.close".into(), params: None, tab: cli_tab, common: common.clone() };
    assert_eq!(cli::execute(&cli_client, cmd, &common).await.unwrap_err().code, ErrorCode::PolicyDenied);
    let cmd = Command::Console { tab: cli_tab, since: None, level: None, limit: None, common: common.clone() };
    let out = cli::execute(&cli_client, cmd, &common).await.unwrap().text;
    assert!(out.lines().last().unwrap().starts_with("cursor "), "{out}");

    // A reset hides the tier with the tools.
    h.client.call(&ContextResetParams { session: s.clone(), disconnect_client: false }).await.unwrap();
    let reset = h.next_note().await;
    assert_eq!((reset["tools"].as_str(), reset["advanced"].as_bool()), (Some("inactive"), Some(false)), "{reset}");
    let kept = h.shutdown().await;
    let journal = kept.path().join("journal.sqlite3");

    // Every advanced call is audited as metadata: its kind, outcome and code, never the script, value or URL.
    // The broker's task lets go of its journal just after the shutdown token fires.
    let mut opened = None;
    for _ in 0..300 {
        match browserd_journal::Journal::open(&journal, Default::default()) {
            Ok(j) => {
                opened = Some(j);
                break;
            }
            Err(browserd_journal::JournalError::Busy { .. }) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(e) => panic!("cannot open the journal: {e}"),
        }
    }
    let j = opened.expect("the stopped broker releases its journal");
    let recent = j.audit_recent(500).unwrap();
    let actions: Vec<&str> = recent.iter().map(|e| e.record.action.as_str()).collect();
    for wanted in ["evaluate", "console.read", "network.read", "cdp"] {
        assert!(actions.contains(&wanted), "{wanted} missing from {actions:?}");
    }
    let denied = recent.iter().find(|e| {
        e.record.action.as_str() == "cdp" && e.record.code.as_ref().is_some_and(|c| c.as_str() == "POLICY_DENIED")
    });
    assert!(denied.is_some(), "the denied raw command is audited with its code");
    let evaluated = recent.iter().find(|e| e.record.action.as_str() == "evaluate").unwrap();
    assert!(evaluated.record.outcome.is_some(), "an evaluation records its outcome like an action");
}
