//! `kill -9` of a real broker process and a restart on the same journal, with a real Chromium — a managed one, which
//! dies with its broker, and a remote one (launched here with `--remote-debugging-port=0`), which outlives it.
//!
//! Each test re-runs this test binary as the broker (`browserd broker run`, the same code path as the binary): with
//! [`BROKER_ROLE`] set, the test function becomes the broker process instead of the test. The fixture page counts
//! clicks on the loopback server, outside the browser, so the test sees every click the browser really received.
//! Checked after the restart: a completed call's id answers from the journal, a call dispatched when the broker died
//! answers `OUTCOME_UNKNOWN`, the same id with other arguments is refused, and none of them clicks again; the scratch
//! tab the dead broker's session owned in the remote browser is found again by its target id and closed — retried
//! while the endpoint does not answer — while the tab marked deliverable stays open.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use browserd_broker::client::{Client, ConnectOptions};
use browserd_protocol::hello::ComponentRole;
use browserd_protocol::lifecycle::{
    BridgeState, HostKind, SessionOpenParams, StatusParams, ToolsActivateParams, TurnBeginParams,
};
use browserd_protocol::tools::ToolCallParams;
use browserd_protocol::{ErrorCode, SessionId};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Set in the environment of a child started as the broker.
const BROKER_ROLE: &str = "BROWSERD_RESTART_TEST_BROKER";
const CHROMIUM: &str = "/usr/lib/chromium/chromium";

/// In a child started with [`BROKER_ROLE`], runs the broker and exits; in the test process, returns.
fn broker_role() {
    if std::env::var_os(BROKER_ROLE).is_none() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let code = runtime.block_on(browserd_broker::cli::run(browserd_broker::cli::Command::Broker {
        action: browserd_broker::cli::BrokerAction::Run { daemon: false },
    }));
    std::process::exit(code.unwrap_or(1));
}

/// A child process killed (SIGKILL) and reaped when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The loopback fixture: `/counter?…` is a page whose "Add" button reports every click to `/hit`.
struct Site {
    base: String,
    hits: Arc<AtomicU32>,
}

const COUNTER_PAGE: &str = r#"<!doctype html><title>Counter</title>
<button onclick="fetch('/hit', {method: 'POST'}); document.getElementById('n').textContent = ++window.n">Add</button>
<p>clicks: <span id="n">0</span></p><script>window.n = 0;</script>"#;

async fn site() -> Site {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicU32::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 2048];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&request);
                let path = head.split_whitespace().nth(1).unwrap_or("/");
                let (status, body) = if path.starts_with("/hit") {
                    counted.fetch_add(1, Ordering::SeqCst);
                    ("204 No Content", "")
                } else if path.starts_with("/counter") {
                    ("200 OK", COUNTER_PAGE)
                } else {
                    ("404 Not Found", "")
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    Site { base, hits }
}

/// One user's directories: runtime (socket), state (journal), config (browserd's config file).
struct Home {
    tmp: tempfile::TempDir,
}

impl Home {
    fn new(config: &str) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        for dir in ["run", "state", "config/browserd"] {
            std::fs::create_dir_all(tmp.path().join(dir)).unwrap();
        }
        std::fs::write(tmp.path().join("config/browserd/config.toml"), config).unwrap();
        Self { tmp }
    }

    fn path(&self) -> &Path {
        self.tmp.path()
    }

    fn journal(&self) -> PathBuf {
        self.path().join("state/browserd").join(browserd_journal::FILE_NAME)
    }

    /// Starts this test binary as the broker (`test` names the running test, which re-enters [`broker_role`]).
    fn spawn_broker(&self, test: &str, n: u32) -> Proc {
        let log = std::fs::File::create(self.path().join(format!("broker-{n}.log"))).unwrap();
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test, "--nocapture", "--test-threads=1"])
            .env(BROKER_ROLE, "1")
            .env("XDG_RUNTIME_DIR", self.path().join("run"))
            .env("XDG_STATE_HOME", self.path().join("state"))
            .env("XDG_CONFIG_HOME", self.path().join("config"))
            .env("BROWSERD_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        Proc(child)
    }

    fn logs(&self) -> String {
        let mut out = String::new();
        for n in 1..=2 {
            if let Ok(text) = std::fs::read_to_string(self.path().join(format!("broker-{n}.log"))) {
                out.push_str(&format!("--- broker {n} ---\n{text}\n"));
            }
        }
        out
    }

    async fn client(&self) -> Client {
        let options = ConnectOptions {
            role: ComponentRole::Mcp,
            runtime_dir: Some(self.path().join("run/browserd")),
            spawn: false,
            timeout: Some(Duration::from_secs(90)),
            broker_exe: None,
        };
        for _ in 0..1200 {
            if let Ok(c) = Client::connect(&options).await {
                return c;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the broker did not start listening\n{}", self.logs());
    }
}

fn ref_of(content: &str, needle: &str) -> String {
    let line = content.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle} in\n{content}"));
    browserd_protocol::line_ref(line).expect("a ref line").to_owned()
}

