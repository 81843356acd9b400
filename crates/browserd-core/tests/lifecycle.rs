//! The lifecycle seed's unit-test plan (生命周期单元测试), one test per item, run against the
//! runtime over the fake provider and the fake clock.
//!
//! | seed item | test |
//! | --- | --- |
//! | 1. Skill 成功后 browser tools 在连续多个 turn 保持激活 | `lc01_tools_stay_active_across_turns` |
//! | 2. turn cleanup 关闭未标记的 Agent 临时 Tab、release claimed user Tab，但不停止 Bridge | `lc02_turn_end_closes_unmarked_agent_tabs_releases_claims_keeps_bridge` |
//! | 3. turn cleanup 和 task finalize 只处理当前 Agent 有权处理的资源 | `lc03_turn_end_and_finalize_touch_only_own_resources` |
//! | 4. claimed user Tab 被 release 而不是 close | `lc04_claimed_user_tab_released_not_closed` |
//! | 5. handoff 和 deliverable Tab 始终保留 | `lc05_handoff_and_deliverable_tabs_always_kept` |
//! | 6. 混合 ownership 的 Tab group 不会整体关闭 | `lc06_mixed_ownership_group_never_closed_whole` |
//! | 7. task finalize 成功后 browser tools 仍然激活 | `lc07_finalize_keeps_tools_active` |
//! | 8. context reset 成功后才隐藏或注销 browser tools | `lc08_context_reset_hides_tools_only_after_success` |
//! | 9. cleanup 失败保留 ownership、activation 和 recovery record | `lc09_cleanup_failure_keeps_ownership_activation_and_recovery` |
//! | 10. cleanup 重试成功后状态才转为 released | `lc10_released_only_after_confirmed_retry` |
//! | 11. Agent disposal 关闭临时 Agent Tab，但不影响用户 Tab 或其他 session | `lc11_disposal_closes_agent_tabs_spares_user_and_other_sessions` |
//! | 12. Bridge 在普通 turn 和 task finalize 后保持连接 | `lc12_bridge_stays_connected_after_turn_and_finalize` |
//! | 13. plugin disposal 等待活动请求并停止 Bridge | `lc13_plugin_disposal_waits_for_active_requests_and_stops_bridge` |
//! | 14. 并发 finalize、checkpoint 和 disposal 按 session 串行化 | `lc14_concurrent_finalize_turn_end_disposal_serialized` |

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use browserd_core::bridge::BridgeState;
use browserd_core::error::ErrorKind;
use browserd_core::lifecycle::{CloseReason, FinalizeInputs, StepAction};
use browserd_core::provider::{ProviderErrorKind, TabHandle};
use browserd_core::recovery::RecoveryAction;
use browserd_core::tabs::{Ended, MarkKind, Provenance, ResourceState};
use browserd_test_support::fake_provider::{FaultKind, Op, Times};
use support::{harness, kind};

#[tokio::test]
async fn lc01_tools_stay_active_across_turns() {
    let h = harness();
    let s = h.session("pi-1").await;
    let generation = h.rt.status(&s).await.unwrap().activation_generation;
    for turn in 1..=3 {
        assert_eq!(h.rt.begin_turn(&s).await.unwrap(), turn);
        let tab = h.open(&s).await;
        h.observe(&s, tab).await.unwrap();
        let report = h.rt.end_turn(&s).await.unwrap();
        assert!(report.ok, "{report:?}");
        assert!(report.tools_active, "turn end must not deactivate tools");
        let status = h.rt.status(&s).await.unwrap();
        assert!(status.tools_active);
        // Never re-activated: the skill is not loaded again.
        assert_eq!(status.activation_generation, generation);
    }
    // The next turn uses the tools directly, without activating again.
    h.open(&s).await;
    h.assert_no_violations();
}

#[tokio::test]
async fn lc02_turn_end_closes_unmarked_agent_tabs_releases_claims_keeps_bridge() {
    let h = harness();
    let user = h.fake.seed_user_tab("https://mail.example/inbox", None);
    let s = h.session("pi-1").await;
    let scratch = h.open(&s).await;
    h.rt.claim_tab(&s, user).await.unwrap();
    h.observe(&s, scratch).await.unwrap();
    h.observe(&s, user).await.unwrap();

    let report = h.rt.end_turn(&s).await.unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.closed, vec![scratch]);
    assert_eq!(report.released, vec![user]);
    assert_eq!(report.detached, vec![user, scratch]); // sorted by handle; the user tab was seeded first
    assert!(matches!(report.bridge, BridgeState::Connected { .. }));

    assert!(!h.fake.is_open(scratch));
    assert!(h.fake.is_open(user), "a claimed user tab is released, never closed");
    assert_eq!(h.fake.owner(user), None);
    assert!(!h.fake.debugger_attached(user));
    assert!(h.fake.calls_to(Op::CloseTab, user).is_empty());
    assert_eq!(h.state(scratch), ResourceState::Released);
    assert_eq!(h.state(user), ResourceState::Released);
    assert_eq!(h.provenance(&s, user), Provenance::User);
    // The bridge was never restarted: one connect for the whole session.
    assert_eq!(h.fake.calls().iter().filter(|c| c.op == Op::Connect).count(), 1);
    assert!(matches!(h.rt.status(&s).await.unwrap().bridge, BridgeState::Connected { epoch: 1 }));
    h.assert_no_violations();
}

