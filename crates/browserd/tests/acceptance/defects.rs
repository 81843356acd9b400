//! One check per defect of issue 14, each through the path a user runs (`browserd mcp`, the hooks, the CLI) against
//! the managed Chromium; each fails on the code before the fix.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Home, Host, Mcp, Options, Transcript, claude_stop, codex_stop, tool_result};
use crate::pages::{clicks, counter, find, fixture, open};

async fn site() -> browserd_fixtures::FixtureSite {
    browserd_fixtures::FixtureSite::start().await.unwrap()
}

fn code_of(value: &Value) -> Option<&str> {
    value["error"]["code"].as_str().or_else(|| value["code"].as_str())
}

/// Defect: MCP answered `isError: false` for `ok: false`, failed/unknown outcomes and `TARGET_NOT_FOUND`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d1_results_that_fall_short_are_mcp_errors() {
    let home = Home::new(&Options::default());
    let mcp = Mcp::spawn(&home, Host::ClaudeCode { session: "cc-d1".into() }).await;
    let tab = open(&mcp, &counter("d1-counter")).await;
    let button = find(&mcp, tab, "button", "Count").await;

    let missing = mcp.call("browser_act", json!({"action": "click", "target": "e999"})).await;
    assert!(missing.is_error, "a click on a ref that does not exist is an error: {}", missing.value);
    assert_eq!(code_of(&missing.value), Some("TARGET_NOT_FOUND"), "{}", missing.value);

    let unmet = mcp
        .call(
            "browser_act",
            json!({"action": "click", "target": button, "timeoutMs": 1500,
                   "expected": [{"kind": "textPresent", "text": "this text never appears"}]}),
        )
        .await;
    assert!(unmet.is_error, "a failed postcondition is an error: {}", unmet.value);
    assert_eq!(unmet.value["postcondition"], "failed", "the structured result is kept: {}", unmet.value);
    assert_eq!(clicks(&mcp, tab).await, 1, "the click itself happened, as the result says");

    let batch = mcp
        .call(
            "browser_batch",
            json!({"steps": [{"action": "click", "target": button}, {"action": "click", "target": "e999"}]}),
        )
        .await;
    assert!(batch.is_error, "a batch with a failed step is an error: {}", batch.value);
    assert_eq!(batch.value["ok"], false, "{}", batch.value);

    let close = mcp.call("browser_close", json!({"tabs": [987_654]})).await;
    assert!(close.is_error, "closing a tab that is not there is an error: {}", close.value);

    let fine = mcp.call("browser_act", json!({"action": "click", "target": button})).await;
    assert!(!fine.is_error && fine.value["outcome"] == "succeeded", "{}", fine.value);
    mcp.close().await;
}

/// Defect: on the hook path a turn that only listed tabs did not end a turn, so a mark outlived the turn after it.
/// Also: a second delivery of the same Claude Code `Stop` changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d2_a_mark_expires_after_a_turn_that_only_lists_tabs() {
    let site = site().await;
    let home = Home::new(&Options::default());
    let session = "cc-d2";
    let transcript = Transcript::new(&home, session);
    let env = home.claude_env(session);
    let mcp = Mcp::spawn(&home, Host::ClaudeCode { session: session.into() }).await;

    let tab = open(&mcp, &fixture(&site, "d2-list")).await;
    mcp.call("browser_mark_deliverable", json!({"tab": tab})).await.ok();
    transcript.turn("turn 1: made a deliverable");
    home.hook(&env, "turn-end", &claude_stop(session, &transcript.0));
    // The same Stop delivered again (the hook configured twice): not the end of another turn.
    home.hook(&env, "turn-end", &claude_stop(session, &transcript.0));
    assert!(home.tab_open("d2-list"), "the mark of turn 1 keeps the tab past turn 1's end");

    mcp.call("browser_list", json!({})).await.ok();
    transcript.turn("turn 2: only listed tabs");
    home.hook(&env, "turn-end", &claude_stop(session, &transcript.0));
    home.wait_tabs("the mark of turn 1 is gone at the end of turn 2", |tabs| {
        !tabs.iter().any(|(_, u)| u.contains("d2-list"))
    })
    .await;
    mcp.close().await;
    site.shutdown().await;
}

