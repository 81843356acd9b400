//! End-to-end tests of the MCP server over an in-memory pipe: rmcp's own client (or raw JSON-RPC
//! lines) on one side, `browserd_mcp::serve` with an in-process fake backend on the other.

mod common;

use std::sync::{Arc, Mutex as StdMutex};

use async_trait::async_trait;
use base64::Engine as _;
use browserd_mcp::{HostIdentity, McpServer};
use browserd_mcp::{ProgressReporter, ProgressUpdate, ServerOptions, ShutdownOutcome, ToolBackend, ToolRequest};
use browserd_protocol::lifecycle::{
    AutoTurnCleanup, BridgeState, CleanupResult, CloseReason, HostKind, SessionOpenResult, ToolActivation,
    TurnBeginResult, TurnEndReason, TurnEndResult,
};
use browserd_protocol::tools::{ToolSpec, ToolTier, tool_catalog};
use browserd_protocol::{ErrorCode, ErrorData, SessionId};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation, JsonObject,
    ProgressNotificationParam, ProtocolVersion, RequestMetaObject,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, NotificationContext, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

// ---------------------------------------------------------------------------------------------
// The in-process backend
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Event {
    Open(HostKind, String),
    Begin(String, Option<String>),
    End(String, TurnEndReason, Option<String>),
    Close(String, CloseReason),
    Call(String, String),
    Cancelled(String),
}

#[derive(Default)]
struct Fake {
    events: StdMutex<Vec<Event>>,
    opened: StdMutex<u32>,
    /// Notified when a blocking call (`browser_list`, `browser_handoff`) has started.
    started: Notify,
    /// Lets `browser_handoff` finish.
    release: Notify,
    /// Notified when a call saw its cancel token fire.
    cancelled: Notify,
    /// Names `list_tools` reports; `None` = every core tool.
    visible: StdMutex<Option<Vec<String>>>,
    /// The next call fails with this code once (before running).
    fail_next: StdMutex<Option<ErrorCode>>,
}

impl Fake {
    fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    fn push(&self, event: Event) {
        self.events.lock().unwrap().push(event);
    }
}

fn png_base64() -> String {
    base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\nfake")
}

#[async_trait]
impl ToolBackend for Fake {
    async fn open_session(&self, host: HostKind, host_session_id: &str) -> Result<SessionOpenResult, ErrorData> {
        self.push(Event::Open(host, host_session_id.to_owned()));
        let mut opened = self.opened.lock().unwrap();
        *opened += 1;
        Ok(SessionOpenResult {
            session: SessionId::new(format!("s{opened}")),
            reattached: false,
            tools: ToolActivation::ActiveSticky,
            turn: 0,
        })
    }

    async fn begin_turn(&self, session: &SessionId, host_turn_id: Option<&str>) -> Result<TurnBeginResult, ErrorData> {
        self.push(Event::Begin(session.to_string(), host_turn_id.map(str::to_owned)));
        Ok(TurnBeginResult { turn: 1 })
    }

    async fn end_turn(
        &self,
        session: &SessionId,
        reason: TurnEndReason,
        host_turn_id: Option<&str>,
    ) -> Result<TurnEndResult, ErrorData> {
        self.push(Event::End(session.to_string(), reason, host_turn_id.map(str::to_owned)));
        Ok(TurnEndResult {
            ok: true,
            turn: 1,
            auto_turn_cleanup: AutoTurnCleanup::Enabled,
            missing_capabilities: Vec::new(),
            closed: Vec::new(),
            released: Vec::new(),
            kept: Vec::new(),
            detached: Vec::new(),
            failed: Vec::new(),
        })
    }

    async fn close_session(&self, session: &SessionId, reason: CloseReason) -> Result<CleanupResult, ErrorData> {
        self.push(Event::Close(session.to_string(), reason));
        Ok(CleanupResult {
            ok: true,
            closed: Vec::new(),
            released: Vec::new(),
            kept: Vec::new(),
            tools_active: false,
            bridge: BridgeState::Connected,
            failed: Vec::new(),
        })
    }

