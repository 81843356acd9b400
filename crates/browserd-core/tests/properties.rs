//! Property tests: random interleavings of opens, claims, marks, observes, handoffs, closes, turn
//! ends, finalizes, context resets, session closes/switches, user actions, connection drops and
//! injected faults across three session slots, with the lifecycle invariants checked after
//! every step:
//!
//! - a user tab is never closed by browserd, and no session touches a tab it does not own (the
//!   fake browser keeps its own ownership records and logs any violation);
//! - a record reaches `released` only when the browser agrees (closed tabs are closed, released
//!   tabs carry no ownership) — i.e. only after a confirmed close/release;
//! - a mark never outlives the next turn end of its session unless renewed;
//! - activation never changes on turn end or finalize; a context reset hides tools only when it
//!   reports success;
//! - no operation reports success for work that failed (every tab a report lists as closed,
//!   released or kept is so in the browser; every failure is left as cleanup-unknown with a
//!   recovery record).

mod support;

use std::collections::{BTreeMap, BTreeSet};

use browserd_core::error::ErrorKind;
use browserd_core::lifecycle::{CleanupReport, CloseReason, FinalizeInputs, StepAction};
use browserd_core::provider::{
    Capability, CapabilityMatrix, CapabilityState, ProviderErrorKind, SessionKey, TabHandle,
};
use browserd_core::tabs::{MarkKind, ResourceState};
use browserd_test_support::fake_provider::{ALL_CAPABILITIES, FaultKind, Op, Times, sample_act_params};
use proptest::prelude::*;
use support::{Harness, harness, key};

#[derive(Debug, Clone)]
enum Action {
    Open(usize),
    Claim(usize, usize),
    Mark(usize, usize, bool),
    Observe(usize, usize),
    Act(usize, usize),
    Handoff(usize, usize),
    CloseTab(usize, usize),
    BeginTurn(usize),
    EndTurn(usize),
    Finalize(usize, Option<(usize, u8)>),
    Reset(usize),
    Activate(usize),
    CloseSession(usize, u8),
    UserClose(usize),
    UserOpen,
    Fault(u8, u8, bool),
    ClearFaults,
    DropConnection,
    RestoreConnection,
    Tick(u64),
    /// An older extension without a turn-cleanup capability (automatic cleanup refused), or back.
    OldExtension(bool),
}

fn action() -> impl Strategy<Value = Action> {
    let slot = 0..3usize;
    let idx = 0..16usize;
    prop_oneof![
        4 => slot.clone().prop_map(Action::Open),
        2 => (slot.clone(), idx.clone()).prop_map(|(s, i)| Action::Claim(s, i)),
        3 => (slot.clone(), idx.clone(), any::<bool>()).prop_map(|(s, i, d)| Action::Mark(s, i, d)),
        2 => (slot.clone(), idx.clone()).prop_map(|(s, i)| Action::Observe(s, i)),
        2 => (slot.clone(), idx.clone()).prop_map(|(s, i)| Action::Act(s, i)),
        1 => (slot.clone(), idx.clone()).prop_map(|(s, i)| Action::Handoff(s, i)),
        1 => (slot.clone(), idx.clone()).prop_map(|(s, i)| Action::CloseTab(s, i)),
        2 => slot.clone().prop_map(Action::BeginTurn),
        4 => slot.clone().prop_map(Action::EndTurn),
        2 => (slot.clone(), proptest::option::of((idx.clone(), 0..4u8))).prop_map(|(s, x)| Action::Finalize(s, x)),
        1 => slot.clone().prop_map(Action::Reset),
        1 => slot.clone().prop_map(Action::Activate),
        1 => (slot.clone(), 0..4u8).prop_map(|(s, r)| Action::CloseSession(s, r)),
        1 => idx.clone().prop_map(Action::UserClose),
        1 => Just(Action::UserOpen),
        3 => (0..5u8, 0..5u8, any::<bool>()).prop_map(|(o, k, m)| Action::Fault(o, k, m)),
        1 => Just(Action::ClearFaults),
        1 => Just(Action::DropConnection),
        1 => Just(Action::RestoreConnection),
        1 => (0..3000u64).prop_map(Action::Tick),
        1 => any::<bool>().prop_map(Action::OldExtension),
    ]
}

