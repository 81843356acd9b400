//! Approvals through MCP elicitation with the official MCP TypeScript SDK client (`@modelcontextprotocol/sdk`, pinned
//! in `bench/mcp-sdk-client`, installed by `npm ci` the first time) against the real `browserd mcp` binary and a
//! managed Chromium, with `[policy] require_approval = ["submit", "highRisk"]`. The fixture server records every
//! click, so what reached the page is checked on the server's side:
//! - the client accepts: the user was asked (the message names the action, class, target and origin), "Delete
//!   account" ran once, and the batch that stopped before "Save profile" ran that step after the approval;
//! - the client declines: `APPROVAL_DECLINED`, never a success, and neither click reached the server;
//! - a client without the capability: `APPROVAL_REQUIRED` as before, nobody asked, nothing sent.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use browserd_fixtures::FixtureSite;
use serde_json::Value;

fn client_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/mcp-sdk-client")
}

/// `npm ci` in `bench/mcp-sdk-client` unless its `node_modules` matches the lockfile already.
fn install_client() -> PathBuf {
    let dir = client_dir();
    // Tests run in parallel processes: one installs, the others wait for it.
    let guard = std::fs::File::create(std::env::temp_dir().join("browserd-mcp-sdk-client-install.lock")).unwrap();
    guard.lock().unwrap();
    let lock = std::fs::read(dir.join("package-lock.json")).expect("bench/mcp-sdk-client/package-lock.json");
    let stamp = dir.join("node_modules/.browserd-installed-lock");
    if std::fs::read(&stamp).ok().as_deref() != Some(&lock[..]) {
        eprintln!("installing the pinned MCP SDK client (npm ci in {})", dir.display());
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=http"])
            .current_dir(&dir)
            .status()
            .expect("runs npm (install Node.js 20+ with npm: scripts/setup.sh)");
        assert!(status.success(), "npm ci failed in {}", dir.display());
        std::fs::write(&stamp, &lock).unwrap();
    }
    dir
}

/// Runs the SDK client's scenario (`elicit.mjs`) with `answer` against a fresh machine (HOME, runtime dir, config).
async fn scenario(answer: &str) -> (Value, FixtureSite) {
    let dir = install_client();
    let site = FixtureSite::start().await.unwrap();
    let root = tempfile::tempdir().unwrap();
    let (home, run) = (root.path().join("home"), root.path().join("run"));
    std::fs::create_dir_all(home.join(".config/browserd")).unwrap();
    std::fs::create_dir_all(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(
        home.join(".config/browserd/config.toml"),
        "[policy]\nrequire_approval = [\"submit\", \"highRisk\"]\n",
    )
    .unwrap();
    let env = |c: &mut Command| {
        c.env_clear()
            .current_dir(&home)
            .env("HOME", &home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("XDG_RUNTIME_DIR", &run);
        if let Some(chromium) = std::env::var_os("BROWSERD_CHROMIUM") {
            c.env("BROWSERD_CHROMIUM", chromium);
        }
    };
    let mut node = Command::new("node");
    env(&mut node);
    node.arg(dir.join("elicit.mjs"))
        .arg(env!("CARGO_BIN_EXE_browserd"))
        .arg(site.url("/delete-account.html"))
        .arg(answer)
        .stderr(Stdio::inherit());
    let out = tokio::task::spawn_blocking(move || node.output().expect("runs node")).await.unwrap();
    let mut stop = Command::new(env!("CARGO_BIN_EXE_browserd"));
    env(&mut stop);
    let _ = stop.args(["broker", "stop"]).output();
    assert!(out.status.success(), "the SDK client failed: {}", String::from_utf8_lossy(&out.stdout));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    (serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {text}")), site)
}

fn clicks(site: &FixtureSite, event: &str) -> usize {
    site.records().iter().filter(|r| *r == event).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_elicitation_runs_the_approved_action_once() {
    let (out, site) = scenario("accept").await;
    let asked = out["asked"].as_array().unwrap_or_else(|| panic!("{out}"));
    assert_eq!(asked.len(), 2, "asked for the click and for the batch step: {out}");
    let first = asked[0].as_str().unwrap();
    let origin = site.url("").trim_end_matches('/').to_owned();
    for part in ["click", "highRisk", "button \"Delete account\"", origin.as_str()] {
        assert!(first.contains(part), "{part:?} in the question: {first}");
    }
    assert!(asked[1].as_str().unwrap().contains("button \"Save profile\""), "{out}");
    assert_eq!(out["act"]["isError"], false, "{out}");
    assert_eq!(out["act"]["body"]["outcome"], "succeeded", "{out}");
    assert!(site.wait_for_record("account:delete", Duration::from_secs(5)).await, "{:?}", site.records());
    let batch = &out["batch"]["body"];
    assert_eq!(out["batch"]["isError"], false, "{out}");
    assert_eq!(batch["ok"], true, "{batch}");
    let steps: Vec<(u64, &str)> = batch["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["step"].as_u64().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(steps, [(0, "ran"), (1, "ran")], "every step answered once: {batch}");
    assert!(site.wait_for_record("profile:save", Duration::from_secs(5)).await, "{:?}", site.records());
    assert_eq!(clicks(&site, "account:delete"), 1, "{:?}", site.records());
    assert_eq!(clicks(&site, "profile:save"), 1, "{:?}", site.records());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_elicitation_is_a_refusal_and_sends_nothing() {
    let (out, site) = scenario("decline").await;
    assert_eq!(out["asked"].as_array().map(Vec::len), Some(2), "{out}");
    assert_eq!(out["act"]["isError"], true, "{out}");
    assert_eq!(out["act"]["body"]["error"]["code"], "APPROVAL_DECLINED", "{out}");
    let batch = &out["batch"]["body"];
    assert_eq!(out["batch"]["isError"], true, "{out}");
    assert_eq!(batch["results"][1]["code"], "APPROVAL_DECLINED", "{batch}");
    assert_eq!(batch["results"][1]["status"], "notStarted", "{batch}");
    assert_eq!(clicks(&site, "account:delete"), 0, "{:?}", site.records());
    assert_eq!(clicks(&site, "profile:save"), 0, "{:?}", site.records());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_elicitation_keeps_getting_approval_required() {
    let (out, site) = scenario("none").await;
    assert_eq!(out["asked"].as_array().map(Vec::len), Some(0), "{out}");
    assert_eq!(out["act"]["isError"], true, "{out}");
    let error = &out["act"]["body"]["error"];
    assert_eq!(error["code"], "APPROVAL_REQUIRED", "{out}");
    assert_eq!(error["details"]["target"], "button \"Delete account\"", "{out}");
    assert_eq!(out["batch"]["body"]["results"][1]["code"], "APPROVAL_REQUIRED", "{out}");
    assert!(out["batch"]["body"]["results"][1]["approval"]["approval"].is_string(), "{out}");
    assert_eq!(clicks(&site, "account:delete"), 0, "{:?}", site.records());
    assert_eq!(clicks(&site, "profile:save"), 0, "{:?}", site.records());
}
