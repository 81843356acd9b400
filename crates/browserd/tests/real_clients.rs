//! Host configs checked with the real MCP clients, pinned in `bench/mcp-clients` (installed by `npm ci` the first
//! time, skipped while current): Claude Code's `claude mcp add` + `claude mcp list` with an isolated HOME reports
//! browserd `✔ Connected`; the MCP Inspector CLI, which starts servers with the MCP SDK's default environment (no
//! `XDG_RUNTIME_DIR`), lists the tools, and on the fixture site opens a page, observes it, fills a field and clicks a
//! button that tells the server, one call per Inspector run in one session named with `BROWSERD_HOST_SESSION_ID`
//! (each run is an MCP server of its own, which leaves the named session to the next); without a name each run is a
//! session of its own, which claims a page the user has open and is refused another's.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use browserd_fixtures::FixtureSite;
use serde_json::Value;

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/mcp-clients")
}

/// `npm ci` in `bench/mcp-clients` unless its `node_modules` matches the lockfile already (progress on stderr).
fn install_clients() -> PathBuf {
    let dir = clients_dir();
    // Tests run in parallel processes: one installs, the others wait for it.
    let guard = std::fs::File::create(dir.join(".install.lock")).unwrap();
    guard.lock().unwrap();
    let lock = std::fs::read(dir.join("package-lock.json")).expect("bench/mcp-clients/package-lock.json");
    let stamp = dir.join("node_modules/.browserd-installed-lock");
    if std::fs::read(&stamp).ok().as_deref() != Some(&lock[..]) {
        eprintln!("installing the pinned MCP clients (npm ci in {})", dir.display());
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=http"])
            .current_dir(&dir)
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .status()
            .expect("runs npm (install Node.js 20+ with npm: scripts/setup.sh)");
        assert!(status.success(), "npm ci failed in {}", dir.display());
        std::fs::write(&stamp, &lock).unwrap();
    }
    dir.join("node_modules/.bin")
}

fn uid() -> u32 {
    std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m)).unwrap()
}

struct Machine {
    root: tempfile::TempDir,
}

impl Machine {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let run = root.path().join("run/user").join(uid().to_string());
        std::fs::create_dir_all(&run).unwrap();
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::create_dir_all(root.path().join("home")).unwrap();
        Self { root }
    }
    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }
    fn run_user_base(&self) -> PathBuf {
        self.root.path().join("run/user")
    }
    /// A user's login environment (what Claude Code passes on to its servers).
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .env_clear()
            .env("HOME", self.home())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .env("SHELL", "/bin/sh")
            .env("USER", "tester")
            .env("XDG_RUNTIME_DIR", self.run_user_base().join(uid().to_string()))
            .current_dir(self.home());
        if let Some(chromium) = std::env::var_os("BROWSERD_CHROMIUM") {
            command.env("BROWSERD_CHROMIUM", chromium);
        }
        command
    }
    fn browserd(&self, args: &[&str]) -> String {
        let out = self.command(env!("CARGO_BIN_EXE_browserd")).args(args).output().unwrap();
        ok(&out, &format!("browserd {args:?}"))
    }
    /// One Inspector CLI call: `browserd mcp` under the SDK's default environment; the fake `/run/user` root is
    /// the one variable added (`-e`), so the production rule finds `<root>/<uid>`.
    fn inspector(&self, bin: &Path, args: &[&str]) -> Output {
        self.inspector_as(bin, None, args)
    }
    /// [`Self::inspector`], with the session named by `BROWSERD_HOST_SESSION_ID` (`-e`) when `session` is given.
    fn inspector_as(&self, bin: &Path, session: Option<&str>, args: &[&str]) -> Output {
        let base = format!("BROWSERD_TEST_RUN_USER_BASE={}", self.run_user_base().display());
        let mut command = self.command(bin.join("mcp-inspector"));
        command.args(["--cli", "-q", "--format", "json", "-e", &base]);
        if let Some(session) = session {
            command.args(["-e", &format!("BROWSERD_HOST_SESSION_ID={session}")]);
        }
        command.args([env!("CARGO_BIN_EXE_browserd"), "mcp"]).args(args).output().unwrap()
    }
    fn call(&self, bin: &Path, tool: &str, args: &str) -> Value {
        self.call_as(bin, None, tool, args)
    }
    fn call_as(&self, bin: &Path, session: Option<&str>, tool: &str, args: &str) -> Value {
        let call = ["--method", "tools/call", "--tool-name", tool, "--tool-args-json", args];
        let out = self.inspector_as(bin, session, &call);
        let text = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(&text)
            .unwrap_or_else(|_| panic!("{tool}: not JSON: {text}\n{}", String::from_utf8_lossy(&out.stderr)));
        v["result"].clone()
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = self.command(env!("CARGO_BIN_EXE_browserd")).args(["broker", "stop"]).output();
    }
}