struct Model {
    h: Harness,
    slots: [SessionKey; 3],
    generation: [u32; 3],
    /// Turn number at each session's last completed turn end.
    last_ended: BTreeMap<SessionKey, u64>,
    user_tabs: Vec<TabHandle>,
    user_closed: BTreeSet<TabHandle>,
}

impl Model {
    async fn new() -> Self {
        let h = harness();
        let mut user_tabs = Vec::new();
        let group = h.fake.new_group();
        for n in 0..3 {
            user_tabs.push(h.fake.seed_user_tab(&format!("https://user{n}.example"), (n == 0).then_some(group)));
        }
        let slots = [key("s0-0"), key("s1-0"), key("s2-0")];
        for s in &slots {
            h.rt.open_session(s).await.unwrap();
            h.rt.activate_tools(s).await.unwrap();
        }
        Self { h, slots, generation: [0; 3], last_ended: BTreeMap::new(), user_tabs, user_closed: BTreeSet::new() }
    }

    fn tabs(&self) -> Vec<TabHandle> {
        self.h.rt.inspect(|e| e.tabs().iter().map(|r| r.tab).collect())
    }

    fn pick(&self, idx: usize) -> Option<TabHandle> {
        let tabs = self.tabs();
        (!tabs.is_empty()).then(|| tabs[idx % tabs.len()])
    }

    fn tools_active(&self, s: &SessionKey) -> bool {
        self.h.rt.inspect(|e| e.session(s).is_some_and(|x| x.activation().is_active()))
    }

    fn turn(&self, s: &SessionKey) -> u64 {
        self.h.rt.inspect(|e| e.session(s).map_or(0, |x| x.turn()))
    }