/// Defect: a turn with no browser call at all did not count either (Codex: `Stop` hooks with turn ids); a repeated
/// `Stop` of the same Codex turn stays a no-op.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d2_a_mark_expires_after_a_turn_with_no_browser_call() {
    let site = site().await;
    let home = Home::new(&Options::default());
    let session = "cx-d2";
    let env = home.codex_env();
    let mcp = Mcp::spawn(&home, Host::Codex { session: session.into() }).await;
    mcp.codex_turn("turn-1");
    let tab = open(&mcp, &fixture(&site, "d2-none")).await;
    mcp.call("browser_mark_deliverable", json!({"tab": tab})).await.ok();
    home.hook(&env, "turn-end", &codex_stop(session, "turn-1"));
    home.hook(&env, "turn-end", &codex_stop(session, "turn-1"));
    assert!(home.tab_open("d2-none"), "turn 1's mark holds through turn 1's (repeated) end");

    // Turn 2 makes no browser call; Codex still runs its Stop hook.
    home.hook(&env, "turn-end", &codex_stop(session, "turn-2"));
    home.wait_tabs("turn 1's mark is gone at the end of turn 2", |tabs| {
        !tabs.iter().any(|(_, u)| u.contains("d2-none"))
    })
    .await;
    mcp.close().await;
    site.shutdown().await;
}

/// Defect: `disconnectClient: true` answered `clientDisconnected: true` and disconnected nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d3_disconnect_client_really_disconnects_only_that_client() {
    use browserd_broker::client::{Client, ConnectOptions};
    use browserd_protocol::hello::ComponentRole;
    use browserd_protocol::lifecycle::{ContextResetParams, HostKind, SessionOpenParams};
    let site = site().await;
    let home = Home::new(&Options::default());
    // The broker of this home, started the way every client starts it.
    let other = Mcp::spawn(&home, Host::ClaudeCode { session: "cc-d3-other".into() }).await;
    open(&other, &fixture(&site, "d3-other")).await;

    let connect = ConnectOptions {
        role: ComponentRole::Cli,
        runtime_dir: Some(home.broker_dir()),
        spawn: false,
        timeout: Some(Duration::from_secs(60)),
        broker_exe: None,
    };
    let client = Client::connect(&connect).await.expect("the broker runs");
    let opened = client
        .call(&SessionOpenParams {
            host: HostKind::Other,
            host_session_id: "d3-leaver".into(),
            label: None,
            policy: None,
            browser: None,
        })
        .await
        .expect("session.open");
    let reset = client
        .call(&ContextResetParams { session: opened.session.clone(), disconnect_client: true })
        .await
        .expect("context.reset");
    assert!(reset.ok && reset.client_disconnected, "{reset:?}");
    let mut gone = false;
    for _ in 0..100 {
        if client.is_closed() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "the broker closed this client's connection, as the result says");
    // Nobody else is touched: the other session's tab and the bridge are as they were.
    assert!(home.tab_open("d3-other"));
    let status = other.call("browser_status", json!({})).await.ok();
    assert_eq!(status["bridge"], "connected", "{status}");
    other.close().await;
    site.shutdown().await;
}

/// Defect: a `requestId` was de-duplicated across sessions: B sending A's id got A's result, and B's page was never
/// clicked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d5_request_ids_belong_to_their_session() {
    let home = Home::new(&Options::default());
    let a = Mcp::spawn(&home, Host::ClaudeCode { session: "cc-d5".into() }).await;
    let b = Mcp::spawn(&home, Host::Codex { session: "cx-d5".into() }).await;
    b.codex_turn("t1");
    let tab_a = open(&a, &counter("d5-a")).await;
    let tab_b = open(&b, &counter("d5-b")).await;
    let ref_a = find(&a, tab_a, "button", "Count").await;
    let ref_b = find(&b, tab_b, "button", "Count").await;
    assert_eq!(ref_a, ref_b, "the same page gives the same ref, so the two calls are alike");
    let click = json!({"action": "click", "target": ref_a, "requestId": "same-id"});

    let first = a.call("browser_act", click.clone()).await.ok();
    assert_eq!(first["outcome"], "succeeded", "{first}");
    let other = b.call("browser_act", click.clone()).await.ok();
    assert!(other.get("deduplicated").is_none_or(|d| d == false), "B's call is B's own: {other}");
    assert_eq!(clicks(&b, tab_b).await, 1, "B's page was clicked");

    let again = a.call("browser_act", click).await.ok();
    assert_eq!(again["deduplicated"], true, "A's repeat is answered from A's record: {again}");
    assert_eq!(clicks(&a, tab_a).await, 1, "and A's page is not clicked twice");
    a.close().await;
    b.close().await;
}

