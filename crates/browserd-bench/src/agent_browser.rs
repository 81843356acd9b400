//! agent-browser (Vercel's browser CLI for agents, pinned in `bench/agent-browser`) as a benchmark observer, driven
//! the way its own guide tells an agent to drive it: one CLI command per step (`open <url>`, `snapshot -i`, `click
//! @eN`), each a process of its native binary talking to the session's daemon, which keeps the browser (Debian's
//! Chromium through `AGENT_BROWSER_EXECUTABLE_PATH`, `--no-sandbox`) between commands. A timed call is the wall time
//! of one command, process start to exit, as an agent's shell tool waits for it. Each page gets a session (a daemon
//! and a browser) of its own, closed after the page, so every page's refs are numbered as on a session's first page.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::process::Command;

use crate::browserd::{COLD_PAUSE, PageChange, change_script};
use crate::node_mcp::{NodeTool, chromium_from_env};
use crate::observer::{Addressable, Observation, Observer, ObserverError};

/// agent-browser's package, pinned in `bench/agent-browser/package.json` (installed by `npm ci` like the MCP servers;
/// its native binary ships in the package, nothing is downloaded).
pub static AGENT_BROWSER: NodeTool = NodeTool {
    name: "agent-browser",
    label: "agent-browser",
    dir_env: "BROWSERD_BENCH_AGENT_BROWSER_DIR",
    default_dir: "bench/agent-browser",
    modules: &["agent-browser"],
    version_of: "agent-browser",
    refs: parse_refs,
};

/// Which snapshot the observer takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotForm {
    /// `snapshot -i`: interactive elements only, the form agent-browser's guide prefers for agents.
    Interactive,
    /// `snapshot`: the full tree, text included.
    Full,
}

/// Where and how to run agent-browser.
#[derive(Debug, Clone)]
pub struct AgentBrowserOptions {
    /// The `bench/agent-browser` package directory.
    pub dir: PathBuf,
    /// The Chromium executable agent-browser launches.
    pub chromium: PathBuf,
    /// Deadline of one CLI command.
    pub command_timeout: Duration,
    /// The snapshot taken.
    pub form: SnapshotForm,
    /// How the page is changed (untimed) before every timed snapshot.
    pub change: PageChange,
}

impl AgentBrowserOptions {
    /// The package in the repository (or `BROWSERD_BENCH_AGENT_BROWSER_DIR`), Debian's Chromium (or
    /// `BROWSERD_CHROMIUM`), `snapshot -i`, an unchanged page.
    pub fn from_env() -> AgentBrowserOptions {
        let dir = crate::node_mcp::NodeOptions::from_env(&AGENT_BROWSER).dir;
        AgentBrowserOptions {
            dir,
            chromium: chromium_from_env(),
            command_timeout: Duration::from_secs(60),
            form: SnapshotForm::Interactive,
            change: PageChange::None,
        }
    }

    /// The observer's name in the rows.
    pub fn observer_name(&self) -> &'static str {
        match (self.form, self.change) {
            (SnapshotForm::Full, _) => "agent-browser-full",
            (_, PageChange::Small) => "agent-browser-changed",
            (_, PageChange::Whole) => "agent-browser-cold",
            (_, PageChange::None) => "agent-browser",
        }
    }
}

/// A running agent-browser observer: a scratch home for its daemons' sockets and state, one session per page.
#[derive(Debug)]
pub struct AgentBrowser {
    name: &'static str,
    options: AgentBrowserOptions,
    binary: PathBuf,
    scratch: tempfile::TempDir,
    sessions: usize,
}

/// The native binary the package ships for this machine (what a global install links `agent-browser` to).
fn native_binary(dir: &Path) -> Option<PathBuf> {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        _ => return None,
    };
    let os = match std::env::consts::OS {
        "linux" => "linux",
        "macos" => "darwin",
        _ => return None,
    };
    Some(dir.join("node_modules/agent-browser/bin").join(format!("agent-browser-{os}-{arch}")))
}

/// One finished CLI command.
struct Output {
    stdout: String,
    ms: f64,
}

