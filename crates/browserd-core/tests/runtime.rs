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
    let told = h.rt.list_tabs(&s).await.unwrap_err();
    assert_eq!(told.kind, ErrorKind::BrowserRestarted, "the session is told once that the browser came back");
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

// ----- browser_handoff with `until`: waiting for the user, read-only -----

mod page_fake;

mod handoff_wait {
    use std::sync::Arc;
    use std::time::Duration;

    use browserd_core::error::{CoreError, ErrorKind};
    use browserd_core::provider::{SessionKey, TabHandle};
    use browserd_core::runtime::{HandoffEnd, HandoffProgress, HandoffWait, Runtime, RuntimeConfig};
    use browserd_core::tabs::Provenance;
    use browserd_protocol::Expectation;
    use browserd_test_support::fake_clock::FakeClock;
    use browserd_test_support::fake_provider::{Op, sample_act_params};
    use tokio::sync::watch;
    use tokio::task::JoinHandle;

    use super::page_fake::PageFake;

    struct Setup {
        page: Arc<PageFake>,
        clock: FakeClock,
        rt: Runtime,
        s: SessionKey,
        tab: TabHandle,
    }

    /// A session with one tab it acted on (so it held the write lease), then handed off.
    async fn handed_off() -> Setup {
        let page = Arc::new(PageFake::new());
        let clock = FakeClock::new();
        let config = RuntimeConfig { handoff_poll: Duration::from_millis(5), ..RuntimeConfig::default() };
        let rt = Runtime::new(page.clone(), Arc::new(clock.clone()), config);
        let s = SessionKey("agent".into());
        rt.open_session(&s).await.unwrap();
        rt.activate_tools(&s).await.unwrap();
        let tab = rt.open_tab(&s, "https://a.test/login").await.unwrap().tab;
        page.navigate(tab, "https://a.test/login");
        rt.act(&s, tab, &sample_act_params(), None).await.unwrap();
        assert_eq!(rt.status(&s).await.unwrap().write_leases.len(), 1);
        let report = rt.handoff(&s, tab).await.unwrap();
        assert!(report.ok, "{report:?}");
        assert!(rt.status(&s).await.unwrap().write_leases.is_empty(), "handoff drops the write lease");
        assert!(!page.fake.debugger_attached(tab), "handoff detaches the debugger");
        Setup { page, clock, rt, s, tab }
    }

    struct Waiting {
        task: JoinHandle<Result<HandoffEnd, CoreError>>,
        looks: watch::Receiver<u32>,
    }

    impl Waiting {
        /// Returns once the wait has looked at the tab `n` times without finishing.
        async fn looked(&mut self, n: u32) {
            self.looks.wait_for(|c| *c >= n).await.expect("the wait ended before looking");
        }
    }

    fn start(setup: &Setup, until: serde_json::Value, timeout: Option<Duration>) -> Waiting {
        let until: Vec<Expectation> = serde_json::from_value(until).unwrap();
        let (tx, looks) = watch::channel(0u32);
        let (rt, s, tab) = (setup.rt.clone(), setup.s.clone(), setup.tab);
        let task = tokio::spawn(async move {
            let progress = move |p: &HandoffProgress| {
                let _ = tx.send(p.checks);
            };
            rt.await_handoff(&s, tab, &HandoffWait { until, timeout }, &progress).await
        });
        Waiting { task, looks }
    }