fn ok(out: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({:?}): {stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn claude_code_mcp_add_and_list_reports_browserd_connected() {
    let bin = install_clients();
    let machine = Machine::new();
    let claude = bin.join("claude");
    let added = machine
        .command(&claude)
        .args(["mcp", "add", "browserd", "--", env!("CARGO_BIN_EXE_browserd"), "mcp"])
        .output()
        .unwrap();
    ok(&added, "claude mcp add");
    let listed = machine.command(&claude).args(["mcp", "list"]).output().unwrap();
    let text = ok(&listed, "claude mcp list");
    eprintln!("$ claude mcp list\n{text}");
    let line = text.lines().find(|l| l.starts_with("browserd:")).unwrap_or_else(|| panic!("no browserd line:\n{text}"));
    assert!(line.ends_with("✔ Connected"), "{line}");
}

/// The README's Codex `config.toml` snippet.
fn readme_codex_snippet() -> String {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let after = readme.split("~/.codex/config.toml").nth(1).expect("the README has a Codex config section");
    let block = after.split("```toml\n").nth(1).and_then(|b| b.split("```").next()).expect("a toml block");
    block.to_owned()
}

#[test]
fn codex_reads_the_readme_snippet_without_deprecations_and_mcp_add_writes_the_same_entry() {
    let bin = install_clients();
    let machine = Machine::new();
    let codex = bin.join("codex");
    let snippet = readme_codex_snippet();
    assert!(snippet.contains("[features]\nhooks = true"), "{snippet}");
    std::fs::create_dir_all(machine.home().join(".codex")).unwrap();
    std::fs::write(machine.home().join(".codex/config.toml"), &snippet).unwrap();
    let listed = machine.command(&codex).args(["mcp", "list", "--json"]).output().unwrap();
    let servers: Value = serde_json::from_str(&ok(&listed, "codex mcp list --json")).unwrap();
    let entry = servers.as_array().unwrap().iter().find(|s| s["name"] == "browserd").expect("browserd listed");
    assert_eq!(entry["enabled"], true, "{entry}");
    assert_eq!(
        (entry["transport"]["command"].clone(), entry["transport"]["args"].clone()),
        ("browserd".into(), serde_json::json!(["mcp"]))
    );
    let doctor = machine.command(&codex).arg("doctor").output().unwrap();
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert!(report.contains("feature flags"), "codex doctor ran: {report}");
    assert!(!report.contains("legacy alias"), "the README's keys are current: {report}");

    // `codex mcp add` in a fresh home writes the snippet's server table.
    let fresh = Machine::new();
    let added = fresh.command(&codex).args(["mcp", "add", "browserd", "--", "browserd", "mcp"]).output().unwrap();
    ok(&added, "codex mcp add");
    let written = std::fs::read_to_string(fresh.home().join(".codex/config.toml")).unwrap();
    let table = snippet.split("\n\n").next().unwrap();
    assert!(written.contains(table), "codex wrote:\n{written}\nREADME:\n{table}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_cli_lists_and_calls_the_tools_under_the_sdk_environment() {
    let bin = install_clients();
    let site = FixtureSite::start().await.unwrap();
    let page = site.url("/clickables.html");
    let machine = Machine::new();

    let listed = machine.inspector(&bin, &["--method", "tools/list", "--strict"]);
    let text = ok(&listed, "inspector tools/list --strict");
    let tools: Value = serde_json::from_str(&text).unwrap();
    let tools = tools["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 13, "the core tier");
    for tool in tools {
        assert!(tool["title"].is_string() && tool["annotations"]["readOnlyHint"].is_boolean(), "{tool}");
        assert!(tool.get("outputSchema").is_none(), "{tool}");
    }

    // browser_open with an observation, in one call.
    let opened = machine.call(&bin, "browser_open", &format!(r#"{{"url": "{page}", "observe": true}}"#));
    assert_eq!(opened["isError"], false, "{opened}");
    let content = opened["structuredContent"]["observation"]["untrustedContent"].as_str().unwrap();
    assert!(content.contains("button"), "{content}");

    // One session across Inspector calls (each is an MCP server of its own): the session named with
    // BROWSERD_HOST_SESSION_ID outlives each server by the broker's disconnect grace, and the next call takes it back.
    let named = Some("inspector-walkthrough");
    let account = site.url("/delete-account.html");
    let opened = machine.call_as(&bin, named, "browser_open", &format!(r#"{{"url": "{account}"}}"#));
    assert_eq!(opened["isError"], false, "{opened}");
    assert_eq!(opened["structuredContent"]["title"], "Account settings", "{opened}");
    let tab = opened["structuredContent"]["tab"].as_u64().unwrap();
    let observed = machine.call_as(&bin, named, "browser_observe", "{}");
    assert_eq!(observed["isError"], false, "{observed}");
    let text = observed["content"][0]["text"].as_str().unwrap();
    let field = ref_of(text, "textbox \"Display name\"");
    let save = ref_of(text, "button \"Save profile\"");
    let fill = format!(r#"{{"tab": {tab}, "action": "fill", "target": "{field}", "value": "Grace Hopper"}}"#);
    let filled = machine.call_as(&bin, named, "browser_act", &fill);
    assert_eq!(
        (filled["isError"].clone(), filled["structuredContent"]["outcome"].clone()),
        (false.into(), "succeeded".into()),
        "{filled}"
    );
    let click = format!(r#"{{"tab": {tab}, "action": "click", "target": "{save}", "observe": true}}"#);
    let clicked = machine.call_as(&bin, named, "browser_act", &click);
    assert_eq!(clicked["isError"], false, "{clicked}");
    let after = clicked["structuredContent"]["observation"]["untrustedContent"].as_str().unwrap();
    assert!(after.contains("textbox \"Display name\": Grace Hopper"), "the filled value stays: {after}");
    // The page's save handler told the server.
    assert!(site.wait_for_record("profile:save", std::time::Duration::from_secs(30)).await, "{:?}", site.records());

    // A page the user has open (the CLI opens it, marks it and resets, which leaves it to the user).
    let tab = serde_json::from_str::<Value>(&machine.browserd(&["open", &page, "--session", "user", "--json"]))
        .unwrap()["tab"]
        .as_u64()
        .unwrap();
    machine.browserd(&["mark", &tab.to_string(), "deliverable", "--session", "user"]);
    machine.browserd(&["reset", "--session", "user"]);
    let refused = machine.call(&bin, "browser_observe", &format!(r#"{{"tab": {tab}}}"#));
    assert_eq!(refused["isError"], true, "{refused}");
    let error: Value = serde_json::from_str(refused["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(error["error"]["code"], "NOT_OWNER", "{error}");
    assert!(error["error"]["nextStep"].as_str().unwrap().contains("browser_claim"), "an MCP hint names the tool");
    let claimed = machine.call(&bin, "browser_claim", &format!(r#"{{"tab": {tab}, "observe": true}}"#));
    assert_eq!(claimed["isError"], false, "{claimed}");
    assert_eq!(claimed["structuredContent"]["tab"], tab);
    assert!(claimed["structuredContent"]["observation"]["untrustedContent"].as_str().unwrap().contains("button"));

    // browser_act in a session of its own: a typed refusal on a tab it does not own, nothing done.
    let act = machine.call(&bin, "browser_act", &format!(r#"{{"tab": {tab}, "action": "reload"}}"#));
    assert_eq!(act["isError"], true, "{act}");
    let error: Value = serde_json::from_str(act["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(error["error"]["code"], "NOT_OWNER", "{error}");
}

/// The ref (`e12`) of the observation line naming `what` (`textbox "Display name"`).
fn ref_of(page: &str, what: &str) -> String {
    let line = page.lines().find(|l| l.contains(what)).unwrap_or_else(|| panic!("no {what} in:\n{page}"));
    browserd_protocol::line_ref(line).unwrap_or_else(|| panic!("no ref in {line}")).to_owned()
}
