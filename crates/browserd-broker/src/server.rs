//! The broker daemon: binds the socket through `browserd-ipc`, answers `hello`, keeps the host-session ↔ broker
//! session map, and dispatches every JSON-RPC method to the core [`Runtime`] behind the back-pressure [`Gate`].
//!
//! One task reads each connection; each request runs in its own task (bounded by the gate for page work) and the
//! answer goes back through the connection's writer task. No lock is held across an `.await` except the runtime's
//! own per-session locks.
//!
//! The broker's own controls are typed methods of the protocol registry like every other: `broker.cancel` (cancel
//! one in-flight request of the connection, for MCP cancellation), `broker.shutdown` (graceful stop),
//! `broker.stopGate` (cancel queued and running page work, report `USER_STOPPED`), `broker.selectTab` (choose which
//! owned tab `browser_observe` / `browser_act` / `browser_batch` work on when their params name no tab).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use browserd_core::clock::{Clock, SystemClock};
use browserd_core::error::CoreError;
use browserd_core::lifecycle::{CloseReason as CoreClose, FinalizeInputs, LifecycleConfig};
use browserd_core::provider::{Capability, Provider, ProviderKind, SessionKey, TabHandle};
use browserd_core::runtime::{HandoffEnd, HandoffProgress, HandoffWait, Runtime, RuntimeConfig};
use browserd_ipc::{
    AcquireLockError, BrokerListener, ConnectionContext, FramedConnection, IdleTracker, InstanceLock, RuntimeDir,
    ServeOptions, ServeSummary, serve,
};
use browserd_protocol::hello::{ComponentRole, HelloParams, HelloResult, VersionRange, negotiate_named};
use browserd_protocol::jsonrpc::{Message, Notification, Request, RequestId, Response};
use browserd_protocol::lifecycle::{
    BrowserKind, BrowserStart, BrowserStatus, CleanupResult, ClientDisconnectParams, ClientDisconnectResult, CloseReason,
    ContextResetParams, ContextResetResult, DebuggerLeaseState, DebuggerLeaseStatus, HostKind, Limits,
    SessionCloseParams, SessionOpenParams, SessionOpenResult, SessionStatus, StatusParams, StatusResult, TabStatus,
    ToolActivation, ToolSet, ToolsActivateParams, TurnBeginParams, TurnBeginResult, TurnEndParams, TurnEndResult,
    UnsupportedReason, Usage, WriteLeaseStatus,
};
use browserd_protocol::methods::{
    BrokerCancelResult, BrokerShutdownResult, MethodCall, ToolsListParams, ToolsListResult,
};
use browserd_protocol::tools::{
    BatchResult, BatchStop, BatchStopReason, BrowserStatusResult, HandoffResult, HandoffStatus, ListResult, MarkResult,
    Tool, ToolCall, ToolCallParams, ToolTier,
};
use browserd_protocol::{ActParams, ActionKind, ActionResult, ErrorCode, ErrorData, FencingToken, Outcome, SessionId};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::BrokerConfig;
use crate::dedup::{Admit, CallRecord, DedupLog, Ticket};
use crate::lazy::{BrowserTarget, LazyChromium};
use crate::limits::{Admission, CONSISTENT_READ_WAIT, Gate, LimitConfig, RunningWrite, user_stopped};
use crate::to_proto;

pub use browserd_protocol::methods::{
    BROKER_CANCEL, BROKER_SELECT_TAB, BROKER_SHUTDOWN, BROKER_STOP_GATE, SelectTabParams, StopGateResult,
};

tokio::task_local! {
    /// Set while a call must not start the browser (turn end or close before the browser ever started).
    static NO_LAUNCH: bool;
    /// The connection the current request came on (read by `context.reset {disconnectClient}`).
    static REQUEST_CONN: u64;
}

/// How many ended host turns each session remembers, so a late repeat of any of them stays a no-op.
const ENDED_TURNS_KEPT: usize = 64;

/// Whether the current task must not start the browser.
pub(crate) fn launch_forbidden() -> bool {
    NO_LAUNCH.try_with(|v| *v).unwrap_or(false)
}

#[derive(Debug)]
struct SessionInfo {
    key: SessionKey,
    host: HostKind,
    host_session_id: String,
    label: Option<String>,
    attached: BTreeSet<u64>,
    grace: Option<CancellationToken>,
    current_tab: Option<TabHandle>,
    host_turn: Option<String>,
    /// The host turns already ended (host turn id or hook payload identity) and what their end answered, newest
    /// last; a repeated delivery of one of them answers the same and ends nothing.
    ended_turns: std::collections::VecDeque<(String, TurnEndResult)>,
    /// The session activated the advanced tier (policy allowed it); cleared when its tools are hidden.
    advanced: bool,
}

#[derive(Debug, Default)]
struct Tables {
    by_host: HashMap<(HostKind, String), SessionId>,
    sessions: BTreeMap<SessionId, SessionInfo>,
    connections: HashMap<u64, mpsc::Sender<Value>>,
    /// Cancelling one closes that connection (after its current reply).
    closers: HashMap<u64, CancellationToken>,
    /// Connections to close once the reply being sent has gone out (`disconnectClient`).
    disconnect_after_reply: BTreeSet<u64>,
    next_session: u64,
}

/// Why the broker did not run.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    /// Another broker holds the lock.
    #[error(transparent)]
    AlreadyRunning(AcquireLockError),
    /// The lock could not be taken.
    #[error(transparent)]
    Lock(AcquireLockError),
    /// The socket could not be bound.
    #[error(transparent)]
    Bind(#[from] browserd_ipc::BindError),
}

/// What a broker run did.
#[derive(Debug, Clone)]
pub struct RunSummary {
    /// The accept loop's summary.
    pub serve: ServeSummary,
    /// Sessions disposed at shutdown.
    pub disposed_sessions: usize,
    /// Recovery records left for the next broker.
    pub pending_recovery: usize,
}

/// The broker. Build it with [`Broker::with_provider`] (tests, other browsers) or [`Broker::from_config`].
pub struct Broker {
    runtime: Runtime,
    provider: Arc<dyn Provider>,
    lazy: Option<Arc<LazyChromium>>,
    config: BrokerConfig,
    gate: Gate,
    tables: Mutex<Tables>,
    shutdown: CancellationToken,
    idle: Mutex<Option<IdleTracker>>,
    next_conn: AtomicU64,
    /// Trace ids of writes sent without a `callId`.
    next_write: AtomicU64,
    started: std::time::Instant,
    journal: crate::journal_gate::JournalGate,
    request_ids: crate::request_ids::RequestIds,
    recovery_journal: crate::dedup::RecoveryJournal,
    owned_journal: crate::dedup::OwnedJournal,
    /// What the latest Stop reported (via, control epoch, dropped inputs, detached tabs); `USER_STOPPED` answers
    /// carry it in `details.stop`.
    last_stop: Mutex<Option<Value>>,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker").field("config", &self.config).finish_non_exhaustive()
    }
}

fn runtime_config(config: &BrokerConfig) -> RuntimeConfig {
    RuntimeConfig {
        lifecycle: LifecycleConfig {
            max_tabs_per_session: config.max_tabs_per_task as usize,
            ..LifecycleConfig::default()
        },
        op_timeout: Duration::from_millis(config.op_timeout_ms),
        ..RuntimeConfig::default()
    }
}

fn limit_config(config: &BrokerConfig) -> LimitConfig {
    LimitConfig {
        max_queued: config.max_queued_requests,
        max_concurrent: config.max_concurrent_page_ops,
        concurrency_wait: Duration::from_millis(config.concurrency_wait_ms),
    }
}

fn err(e: &CoreError) -> ErrorData {
    to_proto::error_data(e)
}

fn core_close_reason(reason: CloseReason) -> CoreClose {
    match reason {
        CloseReason::HostExit => CoreClose::HostExit,
        CloseReason::SessionSwitch => CoreClose::SessionSwitch,
        CloseReason::Fork => CoreClose::Fork,
        CloseReason::PluginUnload => CoreClose::PluginUnload,
        CloseReason::AgentDisposed | CloseReason::ClientGone => CoreClose::AgentDisposed,
        CloseReason::User => CoreClose::SessionEnd,
    }
}

fn core_tool_names() -> Vec<String> {
    Tool::ALL.iter().filter(|t| t.tier() == ToolTier::Core).map(|t| t.name().to_owned()).collect()
}

fn to_value<T: Serialize>(value: &T) -> Result<Value, ErrorData> {
    serde_json::to_value(value)
        .map_err(|e| ErrorData::new(ErrorCode::InternalError, format!("cannot encode the result: {e}")))
}

impl Broker {
    /// A broker over `provider` (tests use the fake provider; the clock drives the runtime's timers).
    #[must_use]
    pub fn with_provider(provider: Arc<dyn Provider>, clock: Arc<dyn Clock>, config: BrokerConfig) -> Arc<Self> {
        Self::build(provider, None, clock, config)
    }

    /// A broker over the configured browser: the remote endpoint when `remote_cdp` is set, else a managed Chromium
    /// launched on first browser use.
    #[must_use]
    pub fn from_config(config: BrokerConfig, state_dir: Option<&std::path::Path>) -> Arc<Self> {
        let target = BrowserTarget::from_config(&config, state_dir);
        let lazy =
            Arc::new(LazyChromium::with_choice(target, browserd_chromium::ChromiumConfig::default(), config.browser));
        Self::build(lazy.clone(), Some(lazy), Arc::new(SystemClock::new()), config)
    }

    /// A broker over a managed Chromium (launched on first browser use) or a remote endpoint.
    #[must_use]
    pub fn with_target(target: BrowserTarget, config: BrokerConfig) -> Arc<Self> {
        let lazy = Arc::new(LazyChromium::new(target, browserd_chromium::ChromiumConfig::default()));
        Self::build(lazy.clone(), Some(lazy), Arc::new(SystemClock::new()), config)
    }

    fn build(
        provider: Arc<dyn Provider>,
        lazy: Option<Arc<LazyChromium>>,
        clock: Arc<dyn Clock>,
        config: BrokerConfig,
    ) -> Arc<Self> {
        let runtime = Runtime::new(provider.clone(), clock, runtime_config(&config));
        Arc::new(Self {
            runtime,
            provider,
            lazy,
            gate: Gate::new(limit_config(&config)),
            config,
            tables: Mutex::new(Tables::default()),
            shutdown: CancellationToken::new(),
            idle: Mutex::new(None),
            next_conn: AtomicU64::new(0),
            next_write: AtomicU64::new(0),
            started: std::time::Instant::now(),
            journal: crate::journal_gate::JournalGate::default(),
            request_ids: crate::request_ids::RequestIds::default(),
            recovery_journal: crate::dedup::RecoveryJournal::default(),
            owned_journal: crate::dedup::OwnedJournal::default(),
            last_stop: Mutex::new(None),
        })
    }

    /// The token that stops the broker (also fired by `broker.shutdown`, SIGTERM and idle exit).
    #[must_use]
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// The core runtime (for tests and in-process users).
    #[must_use]
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Uses the durable journal at `path` for `tool.call` de-duplication; it is opened by [`Broker::run`] after the
    /// single-instance lock is taken (a second opener would turn the first one's in-flight calls into unknowns).
    pub fn set_journal_path(&self, path: impl Into<std::path::PathBuf>) {
        self.journal.set_path(path.into());
    }

