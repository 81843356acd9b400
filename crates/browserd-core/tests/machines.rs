//! Unit tests of each sans-I/O state machine, driven by hand with explicit `now` values (no
//! runtime, no provider).

use browserd_core::Millis;
use browserd_core::activation::{ActivationState, DeactivationCause, ToolActivation};
use browserd_core::bridge::{Bridge, BridgeState, StopCause};
use browserd_core::debugger::{DebuggerAcquire, DebuggerLeases, DebuggerState};
use browserd_core::error::{CoreError, ErrorKind};
use browserd_core::lifecycle::{Boundary, Lifecycle, LifecycleConfig, StepAction, StepOutcome, StepPurpose};
use browserd_core::provider::{
    Capability, CapabilityMatrix, CapabilityState, FencingToken, ProviderError, ProviderErrorKind, SessionKey,
    TabHandle, TabInfo,
};
use browserd_core::recovery::{RecoveryAction, RecoveryLog};
use browserd_core::tabs::{MarkKind, Provenance, ResourceState, TabTable};
use browserd_core::write_lease::WriteLeases;

fn key(s: &str) -> SessionKey {
    SessionKey(s.to_owned())
}

fn info(n: u64) -> TabInfo {
    TabInfo {
        tab: TabHandle(n),
        url: format!("http://t{n}"),
        title: String::new(),
        group: None,
        opener: None,
        active: false,
    }
}

#[test]
fn activation_is_sticky_and_only_explicit_causes_deactivate() {
    let mut a = ToolActivation::new();
    assert_eq!(a.state(), ActivationState::Inactive);
    assert!(a.handle_activate(Millis(1)));
    assert!(!a.handle_activate(Millis(2)), "idempotent");
    assert_eq!(a.generation(), 1);
    assert!(a.handle_deactivate(DeactivationCause::ContextReset, Millis(3)));
    assert!(!a.handle_deactivate(DeactivationCause::Disposal, Millis(4)));
    assert_eq!(a.last_cause(), Some(DeactivationCause::ContextReset));
    assert!(a.handle_activate(Millis(5)));
    assert_eq!(a.generation(), 2, "a new activation invalidates old tool snapshots");
}

#[test]
fn bridge_transitions() {
    let mut b = Bridge::new();
    assert_eq!(b.state(), BridgeState::Stopped);
    b.handle_connection_lost(Millis(0));
    assert_eq!(b.state(), BridgeState::Stopped, "a stopped bridge does not start reconnecting");
    b.handle_connected(1, Millis(1));
    assert_eq!(b.state(), BridgeState::Connected { epoch: 1 });
    b.handle_connection_lost(Millis(2));
    assert_eq!(b.state(), BridgeState::Reconnecting { last_epoch: 1 });
    assert!(b.needs_connect());
    b.handle_connected(2, Millis(3));
    assert_eq!(b.state(), BridgeState::Connected { epoch: 2 });
    assert_eq!(b.reconnects(), 1);
    b.handle_connected(1, Millis(4));
    assert_eq!(b.state(), BridgeState::Connected { epoch: 2 }, "an older epoch is ignored");
    b.handle_connection_lost(Millis(4));
    b.handle_connected(2, Millis(4));
    assert_eq!(b.state(), BridgeState::Connected { epoch: 2 });
    assert_eq!(b.reconnects(), 1, "the same connection answering again is not a comeback");
    b.handle_connected(3, Millis(4));
    assert_eq!(b.state(), BridgeState::Connected { epoch: 3 });
    assert_eq!(b.reconnects(), 2, "a new connection is a comeback even when its loss went unseen");
    b.handle_stop(StopCause::PluginDisposal, Millis(5));
    assert_eq!(b.state(), BridgeState::Stopped);
    assert_eq!(b.stop_cause(), Some(StopCause::PluginDisposal));
    b.handle_stop(StopCause::PluginDisposal, Millis(6));
    assert_eq!(b.since(), Millis(5), "stop is idempotent");
}

