//! The real broker process against the real open-source Browserless grid (`bench/browserless`, a test component
//! only: SSPL, never bundled) on 127.0.0.1 with Debian's Chromium: the URL forms users paste, the work an agent does
//! (open, observe, act, screenshot, an out-of-process iframe, cleanup), two brokers at once, the grid's typed answers
//! (queue full, bad token, session timeout), the grid restarted mid-session, and the token absent from every file the
//! broker wrote.
//!
//! Each test re-runs this test binary as the broker (`browserd broker run`, the same code path as the binary): with
//! [`BROKER_ROLE`] set, the test function becomes the broker process instead of the test.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use browserd_broker::client::{Client, ConnectOptions};
use browserd_protocol::hello::ComponentRole;
use browserd_protocol::lifecycle::{BridgeState, HostKind, SessionOpenParams, StatusParams, ToolsActivateParams};
use browserd_protocol::{ErrorCode, SessionId};
use browserd_test_support::browserless::{Browserless, Options};
use browserd_test_support::fixtures::FixtureSite;
use serde_json::{Value, json};

/// Set in the environment of a child started as the broker.
const BROKER_ROLE: &str = "BROWSERD_GRID_TEST_BROKER";

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

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// A child process killed (SIGKILL) and reaped when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One user's directories (runtime, state, config) and the broker running in them.
struct Home {
    tmp: tempfile::TempDir,
    broker: Option<Proc>,
}

impl Home {
    /// A home whose config points the broker at `remote_cdp`, and the broker started in it for `test`.
    fn start(test: &str, remote_cdp: &str, extra: &str) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        for dir in ["run", "state", "config/browserd"] {
            std::fs::create_dir_all(tmp.path().join(dir)).unwrap();
        }
        let config = format!(
            "idle_exit_secs = 0\nextension_endpoint = false\nbrowser = \"remote\"\nremote_cdp = \"{remote_cdp}\"\n\
             reconnect_backoff_ms = 200\nreconnect_backoff_max_ms = 1000\n{extra}"
        );
        std::fs::write(tmp.path().join("config/browserd/config.toml"), config).unwrap();
        let mut home = Home { tmp, broker: None };
        home.broker = Some(home.spawn_broker(test));
        home
    }

    fn path(&self) -> &Path {
        self.tmp.path()
    }

    fn spawn_broker(&self, test: &str) -> Proc {
        let log = std::fs::File::create(self.path().join("broker.log")).unwrap();
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test, "--nocapture", "--test-threads=1"])
            .env(BROKER_ROLE, "1")
            .env("XDG_RUNTIME_DIR", self.path().join("run"))
            .env("XDG_STATE_HOME", self.path().join("state"))
            .env("XDG_CONFIG_HOME", self.path().join("config"))
            .env("BROWSERD_LOG", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        Proc(child)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.path().join("broker.log")).unwrap_or_default()
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
        panic!("the broker did not start listening\n{}", self.log());
    }

    /// Stops the broker (through `broker.shutdown`) so every file it wrote is complete.
    async fn stop(&mut self, c: Client) {
        c.shutdown_broker().await.unwrap();
        drop(c);
        if let Some(mut proc) = self.broker.take() {
            for _ in 0..600 {
                if proc.0.try_wait().unwrap().is_some() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let _ = proc.0.kill();
        }
    }

    /// Every file the broker wrote under the home (journal, its WAL, logs, the runtime dir) that contains `needle`;
    /// the config file the test wrote is not one of them.
    fn files_containing(&self, needle: &str) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let mut stack = vec![self.path().join("run"), self.path().join("state"), self.path().join("broker.log")];
        found.extend(stack.pop().filter(|log| std::fs::read_to_string(log).is_ok_and(|t| t.contains(needle))));
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                let Ok(kind) = entry.file_type() else { continue };
                if kind.is_dir() {
                    stack.push(path);
                } else if kind.is_file()
                    && std::fs::read(&path).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
                {
                    found.push(path);
                }
            }
        }
        found
    }
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

fn refs_of(content: &str, needle: &str) -> Vec<String> {
    content
        .lines()
        .filter(|l| l.contains(needle))
        .map(|l| browserd_protocol::line_ref(l).expect("a ref line").to_owned())
        .collect()
}

/// The ref of the first line holding `needle` below the `iframe "<frame>"` line.
fn ref_in_frame(content: &str, frame: &str, needle: &str) -> String {
    let start = content.find(&format!("iframe \"{frame}\"")).unwrap_or_else(|| panic!("no frame {frame}:\n{content}"));
    refs_of(&content[start..], needle)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no {needle} in {frame}:\n{content}"))
}

async fn tool(c: &Client, s: &SessionId, name: &str, args: Value) -> Value {
    c.tool(s, name, args.clone()).await.unwrap_or_else(|e| panic!("{name} {args} failed: {e}"))
}