#[tokio::test]
async fn lc03_turn_end_and_finalize_touch_only_own_resources() {
    let h = harness();
    let u1 = h.fake.seed_user_tab("https://a.example", None);
    let u2 = h.fake.seed_user_tab("https://b.example", None);
    let untouched = h.fake.seed_user_tab("https://c.example", None);
    let a = h.session("a").await;
    let b = h.session("b").await;
    let a1 = h.open(&a).await;
    h.rt.claim_tab(&a, u1).await.unwrap();
    let b1 = h.open(&b).await;
    h.rt.claim_tab(&b, u2).await.unwrap();

    // Another session's tab is refused with a typed error naming the holder; nothing is done.
    let err = h.rt.finalize(&a, &FinalizeInputs { close: vec![b1], ..Default::default() }).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::OtherSessionTab { tab: b1, holder: b.clone() });
    assert!(h.fake.is_open(a1), "a refused finalize does nothing");
    assert_eq!(kind(h.observe(&a, b1).await), ErrorKind::OtherSessionTab { tab: b1, holder: b.clone() });
    assert_eq!(kind(h.rt.claim_tab(&a, u2).await), ErrorKind::OtherSessionTab { tab: u2, holder: b.clone() });

    h.fake.clear_calls();
    let report = h.rt.end_turn(&a).await.unwrap();
    assert_eq!((report.closed.clone(), report.released.clone()), (vec![a1], vec![u1]));
    let report = h.rt.finalize(&b, &FinalizeInputs::default()).await.unwrap();
    assert_eq!((report.closed.clone(), report.released.clone()), (vec![b1], vec![u2]));

    for call in h.fake.calls() {
        let Some(tab) = call.tab else { continue };
        let owner_of = if [a1, u1].contains(&tab) { &a } else { &b };
        assert!([a1, u1, b1, u2].contains(&tab), "untouched tab {tab} was called: {call:?}");
        assert_eq!(&call.session, owner_of, "{call:?} was made for the wrong session");
    }
    assert!(h.fake.is_open(untouched));
    h.assert_no_violations();
}

#[tokio::test]
async fn lc04_claimed_user_tab_released_not_closed() {
    let h = harness();
    let user = h.fake.seed_user_tab("https://bank.example", None);
    let s = h.session("s").await;
    h.rt.claim_tab(&s, user).await.unwrap();
    assert_eq!(h.provenance(&s, user), Provenance::Claimed);

    assert_eq!(kind(h.rt.close_tabs(&s, &[user], &[]).await), ErrorKind::UserTabProtected { tab: user });
    let close_user = FinalizeInputs { close: vec![user], ..Default::default() };
    assert_eq!(kind(h.rt.finalize(&s, &close_user).await), ErrorKind::UserTabProtected { tab: user });

    let report = h.rt.end_turn(&s).await.unwrap();
    assert_eq!(report.released, vec![user]);
    assert!(report.closed.is_empty());
    assert!(h.fake.is_open(user));
    assert!(h.fake.calls_to(Op::CloseTab, user).is_empty());
    assert_eq!(h.fake.calls_to(Op::ReleaseTab, user).len(), 1);
    // Claiming again later works: the tab is the user's again.
    h.rt.claim_tab(&s, user).await.unwrap();
    h.assert_no_violations();
}

#[tokio::test]
async fn lc05_handoff_and_deliverable_tabs_always_kept() {
    let h = harness();
    let s = h.session("s").await;
    let deliverable = h.open(&s).await;
    let handoff = h.open(&s).await;
    h.observe(&s, deliverable).await.unwrap();
    h.observe(&s, handoff).await.unwrap();
    h.rt.mark_handoff(&s, deliverable).await.unwrap();
    h.rt.mark_deliverable(&s, deliverable).await.unwrap(); // latest mark wins
    let handed = h.rt.handoff(&s, handoff).await.unwrap();
    assert_eq!(handed.detached, vec![handoff]);

    let report = h.rt.end_turn(&s).await.unwrap();
    assert_eq!(report.retained, vec![deliverable, handoff]);
    assert!(report.closed.is_empty());
    assert_eq!(report.detached, vec![deliverable], "marked tabs are detached too");
    assert!(!h.fake.debugger_attached(deliverable) && !h.fake.debugger_attached(handoff));
    assert_eq!(h.state(deliverable), ResourceState::Retained);
    assert_eq!(h.provenance(&s, deliverable), Provenance::Deliverable);
    assert_eq!(h.provenance(&s, handoff), Provenance::Handoff);
    assert_eq!(h.fake.owner(deliverable), Some(s.clone()), "turn end keeps the ownership record");

    // Next turn: only the deliverable is marked again; the handoff mark expires.
    h.rt.begin_turn(&s).await.unwrap();
    h.rt.mark_deliverable(&s, deliverable).await.unwrap();
    let report = h.rt.end_turn(&s).await.unwrap();
    assert_eq!(report.retained, vec![deliverable]);
    assert_eq!(report.closed, vec![handoff], "an unrenewed mark does not outlive the next turn end");

    // Finalize keeps the page but drops the old session's ownership metadata.
    let report = h.rt.finalize(&s, &FinalizeInputs::default()).await.unwrap();
    assert_eq!(report.kept, vec![deliverable]);
    assert!(h.fake.is_open(deliverable));
    assert_eq!(h.fake.owner(deliverable), None);
    assert_eq!(h.provenance(&s, deliverable), Provenance::User);
    let former = h.rt.inspect(|e| e.tabs().get(deliverable).unwrap().former.clone()).unwrap();
    assert_eq!((former.ended, former.mark), (Ended::Kept, Some(MarkKind::Deliverable)));

    // Disposal keeps marked pages too.
    let t = h.session("t").await;
    let kept = h.open(&t).await;
    h.rt.mark_handoff(&t, kept).await.unwrap();
    let report = h.rt.close_session(&t, CloseReason::AgentDisposed).await.unwrap();
    assert_eq!(report.kept, vec![kept]);
    assert!(h.fake.is_open(kept));
    h.assert_no_violations();
}

