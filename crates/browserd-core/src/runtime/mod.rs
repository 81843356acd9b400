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

mod advanced;
mod boundaries;
mod disposal;
mod execute;
mod guards;
mod handoff;
mod page;
mod sessions;
mod timers;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

use crate::Millis;
use crate::clock::Clock;
use crate::error::{CoreError, ErrorKind};
use crate::lifecycle::{Lifecycle, LifecycleConfig};
use crate::provider::{OpContext, Provider, ProviderError, ProviderErrorKind, ProviderEvent, SessionKey, TabHandle};

pub use disposal::DisposalReport;
use guards::ActiveGuard;
pub use handoff::{HandoffEnd, HandoffProgress, HandoffWait};

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
}
