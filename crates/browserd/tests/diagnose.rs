//! `browserd diagnose` through the real binary, after a real session on a managed Chromium with a hostile page: a
//! secret in the page's URL query and fragment, text typed into its form, its page text and title — all logged by
//! the page to the console, which the broker's log captures at `trace` — and secrets in the config. The bundle holds
//! none of them (while the raw log does); without `--write` nothing is written; `--write` makes one 0600 JSON file
//! with versions, the config, status, audit rows and log lines.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use browserd_fixtures::FixtureSite;
use serde_json::Value;

const QUERY_SECRET: &str = "QUERYSECRET4417";
const FRAGMENT_SECRET: &str = "FRAGSECRET0093";
const TYPED_SECRET: &str = "TYPEDSECRET9921";
const PAGE_SECRET: &str = "DIAG-PAGE-SECRET-5521";
const TITLE_SECRET: &str = "DIAG-TITLE-SECRET";
const CONFIG_TOKEN: &str = "CFGTOKEN7781";
const CONFIG_AUTH: &str = "AUTHSECRET3310";

struct Machine {
    root: tempfile::TempDir,
}

impl Machine {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        for dir in ["run", "home", "out"] {
            std::fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        std::fs::set_permissions(root.path().join("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
        let config = root.path().join("home/.config/browserd");
        std::fs::create_dir_all(&config).unwrap();
        // Secrets in the config (a remote grid's token and Authorization header, unused with `browser = managed`),
        // and Chromium's own log on stderr (console messages: the page's text and what is typed).
        std::fs::write(
            config.join("config.toml"),
            format!(
                "browser = \"managed\"\nremote_cdp = \"ws://grid.invalid:3000/chromium?token={CONFIG_TOKEN}\"\n\
                 remote_authorization = \"Bearer {CONFIG_AUTH}\"\nchromium_args = \"--enable-logging=stderr --v=0\"\n"
            ),
        )
        .unwrap();
        Self { root }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_browserd"));
        command
            .args(args)
            .env_clear()
            .current_dir(self.path("home"))
            .env("HOME", self.path("home"))
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("XDG_RUNTIME_DIR", self.path("run"))
            .env("BROWSERD_SESSION", "diagnose-test")
            // The broker inherits this: its own events at info, the browser's captured stderr at trace.
            .env("BROWSERD_LOG", "info,browserd_cdp::chromium_stderr=trace");
        if let Some(chromium) = std::env::var_os("BROWSERD_CHROMIUM") {
            command.env("BROWSERD_CHROMIUM", chromium);
        }
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        let out = self.command(args).output().unwrap();
        assert!(
            out.status.success(),
            "browserd {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn broker_log(&self) -> String {
        std::fs::read_to_string(self.path("run/browserd/broker.log")).unwrap_or_default()
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = self.command(&["broker", "stop"]).output();
    }
}

/// Every file under `dir` (paths), sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() { stack.push(p) } else { out.push(p) }
        }
    }
    out.sort();
    out
}

