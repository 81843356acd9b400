//! The lifecycle seed's nine real acceptance checks (§ 真实验收), through `browserd mcp` and the host hooks.
//!
//! MCP hosts list tools before any call, so check 1 ("no browser tools before the browser is asked for") reads, for
//! MCP, as: nothing of the browser exists — no Chromium process, no broker session — until a browser tool is
//! called. Check 2 (the skill loads once) reads as: one broker session per host session, opened once and kept
//! across turns.

use serde_json::{Value, json};

use crate::harness::{Home, Host, Mcp, Options, Transcript, claude_session_end, claude_stop, codex_stop};
use crate::pages::{fixture, open};

const CORE_TOOLS: usize = 13;

async fn site() -> browserd_fixtures::FixtureSite {
    browserd_fixtures::FixtureSite::start().await.unwrap()
}

/// 1. A new session that never asks for the browser: no browser, and its turn ends are clean no-ops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ac1_a_session_that_never_asks_for_the_browser_starts_none() {
    let home = Home::new(&Options::default());
    let session = "cc-ac1";
    let transcript = Transcript::new(&home, session);
    let env = home.claude_env(session);
    let mcp = Mcp::spawn(&home, Host::ClaudeCode { session: session.into() }).await;
    assert_eq!(mcp.tool_names().await.len(), CORE_TOOLS, "an MCP host lists the tools up front");

    transcript.turn("a turn that does not use the browser");
    let summary = home.hook(&env, "turn-end", &claude_stop(session, &transcript.0));
    assert!(!home.chromium_running(), "no browser for a session that never asked for one ({summary})");

    // The first browser call is a status read: it says there is no browser yet, and that is not a failure.
    let status = mcp.call("browser_status", json!({})).await.ok();
    assert_eq!(status["browser"], "notStarted", "{status}");
    assert_eq!(status["autoTurnCleanup"], "pending", "{status}");
    assert!(status.get("missingCapabilities").is_none(), "nothing is missing before there is a browser: {status}");
    assert!(!home.chromium_running(), "a status read starts no browser");

    transcript.turn("another turn without the browser");
    let summary = home.hook(&env, "turn-end", &claude_stop(session, &transcript.0));
    assert!(summary.contains("ok=true closed=[] released=[] kept=[] failed=[]"), "{summary}");
    let broker = home.broker_status();
    assert_eq!(broker["browsers"][0]["browserStart"], "notStarted", "{broker}");
    assert_eq!(broker["browsers"][0]["autoTurnCleanup"], "pending", "{broker}");
    assert!(!home.chromium_running(), "a turn end with nothing to do starts no browser");
    mcp.close().await;
}

/// 2. The browser session is set up once per host session and kept across turns and calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ac2_one_host_session_is_one_browser_session_across_turns() {
    let site = site().await;
    let home = Home::new(&Options::default());
    let session = "cx-ac2";
    let env = home.codex_env();
    let mcp = Mcp::spawn(&home, Host::Codex { session: session.into() }).await;
    for turn in ["t1", "t2", "t3"] {
        mcp.codex_turn(turn);
        let tab = open(&mcp, &fixture(&site, &format!("ac2-{turn}"))).await;
        mcp.call("browser_observe", json!({"tab": tab})).await.ok();
        home.hook(&env, "turn-end", &codex_stop(session, turn));
    }
    let broker = home.broker_status();
    let mine: Vec<_> =
        broker["sessions"].as_array().unwrap().iter().filter(|s| s["hostSessionId"] == session).collect();
    assert_eq!(mine.len(), 1, "one broker session for the host session: {broker}");
    assert_eq!(mine[0]["host"], "codex");
    let changes = mcp.take_notifications().into_iter().filter(|n| n["method"] == "notifications/tools/list_changed");
    assert!(changes.count() <= 1, "the tools were set up once");
    assert_eq!(mcp.tool_names().await.len(), CORE_TOOLS);
    mcp.close().await;
    site.shutdown().await;
}

