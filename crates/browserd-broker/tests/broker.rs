//! The broker over a real Unix socket in a temporary runtime directory, with the fake provider: hello and version
//! negotiation, sessions and re-attachment, turn end through RPC, ownership refusals naming the holder,
//! back-pressure codes, disconnect grace and disposal, the stop gate, graceful shutdown, notifications, and the host
//! hooks against a live broker.

use std::sync::Arc;
use std::time::Duration;

use browserd_broker::cli::{self, Command, Common};
use browserd_broker::client::{Client, ConnectOptions};
use browserd_broker::config::BrokerConfig;
use browserd_broker::hooks::{self, HookEvent, HookOptions};
use browserd_broker::server::{Broker, BrokerError, RunSummary, SelectTabParams};
use browserd_core::clock::SystemClock;
use browserd_core::provider::TabHandle;
use browserd_ipc::RuntimeDir;
use browserd_protocol::hello::ComponentRole;
use browserd_protocol::lifecycle::{
    AutoTurnCleanup, HostKind, SessionCloseParams, SessionOpenParams, StatusParams, ToolsActivateParams,
    TurnBeginParams, TurnEndParams, TurnEndReason,
};
use browserd_protocol::methods::TOOLS_CHANGED;
use browserd_protocol::tools::ToolCallParams;
use browserd_protocol::{ErrorCode, SessionId, TabId};
use browserd_test_support::fake_provider::{FakeProvider, Op};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

struct Harness {
    _tmp: tempfile::TempDir,
    dir: std::path::PathBuf,
    broker: Arc<Broker>,
    fake: Arc<FakeProvider>,
    task: JoinHandle<Result<RunSummary, BrokerError>>,
}

fn config() -> BrokerConfig {
    BrokerConfig { idle_exit_secs: 0, disconnect_grace_secs: 30, ..BrokerConfig::default() }
}

async fn start(config: BrokerConfig) -> Harness {
    start_with(config, None).await
}