    async fn call_tool(
        &self,
        request: ToolRequest,
        progress: ProgressReporter,
        cancel: CancellationToken,
    ) -> Result<Value, ErrorData> {
        self.push(Event::Call(request.session.to_string(), request.name.clone()));
        if let Some(code) = self.fail_next.lock().unwrap().take() {
            return Err(ErrorData::new(code, "the broker does not know this session"));
        }
        match request.name.as_str() {
            "browser_status" => Ok(json!({"toolsActive": true, "session": request.session, "callId": request.call_id})),
            "browser_close" => Err(ErrorData::new(ErrorCode::TabNotFound, "no tab 99 in this session")),
            "browser_observe" => Ok(json!({
                "tab": 1, "url": "https://a.test/", "title": "A", "untrustedContent": "",
                "screenshot": {"imageId": "shot-1", "format": "png", "data": png_base64(), "dpr": 1.0}
            })),
            "browser_handoff" => {
                progress.report(ProgressUpdate {
                    progress: Some(1.0),
                    total: Some(3.0),
                    message: Some("asked".into()),
                });
                progress.report(ProgressUpdate { progress: Some(2.0), total: None, message: Some("waiting".into()) });
                self.started.notify_one();
                self.release.notified().await;
                Ok(json!({"status": "done"}))
            }
            "browser_list" => {
                self.started.notify_one();
                cancel.cancelled().await;
                self.push(Event::Cancelled(request.name.clone()));
                self.cancelled.notify_one();
                Err(ErrorData::new(ErrorCode::Cancelled, "cancelled by the client"))
            }
            "browser_context_reset" => Ok(json!({"ok": true})),
            "browser_mark_handoff" => {
                progress.report(ProgressUpdate { progress: None, total: None, message: Some("marking".into()) });
                Ok(json!({"tab": 1}))
            }
            other => Ok(json!({"tool": other})),
        }
    }

    async fn list_tools(&self, _session: &SessionId) -> Result<Vec<ToolSpec>, ErrorData> {
        let visible = self.visible.lock().unwrap().clone();
        Ok(tool_catalog()
            .into_iter()
            .filter(|spec| spec.tier == ToolTier::Core)
            .filter(|spec| visible.as_ref().is_none_or(|names| names.contains(&spec.name)))
            .collect())
    }
}

// ---------------------------------------------------------------------------------------------
// The client side
// ---------------------------------------------------------------------------------------------

#[derive(Clone)]
struct TestClient {
    config: ClientConfig,
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
    tools_changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let _ = self.progress.send(params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.tools_changed.send(());
    }
}

struct Harness {
    backend: Arc<Fake>,
    client: RunningService<RoleClient, TestClient>,
    server: JoinHandle<anyhow::Result<ShutdownOutcome>>,
    progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    tools_changed: mpsc::UnboundedReceiver<()>,
}

fn options() -> ServerOptions {
    let mut options =
        ServerOptions::new(HostIdentity { host: HostKind::Mcp, host_session_id: "proc-1".into(), from_host: false });
    options.heartbeat = std::time::Duration::from_secs(3600);
    options
}

async fn start_with(options: ServerOptions, lifecycle: ClientLifecycleMode, version: ProtocolVersion) -> Harness {
    let backend = Arc::new(Fake::default());
    let (client_io, server) = common::serve(backend.clone(), options);
    let (progress_tx, progress) = mpsc::unbounded_channel();
    let (changed_tx, tools_changed) = mpsc::unbounded_channel();
    let mut config = ClientConfig::new(ClientCapabilities::default(), Implementation::new("test-client", "1.0"));
    config.protocol_version = version;
    let handler = TestClient { config, progress: progress_tx, tools_changed: changed_tx };
    let client = handler.serve_with_lifecycle(client_io, lifecycle).await.expect("client starts");
    Harness { backend, client, server, progress, tools_changed }
}