/// 3. Several turns on the same tab: the tab, the bridge and the tools stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ac3_several_turns_on_one_tab_keep_tab_bridge_and_tools() {
    let site = site().await;
    let home = Home::new(&Options::default());
    let session = "cx-ac3";
    let env = home.codex_env();
    let mcp = Mcp::spawn(&home, Host::Codex { session: session.into() }).await;
    mcp.codex_turn("t1");
    let tab = open(&mcp, &fixture(&site, "ac3")).await;
    for turn in ["t1", "t2", "t3"] {
        mcp.codex_turn(turn);
        mcp.call("browser_observe", json!({"tab": tab})).await.ok();
        mcp.call("browser_mark_deliverable", json!({"tab": tab})).await.ok();
        home.hook(&env, "turn-end", &codex_stop(session, turn));
        assert!(home.tab_open("ac3"), "turn {turn}: the re-marked tab is still open in the browser");
        let status = mcp.call("browser_status", json!({})).await.ok();
        assert_eq!(status["bridge"], "connected", "{status}");
        assert_eq!(mcp.tool_names().await.len(), CORE_TOOLS, "turn {turn}: the tools stay");
    }
    mcp.close().await;
    site.shutdown().await;
}

/// 4. A normal turn end closes unmarked scratch tabs, releases claimed user tabs, detaches the debugger, and says
/// nothing to the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ac4_turn_end_closes_scratch_releases_claims_detaches_quietly() {
    let site = site().await;
    let home = Home::new(&Options::default());
    let session = "cc-ac4";
    let transcript = Transcript::new(&home, session);
    let env = home.claude_env(session);
    let mcp = Mcp::spawn(&home, Host::ClaudeCode { session: session.into() }).await;
    let scratch = open(&mcp, &fixture(&site, "ac4-scratch")).await;
    home.open_user_tab(&fixture(&site, "ac4-user"));
    // Listed at once (see `ac4_a_tab_the_user_just_opened_is_listed_at_once`).
    let list = mcp.call("browser_list", json!({})).await.ok();
    let user = list["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["provenance"] == "user" && t["url"].as_str().is_some_and(|u| u.contains("ac4-user")))
        .and_then(|t| t["tab"].as_u64())
        .unwrap_or_else(|| panic!("the user's tab is listed: {list}"));
    mcp.call("browser_claim", json!({"tab": user})).await.ok();
    mcp.call("browser_observe", json!({"tab": user})).await.ok();
    mcp.call("browser_observe", json!({"tab": scratch})).await.ok();
    mcp.take_notifications();

    transcript.turn("worked on two tabs");
    let summary = home.hook(&env, "turn-end", &claude_stop(session, &transcript.0));
    assert!(summary.contains(&format!("closed=[{scratch}]")), "{summary}");
    assert!(summary.contains(&format!("released=[{user}]")), "{summary}");
    home.wait_tabs("the scratch tab is closed", |tabs| !tabs.iter().any(|(_, u)| u.contains("ac4-scratch"))).await;
    assert!(home.tab_open("ac4-user"), "the claimed user tab is released, never closed");
    let broker = home.broker_status();
    assert_eq!(broker["debuggerLeases"], json!([]), "every debugger lease of the session is detached: {broker}");
    assert_eq!(broker["writeLeases"], json!([]), "{broker}");
    let user_row = broker["tabs"].as_array().unwrap().iter().find(|t| t["tab"] == user).cloned();
    assert!(user_row.is_none_or(|t| t["provenance"] == "user" && t.get("session").is_none()), "{broker}");
    assert_eq!(mcp.take_notifications(), Vec::<serde_json::Value>::new(), "the turn end sends the model nothing");
    mcp.close().await;
    site.shutdown().await;
}

/// With 4: a tab the user opens is in the very next `browser_list`, whether the browser's own news of it reached the
/// broker before the list was read or after (the list registered it first and the news then said nothing new: the
/// tab was missing until its title or URL changed, for good on a page that had already loaded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ac4_a_tab_the_user_just_opened_is_listed_at_once() {
    let site = site().await;
    let home = Home::new(&Options::default());
    let mcp = Mcp::spawn(&home, Host::ClaudeCode { session: "cc-ac4-list".into() }).await;
    open(&mcp, &fixture(&site, "ac4-list-scratch")).await;
    let user_tabs =
        |list: &Value| list["tabs"].as_array().unwrap().iter().filter(|t| t["provenance"] == "user").count();
    let before = user_tabs(&mcp.call("browser_list", json!({})).await.ok());
    for i in 1..=8 {
        home.open_user_tab(&fixture(&site, &format!("ac4-list-user-{i}")));
        let list = mcp.call("browser_list", json!({})).await.ok();
        assert_eq!(user_tabs(&list), before + i, "the user's tab {i} is listed as soon as it is open: {list}");
        let url = format!("ac4-list-user-{i}");
        assert!(
            list["tabs"].as_array().unwrap().iter().any(|t| t["url"].as_str().is_some_and(|u| u.contains(&url))),
            "listed with its URL: {list}"
        );
    }
    mcp.close().await;
    site.shutdown().await;
}