#[tokio::test]
async fn lc06_mixed_ownership_group_never_closed_whole() {
    let h = harness();
    let group = h.fake.new_group();
    let user = h.fake.seed_user_tab("https://user.example", Some(group));
    let claimed = h.fake.seed_user_tab("https://claimed.example", Some(group));
    let a = h.session("a").await;
    let b = h.session("b").await;
    let a1 = h.open(&a).await;
    let b1 = h.open(&b).await;
    h.rt.claim_tab(&a, claimed).await.unwrap();
    h.fake.move_to_group(a1, Some(group));
    h.fake.move_to_group(b1, Some(group));

    let report = h.rt.close_tabs(&a, &[], &[group]).await.unwrap();
    assert!(report.ok);
    assert_eq!(report.closed, vec![a1], "only this session's own agent tab in the group is closed");
    let skipped: Vec<(TabHandle, ErrorKind)> = report.skipped.iter().map(|s| (s.tab, s.reason.kind.clone())).collect();
    assert!(skipped.contains(&(user, ErrorKind::UserTabProtected { tab: user })));
    assert!(skipped.contains(&(claimed, ErrorKind::UserTabProtected { tab: claimed })));
    assert!(skipped.contains(&(b1, ErrorKind::OtherSessionTab { tab: b1, holder: b.clone() })));
    assert!(h.fake.is_open(user) && h.fake.is_open(claimed) && h.fake.is_open(b1));
    h.assert_no_violations();
}

#[tokio::test]
async fn lc07_finalize_keeps_tools_active() {
    let h = harness();
    let s = h.session("s").await;
    let t1 = h.open(&s).await;
    let report = h.rt.finalize(&s, &FinalizeInputs::default()).await.unwrap();
    assert!(report.ok);
    assert_eq!(report.closed, vec![t1]);
    assert!(report.tools_active);
    assert_eq!(report.bridge.name(), "connected");
    assert!(h.rt.status(&s).await.unwrap().tools_active);
    // Idempotent: a second finalize with the same request answers the same way, doing nothing.
    h.fake.clear_calls();
    let again = h.rt.finalize(&s, &FinalizeInputs { close: vec![t1], ..Default::default() }).await.unwrap();
    assert_eq!(again.closed, vec![t1]);
    assert!(h.fake.calls().iter().all(|c| c.op != Op::CloseTab));
    // The tools are still there for the next task, no re-activation needed.
    h.open(&s).await;
}

#[tokio::test]
async fn lc08_context_reset_hides_tools_only_after_success() {
    let h = harness();
    let s = h.session("s").await;
    let t1 = h.open(&s).await;
    h.fake.inject(Op::CloseTab, Some(t1), FaultKind::Fail(ProviderErrorKind::Internal), Times::Always);

    let report = h.rt.context_reset(&s).await.unwrap();
    assert!(!report.ok, "a failed cleanup is never reported as success");
    assert!(report.tools_active, "tools stay active when the reset's finalize failed");
    assert_eq!(report.failures.len(), 1);
    assert_eq!(kind(report.clone().into_result()), ErrorKind::CleanupFailed { failed: 1 });
    let status = h.rt.status(&s).await.unwrap();
    assert!(status.tools_active);
    assert_eq!(status.recovery.len(), 1);

    h.fake.clear_faults();
    let report = h.rt.context_reset(&s).await.unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.closed, vec![t1]);
    assert!(!report.tools_active);
    assert!(!h.rt.status(&s).await.unwrap().tools_active);
    assert_eq!(kind(h.rt.open_tab(&s, "http://x").await), ErrorKind::ToolsInactive);
    // Idempotent: resetting again succeeds with nothing to do.
    assert!(h.rt.context_reset(&s).await.unwrap().ok);
}

#[tokio::test]
async fn lc09_cleanup_failure_keeps_ownership_activation_and_recovery() {
    let h = harness();
    let user = h.fake.seed_user_tab("https://u.example", None);
    let s = h.session("s").await;
    let t1 = h.open(&s).await;
    h.rt.claim_tab(&s, user).await.unwrap();
    h.fake.inject(Op::CloseTab, Some(t1), FaultKind::Fail(ProviderErrorKind::Internal), Times::Always);
    h.fake.inject(Op::ReleaseTab, Some(user), FaultKind::OutcomeUnknown { applied: false }, Times::Once);

    let report = h.rt.end_turn(&s).await.unwrap();
    assert!(!report.ok);
    assert!(report.closed.is_empty() && report.released.is_empty());
    let failed: BTreeSet<(TabHandle, StepAction, bool)> =
        report.failures.iter().map(|f| (f.tab, f.action, f.outcome_unknown)).collect();
    assert_eq!(failed, BTreeSet::from([(t1, StepAction::Close, false), (user, StepAction::Release, true)]));

    assert_eq!(h.state(t1), ResourceState::CleanupUnknown);
    assert_eq!(h.state(user), ResourceState::CleanupUnknown);
    assert_eq!(h.provenance(&s, t1), Provenance::AgentCreated, "ownership is kept on failure");
    assert_eq!(h.provenance(&s, user), Provenance::Claimed);
    let status = h.rt.status(&s).await.unwrap();
    assert!(status.tools_active);
    let recs: BTreeSet<(TabHandle, RecoveryAction, bool)> =
        status.recovery.iter().map(|r| (r.tab, r.action, r.outcome_unknown)).collect();
    assert_eq!(recs, BTreeSet::from([(t1, RecoveryAction::Close, false), (user, RecoveryAction::Release, true)]));
    // The next operation retries (the release now succeeds); the close still fails, and a pending
    // cleanup blocks use of the tab with a typed error.
    assert_eq!(kind(h.observe(&s, t1).await), ErrorKind::CleanupPending { tab: t1 });
    assert_eq!(h.state(user), ResourceState::Released);
    assert_eq!(h.state(t1), ResourceState::CleanupUnknown);
    let status = h.rt.status(&s).await.unwrap();
    assert_eq!(status.recovery.len(), 1);
    assert_eq!(status.recovery[0].attempts, 2);
    assert!(h.fake.is_open(t1) && h.fake.is_open(user));
    h.assert_no_violations();
}

