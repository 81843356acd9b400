//! Fault drill, cleanup while the browser is dead: a journaled broker with idle exit on; the managed Chromium is
//! killed (SIGKILL) and kept down (its relaunch fails until the test lets it start, through a wrapper executable), and
//! in that dead window one session's turn ends and another session closes, so their tab closes fail and go pending
//! as recovery records (in `status` and in the journal). Once the browser is back the records resolve
//! `alreadyGone` (the fresh browser has none of those tabs), the tab limit is free again, and the broker, idle, can
//! still exit on its own with nothing pending.

mod real_browser;

use std::path::{Path, PathBuf};
use std::time::Duration;

use browserd_broker::config::BrokerConfig;
use browserd_journal::recovery::{CleanupOp, RecoveryId, RecoveryState, Resolution};
use browserd_protocol::lifecycle::{
    BridgeState, CloseReason, RecoveryAction, SessionCloseParams, StatusParams, StatusResult, TurnEndParams,
    TurnEndReason,
};
use browserd_protocol::{ErrorCode, SessionId};
use real_browser::Real;
use serde_json::json;

const CHROMIUM: &str = "/usr/lib/chromium/chromium";

/// A launcher that runs Chromium unless `block` exists (then the launch fails at once).
fn wrapper(dir: &Path, block: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let exe = std::env::var("BROWSERD_CHROMIUM").unwrap_or_else(|_| CHROMIUM.to_owned());
    let path = dir.join("chromium-wrapper");
    let script = format!(
        "#!/bin/sh\nif [ -e '{}' ]; then echo 'the drill keeps the browser down' >&2; exit 1; fi\nexec '{exe}' \"$@\"\n",
        block.display()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

async fn status(real: &Real) -> StatusResult {
    real.c.call(&StatusParams::default()).await.unwrap()
}

/// Opens the fixture in a new tab of `s`; the tab's id.
async fn open(real: &Real, s: &SessionId) -> u64 {
    let url = real.site.url("/iframes.html");
    real.c.tool(s, "browser_open", json!({"url": url})).await.unwrap()["tab"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_records_made_while_the_browser_is_dead_resolve_already_gone_and_the_broker_still_idles_out() {
    let dir = tempfile::tempdir().unwrap();
    let block = dir.path().join("keep-the-browser-down");
    let config = BrokerConfig {
        idle_exit_secs: 1,
        reconnect_backoff_ms: 100,
        reconnect_backoff_max_ms: 200,
        ..BrokerConfig::default()
    };
    let real = Real::start_drill("drill-recovery-a", config, wrapper(dir.path(), &block)).await;
    let other = real.session("drill-recovery-b").await;
    let mut dead_tabs = Vec::new();
    for _ in 0..3 {
        dead_tabs.push(open(&real, &real.s).await);
    }
    dead_tabs.push(open(&real, &other).await);
    let full = real.c.tool(&real.s, "browser_open", json!({"url": real.site.url("/iframes.html")})).await;
    assert!(full.is_err(), "the session's tab limit (3) is reached: {full:?}");

    // Kill the browser and keep it down.
    std::fs::write(&block, b"").unwrap();
    let pid = real.browser_pid();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL).unwrap();
    let mut down = false;
    for _ in 0..400 {
        if status(&real).await.browsers[0].bridge == BridgeState::Reconnecting {
            down = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(down, "the broker saw the browser die");

    // The dead window: one session's turn ends, the other session closes; their closes cannot be confirmed.
    let ended = real
        .c
        .call(&TurnEndParams { session: real.s.clone(), reason: TurnEndReason::AgentEnd, host_turn_id: None })
        .await
        .unwrap();
    assert!(!ended.ok, "nothing could be confirmed on a dead browser: {ended:?}");
    real.c.call(&SessionCloseParams { session: other.clone(), reason: CloseReason::AgentDisposed }).await.unwrap();
    let st = status(&real).await;
    assert_eq!(st.browsers[0].bridge, BridgeState::Reconnecting, "still down: {:?}", st.browsers[0]);
    // The turn end only detaches (its automatic cleanup needs a browser to read capabilities from); the session close
    // closes its tab. A tab whose debugger the idle timer had already detached before the kill (the first one opened,
    // on a loaded machine) has nothing to detach, so it makes no record.
    let mut pending: Vec<u64> = st.recovery.iter().map(|r| r.tab.0).collect();
    pending.sort_unstable();
    pending.dedup();
    assert!(
        pending.len() >= 2 && pending.iter().all(|t| dead_tabs.contains(t)),
        "the dead tabs' cleanups went pending: {:?}",
        st.recovery
    );
    let other_tab = dead_tabs[3];
    assert!(pending.contains(&other_tab), "the closed session's tab is pending: {:?}", st.recovery);
    let st_records = st.recovery.len();
    let closing = st.recovery.iter().filter(|r| r.what == RecoveryAction::Close).count();
    assert_eq!(closing, 1, "the closed session's tab close is pending: {:?}", st.recovery);

    // Let the browser come back: the fresh browser has none of those tabs, so nothing is left to clean up.
    std::fs::remove_file(&block).unwrap();
    let mut back = None;
    for _ in 0..1200 {
        let st = status(&real).await;
        if st.browsers[0].bridge == BridgeState::Connected && st.recovery.is_empty() {
            back = Some(st);
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let st = back.expect("the browser came back and the dead tabs' records resolved");
    assert!(st.tabs.iter().all(|t| t.session.is_none()), "the dead tabs are released: {:?}", st.tabs);

    // The tab limit is free again (after the one BROWSER_RESTARTED).
    let told = real.c.tool(&real.s, "browser_list", json!({})).await.unwrap_err();
    assert_eq!(told.code(), ErrorCode::BrowserRestarted, "{told}");
    let mut fresh = Vec::new();
    for _ in 0..3 {
        fresh.push(open(&real, &real.s).await);
    }
    real.c.call(&SessionCloseParams { session: real.s.clone(), reason: CloseReason::AgentDisposed }).await.unwrap();

    // Idle: no client and nothing owned, so the broker exits by itself, with nothing pending.
    let journal = real.journal_path();
    let (summary, _dir) = real.until_idle_exit(Duration::from_secs(60)).await;
    assert_eq!(summary.pending_recovery, 0, "{summary:?}");
    let journal = browserd_journal::Journal::open(&journal, Default::default()).unwrap();
    assert!(journal.pending_recoveries().unwrap().is_empty(), "{:?}", journal.pending_recoveries());
    let records: Vec<_> = (1..=64).filter_map(|id| journal.recovery(RecoveryId(id)).unwrap()).collect();
    assert_eq!(records.len(), st_records, "every record the dead window made was journaled: {records:?}");
    assert_eq!(records.iter().filter(|r| r.op == CleanupOp::Close).count(), 1, "{records:?}");
    for r in &records {
        assert_eq!(r.state, RecoveryState::Resolved(Resolution::AlreadyGone), "the tab went with the browser: {r:?}");
    }
}