async fn start() -> Harness {
    start_with(options(), ClientLifecycleMode::Initialize, ProtocolVersion::V_2025_11_25).await
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let arguments: JsonObject = arguments.as_object().cloned().unwrap_or_default();
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

fn with_meta(mut params: CallToolRequestParams, meta: Value) -> CallToolRequestParams {
    let mut object = RequestMetaObject::new();
    for (key, value) in meta.as_object().unwrap() {
        object.insert(key.clone(), value.clone());
    }
    params.meta = Some(object);
    params
}

fn codex_meta(session: &str, turn: &str) -> Value {
    json!({"x-codex-turn-metadata": {"session_id": session, "turn_id": turn, "turn_started_at_unix_ms": 1}})
}

fn text_json(result: &CallToolResult) -> Value {
    let text = &result.content[0].as_text().expect("first block is text").text;
    serde_json::from_str(text).expect("text is JSON")
}

fn core_names() -> Vec<String> {
    tool_catalog().into_iter().filter(|spec| spec.tier == ToolTier::Core).map(|spec| spec.name).collect()
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn initialize_2025_11_25_and_list_exactly_the_core_tools_with_their_schemas() {
    let h = start().await;
    let info = h.client.peer_info().expect("server answered initialize");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
    assert_eq!(info.server_info.as_ref().map(|s| s.name.as_str()), Some("browserd"));

    let tools = h.client.list_all_tools().await.unwrap();
    let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, core_names(), "exactly the core tier, in catalog order");
    for (tool, spec) in tools.iter().zip(tool_catalog()) {
        assert_eq!(tool.description.as_deref(), Some(spec.description.as_str()));
        assert_eq!(Value::Object((*tool.input_schema).clone()), spec.input_schema, "{}", spec.name);
        assert!(tool.output_schema.is_none(), "{}: output schemas are opt-in (--output-schemas)", spec.name);
        assert_eq!(tool.title.as_deref(), Some(spec.title.as_str()), "{}", spec.name);
        let hints = spec.annotations.as_ref().unwrap();
        let a = tool.annotations.as_ref().expect("every tool is annotated");
        assert_eq!(
            (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint),
            (
                Some(hints.read_only_hint),
                Some(hints.destructive_hint),
                Some(hints.idempotent_hint),
                Some(hints.open_world_hint)
            ),
            "{}",
            spec.name
        );
    }
    let mut schemas = options();
    schemas.output_schemas = true;
    let opted = start_with(schemas, ClientLifecycleMode::Initialize, ProtocolVersion::V_2025_11_25).await;
    for (tool, spec) in opted.client.list_all_tools().await.unwrap().iter().zip(tool_catalog()) {
        let output = tool.output_schema.as_ref().map(|schema| Value::Object((**schema).clone()));
        assert_eq!(output, Some(spec.output_schema), "{}", spec.name);
    }
    assert!(h.backend.events().is_empty(), "listing tools opens no browser session");

    // What a host shows its model: each tool's name, description and input parameters, pinned (the full schemas are
    // pinned by the protocol crate's schema snapshot).
    let listing: Vec<Value> = tools
        .iter()
        .map(|t| {
            let params: Vec<String> = t
                .input_schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            serde_json::json!({"name": t.name, "description": t.description, "params": params})
        })
        .collect();
    insta::assert_json_snapshot!("tools_list", listing);
}

#[tokio::test]
async fn tools_list_is_lean_by_default_and_its_size_is_measured() {
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let h = start().await;
    let tools = h.client.list_all_tools().await.unwrap();
    assert!(tools.iter().all(|tool| tool.output_schema.is_none()));
    let text = serde_json::to_string(&json!({"tools": tools})).unwrap();
    let tokens = bpe.encode_with_special_tokens(&text).len();

    let mut full = options();
    full.output_schemas = true;
    let with = start_with(full, ClientLifecycleMode::Initialize, ProtocolVersion::V_2025_11_25).await;
    let full_tools = with.client.list_all_tools().await.unwrap();
    let full_text = serde_json::to_string(&json!({"tools": full_tools})).unwrap();
    let full_tokens = bpe.encode_with_special_tokens(&full_text).len();
    eprintln!(
        "tools/list: {} tools, {} bytes, {tokens} o200k tokens; with --output-schemas: {} bytes, {full_tokens} tokens",
        tools.len(),
        text.len(),
        full_text.len()
    );
    // Peers: Playwright MCP 0.0.83 serves 25 tools in 20 296 bytes, chrome-devtools-mcp 1.11.0 32 in 28 628.
    assert!(text.len() <= 22 * 1024, "the core tier's tools/list is {} bytes, over 22 KB", text.len());
    assert!(text.len() < full_text.len());
}

#[tokio::test]
async fn advanced_tools_are_served_only_when_enabled() {
    let h = start().await;
    let result = h.client.call_tool(call("browser_evaluate", json!({"tab": 1, "expression": "1"}))).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(text_json(&result)["error"]["code"], "CAPABILITY_NOT_ACTIVATED");

    let mut advanced = options();
    advanced.advanced = true;
    let h = start_with(advanced, ClientLifecycleMode::Initialize, ProtocolVersion::V_2025_11_25).await;
    let names: Vec<String> = h.client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    let all: Vec<String> = tool_catalog().into_iter().map(|spec| spec.name).collect();
    assert_eq!(names, all);
}

#[tokio::test]
async fn a_tool_call_round_trips_as_compact_json_and_structured_content() {
    let h = start().await;
    let result = h.client.call_tool(call("browser_status", json!({}))).await.unwrap();
    assert_eq!(result.is_error, Some(false));
    let text = &result.content[0].as_text().unwrap().text;
    assert!(!text.contains('\n') && !text.contains(": "), "compact JSON: {text}");
    let value = text_json(&result);
    assert_eq!(value["toolsActive"], true);
    assert_eq!(value["session"], "s1");
    let call_id = value["callId"].as_str().expect("the MCP request id reaches the backend as the call id");
    assert!(call_id.starts_with("mcp-") && call_id.contains(':'), "unique across MCP processes: {call_id}");
    assert_eq!(result.structured_content, Some(value));
    assert_eq!(
        h.backend.events(),
        vec![Event::Open(HostKind::Mcp, "proc-1".into()), Event::Call("s1".into(), "browser_status".into())]
    );
}

#[tokio::test]
async fn failures_are_error_results_with_code_message_and_next_step() {
    let h = start().await;
    let result = h.client.call_tool(call("browser_close", json!({"tabs": [99]}))).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    let error = &text_json(&result)["error"];
    assert_eq!(error["code"], "TAB_NOT_FOUND");
    assert_eq!(error["message"], "no tab 99 in this session");
    assert_eq!(error["nextStep"], ErrorCode::TabNotFound.next_step());

    // Arguments that do not fit the schema never reach the backend.
    let calls_before = h.backend.events().len();
    let bad = h.client.call_tool(call("browser_open", json!({"url": "https://a.test", "tab": 3}))).await.unwrap();
    assert_eq!(bad.is_error, Some(true));
    let error = &text_json(&bad)["error"];
    assert_eq!(error["code"], "INVALID_PARAMS");
    assert!(error["message"].as_str().unwrap().contains("unknown field `tab`"), "{error}");
    let unknown = h.client.call_tool(call("browser_teleport", json!({}))).await.unwrap();
    assert_eq!(text_json(&unknown)["error"]["code"], "INVALID_PARAMS");
    assert_eq!(h.backend.events().len(), calls_before);
}

#[tokio::test]
async fn screenshots_come_back_as_image_content_and_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut with_files = options();
    with_files.screenshot_dir = Some(dir.path().to_path_buf());
    let h = start_with(with_files, ClientLifecycleMode::Initialize, ProtocolVersion::V_2025_11_25).await;
    let result = h.client.call_tool(call("browser_observe", json!({"screenshot": true}))).await.unwrap();
    assert_eq!(result.is_error, Some(false));
    let image = result.content[1].as_image().expect("second block is the image");
    assert_eq!((image.mime_type.as_str(), image.data.as_str()), ("image/png", png_base64().as_str()));
    let value = text_json(&result);
    let path = value["screenshot"]["path"].as_str().unwrap();
    assert_eq!(std::path::Path::new(path), dir.path().join("shot-1.png"));
    assert_eq!(std::fs::read(path).unwrap(), b"\x89PNG\r\n\x1a\nfake");
    assert_eq!(value["screenshot"]["data"], "", "no base64 in the text");
}