#[tokio::test]
async fn lc10_released_only_after_confirmed_retry() {
    let h = harness();
    let s = h.session("s").await;
    let t1 = h.open(&s).await;
    let t2 = h.open(&s).await;
    h.fake.inject(Op::CloseTab, Some(t1), FaultKind::Fail(ProviderErrorKind::Internal), Times::Once);
    // t2's close happens but the acknowledgement is lost.
    h.fake.inject(Op::CloseTab, Some(t2), FaultKind::OutcomeUnknown { applied: true }, Times::Once);

    let report = h.rt.end_turn(&s).await.unwrap();
    assert_eq!(report.failures.len(), 2);
    assert_eq!(h.state(t1), ResourceState::CleanupUnknown);
    assert_eq!(h.state(t2), ResourceState::CleanupUnknown, "an unknown outcome is not released");

    // The next operation retries: t1 is closed for real, t2 answers "tab gone".
    h.rt.list_tabs(&s).await.unwrap();
    assert_eq!(h.state(t1), ResourceState::Released);
    assert_eq!(h.state(t2), ResourceState::Released);
    assert!(h.rt.status(&s).await.unwrap().recovery.is_empty());
    let history = h.rt.inspect(|e| e.tabs().get(t2).unwrap().history.clone());
    assert!(
        history.iter().any(|t| t.to == ResourceState::Released && t.cause.contains("counted as confirmed closed")),
        "{history:?}"
    );
    assert_eq!(h.fake.calls_to(Op::CloseTab, t1).len(), 2);
    h.assert_no_violations();
}

#[tokio::test]
async fn lc11_disposal_closes_agent_tabs_spares_user_and_other_sessions() {
    let h = harness();
    let u1 = h.fake.seed_user_tab("https://claimed.example", None);
    let u2 = h.fake.seed_user_tab("https://never-touched.example", None);
    let a = h.session("a").await;
    let b = h.session("b").await;
    let a1 = h.open(&a).await;
    let a2 = h.open(&a).await;
    h.rt.claim_tab(&a, u1).await.unwrap();
    h.rt.mark_deliverable(&a, a2).await.unwrap();
    let b1 = h.open(&b).await;
    h.observe(&a, a1).await.unwrap();

    let report = h.rt.close_session(&a, CloseReason::AgentDisposed).await.unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.closed, vec![a1]);
    assert_eq!(report.released, vec![u1]);
    assert_eq!(report.kept, vec![a2]);
    assert_eq!(report.detached, vec![a1]);
    assert!(!report.tools_active, "disposal hides the tools");
    assert!(h.fake.is_open(u1) && h.fake.is_open(u2) && h.fake.is_open(a2));
    assert_eq!(kind(h.open_tab_err(&a).await), ErrorKind::SessionClosed);

    // The other session is unaffected.
    assert_eq!(h.fake.owner(b1), Some(b.clone()));
    h.observe(&b, b1).await.unwrap();
    assert!(h.rt.status(&b).await.unwrap().tools_active);
    // Idempotent.
    let again = h.rt.close_session(&a, CloseReason::AgentDisposed).await.unwrap();
    assert!(again.ok && again.closed.is_empty());
    h.assert_no_violations();
}

#[tokio::test]
async fn lc12_bridge_stays_connected_after_turn_and_finalize() {
    let h = harness();
    let s = h.session("s").await;
    let t1 = h.open(&s).await;
    let report = h.rt.end_turn(&s).await.unwrap();
    assert_eq!(report.bridge, BridgeState::Connected { epoch: 1 });
    h.open(&s).await;
    let report = h.rt.finalize(&s, &FinalizeInputs::default()).await.unwrap();
    assert_eq!(report.bridge, BridgeState::Connected { epoch: 1 });
    assert_eq!(h.fake.calls().iter().filter(|c| c.op == Op::Connect).count(), 1);
    assert!(h.rt.inspect(|e| e.bridge().reconnects()) == 0);
    let _ = t1;

    // A dropped connection changes neither activation nor ownership, and comes back.
    let t3 = h.open(&s).await;
    h.fake.drop_connection();
    let status = h.rt.status(&s).await.unwrap();
    assert_eq!(status.bridge, BridgeState::Reconnecting { last_epoch: 1 });
    assert!(status.tools_active);
    assert_eq!(h.provenance(&s, t3), Provenance::AgentCreated);
    assert_eq!(kind(h.observe(&s, t3).await), ErrorKind::ConnectionLost);
    h.fake.restore_connection();
    // The session is told once that the browser came back (its refs are void), then it works.
    assert_eq!(kind(h.observe(&s, t3).await), ErrorKind::BrowserRestarted);
    h.observe(&s, t3).await.unwrap();
    h.observe(&s, t3).await.unwrap();
    assert_eq!(h.rt.status(&s).await.unwrap().bridge, BridgeState::Connected { epoch: 2 });
    assert_eq!(h.provenance(&s, t3), Provenance::AgentCreated, "reconnect keeps valid ownership");
    h.assert_no_violations();
}

