//! An MCP server driven through a Node.js helper script (`bench/<tool>/snapshot.mjs --stdin`): one JSON line per
//! request (`{"url", "repeat"}` or `{"url", "repeat", "click": {"role", "name"}}`), one JSON line per answer. Playwright
//! MCP and chrome-devtools-mcp are observed this way; each is a [`NodeTool`]. Each page is observed in a fresh session
//! (a fresh MCP server and browser), so every page's refs are numbered as on a session's first page.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::observer::{Addressable, Observation, Observer, ObserverError};

/// One Node.js MCP server under benchmark: its package directory and how to read its refs.
#[derive(Debug)]
pub struct NodeTool {
    /// The observer's name in the rows, e.g. `playwright-mcp`.
    pub name: &'static str,
    /// Its human name in messages, e.g. `Playwright MCP`.
    pub label: &'static str,
    /// The environment variable that overrides the package directory.
    pub dir_env: &'static str,
    /// The package directory relative to the repository root, e.g. `bench/playwright-mcp`.
    pub default_dir: &'static str,
    /// Packages (`node_modules/<name>/package.json`) whose presence means `npm ci` already ran.
    pub modules: &'static [&'static str],
    /// The package whose installed version the machine row names.
    pub version_of: &'static str,
    /// The elements an observation text of this tool gives a ref to.
    pub refs: fn(&str) -> Vec<Addressable>,
}

/// Where and how to run a [`NodeTool`].
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// The tool's package directory.
    pub dir: PathBuf,
    /// The Chromium executable the tool must use (it never downloads its own).
    pub chromium: PathBuf,
    /// The Node.js executable.
    pub node: String,
    /// Deadline for one page (navigation plus all timed snapshots).
    pub page_timeout: Duration,
}

/// Debian's Chromium, or `BROWSERD_CHROMIUM`.
pub fn chromium_from_env() -> PathBuf {
    std::env::var_os("BROWSERD_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/lib/chromium/chromium"))
}

impl NodeOptions {
    /// The tool's package in the repository (or its `dir_env`), Debian's Chromium (or `BROWSERD_CHROMIUM`), `node`.
    pub fn from_env(tool: &NodeTool) -> NodeOptions {
        let dir = std::env::var_os(tool.dir_env)
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(tool.default_dir));
        let dir = dir.canonicalize().unwrap_or(dir);
        NodeOptions { dir, chromium: chromium_from_env(), node: "node".into(), page_timeout: Duration::from_secs(180) }
    }
}