impl AgentBrowser {
    /// Checks Chromium, installs the package if needed (`npm ci`) and runs one `open` and `close` to see the CLI work.
    pub async fn start(options: &AgentBrowserOptions) -> Result<AgentBrowser, ObserverError> {
        let name = options.observer_name();
        let start_error = |reason: String| ObserverError::Start { observer: name.into(), reason };
        if !options.chromium.is_file() {
            return Err(start_error(format!(
                "no Chromium at {}; install Debian's chromium (apt-get install chromium) or set BROWSERD_CHROMIUM",
                options.chromium.display()
            )));
        }
        crate::node_mcp::ensure_installed(&AGENT_BROWSER, &options.dir)
            .await
            .map_err(|e| start_error(e.to_string()))?;
        let binary = native_binary(&options.dir).filter(|b| b.is_file()).ok_or_else(|| {
            start_error(format!(
                "no agent-browser binary for this machine in {}/node_modules/agent-browser/bin; run `npm ci` there",
                options.dir.display()
            ))
        })?;
        make_executable(&binary)
            .map_err(|e| start_error(format!("cannot make {} executable: {e}", binary.display())))?;
        let scratch = tempfile::Builder::new()
            .prefix("browserd-bench-agent-browser-")
            .tempdir()
            .map_err(|e| start_error(format!("cannot create a scratch directory: {e}")))?;
        for dir in ["home", "sockets", "xdg-config", "xdg-cache", "run"] {
            std::fs::create_dir_all(scratch.path().join(dir))
                .map_err(|e| start_error(format!("cannot create a scratch directory: {e}")))?;
        }
        eprintln!("browserd-bench: starting {name} sessions ({}, {})", binary.display(), options.chromium.display());
        Ok(AgentBrowser { name, options: options.clone(), binary, scratch, sessions: 0 })
    }

    fn page_error(&self, url: &str, reason: impl Into<String>) -> ObserverError {
        ObserverError::Page { observer: self.name.into(), url: url.into(), reason: reason.into() }
    }