#[tokio::test(start_paused = true)]
async fn lc13_plugin_disposal_waits_for_active_requests_and_stops_bridge() {
    let h = harness();
    let s = h.session("s").await;
    let t1 = h.open(&s).await;
    h.fake.set_delay_for(Op::Observe, Duration::from_secs(2));

    let rt = h.rt.clone();
    let s2 = s.clone();
    let observing =
        tokio::spawn(async move { rt.observe(&s2, t1, &browserd_protocol::ObserveParams::default()).await });
    while h.fake.calls().iter().all(|c| c.op != Op::AttachDebugger) {
        tokio::task::yield_now().await;
    }
    assert_eq!(h.rt.active_requests(), 1);

    let report = h.rt.dispose_plugin().await;
    assert!(report.waited_for_active);
    assert!(observing.await.unwrap().is_ok(), "the active request finished normally");
    assert_eq!(report.bridge, BridgeState::Stopped);
    assert_eq!(report.sessions.len(), 1);
    assert_eq!(report.sessions[0].1.closed, vec![t1]);

    let calls = h.fake.calls();
    let observe_done = calls.iter().find(|c| c.op == Op::Observe).unwrap().done_seq;
    let close_start = calls.iter().find(|c| c.op == Op::CloseTab).unwrap().seq;
    assert!(observe_done < close_start, "final cleanup started only after the active request ended");
    assert_eq!(kind(h.rt.open_tab(&s, "http://x").await), ErrorKind::ShuttingDown);
    assert!(!h.rt.status(&s).await.unwrap().tools_active);
    // A late host close is idempotent and does not restart the stopped bridge.
    assert!(h.rt.close_session(&s, CloseReason::HostExit).await.unwrap().ok);
    assert_eq!(h.rt.status(&s).await.unwrap().bridge, BridgeState::Stopped);
    assert_eq!(h.fake.calls().iter().filter(|c| c.op == Op::Connect).count(), 1);
}

#[tokio::test(start_paused = true)]
async fn lc14_concurrent_finalize_turn_end_disposal_serialized() {
    let h = harness();
    let user = h.fake.seed_user_tab("https://u.example", None);
    let a = h.session("a").await;
    let b = h.session("b").await;
    let a1 = h.open(&a).await;
    let a2 = h.open(&a).await;
    h.rt.claim_tab(&a, user).await.unwrap();
    let b1 = h.open(&b).await;
    for op in [Op::CloseTab, Op::ReleaseTab, Op::DetachDebugger, Op::Observe] {
        h.fake.set_delay_for(op, Duration::from_millis(50));
    }
    h.fake.clear_calls();

    let defaults = FinalizeInputs::default();
    let (r1, r2, r3, rb) = tokio::join!(
        h.rt.finalize(&a, &defaults),
        h.rt.end_turn(&a),
        h.rt.close_session(&a, CloseReason::AgentDisposed),
        h.observe(&b, b1),
    );
    rb.unwrap();
    // Finalize may be refused with SessionClosed if disposal ran first; the others succeed.
    let mut reports = vec![r2.unwrap(), r3.unwrap()];
    match r1 {
        Ok(r) => reports.push(r),
        Err(e) => assert!(matches!(e.kind, ErrorKind::SessionClosed)),
    }
    assert!(reports.iter().all(|r| r.ok), "{reports:?}");
    let mut closed: Vec<TabHandle> = reports.iter().flat_map(|r| r.closed.clone()).collect();
    closed.sort();
    assert_eq!(closed, vec![a1, a2], "each tab closed exactly once, no boundary overwrote another");
    let released: Vec<TabHandle> = reports.iter().flat_map(|r| r.released.clone()).collect();
    assert_eq!(released, vec![user]);

    let calls = h.fake.calls();
    let a_calls: Vec<_> = calls.iter().filter(|c| c.session == a).collect();
    for pair in a_calls.windows(2) {
        assert!(pair[0].done_seq < pair[1].seq, "session a's calls overlapped: {pair:?}");
    }
    assert_eq!(h.fake.calls_to(Op::CloseTab, a1).len(), 1);
    assert_eq!(h.fake.calls_to(Op::CloseTab, a2).len(), 1);
    // Session b was not held up by session a: its observe overlapped a's cleanup.
    let observe = calls.iter().find(|c| c.session == b && c.op == Op::Observe).unwrap();
    assert!(a_calls.iter().any(|c| c.seq < observe.done_seq && observe.seq < c.done_seq));
    assert!(h.fake.is_open(user));
    h.assert_no_violations();
}

impl support::Harness {
    async fn open_tab_err(
        &self,
        s: &browserd_core::provider::SessionKey,
    ) -> Result<(), browserd_core::error::CoreError> {
        self.rt.open_tab(s, "http://x").await.map(|_| ())
    }
}

#[tokio::test]
async fn auto_cleanup_refused_without_required_capabilities() {
    let h = harness();
    h.fake.remove_capability(browserd_core::provider::Capability::RetainedCleanup);
    let s = h.session("s").await;
    let t1 = h.open(&s).await;
    h.rt.mark_deliverable(&s, t1).await.unwrap();
    let report = h.rt.end_turn(&s).await.unwrap();
    assert!(!report.ok);
    assert_eq!(report.auto_cleanup_refused, Some(vec![browserd_core::provider::Capability::RetainedCleanup]));
    assert_eq!(
        kind(report.into_result()),
        ErrorKind::AutoCleanupRefused { missing: vec![browserd_core::provider::Capability::RetainedCleanup] }
    );
    let status = h.rt.status(&s).await.unwrap();
    assert!(matches!(status.auto_cleanup, browserd_core::lifecycle::AutoCleanup::Refused { .. }));
    assert!(h.fake.is_open(t1));
    // Next turn end, still refused: the mark expires but nothing is closed.
    h.rt.begin_turn(&s).await.unwrap();
    h.rt.end_turn(&s).await.unwrap();
    assert!(h.fake.is_open(t1));
    assert_eq!(h.view(&s, t1).await.unwrap().mark, None);
    // Explicit finalize still works.
    let report = h.rt.finalize(&s, &FinalizeInputs::default()).await.unwrap();
    assert_eq!(report.closed, vec![t1]);
}