#[test]
fn write_lease_tokens_are_strictly_monotonic_and_checked_in_one_place() {
    let (a, b, t) = (key("a"), key("b"), TabHandle(1));
    let mut w = WriteLeases::new();
    let t1 = w.acquire(&a, t, Millis(0)).unwrap();
    assert_eq!(w.acquire(&a, t, Millis(1)).unwrap(), t1);
    assert_eq!(
        w.acquire(&b, t, Millis(1)).unwrap_err().kind,
        ErrorKind::LeaseHeldByOther { tab: t, holder: a.clone() }
    );
    w.check(&a, t, t1).unwrap();
    assert!(matches!(w.check(&b, t, t1).unwrap_err().kind, ErrorKind::LeaseHeldByOther { .. }));
    assert!(w.release(&a, t));
    assert!(!w.release(&a, t));
    assert_eq!(
        w.check(&a, t, t1).unwrap_err().kind,
        ErrorKind::StaleFencingToken { tab: t, presented: t1, current: None }
    );
    let t2 = w.acquire(&b, t, Millis(2)).unwrap();
    assert!(t2 > t1);
    w.revoke(t);
    let t3 = w.acquire(&a, t, Millis(3)).unwrap();
    assert!(t3 > t2);
    assert_eq!(
        w.check(&a, t, t2).unwrap_err().kind,
        ErrorKind::StaleFencingToken { tab: t, presented: t2, current: Some(t3) }
    );
    let mut last = FencingToken(0);
    for n in 0..50 {
        let tab = TabHandle(n % 3);
        w.revoke(tab);
        let tok = w.acquire(&a, tab, Millis(n)).unwrap();
        assert!(tok > last);
        last = tok;
    }
    assert_eq!(w.release_all(&a).len(), 3);
}

#[test]
fn debugger_lease_refcount_and_idle_timer() {
    let (s, t) = (key("s"), TabHandle(7));
    let mut d = DebuggerLeases::new(1500);
    assert_eq!(d.acquire(&s, t), DebuggerAcquire::NeedsAttach);
    d.handle_attach_result(t, true);
    assert_eq!(d.acquire(&s, t), DebuggerAcquire::Ready);
    d.release(t, Millis(100));
    assert_eq!(d.poll_timeout(), None, "still referenced");
    d.release(t, Millis(200));
    assert_eq!(d.poll_timeout(), Some(Millis(1700)));
    assert!(d.handle_timeout(None, Millis(1699)).is_empty());
    assert_eq!(d.due_sessions(Millis(1700)), vec![s.clone()]);
    assert_eq!(d.handle_timeout(None, Millis(1700)), vec![(s.clone(), t)]);
    assert_eq!(d.get(t).unwrap().state, DebuggerState::Detaching);
    d.handle_detach_result(t, false);
    assert_eq!(d.get(t).unwrap().state, DebuggerState::DetachFailed);
    assert_eq!(d.begin_detach_all(&s), vec![t], "a failed detach is retried at the next boundary");
    d.handle_detach_result(t, true);
    assert!(d.get(t).is_none());

    // A failed attach drops the reference; a user cancel clears only the lease.
    assert_eq!(d.acquire(&s, t), DebuggerAcquire::NeedsAttach);
    d.handle_attach_result(t, false);
    assert!(d.get(t).is_none());
    d.acquire(&s, t);
    d.handle_attach_result(t, true);
    assert!(d.handle_detached_externally(t));
    assert!(d.get(t).is_none());
}

#[test]
fn recovery_log_keeps_one_record_per_tab_and_action() {
    let (s, t) = (key("s"), TabHandle(3));
    let mut log = RecoveryLog::new();
    let boom = CoreError::new(ErrorKind::Internal, "boom");
    let lost = CoreError::new(ErrorKind::OutcomeUnknown, "lost");
    log.record_failure(&s, t, RecoveryAction::Close, &boom, false, Millis(1));
    let rec = log.record_failure(&s, t, RecoveryAction::Close, &lost, true, Millis(2)).clone();
    assert_eq!((rec.attempts, rec.outcome_unknown, rec.created_at), (2, true, Millis(1)));
    assert_eq!((rec.last_kind, rec.last_error.as_str()), (ErrorKind::OutcomeUnknown, "lost"));
    log.record_failure(&s, t, RecoveryAction::Detach, &boom, false, Millis(3));
    assert_eq!(log.len(), 2);
    assert!(log.resolve(t, RecoveryAction::Detach).is_some());
    assert_eq!(log.resolve_tab(t).len(), 1);
    assert!(log.is_empty());
}