/// 5. `browser_cleanup` (task finalize) handles each tab by ownership and the tools stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ac5_finalize_handles_tabs_by_ownership_and_keeps_the_tools() {
    let site = site().await;
    let home = Home::new(&Options::default());
    let mcp = Mcp::spawn(&home, Host::ClaudeCode { session: "cc-ac5".into() }).await;
    let keep = open(&mcp, &fixture(&site, "ac5-keep")).await;
    let close = open(&mcp, &fixture(&site, "ac5-close")).await;
    home.open_user_tab(&fixture(&site, "ac5-user"));
    let cleaned = mcp.call("browser_cleanup", json!({"keep": [keep], "close": [close]})).await.ok();
    assert_eq!(cleaned["ok"], true, "{cleaned}");
    home.wait_tabs("the closed tab is gone", |tabs| !tabs.iter().any(|(_, u)| u.contains("ac5-close"))).await;
    assert!(home.tab_open("ac5-keep"), "the kept tab stays open");
    assert!(home.tab_open("ac5-user"), "the user's tab is never touched");
    assert_eq!(mcp.tool_names().await.len(), CORE_TOOLS, "finalize keeps the tools");
    let list = mcp.call("browser_list", json!({})).await.ok();
    assert!(list["tabs"].as_array().unwrap().iter().any(|t| t["tab"] == keep), "the tools still work: {list}");
    mcp.close().await;
    site.shutdown().await;
}

/// 6. `browser_context_reset` cleans up and hides the tools, as asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ac6_context_reset_cleans_up_and_hides_the_tools() {
    let site = site().await;
    let home = Home::new(&Options::default());
    let mcp = Mcp::spawn(&home, Host::ClaudeCode { session: "cc-ac6".into() }).await;
    open(&mcp, &fixture(&site, "ac6")).await;
    let reset = mcp.call("browser_context_reset", json!({})).await.ok();
    assert_eq!((reset["ok"].clone(), reset["toolsActive"].clone()), (json!(true), json!(false)), "{reset}");
    home.wait_tabs("the reset closed the tab", |tabs| !tabs.iter().any(|(_, u)| u.contains("ac6"))).await;
    assert_eq!(mcp.tool_names().await, Vec::<String>::new(), "the session's tools are hidden");
    let changed = mcp.take_notifications().iter().any(|n| n["method"] == "notifications/tools/list_changed");
    assert!(changed, "the host is told to list the tools again");
    mcp.close().await;
    site.shutdown().await;
}

/// 7. The agent goes away without finalizing: stdin EOF (every host) and Claude Code's `SessionEnd` hook clean up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ac7_destroying_the_agent_without_finalize_cleans_up() {
    let site = site().await;
    let home = Home::new(&Options::default());
    let eof = Mcp::spawn(&home, Host::ClaudeCode { session: "cc-ac7-eof".into() }).await;
    open(&eof, &fixture(&site, "ac7-eof")).await;
    eof.close().await;
    home.wait_tabs("stdin EOF closed the session's tab", |tabs| !tabs.iter().any(|(_, u)| u.contains("ac7-eof"))).await;

    let session = "cc-ac7-end";
    let transcript = Transcript::new(&home, session);
    let mcp = Mcp::spawn(&home, Host::ClaudeCode { session: session.into() }).await;
    open(&mcp, &fixture(&site, "ac7-end")).await;
    let summary = home.hook(&home.claude_env(session), "session-end", &claude_session_end(session, &transcript.0));
    assert!(summary.contains("closed: ok=true"), "{summary}");
    home.wait_tabs("SessionEnd closed the session's tab", |tabs| !tabs.iter().any(|(_, u)| u.contains("ac7-end")))
        .await;
    let broker = home.broker_status();
    assert!(
        !broker["sessions"].as_array().unwrap().iter().any(|s| s["hostSessionId"] == session),
        "the session is gone: {broker}"
    );
    mcp.close().await;
    site.shutdown().await;
}