/// Defect: after MCP cancellation of a click that was dispatched, retrying its call said "already running" for the
/// whole TTL (the journal row stuck at `dispatched`). Now the record resolves at once and the retry reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d5_a_cancelled_click_resolves_its_record_at_once() {
    let home = Home::new(&Options::default());
    let mcp = Mcp::spawn(&home, Host::ClaudeCode { session: "cc-d5-cancel".into() }).await;
    let tab = open(&mcp, &counter("d5-cancel")).await;
    let button = find(&mcp, tab, "button", "Count").await;
    let params = mcp.call_params(
        "browser_act",
        json!({"action": "click", "target": button, "timeoutMs": 30000,
               "expected": [{"kind": "textPresent", "text": "this text never appears"}]}),
    );
    let id = mcp.next_id();
    let answer = mcp.start(id, "tools/call", params.clone()).await;
    // The click is sent at once; then the call waits for its postcondition, and the host cancels it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    mcp.notify("notifications/cancelled", json!({"requestId": id, "reason": "the user pressed Esc"})).await;
    let _ = tokio::time::timeout(Duration::from_secs(10), answer).await;

    // The host retries the same request (same id, so the same callId): never "already running".
    let mut last = Value::Null;
    for _ in 0..20 {
        let rx = mcp.start(id, "tools/call", params.clone()).await;
        let response = tokio::time::timeout(Duration::from_secs(60), rx).await.unwrap().unwrap();
        let retried = tool_result(&response);
        last = retried.value.clone();
        assert!(retried.is_error, "a retry of a cancelled call is not run again: {last}");
        if last["error"]["details"]["state"] != "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let code = code_of(&last).unwrap_or_default().to_owned();
    assert!(
        code == "OUTCOME_UNKNOWN" || code == "CANCELLED",
        "the record resolved to unknown or cancelled, not running: {last}"
    );
    let count = clicks(&mcp, tab).await;
    if code == "CANCELLED" {
        assert_eq!(count, 0, "cancelled means nothing was sent: {last}");
    }
    assert!(count <= 1, "the cancelled click was never replayed");
    mcp.close().await;
}

/// Fills the filesystem holding `dir` until it is full; returns the filler file.
fn fill_disk(dir: &std::path::Path) -> std::path::PathBuf {
    use std::io::Write as _;
    std::fs::create_dir_all(dir).unwrap();
    let filler = dir.join("filler");
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&filler).unwrap();
    let block = vec![0u8; 4096];
    while file.write_all(&block).is_ok() {}
    while file.write_all(&[0]).is_ok() {}
    let _ = file.sync_all();
    filler
}