    fn dedup(&self) -> Option<Arc<DedupLog>> {
        self.journal.log()
    }

    /// Settles what a previous broker left in the journal just opened (at start, or when it could be opened again).
    fn settle_journal(self: &Arc<Self>, log: &Arc<DedupLog>) {
        let previous = log.settle_previous(self.lazy.is_some() && self.provider.kind() == ProviderKind::Managed);
        if previous.resolved_gone > 0 {
            tracing::info!(
                count = previous.resolved_gone,
                "recovery records of a previous broker resolved: its managed browser exited with it"
            );
        }
        if previous.left_pending > 0 {
            tracing::warn!(
                count = previous.left_pending,
                "recovery records of a previous broker stay pending: their browser is not this one's; \
                 check that browser by hand"
            );
        }
        let reconciling = self.spawn_remote_reconciliation(log.clone());
        if previous.remote_pending > reconciling {
            tracing::warn!(
                count = previous.remote_pending - reconciling,
                "recovery records of a previous broker on another remote endpoint stay pending; set \
                 remote_cdp to that endpoint to have them retried, or check that browser by hand"
            );
        }
    }

    /// Before an operation that must be recorded (input, a new or claimed tab): the journal must work now.
    fn journal_admit(self: &Arc<Self>) -> Result<(), ErrorData> {
        match self.journal.admit()? {
            crate::journal_gate::Admitted::Reopened(log) => {
                self.settle_journal(&log);
                self.sync_recovery(&log);
            }
            crate::journal_gate::Admitted::Open(log) => self.sync_recovery(&log),
            crate::journal_gate::Admitted::Off => {}
        }
        match self.dedup().and_then(|log| log.degraded().map(|why| (log, why))) {
            Some((log, why)) => Err(crate::dedup::journal_unavailable(log.path(), &why)),
            None => Ok(()),
        }
    }