    /// Runs `agent-browser --session SESSION ARGS…` to its exit; a failure names the command and its output.
    async fn run(&self, url: &str, session: &str, args: &[&str]) -> Result<Output, ObserverError> {
        let scratch = self.scratch.path();
        let mut command = Command::new(&self.binary);
        command.arg("--session").arg(session).args(args);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("AGENT_BROWSER_") {
                command.env_remove(key);
            }
        }
        command
            .env("HOME", scratch.join("home"))
            .env("XDG_CONFIG_HOME", scratch.join("xdg-config"))
            .env("XDG_CACHE_HOME", scratch.join("xdg-cache"))
            .env("XDG_RUNTIME_DIR", scratch.join("run"))
            .env("AGENT_BROWSER_SOCKET_DIR", scratch.join("sockets"))
            .env("AGENT_BROWSER_EXECUTABLE_PATH", &self.options.chromium)
            .env("AGENT_BROWSER_ARGS", "--no-sandbox")
            .env("AGENT_BROWSER_NO_VERSION_CHECK", "1")
            // A daemon the bench failed to close ends by itself.
            .env("AGENT_BROWSER_IDLE_TIMEOUT_MS", "300000")
            .current_dir(scratch)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let started = Instant::now();
        let child =
            command.spawn().map_err(|e| self.page_error(url, format!("cannot run {}: {e}", self.binary.display())))?;
        let output = tokio::time::timeout(self.options.command_timeout, child.wait_with_output())
            .await
            .map_err(|_| {
                self.page_error(
                    url,
                    format!(
                        "`agent-browser {}` gave no answer within {:?}",
                        args.join(" "),
                        self.options.command_timeout
                    ),
                )
            })?
            .map_err(|e| self.page_error(url, format!("`agent-browser {}`: {e}", args.join(" "))))?;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let tail = |s: &str| s.chars().rev().take(600).collect::<Vec<_>>().into_iter().rev().collect::<String>();
            return Err(self.page_error(
                url,
                format!(
                    "`agent-browser {}` exited with {}: {} {}",
                    args.join(" "),
                    output.status,
                    tail(stdout.trim()),
                    tail(stderr.trim())
                ),
            ));
        }
        Ok(Output { stdout, ms })
    }

    /// A new session with `url` open in it (untimed).
    async fn open(&mut self, url: &str) -> Result<String, ObserverError> {
        self.sessions += 1;
        let session = format!("bench{}", self.sessions);
        self.run(url, &session, &["open", url]).await?;
        Ok(session)
    }

    /// Closes a session's browser and daemon; a daemon that does not close is killed by its pid file.
    async fn close_session(&self, session: &str) {
        if self.run("-", session, &["close"]).await.is_ok() {
            return;
        }
        let pid_file = self.scratch.path().join("sockets").join(format!("{session}.pid"));
        if let Some(pid) = std::fs::read_to_string(&pid_file).ok().and_then(|s| s.trim().parse::<u32>().ok()) {
            eprintln!("browserd-bench: {}: session {session} did not close; killing its daemon {pid}", self.name);
            let _ = Command::new("kill").arg(pid.to_string()).status().await;
        }
    }

    fn snapshot_args(&self) -> &'static [&'static str] {
        match self.options.form {
            SnapshotForm::Interactive => &["snapshot", "-i"],
            SnapshotForm::Full => &["snapshot"],
        }
    }

    async fn observe_open(&self, url: &str, session: &str, runs: usize) -> Result<Observation, ObserverError> {
        let mut ms_runs = Vec::with_capacity(runs);
        let mut text = String::new();
        for run in 0..runs.max(1) {
            if let Some(script) = change_script(self.options.change, run) {
                tokio::time::sleep(COLD_PAUSE).await;
                self.run(url, session, &["eval", &script]).await?;
            }
            let output = self.run(url, session, self.snapshot_args()).await?;
            ms_runs.push(output.ms);
            text = output.stdout;
        }
        Ok(observation(text, ms_runs, 0))
    }

    async fn click_open(
        &self,
        url: &str,
        session: &str,
        role: &str,
        name: &str,
        runs: usize,
    ) -> Result<Observation, ObserverError> {
        let snapshot = self.run(url, session, &["snapshot", "-i"]).await?;
        let target = find_ref(&snapshot.stdout, role, name)
            .ok_or_else(|| self.page_error(url, format!("no {role} {name:?} with a ref in the snapshot")))?;
        let target = format!("@{target}");
        let mut ms_runs = Vec::with_capacity(runs);
        let mut failures = 0;
        let mut first_failure = None;
        let mut text = String::new();
        for _ in 0..runs.max(1) {
            let started = Instant::now();
            match self.run(url, session, &["click", &target]).await {
                Ok(output) => {
                    ms_runs.push(output.ms);
                    text = output.stdout;
                }
                Err(e) => {
                    ms_runs.push(started.elapsed().as_secs_f64() * 1000.0);
                    failures += 1;
                    first_failure.get_or_insert_with(|| e.to_string());
                }
            }
        }
        if failures == ms_runs.len() {
            return Err(
                self.page_error(url, format!("every click failed; first: {}", first_failure.unwrap_or_default()))
            );
        }
        if let Some(failure) = first_failure {
            eprintln!("browserd-bench: {}: {failures} of {runs} clicks failed on {url}; first: {failure}", self.name);
        }
        Ok(observation(text, ms_runs, failures))
    }
}

fn observation(text: String, ms_runs: Vec<f64>, failures: usize) -> Observation {
    Observation { text, content: None, ms_runs, omitted_nodes: None, failures, phases_p50_ms: None }
}

/// Sets the executable bits `npm ci`'s postinstall sets (an install with scripts turned off leaves them unset).
fn make_executable(binary: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut permissions = std::fs::metadata(binary)?.permissions();
    if permissions.mode() & 0o111 != 0o111 {
        permissions.set_mode(permissions.mode() | 0o755);
        std::fs::set_permissions(binary, permissions)?;
    }
    Ok(())
}

#[async_trait]
impl Observer for AgentBrowser {
    fn name(&self) -> &str {
        self.name
    }

    async fn observe(&mut self, url: &str, runs: usize) -> Result<Observation, ObserverError> {
        let session = self.open(url).await?;
        let result = self.observe_open(url, &session, runs).await;
        self.close_session(&session).await;
        result
    }

    async fn click(&mut self, url: &str, role: &str, name: &str, runs: usize) -> Result<Observation, ObserverError> {
        let session = self.open(url).await?;
        let result = self.click_open(url, &session, role, name, runs).await;
        self.close_session(&session).await;
        result
    }

    fn addressable(&self, text: &str) -> Vec<Addressable> {
        parse_refs(text)
    }

    async fn close(self: Box<Self>) {
        let _ = self.run("-", "bench0", &["close", "--all"]).await;
    }
}