#[test]
fn tab_provenance_depends_on_the_viewer() {
    let (a, b) = (key("a"), key("b"));
    let mut tabs = TabTable::new();
    tabs.handle_seen(&info(1), Millis(0));
    tabs.handle_created(&a, &info(2), Millis(0));
    tabs.handle_claimed(&a, TabHandle(1), Millis(0));
    assert_eq!(tabs.get(TabHandle(1)).unwrap().provenance(&a), Provenance::Claimed);
    assert_eq!(tabs.get(TabHandle(1)).unwrap().provenance(&b), Provenance::OtherSession { holder: a.clone() });
    assert_eq!(tabs.get(TabHandle(2)).unwrap().provenance(&a), Provenance::AgentCreated);
    tabs.set_mark(TabHandle(2), browserd_core::tabs::Mark { kind: MarkKind::Handoff, turn: 1 });
    assert_eq!(tabs.get(TabHandle(2)).unwrap().provenance(&a), Provenance::Handoff);
    tabs.handle_cleanup_failed(TabHandle(2), Millis(1), "x");
    assert_eq!(tabs.get(TabHandle(2)).unwrap().state, ResourceState::CleanupUnknown);
    assert!(tabs.get(TabHandle(2)).unwrap().owned_by(&a), "failure keeps ownership");
}

fn all_caps() -> CapabilityMatrix {
    CapabilityMatrix(Capability::TURN_CLEANUP_REQUIRED.iter().map(|c| (*c, CapabilityState::Supported)).collect())
}

fn engine_with_tabs() -> (Lifecycle, SessionKey) {
    let s = key("s");
    let mut e = Lifecycle::new(LifecycleConfig::default());
    e.handle_capabilities(all_caps());
    e.handle_connected(1, Millis(0));
    e.open_session(&s, Millis(0)).unwrap();
    e.activate_tools(&s, Millis(0)).unwrap();
    e.check_open_tab(&s).unwrap();
    e.handle_tab_created(&s, &info(1), Millis(0));
    e.handle_tab_created(&s, &info(2), Millis(0));
    (e, s)
}

#[test]
fn engine_turn_end_plan_and_marks_expire_unless_renewed() {
    let (mut e, s) = engine_with_tabs();
    e.mark(&s, TabHandle(2), MarkKind::Deliverable).unwrap();
    let plan = e.plan_turn_end(&s, Millis(10)).unwrap();
    assert_eq!(plan.boundary, Boundary::TurnEnd);
    assert_eq!(plan.retained, vec![TabHandle(2)]);
    assert_eq!(plan.steps.len(), 1);
    let step = plan.steps[0].clone();
    assert_eq!((step.tab, step.action, step.purpose), (TabHandle(1), StepAction::Close, StepPurpose::CloseScratch));
    assert_eq!(e.tabs().get(TabHandle(1)).unwrap().state, ResourceState::Finalizing);
    let outcome = e.handle_step_result(&step, Ok(()), Millis(11));
    assert_eq!(outcome, StepOutcome::Confirmed { note: None });
    let report = e.complete(&plan, &[(step, outcome)], Millis(12));
    assert!(report.ok && report.tools_active);
    assert_eq!(report.closed, vec![TabHandle(1)]);

    // Turn 2 without a new mark: the retained tab is closed at its end.
    e.begin_turn(&s).unwrap();
    let plan = e.plan_turn_end(&s, Millis(20)).unwrap();
    assert!(plan.retained.is_empty());
    assert_eq!(plan.steps[0].tab, TabHandle(2));
    assert_eq!(e.tabs().get(TabHandle(2)).unwrap().ownership.as_ref().unwrap().mark, None);
}