async fn tool_err(c: &Client, s: &SessionId, name: &str, args: Value) -> browserd_protocol::ErrorData {
    match c.tool(s, name, args.clone()).await {
        Ok(v) => panic!("{name} {args} succeeded: {v}"),
        Err(e) => e.into_error_data(),
    }
}

async fn status(c: &Client) -> browserd_protocol::lifecycle::StatusResult {
    c.call(&StatusParams::default()).await.unwrap()
}

/// Opens the fixture's iframe page, observes it, clicks the button in both iframes (the cross-site one is an
/// out-of-process frame), observes with a screenshot; returns the tab.
async fn agent_work(c: &Client, s: &SessionId, site: &FixtureSite) -> u64 {
    let opened = tool(c, s, "browser_open", json!({"url": site.url("/iframes.html")})).await;
    let tab = opened["tab"].as_u64().unwrap();
    let observed = tool(c, s, "browser_observe", json!({"tab": tab})).await;
    let content = observed["untrustedContent"].as_str().unwrap().to_owned();
    let inner = refs_of(&content, "button \"Inner button\"");
    assert_eq!(inner.len(), 2, "both iframes, the cross-site one out of process, are observed:\n{content}");
    // Frame keys follow the order frames attach in (the out-of-process one may come first): find each by its frame.
    let same = ref_in_frame(&content, "Same-origin frame", "button \"Inner button\"");
    let cross = ref_in_frame(&content, "Cross-origin frame", "button \"Inner button\"");
    assert!(same.starts_with('f') && cross.starts_with('f') && same[..2] != cross[..2], "{content}");
    // Each frame's button, the cross-site (out-of-process) one too: the page counts each click in its own frame.
    let mut again = Value::Null;
    for (target, frame) in [(&same, "Same-origin frame"), (&cross, "Cross-origin frame")] {
        let acted = tool(c, s, "browser_act", json!({"tab": tab, "action": "click", "target": target})).await;
        assert_eq!(acted["outcome"], "succeeded", "{acted}");
        let counted = |v: &Value| {
            let content = v["untrustedContent"].as_str().unwrap_or_default();
            let section = &content[content.find(&format!("iframe \"{frame}\"")).unwrap_or(0)..];
            section.lines().find(|l| l.contains("Inner clicks:")).is_some_and(|l| l.contains("Inner clicks: 1"))
        };
        for _ in 0..20 {
            again = tool(c, s, "browser_observe", json!({"tab": tab, "screenshot": true})).await;
            if counted(&again) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(counted(&again), "the click on {target} reached the {frame}: {acted}\n{}", again["untrustedContent"]);
    }
    assert!(again.get("screenshot").is_some_and(|v| !v.is_null()), "a screenshot came back: {again}");
    tab
}

#[test]
fn browserless_carries_a_session_from_a_url_without_a_path_and_no_file_holds_the_token() {
    broker_role();
    runtime().block_on(browserless_carries_a_session_from_a_url_without_a_path_and_no_file_holds_the_token_body());
}

async fn browserless_carries_a_session_from_a_url_without_a_path_and_no_file_holds_the_token_body() {
    let grid = Browserless::start(Options::default()).await;
    let site = FixtureSite::start().await.unwrap();
    // The form Browserless documents: no path before the query (the old request line was `GET ?token=…`).
    let test = "browserless_carries_a_session_from_a_url_without_a_path_and_no_file_holds_the_token";
    let mut home = Home::start(test, &grid.ws_url_without_path(), "");
    let c = home.client().await;
    let s = session(&c, "grid-1").await;
    let tab = agent_work(&c, &s, &site).await;

    let st = status(&c).await;
    let browser = &st.browsers[0];
    assert_eq!(browser.bridge, BridgeState::Connected);
    assert_eq!(browser.endpoint.as_deref(), Some(format!("ws://127.0.0.1:{}", grid.port).as_str()));
    let shown = serde_json::to_string(&st).unwrap();
    assert!(!shown.contains(&grid.token), "status shows no token: {shown}");

    let cleaned = tool(&c, &s, "browser_cleanup", json!({})).await;
    assert_eq!(cleaned["ok"], true, "{cleaned}");
    assert_eq!(cleaned["closed"], json!([tab]), "{cleaned}");
    home.stop(c).await;
    assert!(home.log().contains("browserd broker listening"), "the broker logged: {}", home.log());
    assert_eq!(home.files_containing(&grid.token), Vec::<PathBuf>::new(), "a file the broker wrote holds the token");
    site.shutdown().await;
}

#[test]
fn browserless_http_discovery_keeps_the_token_and_two_brokers_get_their_own_browsers() {
    broker_role();
    runtime().block_on(browserless_http_discovery_keeps_the_token_and_two_brokers_get_their_own_browsers_body());
}

async fn browserless_http_discovery_keeps_the_token_and_two_brokers_get_their_own_browsers_body() {
    let grid = Browserless::start(Options::default()).await;
    let site = FixtureSite::start().await.unwrap();
    let test = "browserless_http_discovery_keeps_the_token_and_two_brokers_get_their_own_browsers";
    // http:// with the token in the query: /json/version answers chunked, and its webSocketDebuggerUrl has no token.
    let mut one = Home::start(test, &grid.http_url(), "");
    let mut two = Home::start(test, &grid.ws_url("&launch=%7B%7D"), "");
    let (c1, c2) = (one.client().await, two.client().await);
    let (s1, s2) = (session(&c1, "grid-a").await, session(&c2, "grid-b").await);
    let (t1, t2) = tokio::join!(agent_work(&c1, &s1, &site), agent_work(&c2, &s2, &site));
    // Each broker's browser has only its own tab.
    let l1 = tool(&c1, &s1, "browser_list", json!({})).await;
    let l2 = tool(&c2, &s2, "browser_list", json!({})).await;
    let ids =
        |l: &Value| -> Vec<u64> { l["tabs"].as_array().unwrap().iter().filter_map(|t| t["tab"].as_u64()).collect() };
    assert!(ids(&l1).contains(&t1) && ids(&l2).contains(&t2), "{l1} {l2}");
    let urls = |l: &Value| {
        l["tabs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["url"].as_str().is_some_and(|u| u.contains("iframes")))
            .count()
    };
    assert_eq!((urls(&l1), urls(&l2)), (1, 1), "each grid session is a browser of its own: {l1} {l2}");
    for (c, s) in [(&c1, &s1), (&c2, &s2)] {
        let cleaned = tool(c, s, "browser_cleanup", json!({})).await;
        assert_eq!(cleaned["ok"], true, "{cleaned}");
    }
    one.stop(c1).await;
    two.stop(c2).await;
    for home in [&one, &two] {
        assert_eq!(home.files_containing(&grid.token), Vec::<PathBuf>::new());
    }
    site.shutdown().await;
}

#[test]
fn browserless_answers_are_typed_a_full_queue_a_bad_token_and_an_abandoned_connect_frees_its_slot() {
    broker_role();
    runtime().block_on(browserless_answers_are_typed_a_full_queue_a_bad_token_and_an_abandoned_connect_frees_its_slot_body());
}

async fn browserless_answers_are_typed_a_full_queue_a_bad_token_and_an_abandoned_connect_frees_its_slot_body() {
    let grid = Browserless::start(Options { concurrent: 1, queued: 1, ..Options::default() }).await;
    let site = FixtureSite::start().await.unwrap();
    let test = "browserless_answers_are_typed_a_full_queue_a_bad_token_and_an_abandoned_connect_frees_its_slot";
    // A wrong token: NOT_AUTHORISED, naming what to fix, never the token.
    let bad = format!("ws://127.0.0.1:{}/?token=WRONG-T0KEN", grid.port);
    let mut refused = Home::start(test, &bad, "");
    let c = refused.client().await;
    let s = session(&c, "grid-bad").await;
    let err = tool_err(&c, &s, "browser_open", json!({"url": site.url("/")})).await;
    assert_eq!(err.code, ErrorCode::NotAuthorised, "{err:?}");
    assert!(!err.message.contains("WRONG-T0KEN"), "{err:?}");
    refused.stop(c).await;

    // The only browser slot is held by the first broker.
    let mut holder = Home::start(test, &grid.ws_url(""), "");
    let ch = holder.client().await;
    let sh = session(&ch, "grid-holder").await;
    tool(&ch, &sh, "browser_open", json!({"url": site.url("/")})).await;
    // Others wait in the queue, give up after their connect timeout (their socket closed), or find the queue full:
    // a typed back-pressure answer with a retry hint.
    let mut waiter = Home::start(test, &grid.ws_url(""), "remote_connect_timeout_ms = 1500\n");
    let cw = waiter.client().await;
    let sw = session(&cw, "grid-waiter").await;
    let mut full = None;
    for _ in 0..20 {
        let err = tool_err(&cw, &sw, "browser_open", json!({"url": site.url("/")})).await;
        match err.code {
            ErrorCode::QueueFull => {
                full = Some(err);
                break;
            }
            ErrorCode::ConnectionLost => {}
            other => panic!("unexpected answer {other:?}: {err:?}"),
        }
    }
    let err = full.unwrap_or_else(|| panic!("the grid never answered queue full; its log: {}", grid.log()));
    assert!(err.retry_after_ms.is_some_and(|ms| ms > 0), "a retry hint: {err:?}");
    assert!(!err.message.contains(&grid.token), "{err:?}");
    // The holder lets go: a new broker gets the browser at once (no abandoned attempt holds the slot).
    holder.stop(ch).await;
    waiter.stop(cw).await;
    let mut next = Home::start(test, &grid.ws_url(""), "");
    let cn = next.client().await;
    let sn = session(&cn, "grid-next").await;
    let mut opened = false;
    for _ in 0..20 {
        match cn.tool(&sn, "browser_open", json!({"url": site.url("/")})).await {
            Ok(_) => {
                opened = true;
                break;
            }
            Err(e) => {
                eprintln!("waiting for the slot: {e}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
    assert!(opened, "the freed slot went to the next broker; grid log: {}", grid.log());
    next.stop(cn).await;
    site.shutdown().await;
}

#[test]
fn browserless_restarted_mid_session_and_its_session_timeout_bring_the_broker_back() {
    broker_role();
    runtime().block_on(browserless_restarted_mid_session_and_its_session_timeout_bring_the_broker_back_body());
}

async fn browserless_restarted_mid_session_and_its_session_timeout_bring_the_broker_back_body() {
    let mut grid = Browserless::start(Options::default()).await;
    let site = FixtureSite::start().await.unwrap();
    let test = "browserless_restarted_mid_session_and_its_session_timeout_bring_the_broker_back";
    let mut home = Home::start(test, &grid.ws_url(""), "");
    let c = home.client().await;
    let s = session(&c, "grid-restart").await;
    let tab = agent_work(&c, &s, &site).await;
    let before = tool(&c, &s, "browser_observe", json!({"tab": tab})).await;
    let old_ref = refs_of(before["untrustedContent"].as_str().unwrap(), "button \"Inner button\"")[0].clone();

    grid.restart().await;
    // The loss is seen at once, and an attempt is made at once: never `connected` with the old socket, never
    // `reconnecting` without an attempt.
    let mut back = false;
    for _ in 0..300 {
        let st = status(&c).await;
        let b = &st.browsers[0];
        let r = b.reconnect.as_ref().expect("a lost connection shows its reconnect state");
        if b.bridge == BridgeState::Reconnecting {
            assert!(r.attempts > 0 || r.in_progress || r.reconnects > 0, "reconnecting with no attempt: {r:?}");
        }
        if r.reconnects >= 1 {
            back = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(back, "the broker reconnected to the restarted grid; log:\n{}", home.log());
    // The session is told once; its old refs are void; the grid's fresh browser has none of the old tabs.
    let told = tool_err(&c, &s, "browser_list", json!({})).await;
    assert_eq!(told.code, ErrorCode::BrowserRestarted, "{told:?}");
    let listed = tool(&c, &s, "browser_list", json!({})).await;
    assert!(listed["tabs"].as_array().unwrap().iter().all(|t| t["tab"] != tab), "{listed}");
    let stale = tool_err(&c, &s, "browser_act", json!({"tab": tab, "action": "click", "target": old_ref})).await;
    assert!(
        matches!(stale.code, ErrorCode::TabNotFound | ErrorCode::TargetClosed | ErrorCode::StaleTarget),
        "{stale:?}"
    );
    let st = status(&c).await;
    assert!(st.recovery.is_empty(), "the old tab's records are resolved: {:?}", st.recovery);
    assert_eq!(st.browsers[0].bridge, BridgeState::Connected);
    // The next call works.
    let tab2 = agent_work(&c, &s, &site).await;
    assert_ne!(tab2, tab);
    let took = st.browsers[0].reconnect.as_ref().and_then(|r| r.last_reconnect_ms);
    eprintln!("grid restart: reconnected in {took:?} ms");

    // Browserless's session timeout (per URL here) ends the session with a raw HTTP 408 on the socket: the loss names
    // the grid's timeout and how to raise it; the broker comes back again.
    home.stop(c).await;
    let timed = format!("{}&timeout=5000", grid.ws_url(""));
    let mut home = Home::start(test, &timed, "");
    let c = home.client().await;
    let s = session(&c, "grid-timeout").await;
    // Whether this call finishes inside the grid's 5 s depends on the machine's load; the loss after it does not.
    let _ = c.tool(&s, "browser_open", json!({"url": site.url("/")})).await;
    let mut named = None;
    for _ in 0..300 {
        let st = status(&c).await;
        if let Some(lost) = st.browsers[0].reconnect.as_ref().and_then(|r| r.last_lost.clone()) {
            named = Some(lost);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let lost = named.expect("the grid's session timeout ended the connection");
    assert!(lost.contains("timeout") && lost.contains("timeout=MS"), "{lost}");
    assert!(!lost.contains(&grid.token), "{lost}");
    home.stop(c).await;
    assert_eq!(home.files_containing(&grid.token), Vec::<PathBuf>::new());
    site.shutdown().await;
}
