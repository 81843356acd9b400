//! A fake browser implementing [`Provider`], with fault injection and a call log.
//!
//! It behaves like the extension's side of the contract: it keeps its own ownership records
//! (as the extension does in `chrome.storage.session`) and refuses — and records as a
//! *violation* — any request that touches a tab the calling session does not own, and any close
//! of a user tab. Tests assert `violations()` is empty to prove the runtime never touched a user
//! tab or another session's tab, and read `calls()` to assert exactly what the browser was asked.
//!
//! Fault injection: a call can fail (once, n times or always) with any error kind, or end with
//! an unknown outcome with or without its effect applied; the connection can drop and return
//! (events, new epoch); calls can be slow (honouring `ctx.cancel` and `ctx.timeout`); the user
//! can close tabs, open tabs and cancel the debugger.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use browserd_core::provider::{
    BrowserInfo, Capability, CapabilityMatrix, CapabilityState, CreateTab, DetachCause, FencingToken, GroupHandle,
    HandleAllocator, OpContext, Provider, ProviderError, ProviderErrorKind, ProviderEvent, ProviderKind, SessionKey,
    TabHandle, TabInfo, UnsupportedReason,
};
use browserd_protocol::{ActParams, ActionResult, Observation, ObserveParams};
use tokio::sync::broadcast;

/// Every capability, all supported: the fake's default matrix.
pub const ALL_CAPABILITIES: [Capability; 12] = [
    Capability::TurnCleanup,
    Capability::TurnScopedMarks,
    Capability::RetainedCleanup,
    Capability::DebuggerLeaseRecovery,
    Capability::TabGroups,
    Capability::ClaimUserTabs,
    Capability::Screenshots,
    Capability::Upload,
    Capability::Downloads,
    Capability::CrossOriginFrames,
    Capability::Evaluate,
    Capability::RawProtocol,
];

/// A provider operation, as recorded in the call log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// `connect`.
    Connect,
    /// `list_tabs`.
    ListTabs,
    /// `create_tab`.
    CreateTab,
    /// `close_tab`.
    CloseTab,
    /// `activate_tab`.
    ActivateTab,
    /// `claim_tab`.
    ClaimTab,
    /// `release_tab`.
    ReleaseTab,
    /// `attach_debugger`.
    AttachDebugger,
    /// `detach_debugger`.
    DetachDebugger,
    /// `observe`.
    Observe,
    /// `act`.
    Act,
}

/// One recorded provider call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// When the call arrived (one counter for arrivals and completions, so two calls overlapped
    /// exactly when one arrived between the other's `seq` and `done_seq`).
    pub seq: u64,
    /// When the call completed (same counter as `seq`).
    pub done_seq: u64,
    /// Which operation.
    pub op: Op,
    /// The context session.
    pub session: SessionKey,
    /// The tab, if the call names one (for `create_tab`, the created tab).
    pub tab: Option<TabHandle>,
    /// The fencing token carried (act).
    pub fencing: Option<FencingToken>,
    /// What the fake answered.
    pub result: Result<(), ProviderErrorKind>,
    /// Whether the call's effect was applied (an unknown outcome may or may not be).
    pub applied: bool,
}

/// How an injected fault behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Fail with this kind; nothing happens in the browser.
    Fail(ProviderErrorKind),
    /// Answer `OutcomeUnknown`; `applied` says whether the effect happened anyway.
    OutcomeUnknown {
        /// Whether the effect was applied.
        applied: bool,
    },
}

/// How many times a fault fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Times {
    /// The next matching call only.
    Once,
    /// The next n matching calls.
    N(u32),
    /// Every matching call until cleared.
    Always,
}

#[derive(Debug, Clone)]
struct Fault {
    op: Op,
    tab: Option<TabHandle>,
    kind: FaultKind,
    remaining: Option<u32>,
}

/// One tab of the fake browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeTab {
    /// What `list_tabs` reports.
    pub info: TabInfo,
    /// The ownership record the browser side keeps (session that created or claimed it).
    pub owner: Option<SessionKey>,
    /// Whether the user opened it (seeded or `user_open_tab`): it must never be closed by
    /// browserd.
    pub user_origin: bool,
    /// Whether it is open.
    pub open: bool,
    /// Whether the debugger is attached.
    pub debugger: bool,
    /// The largest fencing token seen by `act` (the last-hop check).
    pub last_fencing: Option<FencingToken>,
}

