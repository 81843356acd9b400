//! The Playwright MCP observer: drives `bench/playwright-mcp/snapshot.mjs` (Playwright MCP over stdio, pointed at
//! Debian's Chromium), one JSON line per request, and parses its aria-snapshot refs. Each page is observed in a
//! fresh Playwright MCP session, so every page's refs are numbered as on a session's first page (`e12`, not `f9e12`)
//! and the numbers do not depend on the order of pages.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::observer::{Addressable, Observation, Observer, ObserverError};

const NAME: &str = "playwright-mcp";

/// Where and how to run Playwright MCP.
#[derive(Debug, Clone)]
pub struct PlaywrightOptions {
    /// The `bench/playwright-mcp` package directory.
    pub dir: PathBuf,
    /// The Chromium executable Playwright MCP must use (it never downloads its own).
    pub chromium: PathBuf,
    /// The Node.js executable.
    pub node: String,
    /// Deadline for one page (navigation plus all timed snapshots).
    pub page_timeout: Duration,
}

impl PlaywrightOptions {
    /// The package next to this crate in the repository, Debian's Chromium (or `BROWSERD_CHROMIUM`), `node`.
    pub fn from_env() -> PlaywrightOptions {
        let dir = std::env::var_os("BROWSERD_BENCH_PLAYWRIGHT_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/playwright-mcp"));
        let dir = dir.canonicalize().unwrap_or(dir);
        let chromium = std::env::var_os("BROWSERD_CHROMIUM")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/usr/lib/chromium/chromium"));
        PlaywrightOptions { dir, chromium, node: "node".into(), page_timeout: Duration::from_secs(180) }
    }
}

/// The Playwright MCP observer.
#[derive(Debug)]
pub struct PlaywrightMcp {
    options: PlaywrightOptions,
    session: Option<Session>,
}

/// One running `snapshot.mjs --stdin` process (one Playwright MCP server and its browser).
#[derive(Debug)]
struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

fn start_error(reason: impl Into<String>) -> ObserverError {
    ObserverError::Start { observer: NAME.into(), reason: reason.into() }
}

/// Runs `npm ci` in `dir` when its `node_modules` lacks Playwright MCP. Progress goes to stderr; stdout stays JSON.
pub async fn ensure_installed(dir: &Path) -> Result<(), ObserverError> {
    if !dir.join("package.json").is_file() {
        return Err(start_error(format!(
            "no package.json in {}; pass --playwright-dir or set BROWSERD_BENCH_PLAYWRIGHT_DIR",
            dir.display()
        )));
    }
    if dir.join("node_modules/@playwright/mcp/package.json").is_file()
        && dir.join("node_modules/@modelcontextprotocol/sdk/package.json").is_file()
    {
        return Ok(());
    }
    eprintln!("browserd-bench: installing Playwright MCP with `npm ci` in {} (no browser download)…", dir.display());
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(dir)
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .stdin(Stdio::null())
        .stdout(std::io::stderr())
        .stderr(std::io::stderr())
        .status()
        .await
        .map_err(|e| start_error(format!("cannot run npm ({e}); install Node.js 18+ and npm")))?;
    if !status.success() {
        return Err(start_error(format!("`npm ci` in {} failed ({status}); see its output above", dir.display())));
    }
    eprintln!("browserd-bench: Playwright MCP installed");
    Ok(())
}

impl PlaywrightMcp {
    /// Checks Chromium, installs the package if needed and starts a first Playwright MCP session.
    pub async fn start(options: &PlaywrightOptions) -> Result<PlaywrightMcp, ObserverError> {
        if !options.chromium.is_file() {
            return Err(start_error(format!(
                "no Chromium at {}; install Debian's chromium (apt-get install chromium) or set BROWSERD_CHROMIUM",
                options.chromium.display()
            )));
        }
        ensure_installed(&options.dir).await?;
        eprintln!("browserd-bench: starting Playwright MCP sessions ({})", options.chromium.display());
        let session = Session::start(options)?;
        Ok(PlaywrightMcp { options: options.clone(), session: Some(session) })
    }
}

