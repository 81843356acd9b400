//! The acceptance suite's world: a home directory per test (config, runtime dir, journal, Chromium profile), the real
//! `browserd mcp` spawned the way Claude Code and Codex spawn it and spoken to by a minimal JSON-RPC stdio client,
//! the host hooks run as `browserd hook …` with each host's JSON, and the managed Chromium asked directly (its
//! DevTools HTTP endpoint) which tabs are open.

use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::oneshot;

pub(crate) const CHROMIUM: &str = "/usr/lib/chromium/chromium";

/// The `browserd` binary under test: this build's, or `BROWSERD_ACCEPTANCE_BIN` (to run the suite against another
/// build, e.g. to see which checks fail on an older one).
pub(crate) fn browserd() -> String {
    std::env::var("BROWSERD_ACCEPTANCE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_browserd").to_owned())
}

/// How long any one step may take before the test fails (generous: the machine is shared and loaded).
pub(crate) const STEP: Duration = Duration::from_secs(90);

/// Options of a test's broker.
#[derive(Debug, Clone, Default)]
pub(crate) struct Options {
    /// `op_timeout_ms` of the broker (a browser that stops answering fails a close after this long); `None`: the
    /// broker's default.
    pub(crate) op_timeout_ms: Option<u64>,
}

/// One test's home: every file of the broker, its Chromium profile and its socket live here.
pub(crate) struct Home {
    dir: tempfile::TempDir,
    /// A tmpfs mounted by the test, unmounted on drop.
    mounted: Option<PathBuf>,
}

