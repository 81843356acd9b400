//! `serve_stdio` as a real child process on real pipes: stdin EOF and SIGTERM both close the browser session
//! (`clientGone` / `hostExit`). No libtest harness (`harness = false`): this binary is both the test (no
//! arguments) and the MCP server it spawns (`--child`), and libtest's own stdout lines would corrupt the MCP
//! channel.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use async_trait::async_trait;
use browserd_mcp::{HostIdentity, ProgressReporter, ServerOptions, ToolBackend, ToolRequest};
use browserd_protocol::lifecycle::{
    AutoTurnCleanup, BridgeState, CleanupResult, CloseReason, HostKind, SessionOpenResult, ToolActivation,
    TurnBeginResult, TurnEndReason, TurnEndResult,
};
use browserd_protocol::tools::ToolSpec;
use browserd_protocol::{ErrorData, SessionId};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

const EVENTS_ENV: &str = "BROWSERD_MCP_TEST_EVENTS";

/// A backend that appends one line per lifecycle event to a file the parent reads.
struct FileBackend {
    path: PathBuf,
}

impl FileBackend {
    fn log(&self, line: String) {
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&self.path).unwrap();
        writeln!(file, "{line}").unwrap();
    }
}

#[async_trait]
impl ToolBackend for FileBackend {
    async fn open_session(&self, host: HostKind, host_session_id: &str) -> Result<SessionOpenResult, ErrorData> {
        self.log(format!("open {host:?} {host_session_id}"));
        Ok(SessionOpenResult {
            session: SessionId::new("s1"),
            reattached: false,
            tools: ToolActivation::ActiveSticky,
            turn: 0,
        })
    }

    async fn begin_turn(&self, _session: &SessionId, turn: Option<&str>) -> Result<TurnBeginResult, ErrorData> {
        self.log(format!("begin {turn:?}"));
        Ok(TurnBeginResult { turn: 1 })
    }

    async fn end_turn(
        &self,
        _session: &SessionId,
        reason: TurnEndReason,
        turn: Option<&str>,
    ) -> Result<TurnEndResult, ErrorData> {
        self.log(format!("end {reason:?} {turn:?}"));
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
        self.log(format!("close {session} {reason:?}"));
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
        _progress: ProgressReporter,
        _cancel: CancellationToken,
    ) -> Result<Value, ErrorData> {
        self.log(format!("call {}", request.name));
        Ok(json!({"ok": true}))
    }

    async fn list_tools(&self, _session: &SessionId) -> Result<Vec<ToolSpec>, ErrorData> {
        Ok(browserd_protocol::tools::tool_catalog())
    }
}

fn child(events: PathBuf) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let options = ServerOptions::new(HostIdentity {
        host: HostKind::ClaudeCode,
        host_session_id: "cc-session".into(),
        from_host: true,
    });
    runtime.block_on(browserd_mcp::serve_stdio(FileBackend { path: events }, options)).unwrap();
}

#[derive(Clone, Copy, Debug)]
enum Ending {
    StdinEof,
    Sigterm,
}

async fn run_child(dir: &Path, ending: Ending) -> Vec<String> {
    let events = dir.join(format!("{ending:?}.log"));
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .arg("--child")
        .env(EVENTS_ENV, &events)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "claude-code", "version": "2"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "browser_status", "arguments": {}}}),
    ];
    let mut answers = Vec::new();
    for request in &requests {
        stdin.write_all(format!("{request}\n").as_bytes()).await.unwrap();
        if request.get("id").is_some() {
            let line = lines.next_line().await.unwrap().expect("the server answers on stdout");
            answers.push(serde_json::from_str::<Value>(&line).expect("stdout carries only JSON-RPC"));
        }
    }
    assert_eq!(answers[0]["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(answers[1]["result"]["tools"].as_array().unwrap().len(), 13);
    assert_eq!(answers[2]["result"]["isError"], false, "{}", answers[2]);

    match ending {
        Ending::StdinEof => drop(stdin),
        Ending::Sigterm => {
            let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
            nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        }
    }
    let status = child.wait().await.unwrap();
    assert!(status.success(), "{ending:?}: the server exits cleanly: {status}");
    std::fs::read_to_string(&events).unwrap().lines().map(str::to_owned).collect()
}

/// The one test of this binary, by the name test runners list.
const TEST_NAME: &str = "mcp_stdio_session_closes_on_stdin_eof_and_sigterm";

fn main() {
    if std::env::args().any(|arg| arg == "--child") {
        child(PathBuf::from(std::env::var_os(EVENTS_ENV).expect("events path")));
        return;
    }
    // Speak the part of libtest's command line that cargo-nextest uses to list tests.
    if std::env::args().any(|arg| arg == "--list") {
        if !std::env::args().any(|arg| arg == "--ignored") {
            println!("{TEST_NAME}: test");
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for (ending, reason) in [(Ending::StdinEof, "ClientGone"), (Ending::Sigterm, "HostExit")] {
        let events = runtime.block_on(run_child(dir.path(), ending));
        assert_eq!(
            events,
            ["open ClaudeCode cc-session".to_owned(), "call browser_status".to_owned(), format!("close s1 {reason}")],
            "{ending:?}"
        );
        println!("stdio {ending:?}: session closed with {reason}");
    }
    println!("test {TEST_NAME} ... ok");
}