impl Session {
    fn start(options: &PlaywrightOptions) -> Result<Session, ObserverError> {
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
            .map_err(|e| start_error(format!("cannot run `{}` ({e}); install Node.js 18+", options.node)))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(start_error("the node process has no stdio pipes"));
        };
        Ok(Session { child, stdin, stdout: BufReader::new(stdout).lines() })
    }

    async fn close(self) {
        // Closing stdin (dropping it: a pipe's `shutdown` does not close it) ends snapshot.mjs's request loop; it
        // then closes Playwright MCP and its browser.
        let Session { mut child, stdin, stdout } = self;
        drop(stdin);
        drop(stdout);
        if tokio::time::timeout(Duration::from_secs(15), child.wait()).await.is_err() {
            eprintln!("browserd-bench: Playwright MCP did not exit within 15 s of closing its input; killing it");
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
        let gone = |reason: String| ObserverError::Gone { observer: NAME.into(), reason };
        let page = |reason: String| ObserverError::Page { observer: NAME.into(), url: url.into(), reason };
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
        let page = |reason: &str| ObserverError::Page { observer: NAME.into(), url: url.into(), reason: reason.into() };
        let request = serde_json::json!({ "url": url, "repeat": runs.max(1) });
        let reply = self.request(url, request, page_timeout).await?;
        let text = reply.snapshot_text.ok_or_else(|| page("the answer has no snapshot_text"))?;
        if reply.ms_runs.is_empty() {
            return Err(page("the answer has no timings"));
        }
        Ok(Observation {
            text,
            content: None,
            ms_runs: reply.ms_runs,
            omitted_nodes: None,
            failures: 0,
            phases_p50_ms: None,
        })
    }

    async fn click(
        &mut self,
        url: &str,
        role: &str,
        name: &str,
        runs: usize,
        page_timeout: Duration,
    ) -> Result<Observation, ObserverError> {
        let page = |reason: &str| ObserverError::Page { observer: NAME.into(), url: url.into(), reason: reason.into() };
        let request = serde_json::json!({ "url": url, "repeat": runs.max(1), "click": { "role": role, "name": name } });
        let reply = self.request(url, request, page_timeout).await?;
        let text = reply.click_text.ok_or_else(|| page("the answer has no click_text"))?;
        if reply.click_ms_runs.is_empty() {
            return Err(page("the answer has no click timings"));
        }
        Ok(Observation {
            text,
            content: None,
            ms_runs: reply.click_ms_runs,
            omitted_nodes: None,
            failures: 0,
            phases_p50_ms: None,
        })
    }
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
impl Observer for PlaywrightMcp {
    fn name(&self) -> &str {
        NAME
    }

    async fn observe(&mut self, url: &str, runs: usize) -> Result<Observation, ObserverError> {
        // A fresh session per page; the first one was started (and checked) by `start`.
        let mut session = match self.session.take() {
            Some(session) => session,
            None => Session::start(&self.options)?,
        };
        let result = session.observe(url, runs, self.options.page_timeout).await;
        session.close().await;
        result
    }

    async fn click(&mut self, url: &str, role: &str, name: &str, runs: usize) -> Result<Observation, ObserverError> {
        let mut session = match self.session.take() {
            Some(session) => session,
            None => Session::start(&self.options)?,
        };
        let result = session.click(url, role, name, runs, self.options.page_timeout).await;
        session.close().await;
        result
    }

    fn addressable(&self, text: &str) -> Vec<Addressable> {
        parse_refs(text)
    }

    async fn close(mut self: Box<Self>) {
        if let Some(session) = self.session.take() {
            session.close().await;
        }
    }
}

/// The elements of a Playwright aria snapshot that carry a `[ref=…]`, with their role and name.
/// Lines look like `- button "Delete" [ref=e9]`, `- link "Settings" [ref=e25] [cursor=pointer]:` or
/// `- generic [ref=e3]: text`.
pub fn parse_refs(text: &str) -> Vec<Addressable> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix("- ") else { continue };
        // YAML single-quotes an entry that contains `: `, e.g. `- 'heading "Section 1: Orders" [ref=e24]'`.
        let unquoted;
        let rest = match rest.strip_prefix('\'') {
            Some(quoted) => match yaml_single_quoted(quoted) {
                Some(inner) => {
                    unquoted = inner;
                    unquoted.as_str()
                }
                None => continue,
            },
            None => rest,
        };
        let role_len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')).unwrap_or(rest.len());
        if role_len == 0 {
            continue;
        }
        let role = &rest[..role_len];
        let after = &rest[role_len..];
        let (name, attrs) = match after.strip_prefix(" \"") {
            Some(quoted) => match json_string_prefix(quoted) {
                Some((name, used)) => (name, &quoted[used..]),
                None => continue,
            },
            None => (String::new(), after),
        };
        // Attributes come before the `:` that opens children or inline text.
        let (attrs, inline) = match attrs.split_once(": ") {
            Some((attrs, inline)) => (attrs, Some(inline.trim())),
            None => (attrs, None),
        };
        if attrs.contains("[ref=") {
            // An element without a name is known by its inline text (`- generic [ref=e5]: Open the card`).
            let name = match (name.is_empty(), inline) {
                (true, Some(text)) => match text.strip_prefix('"') {
                    Some(quoted) => json_string_prefix(quoted).map(|(t, _)| t).unwrap_or_default(),
                    None => text.to_owned(),
                },
                _ => name,
            };
            out.push(Addressable { role: role.to_owned(), name });
        }
    }
    out
}