#[tokio::test]
async fn recovery_records_survive_session_switch_and_are_retried_later() {
    let h = harness();
    let old = h.session("old").await;
    let t1 = h.open(&old).await;
    h.fake.inject(Op::CloseTab, Some(t1), FaultKind::Fail(ProviderErrorKind::Timeout), Times::Once);
    let report = h.rt.close_session(&old, CloseReason::SessionSwitch).await.unwrap();
    assert!(!report.ok);
    assert_eq!(report.pending_recovery, 1);
    assert!(h.fake.is_open(t1));

    let new = h.session("new").await;
    assert_eq!(h.rt.inspect(|e| e.orphaned_recovery_sessions()), vec![old.clone()]);
    // Closed sessions' records are retried with a backoff (500 ms after the first failure)...
    assert_eq!(h.rt.next_deadline(), Some(browserd_core::Millis(500)));
    h.rt.list_tabs(&new).await.unwrap();
    assert!(h.fake.is_open(t1), "not before the backoff");
    // ...by any later operation, as the old session.
    h.clock.advance(500);
    h.rt.list_tabs(&new).await.unwrap();
    assert!(!h.fake.is_open(t1));
    assert!(h.rt.inspect(|e| e.recovery().is_empty()));
    let retry = h.fake.calls_to(Op::CloseTab, t1).pop().unwrap();
    assert_eq!(retry.session, old);
    h.assert_no_violations();
}

#[tokio::test]
async fn user_closing_a_tab_counts_as_released_and_drops_recovery() {
    let h = harness();
    let s = h.session("s").await;
    let t1 = h.open(&s).await;
    h.fake.inject(Op::CloseTab, Some(t1), FaultKind::Fail(ProviderErrorKind::Internal), Times::Always);
    h.rt.end_turn(&s).await.unwrap();
    assert_eq!(h.state(t1), ResourceState::CleanupUnknown);
    h.fake.user_close_tab(t1);
    let status = h.rt.status(&s).await.unwrap();
    assert!(status.recovery.is_empty());
    assert_eq!(h.state(t1), ResourceState::Released);
}

#[tokio::test]
async fn old_tool_snapshot_is_refused_after_context_reset() {
    let h = harness();
    let s = h.session("s").await;
    let old = h.rt.status(&s).await.unwrap().activation_generation;
    h.rt.check_tool_snapshot(&s, old).unwrap();
    assert!(h.rt.context_reset(&s).await.unwrap().ok);
    assert_eq!(kind(h.rt.check_tool_snapshot(&s, old)), ErrorKind::ToolsInactive);
    h.rt.activate_tools(&s).await.unwrap();
    assert_eq!(
        kind(h.rt.check_tool_snapshot(&s, old)),
        ErrorKind::StaleToolSnapshot { presented: old, current: old + 1 }
    );
    h.rt.check_tool_snapshot(&s, old + 1).unwrap();
}

#[tokio::test]
async fn closed_sessions_records_are_retried_by_the_timer_alone() {
    let h = harness();
    let old = h.session("old").await;
    let t1 = h.open(&old).await;
    h.fake.inject(Op::CloseTab, Some(t1), FaultKind::Fail(ProviderErrorKind::Internal), Times::N(2));
    h.rt.close_session(&old, CloseReason::AgentDisposed).await.unwrap();
    h.clock.advance(500);
    assert_eq!(h.rt.tick().await, Some(browserd_core::Millis(1500)), "second failure: backoff doubles");
    assert!(h.fake.is_open(t1));
    h.clock.advance(1000);
    assert_eq!(h.rt.tick().await, None);
    assert!(!h.fake.is_open(t1));
    assert!(h.rt.inspect(|e| e.recovery().is_empty()));
    h.assert_no_violations();
}

// ----- popups: a tab opened by an agent tab during the session's action is the session's scratch tab -----

mod page_fake;

mod popups {
    use std::sync::Arc;

    use browserd_core::provider::{ProviderKind, SessionKey, TabHandle};
    use browserd_core::runtime::{Runtime, RuntimeConfig};
    use browserd_core::tabs::{Provenance, ResourceState};
    use browserd_test_support::fake_clock::FakeClock;
    use browserd_test_support::fake_provider::{Op, sample_act_params};

    use super::page_fake::PageFake;

    async fn agent(kind: ProviderKind) -> (Arc<PageFake>, Runtime, SessionKey, TabHandle) {
        let page = Arc::new(PageFake::with_kind(kind));
        let rt = Runtime::new(page.clone(), Arc::new(FakeClock::new()), RuntimeConfig::default());
        let s = SessionKey("agent".into());
        rt.open_session(&s).await.unwrap();
        rt.activate_tools(&s).await.unwrap();
        let tab = rt.open_tab(&s, "https://a.test/popup.html").await.unwrap().tab;
        (page, rt, s, tab)
    }

    fn provenance(rt: &Runtime, s: &SessionKey, tab: TabHandle) -> Provenance {
        rt.inspect(|e| e.tabs().get(tab).map(|r| r.provenance(s))).expect("a known tab")
    }