    fn tables(&self) -> MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes the single-instance lock, binds the socket in `dir`, serves until shut down, then disposes every open
    /// session through the normal disposal path and shuts the managed browser down.
    ///
    /// # Errors
    /// Another broker runs (`AlreadyRunning`), or the lock or socket cannot be set up.
    pub async fn run(self: Arc<Self>, dir: &RuntimeDir) -> Result<RunSummary, BrokerError> {
        let lock = InstanceLock::acquire(dir).map_err(|e| match e {
            AcquireLockError::AlreadyRunning { .. } => BrokerError::AlreadyRunning(e),
            other => BrokerError::Lock(other),
        })?;
        let listener = BrokerListener::bind(dir, &lock).await?;
        if let Some(log) = self.journal.open() {
            self.settle_journal(&log);
        }
        tracing::info!(socket = %listener.socket_path().display(), "browserd broker listening");
        let idle = self.config.idle_exit().map(IdleTracker::start);
        if let Some(idle) = &idle {
            let token = idle.idle();
            let shutdown = self.shutdown.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = token.cancelled() => {
                        tracing::info!("idle: no client and nothing owned; the broker exits");
                        shutdown.cancel();
                    }
                    () = shutdown.cancelled() => {}
                }
            });
        }
        *self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = idle.clone();
        let _endpoint = self.clone().mount_extension_endpoint(dir).await;
        let timers = CancellationToken::new();
        self.spawn_timers(timers.clone());
        let options = ServeOptions { idle, ..ServeOptions::default() };
        let me = self.clone();
        let summary = serve(
            listener,
            move |conn, ctx| {
                let me = me.clone();
                async move { me.connection(conn, ctx).await }
            },
            self.shutdown.clone(),
            options,
        )
        .await;
        timers.cancel();
        let report = self.runtime.dispose_plugin().await;
        if let Some(lazy) = &self.lazy {
            lazy.shutdown().await;
        }
        // Close the journal before the lock: the next broker opens it.
        if let Some(log) = self.journal.take() {
            self.sync_recovery(&log);
        }
        drop(lock);
        tracing::info!(
            sessions = report.sessions.len(),
            pending_recovery = report.pending_recovery,
            "browserd broker stopped"
        );
        Ok(RunSummary {
            serve: summary,
            disposed_sessions: report.sessions.len(),
            pending_recovery: report.pending_recovery,
        })
    }

    /// Binds the extension endpoint at `<runtime dir>/extension.sock` (when configured and the browser is chosen by the
    /// broker) and hands every pairing to the browser selection; a Stop from the extension in use stops the broker's
    /// page work. The endpoint lives as long as the returned value.
    async fn mount_extension_endpoint(
        self: Arc<Self>,
        dir: &RuntimeDir,
    ) -> Option<browserd_native::link::ExtensionEndpoint> {
        let lazy = self.lazy.clone()?;
        if !self.config.extension_endpoint {
            return None;
        }
        let path = dir.path().join(browserd_native::host::SOCKET_NAME);
        let mut options = browserd_native::link::EndpointOptions::default();
        if let Ok(loc) = browserd_native::install::Locations::from_env() {
            // Every id `browserd install` allowed in a native-host manifest may pair (the development id always).
            options.allowed_extension_ids = browserd_native::install::installed_extension_ids(&loc);
        }
        let (endpoint, mut links) = match browserd_native::link::ExtensionEndpoint::bind(&path, options).await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(%e, "the extension endpoint is not available; the user's browser cannot pair");
                return None;
            }
        };
        tracing::info!(socket = %path.display(), "extension endpoint listening");
        let weak = Arc::downgrade(&self);
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            loop {
                let link = tokio::select! {
                    l = links.recv() => match l { Some(l) => l, None => break },
                    () = shutdown.cancelled() => break,
                };
                tracing::info!(extension = %link.info().extension_id, instance = %link.info().instance, "extension paired");
                lazy.extension_paired(link.clone());
                let weak = weak.clone();
                let mut events = link.events();
                // A paired extension is a client: the broker does not idle-exit under the user's open browser.
                let idle_guard = lazy_idle(&weak);
                tokio::spawn(async move {
                    let _idle_guard = idle_guard;
                    while let Ok(ev) = events.recv().await {
                        match ev {
                            browserd_native::LinkEvent::Stopped(report) => {
                                let Some(me) = weak.upgrade() else { break };
                                let in_use = me.lazy.as_ref().and_then(|l| l.extension_in_use());
                                if in_use.is_some_and(|e| e.link().info().instance == link.info().instance) {
                                    tracing::info!(via = %report.via, "Stop from the extension");
                                    if report.via != "broker" {
                                        me.stop_page_work(serde_json::to_value(&report).ok()).await;
                                    }
                                }
                            }
                            browserd_native::LinkEvent::Closed { .. } => break,
                            _ => {}
                        }
                    }
                });
            }
        });
        Some(endpoint)
    }

    /// Drives the runtime's timers (idle debugger detach, background retries of closed sessions' recovery records).
    fn spawn_timers(&self, cancel: CancellationToken) {
        let runtime = self.runtime.clone();
        tokio::spawn(async move { runtime.run_timers(cancel).await });
    }

    // ----- connections -----

    async fn connection(self: Arc<Self>, conn: FramedConnection, ctx: ConnectionContext) {
        let conn_id = self.next_conn.fetch_add(1, Ordering::Relaxed) + 1;
        let (mut reader, mut writer) = conn.into_split();
        let (tx, mut rx) = mpsc::channel::<Value>(64);
        let writer_task = tokio::spawn(async move {
            while let Some(message) = rx.recv().await {
                if let Err(e) = writer.send(&message).await {
                    tracing::debug!(%e, "a client went away while we answered");
                    break;
                }
            }
        });
        let closer = CancellationToken::new();
        {
            let mut tables = self.tables();
            tables.connections.insert(conn_id, tx.clone());
            tables.closers.insert(conn_id, closer.clone());
        }
        let active = Arc::new(AtomicU32::new(0));
        let cancel_active = CancellationToken::new();
        let inflight: Arc<Mutex<HashMap<RequestId, CancellationToken>>> = Arc::new(Mutex::new(HashMap::new()));
        let mut protocol: Option<u32> = None;
        loop {
            let frame = tokio::select! {
                frame = reader.recv() => frame,
                () = ctx.shutdown.cancelled() => break,
                () = closer.cancelled() => break,
            };
            let value = match frame {
                Ok(Some(value)) => value,
                Ok(None) => break,
                Err(e) if !e.is_fatal() => {
                    let response = Response::failure(None, ErrorData::new(ErrorCode::ParseError, e.to_string()));
                    let _ = tx.send(serde_json::to_value(&response).unwrap_or(Value::Null)).await;
                    continue;
                }
                Err(e) => {
                    tracing::debug!(%e, "closing a broken connection");
                    break;
                }
            };
            let request = match Message::from_value(value) {
                Ok(Message::Request(request)) => request,
                Ok(Message::Notification(n)) => {
                    tracing::debug!(method = %n.method, "ignoring a client notification");
                    continue;
                }
                Ok(Message::Response(_)) => continue,
                Err(invalid) => {
                    let _ = tx.send(serde_json::to_value(invalid.into_response()).unwrap_or(Value::Null)).await;
                    continue;
                }
            };
            if request.method == browserd_protocol::methods::HELLO {
                let response = match self.hello(&request) {
                    Ok((version, result)) => {
                        protocol = Some(version);
                        Response::success(request.id.clone(), &result)
                            .unwrap_or_else(|e| internal(request.id.clone(), &e))
                    }
                    Err(e) => Response::failure(Some(request.id.clone()), e),
                };
                let _ = tx.send(serde_json::to_value(&response).unwrap_or(Value::Null)).await;
                continue;
            }
            let Some(version) = protocol else {
                let e = ErrorData::new(
                    ErrorCode::HelloRequired,
                    format!("`{}` was sent before `hello` on this connection", request.method),
                );
                let response = Response::failure(Some(request.id.clone()), e);
                let _ = tx.send(serde_json::to_value(&response).unwrap_or(Value::Null)).await;
                continue;
            };
            if request.method == "client.disconnect" {
                let result = self.client_disconnect(conn_id, &request, &active, &cancel_active);
                let response = match result {
                    Ok(value) => {
                        Response { jsonrpc: Default::default(), id: Some(request.id.clone()), payload: ok(value) }
                    }
                    Err(e) => Response::failure(Some(request.id.clone()), e),
                };
                let _ = tx.send(serde_json::to_value(&response).unwrap_or(Value::Null)).await;
                continue;
            }
            if request.method == BROKER_CANCEL {
                let answer = match MethodCall::from_request(&request) {
                    Ok(MethodCall::BrokerCancel(p)) => {
                        let cancelled = inflight
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .get(&p.request_id)
                            .map(CancellationToken::cancel)
                            .is_some();
                        Response::success(request.id.clone(), &BrokerCancelResult { cancelled })
                            .unwrap_or_else(|e| internal(request.id.clone(), &e))
                    }
                    Ok(_) => internal_mismatch(request.id.clone()),
                    Err(e) => Response::failure(Some(request.id.clone()), e),
                };
                let _ = tx.send(serde_json::to_value(&answer).unwrap_or(Value::Null)).await;
                continue;
            }
            let me = self.clone();
            let tx = tx.clone();
            let active = active.clone();
            let cancel = cancel_active.clone();
            let own_cancel = CancellationToken::new();
            inflight
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(request.id.clone(), own_cancel.clone());
            let inflight = inflight.clone();
            active.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let id = request.id.clone();
                let outcome = tokio::select! {
                    outcome = REQUEST_CONN.scope(conn_id, me.dispatch_audited(conn_id, version, request)) => outcome,
                    () = cancel.cancelled() => Err(ErrorData::new(ErrorCode::Cancelled, "the client cancelled its requests (client.disconnect)")),
                    () = own_cancel.cancelled() => Err(ErrorData::new(
                        ErrorCode::Cancelled,
                        "the client cancelled this request; an action already sent may or may not have taken effect",
                    ).with_next_step("Observe before deciding whether to repeat it.")),
                };
                inflight.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&id);
                active.fetch_sub(1, Ordering::SeqCst);
                let response = match outcome {
                    Ok(value) => Response { jsonrpc: Default::default(), id: Some(id), payload: ok(value) },
                    Err(e) => Response::failure(Some(id), e),
                };
                let _ = tx.send(serde_json::to_value(&response).unwrap_or(Value::Null)).await;
                // `disconnectClient`: the reply is out; now the connection closes.
                let disconnect = me.tables().disconnect_after_reply.remove(&conn_id);
                if disconnect && let Some(closer) = me.tables().closers.get(&conn_id).cloned() {
                    tracing::info!(conn = conn_id, "closing a client's connection as its context reset asked");
                    closer.cancel();
                }
                me.refresh_idle();
            });
        }
        {
            let mut tables = self.tables();
            tables.connections.remove(&conn_id);
            tables.closers.remove(&conn_id);
        }
        drop(tx);
        let _ = writer_task.await;
        self.detach_connection(conn_id);
    }

    fn hello(&self, request: &Request) -> Result<(u32, HelloResult), ErrorData> {
        let params: HelloParams = request.params()?;
        let version = negotiate_named("broker", VersionRange::CURRENT, params.role.as_str(), params.protocol)?;
        let result = HelloResult {
            protocol_version: version,
            role: ComponentRole::Broker,
            components: components(),
            capabilities: BTreeSet::new(),
        };
        Ok((version, result))
    }

    fn client_disconnect(
        self: &Arc<Self>,
        conn_id: u64,
        request: &Request,
        active: &AtomicU32,
        cancel: &CancellationToken,
    ) -> Result<Value, ErrorData> {
        let params: ClientDisconnectParams = request.params()?;
        let mut cancelled = 0;
        if params.cancel_active {
            cancelled = active.load(Ordering::SeqCst);
            cancel.cancel();
        }
        let sessions = self.detach_connection(conn_id);
        let pending = self.runtime.inspect(|engine| {
            engine.recovery().iter().filter(|r| sessions.iter().any(|s| to_proto::session_key(s) == r.session)).count()
        });
        to_value(&ClientDisconnectResult {
            sessions,
            cancelled,
            pending_recovery: u32::try_from(pending).unwrap_or(u32::MAX),
        })
    }

    /// Detaches `conn_id` from its sessions; sessions left with no client start their grace period (CLI sessions
    /// are kept until closed: every CLI command is its own short connection).
    fn detach_connection(self: &Arc<Self>, conn_id: u64) -> Vec<SessionId> {
        let mut detached = Vec::new();
        let mut start_grace = Vec::new();
        {
            let mut tables = self.tables();
            for (id, info) in &mut tables.sessions {
                if info.attached.remove(&conn_id) {
                    detached.push(id.clone());
                    if info.attached.is_empty() && info.host != HostKind::Cli && info.grace.is_none() {
                        let token = CancellationToken::new();
                        info.grace = Some(token.clone());
                        start_grace.push((id.clone(), token));
                    }
                }
            }
        }
        for (id, token) in start_grace {
            let me = self.clone();
            let grace = self.config.disconnect_grace();
            tokio::spawn(async move {
                tokio::select! {
                    () = tokio::time::sleep(grace) => me.dispose_after_grace(&id).await,
                    () = token.cancelled() => {}
                    () = me.shutdown.cancelled() => {}
                }
            });
        }
        detached
    }

    async fn dispose_after_grace(&self, id: &SessionId) {
        let key = {
            let mut tables = self.tables();
            let Some(info) = tables.sessions.get_mut(id) else { return };
            if !info.attached.is_empty() {
                return;
            }
            info.grace = None;
            info.key.clone()
        };
        tracing::info!(session = %id, "no client re-attached within the grace period; disposing the session");
        match self.close_session_inner(id, &key, CoreClose::AgentDisposed).await {
            Ok(result) => tracing::info!(session = %id, ok = result.ok, closed = ?result.closed, "session disposed"),
            Err(e) => tracing::warn!(session = %id, %e, "disposing the session failed"),
        }
        if let Some(log) = self.dedup() {
            self.sync_recovery(&log);
        }
        self.refresh_idle();
    }

    fn notify(&self, session: &SessionId, set: &ToolSet) {
        let Ok(note) = Notification::new(browserd_protocol::methods::TOOLS_CHANGED, set) else { return };
        let Ok(value) = serde_json::to_value(&note) else { return };
        let tables = self.tables();
        let Some(info) = tables.sessions.get(session) else { return };
        for conn in &info.attached {
            if let Some(tx) = tables.connections.get(conn) {
                // Bounded: a client that does not read its notifications misses them rather than growing memory.
                if tx.try_send(value.clone()).is_err() {
                    tracing::warn!(conn, "a client's queue is full; dropped a tools.changed notification");
                }
            }
        }
    }

    fn refresh_idle(&self) {
        let idle = self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let Some(idle) = idle else { return };
        let owns = self.runtime.inspect(|engine| {
            !engine.recovery().is_empty() || engine.tabs().iter().any(|r| r.alive && r.owner().is_some())
        });
        idle.set_owns_resources(owns);
    }

    // ----- dispatch -----

    /// [`Self::dispatch`], then the call's metadata into the journal's audit ring (when a journal is open).
    async fn dispatch_audited(
        self: &Arc<Self>,
        conn_id: u64,
        version: u32,
        request: Request,
    ) -> Result<Value, ErrorData> {
        let Some(log) = self.dedup() else { return self.dispatch(conn_id, version, request).await };
        let result = self.dispatch_journaled(&log, conn_id, version, request).await;
        self.sync_recovery(&log);
        result
    }

    /// Mirrors the runtime's recovery records into the journal.
    fn sync_recovery(&self, log: &DedupLog) {
        use browserd_core::recovery::RecoveryAction as A;
        use browserd_journal::recovery::CleanupOp;
        let browser = self.durable_browser_key(log);
        let mut current: Vec<crate::dedup::RecoveryMirror> = self.runtime.inspect(|engine| {
            engine
                .recovery()
                .iter()
                .map(|r| crate::dedup::RecoveryMirror {
                    session: r.session.0.clone(),
                    tab: r.tab.0,
                    browser: browser.clone(),
                    tab_key: String::new(),
                    op: match r.action {
                        A::Close => CleanupOp::Close,
                        A::Release => CleanupOp::Release,
                        A::Detach => CleanupOp::DetachDebugger,
                    },
                    attempts: r.attempts,
                    outcome_unknown: r.outcome_unknown,
                    code: r.last_kind.code().to_owned(),
                    message: r.last_error.clone(),
                })
                .collect()
        });
        // Outside the engine's lock: the target ids come from the provider's own state.
        for r in &mut current {
            r.tab_key = self.durable_tab_key(TabHandle(r.tab));
        }
        log.sync_recovery(&self.recovery_journal, &current);
        self.sync_owned(log, &browser);
    }

    /// Mirrors the tabs the sessions hold (and a crash would leak) into the journal's owned-tab ledger: agent-created
    /// tabs (closed at disposal) and claimed user tabs (released), not the ones marked deliverable or handoff.
    fn sync_owned(&self, log: &DedupLog, browser: &str) {
        use browserd_core::tabs::{MarkKind, Origin};
        use browserd_journal::recovery::CleanupOp;
        let held: Vec<(TabHandle, String, CleanupOp)> = self.runtime.inspect(|engine| {
            engine
                .tabs()
                .iter()
                .filter(|r| r.alive)
                .filter_map(|r| {
                    let o = r.ownership.as_ref()?;
                    if o.mark.is_some_and(|m| matches!(m.kind, MarkKind::Deliverable | MarkKind::Handoff)) {
                        return None;
                    }
                    let op = match o.origin {
                        Origin::AgentCreated => CleanupOp::Close,
                        Origin::Claimed => CleanupOp::Release,
                    };
                    Some((r.tab, o.session.0.clone(), op))
                })
                .collect()
        });
        let current: Vec<crate::dedup::OwnedMirror> = held
            .into_iter()
            .map(|(tab, session, op)| {
                let row = browserd_journal::owned::OwnedTab {
                    browser: browser.to_owned(),
                    tab: self.durable_tab_key(tab),
                    session,
                    op,
                };
                (tab.0, row)
            })
            .collect();
        log.sync_owned(&self.owned_journal, &current);
    }

    /// The durable key of this broker's browser: `remote:<endpoint>` for a remote endpoint (it outlives the broker),
    /// else one per broker process (a managed browser exits with its broker).
    fn durable_browser_key(&self, log: &DedupLog) -> String {
        match self.remote_endpoint() {
            Some(url) => format!("{}{url}", crate::dedup::REMOTE_KEY_PREFIX),
            None => log.browser_key(),
        }
    }

    /// The remote endpoint in use (or to be used), when the browser is a remote one.
    fn remote_endpoint(&self) -> Option<String> {
        let lazy = self.lazy.as_ref()?;
        if lazy.is_started() && self.provider.kind() != ProviderKind::Remote {
            return None;
        }
        lazy.remote_endpoint().map(str::to_owned)
    }

    /// The durable key of `tab`: the browser's target id when known, else the handle (one process only).
    fn durable_tab_key(&self, tab: TabHandle) -> String {
        match self.lazy.as_ref().and_then(|l| l.target_id(tab)) {
            Some(target) => format!("{TARGET_KEY_PREFIX}{target}"),
            None => format!("t{}", tab.0),
        }
    }

    /// Finishes the cleanup a previous broker left for the remote endpoint: each recovery record's tab is found again
    /// by its target id over a fresh DevTools connection — closed (confirmed) when it is still open, resolved
    /// `alreadyGone` when it is not. A claim or a debugger session lived only in the dead broker and its connection,
    /// so a release or detach is already done. Retried with backoff (500 ms doubling to 60 s) while the endpoint
    /// cannot be reached, until every such record is resolved or the broker stops.
    /// Returns how many records it took on.
    fn spawn_remote_reconciliation(self: &Arc<Self>, log: Arc<DedupLog>) -> usize {
        let Some(url) = self.remote_endpoint() else { return 0 };
        let key = format!("{}{url}", crate::dedup::REMOTE_KEY_PREFIX);
        let ids: BTreeSet<_> = log.pending_for_browser(&key).into_iter().map(|r| r.id).collect();
        if ids.is_empty() {
            return 0;
        }
        let count = ids.len();
        tracing::info!(count = ids.len(), endpoint = %url, "reconciling a previous broker's recovery records");
        let shutdown = self.shutdown.clone();
        let task = async move {
            let mut delay = Duration::from_millis(500);
            loop {
                let left: Vec<_> = log.pending_for_browser(&key).into_iter().filter(|r| ids.contains(&r.id)).collect();
                if left.is_empty() {
                    tracing::info!("the previous broker's recovery records are resolved");
                    return;
                }
                if let Err(e) = reconcile_remote(&url, &log, &left).await {
                    tracing::warn!(%e, endpoint = %url, retry_in_ms = delay.as_millis(), "recovery retry failed");
                    for r in &left {
                        log.attempt_failed(r.id, ErrorCode::ConnectionLost.as_str(), &e);
                    }
                }
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = shutdown.cancelled() => return,
                }
                delay = (delay * 2).min(Duration::from_secs(60));
            }
        };
        tokio::spawn(task);
        count
    }

    async fn dispatch_journaled(
        self: &Arc<Self>,
        log: &DedupLog,
        conn_id: u64,
        version: u32,
        request: Request,
    ) -> Result<Value, ErrorData> {
        let started = std::time::Instant::now();
        let params = request.params.clone().unwrap_or(Value::Null);
        let method = request.method.clone();
        let result = self.dispatch(conn_id, version, request).await;
        let (name, arguments, call_id) = if method == browserd_protocol::methods::TOOL_CALL {
            (
                params.get("name").and_then(Value::as_str).unwrap_or_default().to_owned(),
                params.get("arguments"),
                params.get("callId").and_then(Value::as_str),
            )
        } else {
            (method.clone(), None, None)
        };
        let session =
            params.get("session").and_then(Value::as_str).map(str::to_owned).or_else(|| {
                result.as_ref().ok().and_then(|v| v.get("session")).and_then(Value::as_str).map(str::to_owned)
            });
        let note = crate::dedup::AuditNote {
            name: &name,
            session: session.as_deref(),
            arguments,
            call_id,
            elapsed: started.elapsed(),
        };
        log.audit(&note, &result);
        result
    }

    async fn dispatch(self: &Arc<Self>, conn_id: u64, version: u32, request: Request) -> Result<Value, ErrorData> {
        match MethodCall::from_request(&request)? {
            MethodCall::Hello(_) | MethodCall::ClientDisconnect(_) | MethodCall::BrokerCancel(_) => {
                Err(ErrorData::new(ErrorCode::InternalError, "handled by the connection loop"))
            }
            MethodCall::BrokerShutdown(_) => {
                tracing::info!("shutdown requested by a client");
                let shutdown = self.shutdown.clone();
                // Answer first; the accept loop then stops and running connections get their grace period.
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    shutdown.cancel();
                });
                to_value(&BrokerShutdownResult { ok: true })
            }
            MethodCall::BrokerStopGate(_) => to_value(&self.stop_gate().await),
            MethodCall::BrokerSelectTab(p) => to_value(&self.select_tab(&p).await?),
            MethodCall::SessionOpen(p) => to_value(&self.session_open(conn_id, p).await?),
            MethodCall::SessionClose(p) => to_value(&self.session_close(p).await?),
            MethodCall::TurnBegin(p) => to_value(&self.turn_begin(p).await?),
            MethodCall::TurnEnd(p) => to_value(&self.turn_end(p).await?),
            MethodCall::ToolsActivate(p) => to_value(&self.tools_activate(p).await?),
            MethodCall::ToolsList(p) => to_value(&self.tools_list(&p)?),
            MethodCall::ContextReset(p) => to_value(&self.context_reset(p).await?),
            MethodCall::Status(p) => to_value(&self.status(version, &p).await?),
            MethodCall::ToolCall(p) => self.tool_call(p).await,
            MethodCall::ToolsChanged(_) => Err(ErrorData::new(
                ErrorCode::InvalidRequest,
                "tools.changed is a notification the broker sends; clients do not call it",
            )),
        }
    }

    fn key_of(&self, id: &SessionId) -> Result<SessionKey, ErrorData> {
        let tables = self.tables();
        match tables.sessions.get(id) {
            Some(info) => Ok(info.key.clone()),
            None => Err(ErrorData::new(ErrorCode::UnknownSession, format!("no open session `{id}` in this broker"))),
        }
    }

    async fn session_open(&self, conn_id: u64, p: SessionOpenParams) -> Result<SessionOpenResult, ErrorData> {
        let host_key = (p.host, p.host_session_id.clone());
        let existing = {
            let mut tables = self.tables();
            let found = tables.by_host.get(&host_key).cloned();
            if let Some(id) = &found
                && let Some(info) = tables.sessions.get_mut(id)
            {
                info.attached.insert(conn_id);
                if let Some(grace) = info.grace.take() {
                    grace.cancel();
                }
                if p.label.is_some() {
                    info.label.clone_from(&p.label);
                }
            }
            found
        };
        let (id, reattached) = match existing {
            Some(id) => (id, true),
            None => {
                let id = {
                    let mut tables = self.tables();
                    tables.next_session += 1;
                    SessionId::new(format!("s{}", tables.next_session))
                };
                let key = to_proto::session_key(&id);
                self.runtime.open_session(&key).await.map_err(|e| err(&e))?;
                let mut tables = self.tables();
                tables.by_host.insert(host_key, id.clone());
                tables.sessions.insert(
                    id.clone(),
                    SessionInfo {
                        key,
                        host: p.host,
                        host_session_id: p.host_session_id.clone(),
                        label: p.label.clone(),
                        attached: BTreeSet::from([conn_id]),
                        grace: None,
                        current_tab: None,
                        host_turn: None,
                        ended_turns: std::collections::VecDeque::new(),
                        advanced: false,
                    },
                );
                (id, false)
            }
        };
        let key = to_proto::session_key(&id);
        let status = self.runtime.status(&key).await.map_err(|e| err(&e))?;
        Ok(SessionOpenResult {
            session: id,
            reattached,
            tools: if status.tools_active { ToolActivation::ActiveSticky } else { ToolActivation::Inactive },
            turn: status.turn,
        })
    }

    fn browser_started(&self) -> bool {
        self.lazy.as_ref().is_none_or(|l| l.is_started())
    }

    async fn close_session_inner(
        &self,
        id: &SessionId,
        key: &SessionKey,
        reason: CoreClose,
    ) -> Result<CleanupResult, ErrorData> {
        let close = self.runtime.close_session(key, reason);
        let report = if self.browser_started() { close.await } else { NO_LAUNCH.scope(true, close).await };
        let report = report.map_err(|e| err(&e))?;
        let set = ToolSet {
            session: id.clone(),
            tools: ToolActivation::Inactive,
            advanced: false,
            advanced_refused: None,
            advanced_next_step: None,
            names: Vec::new(),
        };
        self.notify(id, &set);
        {
            let mut tables = self.tables();
            if let Some(info) = tables.sessions.remove(id) {
                tables.by_host.remove(&(info.host, info.host_session_id));
            }
        }
        for tab in report.closed.iter().chain(&report.released).chain(&report.kept) {
            self.gate.forget_tab(*tab);
        }
        Ok(to_proto::cleanup_result(&report))
    }

    async fn session_close(&self, p: SessionCloseParams) -> Result<CleanupResult, ErrorData> {
        let key = self.key_of(&p.session)?;
        self.close_session_inner(&p.session, &key, core_close_reason(p.reason)).await
    }

    async fn turn_begin(&self, p: TurnBeginParams) -> Result<TurnBeginResult, ErrorData> {
        let key = self.key_of(&p.session)?;
        let turn = self.runtime.begin_turn(&key).await.map_err(|e| err(&e))?;
        if let Some(info) = self.tables().sessions.get_mut(&p.session) {
            info.host_turn.clone_from(&p.host_turn_id);
        }
        Ok(TurnBeginResult { turn })
    }

    /// `turn.end`: every host turn end closes the current turn, whether or not a tab was touched in it; the next call
    /// opens a new one. A repeated delivery of the same host turn end (the same `hostTurnId`) answers what the first
    /// did and ends nothing.
    async fn turn_end(&self, p: TurnEndParams) -> Result<TurnEndResult, ErrorData> {
        let key = self.key_of(&p.session)?;
        if let Some(host_turn) = &p.host_turn_id {
            let tables = self.tables();
            if let Some((_, result)) = tables
                .sessions
                .get(&p.session)
                .and_then(|i| i.ended_turns.iter().find(|(ended, _)| ended == host_turn))
            {
                // A repeated end of the same host turn is a no-op: the first answer stands.
                return Ok(result.clone());
            }
        }
        let started = self.browser_started();
        let end = async {
            // A turn with no browser call is still a turn: open it (a no-op when a call already did) and end it.
            self.runtime.begin_turn(&key).await?;
            self.runtime.end_turn(&key).await
        };
        let report = if started { end.await } else { NO_LAUNCH.scope(true, end).await };
        let report = report.map_err(|e| err(&e))?;
        let turn = self.runtime.status(&key).await.map(|s| s.turn).unwrap_or_default();
        let mut result = to_proto::turn_end_result(&report, turn);
        if !started {
            // No browser yet: nothing can be owned, so there is nothing to clean up and nothing is missing.
            result.auto_turn_cleanup = browserd_protocol::lifecycle::AutoTurnCleanup::Pending;
            result.missing_capabilities.clear();
            result.ok = result.failed.is_empty();
        }
        for tab in &report.closed {
            self.gate.forget_tab(*tab);
        }
        let mut tables = self.tables();
        if let Some(info) = tables.sessions.get_mut(&p.session) {
            if let Some(host_turn) = p.host_turn_id.clone() {
                if info.ended_turns.len() == ENDED_TURNS_KEPT {
                    info.ended_turns.pop_front();
                }
                info.ended_turns.push_back((host_turn, result.clone()));
            }
            if info.current_tab.is_some_and(|t| report.closed.contains(&t) || report.released.contains(&t)) {
                info.current_tab = None;
            }
        }
        Ok(result)
    }

    /// The session's tool set. Asking for the advanced tier enables it for the session when the policy allows it
    /// (`[advanced] enabled`); hidden tools take the tier with them.
    async fn tool_set(&self, id: &SessionId, key: &SessionKey, advanced_asked: bool) -> Result<ToolSet, ErrorData> {
        let status = self.runtime.status(key).await.map_err(|e| err(&e))?;
        let policy = &self.config.advanced;
        let refused = advanced_asked && status.tools_active && !policy.enabled;
        let advanced = {
            let mut tables = self.tables();
            let info = tables.sessions.get_mut(id);
            match info {
                Some(info) => {
                    info.advanced = status.tools_active && policy.enabled && (info.advanced || advanced_asked);
                    info.advanced
                }
                None => false,
            }
        };
        let mut names = if status.tools_active { core_tool_names() } else { Vec::new() };
        if advanced {
            names.extend(crate::advanced::tools(policy).iter().map(|t| t.name().to_owned()));
        }
        Ok(ToolSet {
            session: id.clone(),
            tools: if status.tools_active { ToolActivation::ActiveSticky } else { ToolActivation::Inactive },
            advanced,
            advanced_refused: refused.then_some(UnsupportedReason::PolicyBlocked),
            advanced_next_step: refused.then(|| crate::advanced::ENABLE_NEXT_STEP.to_owned()),
            names,
        })
    }

    /// Whether the session has the advanced tier on.
    fn advanced_on(&self, id: &SessionId) -> bool {
        self.config.advanced.enabled && self.tables().sessions.get(id).is_some_and(|i| i.advanced)
    }

    async fn tools_activate(&self, p: ToolsActivateParams) -> Result<ToolSet, ErrorData> {
        let key = self.key_of(&p.session)?;
        let was_advanced = self.advanced_on(&p.session);
        let changed = self.runtime.activate_tools(&key).await.map_err(|e| err(&e))?;
        let set = self.tool_set(&p.session, &key, p.advanced).await?;
        if changed || set.advanced != was_advanced {
            self.notify(&p.session, &set);
        }
        Ok(set)
    }

    fn tools_list(&self, p: &ToolsListParams) -> Result<ToolsListResult, ErrorData> {
        let key = self.key_of(&p.session)?;
        let active = self
            .runtime
            .inspect(|engine| engine.session(&key).is_some_and(|s| s.closed().is_none() && s.activation().is_active()));
        let advanced = active && self.advanced_on(&p.session);
        let tools = if active {
            let mut tools: Vec<_> = Tool::ALL.iter().filter(|t| t.tier() == ToolTier::Core).map(|t| t.spec()).collect();
            if advanced {
                tools.extend(crate::advanced::tools(&self.config.advanced).iter().map(|t| t.spec()));
            }
            tools
        } else {
            Vec::new()
        };
        Ok(ToolsListResult { tools })
    }

    async fn context_reset(&self, p: ContextResetParams) -> Result<ContextResetResult, ErrorData> {
        let key = self.key_of(&p.session)?;
        self.context_reset_inner(&p.session, &key, p.disconnect_client).await
    }

    async fn context_reset_inner(
        &self,
        id: &SessionId,
        key: &SessionKey,
        disconnect_client: bool,
    ) -> Result<ContextResetResult, ErrorData> {
        let report = self.runtime.context_reset(key).await.map_err(|e| err(&e))?;
        if !report.tools_active {
            let set = self.tool_set(id, key, false).await?;
            self.notify(id, &set);
            if let Some(info) = self.tables().sessions.get_mut(id) {
                info.current_tab = None;
            }
        }
        // `disconnectClient`: this client's connection to the broker closes right after this reply (its other
        // sessions wait out their grace period, as on any disconnect); other clients and the shared bridge stay.
        let disconnected = disconnect_client
            && report.ok
            && REQUEST_CONN.try_with(|conn| self.tables().disconnect_after_reply.insert(*conn)).is_ok();
        Ok(to_proto::context_reset_result(&report, disconnected))
    }

    async fn stop_gate(&self) -> StopGateResult {
        let mut evidence = json!({"via": "broker", "reason": "browserd stop"});
        evidence["lastEvidence"] = match self.lazy.as_ref().and_then(|l| l.extension_in_use()) {
            Some(ext) => serde_json::to_value(ext.last_evidence()).unwrap_or(Value::Null),
            None => self.page_evidence(),
        };
        let result = self.stop_page_work(Some(evidence)).await;
        // The extension closes its own gate too (no input passes it after this), detaches and keeps the pages.
        if let Some(ext) = self.lazy.as_ref().and_then(|l| l.extension_in_use()) {
            match tokio::time::timeout(crate::extension::STOP_TIMEOUT, ext.link().stop("browserd stop")).await {
                Ok(Ok(report)) => {
                    tracing::info!(dropped = report.dropped_inputs, "the extension stopped");
                    *self.last_stop.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
                        serde_json::to_value(&report).ok();
                }
                Ok(Err(e)) => tracing::warn!(%e, "the extension did not confirm Stop"),
                Err(_) => tracing::warn!("the extension did not confirm Stop in time"),
            }
        }
        result
    }

    /// Where the work stood on each tab that was being controlled when Stop came: the write running there (its
    /// trace id and tool) and the tab's latest observation (URL, title, revision; no page text).
    fn page_evidence(&self) -> Value {
        let tabs: Vec<TabHandle> = self.runtime.inspect(|engine| {
            engine
                .tabs()
                .iter()
                .filter(|r| engine.write_leases().get(r.tab).is_some() || self.gate.is_running(r.tab))
                .map(|r| r.tab)
                .collect()
        });
        let entries: Vec<Value> = tabs
            .into_iter()
            .map(|tab| {
                let mut entry = json!({"tab": to_proto::tab_id(tab)});
                if let Some(write) = self.gate.running_write(tab) {
                    entry["runningWrite"] = json!({"trace": write.trace, "tool": write.tool});
                }
                if let Some(obs) = self.gate.last_observation(tab) {
                    let mut last = serde_json::Map::new();
                    for field in ["url", "title", "revision", "cursor"] {
                        if let Some(v) = obs.get(field) {
                            last.insert(field.to_owned(), v.clone());
                        }
                    }
                    entry["lastObservation"] = Value::Object(last);
                }
                entry
            })
            .collect();
        json!({"tabs": entries})
    }

    /// Cancels queued and running page work (they report `USER_STOPPED`) and releases every write lease: resuming
    /// needs a new lease.
    async fn stop_page_work(&self, evidence: Option<Value>) -> StopGateResult {
        *self.last_stop.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = evidence;
        let (queued, running) = self.gate.stop_all();
        let leases: Vec<(SessionKey, TabHandle)> = self.runtime.inspect(|engine| {
            engine
                .tabs()
                .iter()
                .filter_map(|r| engine.write_leases().get(r.tab))
                .map(|l| (l.holder.clone(), l.tab))
                .collect()
        });
        let mut released = 0;
        for (session, tab) in leases {
            if matches!(self.runtime.release_write_lease(&session, tab).await, Ok(true)) {
                released += 1;
            }
        }
        tracing::info!(queued, running, released, "stop gate: browser control stopped");
        StopGateResult {
            code: ErrorCode::UserStopped,
            queued_cancelled: queued,
            running_cancelled: running,
            leases_released: released,
        }
    }

    async fn select_tab(&self, p: &SelectTabParams) -> Result<browserd_protocol::tools::ListedTab, ErrorData> {
        let key = self.key_of(&p.session)?;
        let tab = to_proto::tab_handle(p.tab);
        let status = self.runtime.status(&key).await.map_err(|e| err(&e))?;
        let view = status
            .tabs
            .iter()
            .find(|v| v.tab == tab)
            .ok_or_else(|| ErrorData::new(ErrorCode::TabNotFound, format!("tab {} is not open", p.tab)))?;
        let listed = to_proto::listed_tab(view);
        match listed.provenance {
            browserd_protocol::lifecycle::Provenance::OtherSession => {
                let holder = self.runtime.inspect(|e| e.tabs().get(tab).and_then(|r| r.owner().cloned()));
                let mut e =
                    ErrorData::new(ErrorCode::OtherSessionTab, format!("tab {} belongs to another session", p.tab));
                if let Some(holder) = holder {
                    e = e.with_holder_session(to_proto::session_id(&holder));
                }
                return Err(e);
            }
            browserd_protocol::lifecycle::Provenance::User => {
                return Err(ErrorData::new(
                    ErrorCode::NotOwner,
                    format!("tab {} is the user's; claim it first", p.tab),
                ));
            }
            _ => {}
        }
        if let Some(info) = self.tables().sessions.get_mut(&p.session) {
            info.current_tab = Some(tab);
        }
        Ok(listed)
    }

    // ----- status -----

    fn limits(&self, session: Option<&SessionKey>) -> Limits {
        let tabs_used = self.runtime.inspect(|engine| {
            let mut counts: BTreeMap<&SessionKey, u32> = BTreeMap::new();
            for r in engine.tabs().iter().filter(|r| r.alive) {
                if let Some(owner) = r.owner() {
                    *counts.entry(owner).or_default() += 1;
                }
            }
            match session {
                Some(key) => counts.get(key).copied().unwrap_or(0),
                None => counts.values().copied().max().unwrap_or(0),
            }
        });
        Limits {
            tabs_per_task: Usage { used: tabs_used, max: self.config.max_tabs_per_task },
            running_actions_per_tab: self.gate.running_per_tab(),
            queued_requests: self.gate.queued(),
            concurrent_page_ops: self.gate.concurrent(),
        }
    }

    fn browser_status(&self) -> BrowserStatus {
        let caps = self.provider.capabilities();
        let bridge = self.runtime.inspect(|engine| engine.bridge().state());
        let missing: Vec<Capability> = caps.missing_for_turn_cleanup();
        let kind = match self.provider.kind() {
            ProviderKind::Managed => BrowserKind::Managed,
            ProviderKind::Remote => BrowserKind::Remote,
            ProviderKind::Extension => BrowserKind::Extension,
            ProviderKind::Fake => BrowserKind::Fake,
        };
        let started = self.browser_started();
        let (auto_turn_cleanup, missing_capabilities) = if !started {
            // No browser yet: its capabilities are checked when it starts; nothing is missing now.
            (browserd_protocol::lifecycle::AutoTurnCleanup::Pending, Vec::new())
        } else if missing.is_empty() {
            (browserd_protocol::lifecycle::AutoTurnCleanup::Enabled, Vec::new())
        } else {
            (browserd_protocol::lifecycle::AutoTurnCleanup::Refused, to_proto::capability_names(&missing))
        };
        BrowserStatus {
            browser: "b1".to_owned(),
            kind,
            product: self.lazy.as_ref().map(|l| l.selection()),
            browser_start: if started { BrowserStart::Started } else { BrowserStart::NotStarted },
            bridge: to_proto::bridge(bridge),
            capabilities: if started { to_proto::capabilities(&caps) } else { Vec::new() },
            auto_turn_cleanup,
            missing_capabilities,
        }
    }

    async fn status(&self, version: u32, p: &StatusParams) -> Result<StatusResult, ErrorData> {
        let only = match &p.session {
            Some(id) => Some(self.key_of(id)?),
            None => None,
        };
        if let Some(key) = &only {
            // Applies pending browser events first.
            self.runtime.status(key).await.map_err(|e| err(&e))?;
        }
        let sessions_info: Vec<(SessionId, HostKind, String, Option<String>)> = {
            let tables = self.tables();
            tables
                .sessions
                .iter()
                .filter(|(_, info)| only.as_ref().is_none_or(|k| k == &info.key))
                .map(|(id, info)| (id.clone(), info.host, info.host_session_id.clone(), info.label.clone()))
                .collect()
        };
        // Read before the engine is locked below (never both locks at once).
        let advanced_ids: BTreeSet<SessionId> =
            sessions_info.iter().filter(|(id, ..)| self.advanced_on(id)).map(|(id, ..)| id.clone()).collect();
        let gate = &self.gate;
        let (sessions, tabs, write_leases, debugger_leases, recovery) = self.runtime.inspect(|engine| {
            let sessions: Vec<SessionStatus> = sessions_info
                .iter()
                .filter_map(|(id, host, host_session_id, label)| {
                    let key = to_proto::session_key(id);
                    let s = engine.session(&key)?;
                    Some(SessionStatus {
                        session: id.clone(),
                        host: *host,
                        host_session_id: host_session_id.clone(),
                        label: label.clone(),
                        tools: if s.activation().is_active() {
                            ToolActivation::ActiveSticky
                        } else {
                            ToolActivation::Inactive
                        },
                        advanced: s.activation().is_active() && advanced_ids.contains(id),
                        turn: s.turn(),
                        busy: engine.tabs().iter().any(|r| r.owned_by(&key) && gate.is_running(r.tab)),
                    })
                })
                .collect();
            let visible = |owner: Option<&SessionKey>| only.as_ref().is_none_or(|k| owner == Some(k));
            let tabs: Vec<TabStatus> = engine
                .tabs()
                .iter()
                .filter(|r| r.alive && visible(r.owner()))
                .map(|r| {
                    let viewer = r.owner().cloned().unwrap_or_else(|| SessionKey(String::new()));
                    TabStatus {
                        tab: to_proto::tab_id(r.tab),
                        session: r.owner().map(to_proto::session_id),
                        provenance: to_proto::provenance(&r.provenance(&viewer)),
                        state: to_proto::resource_state(r.state),
                        mark: r.ownership.as_ref().and_then(|o| o.mark).map(|m| to_proto::mark_kind(m.kind)),
                        group: r.group.map(to_proto::group_id),
                        url: Some(r.url.clone()),
                        title: Some(r.title.clone()),
                    }
                })
                .collect();
            let write_leases: Vec<WriteLeaseStatus> = engine
                .tabs()
                .iter()
                .filter_map(|r| engine.write_leases().get(r.tab))
                .filter(|l| visible(Some(&l.holder)))
                .map(|l| WriteLeaseStatus {
                    tab: to_proto::tab_id(l.tab),
                    holder: to_proto::session_id(&l.holder),
                    fencing_token: FencingToken(l.token.0),
                    expires_in_ms: None,
                })
                .collect();
            let debugger_leases: Vec<DebuggerLeaseStatus> = engine
                .debugger()
                .iter()
                .filter(|(_, l)| visible(Some(&l.session)))
                .map(|(tab, l)| DebuggerLeaseStatus {
                    tab: to_proto::tab_id(tab),
                    holder: to_proto::session_id(&l.session),
                    state: match l.state {
                        browserd_core::debugger::DebuggerState::DetachFailed => DebuggerLeaseState::DetachFailed,
                        _ if l.refs > 0 => DebuggerLeaseState::Attached,
                        browserd_core::debugger::DebuggerState::Attached => DebuggerLeaseState::Idle,
                        _ => DebuggerLeaseState::Attached,
                    },
                    active_refs: l.refs,
                })
                .collect();
            let recovery = engine
                .recovery()
                .iter()
                .filter(|r| visible(Some(&r.session)))
                .map(to_proto::recovery_record)
                .collect::<Vec<_>>();
            (sessions, tabs, write_leases, debugger_leases, recovery)
        });
        Ok(StatusResult {
            protocol_version: version,
            components: components(),
            sessions,
            tabs,
            browsers: vec![self.browser_status()],
            write_leases,
            debugger_leases,
            recovery,
            limits: self.limits(only.as_ref()),
            journal: self.journal.status(),
        })
    }

    // ----- tools -----

    fn current_tab(&self, id: &SessionId) -> Result<TabHandle, ErrorData> {
        self.tables().sessions.get(id).and_then(|i| i.current_tab).ok_or_else(|| {
            ErrorData::new(ErrorCode::TabNotFound, "this session has no current tab")
                .with_next_step("Open a tab with browser_open or claim one with browser_claim first.")
        })
    }

    /// The tab a page tool names, which becomes the current tab; else the current tab.
    fn tab_for(&self, id: &SessionId, named: Option<browserd_protocol::TabId>) -> Result<TabHandle, ErrorData> {
        match named {
            Some(tab) => {
                let tab = to_proto::tab_handle(tab);
                self.set_current_tab(id, Some(tab));
                Ok(tab)
            }
            None => self.current_tab(id),
        }
    }

    fn set_current_tab(&self, id: &SessionId, tab: Option<TabHandle>) {
        if let Some(info) = self.tables().sessions.get_mut(id) {
            info.current_tab = tab;
        }
    }

    async fn tool_call(self: &Arc<Self>, p: ToolCallParams) -> Result<Value, ErrorData> {
        let mut call = p.decode()?;
        let key = self.key_of(&p.session)?;
        // Turns come from the host: any call belongs to the turn the host's next turn end closes.
        self.runtime.open_turn(&key).map_err(|e| err(&e))?;
        // What must be recorded (input, a new or claimed tab) is refused while the journal cannot be written.
        let recorded = matches!(
            call,
            ToolCall::Open(_)
                | ToolCall::Claim(_)
                | ToolCall::Act(_)
                | ToolCall::Batch(_)
                | ToolCall::Evaluate(_)
                | ToolCall::RawProtocol(_)
        );
        if recorded {
            self.journal_admit()?;
        }
        let dedup = self.dedup();
        let writes = !matches!(
            call,
            ToolCall::Status(_)
                | ToolCall::List(_)
                | ToolCall::Observe(_)
                | ToolCall::Console(_)
                | ToolCall::Network(_)
        );
        let (host, host_session_id) = {
            let tables = self.tables();
            let info = tables.sessions.get(&p.session);
            (
                info.map(|i| format!("{:?}", i.host)).unwrap_or_default(),
                info.map(|i| i.host_session_id.clone()).unwrap_or_default(),
            )
        };
        let mut record = CallRecord::none();
        if let (Some(call_id), Some(log), true) = (&p.call_id, &dedup, writes) {
            let hash = crate::dedup::payload_hash(&host, &host_session_id, &p.name, &p.arguments);
            // Call ids are chosen by each host; they only identify a call within one host session.
            let scoped = format!("{host}/{host_session_id}/{call_id}");
            match log.begin(&scoped, hash) {
                Admit::New(t) => record = CallRecord::new(log.clone(), t),
                Admit::Answer(answer) => return answer,
            }
        }
        // `browser_act`'s requestId: the broker answers repeats per host session; the provider never sees the id.
        let mut request = None;
        if let ToolCall::Act(params) = &mut call
            && let Some(request_id) = params.request_id.take()
        {
            let hash = crate::request_ids::payload_digest(params);
            let trace = p.call_id.clone().unwrap_or_else(|| format!("r{request_id}"));
            match self.request_ids.begin((host.clone(), host_session_id.clone(), request_id), hash, &trace) {
                crate::request_ids::Begun::Answer(answer) => {
                    let answer = to_value(&*answer);
                    record.finish(&answer);
                    return answer;
                }
                crate::request_ids::Begun::Run(running) => request = Some(running),
            }
        }
        let mut result = self.run_tool(&p, call, key, record.slot()).await;
        if let Err(e) = &mut result
            && e.code == ErrorCode::UserStopped
            && let Some(stop) = self.last_stop.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
        {
            match e.details.as_deref_mut() {
                Some(Value::Object(map)) => {
                    map.entry("stop").or_insert(stop);
                }
                Some(_) => {}
                None => *e = e.clone().with_details(json!({"stop": stop})),
            }
        }
        if let Some(running) = request {
            match result.as_ref().ok().and_then(|v| serde_json::from_value::<ActionResult>(v.clone()).ok()) {
                Some(action) => running.finish(&action),
                // Ended after input may have gone out: the id keeps an `unknown` answer (the guard's drop).
                None if result.as_ref().is_err_and(|e| {
                    matches!(
                        e.code,
                        ErrorCode::UserStopped
                            | ErrorCode::OutcomeUnknown
                            | ErrorCode::ConnectionLost
                            | ErrorCode::DeadlineExceeded
                            | ErrorCode::Cancelled
                    )
                }) =>
                {
                    drop(running);
                }
                // Refused before anything was sent: the id is free again.
                None => running.forget(),
            }
        }
        record.finish(&result);
        result
    }

    /// `browser_open` after its tab exists: loads the page, and checks that the owned-tab ledger recorded the tab (a
    /// tab a broker crash could leak unrecorded is not handed out).
    async fn load_opened(
        &self,
        id: &SessionId,
        key: &SessionKey,
        view: &browserd_core::lifecycle::TabView,
        params: &browserd_protocol::tools::OpenParams,
    ) -> Result<Value, ErrorData> {
        let _ = id;
        let navigate = ActParams::new(ActionKind::Navigate).value(params.url.clone());
        let loaded = self.runtime.act(&key, view.tab, &navigate, None).await.map_err(|e| {
            err(&e).with_details(json!({"tab": to_proto::tab_id(view.tab), "opened": true}))
        })?;
        if loaded.outcome == Outcome::Failed {
            let code = match loaded.code.as_deref().and_then(ErrorCode::from_name) {
                None | Some(ErrorCode::ActionFailed) => ErrorCode::NavigationFailed,
                Some(code) => code,
            };
            let message = loaded.message.clone().unwrap_or_else(|| "the page did not load".to_owned());
            return Err(ErrorData::new(
                code,
                format!("tab {} was opened but loading {} failed: {message}", view.tab.0, params.url),
            )
            .with_details(json!({"tab": to_proto::tab_id(view.tab), "opened": true})));
        }
        let mut result = to_proto::tab_result(&view);
        result.url = loaded.effects.navigated.clone().unwrap_or_else(|| params.url.clone());
        result.title = String::new();
        if let Ok(now) = self.runtime.status(&key).await
            && let Some(seen) = now.tabs.iter().find(|v| v.tab == view.tab && v.url != "about:blank")
        {
            result.url.clone_from(&seen.url);
            result.title.clone_from(&seen.title);
        }
        if params.observe {
            let obs = self
            .runtime
                .observe(&key, view.tab, &browserd_protocol::ObserveParams::default())
                .await
                .map_err(|e| err(&e))?;
            result.url.clone_from(&obs.url);
            result.title.clone_from(&obs.title);
            result.observation = Some(Box::new(obs));
        }
        if let Some(log) = self.dedup() {
            self.sync_recovery(&log);
            if !DedupLog::owned_recorded(&self.owned_journal, view.tab.0) {
                let why = log.degraded().unwrap_or_else(|| "the owned-tab ledger did not record the tab".to_owned());
                return Err(crate::dedup::journal_unavailable(log.path(), &why));
            }
        }
        to_value(&result)
    }

    /// Closes the tab a failed `browser_open` created and says so in the error (`details.closed`); if closing fails
    /// too, the recovery record it leaves retries it, and the error says that instead.
    async fn discard_opened(&self, id: &SessionId, key: &SessionKey, tab: TabHandle, error: ErrorData) -> ErrorData {
        let closed = match self.runtime.close_tabs(key, &[tab], &[]).await {
            Ok(report) => report.closed.contains(&tab) || report.failures.iter().all(|f| f.tab != tab),
            Err(e) => {
                tracing::warn!(%tab, code = %err(&e).code, "closing the tab of a failed open failed");
                false
            }
        };
        self.gate.forget_tab(tab);
        if self.current_tab(id).ok() == Some(tab) {
            self.set_current_tab(id, None);
        }
        let mut details = match error.details.as_deref() {
            Some(Value::Object(map)) => map.clone(),
            _ => serde_json::Map::new(),
        };
        details.insert("tab".to_owned(), json!(to_proto::tab_id(tab)));
        details.insert("opened".to_owned(), json!(true));
        details.insert("closed".to_owned(), json!(closed));
        let mut error = error;
        if closed {
            error.message.push_str("; the tab was closed again");
        } else {
            error.message.push_str(&format!(
                "; closing tab {} failed too: a recovery record retries it (see browser_status)",
                tab.0
            ));
        }
        error.details = Some(Box::new(Value::Object(details)));
        error
    }

    /// Waits for the page-operation slot, then marks a de-duplicated call dispatched (nothing is sent before).
    async fn admit(&self, tab: Option<TabHandle>, ticket: &mut Option<Ticket>) -> Result<Admission, ErrorData> {
        let admission = self.gate.admit(tab).await?;
        self.mark_dispatched(ticket)?;
        Ok(admission)
    }

    /// [`Self::admit`] for a write on `tab`: reads of the tab see it running (named by the caller's `callId`, else a
    /// broker trace id) until it ends.
    async fn admit_write(
        &self,
        tab: TabHandle,
        tool: &str,
        call_id: Option<&str>,
        ticket: &mut Option<Ticket>,
    ) -> Result<Admission, ErrorData> {
        let trace = match call_id {
            Some(id) => id.to_owned(),
            None => format!("w{}", self.next_write.fetch_add(1, Ordering::Relaxed) + 1),
        };
        let admission = self.gate.admit_write(tab, RunningWrite { trace, tool: tool.to_owned() }).await?;
        self.mark_dispatched(ticket)?;
        Ok(admission)
    }

    /// `browser_observe`. With no write running on the tab it is a plain read. While a write runs, a `consistent`
    /// read (the default) waits for it — up to [`CONSISTENT_READ_WAIT`], then the page as last seen if there is
    /// one — and an `allowStale` read answers at once with the page as last seen; either way the answer's
    /// `consistency` names the write and says which it is. With no earlier observation a read always waits.
    async fn observe(
        &self,
        id: &SessionId,
        key: &SessionKey,
        params: &browserd_protocol::ObserveParams,
        ticket: &mut Option<Ticket>,
    ) -> Result<Value, ErrorData> {
        use browserd_protocol::{ConsistencyState, ReadConsistency, ReadMode};
        let tab = self.tab_for(id, params.tab)?;
        let write = self.gate.running_write(tab);
        let mark = |mut value: Value, state: ConsistencyState, w: &RunningWrite| {
            let c = ReadConsistency { state, write_trace: w.trace.clone(), write_tool: w.tool.clone() };
            if let (Value::Object(map), Ok(c)) = (&mut value, serde_json::to_value(&c)) {
                map.insert("consistency".to_owned(), c);
            }
            value
        };
        // The page as last seen, only for the session's own tab (never another session's content).
        let stale = |w: &RunningWrite| {
            let own = self.runtime.inspect(|e| {
                e.session(key).is_some_and(|s| s.closed().is_none() && s.activation().is_active())
                    && e.tabs().get(tab).is_some_and(|r| r.alive && r.owned_by(key))
            });
            let seen = self.gate.last_observation(tab).filter(|_| own && params.since.is_none())?;
            Some(mark((*seen).clone(), ConsistencyState::Stale, w))
        };
        let admission = match &write {
            None => self.admit(Some(tab), ticket).await?,
            Some(w) => {
                // A write needs ownership, so a reader that does not own the tab reads another session's tab: refused
                // now rather than after waiting for that session's write.
                let holder = self.runtime.inspect(|e| e.tabs().get(tab).and_then(|r| r.owner().cloned()));
                if let Some(holder) = holder.filter(|h| h != key) {
                    return Err(ErrorData::new(
                        ErrorCode::OtherSessionTab,
                        format!("tab {} belongs to another session; nothing was read", tab.0),
                    )
                    .with_holder_session(to_proto::session_id(&holder)));
                }
                if params.read == ReadMode::AllowStale
                    && let Some(answer) = stale(w)
                {
                    return Ok(answer);
                }
                match tokio::time::timeout(CONSISTENT_READ_WAIT, self.admit(Some(tab), ticket)).await {
                    Ok(admission) => admission?,
                    Err(_) => match stale(w) {
                        Some(answer) => return Ok(answer),
                        None => self.admit(Some(tab), ticket).await?,
                    },
                }
            }
        };
        let observed = tokio::select! {
            r = self.runtime.observe(key, tab, params) => to_value(&r.map_err(|e| err(&e))?)?,
            () = admission.stop.cancelled() => return Err(user_stopped("the observation was stopped")),
        };
        drop(admission);
        if params.since.is_none() && params.within.is_none() {
            let mut kept = observed.clone();
            if let Value::Object(map) = &mut kept {
                // A stale answer carries no image: screenshots are large and this one would be out of date.
                map.remove("screenshot");
            }
            self.gate.remember_observation(tab, kept);
        }
        Ok(match &write {
            Some(w) => mark(observed, ConsistencyState::Consistent, w),
            None => observed,
        })
    }

    fn mark_dispatched(&self, ticket: &mut Option<Ticket>) -> Result<(), ErrorData> {
        if let (Some(t), Some(log)) = (ticket.take(), self.dedup()) {
            *ticket = Some(log.dispatch(t)?);
        }
        Ok(())
    }

    async fn run_tool(
        &self,
        p: &ToolCallParams,
        call: ToolCall,
        key: SessionKey,
        ticket: &mut Option<Ticket>,
    ) -> Result<Value, ErrorData> {
        let id = p.session.clone();
        let rt = &self.runtime;
        match call {
            ToolCall::Status(_) => {
                let s = rt.status(&key).await.map_err(|e| err(&e))?;
                let started = self.browser_started();
                let (auto_turn_cleanup, missing_capabilities, unsupported) = if started {
                    let (auto, missing) = to_proto::auto_cleanup(&s.auto_cleanup);
                    let unsupported = to_proto::capabilities(&self.provider.capabilities())
                        .into_iter()
                        .filter(|c| c.unsupported.is_some())
                        .collect();
                    (auto, missing, unsupported)
                } else {
                    // No browser yet (it starts at the first browser operation): nothing is missing.
                    (browserd_protocol::lifecycle::AutoTurnCleanup::Pending, Vec::new(), Vec::new())
                };
                to_value(&BrowserStatusResult {
                    tools_active: s.tools_active,
                    advanced: s.tools_active && self.advanced_on(&id),
                    browser: if started { BrowserStart::Started } else { BrowserStart::NotStarted },
                    journal: self.journal.status(),
                    bridge: to_proto::bridge(s.bridge),
                    tabs: s.tabs.iter().map(to_proto::listed_tab).collect(),
                    recovery: s.recovery.iter().map(to_proto::recovery_record).collect(),
                    limits: self.limits(Some(&key)),
                    auto_turn_cleanup,
                    missing_capabilities,
                    unsupported,
                })
            }
            ToolCall::List(_) => {
                let tabs = rt.list_tabs(&key).await.map_err(|e| err(&e))?;
                to_value(&ListResult { tabs: tabs.iter().map(to_proto::listed_tab).collect() })
            }
            ToolCall::Open(params) => {
                let admission = self.admit(None, ticket).await?;
                let work = async {
                    // Open blank, then navigate as an action: the answer comes once the page has loaded (or with
                    // the navigation's own error), so an observation right after sees the page.
                    let view = rt.open_tab(&key, "about:blank").await.map_err(|e| err(&e))?;
                    self.set_current_tab(&id, Some(view.tab));
                    let loaded = self.load_opened(&id, &key, &view, &params).await;
                    match loaded {
                        Ok(value) => Ok(value),
                        // A tab that failed to load is closed again: it never counts against the limit.
                        Err(e) => Err(self.discard_opened(&id, &key, view.tab, e).await),
                    }
                };
                tokio::select! {
                    r = work => r,
                    () = admission.stop.cancelled() => Err(user_stopped("opening the tab was stopped")),
                }
            }
            ToolCall::Claim(params) => {
                let tab = to_proto::tab_handle(params.tab);
                let admission = self.admit(Some(tab), ticket).await?;
                let work = async {
                    let view = rt.claim_tab(&key, tab).await.map_err(|e| err(&e))?;
                    self.set_current_tab(&id, Some(tab));
                    let mut result = to_proto::tab_result(&view);
                    if params.observe {
                        let obs = rt
                            .observe(&key, tab, &browserd_protocol::ObserveParams::default())
                            .await
                            .map_err(|e| err(&e))?;
                        result.observation = Some(Box::new(obs));
                    }
                    to_value(&result)
                };
                tokio::select! {
                    r = work => r,
                    () = admission.stop.cancelled() => Err(user_stopped("claiming the tab was stopped")),
                }
            }
            ToolCall::Observe(params) => self.observe(&id, &key, &params, ticket).await,
            ToolCall::Act(params) => {
                let tab = self.tab_for(&id, params.tab)?;
                let admission = self.admit_write(tab, &p.name, p.call_id.as_deref(), ticket).await?;
                tokio::select! {
                    r = rt.act(&key, tab, &params, None) => to_value(&r.map_err(|e| err(&e))?),
                    () = admission.stop.cancelled() => Err(user_stopped("the action was stopped; it may or may not have \
                        taken effect").with_details(json!({"outcome": "unknown"}))),
                }
            }
            ToolCall::Batch(params) => {
                let tab = self.tab_for(&id, params.tab)?;
                let admission = self.admit_write(tab, &p.name, p.call_id.as_deref(), ticket).await?;
                let work = async {
                    let mut steps = Vec::new();
                    let mut stopped = None;
                    let deadline = tokio::time::Instant::now() + crate::batch::BATCH_DEADLINE;
                    let start_url = if params.stop_on_cross_site {
                        let tabs = rt.list_tabs(&key).await.map_err(|e| err(&e))?;
                        tabs.into_iter().find(|v| v.tab == tab).map(|v| v.url)
                    } else {
                        None
                    };
                    let stop_at =
                        |index: usize, reason| BatchStop { step: u32::try_from(index).unwrap_or(u32::MAX), reason };
                    for (index, step) in params.steps.iter().enumerate() {
                        // A navigate step that would leave the site is not dispatched.
                        if let (Some(start), ActionKind::Navigate, Some(to)) = (&start_url, step.action, &step.value)
                            && crate::batch::leaves_site(start, to)
                        {
                            stopped = Some(stop_at(index, BatchStopReason::CrossSite));
                            break;
                        }
                        let Ok(result) = tokio::time::timeout_at(deadline, rt.act(&key, tab, step, None)).await else {
                            stopped = Some(stop_at(index, BatchStopReason::Deadline));
                            break;
                        };
                        let result = result.map_err(|e| err(&e))?;
                        let failed = result.outcome != Outcome::Succeeded;
                        let left_site = match (&start_url, &result.effects.navigated) {
                            (Some(start), Some(now)) => crate::batch::leaves_site(start, now),
                            _ => false,
                        };
                        steps.push(result);
                        if failed {
                            stopped = Some(stop_at(index, BatchStopReason::Failed));
                            break;
                        }
                        // The page is now on another site: the next step would act on a page the model has not seen.
                        if left_site && index + 1 < params.steps.len() {
                            stopped = Some(stop_at(index + 1, BatchStopReason::CrossSite));
                            break;
                        }
                    }
                    to_value(&BatchResult { ok: stopped.is_none(), steps, stopped })
                };
                tokio::select! {
                    r = work => r,
                    () = admission.stop.cancelled() => Err(user_stopped("the batch was stopped; completed steps are \
                        not rolled back").with_details(json!({"outcome": "unknown"}))),
                }
            }
            ToolCall::MarkDeliverable(params) | ToolCall::MarkHandoff(params) => {
                self.mark_dispatched(ticket)?;
                let tab = to_proto::tab_handle(params.tab);
                let mark = if matches!(p.name.as_str(), browserd_protocol::tools::BROWSER_MARK_HANDOFF) {
                    rt.mark_handoff(&key, tab).await
                } else {
                    rt.mark_deliverable(&key, tab).await
                }
                .map_err(|e| err(&e))?;
                to_value(&MarkResult { tab: params.tab, mark: to_proto::mark_kind(mark.kind) })
            }
            ToolCall::Handoff(params) => {
                let tab = to_proto::tab_handle(params.tab);
                let admission = self.admit(Some(tab), ticket).await?;
                let report = tokio::select! {
                    r = rt.handoff(&key, tab) => r.map_err(|e| err(&e))?,
                    () = admission.stop.cancelled() => return Err(user_stopped("the handoff was stopped")),
                };
                if !report.ok {
                    return Err(err(&report.into_result().err().unwrap_or_else(|| {
                        CoreError::new(browserd_core::error::ErrorKind::Internal, "handoff failed")
                    })));
                }
                if params.until.is_empty() {
                    return to_value(&HandoffResult {
                        tab: params.tab,
                        status: HandoffStatus::WaitingForUser,
                        evidence: Vec::new(),
                        url: None,
                        waited_ms: None,
                    });
                }
                // Waiting for the user is no page operation: free the tab's and the global slot, keep the stop gate.
                let stop = admission.stop.clone();
                drop(admission);
                let wait =
                    HandoffWait { until: params.until.clone(), timeout: params.timeout_ms.map(Duration::from_millis) };
                let progress = |p: &HandoffProgress| {
                    tracing::debug!(tab = %tab, checks = p.checks, waited_ms = p.waited_ms, "waiting for the user");
                };
                let end = tokio::select! {
                    r = rt.await_handoff(&key, tab, &wait, &progress) => r.map_err(|e| err(&e))?,
                    () = stop.cancelled() => return Err(user_stopped("stopped waiting for the user; the tab stays \
                        handed off")),
                };
                let result = |status, evidence, url, waited_ms| HandoffResult {
                    tab: params.tab,
                    status,
                    evidence,
                    url,
                    waited_ms: Some(waited_ms),
                };
                match end {
                    HandoffEnd::Completed { evidence, url, waited_ms, .. } => {
                        to_value(&result(HandoffStatus::Completed, evidence, Some(url), waited_ms))
                    }
                    HandoffEnd::TabClosed { evidence, waited_ms } => {
                        self.gate.forget_tab(tab);
                        to_value(&result(HandoffStatus::TabClosed, evidence, None, waited_ms))
                    }
                    HandoffEnd::TimedOut { evidence, url, waited_ms } => {
                        let details = to_value(&result(HandoffStatus::TimedOut, evidence, Some(url), waited_ms))?;
                        Err(ErrorData::new(
                            ErrorCode::DeadlineExceeded,
                            format!("the user did not finish within {waited_ms} ms; the tab stays handed off"),
                        )
                        .with_next_step("Ask the user where they are, or call browser_handoff again to wait longer.")
                        .with_details(details))
                    }
                }
            }
            ToolCall::Close(params) => {
                self.mark_dispatched(ticket)?;
                let tabs: Vec<TabHandle> = params.tabs.iter().copied().map(to_proto::tab_handle).collect();
                let groups: Vec<_> = params.group.into_iter().map(to_proto::group_handle).collect();
                let report = rt.close_tabs(&key, &tabs, &groups).await.map_err(|e| err(&e))?;
                for tab in &report.closed {
                    self.gate.forget_tab(*tab);
                }
                if let Ok(current) = self.current_tab(&id)
                    && report.closed.contains(&current)
                {
                    self.set_current_tab(&id, None);
                }
                to_value(&to_proto::close_result(&report))
            }
            ToolCall::Cleanup(params) => {
                self.mark_dispatched(ticket)?;
                let inputs = FinalizeInputs {
                    keep: params.keep.iter().copied().map(to_proto::tab_handle).collect(),
                    close: params.close.iter().copied().map(to_proto::tab_handle).collect(),
                    release: params.release.iter().copied().map(to_proto::tab_handle).collect(),
                    mark: params
                        .mark
                        .iter()
                        .map(|m| (to_proto::tab_handle(m.tab), to_proto::core_mark_kind(m.kind)))
                        .collect(),
                    release_debugger: params.detach_debugger,
                };
                let report = rt.finalize(&key, &inputs).await.map_err(|e| err(&e))?;
                if let Ok(current) = self.current_tab(&id)
                    && (report.closed.contains(&current) || report.released.contains(&current))
                {
                    self.set_current_tab(&id, None);
                }
                to_value(&to_proto::cleanup_result(&report))
            }
            ToolCall::ContextReset(params) => {
                self.mark_dispatched(ticket)?;
                to_value(&self.context_reset_inner(&id, &key, params.disconnect_client).await?)
            }
            ToolCall::Evaluate(_) | ToolCall::Console(_) | ToolCall::Network(_) | ToolCall::RawProtocol(_) => {
                self.run_advanced(p, call, &key, ticket).await
            }
        }
    }

    /// The advanced tier's tools: refused unless the session activated the tier under the policy; `browser_cdp`
    /// also needs `raw_cdp` and a method the policy allows (checked before anything is sent). Evaluate and raw
    /// commands are writes (the write lease, de-duplicated, `unknown` once dispatched); console and network are reads.
    async fn run_advanced(
        &self,
        p: &ToolCallParams,
        call: ToolCall,
        key: &SessionKey,
        ticket: &mut Option<Ticket>,
    ) -> Result<Value, ErrorData> {
        use crate::advanced;
        let policy = &self.config.advanced;
        let is_raw = matches!(call, ToolCall::RawProtocol(_));
        if !self.advanced_on(&p.session) || (is_raw && !policy.raw_cdp) {
            return Err(advanced::not_activated(&p.name, policy));
        }
        let rt = &self.runtime;
        let unknown = |what: &str| {
            user_stopped(&format!("{what} was stopped; it may or may not have taken effect"))
                .with_details(json!({"outcome": "unknown"}))
        };
        match call {
            ToolCall::Evaluate(params) => {
                let tab = self.tab_for(&p.session, Some(params.tab))?;
                let admission = self.admit(Some(tab), ticket).await?;
                let mut result = tokio::select! {
                    r = rt.evaluate(key, tab, &params) => r.map_err(|e| err(&e))?,
                    () = admission.stop.cancelled() => return Err(unknown("the evaluation")),
                };
                let value = std::mem::take(&mut result.value);
                (result.value, result.spill) =
                    advanced::bound(value, "the expression's value", &advanced::spill_dir())?;
                to_value(&result)
            }
            ToolCall::RawProtocol(params) => {
                if let Some(denied) = advanced::method_denied(&params.method, policy) {
                    return Err(denied);
                }
                let tab = self.tab_for(&p.session, Some(params.tab))?;
                let admission = self.admit(Some(tab), ticket).await?;
                let mut result = tokio::select! {
                    r = rt.raw_protocol(key, tab, &params) => r.map_err(|e| err(&e))?,
                    () = admission.stop.cancelled() => return Err(unknown("the protocol command")),
                };
                let value = std::mem::take(&mut result.result);
                let what = format!("the result of {}", params.method);
                (result.result, result.spill) = advanced::bound(value, &what, &advanced::spill_dir())?;
                to_value(&result)
            }
            ToolCall::Console(params) => {
                let tab = self.tab_for(&p.session, Some(params.tab))?;
                let admission = self.admit(Some(tab), ticket).await?;
                let mut result = tokio::select! {
                    r = rt.console(key, tab, &params) => r.map_err(|e| err(&e))?,
                    () = admission.stop.cancelled() => return Err(user_stopped("reading the console was stopped")),
                };
                let entries = to_value(&std::mem::take(&mut result.entries))?;
                let (entries, spill) = advanced::bound(entries, "the console entries", &advanced::spill_dir())?;
                result.entries = serde_json::from_value(entries).unwrap_or_default();
                result.truncated |= spill.is_some();
                result.spill = spill;
                to_value(&result)
            }
            ToolCall::Network(params) => {
                let tab = self.tab_for(&p.session, Some(params.tab))?;
                let admission = self.admit(Some(tab), ticket).await?;
                let mut result = tokio::select! {
                    r = rt.network(key, tab, &params) => r.map_err(|e| err(&e))?,
                    () = admission.stop.cancelled() => return Err(user_stopped("reading the network log was stopped")),
                };
                let requests = to_value(&std::mem::take(&mut result.requests))?;
                let (requests, spill) = advanced::bound(requests, "the network entries", &advanced::spill_dir())?;
                result.requests = serde_json::from_value(requests).unwrap_or_default();
                result.truncated |= spill.is_some();
                result.spill = spill;
                to_value(&result)
            }
            _ => Err(ErrorData::new(ErrorCode::InternalError, "not an advanced tool")),
        }
    }

    /// Seconds since the broker started.
    #[must_use]
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }
}

