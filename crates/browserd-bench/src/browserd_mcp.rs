//! browserd as an agent meets it through its MCP server: the real `browserd mcp` process (stdio, newline-delimited
//! JSON-RPC) in a scratch home, which starts its own broker and managed headless Chromium. Each timed call is one
//! `tools/call` round trip as an MCP client waits for it: `browser_observe {tab}` for observations, and for clicks
//! `browser_act` with the same click and expectation as the in-process `browserd` observer. This is the figure to put
//! next to the peers' MCP servers and agent-browser's CLI, which are measured the same way from outside.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::browserd::{find_ref, parse_refs};
use crate::observer::{Addressable, Observation, Observer, ObserverError};

const NAME: &str = "browserd-mcp";

/// Where the `browserd` executable and Chromium are.
#[derive(Debug, Clone)]
pub struct BrowserdMcpOptions {
    /// The `browserd` executable (default: next to this binary).
    pub browserd: PathBuf,
    /// The Chromium the broker launches (`BROWSERD_CHROMIUM`).
    pub chromium: PathBuf,
    /// Deadline of one tool call.
    pub call_timeout: Duration,
}

impl BrowserdMcpOptions {
    /// `browserd` next to the running executable (both are built into the same target directory; a test binary
    /// sits one directory further down, in `deps/`), Debian's Chromium or `BROWSERD_CHROMIUM`.
    pub fn from_env() -> BrowserdMcpOptions {
        let exe = std::env::current_exe().unwrap_or_default();
        let dir = exe.parent().map(PathBuf::from).unwrap_or_default();
        let browserd = [dir.join("browserd"), dir.join("../browserd")]
            .into_iter()
            .find(|p| p.is_file())
            .unwrap_or_else(|| dir.join("browserd"));
        BrowserdMcpOptions {
            browserd,
            chromium: crate::node_mcp::chromium_from_env(),
            call_timeout: Duration::from_secs(60),
        }
    }
}