/// 8. The browser stops answering during cleanup: the cleanup fails without losing ownership, is reported as a
/// failure, and is retried once the browser answers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ac8_cleanup_retried_after_the_browser_stalls_keeps_ownership() {
    let site = site().await;
    let home = Home::new(&Options { op_timeout_ms: Some(3000) });
    let session = "cc-ac8";
    let transcript = Transcript::new(&home, session);
    let env = home.claude_env(session);
    let mcp = Mcp::spawn(&home, Host::ClaudeCode { session: session.into() }).await;
    let tab = open(&mcp, &fixture(&site, "ac8")).await;
    let pid = home.chromium_pid().expect("the managed Chromium runs").to_string();

    // The browser hangs (every CDP answer stops): the turn end cannot confirm the close.
    assert!(std::process::Command::new("kill").args(["-STOP", &pid]).status().unwrap().success());
    transcript.turn("the browser hung");
    let summary = home.hook(&env, "turn-end", &claude_stop(session, &transcript.0));
    assert!(summary.contains("ok=false") && summary.contains(&format!("failed=[{tab} ")), "{summary}");
    let status = mcp.call("browser_status", json!({})).await.ok();
    let recovery = status["recovery"].as_array().cloned().unwrap_or_default();
    assert!(recovery.iter().any(|r| r["tab"] == tab), "a recovery record keeps the failed close: {status}");
    let kept = status["tabs"].as_array().unwrap().iter().any(|t| t["tab"] == tab && t["state"] == "cleanupUnknown");
    assert!(kept, "ownership is kept while the close is unconfirmed: {status}");
    let cleanup = mcp.call("browser_cleanup", json!({})).await;
    assert!(cleanup.is_error, "a cleanup that could not finish is an MCP error: {:?}", cleanup.value);
    assert_eq!(cleanup.value["ok"], false, "the structured result is kept: {:?}", cleanup.value);

    // The browser answers again: the retry closes the tab and the record resolves.
    assert!(std::process::Command::new("kill").args(["-CONT", &pid]).status().unwrap().success());
    home.wait_tabs("the retried close closed the tab", |tabs| !tabs.iter().any(|(_, u)| u.contains("ac8"))).await;
    let mut resolved = false;
    for _ in 0..100 {
        let status = mcp.call("browser_status", json!({})).await.ok();
        if status.get("recovery").is_none_or(|r| r.as_array().is_some_and(Vec::is_empty)) {
            resolved = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(resolved, "the recovery record resolves once the close is confirmed");
    mcp.close().await;
    site.shutdown().await;
}

/// 9. Two sessions at once: neither can clean up the other's tabs, by any path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ac9_one_session_cannot_clean_up_anothers_tabs() {
    let site = site().await;
    let home = Home::new(&Options::default());
    let claude = "cc-ac9";
    let transcript = Transcript::new(&home, claude);
    let a = Mcp::spawn(&home, Host::ClaudeCode { session: claude.into() }).await;
    let codex = "cx-ac9";
    let b = Mcp::spawn(&home, Host::Codex { session: codex.into() }).await;
    b.codex_turn("t1");
    let tab_a = open(&a, &fixture(&site, "ac9-a")).await;
    open(&b, &fixture(&site, "ac9-b")).await;

    let closed = b.call("browser_close", json!({"tabs": [tab_a]})).await;
    assert!(closed.is_error, "{:?}", closed.value);
    assert_eq!(closed.code(), Some("OTHER_SESSION_TAB"), "{:?}", closed.value);
    let cleaned = b.call("browser_cleanup", json!({"close": [tab_a]})).await;
    assert!(cleaned.is_error, "{:?}", cleaned.value);
    assert!(home.tab_open("ac9-a"), "A's tab survives B's close and cleanup");

    home.hook(&home.codex_env(), "turn-end", &codex_stop(codex, "t1"));
    home.wait_tabs("B's turn end closed B's tab", |tabs| !tabs.iter().any(|(_, u)| u.contains("ac9-b"))).await;
    assert!(home.tab_open("ac9-a"), "B's turn end leaves A's tab alone");

    transcript.turn("done");
    home.hook(&home.claude_env(claude), "turn-end", &claude_stop(claude, &transcript.0));
    home.wait_tabs("A's turn end closed A's tab", |tabs| !tabs.iter().any(|(_, u)| u.contains("ac9-a"))).await;
    a.close().await;
    b.close().await;
    site.shutdown().await;
}