/// The content of a YAML single-quoted scalar whose opening quote was just consumed (`''` stands for `'`).
fn yaml_single_quoted(s: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            if chars.peek() == Some(&'\'') {
                chars.next();
                out.push('\'');
            } else {
                return Some(out);
            }
        } else {
            out.push(c);
        }
    }
    None
}

/// Decodes the JSON string whose opening quote was just consumed; returns it and the bytes used (closing quote
/// included).
fn json_string_prefix(s: &str) -> Option<(String, usize)> {
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '"') => {
                let name = serde_json::from_str::<String>(&format!("\"{}\"", &s[..i])).ok()?;
                return Some((name, i + 1));
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(role: &str, name: &str) -> Addressable {
        Addressable { role: role.into(), name: name.into() }
    }

    #[test]
    fn parses_refs_roles_and_names() {
        let text = "### Snapshot\n```yaml\n- generic [active] [ref=e1]:\n  - heading \"Duplicate names\" [level=1] [ref=e2]\n\
                    \x20 - list [ref=e7]:\n    - listitem [ref=e8]:\n      - text: Invoice 1042\n\
                    \x20     - button \"Delete\" [ref=e9]\n  - link \"Say \\\"hi\\\"\" [ref=f1e25] [cursor=pointer]:\n\
                    \x20   - /url: \"#settings-panel\"\n  - option \"China\"\n  - paragraph: \"not [ref=e99] here\"\n\
                    \x20 - 'heading \"Section 1: Orders\" [level=2] [ref=e24]'\n\
                    \x20 - 'button \"It''s: ok\" [ref=e25]':\n\
                    \x20 - generic [ref=e26] [cursor=pointer]: Open the card\n\
                    \x20 - generic [ref=e27]: \"Terms: read\"\n```";
        assert_eq!(
            parse_refs(text),
            vec![
                a("generic", ""),
                a("heading", "Duplicate names"),
                a("list", ""),
                a("listitem", ""),
                a("button", "Delete"),
                a("link", "Say \"hi\""),
                a("heading", "Section 1: Orders"),
                a("button", "It's: ok"),
                a("generic", "Open the card"),
                a("generic", "Terms: read"),
            ]
        );
    }
}