impl Home {
    pub(crate) fn new(options: &Options) -> Self {
        assert!(Path::new(CHROMIUM).exists(), "the acceptance suite needs Debian's chromium at {CHROMIUM}");
        let home = Self { dir: tempfile::tempdir().unwrap(), mounted: None };
        for sub in ["run", ".config/browserd", ".local/state", "work"] {
            private_dir(&home.path().join(sub));
        }
        private_dir(&home.runtime_dir());
        let mut config = format!(
            "chromium_path = {CHROMIUM:?}\nprofile_dir = {:?}\nchromium_args = [\"--remote-debugging-port=0\"]\n\
             disconnect_grace_secs = 2\n",
            home.profile().display().to_string(),
        );
        if let Some(ms) = options.op_timeout_ms {
            config.push_str(&format!("op_timeout_ms = {ms}\n"));
        }
        // The counter pages are `data:` URLs, which the scheme policy refuses unless the user allows them.
        config.push_str("[schemes]\nallow = [\"data\"]\n");
        std::fs::write(home.path().join(".config/browserd/config.toml"), config).unwrap();
        home
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// This home's fake `/run/user` root (`BROWSERD_TEST_RUN_USER_BASE`, the one test hook of the runtime-dir rule).
    pub(crate) fn run_user_base(&self) -> PathBuf {
        self.path().join("run/user")
    }

    /// This uid's directory under [`Self::run_user_base`]: `XDG_RUNTIME_DIR` of a login shell (Claude Code's
    /// environment), and what a host that strips the variable (Codex) finds by the `/run/user/<uid>` rule.
    pub(crate) fn runtime_dir(&self) -> PathBuf {
        let uid = std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m)).unwrap();
        self.run_user_base().join(uid.to_string())
    }

    /// The broker's socket directory.
    pub(crate) fn broker_dir(&self) -> PathBuf {
        self.runtime_dir().join("browserd")
    }

    pub(crate) fn profile(&self) -> PathBuf {
        self.path().join("profile")
    }

    /// Mounts a real tmpfs of `size` (e.g. `"256k"`) at `~/.local/state`, so the journal lives on a small disk the
    /// test can fill. Needs root (CI runs as root); fails the test loudly when it cannot mount.
    pub(crate) fn mount_small_state_disk(&mut self, size: &str) -> PathBuf {
        let at = self.path().join(".local/state");
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700"), "tmpfs"])
            .arg(&at)
            .output()
            .expect("runs mount");
        assert!(
            out.status.success(),
            "the disk-full check needs a real small tmpfs and could not mount one (run as root, as CI does): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.mounted = Some(at.clone());
        at
    }

    /// The environment Claude Code gives a stdio MCP server and its hooks: its own whole environment plus its
    /// session id.
    pub(crate) fn claude_env(&self, session: &str) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| !k.starts_with("BROWSERD_") && !k.starts_with("XDG_") && !k.starts_with("CODEX"))
            .collect();
        env.push(("HOME".into(), self.path().display().to_string()));
        env.push(("XDG_RUNTIME_DIR".into(), self.runtime_dir().display().to_string()));
        env.push(("CLAUDECODE".into(), "1".into()));
        env.push(("CLAUDE_CODE_SESSION_ID".into(), session.into()));
        env
    }

    /// The environment Codex gives a stdio MCP server and its hooks: only `HOME LANG PATH SHELL TERM PWD` — no
    /// `XDG_RUNTIME_DIR`. The server finds the broker by the `/run/user/<uid>` rule, pointed at this home's fake root
    /// by the rule's test hook (`BROWSERD_TEST_RUN_USER_BASE`, standing in for the machine's `/run/user`).
    pub(crate) fn codex_env(&self) -> Vec<(String, String)> {
        let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
        vec![
            ("HOME".into(), self.path().display().to_string()),
            ("LANG".into(), "C.UTF-8".into()),
            ("PATH".into(), path),
            ("SHELL".into(), "/bin/sh".into()),
            ("TERM".into(), "dumb".into()),
            ("PWD".into(), self.path().join("work").display().to_string()),
            ("BROWSERD_TEST_RUN_USER_BASE".into(), self.run_user_base().display().to_string()),
        ]
    }

    /// Runs `browserd ARGS` with `env` (and `stdin`), returning (status ok, stdout, stderr).
    pub(crate) fn run(&self, env: &[(String, String)], args: &[&str], stdin: &str) -> (bool, String, String) {
        let mut child = std::process::Command::new(browserd())
            .args(args)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(self.path().join("work"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("runs browserd");
        // A command that does not read its stdin may exit before the write: that is its business, not an error here.
        let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
        let out = child.wait_with_output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// `browserd hook EVENT` with `payload` on stdin (as the host runs it); returns its stderr summary. A hook
    /// always exits 0 and prints nothing on stdout.
    pub(crate) fn hook(&self, env: &[(String, String)], event: &str, payload: &Value) -> String {
        let (ok, stdout, stderr) = self.run(env, &["hook", event, "--timeout-ms", "60000"], &payload.to_string());
        assert!(ok, "a hook exits 0: {stderr}");
        assert_eq!(stdout, "", "a hook prints nothing on stdout (hosts read it as a decision)");
        stderr
    }

    /// `browserd status --json` (the broker's whole status).
    pub(crate) fn broker_status(&self) -> Value {
        let (ok, stdout, stderr) = self.run(&self.claude_env("status-reader"), &["status", "--json"], "");
        assert!(ok, "browserd status failed: {stdout}{stderr}");
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("status --json is JSON ({e}): {stdout}"))
    }

    /// The DevTools HTTP port of the managed Chromium, once it runs.
    pub(crate) fn devtools_port(&self) -> Option<u16> {
        let text = std::fs::read_to_string(self.profile().join("DevToolsActivePort")).ok()?;
        text.lines().next()?.trim().parse().ok()
    }

    /// Whether the managed Chromium of this home is running (a process with this profile).
    pub(crate) fn chromium_running(&self) -> bool {
        self.chromium_pid().is_some()
    }

    /// The browser process of this home's managed Chromium (not its renderers).
    pub(crate) fn chromium_pid(&self) -> Option<u32> {
        let profile = format!("--user-data-dir={}", self.profile().display());
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
            let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
            let args: Vec<String> =
                cmdline.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
            let is_browser = args.iter().any(|a| a == &profile) && !args.iter().any(|a| a.starts_with("--type="));
            if is_browser {
                return Some(pid);
            }
        }
        None
    }

    /// The page tabs open in the browser, asked of Chromium itself: (target id, URL).
    pub(crate) fn browser_tabs(&self) -> Vec<(String, String)> {
        let port = self.devtools_port().expect("the managed Chromium runs (DevToolsActivePort)");
        let list: Value = serde_json::from_str(&http(port, "GET", "/json/list")).expect("/json/list is JSON");
        list.as_array()
            .unwrap()
            .iter()
            .filter(|t| t["type"] == "page")
            .map(|t| (t["id"].as_str().unwrap().to_owned(), t["url"].as_str().unwrap_or_default().to_owned()))
            .collect()
    }

    /// Whether a tab whose URL contains `needle` (a name unique to one tab) is open in the browser.
    pub(crate) fn tab_open(&self, needle: &str) -> bool {
        self.browser_tabs().iter().any(|(_, u)| u.contains(needle))
    }

    /// Waits until the browser's tab set satisfies `check` (tabs close asynchronously); panics with the last list.
    pub(crate) async fn wait_tabs(&self, what: &str, check: impl Fn(&[(String, String)]) -> bool) {
        let mut last = Vec::new();
        for _ in 0..200 {
            last = self.browser_tabs();
            if check(&last) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{what}: the browser's tabs are {last:?}");
    }

    /// Opens a tab the way the user does (not through browserd): a new target straight in Chromium.
    pub(crate) fn open_user_tab(&self, url: &str) -> String {
        let port = self.devtools_port().expect("the managed Chromium runs");
        let created: Value = serde_json::from_str(&http(port, "PUT", &format!("/json/new?{url}"))).unwrap();
        created["id"].as_str().unwrap().to_owned()
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        // Stop the broker this test started (and its Chromium): nothing is left running.
        let _ = std::process::Command::new(browserd())
            .args(["broker", "stop"])
            .env_clear()
            .envs(self.claude_env("stopper"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if let Some(pid) = self.chromium_pid() {
            let _ = std::process::Command::new("kill").args(["-CONT", &pid.to_string()]).status();
        }
        if let Some(at) = self.mounted.take() {
            let _ = std::process::Command::new("umount").arg("-l").arg(at).status();
        }
    }
}

fn private_dir(path: &Path) {
    std::fs::create_dir_all(path).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// One HTTP/1.1 request to Chromium's DevTools endpoint on loopback; returns the body (read by its
/// `Content-Length`: the endpoint keeps the connection open and answers nothing to HTTP/1.0).
fn http(port: u16, method: &str, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("the DevTools endpoint answers");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(stream, "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").unwrap();
    let mut data = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = stream.read(&mut buf).expect("the DevTools endpoint answers in time");
        assert!(n > 0, "the DevTools endpoint closed before answering {path}");
        data.extend_from_slice(&buf[..n]);
        let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
        let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        if data.len() >= end + 4 + length {
            return String::from_utf8_lossy(&data[end + 4..end + 4 + length]).into_owned();
        }
    }
}

/// Which host an MCP client plays.
#[derive(Debug, Clone)]
pub(crate) enum Host {
    /// Claude Code: full environment with `CLAUDE_CODE_SESSION_ID`; `clientInfo.name` `claude-code`.
    ClaudeCode { session: String },
    /// Codex: the bare environment, turn metadata in every call's `_meta`; `clientInfo.name` `codex-mcp-client`.
    Codex { session: String },
}

/// A tool result as the host sees it.
#[derive(Debug, Clone)]
pub(crate) struct ToolResult {
    pub(crate) is_error: bool,
    /// The first text block, parsed (the structured result, or `{"error": …}`).
    pub(crate) value: Value,
}

impl ToolResult {
    /// The result of a call that must have succeeded.
    pub(crate) fn ok(self) -> Value {
        assert!(!self.is_error, "expected success, got isError: {}", self.value);
        self.value
    }

    /// The typed error code (`{"error": {code}}`), if any.
    pub(crate) fn code(&self) -> Option<&str> {
        self.value["error"]["code"].as_str()
    }
}

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Value>>>>;

/// A minimal MCP client over the stdio of a real `browserd mcp`.
pub(crate) struct Mcp {
    child: Child,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    pending: Pending,
    notes: Arc<Mutex<Vec<Value>>>,
    next: AtomicI64,
    host: Host,
    turn: Mutex<Option<String>>,
}

impl Mcp {
    /// Spawns `browserd mcp` in `home` as `host` does and completes the `initialize` handshake.
    pub(crate) async fn spawn(home: &Home, host: Host) -> Self {
        Self::spawn_with(home, host, &[]).await
    }

    /// [`Self::spawn`] with more `browserd mcp` flags (`--vision semantic`).
    pub(crate) async fn spawn_with(home: &Home, host: Host, flags: &[&str]) -> Self {
        let (env, client) = match &host {
            Host::ClaudeCode { session } => (home.claude_env(session), "claude-code"),
            Host::Codex { .. } => (home.codex_env(), "codex-mcp-client"),
        };
        let mut child = Command::new(browserd())
            .arg("mcp")
            .args(flags)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(home.path().join("work"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawns browserd mcp");
        let stdout = child.stdout.take().unwrap();
        let pending: Pending = Arc::default();
        let notes: Arc<Mutex<Vec<Value>>> = Arc::default();
        tokio::spawn({
            let pending = pending.clone();
            let notes = notes.clone();
            async move {
                let mut lines = BufReader::new(stdout).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let message: Value = serde_json::from_str(&line)
                        .unwrap_or_else(|e| panic!("stdout of browserd mcp carries only JSON-RPC ({e}): {line}"));
                    match message.get("id").and_then(Value::as_i64) {
                        Some(id) if message.get("method").is_none() => {
                            if let Some(tx) = pending.lock().unwrap().remove(&id) {
                                let _ = tx.send(message);
                            }
                        }
                        _ => notes.lock().unwrap().push(message),
                    }
                }
            }
        });
        let mcp = Self {
            stdin: tokio::sync::Mutex::new(child.stdin.take()),
            child,
            pending,
            notes,
            next: AtomicI64::new(0),
            host,
            turn: Mutex::new(None),
        };
        let init = mcp
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": client, "version": "1.0"}}),
            )
            .await;
        assert!(init.get("result").is_some(), "initialize: {init}");
        mcp.notify("notifications/initialized", json!({})).await;
        mcp
    }

    /// Sets the Codex turn the next calls belong to (their `_meta["x-codex-turn-metadata"]`).
    pub(crate) fn codex_turn(&self, turn: &str) {
        *self.turn.lock().unwrap() = Some(turn.to_owned());
    }

    async fn send(&self, message: &Value) {
        let mut stdin = self.stdin.lock().await;
        let stdin = stdin.as_mut().expect("stdin open");
        stdin.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// Sends a notification.
    pub(crate) async fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params})).await;
    }

    /// A fresh request id.
    pub(crate) fn next_id(&self) -> i64 {
        self.next.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Sends request `id` and returns a receiver of its response.
    pub(crate) async fn start(&self, id: i64, method: &str, params: Value) -> oneshot::Receiver<Value> {
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        rx
    }

    /// A request and its response.
    pub(crate) async fn request(&self, method: &str, params: Value) -> Value {
        let rx = self.start(self.next_id(), method, params).await;
        tokio::time::timeout(STEP, rx).await.expect("the MCP server answers in time").expect("answered")
    }

    /// The `tools/call` params of tool `name`, with Codex's turn metadata when playing Codex.
    pub(crate) fn call_params(&self, name: &str, arguments: Value) -> Value {
        let mut params = json!({"name": name, "arguments": arguments});
        if let Host::Codex { session } = &self.host {
            let turn = self.turn.lock().unwrap().clone().expect("a Codex call needs a turn (codex_turn)");
            params["_meta"] = json!({"x-codex-turn-metadata": {
                "session_id": session, "turn_id": turn, "turn_started_at_unix_ms": 1_764_650_000_000_u64,
                "model": "gpt-5.5"}});
        }
        params
    }

    /// `tools/call`.
    pub(crate) async fn call(&self, name: &str, arguments: Value) -> ToolResult {
        let response = self.request("tools/call", self.call_params(name, arguments)).await;
        tool_result(&response)
    }

    /// The names `tools/list` shows now.
    pub(crate) async fn tool_names(&self) -> Vec<String> {
        let response = self.request("tools/list", json!({})).await;
        response["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("tools/list: {response}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Notifications received so far (progress, list_changed, ...), taken.
    pub(crate) fn take_notifications(&self) -> Vec<Value> {
        std::mem::take(&mut *self.notes.lock().unwrap())
    }

    /// Closes stdin (how a host ends a stdio server) and waits for the process to exit.
    pub(crate) async fn close(mut self) {
        drop(self.stdin.lock().await.take());
        let status = tokio::time::timeout(STEP, self.child.wait()).await.expect("browserd mcp exits on EOF").unwrap();
        assert!(status.success(), "browserd mcp exits cleanly on stdin EOF: {status}");
    }
}

/// Parses a `tools/call` response.
pub(crate) fn tool_result(response: &Value) -> ToolResult {
    let result = response.get("result").unwrap_or_else(|| panic!("tools/call answers a result: {response}"));
    let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("text content first: {result}"));
    let value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => observation(text).unwrap_or_else(|| panic!("the text is JSON ({e}) or an observation: {text}")),
    };
    ToolResult { is_error: result["isError"].as_bool().unwrap_or(false), value }
}

/// An observation as `browser_observe` shows it to the model (browserd's one envelope line, `tab 3 @<cursor>` and any
/// further fields as a JSON object, then the page's part: `page <url> "<title>"` and the page's lines) read back into
/// its fields: `tab`, `cursor`, `url`, `title`, `untrustedContent` and the envelope's JSON fields. `None` when the text is not an observation.
fn observation(text: &str) -> Option<Value> {
    let (envelope, page) = text.split_once('\n').unwrap_or((text, ""));
    let mut value = match envelope.find(" {").map(|at| &envelope[at + 1..]) {
        Some(rest) => serde_json::from_str::<Value>(rest).ok().filter(Value::is_object).unwrap_or_else(|| json!({})),
        None => json!({}),
    };
    let cursor = envelope.split_whitespace().find_map(|w| w.strip_prefix('@'))?;
    value["cursor"] = json!(cursor);
    if let Some(tab) = envelope.strip_prefix("tab ").and_then(|r| r.split_whitespace().next()?.parse::<u64>().ok()) {
        value["tab"] = json!(tab);
    }
    // The page's part opens with its URL and title (`page <url> "<title>"`), then its lines.
    let page = match page.split_once('\n').unwrap_or((page, "")) {
        (first, rest) if first.starts_with("page ") => {
            let (url, title) = first["page ".len()..].split_once(' ').unwrap_or((&first["page ".len()..], ""));
            value["url"] = json!(url);
            if let Ok(title) = serde_json::from_str::<String>(title) {
                value["title"] = json!(title);
            }
            rest
        }
        _ => page,
    };
    value["untrustedContent"] = json!(page);
    Some(value)
}

/// A Claude Code `Stop` hook payload (the fields Claude Code sends).
pub(crate) fn claude_stop(session: &str, transcript: &Path) -> Value {
    json!({"session_id": session, "transcript_path": transcript.display().to_string(), "cwd": "/work/repo",
           "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": false})
}

/// A Claude Code `SessionEnd` hook payload.
pub(crate) fn claude_session_end(session: &str, transcript: &Path) -> Value {
    json!({"session_id": session, "transcript_path": transcript.display().to_string(), "cwd": "/work/repo",
           "permission_mode": "default", "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})
}

/// A Codex `Stop` hook payload (every required field of `stop.command.input.schema.json`).
pub(crate) fn codex_stop(session: &str, turn: &str) -> Value {
    json!({"cwd": "/work/repo", "hook_event_name": "Stop", "last_assistant_message": "done", "model": "gpt-5.5",
           "permission_mode": "default", "session_id": session, "stop_hook_active": false,
           "transcript_path": null, "turn_id": turn})
}

/// Claude Code's transcript of one session: a JSONL file it appends to every turn (the hook payload names it).
pub(crate) struct Transcript(pub PathBuf);

impl Transcript {
    pub(crate) fn new(home: &Home, session: &str) -> Self {
        let path = home.path().join(format!("{session}.jsonl"));
        std::fs::write(&path, "").unwrap();
        Self(path)
    }

    /// What Claude Code does during a turn: append the turn's messages.
    pub(crate) fn turn(&self, text: &str) {
        let mut file = std::fs::OpenOptions::new().append(true).open(&self.0).unwrap();
        writeln!(file, "{}", json!({"type": "assistant", "message": text})).unwrap();
    }
}