/// A running `browserd mcp` with its scratch home and broker.
#[derive(Debug)]
pub struct BrowserdMcp {
    options: BrowserdMcpOptions,
    root: tempfile::TempDir,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

fn start_error(reason: impl Into<String>) -> ObserverError {
    ObserverError::Start { observer: NAME.into(), reason: reason.into() }
}

impl BrowserdMcp {
    /// Starts `browserd mcp --headless` in a fresh home and runs the MCP handshake.
    pub async fn start(options: &BrowserdMcpOptions) -> Result<BrowserdMcp, ObserverError> {
        if !options.browserd.is_file() {
            return Err(start_error(format!(
                "no browserd executable at {}; build it first (cargo build --release -p browserd) or pass --browserd",
                options.browserd.display()
            )));
        }
        let root = tempfile::Builder::new()
            .prefix("browserd-bench-mcp-")
            .tempdir()
            .map_err(|e| start_error(format!("cannot create a scratch home: {e}")))?;
        for dir in ["home", "run"] {
            std::fs::create_dir_all(root.path().join(dir))
                .map_err(|e| start_error(format!("cannot create a scratch home: {e}")))?;
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(root.path().join("run"), std::fs::Permissions::from_mode(0o700))
            .map_err(|e| start_error(format!("cannot make the runtime directory private: {e}")))?;
        let mut child = command(options, &root, &["mcp", "--headless"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| start_error(format!("cannot run {} mcp: {e}", options.browserd.display())))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(start_error("browserd mcp has no stdio pipes"));
        };
        let mut mcp = BrowserdMcp {
            options: options.clone(),
            root,
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout).lines(),
            next_id: 1,
        };
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "browserd-bench", "version": "0"}});
        let answer = mcp.request("initialize", init).await.map_err(|e| start_error(e.to_string()))?;
        if answer["serverInfo"]["name"] != "browserd" {
            return Err(start_error(format!("unexpected initialize answer: {answer}")));
        }
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await
            .map_err(|e| start_error(e.to_string()))?;
        eprintln!(
            "browserd-bench: started {NAME} ({} mcp, {})",
            options.browserd.display(),
            options.chromium.display()
        );
        Ok(mcp)
    }

    async fn send(&mut self, message: &Value) -> Result<(), ObserverError> {
        let gone = |e: std::io::Error| ObserverError::Gone { observer: NAME.into(), reason: format!("writing: {e}") };
        let stdin = self.stdin.as_mut().ok_or_else(|| gone(std::io::ErrorKind::BrokenPipe.into()))?;
        stdin.write_all(format!("{message}\n").as_bytes()).await.map_err(gone)?;
        stdin.flush().await.map_err(gone)
    }

    /// One JSON-RPC request; its `result`.
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, ObserverError> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await?;
        let gone = |reason: String| ObserverError::Gone { observer: NAME.into(), reason };
        loop {
            let line = tokio::time::timeout(self.options.call_timeout, self.stdout.next_line())
                .await
                .map_err(|_| gone(format!("no answer to {method} within {:?}", self.options.call_timeout)))?
                .map_err(|e| gone(format!("reading: {e}")))?
                .ok_or_else(|| gone("browserd mcp closed its output; run `browserd doctor`".into()))?;
            let message: Value = serde_json::from_str(&line).map_err(|e| gone(format!("unparsable line ({e})")))?;
            if message["id"] == id {
                if let Some(error) = message.get("error") {
                    return Err(gone(format!("{method} failed: {error}")));
                }
                return Ok(message["result"].clone());
            }
        }
    }

    /// A tool call: its text as the model receives it (the text parts, joined), and whether it is an error.
    async fn call(&mut self, tool: &str, arguments: Value) -> Result<(String, bool), ObserverError> {
        let result = self.request("tools/call", json!({"name": tool, "arguments": arguments})).await?;
        let text = result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|part| part["type"] == "text")
            .filter_map(|part| part["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        Ok((text, result["isError"] == true))
    }

    fn page_error(url: &str, reason: impl Into<String>) -> ObserverError {
        ObserverError::Page { observer: NAME.into(), url: url.into(), reason: reason.into() }
    }

    /// Opens `url` in a new tab (untimed); its tab id.
    async fn open(&mut self, url: &str) -> Result<Value, ObserverError> {
        let (text, failed) = self.call("browser_open", json!({"url": url})).await?;
        let opened: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if failed || opened["tab"].is_null() {
            return Err(Self::page_error(url, format!("browser_open failed: {text}")));
        }
        Ok(opened["tab"].clone())
    }

    async fn close_tab(&mut self, tab: &Value) {
        let _ = self.call("browser_close", json!({"tabs": [tab]})).await;
    }

    async fn observe_open(&mut self, url: &str, tab: &Value, runs: usize) -> Result<Observation, ObserverError> {
        let mut ms_runs = Vec::with_capacity(runs);
        let mut text = String::new();
        for _ in 0..runs.max(1) {
            let started = Instant::now();
            let (shown, failed) = self.call("browser_observe", json!({"tab": tab})).await?;
            ms_runs.push(started.elapsed().as_secs_f64() * 1000.0);
            if failed {
                return Err(Self::page_error(url, format!("browser_observe failed: {shown}")));
            }
            text = shown;
        }
        Ok(Observation { text, content: None, ms_runs, omitted_nodes: None, failures: 0, phases_p50_ms: None })
    }

    async fn click_open(
        &mut self,
        url: &str,
        tab: &Value,
        role: &str,
        name: &str,
        runs: usize,
    ) -> Result<Observation, ObserverError> {
        let (shown, failed) = self.call("browser_observe", json!({"tab": tab})).await?;
        if failed {
            return Err(Self::page_error(url, format!("browser_observe failed: {shown}")));
        }
        let target = find_ref(&shown, role, name).ok_or_else(|| {
            Self::page_error(url, format!("no {role} {name:?} with a ref in the observation (or several of them)"))
        })?;
        let arguments = json!({"tab": tab, "action": "click", "target": target,
            "expected": [{"kind": "state", "target": target, "state": "focused"}]});
        let mut ms_runs = Vec::with_capacity(runs);
        let mut failures = 0;
        let mut first_failure = None;
        let mut text = String::new();
        // The engine's own phases of each click, read from its result, and what the call took besides them: the
        // MCP client's stdio, the MCP server, the broker hop, leases, policy and journal.
        let mut phases = Vec::with_capacity(runs);
        let mut outside = Vec::with_capacity(runs);
        for _ in 0..runs.max(1) {
            let started = Instant::now();
            let (result, failed) = self.call("browser_act", arguments.clone()).await?;
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            ms_runs.push(ms);
            if let Some(t) = engine_timings(&result) {
                outside.push(ms - engine_ms(&t));
                phases.push(t);
            }
            if failed || !click_held(&result) {
                failures += 1;
                first_failure.get_or_insert_with(|| result.chars().take(400).collect::<String>());
            }
            text = result;
        }
        if failures == ms_runs.len() {
            return Err(Self::page_error(
                url,
                format!("every click failed; first: {}", first_failure.unwrap_or_default()),
            ));
        }
        if let Some(failure) = first_failure {
            eprintln!("browserd-bench: {NAME}: {failures} of {runs} clicks failed on {url}; first: {failure}");
        }
        let phases_p50_ms = (!phases.is_empty()).then(|| {
            let mut p50 = crate::browserd::phase_medians(&phases);
            if let Some(s) = crate::stats::Summary::of(&outside) {
                p50.insert("outsideEngine".to_owned(), s.p50_ms);
            }
            p50
        });
        Ok(Observation { text, content: None, ms_runs, omitted_nodes: None, failures, phases_p50_ms })
    }
}