    #[tokio::test]
    async fn a_popup_of_an_agent_action_is_a_scratch_tab_closed_at_turn_end() {
        let (page, rt, s, tab) = agent(ProviderKind::Fake).await;
        page.popup_on_next_act("https://a.test/popup-target.html");
        let result = rt.act(&s, tab, &sample_act_params(), None).await.unwrap();
        assert_eq!(result.effects.tabs_opened.len(), 1, "the effect summary names the new tab");
        let popup: TabHandle = TabHandle(result.effects.tabs_opened[0].0);
        assert_eq!(provenance(&rt, &s, popup), Provenance::AgentCreated);
        assert_eq!(page.fake.owner(popup), Some(s.clone()), "the browser records the session's control");
        assert_eq!(page.fake.calls_to(Op::ClaimTab, popup).len(), 1);
        let history = rt.inspect(|e| e.tabs().get(popup).unwrap().history.clone());
        assert!(history.last().unwrap().cause.contains(&format!("opened by {tab}")), "{history:?}");
        // Usable like any tab of the session, and listed as its own.
        rt.observe(&s, popup, &browserd_protocol::ObserveParams::default()).await.unwrap();

        let report = rt.end_turn(&s).await.unwrap();
        assert!(report.ok, "{report:?}");
        assert!(report.closed.contains(&popup) && report.closed.contains(&tab), "{report:?}");
        assert!(!page.fake.is_open(popup));
        assert_eq!(rt.inspect(|e| e.tabs().get(popup).unwrap().state), ResourceState::Released);
        assert!(page.fake.violations().is_empty(), "{:?}", page.fake.violations());
    }

    #[tokio::test]
    async fn a_marked_popup_is_kept_like_any_scratch_tab() {
        let (page, rt, s, tab) = agent(ProviderKind::Fake).await;
        page.popup_on_next_act("https://a.test/popup-target.html");
        let result = rt.act(&s, tab, &sample_act_params(), None).await.unwrap();
        let popup: TabHandle = TabHandle(result.effects.tabs_opened[0].0);
        rt.mark_deliverable(&s, popup).await.unwrap();
        let report = rt.end_turn(&s).await.unwrap();
        assert_eq!(report.closed, vec![tab], "{report:?}");
        assert!(page.fake.is_open(popup));
        assert!(page.fake.violations().is_empty());
    }

    #[tokio::test]
    async fn tabs_opened_outside_an_agent_action_stay_the_users() {
        let (page, rt, s, tab) = agent(ProviderKind::Fake).await;
        rt.act(&s, tab, &sample_act_params(), None).await.unwrap();
        // The page opens a popup on its own (a timer, the user clicking in it), and the user opens a tab.
        let by_page = page.page_opens_popup(tab, "https://a.test/ad.html");
        let by_user = page.user_open("https://mail.example/");
        let listed = rt.list_tabs(&s).await.unwrap();
        assert!(listed.iter().any(|v| v.tab == by_user), "the user's tab is listed");
        // Another action later does not adopt tabs opened before it.
        rt.act(&s, tab, &sample_act_params(), None).await.unwrap();
        assert_eq!(provenance(&rt, &s, by_page), Provenance::User);
        assert_eq!(provenance(&rt, &s, by_user), Provenance::User);
        assert!(page.fake.calls().iter().all(|c| c.op != Op::ClaimTab));

        let report = rt.end_turn(&s).await.unwrap();
        assert_eq!(report.closed, vec![tab], "{report:?}");
        assert!(page.fake.is_open(by_page) && page.fake.is_open(by_user));
        assert!(page.fake.violations().is_empty(), "{:?}", page.fake.violations());
    }

    #[tokio::test]
    async fn over_the_extension_relay_popups_stay_the_users_until_claimed() {
        let (page, rt, s, tab) = agent(ProviderKind::Extension).await;
        page.popup_on_next_act("https://a.test/popup-target.html");
        let result = rt.act(&s, tab, &sample_act_params(), None).await.unwrap();
        let popup: TabHandle = TabHandle(result.effects.tabs_opened[0].0);
        rt.list_tabs(&s).await.unwrap();
        assert_eq!(provenance(&rt, &s, popup), Provenance::User, "unsupported there: no adoption");
        assert!(page.fake.calls_to(Op::ClaimTab, popup).is_empty());
    }
}

// ----- closed sessions are removed once nothing refers to them (bounded memory over many sessions) -----

mod closed_sessions {
    use browserd_core::error::ErrorKind;
    use browserd_core::lifecycle::{CloseReason, MAX_CLOSED_SESSIONS};
    use browserd_core::provider::ProviderErrorKind;
    use browserd_core::tabs::MAX_TOMBSTONES;
    use browserd_test_support::fake_provider::{FaultKind, Op, Times};

    use super::support::{harness, key, kind};

    #[tokio::test]
    async fn a_thousand_open_close_cycles_leave_the_session_maps_bounded() {
        let h = harness();
        let keeper = h.session("keeper").await;
        for n in 0..1000 {
            let s = h.session(&format!("cycle-{n}")).await;
            let tab = h.open(&s).await;
            let closed = h.rt.close_tabs(&s, &[tab], &[]).await.unwrap();
            assert_eq!(closed.closed, vec![tab], "{closed:?}");
            let report = h.rt.close_session(&s, CloseReason::HostExit).await.unwrap();
            assert!(report.ok && report.pending_recovery == 0, "{report:?}");
        }
        let (tracked, tombstones, tabs) =
            h.rt.inspect(|e| (e.session_count(), e.closed_tombstones(), e.tabs().iter().count()));
        assert_eq!(tracked, 1, "only the open session is tracked; every closed one was removed");
        assert_eq!(tombstones, MAX_CLOSED_SESSIONS, "the closed-session ring is bounded");
        assert_eq!(h.rt.session_slots(), 1, "the runtime dropped the serial locks of removed sessions");
        assert!(tabs <= MAX_TOMBSTONES, "closed tab records are bounded: {tabs}");
        // The open session was untouched by all of it.
        assert!(h.rt.status(&keeper).await.unwrap().tools_active);
        h.open(&keeper).await;
        h.assert_no_violations();
    }