async fn session(c: &Client, host_session_id: &str) -> SessionId {
    let opened = c
        .call(&SessionOpenParams {
            host: HostKind::Codex,
            host_session_id: host_session_id.into(),
            label: None,
            policy: None,
            browser: None,
        })
        .await
        .unwrap();
    c.call(&ToolsActivateParams { session: opened.session.clone(), advanced: false }).await.unwrap();
    opened.session
}

async fn call(c: &Client, s: &SessionId, name: &str, arguments: Value, call_id: &str) -> Result<Value, ErrorCode> {
    let params = ToolCallParams { session: s.clone(), name: name.into(), arguments, call_id: Some(call_id.to_owned()) };
    c.call(&params).await.map_err(|e| e.code())
}

async fn eventually(what: &str, home: &Home, mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..600 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting until {what}\n{}", home.logs());
}

/// What the dead broker's session did: the ids of its scratch tab, and the two clicks' arguments.
struct Before {
    scratch: u64,
    done: Value,
    hanging: Value,
}

/// Opens a session, a scratch tab on the counter page, begins a turn, clicks once to completion (`click-done`),
/// optionally opens a second tab and marks it deliverable, then starts a second click (`click-hang`) whose expectation
/// never holds, returning once the page has received it (the session's later calls would wait behind that click).
async fn work_then_hang(
    c: &Client,
    site: &Site,
    home: &Home,
    deliverable: bool,
) -> (Before, tokio::task::JoinHandle<()>) {
    let s = session(c, "thread-restart").await;
    c.call(&TurnBeginParams { session: s.clone(), host_turn_id: Some("turn-1".into()) }).await.unwrap();
    let opened =
        call(c, &s, "browser_open", json!({"url": format!("{}/counter?scratch", site.base)}), "open-1").await.unwrap();
    let scratch = opened["tab"].as_u64().unwrap();
    let obs = c.tool(&s, "browser_observe", json!({"tab": scratch})).await.unwrap();
    let add = ref_of(obs["untrustedContent"].as_str().unwrap(), "button \"Add\"");
    let done = json!({"tab": scratch, "action": "click", "target": add});
    let clicked = call(c, &s, "browser_act", done.clone(), "click-done").await.unwrap();
    assert_eq!(clicked["outcome"], "succeeded", "{clicked}");
    eventually("the first click reached the page", home, async || site.hits.load(Ordering::SeqCst) == 1).await;
    if deliverable {
        // Kept for the user: no broker closes it.
        let url = format!("{}/counter?deliverable", site.base);
        let kept = c.tool(&s, "browser_open", json!({"url": url})).await.unwrap()["tab"].as_u64().unwrap();
        c.tool(&s, "browser_mark_deliverable", json!({"tab": kept})).await.unwrap();
    }
    let hanging = json!({"tab": scratch, "action": "click", "target": add, "timeoutMs": 60000,
                         "expected": [{"kind": "textPresent", "text": "this text never appears"}]});
    let task = tokio::spawn({
        let (c, s, hanging) = (c.clone(), s.clone(), hanging.clone());
        async move {
            // The broker is killed while this call waits for its expectation: the answer never comes.
            let _ = call(&c, &s, "browser_act", hanging, "click-hang").await;
        }
    });
    eventually("the second click reached the page", home, async || site.hits.load(Ordering::SeqCst) == 2).await;
    (Before { scratch, done, hanging }, task)
}

/// After the restart: the journal answers both call ids without dispatching, and refuses another payload.
async fn retries_are_answered_from_the_journal(c: &Client, site: &Site, before: &Before) {
    let s = session(c, "thread-restart").await;
    assert_eq!(
        call(c, &s, "browser_act", before.done.clone(), "click-done").await.unwrap_err(),
        ErrorCode::DuplicateRequest,
        "a completed call answers from the journal"
    );
    let params = ToolCallParams {
        session: s.clone(),
        name: "browser_act".into(),
        arguments: before.done.clone(),
        call_id: Some("click-done".into()),
    };
    let recorded = c.call(&params).await.unwrap_err().into_error_data();
    let details = recorded.details.as_deref().cloned().unwrap_or_default();
    assert_eq!(details["state"], "completed", "{recorded:?}");
    assert_eq!(details["outcome"], "succeeded", "the recorded result: {recorded:?}");
    assert_eq!(
        call(c, &s, "browser_act", before.hanging.clone(), "click-hang").await.unwrap_err(),
        ErrorCode::OutcomeUnknown,
        "a call the dead broker dispatched is unknown"
    );
    let mut other = before.done.clone();
    other["action"] = json!("dblclick");
    assert_eq!(
        call(c, &s, "browser_act", other, "click-done").await.unwrap_err(),
        ErrorCode::PayloadMismatch,
        "the same id with other arguments is refused"
    );
    assert_eq!(site.hits.load(Ordering::SeqCst), 2, "no click was sent again");
}