    async fn step(&mut self, action: &Action) -> Result<(), TestCaseError> {
        let h = &self.h;
        match action {
            Action::Open(i) => {
                let s = &self.slots[*i];
                if let Ok(view) = h.rt.open_tab(s, "http://127.0.0.1/x").await {
                    prop_assert_eq!(h.fake.owner(view.tab), Some(s.clone()), "open reported success");
                }
            }
            Action::Claim(i, t) => {
                let s = &self.slots[*i];
                // Mostly user tabs; sometimes any tab (another session's, a closed one).
                let tab = if t % 4 == 0 {
                    self.pick(*t).unwrap_or(self.user_tabs[0])
                } else {
                    self.user_tabs[t % self.user_tabs.len()]
                };
                if h.rt.claim_tab(s, tab).await.is_ok() {
                    prop_assert_eq!(h.fake.owner(tab), Some(s.clone()), "claim reported success");
                }
            }
            Action::Mark(i, t, deliverable) => {
                if let Some(tab) = self.pick(*t) {
                    let s = &self.slots[*i];
                    let _ = if *deliverable {
                        h.rt.mark_deliverable(s, tab).await
                    } else {
                        h.rt.mark_handoff(s, tab).await
                    };
                }
            }
            Action::Observe(i, t) => {
                if let Some(tab) = self.pick(*t) {
                    let s = &self.slots[*i];
                    let owner = h.rt.inspect(|e| e.tabs().get(tab).and_then(|r| r.owner().cloned()));
                    let res = h.observe(s, tab).await;
                    if let Some(owner) = owner.filter(|o| o != s) {
                        let err = res.expect_err("another session's tab must be refused");
                        let named = ErrorKind::OtherSessionTab { tab, holder: owner };
                        prop_assert!(
                            err.kind == named
                                || matches!(
                                    err.kind,
                                    ErrorKind::ToolsInactive
                                        | ErrorKind::SessionClosed
                                        | ErrorKind::TabGone { .. }
                                        | ErrorKind::BrowserRestarted
                                ),
                            "refused with {:?}",
                            err.kind
                        );
                    }
                }
            }
            Action::Act(i, t) => {
                if let Some(tab) = self.pick(*t) {
                    let s = &self.slots[*i];
                    if h.rt.act(s, tab, &sample_act_params(), None).await.is_ok() {
                        let holder = h.rt.inspect(|e| e.write_leases().get(tab).map(|l| l.holder.clone()));
                        prop_assert_eq!(holder.as_ref(), Some(s), "act ran without the session's write lease");
                    }
                }
            }
            Action::Handoff(i, t) => {
                if let Some(tab) = self.pick(*t) {
                    let s = self.slots[*i].clone();
                    if let Ok(r) = h.rt.handoff(&s, tab).await {
                        self.check_report(&s, &r)?;
                    }
                }
            }
            Action::CloseTab(i, t) => {
                if let Some(tab) = self.pick(*t) {
                    let s = self.slots[*i].clone();
                    if let Ok(r) = h.rt.close_tabs(&s, &[tab], &[]).await {
                        self.check_report(&s, &r)?;
                    }
                }
            }
            Action::BeginTurn(i) => {
                let _ = h.rt.begin_turn(&self.slots[*i]).await;
            }
            Action::EndTurn(i) => {
                let s = self.slots[*i].clone();
                let before = self.tools_active(&s);
                let turn = self.turn(&s);
                let res = h.rt.end_turn(&s).await;
                prop_assert_eq!(self.tools_active(&s), before, "turn end changed activation");
                if let Ok(r) = res {
                    self.last_ended.insert(s.clone(), turn);
                    self.check_report(&s, &r)?;
                    if r.auto_cleanup_refused.is_some() {
                        prop_assert!(r.closed.is_empty() && r.released.is_empty(), "refused cleanup did work: {r:?}");
                    }
                }
            }
            Action::Finalize(i, named) => {
                let s = self.slots[*i].clone();
                let mut inputs = FinalizeInputs::default();
                if let Some((t, which)) = named
                    && let Some(tab) = self.pick(*t)
                {
                    match which {
                        0 => inputs.keep.push(tab),
                        1 => inputs.close.push(tab),
                        2 => inputs.release.push(tab),
                        _ => inputs.mark.push((tab, MarkKind::Deliverable)),
                    }
                }
                let before = self.tools_active(&s);
                let res = h.rt.finalize(&s, &inputs).await;
                prop_assert_eq!(self.tools_active(&s), before, "finalize changed activation");
                if let Ok(r) = res {
                    prop_assert!(r.tools_active == before);
                    self.check_report(&s, &r)?;
                }
            }
            Action::Reset(i) => {
                let s = self.slots[*i].clone();
                let before = self.tools_active(&s);
                if let Ok(r) = h.rt.context_reset(&s).await {
                    self.check_report(&s, &r)?;
                    if r.ok {
                        prop_assert!(!self.tools_active(&s), "a successful reset hides the tools");
                    } else {
                        prop_assert_eq!(self.tools_active(&s), before, "a failed reset must not hide the tools");
                    }
                }
            }
            Action::Activate(i) => {
                let _ = h.rt.activate_tools(&self.slots[*i]).await;
            }
            Action::CloseSession(i, r) => {
                let s = self.slots[*i].clone();
                let reason = [
                    CloseReason::AgentDisposed,
                    CloseReason::SessionSwitch,
                    CloseReason::Fork,
                    CloseReason::SessionEnd,
                ][*r as usize % 4];
                let report = h.rt.close_session(&s, reason).await.map_err(|e| TestCaseError::fail(e.to_string()))?;
                self.check_report(&s, &report)?;
                prop_assert!(!self.tools_active(&s));
                // The host switches to a fresh session in the same slot.
                self.generation[*i] += 1;
                let next = key(&format!("s{i}-{}", self.generation[*i]));
                h.rt.open_session(&next).await.unwrap();
                h.rt.activate_tools(&next).await.unwrap();
                self.slots[*i] = next;
            }
            Action::UserClose(t) => {
                if let Some(tab) = self.pick(*t) {
                    if self.user_tabs.contains(&tab) {
                        self.user_closed.insert(tab);
                    }
                    h.fake.user_close_tab(tab);
                }
            }
            Action::UserOpen => {
                if self.user_tabs.len() < 8 {
                    self.user_tabs.push(h.fake.user_open_tab("https://new.example", None));
                }
            }
            Action::Fault(op, k, many) => {
                let op =
                    [Op::CloseTab, Op::ReleaseTab, Op::DetachDebugger, Op::AttachDebugger, Op::Observe][*op as usize];
                let kind = [
                    FaultKind::Fail(ProviderErrorKind::Internal),
                    FaultKind::Fail(ProviderErrorKind::Timeout),
                    FaultKind::Fail(ProviderErrorKind::ConnectionLost),
                    FaultKind::OutcomeUnknown { applied: false },
                    FaultKind::OutcomeUnknown { applied: true },
                ][*k as usize];
                h.fake.inject(op, None, kind, if *many { Times::N(3) } else { Times::Once });
            }
            Action::ClearFaults => h.fake.clear_faults(),
            Action::DropConnection => h.fake.drop_connection(),
            Action::RestoreConnection => h.fake.restore_connection(),
            Action::Tick(ms) => {
                h.clock.advance(*ms);
                h.rt.tick().await;
            }
            Action::OldExtension(old) => {
                if *old {
                    h.fake.remove_capability(Capability::TurnScopedMarks);
                } else {
                    h.fake.set_capabilities(CapabilityMatrix(
                        ALL_CAPABILITIES.iter().map(|c| (*c, CapabilityState::Supported)).collect(),
                    ));
                }
            }
        }
        self.check_invariants()
    }