fn leaks(text: &str) -> Vec<&'static str> {
    [QUERY_SECRET, FRAGMENT_SECRET, TYPED_SECRET, PAGE_SECRET, TITLE_SECRET, CONFIG_TOKEN, CONFIG_AUTH]
        .into_iter()
        .filter(|s| text.contains(s))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bundle_holds_no_url_query_form_value_page_text_or_config_secret_and_is_written_only_when_asked() {
    let site = FixtureSite::start().await.unwrap();
    let machine = Machine::new();
    let page = site.url(&format!("/diagnose.html?token={QUERY_SECRET}#{FRAGMENT_SECRET}"));

    // A real session: open the hostile page, read it, type into its form.
    let opened = machine.run(&["open", &page, "--observe"]);
    let text = String::from_utf8_lossy(&opened.stdout).into_owned();
    assert!(text.contains(PAGE_SECRET), "the page was read: {text}");
    let line = text.lines().find(|l| l.contains("textbox \"Note\"")).unwrap_or_else(|| panic!("a Note field: {text}"));
    let note = browserd_protocol::line_ref(line.trim_start_matches('|')).expect("a ref line");
    machine.run(&["act", "fill", note, TYPED_SECRET]);
    machine.run(&["observe"]);

    // The raw log really holds the secrets (the page logged them; the browser's stderr is captured): the redaction
    // below has something to take out.
    let mut raw = machine.broker_log();
    for _ in 0..200 {
        if raw.contains(TYPED_SECRET) && raw.contains(QUERY_SECRET) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        raw = machine.broker_log();
    }
    assert!(raw.contains(TYPED_SECRET) && raw.contains(QUERY_SECRET) && raw.contains(PAGE_SECRET), "{raw}");

    // The preview: what would be included and its size; nothing is written anywhere.
    let before = files_under(machine.root.path());
    let preview = machine.run(&["diagnose"]);
    let shown = String::from_utf8_lossy(&preview.stdout).into_owned();
    for section in ["versions", "config", "status", "audit", "logs", "total"] {
        assert!(shown.lines().any(|l| l.trim_start().starts_with(section)), "{section} in the preview:\n{shown}");
    }
    assert!(shown.contains("nothing written") && shown.contains("--write PATH"), "{shown}");
    assert!(shown.contains("broker running: 1 sessions"), "{shown}");
    assert!(leaks(&shown).is_empty(), "{:?} in the preview:\n{shown}", leaks(&shown));
    let after: Vec<PathBuf> = files_under(machine.root.path());
    let new: Vec<&PathBuf> = after.iter().filter(|p| !before.contains(p)).collect();
    // The broker itself keeps writing its journal and profile; diagnose adds no file of its own.
    assert!(
        new.iter().all(|p| p.starts_with(machine.path("home/.local/state")) || p.starts_with(machine.path("run"))),
        "diagnose without --write wrote {new:?}"
    );
    assert!(files_under(&machine.path("out")).is_empty());
    assert!(!after.iter().any(|p| p.to_string_lossy().contains("diagnostics")), "{after:?}");

    // `--json` prints the whole bundle, still writing nothing.
    let printed = machine.run(&["diagnose", "--json"]);
    let printed = String::from_utf8_lossy(&printed.stdout).into_owned();
    assert!(leaks(&printed).is_empty(), "{:?} in:\n{printed}", leaks(&printed));
    assert!(files_under(&machine.path("out")).is_empty());

    // `--write PATH`: one 0600 JSON file with every section, none of the secrets.
    let target = machine.path("out/bundle.json");
    let written = machine.run(&["diagnose", "--write", target.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&written.stderr).contains("wrote "), "{written:?}");
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let body = std::fs::read_to_string(&target).unwrap();
    assert!(leaks(&body).is_empty(), "{:?} in the bundle:\n{body}", leaks(&body));
    let bundle: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(bundle["kind"], "browserd-diagnostics");
    assert_eq!(bundle["versions"]["browserd"], env!("CARGO_PKG_VERSION"));
    assert!(bundle["versions"]["chromium"]["version"].as_str().unwrap().contains("Chromium"), "{bundle:#}");
    assert_eq!(bundle["versions"]["extension"]["bundled"], "0.1.0");
    assert!(bundle["versions"]["os"]["name"].is_string());
    assert_eq!(bundle["config"]["values"]["remote_authorization"]["value"], "(set, hidden)", "{bundle:#}");
    assert_eq!(bundle["status"]["running"], true);
    let tabs = bundle["status"]["status"]["tabs"].as_array().unwrap();
    let tab = tabs.iter().find(|t| t["url"].as_str().unwrap_or_default().contains("/diagnose.html")).unwrap();
    assert_eq!(tab["url"], format!("{}?…", site.url("/diagnose.html")), "the URL cut at its query: {tab}");
    assert_eq!(tab["title"], "(withheld: page content)", "{tab}");
    let rows = bundle["audit"]["rows"].as_array().unwrap();
    assert!(
        rows.iter().any(|r| r["action"] == "act" && r["input"] == "type" && r["outcome"] == "succeeded"),
        "{rows:?}"
    );
    assert!(rows.iter().any(|r| r["action"] == "tab.open" && r["origin"] == site.url("")), "the origin only: {rows:?}");
    let lines = bundle["logs"]["lines"].as_array().unwrap();
    assert!(!lines.is_empty(), "the broker's own log lines are kept: {bundle:#}");
    assert!(bundle["logs"]["leftOut"]["debugOrTrace"].as_u64().unwrap() > 0, "the browser's console lines left out");

    // An existing file is never overwritten.
    let again = machine.command(&["diagnose", "--write", target.to_str().unwrap()]).output().unwrap();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"), "{again:?}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), body);
    // A directory gets a new file inside it.
    let into_dir = machine.run(&["diagnose", "--output", machine.path("out").to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&into_dir.stderr).contains("browserd-diagnostics-"), "{into_dir:?}");
    assert_eq!(files_under(&machine.path("out")).len(), 2);
}