/// Checks the journal after the second broker stopped: nothing pending, and the one record made for the dead
/// session's tab (named by its target id) resolved as `resolved`. Returns that record.
fn journal_has_nothing_pending(
    home: &Home,
    resolved: browserd_journal::recovery::Resolution,
) -> browserd_journal::recovery::RecoveryRecord {
    let journal = browserd_journal::Journal::open(home.journal(), Default::default()).unwrap();
    assert!(journal.pending_recoveries().unwrap().is_empty(), "{:?}\n{}", journal.pending_recoveries(), home.logs());
    assert!(journal.owned_tabs().unwrap().is_empty(), "{:?}", journal.owned_tabs());
    // Record ids start at 1 and are never reused; the few this scenario makes are all among the first ones.
    let records: Vec<_> = (1..=32)
        .filter_map(|id| journal.recovery(browserd_journal::recovery::RecoveryId(id)).unwrap())
        .filter(|r| r.tab.starts_with("target:"))
        .collect();
    assert_eq!(records.len(), 1, "the dead session's scratch tab, and nothing else: {records:?}");
    let record = records.into_iter().next().unwrap();
    assert_eq!(record.op, browserd_journal::recovery::CleanupOp::Close);
    assert_eq!(record.state, browserd_journal::recovery::RecoveryState::Resolved(resolved), "{record:?}");
    record
}

async fn stop(c: Client, mut broker: Proc, home: &Home) {
    c.shutdown_broker().await.unwrap();
    drop(c);
    for _ in 0..1200 {
        if let Some(status) = broker.0.try_wait().unwrap() {
            assert!(status.success(), "the broker exited with {status}\n{}", home.logs());
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the broker did not stop\n{}", home.logs());
}

/// The pids of Chromium processes started with `profile` as their user data dir.
fn chromium_pids(profile: &Path) -> Vec<u32> {
    let needle = format!("--user-data-dir={}", profile.display());
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        if String::from_utf8_lossy(&cmdline).split('\0').any(|arg| arg == needle) {
            pids.push(pid);
        }
    }
    pids
}

const QUIET_FLAGS: &str = r#""--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic""#;

#[test]
fn kill_9_with_a_managed_chromium_never_replays_and_settles_the_dead_browser() {
    broker_role();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let site = site().await;
        let profile_dir = tempfile::tempdir().unwrap();
        let profile = profile_dir.path().join("profile");
        let home = Home::new(&format!(
            "idle_exit_secs = 0\nextension_endpoint = false\nbrowser = \"managed\"\nchromium_path = \"{CHROMIUM}\"\n\
             profile_dir = \"{}\"\nchromium_args = [{QUIET_FLAGS}]\n",
            profile.display()
        ));
        let test = "kill_9_with_a_managed_chromium_never_replays_and_settles_the_dead_browser";
        let mut first = home.spawn_broker(test, 1);
        let c = home.client().await;
        let (before, hanging) = work_then_hang(&c, &site, &home, false).await;
        assert!(!chromium_pids(&profile).is_empty(), "the managed Chromium runs");

        first.0.kill().unwrap();
        first.0.wait().unwrap();
        hanging.await.unwrap();
        drop(c);
        // The managed browser's DevTools pipe closed with its broker: it exits too, and its tabs with it.
        eventually("the managed Chromium exited with its broker", &home, async || chromium_pids(&profile).is_empty())
            .await;

        let second = home.spawn_broker(test, 2);
        let c = home.client().await;
        retries_are_answered_from_the_journal(&c, &site, &before).await;
        let status = c.call(&StatusParams::default()).await.unwrap();
        assert_ne!(status.browsers[0].bridge, BridgeState::Connected, "no browser was started to answer the retries");
        assert!(status.recovery.is_empty(), "{:?}", status.recovery);
        assert!(before.scratch > 0);
        stop(c, second, &home).await;
        let record = journal_has_nothing_pending(&home, browserd_journal::recovery::Resolution::AlreadyGone);
        assert_eq!(record.last_code.as_str(), browserd_journal::owned::BROKER_EXITED, "{record:?}");
    });
}