    #[tokio::test]
    async fn completes_when_the_user_reaches_the_url_and_takes_the_lease_back() {
        let h = handed_off().await;
        h.page.fake.clear_calls();
        let mut w = start(&h, serde_json::json!([{"kind": "url", "contains": "/home"}]), None);
        w.looked(2).await;

        // Nobody writes to a tab the user has: the agent's own action is refused before the browser hears of it.
        let refused = h.rt.act(&h.s, h.tab, &sample_act_params(), None).await.unwrap_err();
        assert!(matches!(&refused.kind, ErrorKind::LeaseHeldByOther { holder, .. } if holder.0 == "user"), "{refused}");
        assert_eq!(h.rt.inspect(|e| e.handoff_waiting(h.tab).cloned()), Some(h.s.clone()));

        h.page.navigate(h.tab, "https://a.test/home");
        let end = w.task.await.unwrap().unwrap();
        let HandoffEnd::Completed { evidence, url, token, .. } = end else { panic!("not completed: {end:?}") };
        assert_eq!(url, "https://a.test/home");
        assert!(evidence.len() == 1 && evidence[0].passed, "{evidence:?}");
        let status = h.rt.status(&h.s).await.unwrap();
        assert_eq!(status.write_leases, vec![(h.tab, token)], "the lease is the session's again");
        assert_eq!(h.rt.inspect(|e| e.handoff_waiting(h.tab).cloned()), None);
        // A URL criterion is read from browser events: the wait neither acted on the page nor attached to it.
        let calls = h.page.fake.calls();
        assert!(
            calls.iter().all(|c| !matches!(c.op, Op::Act | Op::AttachDebugger | Op::Observe)),
            "the wait touched the page: {calls:?}"
        );
        // Control is back: acting works again, under the re-acquired lease.
        h.rt.act(&h.s, h.tab, &sample_act_params(), Some(token)).await.unwrap();
    }

    #[tokio::test]
    async fn page_criteria_are_read_by_observing_without_input() {
        let h = handed_off().await;
        h.page.set_content(h.tab, "e1 textbox \"Password\"");
        h.page.fake.clear_calls();
        let until = serde_json::json!([
            {"kind": "textPresent", "text": "Welcome back"},
            {"kind": "disappears", "text": "Password"},
            {"kind": "appears", "role": "button", "name": "log out"}
        ]);
        let mut w = start(&h, until, None);
        w.looked(2).await;
        h.page.set_content(h.tab, "# Account\ne4 button \"Log out\"\nWelcome back, Ada");
        let end = w.task.await.unwrap().unwrap();
        let HandoffEnd::Completed { evidence, .. } = end else { panic!("not completed: {end:?}") };
        assert!(evidence.iter().all(|r| r.passed), "{evidence:?}");
        let calls = h.page.fake.calls();
        assert!(calls.iter().any(|c| c.op == Op::Observe), "page criteria are read with an observation");
        assert!(calls.iter().all(|c| c.op != Op::Act), "no input while waiting: {calls:?}");
    }

    #[tokio::test]
    async fn deadline_on_the_runtime_clock_leaves_the_tab_handed_off() {
        let h = handed_off().await;
        let mut w = start(&h, serde_json::json!([{"kind": "url", "contains": "/never"}]), None);
        w.looked(1).await;
        h.clock.advance(300_000);
        let end = w.task.await.unwrap().unwrap();
        let HandoffEnd::TimedOut { evidence, url, waited_ms } = end else { panic!("not timed out: {end:?}") };
        assert!(waited_ms >= 300_000);
        assert_eq!(url, "https://a.test/login");
        assert!(!evidence[0].passed && evidence[0].detail.contains("a.test/login"), "{evidence:?}");
        let status = h.rt.status(&h.s).await.unwrap();
        assert!(status.write_leases.is_empty(), "no lease after a timeout");
        let view = status.tabs.iter().find(|v| v.tab == h.tab).unwrap();
        assert_eq!(view.provenance, Provenance::Handoff, "still handed off");
        assert_eq!(h.rt.inspect(|e| e.handoff_waiting(h.tab).cloned()), None);
    }

    #[tokio::test]
    async fn the_user_closing_the_tab_ends_the_wait() {
        let h = handed_off().await;
        let mut w = start(&h, serde_json::json!([{"kind": "navigated"}]), Some(Duration::from_secs(60)));
        w.looked(1).await;
        h.page.user_close(h.tab);
        let end = w.task.await.unwrap().unwrap();
        assert!(matches!(end, HandoffEnd::TabClosed { .. }), "{end:?}");
        assert_eq!(h.rt.inspect(|e| e.handoff_waiting(h.tab).cloned()), None);
    }

