//! The async driver of the lifecycle engine: [`Runtime`] executes the engine's plans against a
//! [`Provider`] and feeds the answers back.
//!
//! This is what the broker, the CLI and the demo call. It holds one browser (an
//! `Arc<dyn Provider>`; the engine's tab handles are unique across providers, so more browsers
//! can be added as a map keyed by browser), a [`Clock`], and the [`Lifecycle`] engine behind a
//! `std::sync::Mutex` that is never held across an `.await`.
//!
//! **Per-session serialization:** every operation of a session runs under that session's own
//! async lock (`tokio::sync::Mutex<()>`) for its whole duration, so finalize, turn end, agent
//! disposal, plugin disposal and tool calls of one session never interleave. An operation only
//! ever waits for its own session's lock; other sessions' locks are only *tried* (recovery
//! retries of closed sessions, idle detach), so there is no lock order to get wrong and no
//! cross-session deadlock.
//!
//! **Cancellation:** a plan step dropped before the browser answered is recorded as
//! outcome-unknown (a recovery record), never as done.
//!
//! Before each operation the driver drains provider events, reconnects when the bridge is not
//! connected, and retries pending recovery records (the session's own, then those of closed
//! sessions).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use browserd_protocol::tools::{
    ConsoleParams, ConsoleResult, EvaluateParams, EvaluateResult, NetworkParams, NetworkResult, RawProtocolParams,
    RawProtocolResult,
};
use browserd_protocol::{ActParams, ActionResult, Expectation, ExpectationResult, Observation, ObserveParams};
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

use crate::Millis;
use crate::bridge::{BridgeState, StopCause};
use crate::clock::Clock;
use crate::debugger::DebuggerAcquire;
use crate::error::{CoreError, ErrorKind};
use crate::handoff;
use crate::lifecycle::{
    CleanupReport, CloseReason, FinalizeInputs, HandoffCheck, Lifecycle, LifecycleConfig, Plan, SessionStatus, Step,
    StepAction, StepOutcome, TabView,
};
use crate::provider::{
    CreateTab, FencingToken, GroupHandle, OpContext, Provider, ProviderError, ProviderErrorKind, ProviderEvent,
    ProviderKind, SessionKey, TabHandle,
};
use crate::tabs::{Mark, MarkKind};

/// Driver configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// Engine configuration (idle detach window, tab limit).
    pub lifecycle: LifecycleConfig,
    /// Deadline of ordinary provider calls (BRIEF §6: 10 s).
    pub op_timeout: Duration,
    /// Deadline of each cleanup call (close, release, detach).
    pub cleanup_timeout: Duration,
    /// How long plugin disposal waits for active requests before cancelling them.
    pub dispose_wait: Duration,
    /// How long `browser_handoff` waits for the user when the call names no timeout.
    pub handoff_default_wait: Duration,
    /// The longest wait a `browser_handoff` call may ask for.
    pub handoff_max_wait: Duration,
    /// How often a handoff wait looks at its tab when no browser event wakes it earlier.
    pub handoff_poll: Duration,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            lifecycle: LifecycleConfig::default(),
            op_timeout: Duration::from_secs(10),
            cleanup_timeout: Duration::from_secs(5),
            dispose_wait: Duration::from_secs(5),
            handoff_default_wait: Duration::from_secs(300),
            handoff_max_wait: Duration::from_secs(1800),
            handoff_poll: Duration::from_millis(500),
        }
    }
}

/// What plugin disposal did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisposalReport {
    /// Whether every active request finished within [`RuntimeConfig::dispose_wait`] (otherwise
    /// the rest were cancelled).
    pub waited_for_active: bool,
    /// The final cleanup of every session that was still open.
    pub sessions: Vec<(SessionKey, CleanupReport)>,
    /// Recovery records left (kept for a later retry; never dropped silently).
    pub pending_recovery: usize,
    /// The bridge after disposal (stopped).
    pub bridge: BridgeState,
}

/// How `browser_handoff` waits for the user to finish (`until`).
#[derive(Debug, Clone, PartialEq)]
pub struct HandoffWait {
    /// Every one of these must hold (see [`crate::handoff`] for the kinds that can be checked).
    pub until: Vec<Expectation>,
    /// Wait at most this long; `None` is [`RuntimeConfig::handoff_default_wait`].
    pub timeout: Option<Duration>,
}

/// How a handoff wait ended, when it was not an error.
#[derive(Debug, Clone, PartialEq)]
pub enum HandoffEnd {
    /// Every criterion held; the session holds the tab's write lease again.
    Completed {
        /// One result per criterion.
        evidence: Vec<ExpectationResult>,
        /// The tab's URL.
        url: String,
        /// The re-acquired write lease.
        token: FencingToken,
        /// How long the wait took (on the runtime's clock).
        waited_ms: u64,
    },
    /// The deadline passed first. The tab stays handed off (no lease; the mark holds through this turn).
    TimedOut {
        /// One result per criterion, as last checked.
        evidence: Vec<ExpectationResult>,
        /// The tab's URL.
        url: String,
        /// How long the wait took.
        waited_ms: u64,
    },
    /// The user closed the tab.
    TabClosed {
        /// One result per criterion, as last checked (empty when the tab was gone at the first look).
        evidence: Vec<ExpectationResult>,
        /// How long the wait took.
        waited_ms: u64,
    },
}

/// A waiting handoff's progress, reported after each look at the tab.
#[derive(Debug, Clone, PartialEq)]
pub struct HandoffProgress {
    /// Looks so far.
    pub checks: u32,
    /// Time waited.
    pub waited_ms: u64,
    /// The deadline, from the start of the wait.
    pub timeout_ms: u64,
    /// The criteria as last checked.
    pub evidence: Vec<ExpectationResult>,
}

/// The lifecycle runtime. Cheap to clone (shared state).
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("config", &self.inner.config).finish_non_exhaustive()
    }
}

type SessionLock = Arc<tokio::sync::Mutex<()>>;

