//! Runtime tests beyond the seed's list: debugger leases (idle detach on the fake clock, user
//! cancel, failed detach retried), write leases through `act`, limits, cancellation safety.

mod support;

use std::time::Duration;

use browserd_core::Millis;
use browserd_core::debugger::DebuggerState;
use browserd_core::error::ErrorKind;
use browserd_core::provider::{FencingToken, ProviderErrorKind};
use browserd_core::recovery::RecoveryAction;
use browserd_core::runtime::RuntimeConfig;
use browserd_core::tabs::ResourceState;
use browserd_test_support::fake_provider::{FaultKind, Op, Times, sample_act_params};
use support::{harness, harness_with, kind};

#[tokio::test]
async fn debugger_detaches_after_the_idle_window_on_the_fake_clock() {
    let h = harness();
    let s = h.session("s").await;
    let t = h.open(&s).await;
    h.observe(&s, t).await.unwrap();
    assert!(h.fake.debugger_attached(t));
    assert_eq!(h.rt.next_deadline(), Some(Millis(1500)));

    h.clock.advance(1499);
    assert_eq!(h.rt.tick().await, Some(Millis(1500)));
    assert!(h.fake.debugger_attached(t), "not detached before the window");

    h.clock.advance(1);
    assert_eq!(h.rt.tick().await, None);
    assert!(!h.fake.debugger_attached(t));
    assert_eq!(h.fake.calls_to(Op::DetachDebugger, t).len(), 1);

    // Reused within the window: one attach for two operations, and the window restarts.
    h.observe(&s, t).await.unwrap();
    h.clock.advance(1000);
    h.observe(&s, t).await.unwrap();
    assert_eq!(h.fake.calls_to(Op::AttachDebugger, t).len(), 2);
    assert_eq!(h.rt.next_deadline(), Some(Millis(4000)), "1500 + 1000 + the 1500 ms window");
    // Tab ownership is untouched by debugger detach.
    assert_eq!(h.state(t), ResourceState::Owned);
}

#[tokio::test]
async fn idle_window_is_configurable() {
    let mut config = RuntimeConfig::default();
    config.lifecycle.idle_detach_ms = 200;
    let h = harness_with(config);
    let s = h.session("s").await;
    let t = h.open(&s).await;
    h.observe(&s, t).await.unwrap();
    assert_eq!(h.rt.next_deadline(), Some(Millis(200)));
}

#[tokio::test]
async fn user_cancelled_debugger_clears_only_debugger_state() {
    let h = harness();
    let user = h.fake.seed_user_tab("https://u.example", None);
    let s = h.session("s").await;
    h.rt.claim_tab(&s, user).await.unwrap();
    h.observe(&s, user).await.unwrap();
    h.fake.user_cancel_debugger(user);

    let status = h.rt.status(&s).await.unwrap();
    assert!(status.debugger.is_empty());
    assert_eq!(h.state(user), ResourceState::Owned, "claim and ownership stay");
    assert!(h.fake.is_open(user));
    assert_eq!(h.fake.owner(user), Some(s.clone()));
    assert!(h.fake.calls_to(Op::ReleaseTab, user).is_empty());
    // The next operation attaches again on demand.
    h.observe(&s, user).await.unwrap();
    assert_eq!(h.fake.calls_to(Op::AttachDebugger, user).len(), 2);
}

#[tokio::test]
async fn failed_detach_is_recorded_and_retried() {
    let h = harness();
    let s = h.session("s").await;
    let t = h.open(&s).await;
    h.observe(&s, t).await.unwrap();
    h.rt.mark_deliverable(&s, t).await.unwrap();
    h.fake.inject(Op::DetachDebugger, Some(t), FaultKind::Fail(ProviderErrorKind::Internal), Times::Once);

    let report = h.rt.end_turn(&s).await.unwrap();
    assert!(!report.ok);
    assert_eq!(report.retained, vec![t]);
    let status = h.rt.status(&s).await.unwrap();
    assert_eq!(status.debugger, vec![(t, DebuggerState::DetachFailed)]);
    assert_eq!(status.recovery.len(), 1);
    assert_eq!(status.recovery[0].action, RecoveryAction::Detach);
    assert!(h.fake.debugger_attached(t));

    h.rt.list_tabs(&s).await.unwrap();
    assert!(!h.fake.debugger_attached(t));
    let status = h.rt.status(&s).await.unwrap();
    assert!(status.debugger.is_empty() && status.recovery.is_empty());
    assert_eq!(h.state(t), ResourceState::Retained, "detach does not change the tab record");
}