#[derive(Debug)]
struct State {
    tabs: BTreeMap<TabHandle, FakeTab>,
    connected: bool,
    epoch: u64,
    calls: Vec<Call>,
    next_seq: u64,
    faults: Vec<Fault>,
    delays: BTreeMap<Op, Duration>,
    default_delay: Duration,
    caps: CapabilityMatrix,
    violations: Vec<String>,
}

/// The fake browser. See the module docs.
#[derive(Debug)]
pub struct FakeProvider {
    alloc: HandleAllocator,
    state: Mutex<State>,
    events: broadcast::Sender<ProviderEvent>,
}

impl Default for FakeProvider {
    fn default() -> Self {
        Self::new()
    }
}

fn err(kind: ProviderErrorKind, message: impl Into<String>) -> ProviderError {
    ProviderError::new(kind, message)
}

fn tab_gone(tab: TabHandle) -> ProviderError {
    err(ProviderErrorKind::TabGone, format!("tab {tab} is closed; list tabs again"))
}

impl FakeProvider {
    /// A connected fake browser with every capability and no tabs.
    #[must_use]
    pub fn new() -> Self {
        let caps = CapabilityMatrix(ALL_CAPABILITIES.iter().map(|c| (*c, CapabilityState::Supported)).collect());
        let (events, _) = broadcast::channel(1024);
        Self {
            alloc: HandleAllocator::new(),
            state: Mutex::new(State {
                tabs: BTreeMap::new(),
                connected: true,
                epoch: 1,
                calls: Vec::new(),
                next_seq: 0,
                faults: Vec::new(),
                delays: BTreeMap::new(),
                default_delay: Duration::ZERO,
                caps,
                violations: Vec::new(),
            }),
            events,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn emit(&self, ev: ProviderEvent) {
        let _ = self.events.send(ev);
    }

    // ----- seeding and user actions -----

    /// A new tab group handle.
    #[must_use]
    pub fn new_group(&self) -> GroupHandle {
        self.alloc.group()
    }

    /// Seed a tab the user already had (no event: it exists before browserd connects).
    pub fn seed_user_tab(&self, url: &str, group: Option<GroupHandle>) -> TabHandle {
        let tab = self.alloc.tab();
        let info = TabInfo { tab, url: url.into(), title: url.into(), group, opener: None, active: false };
        self.lock().tabs.insert(
            tab,
            FakeTab { info, owner: None, user_origin: true, open: true, debugger: false, last_fencing: None },
        );
        tab
    }

    /// The user opens a tab (emits `TabCreated`).
    pub fn user_open_tab(&self, url: &str, group: Option<GroupHandle>) -> TabHandle {
        let tab = self.seed_user_tab(url, group);
        let info = self.lock().tabs[&tab].info.clone();
        self.emit(ProviderEvent::TabCreated(info));
        tab
    }

    /// The user closes a tab (emits `TabClosed { by_user: true }`).
    pub fn user_close_tab(&self, tab: TabHandle) {
        let closed = {
            let mut st = self.lock();
            match st.tabs.get_mut(&tab) {
                Some(t) if t.open => {
                    t.open = false;
                    t.debugger = false;
                    true
                }
                _ => false,
            }
        };
        if closed {
            self.emit(ProviderEvent::TabClosed { tab, by_user: true });
        }
    }

    /// The user cancels the debugger infobar (emits `DebuggerDetached { UserCancelled }`).
    pub fn user_cancel_debugger(&self, tab: TabHandle) {
        let was = self.lock().tabs.get_mut(&tab).is_some_and(|t| std::mem::replace(&mut t.debugger, false));
        if was {
            self.emit(ProviderEvent::DebuggerDetached { tab, cause: DetachCause::UserCancelled });
        }
    }

    /// Move a tab into a group (the user dragging tabs together: mixed-ownership groups).
    pub fn move_to_group(&self, tab: TabHandle, group: Option<GroupHandle>) {
        let info = {
            let mut st = self.lock();
            let Some(t) = st.tabs.get_mut(&tab) else { return };
            t.info.group = group;
            t.info.clone()
        };
        self.emit(ProviderEvent::TabUpdated(info));
    }

    /// The connection drops: calls fail with `ConnectionLost` until restored.
    pub fn drop_connection(&self) {
        self.lock().connected = false;
        self.emit(ProviderEvent::ConnectionLost { detail: "fake connection dropped".into() });
    }

    /// The connection returns with a new epoch.
    pub fn restore_connection(&self) {
        let epoch = {
            let mut st = self.lock();
            st.connected = true;
            st.epoch += 1;
            st.epoch
        };
        self.emit(ProviderEvent::ConnectionRestored { connection_epoch: epoch });
    }

    // ----- faults and delays -----

    /// Inject a fault for `op` (on `tab`, or on any tab when `None`).
    pub fn inject(&self, op: Op, tab: Option<TabHandle>, kind: FaultKind, times: Times) {
        let remaining = match times {
            Times::Once => Some(1),
            Times::N(n) => Some(n),
            Times::Always => None,
        };
        self.lock().faults.push(Fault { op, tab, kind, remaining });
    }

    /// Remove every injected fault.
    pub fn clear_faults(&self) {
        self.lock().faults.clear();
    }

    /// Make every call take `delay` (honouring cancellation and the call's timeout).
    pub fn set_delay(&self, delay: Duration) {
        self.lock().default_delay = delay;
    }

    /// Make calls of `op` take `delay`.
    pub fn set_delay_for(&self, op: Op, delay: Duration) {
        self.lock().delays.insert(op, delay);
    }

    /// Replace the capability matrix.
    pub fn set_capabilities(&self, caps: CapabilityMatrix) {
        self.lock().caps = caps;
    }

    /// Mark one capability unsupported (by version), e.g. an old extension.
    pub fn remove_capability(&self, cap: Capability) {
        self.lock().caps.0.insert(
            cap,
            CapabilityState::Unsupported {
                reason: UnsupportedReason::ByVersion,
                detail: "the fake extension is too old; update it".into(),
            },
        );
    }

    // ----- inspection -----

    /// Every call so far, in arrival order.
    #[must_use]
    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// Calls of `op` on `tab`.
    #[must_use]
    pub fn calls_to(&self, op: Op, tab: TabHandle) -> Vec<Call> {
        self.lock().calls.iter().filter(|c| c.op == op && c.tab == Some(tab)).cloned().collect()
    }

    /// Forget the call log.
    pub fn clear_calls(&self) {
        self.lock().calls.clear();
    }

    /// Ownership or user-tab violations the runtime committed (must stay empty).
    #[must_use]
    pub fn violations(&self) -> Vec<String> {
        self.lock().violations.clone()
    }

    /// A tab's state.
    #[must_use]
    pub fn tab(&self, tab: TabHandle) -> Option<FakeTab> {
        self.lock().tabs.get(&tab).cloned()
    }

    /// Whether the tab is open.
    #[must_use]
    pub fn is_open(&self, tab: TabHandle) -> bool {
        self.lock().tabs.get(&tab).is_some_and(|t| t.open)
    }

    /// The browser-side owner of a tab.
    #[must_use]
    pub fn owner(&self, tab: TabHandle) -> Option<SessionKey> {
        self.lock().tabs.get(&tab).and_then(|t| t.owner.clone())
    }

    /// Whether the debugger is attached to the tab.
    #[must_use]
    pub fn debugger_attached(&self, tab: TabHandle) -> bool {
        self.lock().tabs.get(&tab).is_some_and(|t| t.debugger)
    }

    /// The connection epoch.
    #[must_use]
    pub fn epoch(&self) -> u64 {
        self.lock().epoch
    }

    // ----- call machinery -----

    async fn call<T>(
        &self,
        ctx: &OpContext,
        op: Op,
        tab: Option<TabHandle>,
        effect: impl FnOnce(&mut State, &SessionKey) -> Result<T, ProviderError>,
    ) -> Result<T, ProviderError> {
        let (seq, delay) = {
            let mut st = self.lock();
            st.next_seq += 1;
            (st.next_seq, st.delays.get(&op).copied().unwrap_or(st.default_delay))
        };
        let gate = Self::wait(ctx, delay).await;
        let mut st = self.lock();
        let mut applied = false;
        let res = match gate {
            Err(e) => Err(e),
            Ok(()) if !st.connected && op != Op::Connect => Err(err(
                ProviderErrorKind::ConnectionLost,
                "the fake browser is disconnected; retry after it reconnects",
            )),
            Ok(()) => match take_fault(&mut st, op, tab) {
                Some(FaultKind::Fail(kind)) => Err(err(kind, format!("injected {kind:?} on {op:?}"))),
                Some(FaultKind::OutcomeUnknown { applied: apply }) => {
                    if apply {
                        applied = effect(&mut st, &ctx.session).is_ok();
                    }
                    Err(err(ProviderErrorKind::OutcomeUnknown, format!("injected unknown outcome on {op:?}")))
                }
                None => {
                    let r = effect(&mut st, &ctx.session);
                    applied = r.is_ok();
                    r
                }
            },
        };
        st.next_seq += 1;
        let done_seq = st.next_seq;
        st.calls.push(Call {
            seq,
            done_seq,
            op,
            session: ctx.session.clone(),
            tab,
            fencing: ctx.fencing,
            result: res.as_ref().map(|_| ()).map_err(|e| e.kind),
            applied,
        });
        res
    }

    async fn wait(ctx: &OpContext, delay: Duration) -> Result<(), ProviderError> {
        if ctx.cancel.is_cancelled() {
            return Err(err(ProviderErrorKind::Cancelled, "cancelled before dispatch"));
        }
        if delay.is_zero() {
            return Ok(());
        }
        tokio::select! {
            () = ctx.cancel.cancelled() => Err(err(ProviderErrorKind::Cancelled, "cancelled before dispatch")),
            r = tokio::time::timeout(ctx.timeout, tokio::time::sleep(delay)) => match r {
                Ok(()) => Ok(()),
                Err(_) => Err(err(ProviderErrorKind::Timeout, "the fake browser did not answer in time")),
            },
        }
    }
}

fn take_fault(st: &mut State, op: Op, tab: Option<TabHandle>) -> Option<FaultKind> {
    let idx = st.faults.iter().position(|f| f.op == op && (f.tab.is_none() || f.tab == tab))?;
    let fault = &mut st.faults[idx];
    let kind = fault.kind;
    if let Some(n) = fault.remaining.as_mut() {
        *n -= 1;
        if *n == 0 {
            st.faults.remove(idx);
        }
    }
    Some(kind)
}

/// The tab must be open and owned by `session`; otherwise a violation is recorded and the call
/// refused (or `TabGone`).
fn owned<'a>(
    st: &'a mut State,
    session: &SessionKey,
    tab: TabHandle,
    what: &str,
) -> Result<&'a mut FakeTab, ProviderError> {
    let Some(t) = st.tabs.get(&tab) else { return Err(tab_gone(tab)) };
    if !t.open {
        return Err(tab_gone(tab));
    }
    if t.owner.as_ref() != Some(session) {
        let holder = t.owner.as_ref().map_or_else(|| "the user".to_owned(), |o| format!("session {o}"));
        st.violations.push(format!("session {session} asked to {what} tab {tab}, which belongs to {holder}"));
        return Err(err(ProviderErrorKind::Refused, format!("tab {tab} is not owned by session {session}")));
    }
    Ok(st.tabs.get_mut(&tab).expect("checked above"))
}