#[test]
fn engine_never_confirms_a_failed_step() {
    let (mut e, s) = engine_with_tabs();
    let plan = e.plan_finalize(&s, &Default::default(), Millis(1)).unwrap();
    let mut outcomes = Vec::new();
    for step in &plan.steps {
        let err = ProviderError::new(ProviderErrorKind::OutcomeUnknown, "ack lost");
        outcomes.push((step.clone(), e.handle_step_result(step, Err(err), Millis(2))));
    }
    let report = e.complete(&plan, &outcomes, Millis(3));
    assert!(!report.ok);
    assert!(report.closed.is_empty());
    assert_eq!(report.failures.len(), 2);
    assert_eq!(report.pending_recovery, 2);
    assert!(report.tools_active, "finalize never changes activation");
    for tab in [TabHandle(1), TabHandle(2)] {
        assert_eq!(e.tabs().get(tab).unwrap().state, ResourceState::CleanupUnknown);
    }
    // The retry plan closes them; only then are they released.
    let retry = e.plan_recovery(&s, Millis(4));
    assert_eq!(retry.steps.len(), 2);
    for step in &retry.steps {
        let gone = ProviderError::new(ProviderErrorKind::TabGone, "gone");
        e.handle_step_result(step, Err(gone), Millis(5));
    }
    assert!(e.recovery().is_empty());
    assert_eq!(e.tabs().get(TabHandle(1)).unwrap().state, ResourceState::Released);
}

#[test]
fn engine_refuses_other_sessions_tabs_naming_the_holder() {
    let (mut e, a) = engine_with_tabs();
    let b = key("b");
    e.open_session(&b, Millis(0)).unwrap();
    e.activate_tools(&b, Millis(0)).unwrap();
    let err = e.check_tab_access(&b, TabHandle(1)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::OtherSessionTab { tab: TabHandle(1), holder: a.clone() });
    assert_eq!(err.kind.code(), "OTHER_SESSION_TAB");
    assert!(err.message.contains("belongs to session s"), "{}", err.message);
    let err = e.plan_close_tabs(&b, &[TabHandle(2)], &[], Millis(0)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::OtherSessionTab { tab: TabHandle(2), holder: a });
}

#[test]
fn engine_refuses_automatic_turn_cleanup_without_capabilities() {
    let (mut e, s) = engine_with_tabs();
    e.handle_capabilities(CapabilityMatrix::default());
    let plan = e.plan_turn_end(&s, Millis(1)).unwrap();
    assert_eq!(plan.refused.as_deref(), Some(&Capability::TURN_CLEANUP_REQUIRED[..]));
    assert!(plan.steps.is_empty());
    let report = e.complete(&plan, &[], Millis(2));
    assert!(!report.ok);
    assert!(matches!(e.status(&s).unwrap().auto_cleanup, browserd_core::lifecycle::AutoCleanup::Refused { .. }));
}

#[test]
fn every_error_kind_has_a_protocol_code() {
    let (t, s) = (TabHandle(1), key("s"));
    let kinds = [
        ErrorKind::UnknownSession,
        ErrorKind::SessionClosed,
        ErrorKind::ShuttingDown,
        ErrorKind::ToolsInactive,
        ErrorKind::StaleToolSnapshot { presented: 1, current: 2 },
        ErrorKind::UnknownTab { tab: t },
        ErrorKind::TabGone { tab: Some(t) },
        ErrorKind::OtherSessionTab { tab: t, holder: s.clone() },
        ErrorKind::UserTabProtected { tab: t },
        ErrorKind::NotClaimed { tab: t },
        ErrorKind::TooManyTabs { limit: 3 },
        ErrorKind::LeaseHeldByOther { tab: t, holder: s },
        ErrorKind::StaleFencingToken { tab: t, presented: FencingToken(1), current: None },
        ErrorKind::LeaseRevoked,
        ErrorKind::CleanupFailed { failed: 1 },
        ErrorKind::AutoCleanupRefused { missing: vec![] },
        ErrorKind::ConnectionLost,
        ErrorKind::DeadlineExceeded,
        ErrorKind::Cancelled,
        ErrorKind::BrowserRefused,
        ErrorKind::Unsupported { reason: browserd_core::provider::UnsupportedReason::ByVersion },
        ErrorKind::OutcomeUnknown,
        ErrorKind::InvalidRequest,
        ErrorKind::Internal,
        ErrorKind::CleanupPending { tab: t },
    ];
    for kind in kinds {
        assert!(browserd_protocol::ErrorCode::from_name(kind.code()).is_some(), "{kind:?} has no wire code");
    }
}