/// One running operation of a session (see `Runtime::serialized`). Fields drop in order: the serial lock is
/// released before the operation stops counting as active.
struct SessionOp {
    _serial: tokio::sync::OwnedMutexGuard<()>,
    _active: ActiveGuard,
}

struct Inner {
    provider: Arc<dyn Provider>,
    clock: Arc<dyn Clock>,
    config: RuntimeConfig,
    engine: Mutex<Lifecycle>,
    slots: Mutex<BTreeMap<SessionKey, SessionLock>>,
    events: Mutex<broadcast::Receiver<ProviderEvent>>,
    active: AtomicUsize,
    idle: Notify,
    closing: AtomicBool,
    shutdown: CancellationToken,
    trace: AtomicU64,
    timer_changed: Notify,
    /// Per session, the token that cancels its handoff waits (turn end, finalize, reset, close, disposal).
    waits: Mutex<BTreeMap<SessionKey, CancellationToken>>,
}

/// Counts an active request; plugin disposal waits for the count to reach zero.
struct ActiveGuard(Arc<Inner>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        if self.0.active.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Steps of a plan not yet answered; dropped early, they are recorded as outcome-unknown.
struct PendingSteps {
    inner: Arc<Inner>,
    steps: Vec<Step>,
    done: usize,
}

impl Drop for PendingSteps {
    fn drop(&mut self) {
        if self.done < self.steps.len() {
            let now = self.inner.clock.now();
            let mut engine = lock(&self.inner.engine);
            for step in &self.steps[self.done..] {
                engine.handle_step_abandoned(step, now);
            }
        }
    }
}

/// One operation's use of a tab's debugger; gives the reference back when dropped (also when
/// the operation is cancelled mid-way).
struct DebuggerUse {
    inner: Arc<Inner>,
    tab: TabHandle,
    phase: UsePhase,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum UsePhase {
    Attaching,
    InUse,
    Done,
}

impl Drop for DebuggerUse {
    fn drop(&mut self) {
        let now = self.inner.clock.now();
        let mut engine = lock(&self.inner.engine);
        match self.phase {
            UsePhase::Attaching => {
                let err = ProviderError::new(ProviderErrorKind::Cancelled, "attach abandoned");
                engine.handle_attach_result(self.tab, &Err(err), now);
            }
            UsePhase::InUse => engine.debugger_release(self.tab, now),
            UsePhase::Done => {}
        }
        drop(engine);
        self.inner.timer_changed.notify_one();
    }
}

/// A running handoff wait on a tab; ends the engine's "awaiting the user" state when dropped (also when the wait
/// is cancelled by dropping its future).
struct AwaitingUser {
    inner: Arc<Inner>,
    tab: TabHandle,
}

impl Drop for AwaitingUser {
    fn drop(&mut self) {
        lock(&self.inner.engine).end_handoff_wait(self.tab);
    }
}

/// An agent action in progress on a tab: tabs it opens meanwhile are the session's popups. Ends when dropped.
struct Acting {
    inner: Arc<Inner>,
    tab: TabHandle,
}

impl Drop for Acting {
    fn drop(&mut self) {
        lock(&self.inner.engine).end_action(self.tab);
    }
}

/// The next event about `tab` (or one that may hide one: lost events, a reconnect). Pends forever when the
/// provider's event channel is closed, so the caller's other wake-ups decide.
async fn next_event_about(events: &mut broadcast::Receiver<ProviderEvent>, tab: TabHandle) {
    loop {
        match events.recv().await {
            Ok(ProviderEvent::TabUpdated(info) | ProviderEvent::TabCreated(info)) if info.tab == tab => return,
            Ok(ProviderEvent::TabClosed { tab: t, .. }) if t == tab => return,
            Ok(ProviderEvent::ResyncRequired | ProviderEvent::ConnectionRestored { .. })
            | Err(broadcast::error::RecvError::Lagged(_)) => return,
            Ok(_) => {}
            Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Refusals that no retry or reconnect can change (another session's tab, a user tab, a gone
/// tab) are returned before any browser round trip; anything else is re-checked after the
/// recovery retries and the reconnect.
fn refuse_locally<T>(res: Result<T, CoreError>) -> Result<(), CoreError> {
    match res {
        Err(e)
            if matches!(
                e.kind,
                ErrorKind::OtherSessionTab { .. }
                    | ErrorKind::NotClaimed { .. }
                    | ErrorKind::UserTabProtected { .. }
                    | ErrorKind::TabGone { .. }
                    | ErrorKind::ToolsInactive
                    | ErrorKind::SessionClosed
                    | ErrorKind::UnknownSession
            ) =>
        {
            Err(e)
        }
        _ => Ok(()),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Runtime {
    /// A runtime over one browser.
    #[must_use]
    pub fn new(provider: Arc<dyn Provider>, clock: Arc<dyn Clock>, config: RuntimeConfig) -> Self {
        let events = provider.events();
        let engine = Lifecycle::new(config.lifecycle.clone());
        Self {
            inner: Arc::new(Inner {
                provider,
                clock,
                config,
                engine: Mutex::new(engine),
                slots: Mutex::new(BTreeMap::new()),
                events: Mutex::new(events),
                active: AtomicUsize::new(0),
                idle: Notify::new(),
                closing: AtomicBool::new(false),
                shutdown: CancellationToken::new(),
                trace: AtomicU64::new(0),
                timer_changed: Notify::new(),
                waits: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    /// Read the engine (for status, tests and the coordinator's conversions). Do not hold the
    /// closure's borrow across an `.await` — the signature makes that impossible.
    pub fn inspect<R>(&self, f: impl FnOnce(&Lifecycle) -> R) -> R {
        f(&lock(&self.inner.engine))
    }

    /// How many sessions the runtime keeps per-session state for (serial locks): the sessions the engine tracks,
    /// plus any removed one whose lock was still held at removal.
    #[must_use]
    pub fn session_slots(&self) -> usize {
        lock(&self.inner.slots).len()
    }

    fn now(&self) -> Millis {
        self.inner.clock.now()
    }

    fn engine(&self) -> MutexGuard<'_, Lifecycle> {
        lock(&self.inner.engine)
    }

    fn enter(&self) -> Result<ActiveGuard, CoreError> {
        self.inner.active.fetch_add(1, Ordering::SeqCst);
        let guard = ActiveGuard(self.inner.clone());
        if self.inner.closing.load(Ordering::SeqCst) {
            return Err(CoreError::new(
                ErrorKind::ShuttingDown,
                "browserd is shutting down (plugin disposal); no new browser work is accepted",
            ));
        }
        Ok(guard)
    }

    /// Enters one operation of `session`: counts it as active (refused while shutting down) and takes the
    /// session's serial lock, so finalize, turn end and disposal of one session never interleave. Hold the returned
    /// guard for the whole operation.
    async fn serialized(&self, session: &SessionKey) -> Result<SessionOp, CoreError> {
        let active = self.enter()?;
        let serial = self.slot(session)?.lock_owned().await;
        Ok(SessionOp { _serial: serial, _active: active })
    }

    fn slot(&self, session: &SessionKey) -> Result<SessionLock, CoreError> {
        let slot = lock(&self.inner.slots).get(session).cloned();
        // A closed session already removed from the engine still answers `SESSION_CLOSED` while remembered.
        slot.ok_or_else(|| self.engine().missing_session(session))
    }

    /// Drops the per-session state (serial lock, handoff-wait token) of sessions the engine no longer tracks: closed
    /// sessions with nothing left (see [`Lifecycle::reap_closed_sessions`]). A lock someone still holds or waits for
    /// is kept until a later call; such a waiter finds the session closed.
    fn prune_sessions(&self) {
        let tracked: BTreeSet<SessionKey> = {
            let mut engine = self.engine();
            engine.reap_closed_sessions();
            engine.sessions().map(|s| s.key().clone()).collect()
        };
        lock(&self.inner.slots).retain(|key, slot| tracked.contains(key) || Arc::strong_count(slot) > 1);
        lock(&self.inner.waits).retain(|key, _| tracked.contains(key));
    }

    fn ctx(&self, session: &SessionKey, timeout: Duration) -> OpContext {
        let n = self.inner.trace.fetch_add(1, Ordering::Relaxed) + 1;
        let mut ctx = OpContext::new(session.clone(), timeout, format!("{session}-{n}"));
        ctx.cancel = self.inner.shutdown.child_token();
        ctx
    }

    fn cleanup_ctx(&self, session: &SessionKey) -> OpContext {
        // Cleanup is not cancelled by shutdown: disposal must still try its final cleanup.
        let n = self.inner.trace.fetch_add(1, Ordering::Relaxed) + 1;
        OpContext::new(session.clone(), self.inner.config.cleanup_timeout, format!("{session}-c{n}"))
    }

    fn provider_err(&self, err: ProviderError, tab: Option<TabHandle>) -> CoreError {
        let now = self.now();
        match err.kind {
            ProviderErrorKind::ConnectionLost => self.engine().handle_connection_lost(now),
            ProviderErrorKind::TabGone => {
                if let Some(tab) = tab {
                    self.engine().handle_tab_gone(tab, now);
                }
            }
            _ => {}
        }
        CoreError::from_provider(err, tab)
    }

    // ----- events, connection, recovery -----

    /// Apply pending provider events; re-read the tab list when events were lost.
    async fn drain_events(&self, session: &SessionKey) {
        let mut events = Vec::new();
        let mut resync = false;
        {
            let mut rx = lock(&self.inner.events);
            loop {
                match rx.try_recv() {
                    Ok(ev) => events.push(ev),
                    Err(broadcast::error::TryRecvError::Lagged(_)) => resync = true,
                    Err(_) => break,
                }
            }
        }
        if !events.is_empty() {
            let now = self.now();
            let mut engine = self.engine();
            for ev in &events {
                resync |= engine.handle_event(ev, now);
            }
        }
        if resync && !self.engine().bridge().needs_connect() {
            let ctx = self.ctx(session, self.inner.config.op_timeout);
            if let Ok(tabs) = self.inner.provider.list_tabs(&ctx).await {
                let now = self.now();
                self.engine().handle_tab_snapshot(&tabs, now);
            }
        }
    }

    async fn ensure_connected(&self, session: &SessionKey) -> Result<(), CoreError> {
        let (needs_connect, stop_cause) = {
            let engine = self.engine();
            (engine.bridge().needs_connect(), engine.bridge().stop_cause())
        };
        if !needs_connect {
            return Ok(());
        }
        if stop_cause == Some(StopCause::PluginDisposal) {
            return Err(CoreError::new(
                ErrorKind::ShuttingDown,
                "the bridge was stopped by plugin disposal; load the plugin again to use the browser",
            ));
        }
        let ctx = self.ctx(session, self.inner.config.op_timeout);
        match self.inner.provider.connect(&ctx).await {
            Ok(info) => {
                let caps = self.inner.provider.capabilities();
                let tabs = self.inner.provider.list_tabs(&ctx).await;
                let now = self.now();
                let mut engine = self.engine();
                engine.handle_connected(info.connection_epoch, now);
                engine.handle_capabilities(caps);
                if let Ok(tabs) = tabs {
                    engine.handle_tab_snapshot(&tabs, now);
                }
                Ok(())
            }
            Err(e) => Err(self.provider_err(e, None)),
        }
    }

    async fn execute(&self, plan: Plan) -> CleanupReport {
        let mut pending = PendingSteps { inner: self.inner.clone(), steps: plan.steps.clone(), done: 0 };
        let mut outcomes: Vec<(Step, StepOutcome)> = Vec::with_capacity(plan.steps.len());
        for step in &plan.steps {
            let ctx = self.cleanup_ctx(&step.session);
            let provider = &self.inner.provider;
            let res = match step.action {
                StepAction::Close => provider.close_tab(&ctx, step.tab).await,
                StepAction::Release => provider.release_tab(&ctx, step.tab).await,
                StepAction::Detach => provider.detach_debugger(&ctx, step.tab).await,
            };
            let now = self.now();
            let outcome = self.engine().handle_step_result(step, res, now);
            pending.done += 1;
            outcomes.push((step.clone(), outcome));
        }
        let now = self.now();
        self.engine().complete(&plan, &outcomes, now)
    }

    /// Retry the session's recovery records, then those of closed sessions whose lock is free.
    async fn prelude(&self, session: &SessionKey) {
        self.drain_events(session).await;
        if self.ensure_connected(session).await.is_err() {
            return;
        }
        let now = self.now();
        let plan = self.engine().plan_recovery(session, now);
        if !plan.steps.is_empty() {
            self.execute(plan).await;
        }
        self.retry_orphans().await;
    }

    /// Retry closed sessions' recovery records whose backoff has passed.
    async fn retry_orphans(&self) {
        let now = self.now();
        let orphans = self.engine().orphaned_recovery_due(now);
        for key in orphans {
            let Some(slot) = lock(&self.inner.slots).get(&key).cloned() else {
                // Records of a session this runtime never opened (e.g. loaded from the journal).
                let now = self.now();
                let plan = self.engine().plan_recovery(&key, now);
                if !plan.steps.is_empty() {
                    self.execute(plan).await;
                }
                continue;
            };
            let Ok(_guard) = slot.try_lock_owned() else { continue };
            let now = self.now();
            let plan = self.engine().plan_recovery(&key, now);
            if !plan.steps.is_empty() {
                self.execute(plan).await;
            }
        }
        self.prune_sessions();
    }

    /// Retry every pending recovery record now (own and orphaned). Returns how many remain.
    pub async fn retry_recovery(&self) -> usize {
        let sessions: Vec<SessionKey> = self.engine().sessions().map(|s| s.key().clone()).collect();
        for key in sessions {
            let Ok(slot) = self.slot(&key) else { continue };
            let Ok(_guard) = slot.try_lock_owned() else { continue };
            self.drain_events(&key).await;
            if self.ensure_connected(&key).await.is_err() {
                break;
            }
            let now = self.now();
            let plan = self.engine().plan_recovery(&key, now);
            if !plan.steps.is_empty() {
                self.execute(plan).await;
            }
        }
        self.retry_orphans().await;
        self.engine().recovery().len()
    }

    // ----- sessions, turns, activation -----

    /// `session.open`. Idempotent for an open session.
    pub async fn open_session(&self, session: &SessionKey) -> Result<(), CoreError> {
        let _active = self.enter()?;
        let now = self.now();
        self.engine().open_session(session, now)?;
        lock(&self.inner.slots).entry(session.clone()).or_default();
        Ok(())
    }

    /// `session.close`: final cleanup (close scratch tabs, release claims, keep marked pages
    /// dropping their ownership metadata, detach debugger), tools hidden, session closed.
    /// Failed steps stay as recovery records and are retried later, even after a switch.
    /// Closing a closed session only retries its recovery records (a session removed meanwhile answers an empty,
    /// successful report). Once nothing refers to a closed session any more its records are removed; see
    /// [`Lifecycle::reap_closed_sessions`].
    pub async fn close_session(&self, session: &SessionKey, reason: CloseReason) -> Result<CleanupReport, CoreError> {
        self.cancel_handoff_waits(session);
        let slot = match self.slot(session) {
            Ok(slot) => slot,
            Err(e) if e.kind == ErrorKind::SessionClosed => {
                let now = self.now();
                let mut engine = self.engine();
                let plan = engine.plan_close(session, reason, now)?;
                return Ok(engine.complete(&plan, &[], now));
            }
            Err(e) => return Err(e),
        };
        let report = {
            let _serial = slot.lock().await;
            self.close_locked(session, reason).await
        };
        drop(slot);
        self.prune_sessions();
        report
    }

    async fn close_locked(&self, session: &SessionKey, reason: CloseReason) -> Result<CleanupReport, CoreError> {
        self.drain_events(session).await;
        // A failed reconnect must not stop the final cleanup from being attempted and recorded.
        let _ = self.ensure_connected(session).await;
        let now = self.now();
        let plan = self.engine().plan_close(session, reason, now)?;
        let report = self.execute(plan).await;
        self.retry_orphans().await;
        Ok(report)
    }

    /// `turn.begin`. Idempotent while a turn is open.
    pub async fn begin_turn(&self, session: &SessionKey) -> Result<u64, CoreError> {
        let _op = self.serialized(session).await?;
        self.engine().begin_turn(session)
    }

    /// Opens a turn if none is open, without waiting for the session's running operation: every tool call does this
    /// (turns come from the host's turn ends, not from tab activity), and a read must not queue behind a write.
    /// Idempotent while a turn is open.
    pub fn open_turn(&self, session: &SessionKey) -> Result<u64, CoreError> {
        self.engine().begin_turn(session)
    }

    /// `turn.end` (host-internal turn cleanup). Produces no transcript output: the report is for
    /// the host and `browser_status` only. Refused cleanup is reported in
    /// [`CleanupReport::auto_cleanup_refused`] and in status.
    pub async fn end_turn(&self, session: &SessionKey) -> Result<CleanupReport, CoreError> {
        self.cancel_handoff_waits(session);
        let _op = self.serialized(session).await?;
        self.drain_events(session).await;
        let _ = self.ensure_connected(session).await;
        let caps = self.inner.provider.capabilities();
        let now = self.now();
        let plan = {
            let mut engine = self.engine();
            engine.handle_capabilities(caps);
            engine.plan_turn_end(session, now)?
        };
        let report = self.execute(plan).await;
        self.retry_orphans().await;
        Ok(report)
    }

    /// `tools.activate`. Idempotent; returns whether the state changed.
    pub async fn activate_tools(&self, session: &SessionKey) -> Result<bool, CoreError> {
        let _op = self.serialized(session).await?;
        let now = self.now();
        self.engine().activate_tools(session, now)
    }

    // ----- tabs -----

    /// `browser_open`: create a scratch tab owned by the session.
    pub async fn open_tab(&self, session: &SessionKey, url: &str) -> Result<TabView, CoreError> {
        let _op = self.serialized(session).await?;
        self.engine().check_active(session)?;
        self.prelude(session).await;
        self.ensure_connected(session).await?;
        self.engine().check_open_tab(session)?;
        let ctx = self.ctx(session, self.inner.config.op_timeout);
        let req = CreateTab { url: url.to_owned(), background: true, group_for: Some(session.clone()) };
        let info = self.inner.provider.create_tab(&ctx, req).await.map_err(|e| self.provider_err(e, None))?;
        let now = self.now();
        Ok(self.engine().handle_tab_created(session, &info, now))
    }

    /// `browser_claim`: take control of a user tab (released, never closed, at cleanup).
    pub async fn claim_tab(&self, session: &SessionKey, tab: TabHandle) -> Result<TabView, CoreError> {
        let _op = self.serialized(session).await?;
        self.engine().check_active(session)?;
        self.drain_events(session).await;
        refuse_locally(self.engine().check_claim(session, tab))?;
        self.prelude(session).await;
        self.ensure_connected(session).await?;
        if self.engine().check_claim(session, tab)? {
            let ctx = self.ctx(session, self.inner.config.op_timeout);
            self.inner.provider.claim_tab(&ctx, tab).await.map_err(|e| self.provider_err(e, Some(tab)))?;
            let now = self.now();
            self.engine().handle_claimed(session, tab, now);
        }
        self.engine().view(session, tab).ok_or_else(|| CoreError::unknown_tab(tab))
    }

    /// `browser_list`: every live tab with its provenance as seen by the session.
    pub async fn list_tabs(&self, session: &SessionKey) -> Result<Vec<TabView>, CoreError> {
        let _op = self.serialized(session).await?;
        self.engine().check_active(session)?;
        self.prelude(session).await;
        Ok(self.engine().list_tabs(session))
    }

    /// Refuse a tool call from a stale tool snapshot (see [`Lifecycle::check_tool_snapshot`]).
    pub fn check_tool_snapshot(&self, session: &SessionKey, generation: u64) -> Result<(), CoreError> {
        self.engine().check_tool_snapshot(session, generation)
    }

    /// `browser_status` (works for closed sessions too; no tools needed).
    pub async fn status(&self, session: &SessionKey) -> Result<SessionStatus, CoreError> {
        self.drain_events(session).await;
        self.engine().status(session)
    }

    /// `browser_mark_deliverable` (turn-scoped; latest mark wins).
    pub async fn mark_deliverable(&self, session: &SessionKey, tab: TabHandle) -> Result<Mark, CoreError> {
        self.mark(session, tab, MarkKind::Deliverable).await
    }

    /// `browser_mark_handoff` (turn-scoped; latest mark wins).
    pub async fn mark_handoff(&self, session: &SessionKey, tab: TabHandle) -> Result<Mark, CoreError> {
        self.mark(session, tab, MarkKind::Handoff).await
    }

    async fn mark(&self, session: &SessionKey, tab: TabHandle, kind: MarkKind) -> Result<Mark, CoreError> {
        let _op = self.serialized(session).await?;
        self.drain_events(session).await;
        self.engine().mark(session, tab, kind)
    }

    /// `browser_handoff`: mark handoff, detach the tab's debugger, drop the write lease; the
    /// page and its ownership stay (retained through this turn's end).
    pub async fn handoff(&self, session: &SessionKey, tab: TabHandle) -> Result<CleanupReport, CoreError> {
        let _op = self.serialized(session).await?;
        self.drain_events(session).await;
        let now = self.now();
        let plan = self.engine().plan_handoff(session, tab, now)?;
        Ok(self.execute(plan).await)
    }

    /// `browser_handoff` with `until`, after [`Self::handoff`]: wait for the user to finish. The tab is only looked
    /// at, never acted on: no write lease (nobody may write to it meanwhile), no input; its URL comes from browser
    /// events, and criteria that need the page read it with an observation (a debugger lease for the read). It looks
    /// again on every event about the tab and at least every [`RuntimeConfig::handoff_poll`]; the session's lock is
    /// held only for each look, so turn end and close are never blocked by the wait, and they cancel it.
    ///
    /// Ends with [`HandoffEnd::Completed`] (the write lease re-acquired), [`HandoffEnd::TimedOut`] or
    /// [`HandoffEnd::TabClosed`]; `progress` hears about each look.
    ///
    /// # Errors
    /// `INVALID_PARAMS` (no criteria, a timeout above [`RuntimeConfig::handoff_max_wait`], a tab not handed off),
    /// `CANCELLED` (turn end, finalize, reset, close, or the tab's handoff ended), `SHUTTING_DOWN`, and the usual
    /// session and ownership refusals. The tab stays handed off in every case.
    pub async fn await_handoff(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        wait: &HandoffWait,
        progress: &(dyn Fn(&HandoffProgress) + Send + Sync),
    ) -> Result<HandoffEnd, CoreError> {
        let config = &self.inner.config;
        let timeout = wait.timeout.unwrap_or(config.handoff_default_wait);
        if wait.until.is_empty() {
            return Err(CoreError::new(
                ErrorKind::InvalidRequest,
                "a handoff wait needs at least one `until` criterion; without one, hand off and ask the user",
            ));
        }
        if timeout > config.handoff_max_wait {
            return Err(CoreError::new(
                ErrorKind::InvalidRequest,
                format!(
                    "a handoff may wait at most {} ms (asked: {} ms); ask for less, or hand off and check back later",
                    millis(config.handoff_max_wait),
                    millis(timeout)
                ),
            ));
        }
        // Subscribed before the first look, so no event between the look and the wait is missed.
        let mut events = self.inner.provider.events();
        let cancel = self.wait_token(session);
        let start = self.now();
        let deadline = start.plus(millis(timeout));
        let start_url = {
            let _op = self.serialized(session).await?;
            self.drain_events(session).await;
            self.engine().begin_handoff_wait(session, tab)?
        };
        let _awaiting = AwaitingUser { inner: self.inner.clone(), tab };
        let mut checks = 0u32;
        loop {
            let (state, evidence) = tokio::select! {
                r = self.look_at_handoff(session, tab, &wait.until, &start_url) => r?,
                () = cancel.cancelled() => return Err(Self::wait_cancelled(tab)),
            };
            checks += 1;
            let now = self.now();
            let waited_ms = now.0.saturating_sub(start.0);
            match state {
                HandoffCheck::Closed => return Ok(HandoffEnd::TabClosed { evidence, waited_ms }),
                HandoffCheck::NoLongerHandedOff => {
                    return Err(CoreError::new(
                        ErrorKind::Cancelled,
                        format!(
                            "stopped waiting: tab {tab} is no longer handed off by this session (cleanup ran or \
                             control changed); list tabs to see where it stands"
                        ),
                    ));
                }
                HandoffCheck::Waiting { url } if handoff::all_passed(&evidence) => {
                    let token = {
                        let mut engine = self.engine();
                        engine.end_handoff_wait(tab);
                        engine.acquire_write_lease(session, tab, now)?
                    };
                    return Ok(HandoffEnd::Completed { evidence, url, token, waited_ms });
                }
                HandoffCheck::Waiting { url } => {
                    if now >= deadline {
                        return Ok(HandoffEnd::TimedOut { evidence, url, waited_ms });
                    }
                    progress(&HandoffProgress { checks, waited_ms, timeout_ms: millis(timeout), evidence });
                }
            }
            tokio::select! {
                () = cancel.cancelled() => return Err(Self::wait_cancelled(tab)),
                () = tokio::time::sleep(config.handoff_poll) => {}
                () = next_event_about(&mut events, tab) => {}
            }
        }
    }

    /// One read-only look at a waited-on handoff, under the session's lock.
    async fn look_at_handoff(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        until: &[Expectation],
        start_url: &str,
    ) -> Result<(HandoffCheck, Vec<ExpectationResult>), CoreError> {
        let _op = self.serialized(session).await?;
        self.drain_events(session).await;
        let HandoffCheck::Waiting { mut url } = self.engine().check_handoff_wait(session, tab) else {
            return Ok((self.engine().check_handoff_wait(session, tab), Vec::new()));
        };
        let mut content = None;
        if handoff::needs_page(until) && self.ensure_connected(session).await.is_ok() {
            let provider = self.inner.provider.clone();
            let params = ObserveParams::default();
            let observed =
                self.with_debugger(session, tab, move |ctx| async move { provider.observe(&ctx, tab, &params).await });
            match observed.await {
                Ok(o) => {
                    url = o.url;
                    content = Some(o.untrusted_content);
                }
                // Gone (the provider error already recorded it) or any other failure: look again later.
                Err(_) => {
                    if self.engine().check_handoff_wait(session, tab) == HandoffCheck::Closed {
                        return Ok((HandoffCheck::Closed, Vec::new()));
                    }
                }
            }
        }
        let evidence = handoff::check(until, handoff::Seen { start_url, url: &url, content: content.as_deref() });
        Ok((HandoffCheck::Waiting { url }, evidence))
    }

    fn wait_cancelled(tab: TabHandle) -> CoreError {
        CoreError::new(
            ErrorKind::Cancelled,
            format!(
                "stopped waiting for the user on tab {tab} (turn end, cleanup or shutdown); the tab stays handed off \
                 for this turn — ask the user whether they finished"
            ),
        )
    }

    /// A token that cancels one handoff wait of `session`; [`Self::cancel_handoff_waits`] fires it.
    fn wait_token(&self, session: &SessionKey) -> CancellationToken {
        lock(&self.inner.waits)
            .entry(session.clone())
            .or_insert_with(|| self.inner.shutdown.child_token())
            .child_token()
    }

    /// Cancel `session`'s handoff waits (turn end, finalize, context reset, close). Waits started later get a
    /// fresh token.
    fn cancel_handoff_waits(&self, session: &SessionKey) {
        if let Some(token) = lock(&self.inner.waits).remove(session) {
            token.cancel();
        }
    }

    /// `browser_close`: close own agent tabs, named or by group (groups never closed whole).
    pub async fn close_tabs(
        &self,
        session: &SessionKey,
        tabs: &[TabHandle],
        groups: &[GroupHandle],
    ) -> Result<CleanupReport, CoreError> {
        let _op = self.serialized(session).await?;
        self.engine().check_active(session)?;
        self.prelude(session).await;
        let now = self.now();
        let plan = self.engine().plan_close_tabs(session, tabs, groups, now)?;
        Ok(self.execute(plan).await)
    }

    /// `browser_cleanup` (task finalize). Tools stay active; the bridge stays up.
    pub async fn finalize(&self, session: &SessionKey, inputs: &FinalizeInputs) -> Result<CleanupReport, CoreError> {
        self.cancel_handoff_waits(session);
        let _op = self.serialized(session).await?;
        self.engine().check_active(session)?;
        self.drain_events(session).await;
        let _ = self.ensure_connected(session).await;
        let now = self.now();
        let plan = self.engine().plan_finalize(session, inputs, now)?;
        let report = self.execute(plan).await;
        self.retry_orphans().await;
        Ok(report)
    }

    /// `browser_context_reset`: finalize first; tools are deactivated only if it fully
    /// succeeded. Never reports success for a failed cleanup.
    pub async fn context_reset(&self, session: &SessionKey) -> Result<CleanupReport, CoreError> {
        self.cancel_handoff_waits(session);
        let _op = self.serialized(session).await?;
        self.drain_events(session).await;
        let _ = self.ensure_connected(session).await;
        let now = self.now();
        let plan = self.engine().plan_context_reset(session, now)?;
        Ok(self.execute(plan).await)
    }

    // ----- leases, observe, act -----

    /// Acquire the tab's write lease; returns its fencing token.
    pub async fn acquire_write_lease(&self, session: &SessionKey, tab: TabHandle) -> Result<FencingToken, CoreError> {
        let _op = self.serialized(session).await?;
        self.drain_events(session).await;
        let now = self.now();
        self.engine().acquire_write_lease(session, tab, now)
    }

    /// Release the tab's write lease. Idempotent.
    pub async fn release_write_lease(&self, session: &SessionKey, tab: TabHandle) -> Result<bool, CoreError> {
        let _op = self.serialized(session).await?;
        self.engine().release_write_lease(session, tab)
    }

    async fn with_debugger<T, F, Fut>(&self, session: &SessionKey, tab: TabHandle, op: F) -> Result<T, CoreError>
    where
        F: FnOnce(OpContext) -> Fut,
        Fut: Future<Output = Result<T, ProviderError>>,
    {
        let acquire = self.engine().debugger_acquire(session, tab);
        let mut usage = DebuggerUse { inner: self.inner.clone(), tab, phase: UsePhase::InUse };
        if acquire == DebuggerAcquire::NeedsAttach {
            usage.phase = UsePhase::Attaching;
            let ctx = self.ctx(session, self.inner.config.op_timeout);
            let res = self.inner.provider.attach_debugger(&ctx, tab).await;
            let now = self.now();
            self.engine().handle_attach_result(tab, &res, now);
            if let Err(e) = res {
                usage.phase = UsePhase::Done; // the engine already dropped the reference
                return Err(self.provider_err(e, Some(tab)));
            }
            usage.phase = UsePhase::InUse;
        }
        let ctx = self.ctx(session, self.inner.config.op_timeout);
        let res = op(ctx).await.map_err(|e| self.provider_err(e, Some(tab)));
        drop(usage);
        res
    }

    /// `browser_observe`: checks activation and ownership, takes a debugger lease for the
    /// operation and releases it after (idle detach follows).
    pub async fn observe(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        params: &ObserveParams,
    ) -> Result<Observation, CoreError> {
        let _op = self.serialized(session).await?;
        self.engine().check_active(session)?;
        // Local refusals (another session's tab, a user tab) come before any browser round trip.
        self.drain_events(session).await;
        refuse_locally(self.engine().check_tab_access(session, tab))?;
        self.prelude(session).await;
        self.ensure_connected(session).await?;
        self.engine().check_tab_access(session, tab)?;
        let provider = self.inner.provider.clone();
        self.with_debugger(session, tab, move |ctx| async move { provider.observe(&ctx, tab, params).await }).await
    }

    /// `browser_act`: checks activation, ownership and the write lease (with `token`, or taking
    /// the session's lease when `None`), takes a debugger lease for the operation and releases
    /// it after. The provider call carries the fencing token for the last-hop check.
    pub async fn act(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        params: &ActParams,
        token: Option<FencingToken>,
    ) -> Result<ActionResult, CoreError> {
        let _op = self.serialized(session).await?;
        self.engine().check_active(session)?;
        self.drain_events(session).await;
        refuse_locally(self.engine().check_tab_access(session, tab))?;
        self.prelude(session).await;
        self.ensure_connected(session).await?;
        let now = self.now();
        let token = self.engine().check_write(session, tab, token, now)?;
        let provider = self.inner.provider.clone();
        self.engine().begin_action(session, tab);
        let acting = Acting { inner: self.inner.clone(), tab };
        let res = self
            .with_debugger(session, tab, move |mut ctx| async move {
                ctx.fencing = Some(token);
                provider.act(&ctx, tab, params).await
            })
            .await;
        if let Ok(result) = &res {
            self.adopt_popups(session, &result.effects.tabs_opened).await;
        }
        drop(acting);
        res
    }

    /// After an action, while it still counts as running: tabs it opened (popups, `target=_blank`) become the
    /// session's scratch tabs once the browser records the session's control of them (`claim_tab`). The action's
    /// effect summary already lists them in `tabs_opened`. A tab whose claim fails stays the user's.
    ///
    /// Unsupported over the extension relay: its ownership records let a session close only tabs it created
    /// itself, so an adopted popup could never be closed; popups there stay the user's until claimed.
    async fn adopt_popups(&self, session: &SessionKey, reported: &[browserd_protocol::TabId]) {
        if self.inner.provider.kind() == ProviderKind::Extension {
            return;
        }
        self.drain_events(session).await;
        let unknown = reported.iter().map(|t| TabHandle(t.0)).any(|t| self.engine().tabs().get(t).is_none());
        if unknown {
            // The action saw a tab whose creation event has not arrived yet: read the tab list instead.
            let ctx = self.ctx(session, self.inner.config.op_timeout);
            if let Ok(tabs) = self.inner.provider.list_tabs(&ctx).await {
                let now = self.now();
                self.engine().handle_tab_snapshot(&tabs, now);
            }
        }
        let popups = self.engine().take_popups(session);
        for (popup, opener) in popups {
            let ctx = self.ctx(session, self.inner.config.op_timeout);
            if self.inner.provider.claim_tab(&ctx, popup).await.is_ok() {
                let now = self.now();
                self.engine().handle_popup_adopted(session, popup, opener, now);
            }
        }
    }

    // ----- advanced tier -----

    /// `browser_evaluate`: like [`Self::act`] (activation, ownership, the session's write lease, a debugger lease
    /// for the call) since a script may change the page. Whether the tier is enabled is the caller's policy.
    pub async fn evaluate(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        params: &EvaluateParams,
    ) -> Result<EvaluateResult, CoreError> {
        let (token, _op) = self.enter_write(session, tab).await?;
        let provider = self.inner.provider.clone();
        self.with_debugger(session, tab, move |mut ctx| async move {
            ctx.fencing = Some(token);
            provider.evaluate(&ctx, tab, params).await
        })
        .await
    }

    /// `browser_cdp`: a raw protocol command, checked like [`Self::evaluate`] (it may change the page). The method
    /// policy is the caller's.
    pub async fn raw_protocol(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        params: &RawProtocolParams,
    ) -> Result<RawProtocolResult, CoreError> {
        let (token, _op) = self.enter_write(session, tab).await?;
        let provider = self.inner.provider.clone();
        self.with_debugger(session, tab, move |mut ctx| async move {
            ctx.fencing = Some(token);
            provider.raw_protocol(&ctx, tab, params).await
        })
        .await
    }

    /// `browser_console`: a read, checked like [`Self::observe`].
    pub async fn console(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        params: &ConsoleParams,
    ) -> Result<ConsoleResult, CoreError> {
        let _op = self.enter_read(session, tab).await?;
        let provider = self.inner.provider.clone();
        self.with_debugger(session, tab, move |ctx| async move { provider.console(&ctx, tab, params).await }).await
    }

    /// `browser_network`: a read, checked like [`Self::observe`].
    pub async fn network(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        params: &NetworkParams,
    ) -> Result<NetworkResult, CoreError> {
        let _op = self.enter_read(session, tab).await?;
        let provider = self.inner.provider.clone();
        self.with_debugger(session, tab, move |ctx| async move { provider.network(&ctx, tab, params).await }).await
    }

    /// The prologue of an advanced read: the session's serial guard, activation, ownership (local refusals before
    /// any browser round trip), recovery retries and the connection.
    async fn enter_read(&self, session: &SessionKey, tab: TabHandle) -> Result<SessionOp, CoreError> {
        let op = self.serialized(session).await?;
        self.engine().check_active(session)?;
        self.drain_events(session).await;
        refuse_locally(self.engine().check_tab_access(session, tab))?;
        self.prelude(session).await;
        self.ensure_connected(session).await?;
        self.engine().check_tab_access(session, tab)?;
        Ok(op)
    }

    /// The prologue of an advanced write: as [`Self::enter_read`], then the session's write lease on the tab.
    async fn enter_write(&self, session: &SessionKey, tab: TabHandle) -> Result<(FencingToken, SessionOp), CoreError> {
        let op = self.serialized(session).await?;
        self.engine().check_active(session)?;
        self.drain_events(session).await;
        refuse_locally(self.engine().check_tab_access(session, tab))?;
        self.prelude(session).await;
        self.ensure_connected(session).await?;
        let now = self.now();
        let token = self.engine().check_write(session, tab, None, now)?;
        Ok((token, op))
    }

    // ----- timers -----

    /// When [`Self::tick`] should run next (idle debugger detach, background recovery retry).
    #[must_use]
    pub fn next_deadline(&self) -> Option<Millis> {
        self.engine().poll_timeout()
    }

    /// Timer hook: apply events, detach idle debuggers whose window passed (skipping sessions
    /// busy with an operation — that operation re-arms the timer), retry closed sessions'
    /// recovery records whose backoff passed. Returns the next deadline.
    pub async fn tick(&self) -> Option<Millis> {
        let now = self.now();
        let due = self.engine().idle_due_sessions(now);
        for key in due {
            let Ok(slot) = self.slot(&key) else { continue };
            let Ok(_guard) = slot.try_lock_owned() else { continue };
            self.drain_events(&key).await;
            let now = self.now();
            let plan = self.engine().plan_idle_detach(&key, now);
            if !plan.steps.is_empty() {
                self.execute(plan).await;
            }
        }
        let now = self.now();
        // Bound first: a guard in an `if let` scrutinee would live across the await below.
        let due = self.engine().orphaned_recovery_due(now);
        if let Some(key) = due.first()
            && self.ensure_connected(key).await.is_ok()
        {
            self.retry_orphans().await;
        }
        self.next_deadline()
    }

    /// Run [`Self::tick`] at each deadline until `cancel` fires. Meant for a real clock (the
    /// broker spawns it as a tracked task); tests advance a fake clock and call `tick` instead.
    pub async fn run_timers(&self, cancel: CancellationToken) {
        loop {
            let changed = self.inner.timer_changed.notified();
            let wait = match self.next_deadline() {
                Some(deadline) => Duration::from_millis(deadline.0.saturating_sub(self.now().0)),
                None => Duration::from_secs(3600),
            };
            tokio::select! {
                () = cancel.cancelled() => return,
                () = changed => continue,
                () = tokio::time::sleep(wait) => {}
            }
            self.tick().await;
        }
    }

    // ----- disposal -----

    /// Plugin disposal: refuse new work, wait for active requests (up to
    /// [`RuntimeConfig::dispose_wait`], then cancel them), run the final cleanup of every open
    /// session, retry recovery once more, stop the bridge. Never blocks host exit for longer
    /// than the waits and the cleanup deadlines.
    pub async fn dispose_plugin(&self) -> DisposalReport {
        self.inner.closing.store(true, Ordering::SeqCst);
        for (_, token) in std::mem::take(&mut *lock(&self.inner.waits)) {
            token.cancel();
        }
        let waited = tokio::time::timeout(self.inner.config.dispose_wait, self.wait_idle()).await.is_ok();
        if !waited {
            self.inner.shutdown.cancel();
            let _ = tokio::time::timeout(self.inner.config.cleanup_timeout, self.wait_idle()).await;
        }
        let open: Vec<SessionKey> =
            self.engine().sessions().filter(|s| s.closed().is_none()).map(|s| s.key().clone()).collect();
        let mut sessions = Vec::new();
        for key in open {
            let Ok(slot) = self.slot(&key) else { continue };
            let _serial = slot.lock().await;
            if let Ok(report) = self.close_locked(&key, CloseReason::PluginUnload).await {
                sessions.push((key, report));
            }
        }
        let now = self.now();
        let mut engine = self.engine();
        engine.handle_bridge_stopped(StopCause::PluginDisposal, now);
        DisposalReport {
            waited_for_active: waited,
            sessions,
            pending_recovery: engine.recovery().len(),
            bridge: engine.bridge().state(),
        }
    }

    async fn wait_idle(&self) {
        loop {
            let notified = self.inner.idle.notified();
            if self.inner.active.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Number of requests in progress.
    #[must_use]
    pub fn active_requests(&self) -> usize {
        self.inner.active.load(Ordering::SeqCst)
    }
}