/// A Chromium this test launches with a DevTools port, as a remote endpoint for the broker.
async fn remote_chromium(dir: &Path) -> (Proc, String) {
    let profile = dir.join("remote-profile");
    let child = std::process::Command::new(CHROMIUM)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-quic",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            &format!("--user-data-dir={}", profile.display()),
            "about:blank",
        ])
        .env("XDG_CONFIG_HOME", dir.join("remote-xdg"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let proc = Proc(child);
    let port_file = profile.join("DevToolsActivePort");
    for _ in 0..600 {
        if let Ok(text) = std::fs::read_to_string(&port_file)
            && let Some(port) = text.lines().next().filter(|l| !l.is_empty())
        {
            return (proc, format!("http://127.0.0.1:{port}"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the remote Chromium did not write {}", port_file.display());
}

/// The page targets open in the browser at `endpoint`: (target id, url).
async fn page_targets(endpoint: &str) -> Vec<(String, String)> {
    let cdp = browserd_cdp::connect_ws(endpoint).await.unwrap();
    let r = cdp.call(None, "Target.getTargets", json!({}), Duration::from_secs(10)).await.unwrap();
    r["targetInfos"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type"] == "page")
        .map(|t| (t["targetId"].as_str().unwrap().to_owned(), t["url"].as_str().unwrap().to_owned()))
        .collect()
}

#[test]
fn kill_9_with_a_remote_chromium_finds_the_dead_sessions_tab_again_and_closes_it() {
    broker_role();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let site = site().await;
        let browser_dir = tempfile::tempdir().unwrap();
        let (browser, endpoint) = remote_chromium(browser_dir.path()).await;
        let home = Home::new(&format!("idle_exit_secs = 0\nextension_endpoint = false\nremote_cdp = \"{endpoint}\"\n"));
        let test = "kill_9_with_a_remote_chromium_finds_the_dead_sessions_tab_again_and_closes_it";
        let mut first = home.spawn_broker(test, 1);
        let c = home.client().await;
        let (before, hanging) = work_then_hang(&c, &site, &home, true).await;
        let pages = page_targets(&endpoint).await;
        let target_of = |pages: &[(String, String)], query: &str| {
            pages.iter().find(|(_, url)| url.ends_with(query)).map(|(id, _)| id.clone())
        };
        let scratch_target = target_of(&pages, "?scratch").expect("the scratch tab is open");
        let kept_target = target_of(&pages, "?deliverable").expect("the deliverable tab is open");

        first.0.kill().unwrap();
        first.0.wait().unwrap();
        hanging.await.unwrap();
        drop(c);
        // The remote browser outlives the broker: the dead session's scratch tab is still open.
        let pages = page_targets(&endpoint).await;
        assert!(pages.iter().any(|(id, _)| *id == scratch_target), "{pages:?}");

        // The endpoint does not answer when the new broker starts (the browser is frozen): the record stays pending
        // and is retried.
        let signal = |sig: &str| {
            let status = std::process::Command::new("kill").args([sig, &browser.0.id().to_string()]).status();
            assert!(status.unwrap().success(), "kill {sig}");
        };
        signal("-STOP");
        let second = home.spawn_broker(test, 2);
        let c = home.client().await;
        eventually("a reconciliation attempt failed", &home, async || {
            std::fs::read_to_string(home.path().join("broker-2.log"))
                .unwrap_or_default()
                .contains("recovery retry failed")
        })
        .await;
        signal("-CONT");
        // The retry finds the tab again by its target id and closes it; the deliverable stays.
        eventually("the dead session's scratch tab is closed", &home, async || {
            !page_targets(&endpoint).await.iter().any(|(id, _)| *id == scratch_target)
        })
        .await;
        let pages = page_targets(&endpoint).await;
        assert!(pages.iter().any(|(id, _)| *id == kept_target), "the deliverable is kept: {pages:?}");
        retries_are_answered_from_the_journal(&c, &site, &before).await;
        assert!(before.scratch > 0);
        stop(c, second, &home).await;
        let record = journal_has_nothing_pending(&home, browserd_journal::recovery::Resolution::Confirmed);
        assert_eq!(record.tab, format!("target:{scratch_target}"));
        assert!(record.attempts >= 2, "the failed retry was counted: {record:?}");
        let pages = page_targets(&endpoint).await;
        assert!(pages.iter().any(|(id, _)| *id == kept_target), "a graceful stop keeps the deliverable: {pages:?}");
    });
}