#[tokio::test]
async fn a_new_codex_turn_ends_the_previous_turn_before_the_call_runs() {
    let h = start().await;
    let first = with_meta(call("browser_status", json!({})), codex_meta("codex-s", "t1"));
    h.client.call_tool(first).await.unwrap();
    let same = with_meta(call("browser_status", json!({})), codex_meta("codex-s", "t1"));
    h.client.call_tool(same).await.unwrap();
    let next = with_meta(call("browser_status", json!({})), codex_meta("codex-s", "t2"));
    h.client.call_tool(next).await.unwrap();
    // The metadata may also arrive as a JSON string.
    let string = json!({"x-codex-turn-metadata": r#"{"session_id":"codex-s","turn_id":"t3"}"#});
    h.client.call_tool(with_meta(call("browser_status", json!({})), string)).await.unwrap();
    // A late call of an ended turn runs in the current turn and re-opens nothing.
    let late = with_meta(call("browser_status", json!({})), codex_meta("codex-s", "t1"));
    h.client.call_tool(late).await.unwrap();

    let s = || "s1".to_owned();
    let status = || Event::Call("s1".into(), "browser_status".into());
    assert_eq!(
        h.backend.events(),
        vec![
            Event::Open(HostKind::Codex, "codex-s".into()),
            Event::Begin(s(), Some("t1".into())),
            status(),
            status(),
            Event::End(s(), TurnEndReason::NewTurnDetected, Some("t1".into())),
            Event::Begin(s(), Some("t2".into())),
            status(),
            Event::End(s(), TurnEndReason::NewTurnDetected, Some("t2".into())),
            Event::Begin(s(), Some("t3".into())),
            status(),
            status(),
        ]
    );
}

#[tokio::test]
async fn a_new_codex_session_closes_the_old_one() {
    let h = start().await;
    h.client.call_tool(with_meta(call("browser_status", json!({})), codex_meta("a", "t1"))).await.unwrap();
    h.client.call_tool(with_meta(call("browser_status", json!({})), codex_meta("b", "t1"))).await.unwrap();
    // A call without the metadata stays in the current session.
    h.client.call_tool(call("browser_status", json!({}))).await.unwrap();
    let events = h.backend.events();
    assert_eq!(events[3], Event::Close("s1".into(), CloseReason::SessionSwitch));
    assert_eq!(events[4], Event::Open(HostKind::Codex, "b".into()));
    assert_eq!(events[5], Event::Begin("s2".into(), Some("t1".into())));
    assert_eq!(
        events[6..],
        [Event::Call("s2".into(), "browser_status".into()), Event::Call("s2".into(), "browser_status".into())]
    );
}

#[tokio::test]
async fn stdin_eof_closes_the_browser_session_as_client_gone() {
    let h = start().await;
    h.client.call_tool(call("browser_status", json!({}))).await.unwrap();
    h.client.cancel().await.unwrap(); // closes the client's end of the pipe: the server reads EOF
    let outcome = h.server.await.unwrap().unwrap();
    assert!(matches!(outcome, ShutdownOutcome::Closed(ref result) if result.ok), "{outcome:?}");
    assert_eq!(h.backend.events().last(), Some(&Event::Close("s1".into(), CloseReason::ClientGone)));
}

#[tokio::test]
async fn eof_without_any_call_has_no_session_to_close() {
    let h = start().await;
    h.client.cancel().await.unwrap();
    assert_eq!(h.server.await.unwrap().unwrap(), ShutdownOutcome::NoSession);
    assert!(h.backend.events().is_empty());
}

#[tokio::test]
async fn a_stop_signal_closes_the_session_as_host_exit() {
    let backend = Arc::new(Fake::default());
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let stop = Arc::new(Notify::new());
    let stop_wait = stop.clone();
    let server =
        tokio::spawn(browserd_mcp::serve(
            backend.clone(),
            options(),
            server_io,
            async move { stop_wait.notified().await },
        ));
    let client = ().serve(client_io).await.unwrap();
    client.call_tool(call("browser_status", json!({}))).await.unwrap();
    stop.notify_one();
    assert!(matches!(server.await.unwrap().unwrap(), ShutdownOutcome::Closed(_)));
    assert_eq!(backend.events().last(), Some(&Event::Close("s1".into(), CloseReason::HostExit)));
    drop(client);
}

#[tokio::test]
async fn mcp_cancellation_reaches_the_backend_cancel_token() {
    let h = start().await;
    let peer = h.client.peer().clone();
    let pending = tokio::spawn(async move { peer.call_tool(call("browser_list", json!({}))).await });
    h.backend.started.notified().await;
    pending.abort(); // dropping the request future makes rmcp send notifications/cancelled
    let _ = pending.await;
    h.backend.cancelled.notified().await;
    // The backend saw the cancel token fire; a later call proves the server is still serving.
    let result = h.client.call_tool(call("browser_status", json!({}))).await.unwrap();
    assert_eq!(result.is_error, Some(false));
    let events = h.backend.events();
    assert!(events.contains(&Event::Cancelled("browser_list".into())), "{events:?}");
}

#[tokio::test]
async fn progress_is_forwarded_when_the_client_sent_a_token() {
    let mut h = start().await;
    // rmcp's client puts its own progress token on every request.
    let params = call("browser_handoff", json!({"tab": 1, "message": "log in"}));
    let peer = h.client.peer().clone();
    let pending = tokio::spawn(async move { peer.call_tool(params).await });
    h.backend.started.notified().await;
    let first = h.progress.recv().await.unwrap();
    let second = h.progress.recv().await.unwrap();
    assert_eq!(first.progress_token, second.progress_token);
    assert_eq!((first.progress, first.total, first.message.as_deref()), (1.0, Some(3.0), Some("asked")));
    assert_eq!((second.progress, second.total, second.message.as_deref()), (2.0, Some(3.0), Some("waiting")));
    h.backend.release.notify_one();
    let result = pending.await.unwrap().unwrap();
    assert_eq!(text_json(&result)["status"], "done");
}

#[tokio::test]
async fn heartbeats_report_progress_while_a_silent_call_runs() {
    let mut fast = options();
    fast.heartbeat = std::time::Duration::from_millis(100);
    let mut h = start_with(fast, ClientLifecycleMode::Initialize, ProtocolVersion::V_2025_11_25).await;
    // browser_list reports nothing itself: every notification is a heartbeat.
    let params = call("browser_list", json!({}));
    let peer = h.client.peer().clone();
    let pending = tokio::spawn(async move { peer.call_tool(params).await });
    let first = h.progress.recv().await.unwrap();
    let second = h.progress.recv().await.unwrap();
    assert_eq!(first.progress_token, second.progress_token);
    assert!(second.progress > first.progress, "progress grows: {} then {}", first.progress, second.progress);
    assert_eq!(first.message.as_deref(), Some("still working"));
    pending.abort();
}

#[tokio::test]
async fn a_lost_session_is_reopened_once() {
    let h = start().await;
    h.client.call_tool(call("browser_status", json!({}))).await.unwrap();
    *h.backend.fail_next.lock().unwrap() = Some(ErrorCode::UnknownSession);
    let result = h.client.call_tool(call("browser_status", json!({}))).await.unwrap();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(text_json(&result)["session"], "s2");
    let opens = h.backend.events().iter().filter(|e| matches!(e, Event::Open(..))).count();
    assert_eq!(opens, 2);
}

#[tokio::test]
async fn context_reset_hides_the_tools_and_tells_the_client() {
    let mut h = start().await;
    h.client.call_tool(call("browser_status", json!({}))).await.unwrap();
    *h.backend.visible.lock().unwrap() = Some(Vec::new());
    h.client.call_tool(call("browser_context_reset", json!({}))).await.unwrap();
    h.tools_changed.recv().await.expect("tools/list_changed sent");
    assert!(h.client.list_all_tools().await.unwrap().is_empty(), "the session's tools are inactive now");
}

#[tokio::test]
async fn protocol_2026_07_28_without_initialize() {
    let h = start_with(
        options(),
        ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] },
        ProtocolVersion::V_2026_07_28,
    )
    .await;
    let names: Vec<String> = h.client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, core_names());
    let result = h.client.call_tool(call("browser_status", json!({}))).await.unwrap();
    assert_eq!(text_json(&result)["session"], "s1");
    let failed = h.client.call_tool(call("browser_close", json!({"tabs": [99]}))).await.unwrap();
    assert_eq!(failed.is_error, Some(true));
}