/// The engine's own phases of an action, from the `timings` of a `browser_act` result.
fn engine_timings(text: &str) -> Option<browserd_protocol::PhaseTimings> {
    let result = serde_json::from_str::<Value>(text).ok()?;
    serde_json::from_value(result.get("timings")?.clone()).ok()
}

/// The time the engine spent on an action, all phases together.
fn engine_ms(t: &browserd_protocol::PhaseTimings) -> f64 {
    [t.queue, t.resolve, t.actionability, t.dispatch, t.wait, t.observe, t.serialize].iter().sum()
}

/// Whether a `browser_act` result says the click succeeded, was observed and its expectation passed.
fn click_held(text: &str) -> bool {
    let Ok(result) = serde_json::from_str::<browserd_protocol::ActionResult>(text) else { return false };
    result.outcome == browserd_protocol::Outcome::Succeeded
        && result.postcondition == browserd_protocol::Postcondition::Passed
        && result.dispatch == browserd_protocol::Dispatch::Observed
}

/// `browserd ARGS…` in the scratch home, with nothing of the caller's environment but `PATH`.
fn command(options: &BrowserdMcpOptions, root: &tempfile::TempDir, args: &[&str]) -> Command {
    let mut command = Command::new(&options.browserd);
    command
        .args(args)
        .env_clear()
        .current_dir(root.path().join("home"))
        .env("HOME", root.path().join("home"))
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("XDG_RUNTIME_DIR", root.path().join("run"))
        .env("BROWSERD_CHROMIUM", &options.chromium);
    command
}

#[async_trait]
impl Observer for BrowserdMcp {
    fn name(&self) -> &str {
        NAME
    }

    async fn observe(&mut self, url: &str, runs: usize) -> Result<Observation, ObserverError> {
        let tab = self.open(url).await?;
        let result = self.observe_open(url, &tab, runs).await;
        self.close_tab(&tab).await;
        result
    }

    async fn click(&mut self, url: &str, role: &str, name: &str, runs: usize) -> Result<Observation, ObserverError> {
        let tab = self.open(url).await?;
        let result = self.click_open(url, &tab, role, name, runs).await;
        self.close_tab(&tab).await;
        result
    }

    fn addressable(&self, text: &str) -> Vec<Addressable> {
        parse_refs(text)
    }

    async fn close(mut self: Box<Self>) {
        drop(self.stdin.take());
        if tokio::time::timeout(Duration::from_secs(15), self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
        let stopped = command(&self.options, &self.root, &["broker", "stop"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = tokio::time::timeout(Duration::from_secs(30), stopped).await;
        // The browser may still write its profile (session files) for a moment after `broker stop` answers: remove
        // the scratch home until it stays gone.
        for _ in 0..20 {
            let _ = std::fs::remove_dir_all(self.root.path());
            tokio::time::sleep(Duration::from_millis(300)).await;
            if !self.root.path().exists() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_click_holds_only_when_it_succeeded_was_observed_and_its_expectation_passed() {
        // A real `browser_act` result of the bench's click on `/toast.html`.
        let held = r#"{"dispatch":"observed","effects":{"announced":["Saved successfully"],"changed":["Saves: 3"],"focused":"e2 button \"Save\" focused"},"expectations":[{"detail":"states: focused","index":0,"passed":true}],"outcome":"succeeded","postcondition":"passed","timings":{"actionability":1.2,"dispatch":3.5,"observe":4.7,"queue":0.0,"resolve":1.4,"serialize":0.1,"wait":18.0},"traceId":"s1-22"}"#;
        assert!(click_held(held));
        assert!(!click_held(&held.replace("\"postcondition\":\"passed\"", "\"postcondition\":\"failed\"")));
        assert!(!click_held(&held.replace("\"dispatch\":\"observed\"", "\"dispatch\":\"dispatched\"")));
        assert!(!click_held("ACTION_FAILED: the target is covered; observe again"));
        // Its phases, whose sum the call's time is compared with (`outsideEngine`).
        let t = engine_timings(held).expect("timings");
        assert_eq!((t.wait, t.dispatch), (18.0, 3.5));
        assert!((engine_ms(&t) - 28.9).abs() < 1e-9, "{}", engine_ms(&t));
        assert!(engine_timings("ACTION_FAILED: no JSON").is_none());
    }
}