    /// No report claims work the browser did not confirm.
    fn check_report(&self, s: &SessionKey, r: &CleanupReport) -> Result<(), TestCaseError> {
        let h = &self.h;
        prop_assert_eq!(r.ok, r.failures.is_empty() && r.auto_cleanup_refused.is_none());
        for tab in &r.closed {
            prop_assert!(!h.fake.is_open(*tab), "reported closed but open: {tab} in {r:?}");
        }
        for tab in r.released.iter().chain(&r.kept) {
            prop_assert!(h.fake.owner(*tab).as_ref() != Some(s), "reported released but still owned: {tab}");
        }
        for f in &r.failures {
            let (state, alive) = h.rt.inspect(|e| e.tabs().get(f.tab).map(|x| (x.state, x.alive))).unwrap();
            if f.action != StepAction::Detach && alive {
                prop_assert_eq!(state, ResourceState::CleanupUnknown, "a failed step left {:?}", f);
                let pending = h.rt.inspect(|e| e.recovery().iter().any(|x| x.tab == f.tab));
                prop_assert!(pending, "a failed step has no recovery record: {f:?}");
            }
        }
        Ok(())
    }

    fn check_invariants(&self) -> Result<(), TestCaseError> {
        let h = &self.h;
        let violations = h.fake.violations();
        prop_assert!(violations.is_empty(), "touched a tab it does not own: {violations:?}");
        for tab in &self.user_tabs {
            if !h.fake.is_open(*tab) {
                prop_assert!(self.user_closed.contains(tab), "user tab {tab} was closed by browserd");
            }
        }
        let records = h.rt.inspect(|e| e.tabs().iter().cloned().collect::<Vec<_>>());
        for rec in records {
            if !rec.alive {
                prop_assert!(!h.fake.is_open(rec.tab), "{} released as closed but open in the browser", rec.tab);
            }
            if rec.alive && rec.state == ResourceState::Released && h.fake.is_open(rec.tab) {
                prop_assert_eq!(h.fake.owner(rec.tab), None, "{} released but the browser still has an owner", rec.tab);
            }
            if matches!(rec.state, ResourceState::Owned | ResourceState::Retained) && h.fake.is_open(rec.tab) {
                let browser_owner = h.fake.owner(rec.tab);
                prop_assert_eq!(browser_owner.as_ref(), rec.owner(), "ownership disagrees for {}", rec.tab);
            }
            if let Some(o) = &rec.ownership
                && let (Some(mark), Some(ended)) = (o.mark, self.last_ended.get(&o.session))
            {
                prop_assert!(mark.turn >= *ended, "a mark of turn {} outlived the end of turn {ended}", mark.turn);
            }
        }
        Ok(())
    }
}

proptest! {
    #[test]
    fn lifecycle_invariants_hold_under_random_interleavings(actions in prop::collection::vec(action(), 1..48)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        rt.block_on(async {
            let mut model = Model::new().await;
            for action in &actions {
                model.step(action).await?;
            }
            // Eventually consistent: with faults cleared and the connection up, a retry clears
            // every recovery record, and every remaining record matches the browser.
            model.h.fake.clear_faults();
            model.h.fake.restore_connection();
            model.h.rt.retry_recovery().await;
            model.h.rt.retry_recovery().await;
            let left = model.h.rt.inspect(|e| e.recovery().len());
            prop_assert_eq!(left, 0, "recovery records left after a clean retry");
            model.check_invariants()
        })?;
    }
}