/// One element line of an agent-browser snapshot: its role, name and ref, when it has a ref. Lines look like
/// `- heading "Hi" [level=1, ref=e1]`, `- generic "Card one" [ref=e3] clickable [cursor:pointer, onclick]`,
/// `- StaticText "Enter \"Ada\" into the field"` (names are JSON strings) or `- generic [ref=e3]: text`; an element
/// without a name is known by its inline text.
pub fn parse_line(line: &str) -> Option<(String, String, Option<String>)> {
    let rest = line.trim_start().strip_prefix("- ")?;
    let role_len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')).unwrap_or(rest.len());
    if role_len == 0 {
        return None;
    }
    let role = &rest[..role_len];
    let after = &rest[role_len..];
    let (name, attrs) = match after.strip_prefix(" \"") {
        Some(quoted) => {
            let (name, used) = crate::playwright::json_string_prefix(quoted)?;
            (name, &quoted[used..])
        }
        None => (String::new(), after),
    };
    let (attrs, inline) = match attrs.split_once(": ") {
        Some((attrs, inline)) => (attrs, Some(inline.trim())),
        None => (attrs, None),
    };
    let reference = attrs
        .split(['[', ']', ',', ' '])
        .find_map(|token| token.strip_prefix("ref="))
        .filter(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_alphanumeric()))
        .map(str::to_owned);
    let name = match (name.is_empty(), inline) {
        (true, Some(text)) => match text.strip_prefix('"') {
            Some(quoted) => crate::playwright::json_string_prefix(quoted).map(|(t, _)| t).unwrap_or_default(),
            None => text.to_owned(),
        },
        _ => name,
    };
    Some((role.to_owned(), name, reference))
}

/// The elements of an agent-browser snapshot that carry a ref, with their role and name.
pub fn parse_refs(text: &str) -> Vec<Addressable> {
    text.lines()
        .filter_map(parse_line)
        .filter(|(_, _, reference)| reference.is_some())
        .map(|(role, name, _)| Addressable { role, name })
        .collect()
}

/// The ref of the first element with `role` and `name` in a snapshot.
pub fn find_ref(text: &str, role: &str, name: &str) -> Option<String> {
    text.lines().filter_map(parse_line).find(|(r, n, _)| r == role && n == name).and_then(|(_, _, reference)| reference)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(role: &str, name: &str) -> Addressable {
        Addressable { role: role.into(), name: name.into() }
    }

    #[test]
    fn parses_refs_roles_and_names() {
        let text = "- heading \"Hi\" [level=1, ref=e1]\n- paragraph\n  - StaticText \"Enter \\\"Ada\\\" [ref=e9]\"\n\
                    - button \"Save\" [ref=e2]\n- generic \"Card one\" [ref=e3] clickable [cursor:pointer, onclick]\n\
                    - link \"Link\" [ref=e4]:\n  - /url: \"#x\"\n- generic [ref=e5]: Open the card\n\
                    - textbox \"Name\" [ref=e6]: Ada\n- Iframe [ref=e7]\n  - button \"Inner\" [ref=f1e2]\n";
        assert_eq!(
            parse_refs(text),
            vec![
                a("heading", "Hi"),
                a("button", "Save"),
                a("generic", "Card one"),
                a("link", "Link"),
                a("generic", "Open the card"),
                a("textbox", "Name"),
                a("Iframe", ""),
                a("button", "Inner"),
            ]
        );
        assert_eq!(find_ref(text, "button", "Save").as_deref(), Some("e2"));
        assert_eq!(find_ref(text, "button", "Inner").as_deref(), Some("f1e2"));
        assert_eq!(find_ref(text, "StaticText", "Enter \"Ada\" [ref=e9]"), None, "a name's text is not a ref");
        assert_eq!(find_ref(text, "button", "Nope"), None);
    }

    #[test]
    fn observer_names_follow_form_and_change() {
        let mut options = AgentBrowserOptions::from_env();
        assert_eq!(options.observer_name(), "agent-browser");
        options.change = PageChange::Whole;
        assert_eq!(options.observer_name(), "agent-browser-cold");
        options.change = PageChange::Small;
        assert_eq!(options.observer_name(), "agent-browser-changed");
        options.form = SnapshotForm::Full;
        assert_eq!(options.observer_name(), "agent-browser-full");
    }
}