/// The same over raw JSON-RPC lines, to pin what goes on the wire for each version.
#[tokio::test]
async fn raw_wire_for_both_protocol_versions() {
    async fn exchange(lines: &[Value]) -> Vec<Value> {
        let backend = Arc::new(Fake::default());
        let (io, server) = common::serve(backend, options());
        let (read, mut write) = tokio::io::split(io);
        let mut reader = BufReader::new(read).lines();
        let mut responses = Vec::new();
        for line in lines {
            write.write_all(format!("{line}\n").as_bytes()).await.unwrap();
            if let Some(id) = line.get("id") {
                // Notifications (progress) may come first; every line read is kept, in order.
                loop {
                    let text = reader.next_line().await.unwrap().expect("a response line");
                    let message: Value = serde_json::from_str(&text).unwrap();
                    let done = message.get("id") == Some(id);
                    responses.push(message);
                    if done {
                        break;
                    }
                }
            }
        }
        drop(write);
        drop(reader);
        server.await.unwrap().unwrap();
        responses
    }

    let legacy = exchange(&[
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "codex-mcp-client", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "browser_status", "arguments": {}}}),
        // No progress token: no progress notifications, just the result.
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "browser_mark_handoff", "arguments": {"tab": 1}}}),
        // With a token: the backend's update arrives as notifications/progress before the result.
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "_meta": {"progressToken": "p-raw"}, "name": "browser_mark_handoff", "arguments": {"tab": 1}}}),
    ])
    .await;
    assert_eq!(legacy.len(), 5, "{legacy:?}");
    assert_eq!(legacy[2]["id"], 3, "a call without a token gets no notifications: {}", legacy[2]);
    assert_eq!(legacy[3]["method"], "notifications/progress");
    assert_eq!(legacy[3]["params"]["progressToken"], "p-raw");
    assert_eq!(legacy[3]["params"]["message"], "marking");
    assert_eq!(legacy[4]["id"], 4);
    assert_eq!(legacy[0]["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(legacy[0]["result"]["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(legacy[1]["result"]["isError"], false);
    assert!(legacy[1]["result"].get("resultType").is_none(), "no 2026 fields on a 2025 session: {}", legacy[1]);

    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}
    });
    let modern = exchange(&[
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"_meta": meta, "name": "browser_close", "arguments": {"tabs": [99]}}}),
    ])
    .await;
    let versions = modern[0]["result"]["supportedVersions"].as_array().expect("discover lists versions");
    assert!(versions.contains(&json!("2026-07-28")) && versions.contains(&json!("2025-11-25")), "{}", modern[0]);
    assert_eq!(modern[1]["result"]["tools"].as_array().unwrap().len(), core_names().len());
    assert_eq!(modern[2]["result"]["resultType"], "complete");
    assert_eq!(modern[2]["result"]["isError"], true);
    let text = modern[2]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("TAB_NOT_FOUND"), "{text}");
}