#[tokio::test]
async fn act_checks_the_write_lease_and_carries_the_fencing_token() {
    let h = harness();
    let a = h.session("a").await;
    let t = h.open(&a).await;
    let params = sample_act_params();

    let token = h.rt.acquire_write_lease(&a, t).await.unwrap();
    assert_eq!(h.rt.acquire_write_lease(&a, t).await.unwrap(), token, "idempotent for the holder");
    h.rt.act(&a, t, &params, Some(token)).await.unwrap();
    let act = h.fake.calls_to(Op::Act, t).pop().unwrap();
    assert_eq!(act.fencing, Some(token));

    let stale = FencingToken(token.0 - 1);
    assert!(matches!(kind(h.rt.act(&a, t, &params, Some(stale)).await), ErrorKind::StaleFencingToken { .. }));

    // After a release, the old token is stale and a new lease has a strictly larger token.
    assert!(h.rt.release_write_lease(&a, t).await.unwrap());
    assert!(matches!(kind(h.rt.act(&a, t, &params, Some(token)).await), ErrorKind::StaleFencingToken { .. }));
    let next = h.rt.acquire_write_lease(&a, t).await.unwrap();
    assert!(next > token);
    // Without a token, act takes the session's lease.
    h.rt.act(&a, t, &params, None).await.unwrap();
    // Turn end drops write leases: a new turn needs a new lease.
    h.rt.mark_deliverable(&a, t).await.unwrap();
    h.rt.end_turn(&a).await.unwrap();
    assert!(matches!(kind(h.rt.act(&a, t, &params, Some(next)).await), ErrorKind::StaleFencingToken { .. }));

    let b = h.session("b").await;
    assert!(matches!(kind(h.rt.act(&b, t, &params, None).await), ErrorKind::OtherSessionTab { .. }));
    h.assert_no_violations();
}

#[tokio::test]
async fn tab_limit_is_enforced_with_a_typed_error() {
    let h = harness();
    let s = h.session("s").await;
    for _ in 0..3 {
        h.open(&s).await;
    }
    assert_eq!(kind(h.rt.open_tab(&s, "http://x").await), ErrorKind::TooManyTabs { limit: 3 });
    h.rt.end_turn(&s).await.unwrap();
    h.open(&s).await;
}

#[tokio::test]
async fn tools_must_be_active_and_sessions_known() {
    let h = harness();
    let s = support::key("s");
    assert_eq!(kind(h.rt.open_tab(&s, "http://x").await), ErrorKind::UnknownSession);
    h.rt.open_session(&s).await.unwrap();
    assert_eq!(kind(h.rt.open_tab(&s, "http://x").await), ErrorKind::ToolsInactive);
    h.rt.activate_tools(&s).await.unwrap();
    assert!(!h.rt.activate_tools(&s).await.unwrap(), "activation is idempotent");
    h.open(&s).await;
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_cleanup_is_recorded_as_unknown_never_as_done() {
    let h = harness();
    let s = h.session("s").await;
    let t = h.open(&s).await;
    h.fake.set_delay_for(Op::CloseTab, Duration::from_secs(1));
    let cancelled = tokio::time::timeout(Duration::from_millis(100), h.rt.end_turn(&s)).await;
    assert!(cancelled.is_err(), "the turn end was cut short by the caller");
    assert_eq!(h.state(t), ResourceState::CleanupUnknown);
    let status = h.rt.status(&s).await.unwrap();
    assert_eq!(status.recovery.len(), 1);
    assert!(status.recovery[0].outcome_unknown);
    assert_eq!(h.rt.inspect(|e| e.in_flight()), 0);
    // The next turn end retries and confirms.
    h.fake.set_delay_for(Op::CloseTab, Duration::ZERO);
    let report = h.rt.end_turn(&s).await.unwrap();
    assert_eq!(report.closed, vec![t]);
    assert_eq!(h.state(t), ResourceState::Released);
}

#[tokio::test]
async fn turn_end_is_idempotent() {
    let h = harness();
    let s = h.session("s").await;
    let t = h.open(&s).await;
    h.rt.mark_deliverable(&s, t).await.unwrap();
    let first = h.rt.end_turn(&s).await.unwrap();
    let second = h.rt.end_turn(&s).await.unwrap();
    assert_eq!(first.retained, vec![t]);
    assert_eq!(second.retained, vec![t], "a repeated turn.end for the same turn changes nothing");
    assert!(h.fake.is_open(t));
}

#[tokio::test]
async fn resync_after_lost_events_rereads_the_tab_list() {
    let h = harness();
    let s = h.session("s").await;
    let t = h.open(&s).await;
    h.rt.list_tabs(&s).await.unwrap();
    // The user closes the tab while browserd misses the event: the next connect re-reads tabs.
    h.fake.drop_connection();
    h.fake.user_close_tab(t);
    h.fake.restore_connection();
    let tabs = h.rt.list_tabs(&s).await.unwrap();
    assert!(tabs.iter().all(|v| v.tab != t));
    assert_eq!(h.state(t), ResourceState::Released);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_sessions_in_parallel_stay_isolated_and_dispose_cleanly() {
    let h = harness();
    let user = h.fake.seed_user_tab("https://shared.example", None);
    let mut tasks = Vec::new();
    for n in 0..4 {
        let s = h.session(&format!("p{n}")).await;
        let rt = h.rt.clone();
        tasks.push(tokio::spawn(async move {
            for round in 0..10 {
                let tab = rt.open_tab(&s, "http://127.0.0.1/p").await.unwrap().tab;
                let _ = rt.claim_tab(&s, user).await; // only one session can hold it at a time
                rt.observe(&s, tab, &browserd_protocol::ObserveParams::default()).await.unwrap();
                if round % 3 == 0 {
                    rt.mark_deliverable(&s, tab).await.unwrap();
                }
                let defaults = browserd_core::lifecycle::FinalizeInputs::default();
                let (a, b) = tokio::join!(rt.end_turn(&s), rt.finalize(&s, &defaults));
                assert!(a.unwrap().ok);
                assert!(b.unwrap().ok);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let report = h.rt.dispose_plugin().await;
    assert!(report.waited_for_active);
    assert_eq!(report.pending_recovery, 0);
    assert!(h.fake.is_open(user));
    h.assert_no_violations();
}