/// The installed version of the tool's `version_of` package in `dir`, or `not installed yet`.
pub fn installed_version(tool: &NodeTool, dir: &Path) -> String {
    std::fs::read_to_string(dir.join("node_modules").join(tool.version_of).join("package.json"))
        .ok()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
        .and_then(|v| v["version"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "not installed yet".into())
}

/// A running tool: one session at a time.
#[derive(Debug)]
pub struct NodeMcp {
    tool: &'static NodeTool,
    options: NodeOptions,
    session: Option<Session>,
}

/// One running `snapshot.mjs --stdin` process (one MCP server and its browser).
#[derive(Debug)]
struct Session {
    tool: &'static NodeTool,
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

fn start_error(tool: &NodeTool, reason: impl Into<String>) -> ObserverError {
    ObserverError::Start { observer: tool.name.into(), reason: reason.into() }
}

/// Runs `npm ci` in `dir` when its `node_modules` lacks the tool. Progress goes to stderr; stdout stays JSON.
pub async fn ensure_installed(tool: &NodeTool, dir: &Path) -> Result<(), ObserverError> {
    if !dir.join("package.json").is_file() {
        return Err(start_error(
            tool,
            format!("no package.json in {}; set {} to the tool's package directory", dir.display(), tool.dir_env),
        ));
    }
    if tool.modules.iter().all(|m| dir.join("node_modules").join(m).join("package.json").is_file()) {
        return Ok(());
    }
    eprintln!("browserd-bench: installing {} with `npm ci` in {} (no browser download)…", tool.label, dir.display());
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(dir)
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .env("PUPPETEER_SKIP_DOWNLOAD", "1")
        .stdin(Stdio::null())
        .stdout(std::io::stderr())
        .stderr(std::io::stderr())
        .status()
        .await
        .map_err(|e| start_error(tool, format!("cannot run npm ({e}); install Node.js 20+ and npm")))?;
    if !status.success() {
        return Err(start_error(
            tool,
            format!("`npm ci` in {} failed ({status}); see its output above", dir.display()),
        ));
    }
    eprintln!("browserd-bench: {} installed", tool.label);
    Ok(())
}

impl NodeMcp {
    /// Checks Chromium, installs the package if needed and starts a first session.
    pub async fn start(tool: &'static NodeTool, options: &NodeOptions) -> Result<NodeMcp, ObserverError> {
        if !options.chromium.is_file() {
            return Err(start_error(
                tool,
                format!(
                    "no Chromium at {}; install Debian's chromium (apt-get install chromium) or set BROWSERD_CHROMIUM",
                    options.chromium.display()
                ),
            ));
        }
        ensure_installed(tool, &options.dir).await?;
        eprintln!("browserd-bench: starting {} sessions ({})", tool.label, options.chromium.display());
        let session = Session::start(tool, options)?;
        Ok(NodeMcp { tool, options: options.clone(), session: Some(session) })
    }

    fn session(&mut self) -> Result<Session, ObserverError> {
        match self.session.take() {
            Some(session) => Ok(session),
            None => Session::start(self.tool, &self.options),
        }
    }
}

impl Session {
    fn start(tool: &'static NodeTool, options: &NodeOptions) -> Result<Session, ObserverError> {
        let mut child = Command::new(&options.node)
            .arg(options.dir.join("snapshot.mjs"))
            .arg("--stdin")
            .arg("--executable-path")
            .arg(&options.chromium)
            .current_dir(&options.dir)
            .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::io::stderr())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| start_error(tool, format!("cannot run `{}` ({e}); install Node.js 20+", options.node)))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(start_error(tool, "the node process has no stdio pipes"));
        };
        Ok(Session { tool, child, stdin, stdout: BufReader::new(stdout).lines() })
    }

    async fn close(self) {
        // Closing stdin (dropping it: a pipe's `shutdown` does not close it) ends snapshot.mjs's request loop; it
        // then closes the MCP server and its browser.
        let Session { tool, mut child, stdin, stdout } = self;
        drop(stdin);
        drop(stdout);
        if tokio::time::timeout(Duration::from_secs(15), child.wait()).await.is_err() {
            eprintln!("browserd-bench: {} did not exit within 15 s of closing its input; killing it", tool.label);
            let _ = child.kill().await;
        }
    }

    /// Sends one request line and reads its answer line.
    async fn request(
        &mut self,
        url: &str,
        request: serde_json::Value,
        page_timeout: Duration,
    ) -> Result<Reply, ObserverError> {
        let name = self.tool.name;
        let gone = |reason: String| ObserverError::Gone { observer: name.into(), reason };
        let page = |reason: String| ObserverError::Page { observer: name.into(), url: url.into(), reason };
        let request = request.to_string() + "\n";
        self.stdin.write_all(request.as_bytes()).await.map_err(|e| gone(format!("writing the request: {e}")))?;
        self.stdin.flush().await.map_err(|e| gone(format!("writing the request: {e}")))?;
        let line = tokio::time::timeout(page_timeout, self.stdout.next_line())
            .await
            .map_err(|_| page(format!("no answer within {page_timeout:?}")))?
            .map_err(|e| gone(format!("reading the answer: {e}")))?
            .ok_or_else(|| gone("snapshot.mjs exited; see its stderr above".into()))?;
        let reply: Reply = serde_json::from_str(&line).map_err(|e| gone(format!("unparsable answer ({e}): {line}")))?;
        if reply.url != url {
            return Err(gone(format!("answer for {} while waiting for {url}", reply.url)));
        }
        if let Some(error) = &reply.error {
            return Err(page(error.clone()));
        }
        Ok(reply)
    }

    async fn observe(&mut self, url: &str, runs: usize, page_timeout: Duration) -> Result<Observation, ObserverError> {
        let name = self.tool.name;
        let page = |reason: &str| ObserverError::Page { observer: name.into(), url: url.into(), reason: reason.into() };
        let request = serde_json::json!({ "url": url, "repeat": runs.max(1) });
        let reply = self.request(url, request, page_timeout).await?;
        let text = reply.snapshot_text.ok_or_else(|| page("the answer has no snapshot_text"))?;
        if reply.ms_runs.is_empty() {
            return Err(page("the answer has no timings"));
        }
        Ok(observation(text, reply.ms_runs))
    }

    async fn click(
        &mut self,
        url: &str,
        role: &str,
        name: &str,
        runs: usize,
        page_timeout: Duration,
    ) -> Result<Observation, ObserverError> {
        let observer = self.tool.name;
        let page =
            |reason: &str| ObserverError::Page { observer: observer.into(), url: url.into(), reason: reason.into() };
        let request = serde_json::json!({ "url": url, "repeat": runs.max(1), "click": { "role": role, "name": name } });
        let reply = self.request(url, request, page_timeout).await?;
        let text = reply.click_text.ok_or_else(|| page("the answer has no click_text"))?;
        if reply.click_ms_runs.is_empty() {
            return Err(page("the answer has no click timings"));
        }
        Ok(observation(text, reply.click_ms_runs))
    }
}

fn observation(text: String, ms_runs: Vec<f64>) -> Observation {
    Observation { text, content: None, ms_runs, omitted_nodes: None, failures: 0, phases_p50_ms: None }
}

#[derive(Debug, Deserialize)]
struct Reply {
    url: String,
    #[serde(default)]
    snapshot_text: Option<String>,
    #[serde(default)]
    ms_runs: Vec<f64>,
    #[serde(default)]
    click_text: Option<String>,
    #[serde(default)]
    click_ms_runs: Vec<f64>,
    #[serde(default)]
    error: Option<String>,
}

#[async_trait]
impl Observer for NodeMcp {
    fn name(&self) -> &str {
        self.tool.name
    }

    async fn observe(&mut self, url: &str, runs: usize) -> Result<Observation, ObserverError> {
        // A fresh session per page; the first one was started (and checked) by `start`.
        let mut session = self.session()?;
        let result = session.observe(url, runs, self.options.page_timeout).await;
        session.close().await;
        result
    }

    async fn click(&mut self, url: &str, role: &str, name: &str, runs: usize) -> Result<Observation, ObserverError> {
        let mut session = self.session()?;
        let result = session.click(url, role, name, runs, self.options.page_timeout).await;
        session.close().await;
        result
    }

    fn addressable(&self, text: &str) -> Vec<Addressable> {
        (self.tool.refs)(text)
    }

    async fn close(mut self: Box<Self>) {
        if let Some(session) = self.session.take() {
            session.close().await;
        }
    }
}