async fn start_with(config: BrokerConfig, journal: Option<std::path::PathBuf>) -> Harness {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rt");
    let rdir = RuntimeDir::ensure(&dir).unwrap();
    let fake = Arc::new(FakeProvider::new());
    let broker = Broker::with_provider(fake.clone(), Arc::new(SystemClock::new()), config);
    if let Some(path) = journal {
        broker.set_journal_path(path);
    }
    let task = tokio::spawn({
        let broker = broker.clone();
        async move { broker.run(&rdir).await }
    });
    let h = Harness { _tmp: tmp, dir, broker, fake, task };
    // Wait until the socket answers.
    for _ in 0..500 {
        if browserd_ipc::connect(&RuntimeDir::ensure(&h.dir).unwrap()).await.is_ok() {
            return h;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the broker did not start listening");
}

impl Harness {
    async fn client(&self) -> Client {
        let options = ConnectOptions {
            role: ComponentRole::Mcp,
            runtime_dir: Some(self.dir.clone()),
            spawn: false,
            timeout: Some(Duration::from_secs(20)),
            broker_exe: None,
        };
        Client::connect(&options).await.unwrap()
    }

    /// Opens a session for `host`/`id` with tools active.
    async fn session(&self, client: &Client, host: HostKind, id: &str) -> SessionId {
        let opened = client
            .call(&SessionOpenParams { host, host_session_id: id.into(), label: None, policy: None, browser: None })
            .await
            .unwrap();
        client.call(&ToolsActivateParams { session: opened.session.clone(), advanced: false }).await.unwrap();
        opened.session
    }
}

async fn open_tab(client: &Client, session: &SessionId) -> TabId {
    let r = client.tool(session, "browser_open", json!({"url": "https://a.test/"})).await.unwrap();
    TabId(r["tab"].as_u64().unwrap())
}

fn handle(tab: TabId) -> TabHandle {
    TabHandle(tab.0)
}

async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..1000 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting until {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_comes_first_and_versions_are_negotiated() {
    let h = start(config()).await;
    let mut conn = browserd_ipc::connect(&RuntimeDir::ensure(&h.dir).unwrap()).await.unwrap();
    let answer = conn.call(&json!({"jsonrpc":"2.0","id":1,"method":"status","params":{}})).await.unwrap().unwrap();
    assert_eq!(answer["error"]["data"]["code"], "HELLO_REQUIRED", "{answer}");

    let too_new = json!({"jsonrpc":"2.0","id":2,"method":"hello","params":{"role":"cli","protocol":{"min":5,"max":6}}});
    let answer = conn.call(&too_new).await.unwrap().unwrap();
    assert_eq!(answer["error"]["data"]["code"], "UNSUPPORTED_BY_VERSION", "{answer}");
    assert!(answer["error"]["data"]["nextStep"].as_str().unwrap().contains("Upgrade broker"), "{answer}");

    let ok = json!({"jsonrpc":"2.0","id":3,"method":"hello","params":{"role":"cli","protocol":{"min":1,"max":9}}});
    let answer = conn.call(&ok).await.unwrap().unwrap();
    assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
    assert_eq!(answer["result"]["role"], "broker");
    let answer = conn.call(&json!({"jsonrpc":"2.0","id":4,"method":"status","params":{}})).await.unwrap().unwrap();
    assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");

    let unknown = conn.call(&json!({"jsonrpc":"2.0","id":5,"method":"session.teleport"})).await.unwrap().unwrap();
    assert_eq!(unknown["error"]["data"]["code"], "METHOD_NOT_FOUND", "{unknown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_broker_on_the_same_directory_is_refused() {
    let h = start(config()).await;
    let second = Broker::with_provider(Arc::new(FakeProvider::new()), Arc::new(SystemClock::new()), config());
    let err = second.run(&RuntimeDir::ensure(&h.dir).unwrap()).await.unwrap_err();
    assert!(matches!(err, BrokerError::AlreadyRunning(_)), "{err}");
    assert!(err.to_string().contains("already running"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopening_a_host_session_reattaches_it() {
    let h = start(config()).await;
    let a = h.client().await;
    let first = a
        .call(&SessionOpenParams {
            host: HostKind::Codex,
            host_session_id: "thread-1".into(),
            label: None,
            policy: None,
            browser: None,
        })
        .await
        .unwrap();
    assert!(!first.reattached);
    a.call(&ToolsActivateParams { session: first.session.clone(), advanced: false }).await.unwrap();
    let tab = open_tab(&a, &first.session).await;
    drop(a);

    let b = h.client().await;
    let again = b
        .call(&SessionOpenParams {
            host: HostKind::Codex,
            host_session_id: "thread-1".into(),
            label: None,
            policy: None,
            browser: None,
        })
        .await
        .unwrap();
    assert!(again.reattached);
    assert_eq!(again.session, first.session);
    assert!(again.tools.is_active(), "a re-attached session keeps its tool activation");
    let listed = b.tool(&again.session, "browser_list", json!({})).await.unwrap();
    assert_eq!(listed["tabs"][0]["tab"], tab.0);
    assert_eq!(listed["tabs"][0]["provenance"], "agentCreated");

    // The same id under another host is another session.
    let other = b
        .call(&SessionOpenParams {
            host: HostKind::ClaudeCode,
            host_session_id: "thread-1".into(),
            label: None,
            policy: None,
            browser: None,
        })
        .await
        .unwrap();
    assert!(!other.reattached);
    assert_ne!(other.session, first.session);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turn_end_closes_scratch_tabs_and_keeps_marked_ones() {
    let h = start(config()).await;
    let c = h.client().await;
    let s = h.session(&c, HostKind::Pi, "pi-1").await;
    let scratch = open_tab(&c, &s).await;
    let kept = open_tab(&c, &s).await;
    let mark = c.tool(&s, "browser_mark_deliverable", json!({"tab": kept.0})).await.unwrap();
    assert_eq!(mark["mark"], "deliverable");

    let end = c
        .call(&TurnEndParams { session: s.clone(), reason: TurnEndReason::AgentEnd, host_turn_id: Some("t1".into()) })
        .await
        .unwrap();
    assert!(end.ok, "{end:?}");
    assert_eq!(end.auto_turn_cleanup, AutoTurnCleanup::Enabled);
    assert_eq!(end.closed, vec![scratch]);
    assert_eq!(end.kept, vec![kept]);
    assert!(!h.fake.is_open(handle(scratch)));
    assert!(h.fake.is_open(handle(kept)));

    // The same host turn ended twice is a no-op with the same answer.
    let again = c
        .call(&TurnEndParams { session: s.clone(), reason: TurnEndReason::HostStop, host_turn_id: Some("t1".into()) })
        .await
        .unwrap();
    assert_eq!(again, end);

    // The mark lasted one turn: the next turn end closes the tab.
    let begun = c.call(&TurnBeginParams { session: s.clone(), host_turn_id: Some("t2".into()) }).await.unwrap();
    assert_eq!(begun.turn, 2);
    let next = c
        .call(&TurnEndParams { session: s.clone(), reason: TurnEndReason::AgentEnd, host_turn_id: Some("t2".into()) })
        .await
        .unwrap();
    assert_eq!(next.closed, vec![kept], "{next:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_sessions_tab_is_refused_naming_the_holder() {
    let h = start(config()).await;
    let a = h.client().await;
    let b = h.client().await;
    let sa = h.session(&a, HostKind::Codex, "a").await;
    let sb = h.session(&b, HostKind::ClaudeCode, "b").await;
    let tab = open_tab(&a, &sa).await;

    let err = b.tool(&sb, "browser_claim", json!({"tab": tab.0})).await.unwrap_err();
    let data = err.error_data().unwrap();
    assert_eq!(data.code, ErrorCode::OtherSessionTab, "{data:?}");
    assert_eq!(data.holder_session.as_ref(), Some(&sa));

    let err = b.select_tab(&SelectTabParams { session: sb.clone(), tab }).await.unwrap_err();
    assert_eq!(err.error_data().unwrap().code, ErrorCode::OtherSessionTab);
    assert_eq!(err.error_data().unwrap().holder_session.as_ref(), Some(&sa));

    let err = b.tool(&sb, "browser_close", json!({"tabs": [tab.0]})).await.unwrap_err();
    assert_eq!(err.error_data().unwrap().code, ErrorCode::OtherSessionTab);
    assert_eq!(err.error_data().unwrap().holder_session.as_ref(), Some(&sa));
    assert!(h.fake.is_open(handle(tab)), "another session's tab is never closed");
    assert!(h.fake.calls_to(Op::Act, handle(tab)).iter().all(|c| c.session.0 == sa.0));

    // The holder still acts on its own tab.
    let acted = a.tool(&sa, "browser_act", json!({"action": "click", "target": "e1"})).await.unwrap();
    assert!(acted.get("traceId").is_some(), "{acted}");
    assert!(h.fake.violations().is_empty(), "{:?}", h.fake.violations());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_answer_with_typed_back_pressure_errors() {
    let h =
        start(BrokerConfig { max_concurrent_page_ops: 1, concurrency_wait_ms: 0, max_queued_requests: 1, ..config() })
            .await;
    let a = h.client().await;
    let b = h.client().await;
    let sa = h.session(&a, HostKind::Pi, "a").await;
    let sb = h.session(&b, HostKind::Pi, "b").await;
    let ta = open_tab(&a, &sa).await;
    let _tb = open_tab(&b, &sb).await;

    // Tabs per task.
    open_tab(&a, &sa).await;
    open_tab(&a, &sa).await;
    let err = a.tool(&sa, "browser_open", json!({"url": "https://d.test/"})).await.unwrap_err();
    assert_eq!(err.error_data().unwrap().code, ErrorCode::TooManyTabs, "{err}");
    a.select_tab(&SelectTabParams { session: sa.clone(), tab: ta }).await.unwrap();

    // A slow observation holds the only page-operation slot.
    h.fake.set_delay_for(Op::Observe, Duration::from_secs(3));
    let slow = tokio::spawn({
        let a = a.clone();
        let sa = sa.clone();
        async move { a.tool(&sa, "browser_observe", json!({})).await }
    });
    let status_client = h.client().await;
    eventually("the slow observation runs", async || {
        status_client.call(&StatusParams::default()).await.unwrap().limits.concurrent_page_ops.used == 1
    })
    .await;

    let err = b.tool(&sb, "browser_observe", json!({})).await.unwrap_err();
    let data = err.error_data().unwrap();
    assert_eq!(data.code, ErrorCode::TooManyConcurrentOps, "{data:?}");
    assert!(data.retry_after_ms.is_some());

    // The same tab: one waits in the queue, the next finds the queue full.
    let queued = tokio::spawn({
        let a = a.clone();
        let sa = sa.clone();
        async move { a.tool(&sa, "browser_observe", json!({})).await }
    });
    eventually("a request is queued", async || {
        status_client.call(&StatusParams::default()).await.unwrap().limits.queued_requests.used == 1
    })
    .await;
    let err = a.tool(&sa, "browser_observe", json!({})).await.unwrap_err();
    let data = err.error_data().unwrap();
    assert_eq!(data.code, ErrorCode::QueueFull, "{data:?}");
    assert!(data.retry_after_ms.is_some());

    slow.await.unwrap().unwrap();
    h.fake.set_delay_for(Op::Observe, Duration::ZERO);
    queued.await.unwrap().unwrap();
    let status = status_client.call(&StatusParams::default()).await.unwrap();
    assert_eq!(status.limits.queued_requests.used, 0);
    assert_eq!(status.limits.concurrent_page_ops.used, 0);
    assert_eq!(status.limits.tabs_per_task.used, 3);
    assert_eq!(status.limits.tabs_per_task.max, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stop_gate_cancels_running_and_queued_work() {
    let h = start(config()).await;
    let a = h.client().await;
    let sa = h.session(&a, HostKind::Pi, "a").await;
    open_tab(&a, &sa).await;
    let seen = a.tool(&sa, "browser_observe", json!({})).await.unwrap();
    // Whichever of the two requests gets the tab first runs for a long time; the other waits behind it.
    h.fake.set_delay(Duration::from_secs(5));
    let running = tokio::spawn({
        let a = a.clone();
        let sa = sa.clone();
        async move { a.tool(&sa, "browser_act", json!({"action": "click", "target": "e1"})).await }
    });
    let queued = tokio::spawn({
        let a = a.clone();
        let sa = sa.clone();
        async move { a.tool(&sa, "browser_observe", json!({})).await }
    });
    let c = h.client().await;
    eventually("one runs and one waits", async || {
        let l = c.call(&StatusParams::default()).await.unwrap().limits;
        l.concurrent_page_ops.used == 1 && l.queued_requests.used == 1
    })
    .await;
    let stop = c.stop_gate().await.unwrap();
    assert_eq!(stop.code, ErrorCode::UserStopped);
    assert_eq!((stop.queued_cancelled, stop.running_cancelled), (1, 1));
    for task in [running, queued] {
        let err = task.await.unwrap().unwrap_err();
        let data = err.error_data().unwrap();
        assert_eq!(data.code, ErrorCode::UserStopped, "{err}");
        // USER_STOPPED carries the last evidence: the tab that was being worked on and its latest observation.
        let evidence = &data.details.as_deref().expect("details")["stop"]["lastEvidence"]["tabs"][0];
        assert_eq!(evidence["lastObservation"]["url"], seen["url"], "{data:?}");
        assert!(evidence["tab"].is_u64(), "{data:?}");
    }
    h.fake.set_delay(Duration::ZERO);
    // Work after the stop runs again (with a new lease).
    a.tool(&sa, "browser_observe", json!({})).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disconnected_client_s_session_is_disposed_after_the_grace_period() {
    let h = start(BrokerConfig { disconnect_grace_secs: 1, ..config() }).await;
    let kept_client = h.client().await;
    let gone = h.client().await;
    let s_gone = h.session(&gone, HostKind::Mcp, "will-crash").await;
    let t_gone = open_tab(&gone, &s_gone).await;
    let back = h.client().await;
    let s_back = h.session(&back, HostKind::Mcp, "comes-back").await;
    let t_back = open_tab(&back, &s_back).await;
    drop(gone);
    drop(back);
    // One client comes back within the grace period and re-attaches.
    let back = h.client().await;
    let again = back
        .call(&SessionOpenParams {
            host: HostKind::Mcp,
            host_session_id: "comes-back".into(),
            label: None,
            policy: None,
            browser: None,
        })
        .await
        .unwrap();
    assert!(again.reattached);

    eventually("the abandoned session is disposed", async || !h.fake.is_open(handle(t_gone))).await;
    let status = kept_client.call(&StatusParams::default()).await.unwrap();
    assert!(status.sessions.iter().all(|s| s.session != s_gone), "{:?}", status.sessions);
    assert!(status.sessions.iter().any(|s| s.session == s_back));
    assert!(h.fake.is_open(handle(t_back)), "the re-attached session keeps its tab");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_changed_reaches_every_attached_client() {
    let h = start(config()).await;
    let a = h.client().await;
    let b = h.client().await;
    let mut notes = b.take_notifications().unwrap();
    let opened = a
        .call(&SessionOpenParams {
            host: HostKind::Pi,
            host_session_id: "shared".into(),
            label: None,
            policy: None,
            browser: None,
        })
        .await
        .unwrap();
    b.call(&SessionOpenParams {
        host: HostKind::Pi,
        host_session_id: "shared".into(),
        label: None,
        browser: None,
        policy: None,
    })
    .await
    .unwrap();
    a.call(&ToolsActivateParams { session: opened.session.clone(), advanced: false }).await.unwrap();
    let note = tokio::time::timeout(Duration::from_secs(10), notes.recv()).await.unwrap().unwrap();
    assert_eq!(note.method, TOOLS_CHANGED);
    let params = note.params.unwrap();
    assert_eq!(params["tools"], "activeSticky");
    assert!(params["names"].as_array().unwrap().iter().any(|n| n == "browser_open"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_disposes_sessions_and_removes_the_socket() {
    let h = start(config()).await;
    let c = h.client().await;
    let s = h.session(&c, HostKind::Pi, "p").await;
    let tab = open_tab(&c, &s).await;
    c.shutdown_broker().await.unwrap();
    drop(c);
    let summary = tokio::time::timeout(Duration::from_secs(30), h.task).await.unwrap().unwrap().unwrap();
    assert_eq!(summary.disposed_sessions, 1);
    assert!(!h.fake.is_open(handle(tab)), "disposal closes the scratch tab");
    assert!(!h.dir.join("broker.sock").exists());
    assert!(h.broker.shutdown_token().is_cancelled());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_reports_sessions_tabs_leases_browsers_and_limits() {
    let h = start(config()).await;
    let c = h.client().await;
    let s = h.session(&c, HostKind::Codex, "thread-9").await;
    let tab = open_tab(&c, &s).await;
    c.tool(&s, "browser_act", json!({"action": "click", "target": "e1"})).await.unwrap();
    let status = c.call(&StatusParams::default()).await.unwrap();
    let session = status.sessions.iter().find(|x| x.session == s).unwrap();
    assert_eq!(session.host, HostKind::Codex);
    assert_eq!(session.host_session_id, "thread-9");
    assert!(session.tools.is_active());
    let t = status.tabs.iter().find(|t| t.tab == tab).unwrap();
    assert_eq!(t.session.as_ref(), Some(&s));
    assert_eq!(status.write_leases.len(), 1, "{status:?}");
    assert_eq!(status.write_leases[0].holder, s);
    assert_eq!(status.browsers[0].auto_turn_cleanup, AutoTurnCleanup::Enabled);
    assert!(status.browsers[0].capabilities.iter().any(|c| c.name == "turnCleanup" && c.unsupported.is_none()));
    assert_eq!(status.limits.queued_requests.max, 16);
    assert_eq!(status.limits.concurrent_page_ops.max, 4);

    let filtered = c.call(&StatusParams { session: Some(SessionId::new("nope")) }).await.unwrap_err();
    assert_eq!(filtered.error_data().unwrap().code, ErrorCode::UnknownSession);

    let tool_status = c.tool(&s, "browser_status", json!({})).await.unwrap();
    assert_eq!(tool_status["toolsActive"], true);
    assert_eq!(tool_status["tabs"][0]["tab"], tab.0);
    assert_eq!(tool_status["limits"]["tabsPerTask"], json!({"used": 1, "max": 3}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_end_the_turn_and_close_the_session_of_the_host() {
    let h = start(config()).await;
    let c = h.client().await;
    let codex = h.session(&c, HostKind::Codex, "019a-codex-thread").await;
    let codex_tab = open_tab(&c, &codex).await;
    let claude = h.session(&c, HostKind::ClaudeCode, "cc-abc-123").await;
    let claude_tab = open_tab(&c, &claude).await;
    let options = HookOptions { timeout: Duration::from_secs(10), host: None, runtime_dir: Some(h.dir.clone()) };

    let stop = r#"{"cwd":"/w","hook_event_name":"Stop","last_assistant_message":null,"model":"m",
        "permission_mode":"default","session_id":"019a-codex-thread","stop_hook_active":false,
        "transcript_path":null,"turn_id":"turn-1"}"#;
    let input = hooks::parse_input(stop, None).unwrap();
    let summary = hooks::run_hook(HookEvent::TurnEnd, &input, &options).await;
    assert!(summary.contains("ended: ok=true"), "{summary}");
    assert!(!h.fake.is_open(handle(codex_tab)), "the Stop hook's turn end closed the scratch tab");
    assert!(h.fake.is_open(handle(claude_tab)), "another host session is untouched");

    let end = r#"{"session_id":"cc-abc-123","transcript_path":"/tmp/t","cwd":"/w","permission_mode":"default",
        "hook_event_name":"SessionEnd","reason":"other"}"#;
    let input = hooks::parse_input(end, None).unwrap();
    let summary = hooks::run_hook(HookEvent::SessionEnd, &input, &options).await;
    assert!(summary.contains("closed: ok=true"), "{summary}");
    assert!(!h.fake.is_open(handle(claude_tab)));
    let status = c.call(&StatusParams::default()).await.unwrap();
    assert!(status.sessions.iter().all(|s| s.session != claude));

    let unknown = hooks::parse_input(r#"{"session_id":"never-seen","hook_event_name":"Stop"}"#, None).unwrap();
    let summary = hooks::run_hook(HookEvent::TurnEnd, &unknown, &options).await;
    assert!(summary.contains("nothing to do"), "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_return_quickly_when_no_broker_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let options = HookOptions { timeout: Duration::from_secs(2), host: None, runtime_dir: Some(tmp.path().join("rt")) };
    let input = hooks::parse_input(r#"{"session_id":"x","hook_event_name":"Stop"}"#, None).unwrap();
    let summary = hooks::run_hook(HookEvent::TurnEnd, &input, &options).await;
    assert!(summary.contains("no browserd broker reachable"), "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_commands_print_one_line_per_item_and_json_on_request() {
    let h = start(config()).await;
    let c = h.client().await;
    let common = Common { session: Some("cli-test".into()), json: false };
    let out = cli::execute(
        &c,
        Command::Open { url: "https://a.test/".into(), background: false, observe: false, common: common.clone() },
        &common,
    )
    .await
    .unwrap();
    assert!(out.ok);
    let text = out.text;
    assert!(text.starts_with("tab ") && text.contains("https://a.test/"), "{text}");
    let text = cli::execute(&c, Command::List { common: common.clone() }, &common).await.unwrap().text;
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("tab ") && text.contains(" agentCreated owned "), "{text}");

    let json_common = Common { json: true, ..common.clone() };
    let out = cli::execute(
        &c,
        Command::Observe {
            tab: None,
            screenshot: false,
            within: None,
            since: None,
            max_nodes: None,
            offset: None,
            limit: None,
            allow_stale: false,
            common: json_common.clone(),
        },
        &json_common,
    )
    .await
    .unwrap();
    let v: Value = serde_json::from_str(&out.text).unwrap();
    assert!(v["untrustedContent"].as_str().unwrap().starts_with("fake page"), "{v}");

    let err =
        cli::execute(&c, Command::Claim { tab: 999, observe: false, resume: false, common: common.clone() }, &common)
            .await
            .unwrap_err();
    assert_eq!(err.code, ErrorCode::TabNotFound, "{err:?}");

    let status = cli::execute(&c, Command::Status { common: common.clone() }, &common).await.unwrap().text;
    assert!(status.lines().any(|l| l.starts_with("session ") && l.contains("cli cli-test")), "{status}");
    assert!(status.lines().any(|l| l.starts_with("limits: tabs/task 1/3")), "{status}");

    let stopped = cli::execute(&c, Command::Stop { common: common.clone() }, &common).await.unwrap().text;
    assert!(stopped.contains("USER_STOPPED"), "{stopped}");

    // A CLI session survives its (short) connection: the next command sees the same tab.
    drop(c);
    let c2 = h.client().await;
    let text = cli::execute(&c2, Command::List { common: common.clone() }, &common).await.unwrap().text;
    assert!(text.contains("agentCreated"), "{text}");
    let closed = c2
        .call(&SessionCloseParams {
            session: SessionId::new("s1"),
            reason: browserd_protocol::lifecycle::CloseReason::User,
        })
        .await
        .unwrap();
    assert!(closed.ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_id_runs_once_and_another_payload_is_refused() {
    let journal = tempfile::tempdir().unwrap();
    let h = start_with(config(), Some(journal.path().join("journal.sqlite3"))).await;
    let c = h.client().await;
    let s = h.session(&c, HostKind::Pi, "p").await;
    let tab = open_tab(&c, &s).await;
    let call = |args: Value| ToolCallParams {
        session: s.clone(),
        name: "browser_act".into(),
        arguments: args,
        call_id: Some("call-1".into()),
    };
    let click = json!({"action": "click", "target": "e1"});
    let acts = || h.fake.calls_to(Op::Act, handle(tab)).len();
    let before = acts();
    let first = c.call(&call(click.clone())).await.unwrap();
    assert!(first.get("traceId").is_some(), "{first}");
    let again = c.call(&call(click)).await.unwrap_err();
    let data = again.error_data().unwrap();
    assert_eq!(data.code, ErrorCode::DuplicateRequest, "{data:?}");
    assert_eq!(data.details.as_deref().unwrap()["state"], "completed");
    assert_eq!(acts(), before + 1, "the duplicate did not act again");

    let other = c.call(&call(json!({"action": "click", "target": "e2"}))).await.unwrap_err();
    assert_eq!(other.error_data().unwrap().code, ErrorCode::PayloadMismatch);
    assert_eq!(acts(), before + 1);

    // The audit ring holds metadata of every call: actions, opaque handles, codes; no URL path.
    c.shutdown_broker().await.unwrap();
    drop(c);
    tokio::time::timeout(Duration::from_secs(30), h.task).await.unwrap().unwrap().unwrap();
    let j = browserd_journal::Journal::open(journal.path().join("journal.sqlite3"), Default::default()).unwrap();
    let recent = j.audit_recent(100).unwrap();
    let actions: Vec<&str> = recent.iter().map(|e| e.record.action.as_str()).collect();
    for wanted in ["session.open", "tab.open", "act"] {
        assert!(actions.contains(&wanted), "{wanted} missing from {actions:?}");
    }
    let click = recent.iter().find(|e| e.record.action.as_str() == "act").unwrap();
    assert_eq!(click.record.input.map(|i| i.as_str()), Some("click"));
    assert_eq!(click.record.session.as_ref().map(|s| s.as_str()), Some(s.as_str()));
    let refused = recent.iter().find(|e| e.record.code.as_ref().is_some_and(|c| c.as_str() == "PAYLOAD_MISMATCH"));
    assert!(refused.is_some(), "the refused duplicate is audited too");
    let opened = recent.iter().find(|e| e.record.action.as_str() == "tab.open").unwrap();
    assert_eq!(opened.record.origin.as_ref().map(|o| o.as_str()), Some("https://a.test"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_dispatched_by_a_crashed_broker_is_unknown_and_never_replayed() {
    let journal_dir = tempfile::tempdir().unwrap();
    let path = journal_dir.path().join("journal.sqlite3");
    let args = json!({"action": "click", "target": "e1"});
    {
        // What a broker killed with -9 between dispatch and completion leaves behind (call ids are scoped by host
        // and host session: `<host>/<host session id>/<call id>`).
        let mut j = browserd_journal::Journal::open(&path, browserd_journal::JournalConfig::default()).unwrap();
        let hash = browserd_broker::dedup::payload_hash("Pi", "p", "browser_act", &args);
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
        let now = browserd_journal::types::UnixMillis(now);
        let browserd_journal::dedup::Begin::New(pending) =
            j.begin("Pi/p/call-9", hash, now, Duration::from_secs(3600)).unwrap()
        else {
            panic!("a new request id")
        };
        let _dispatched = j.mark_dispatched(pending, now).unwrap();
    }
    let h = start_with(config(), Some(path)).await;
    let c = h.client().await;
    let s = h.session(&c, HostKind::Pi, "p").await;
    let tab = open_tab(&c, &s).await;
    let acts = || h.fake.calls_to(Op::Act, handle(tab)).len();
    let before = acts();
    let params = ToolCallParams {
        session: s.clone(),
        name: "browser_act".into(),
        arguments: args,
        call_id: Some("call-9".into()),
    };
    let err = c.call(&params).await.unwrap_err();
    assert_eq!(err.error_data().unwrap().code, ErrorCode::OutcomeUnknown, "{err}");
    assert_eq!(acts(), before, "an unknown outcome is never replayed");

    // A new id acts normally.
    let fresh = ToolCallParams {
        call_id: Some("call-10".into()),
        arguments: json!({"action": "click", "target": "e1"}),
        ..params
    };
    c.call(&fresh).await.unwrap();
    assert_eq!(acts(), before + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_broker_exits_and_client_disconnect_leaves_sessions_for_reattachment() {
    let h = start(BrokerConfig { idle_exit_secs: 1, ..config() }).await;
    let c = h.client().await;
    let s = h.session(&c, HostKind::Mcp, "m").await;
    let left: browserd_protocol::lifecycle::ClientDisconnectResult =
        c.call(&browserd_protocol::lifecycle::ClientDisconnectParams::default()).await.unwrap();
    assert_eq!(left.sessions, vec![s]);
    assert_eq!(left.cancelled, 0);
    drop(c);
    // No client and nothing owned (the session has no tabs): the broker exits by itself.
    let summary = tokio::time::timeout(Duration::from_secs(30), h.task).await.unwrap().unwrap().unwrap();
    assert_eq!(summary.disposed_sessions, 1);
    assert!(!h.dir.join("broker.sock").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broker_runs_the_runtime_timers_idle_debuggers_detach() {
    let h = start(config()).await;
    let c = h.client().await;
    let s = h.session(&c, HostKind::Pi, "p").await;
    let tab = open_tab(&c, &s).await;
    c.tool(&s, "browser_observe", json!({})).await.unwrap();
    assert!(h.fake.debugger_attached(handle(tab)), "observing attached the debugger");
    // No further operation: only the timer loop can detach it after the idle window.
    eventually("the idle debugger is detached", async || !h.fake.debugger_attached(handle(tab))).await;
    assert!(h.fake.is_open(handle(tab)), "idle detach keeps the tab");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_answers_cancelled_and_frees_its_slot() {
    let h = start(config()).await;
    let c = h.client().await;
    let s = h.session(&c, HostKind::Mcp, "m").await;
    open_tab(&c, &s).await;
    h.fake.set_delay_for(Op::Observe, Duration::from_secs(30));
    let cancel = tokio_util::sync::CancellationToken::new();
    let call = tokio::spawn({
        let c = c.clone();
        let cancel = cancel.clone();
        let params =
            ToolCallParams { session: s.clone(), name: "browser_observe".into(), arguments: json!({}), call_id: None };
        async move { c.call_cancellable(&params, &cancel).await }
    });
    let watcher = h.client().await;
    eventually("the observation runs", async || {
        watcher.call(&StatusParams::default()).await.unwrap().limits.concurrent_page_ops.used == 1
    })
    .await;
    cancel.cancel();
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.error_data().unwrap().code, ErrorCode::Cancelled, "{err}");
    eventually("the slot is free", async || {
        watcher.call(&StatusParams::default()).await.unwrap().limits.concurrent_page_ops.used == 0
    })
    .await;
    h.fake.set_delay_for(Op::Observe, Duration::ZERO);
    c.tool(&s, "browser_observe", json!({})).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_records_are_mirrored_in_the_journal() {
    use browserd_core::provider::ProviderErrorKind;
    use browserd_test_support::fake_provider::{FaultKind, Times};
    let journal = tempfile::tempdir().unwrap();
    let path = journal.path().join("journal.sqlite3");
    let h = start_with(config(), Some(path.clone())).await;
    let c = h.client().await;
    let s = h.session(&c, HostKind::Pi, "p").await;
    let stuck = open_tab(&c, &s).await;
    let flaky = open_tab(&c, &s).await;
    h.fake.inject(Op::CloseTab, Some(handle(stuck)), FaultKind::Fail(ProviderErrorKind::Refused), Times::Always);
    h.fake.inject(Op::CloseTab, Some(handle(flaky)), FaultKind::Fail(ProviderErrorKind::Refused), Times::Once);
    let end = c
        .call(&TurnEndParams { session: s.clone(), reason: TurnEndReason::AgentEnd, host_turn_id: None })
        .await
        .unwrap();
    assert!(!end.ok, "{end:?}");
    assert_eq!(end.failed.len(), 2, "{end:?}");
    // The next operation retries: the flaky close now succeeds, the stuck one fails again.
    c.tool(&s, "browser_list", json!({})).await.unwrap();
    let status = c.call(&StatusParams::default()).await.unwrap();
    assert_eq!(status.recovery.len(), 1, "{:?}", status.recovery);
    assert_eq!(status.recovery[0].tab, stuck);

    c.shutdown_broker().await.unwrap();
    drop(c);
    tokio::time::timeout(Duration::from_secs(30), h.task).await.unwrap().unwrap().unwrap();
    let j = browserd_journal::Journal::open(&path, Default::default()).unwrap();
    let pending = j.pending_recoveries().unwrap();
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0].tab, format!("t{}", stuck.0));
    assert_eq!(pending[0].op.as_str(), "close");
    assert!(pending[0].attempts >= 2, "{pending:?}");
    let stats = j.stats().unwrap();
    assert_eq!(stats.resolved_recoveries, 1, "the flaky close was journaled, then resolved: {stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_during_a_write_waits_for_it_or_is_marked_stale_naming_it() {
    let h = start(config()).await;
    let c = h.client().await;
    let s = h.session(&c, HostKind::Codex, "reader").await;
    let tab = open_tab(&c, &s).await;
    let before = c.tool(&s, "browser_observe", json!({})).await.unwrap();
    assert!(before.get("consistency").is_none(), "no write was running: {before}");
    let observes = || h.fake.calls_to(Op::Observe, handle(tab)).len();
    let observed_before = observes();
    // Opening navigates with an action too.
    let acts_before = h.fake.calls_to(Op::Act, handle(tab)).len();

    // A long write with a callId: reads name it by that id.
    h.fake.set_delay_for(Op::Act, Duration::from_secs(6));
    let write = tokio::spawn({
        let (c, s) = (c.clone(), s.clone());
        async move {
            let params = ToolCallParams {
                session: s,
                name: "browser_act".into(),
                arguments: json!({"action": "click", "target": "e1"}),
                call_id: Some("slow-click".into()),
            };
            c.call(&params).await
        }
    });
    eventually("the write runs", async || {
        c.call(&StatusParams::default()).await.unwrap().limits.running_actions_per_tab.used == 1
    })
    .await;
    let named = json!({"state": "stale", "writeTrace": "slow-click", "writeTool": "browser_act"});
    // allowStale: answered at once from the page as last seen, without touching the page.
    let stale = c.tool(&s, "browser_observe", json!({"read": "allowStale"})).await.unwrap();
    assert_eq!(stale["consistency"], named, "{stale}");
    assert_eq!(stale["cursor"], before["cursor"], "the page as last seen: {stale}");
    assert_eq!(observes(), observed_before, "a stale read sends nothing to the page");
    // Another session gets no stale copy of a tab it does not own.
    let other = h.client().await;
    let so = h.session(&other, HostKind::Pi, "other").await;
    let refused = other.tool(&so, "browser_observe", json!({"tab": tab.0, "read": "allowStale"})).await.unwrap_err();
    assert_eq!(refused.error_data().unwrap().code, ErrorCode::OtherSessionTab, "{refused}");
    // The default waits, but not longer than the broker's bound: a write this long gives the stale page, marked.
    let bounded = c.tool(&s, "browser_observe", json!({})).await.unwrap();
    assert_eq!(bounded["consistency"], named, "{bounded}");
    assert_eq!(observes(), observed_before);
    write.await.unwrap().unwrap();

    // A short write without a callId: the default read waits for it and says so, naming the broker's trace id.
    h.fake.set_delay_for(Op::Act, Duration::from_millis(300));
    let write = tokio::spawn({
        let (c, s) = (c.clone(), s.clone());
        async move { c.tool(&s, "browser_act", json!({"action": "click", "target": "e1"})).await }
    });
    eventually("the second write runs", async || {
        c.call(&StatusParams::default()).await.unwrap().limits.running_actions_per_tab.used == 1
    })
    .await;
    let waited = c.tool(&s, "browser_observe", json!({})).await.unwrap();
    assert_eq!(waited["consistency"]["state"], "consistent", "{waited}");
    assert!(waited["consistency"]["writeTrace"].as_str().unwrap().starts_with('w'), "{waited}");
    assert_eq!(observes(), observed_before + 1, "a consistent read reads the page after the write");
    let acts = h.fake.calls_to(Op::Act, handle(tab));
    assert_eq!(acts.len(), acts_before + 2, "both writes ran once each");
    let read = h.fake.calls_to(Op::Observe, handle(tab)).pop().unwrap();
    assert!(read.seq > acts.last().unwrap().done_seq, "the read reached the page after the write finished");
    write.await.unwrap().unwrap();
    let after = c.tool(&s, "browser_observe", json!({"read": "allowStale"})).await.unwrap();
    assert!(after.get("consistency").is_none(), "no write runs any more: {after}");
}

/// 128 connections that never send `hello` (every connection slot) do not hang a real client: the broker closes each
/// after its hello deadline and the client's connect and call go through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_are_closed_at_the_hello_deadline_and_do_not_hang_clients() {
    let h = start(BrokerConfig { hello_timeout_ms: 500, ..config() }).await;
    let mut silent = Vec::new();
    for _ in 0..128 {
        silent.push(tokio::net::UnixStream::connect(h.dir.join("broker.sock")).await.unwrap());
    }
    let answered = tokio::time::timeout(Duration::from_secs(30), async {
        let c = h.client().await;
        c.call(&StatusParams::default()).await.unwrap()
    })
    .await;
    assert!(answered.is_ok(), "a client behind 128 silent connections was never answered");
    // The broker closed the silent ones: reading them ends.
    let mut first = silent.remove(0);
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(30), tokio::io::AsyncReadExt::read(&mut first, &mut buf)).await;
    assert!(matches!(n, Ok(Ok(0) | Err(_))), "the broker closed a connection that sent no hello: {n:?}");
}

/// A request over the broker's 16 MiB frame limit is answered with a typed error naming the limit (the broker
/// would drop the connection unanswered), and the connection keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversize_request_gets_a_typed_error_naming_the_limit() {
    let h = start(config()).await;
    let c = h.client().await;
    let s = h.session(&c, HostKind::Codex, "oversize").await;
    let huge = "x".repeat(17 * 1024 * 1024);
    let e = c.tool(&s, "browser_open", json!({"url": huge})).await.expect_err("too large").into_error_data();
    assert_eq!(e.code, ErrorCode::InvalidParams, "{e:?}");
    assert!(e.message.contains("16 MiB"), "{}", e.message);
    c.call(&StatusParams::default()).await.expect("the connection still works");
}