    #[tokio::test]
    async fn turn_end_cancels_the_wait_and_keeps_the_page() {
        let h = handed_off().await;
        let mut w = start(&h, serde_json::json!([{"kind": "url", "contains": "/home"}]), None);
        w.looked(1).await;
        let report = h.rt.end_turn(&h.s).await.unwrap();
        assert!(report.ok && report.closed.is_empty(), "{report:?}");
        let err = w.task.await.unwrap().unwrap_err();
        assert_eq!(err.kind, ErrorKind::Cancelled, "{err}");
        assert!(err.message.contains("stays handed off"), "{err}");
        assert!(h.page.fake.is_open(h.tab), "the handed-off page is kept");
        assert!(h.page.fake.violations().is_empty());
    }

    #[tokio::test]
    async fn bad_waits_are_refused_before_waiting() {
        let h = handed_off().await;
        let url = || serde_json::from_value(serde_json::json!([{"kind": "url", "contains": "/x"}])).unwrap();
        let none = |_: &HandoffProgress| {};
        let long = HandoffWait { until: url(), timeout: Some(Duration::from_secs(3 * 3600)) };
        let err = h.rt.await_handoff(&h.s, h.tab, &long, &none).await.unwrap_err();
        assert!(err.kind == ErrorKind::InvalidRequest && err.message.contains("at most 1800000 ms"), "{err}");
        let empty = HandoffWait { until: Vec::new(), timeout: None };
        assert_eq!(h.rt.await_handoff(&h.s, h.tab, &empty, &none).await.unwrap_err().kind, ErrorKind::InvalidRequest);
        let other = h.rt.open_tab(&h.s, "https://a.test/other").await.unwrap().tab;
        let not_handed = HandoffWait { until: url(), timeout: None };
        let err = h.rt.await_handoff(&h.s, other, &not_handed, &none).await.unwrap_err();
        assert!(err.message.contains("not handed off"), "{err}");
    }
}

#[tokio::test]
async fn a_tab_gone_error_from_an_operation_does_not_drop_a_live_tab() {
    // Issue 18: a detached session's "target closed" during a screenshot or an attach dropped a tab that was still
    // open, and cleanup then reported `closed: []` while the tab stayed in the browser.
    let h = harness();
    let s = h.session("s").await;
    let t = h.open(&s).await;
    h.fake.inject(Op::AttachDebugger, Some(t), FaultKind::Fail(ProviderErrorKind::TabGone), Times::Once);
    assert_eq!(kind(h.observe(&s, t).await), ErrorKind::TabGone { tab: Some(t) });
    assert_eq!(h.state(t), ResourceState::Owned, "the tab is still open in the browser: it stays owned");
    assert!(h.rt.list_tabs(&s).await.unwrap().iter().any(|v| v.tab == t));
    let report = h.rt.finalize(&s, &browserd_core::lifecycle::FinalizeInputs::default()).await.unwrap();
    assert_eq!(report.closed, vec![t], "cleanup closes the tab it still owns");
    assert!(!h.fake.is_open(t));
}

#[tokio::test]
async fn a_tab_the_browser_no_longer_lists_is_dropped_after_an_operation_says_it_is_gone() {
    let h = harness();
    let s = h.session("s").await;
    let t = h.open(&s).await;
    h.rt.list_tabs(&s).await.unwrap();
    h.fake.drop_connection();
    h.fake.user_close_tab(t);
    h.fake.restore_connection();
    assert_eq!(h.rt.list_tabs(&s).await.unwrap_err().kind, ErrorKind::BrowserRestarted);
    assert_eq!(h.state(t), ResourceState::Released, "absent from the browser's list: gone");
}

#[tokio::test]
async fn each_session_is_told_once_that_the_browser_came_back() {
    let h = harness();
    let a = h.session("a").await;
    let b = h.session("b").await;
    let ta = h.open(&a).await;
    let tb = h.open(&b).await;
    h.fake.drop_connection();
    assert_eq!(kind(h.observe(&a, ta).await), ErrorKind::ConnectionLost);
    h.fake.restore_connection();
    for (s, t) in [(&a, ta), (&b, tb)] {
        assert_eq!(kind(h.observe(s, t).await), ErrorKind::BrowserRestarted);
        h.observe(s, t).await.unwrap();
        h.observe(s, t).await.unwrap();
    }
    // A session opened after the comeback has nothing to be told.
    let c = h.session("c").await;
    let tc = h.open(&c).await;
    h.observe(&c, tc).await.unwrap();
}