#[async_trait]
impl Provider for FakeProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Fake
    }

    fn capabilities(&self) -> CapabilityMatrix {
        self.lock().caps.clone()
    }

    fn events(&self) -> broadcast::Receiver<ProviderEvent> {
        self.events.subscribe()
    }

    async fn connect(&self, ctx: &OpContext) -> Result<BrowserInfo, ProviderError> {
        self.call(ctx, Op::Connect, None, |st, _| {
            if st.connected {
                Ok(BrowserInfo {
                    kind: ProviderKind::Fake,
                    product: "FakeBrowser/1.0".into(),
                    connection_epoch: st.epoch,
                })
            } else {
                Err(err(
                    ProviderErrorKind::ConnectionLost,
                    "the fake browser is disconnected; retry after it reconnects",
                ))
            }
        })
        .await
    }

    async fn list_tabs(&self, ctx: &OpContext) -> Result<Vec<TabInfo>, ProviderError> {
        self.call(ctx, Op::ListTabs, None, |st, _| {
            Ok(st.tabs.values().filter(|t| t.open).map(|t| t.info.clone()).collect())
        })
        .await
    }

    async fn create_tab(&self, ctx: &OpContext, req: CreateTab) -> Result<TabInfo, ProviderError> {
        let tab = self.alloc.tab();
        let res = self
            .call(ctx, Op::CreateTab, Some(tab), |st, session| {
                let url = if req.url.is_empty() { "about:blank".to_owned() } else { req.url.clone() };
                let info =
                    TabInfo { tab, url: url.clone(), title: url, group: None, opener: None, active: !req.background };
                st.tabs.insert(
                    tab,
                    FakeTab {
                        info: info.clone(),
                        owner: Some(session.clone()),
                        user_origin: false,
                        open: true,
                        debugger: false,
                        last_fencing: None,
                    },
                );
                Ok(info)
            })
            .await;
        if let Ok(info) = &res {
            self.emit(ProviderEvent::TabCreated(info.clone()));
        }
        res
    }

    async fn close_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        let res = self
            .call(ctx, Op::CloseTab, Some(tab), |st, session| {
                if st.tabs.get(&tab).is_some_and(|t| t.user_origin && t.open) {
                    st.violations.push(format!("session {session} asked to close user tab {tab}"));
                    return Err(err(ProviderErrorKind::Refused, format!("tab {tab} is a user tab")));
                }
                let t = owned(st, session, tab, "close")?;
                t.open = false;
                t.debugger = false;
                t.owner = None;
                Ok(())
            })
            .await;
        if self.lock().tabs.get(&tab).is_some_and(|t| !t.open) && res.is_ok() {
            self.emit(ProviderEvent::TabClosed { tab, by_user: false });
        }
        res
    }

    async fn activate_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.call(ctx, Op::ActivateTab, Some(tab), |st, session| owned(st, session, tab, "activate").map(|_| ())).await
    }

    async fn claim_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.call(ctx, Op::ClaimTab, Some(tab), |st, session| {
            let Some(t) = st.tabs.get_mut(&tab).filter(|t| t.open) else { return Err(tab_gone(tab)) };
            match &t.owner {
                None => {
                    t.owner = Some(session.clone());
                    Ok(())
                }
                Some(o) if o == session => Ok(()),
                Some(o) => {
                    let o = o.clone();
                    st.violations
                        .push(format!("session {session} asked to claim tab {tab}, which belongs to session {o}"));
                    Err(err(ProviderErrorKind::Refused, format!("tab {tab} is held by session {o}")))
                }
            }
        })
        .await
    }

    async fn release_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.call(ctx, Op::ReleaseTab, Some(tab), |st, session| {
            let Some(t) = st.tabs.get_mut(&tab).filter(|t| t.open) else { return Err(tab_gone(tab)) };
            match &t.owner {
                None => Ok(()),
                Some(o) if o == session => {
                    t.owner = None;
                    Ok(())
                }
                Some(o) => {
                    let o = o.clone();
                    st.violations
                        .push(format!("session {session} asked to release tab {tab}, which belongs to session {o}"));
                    Err(err(ProviderErrorKind::Refused, format!("tab {tab} is held by session {o}")))
                }
            }
        })
        .await
    }

    async fn attach_debugger(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.call(ctx, Op::AttachDebugger, Some(tab), |st, session| {
            owned(st, session, tab, "attach the debugger to")?.debugger = true;
            Ok(())
        })
        .await
    }

    async fn detach_debugger(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.call(ctx, Op::DetachDebugger, Some(tab), |st, session| {
            let Some(t) = st.tabs.get_mut(&tab).filter(|t| t.open) else { return Err(tab_gone(tab)) };
            match &t.owner {
                Some(o) if o != session => {
                    let o = o.clone();
                    st.violations
                        .push(format!("session {session} asked to detach tab {tab}, which belongs to session {o}"));
                    Err(err(ProviderErrorKind::Refused, format!("tab {tab} is held by session {o}")))
                }
                _ => {
                    t.debugger = false;
                    Ok(())
                }
            }
        })
        .await
    }

    async fn observe(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        _params: &ObserveParams,
    ) -> Result<Observation, ProviderError> {
        self.call(ctx, Op::Observe, Some(tab), |st, session| {
            let t = owned(st, session, tab, "observe")?;
            if !t.debugger {
                return Err(err(ProviderErrorKind::Refused, format!("the debugger is not attached to tab {tab}")));
            }
            Ok(Observation {
                url: t.info.url.clone(),
                title: t.info.title.clone(),
                untrusted_content: format!("fake page {tab}"),
                ..Default::default()
            })
        })
        .await
    }

    async fn act(&self, ctx: &OpContext, tab: TabHandle, _params: &ActParams) -> Result<ActionResult, ProviderError> {
        let fencing = ctx.fencing;
        let trace = ctx.trace_id.clone();
        self.call(ctx, Op::Act, Some(tab), |st, session| {
            let t = owned(st, session, tab, "act on")?;
            if !t.debugger {
                return Err(err(ProviderErrorKind::Refused, format!("the debugger is not attached to tab {tab}")));
            }
            let Some(token) = fencing else {
                return Err(err(ProviderErrorKind::StaleFencing, "an action needs a fencing token"));
            };
            if t.last_fencing.is_some_and(|last| token < last) {
                return Err(err(ProviderErrorKind::StaleFencing, format!("fencing token {} is stale", token.0)));
            }
            t.last_fencing = Some(token);
            Ok(ActionResult { trace_id: trace, ..Default::default() })
        })
        .await
    }
}

/// A `browser_act` request (a click on `e1`), built from JSON so it stays valid as the wire
/// type grows optional fields.
#[must_use]
pub fn sample_act_params() -> ActParams {
    serde_json::from_value(serde_json::json!({ "action": "click", "target": "e1" }))
        .expect("a click on a ref is a valid browser_act request")
}