/// Defect: a journal that could not be opened (disk full) was silent: the broker served without de-duplication,
/// ledger or audit; mid-session failed writes were dropped with a log line. Now anything that opens a tab or sends
/// input is refused with `JOURNAL_UNAVAILABLE`, reads keep working, and status says the journal is degraded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d6_a_full_disk_journal_fails_closed_and_says_so() {
    let site = site().await;
    let mut home = Home::new(&Options::default());
    let disk = home.mount_small_state_disk("512k");
    let filler = fill_disk(&disk);
    let mcp = Mcp::spawn(&home, Host::ClaudeCode { session: "cc-d6".into() }).await;

    // At start: the journal cannot be created.
    let status = mcp.call("browser_status", json!({})).await.ok();
    assert_eq!(status["journal"]["state"], "degraded", "{status}");
    let refused = mcp.call("browser_open", json!({"url": fixture(&site, "d6-refused")})).await;
    assert!(refused.is_error, "{}", refused.value);
    assert_eq!(refused.code(), Some("JOURNAL_UNAVAILABLE"), "{}", refused.value);
    let next = refused.value["error"]["nextStep"].as_str().unwrap_or_default();
    assert!(next.contains("free disk space"), "the error says what to free: {next}");
    assert!(!home.chromium_running() || !home.tab_open("d6-refused"), "no tab was opened");
    mcp.call("browser_list", json!({})).await.ok();
    assert_eq!(home.broker_status()["journal"]["state"], "degraded", "browserd status shows it too");

    // Space freed: the next call reopens the journal and works.
    std::fs::remove_file(&filler).unwrap();
    let tab = open(&mcp, &counter("d6-counter")).await;
    let button = find(&mcp, tab, "button", "Count").await;
    let status = mcp.call("browser_status", json!({})).await.ok();
    assert_eq!(status["journal"]["state"], "ok", "{status}");

    // Mid-session the disk fills again: input and new tabs are refused, reads work, nothing is dropped silently.
    let filler = fill_disk(&disk);
    let tabs_before = home.browser_tabs().len();
    let click = mcp.call("browser_act", json!({"action": "click", "target": button})).await;
    assert!(click.is_error, "{}", click.value);
    assert_eq!(click.code(), Some("JOURNAL_UNAVAILABLE"), "{}", click.value);
    let again = mcp.call("browser_open", json!({"url": fixture(&site, "d6-mid")})).await;
    assert_eq!(again.code(), Some("JOURNAL_UNAVAILABLE"), "{}", again.value);
    assert_eq!(home.browser_tabs().len(), tabs_before, "no tab was opened in the browser");
    assert_eq!(clicks(&mcp, tab).await, 0, "the refused click never reached the page");
    let status = mcp.call("browser_status", json!({})).await.ok();
    assert_eq!(status["journal"]["state"], "degraded", "{status}");
    assert!(status["journal"]["reason"].as_str().is_some_and(|r| !r.is_empty()), "{status}");

    std::fs::remove_file(&filler).unwrap();
    let click = mcp.call("browser_act", json!({"action": "click", "target": button})).await.ok();
    assert_eq!(click["outcome"], "succeeded", "{click}");
    mcp.close().await;
    site.shutdown().await;
}

/// Defect: a failed `browser_open` left its tab open, counting against the limit of 3: three bad URLs, and the
/// fourth good one was refused with `TOO_MANY_TABS`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d7_a_failed_open_closes_its_tab() {
    let site = site().await;
    let home = Home::new(&Options::default());
    let mcp = Mcp::spawn(&home, Host::ClaudeCode { session: "cc-d7".into() }).await;
    for n in 0..3 {
        let bad = mcp.call("browser_open", json!({"url": format!("http://127.0.0.1:1/d7-bad-{n}")})).await;
        assert!(bad.is_error, "an open whose page cannot load fails: {}", bad.value);
        assert_eq!(bad.value["error"]["details"]["closed"], true, "and says it closed its tab: {}", bad.value);
    }
    let good = open(&mcp, &fixture(&site, "d7-good")).await;
    home.wait_tabs("only the good tab of this session is open", |tabs| {
        let ours: Vec<&String> = tabs.iter().map(|(_, u)| u).filter(|u| *u != "about:blank").collect();
        ours.len() == 1 && ours[0].contains("d7-good")
    })
    .await;
    let status = mcp.call("browser_status", json!({})).await.ok();
    assert_eq!(status["limits"]["tabsPerTask"]["used"], 1, "only the good tab counts: {status}");
    let _ = good;
    mcp.close().await;
    site.shutdown().await;
}

/// Defect: hook lines and CLI text showed Rust debug formatting (`closed=[TabId(10), TabId(11)]`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d8_hook_and_cli_text_show_wire_ids() {
    let site = site().await;
    let home = Home::new(&Options::default());
    let session = "cc-d8";
    let transcript = Transcript::new(&home, session);
    let env = home.claude_env(session);
    let mcp = Mcp::spawn(&home, Host::ClaudeCode { session: session.into() }).await;
    let first = open(&mcp, &fixture(&site, "d8-a")).await;
    let second = open(&mcp, &fixture(&site, "d8-b")).await;
    let (ok, text, _) = home.run(&env, &["status"], "");
    assert!(ok, "{text}");
    assert!(!text.contains("TabId(") && !text.contains("ActiveSticky") && !text.contains("Connected"), "{text}");
    assert!(text.contains("bridge=connected"), "{text}");
    transcript.turn("two tabs");
    let summary = home.hook(&env, "turn-end", &claude_stop(session, &transcript.0));
    assert!(summary.contains(&format!("closed=[{first}, {second}]")), "{summary}");
    assert!(!summary.contains("TabId(") && !summary.contains("ClaudeCode"), "{summary}");
    mcp.close().await;
    site.shutdown().await;
}