/// An idle-tracker client registration for a paired extension, when the broker tracks idleness.
fn lazy_idle(broker: &std::sync::Weak<Broker>) -> Option<browserd_ipc::ClientGuard> {
    let me = broker.upgrade()?;
    let idle = me.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    idle.map(|i| i.client())
}

fn ok(value: Value) -> browserd_protocol::jsonrpc::ResponsePayload {
    browserd_protocol::jsonrpc::ResponsePayload::Result(value)
}

/// The prefix of a durable tab key made of the browser's target id.
const TARGET_KEY_PREFIX: &str = "target:";

/// One reconciliation pass over `records` against the remote endpoint at `url`.
async fn reconcile_remote(
    url: &str,
    log: &DedupLog,
    records: &[browserd_journal::recovery::RecoveryRecord],
) -> Result<(), String> {
    use browserd_journal::recovery::{CleanupOp, Resolution};
    const CALL: Duration = Duration::from_secs(5);
    let cdp = match tokio::time::timeout(CALL, browserd_cdp::connect_ws(url)).await {
        Ok(connected) => connected.map_err(|e| format!("connecting to {url}: {e}"))?,
        Err(_) => return Err(format!("connecting to {url}: no answer within {} s", CALL.as_secs())),
    };
    let targets = cdp
        .call(None, "Target.getTargets", json!({}), CALL)
        .await
        .map_err(|e| format!("listing the targets of {url}: {e}"))?;
    let open: BTreeSet<String> = targets["targetInfos"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["targetId"].as_str().map(str::to_owned))
        .collect();
    for record in records {
        let Some(target) = record.tab.strip_prefix(TARGET_KEY_PREFIX) else {
            // A handle-keyed record cannot be found again; it stays pending for `browserd status` and the user.
            continue;
        };
        if !open.contains(target) {
            log.resolve(record.id, Resolution::AlreadyGone);
            continue;
        }
        match record.op {
            CleanupOp::Close => match cdp.call(None, "Target.closeTarget", json!({"targetId": target}), CALL).await {
                Ok(_) => {
                    tracing::info!(id = %record.id, "a previous broker's tab was closed");
                    log.resolve(record.id, Resolution::Confirmed);
                }
                Err(e) => log.attempt_failed(record.id, ErrorCode::CleanupFailed.as_str(), &e.to_string()),
            },
            // The claim was the dead broker's metadata and its debugger sessions ended with its connection.
            CleanupOp::Release | CleanupOp::DetachDebugger => log.resolve(record.id, Resolution::Confirmed),
        }
    }
    Ok(())
}

fn internal_mismatch(id: RequestId) -> Response {
    Response::failure(Some(id), ErrorData::new(ErrorCode::InternalError, "a method was decoded as another one"))
}

fn internal(id: RequestId, e: &serde_json::Error) -> Response {
    Response::failure(Some(id), ErrorData::new(ErrorCode::InternalError, format!("cannot encode a response: {e}")))
}

/// Component name → version, as `hello` and `status` report them.
#[must_use]
pub fn components() -> BTreeMap<String, String> {
    BTreeMap::from([("browserd".to_owned(), env!("CARGO_PKG_VERSION").to_owned())])
}