#[test]
fn offered_tools_follow_the_catalog() {
    let backend: Arc<dyn ToolBackend> = Arc::new(Fake::default());
    let server = McpServer::new(backend, options());
    let names: Vec<String> = server.offered_tools().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, core_names());
}

/// `browserd mcp --advanced` (the server with `advanced` on, over the real broker backend) against a broker whose
/// `[advanced]` policy enables the tier, on a real managed Chromium: the broker's `tools.changed` reaches the client
/// as `notifications/tools/list_changed`, `tools/list` then shows the broker's tool set with the advanced tools, and
/// `browser_evaluate` runs in the page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advanced_mcp_server_evaluates_through_a_broker_that_enables_the_tier() {
    use browserd_broker::config::AdvancedConfig;
    use browserd_mcp::BrokerBackend;

    let site = browserd_test_support::fixtures::FixtureSite::start().await.unwrap();
    let broker = common::TestBroker::chromium(|config| {
        config.advanced = AdvancedConfig { enabled: true, ..AdvancedConfig::default() };
    })
    .await;

    let mut advanced = options();
    advanced.advanced = true;
    let (client_io, server) = common::serve(Arc::new(BrokerBackend::new(broker.connect.clone(), true)), advanced);
    let (progress, _progress_rx) = mpsc::unbounded_channel();
    let (changed, mut tools_changed) = mpsc::unbounded_channel();
    let config = ClientConfig::new(ClientCapabilities::default(), Implementation::new("test-client", "1.0"));
    let client = TestClient { config, progress, tools_changed: changed }.serve(client_io).await.unwrap();
    let info = client.peer_info().unwrap();
    assert!(info.capabilities.tools.as_ref().and_then(|t| t.list_changed) == Some(true), "{info:?}");

    let opened = client.call_tool(call("browser_open", json!({"url": site.url("/form.html")}))).await.unwrap();
    assert_eq!(opened.is_error, Some(false), "{opened:?}");
    let tab = text_json(&opened)["tab"].as_u64().unwrap();
    // Activating the session (core and advanced tiers) changed its tool set: the broker said so, and the client heard.
    tokio::time::timeout(std::time::Duration::from_secs(30), tools_changed.recv()).await.unwrap().unwrap();
    let names: Vec<String> = client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    for tool in ["browser_open", "browser_evaluate", "browser_console", "browser_network"] {
        assert!(names.iter().any(|n| n == tool), "{tool} in {names:?}");
    }
    assert!(!names.iter().any(|n| n == "browser_cdp"), "raw CDP stays off without `raw_cdp`: {names:?}");

    let result = client
        .call_tool(call(
            "browser_evaluate",
            json!({"tab": tab, "expression": "document.querySelectorAll('input').length > 0"}),
        ))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(text_json(&result)["value"], true);
    let result = client.call_tool(call("browser_cdp", json!({"tab": tab, "method": "Page.reload"}))).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(text_json(&result)["error"]["code"], "CAPABILITY_NOT_ACTIVATED", "{result:?}");

    client.cancel().await.unwrap();
    let outcome = server.await.unwrap().unwrap();
    assert!(matches!(outcome, ShutdownOutcome::Closed(ref result) if result.ok), "{outcome:?}");
    broker.stop().await;
    site.shutdown().await;
}