    #[tokio::test]
    async fn a_removed_closed_session_still_answers_session_closed() {
        let h = harness();
        let s = h.session("gone").await;
        let tab = h.open(&s).await;
        let report = h.rt.close_session(&s, CloseReason::SessionEnd).await.unwrap();
        assert_eq!(report.closed, vec![tab]);
        assert_eq!(h.rt.inspect(|e| (e.session_count(), e.closed_tombstones())), (0, 1));
        assert_eq!(h.rt.session_slots(), 0);

        // Every operation answers SESSION_CLOSED (not UNKNOWN_SESSION), and the key cannot be opened again.
        assert_eq!(kind(h.rt.open_tab(&s, "http://127.0.0.1/again").await), ErrorKind::SessionClosed);
        assert_eq!(kind(h.rt.begin_turn(&s).await), ErrorKind::SessionClosed);
        assert_eq!(kind(h.rt.activate_tools(&s).await), ErrorKind::SessionClosed);
        assert_eq!(kind(h.rt.end_turn(&s).await), ErrorKind::SessionClosed);
        assert_eq!(kind(h.rt.open_session(&s).await), ErrorKind::SessionClosed);
        assert_eq!(kind(h.rt.check_tool_snapshot(&s, 1)), ErrorKind::SessionClosed);
        // Status still reads it, closed with tools hidden.
        let status = h.rt.status(&s).await.unwrap();
        assert_eq!(status.closed, Some(CloseReason::SessionEnd));
        assert!(!status.tools_active && status.recovery.is_empty());
        // Closing again is idempotent: nothing left to do.
        let again = h.rt.close_session(&s, CloseReason::SessionEnd).await.unwrap();
        assert!(again.ok && again.closed.is_empty() && !again.tools_active, "{again:?}");
        // A key never opened is still unknown.
        assert_eq!(kind(h.rt.begin_turn(&key("never")).await), ErrorKind::UnknownSession);
        h.assert_no_violations();
    }

    #[tokio::test]
    async fn a_closed_session_is_kept_until_its_last_recovery_record_resolves() {
        let h = harness();
        let s = h.session("failing").await;
        let tab = h.open(&s).await;
        h.fake.inject(Op::CloseTab, Some(tab), FaultKind::Fail(ProviderErrorKind::Internal), Times::Once);
        let report = h.rt.close_session(&s, CloseReason::AgentDisposed).await.unwrap();
        assert!(!report.ok && report.pending_recovery == 1, "{report:?}");
        // Still tracked: it owns a tab whose close failed, with a recovery record.
        assert_eq!(h.rt.inspect(|e| (e.session_count(), e.closed_tombstones())), (1, 0));
        assert_eq!(h.rt.session_slots(), 1);
        assert_eq!(h.rt.inspect(|e| e.orphaned_recovery_sessions()), vec![s.clone()]);
        assert_eq!(kind(h.rt.open_tab(&s, "http://127.0.0.1/x").await), ErrorKind::SessionClosed);

        // The timer's retry succeeds: the tab is closed, and only then is the session removed.
        h.clock.advance(500);
        assert_eq!(h.rt.tick().await, None);
        assert!(!h.fake.is_open(tab));
        assert_eq!(h.rt.inspect(|e| (e.session_count(), e.closed_tombstones())), (0, 1));
        assert_eq!(h.rt.session_slots(), 0);
        assert_eq!(h.rt.status(&s).await.unwrap().closed, Some(CloseReason::AgentDisposed));
        h.assert_no_violations();
    }

    #[tokio::test]
    async fn the_oldest_closed_sessions_are_forgotten_beyond_the_ring() {
        let h = harness();
        for n in 0..=MAX_CLOSED_SESSIONS {
            let s = h.session(&format!("r{n}")).await;
            h.rt.close_session(&s, CloseReason::SessionEnd).await.unwrap();
        }
        assert_eq!(h.rt.inspect(|e| e.closed_tombstones()), MAX_CLOSED_SESSIONS);
        // The newest is remembered as closed; the oldest fell out of the ring and reads as unknown.
        let newest = key(&format!("r{MAX_CLOSED_SESSIONS}"));
        assert_eq!(kind(h.rt.begin_turn(&newest).await), ErrorKind::SessionClosed);
        assert_eq!(kind(h.rt.begin_turn(&key("r0")).await), ErrorKind::UnknownSession);
    }
}

#[tokio::test]
async fn two_sessions_claiming_one_user_tab_at_once_never_both_reach_the_provider() {
    // Both claims used to pass the engine's check before either was answered: the provider was asked to claim the
    // tab for both sessions, and the engine kept the first while the browser's record said the second.
    let h = harness();
    let user = h.fake.seed_user_tab("https://shared.example", None);
    let a = h.session("a").await;
    let b = h.session("b").await;
    h.fake.set_delay_for(browserd_test_support::fake_provider::Op::ClaimTab, std::time::Duration::from_millis(100));
    let (ra, rb) = tokio::join!(h.rt.claim_tab(&a, user), h.rt.claim_tab(&b, user));
    let refused = [&ra, &rb].iter().filter(|r| r.is_err()).count();
    assert_eq!(refused, 1, "exactly one claim wins: {ra:?} {rb:?}");
    let loser = if ra.is_err() { ra } else { rb };
    assert!(matches!(kind(loser), ErrorKind::OtherSessionTab { tab, .. } if tab == user));
    h.assert_no_violations();
}
