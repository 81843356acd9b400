//! The broker daemon's front: binds the socket through `browserd-ipc`, accepts connections, answers `hello`,
//! `client.disconnect` and `broker.cancel` on each connection, and hands every other request to the method table
//! (`dispatch.rs`); at shutdown it disposes every session and closes the managed browser.
//!
//! One task reads each connection; each request runs in its own task (bounded by the gate for page work) and the
//! answer goes back through the connection's writer task. No lock is held across an `.await` except the runtime's
//! own per-session locks.
//!
//! The broker's own controls are typed methods of the protocol registry like every other: `broker.cancel` (cancel
//! one in-flight request of the connection, for MCP cancellation), `broker.shutdown` (graceful stop),
//! `broker.stopGate` (cancel queued and running page work, report `USER_STOPPED`), `broker.selectTab` (choose which
//! owned tab `browser_observe` / `browser_act` / `browser_batch` work on when their params name no tab).
//!
//! The rest of the broker is `impl Broker` blocks in sibling modules: `sessions` (the session registry), `toolset`
//! (tool activation and `tools.changed`), `tools` (one file per tool), `status`, `stop`, `journal` and `reconcile`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use browserd_core::clock::{Clock, SystemClock};
use browserd_core::lifecycle::LifecycleConfig;
use browserd_core::provider::Provider;
use browserd_core::runtime::{Runtime, RuntimeConfig};
use browserd_ipc::{
    AcquireLockError, BrokerListener, ConnectionContext, FramedConnection, IdleTracker, InstanceLock, RuntimeDir,
    ServeOptions, ServeSummary, serve,
};
use browserd_protocol::hello::{ComponentRole, HelloParams, HelloResult, VersionRange, negotiate_named};
use browserd_protocol::jsonrpc::{Message, Request, RequestId, Response};
use browserd_protocol::lifecycle::{ClientDisconnectParams, ClientDisconnectResult};
use browserd_protocol::methods::{BrokerCancelResult, MethodCall};
use browserd_protocol::{ErrorCode, ErrorData};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::BrokerConfig;
use crate::dispatch::to_value;
use crate::lazy::{BrowserTarget, LazyChromium};
use crate::limits::{Gate, LimitConfig};
use crate::sessions::Tables;
use crate::to_proto;

pub use browserd_protocol::methods::{
    BROKER_CANCEL, BROKER_SELECT_TAB, BROKER_SHUTDOWN, BROKER_STOP_GATE, SelectTabParams, StopGateResult,
};

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
    pub(crate) runtime: Runtime,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) lazy: Option<Arc<LazyChromium>>,
    /// The managed browsers (`lazy` the default one, and one per distinct set of browser-wide settings asked for);
    /// the provider the runtime drives when the broker chose its browser itself.
    pub(crate) browsers: Option<Arc<crate::browsers::Browsers>>,
    pub(crate) config: BrokerConfig,
    pub(crate) gate: Gate,
    pub(crate) tables: Mutex<Tables>,
    pub(crate) shutdown: CancellationToken,
    pub(crate) idle: Mutex<Option<IdleTracker>>,
    pub(crate) next_conn: AtomicU64,
    /// Trace ids of writes sent without a `callId`.
    pub(crate) next_write: AtomicU64,
    pub(crate) started: std::time::Instant,
    pub(crate) journal: crate::journal_gate::JournalGate,
    pub(crate) request_ids: crate::request_ids::RequestIds,
    pub(crate) recovery_journal: crate::dedup::RecoveryJournal,
    pub(crate) owned_journal: crate::dedup::OwnedJournal,
    /// What the latest Stop reported (via, control epoch, dropped inputs, detached tabs); `USER_STOPPED` answers
    /// carry it in `details.stop`.
    pub(crate) last_stop: Mutex<Option<Value>>,
    /// Tabs under Stop until a session resumes them (`browser_claim` with `resume: true`).
    pub(crate) stopped: Mutex<crate::stop::Stopped>,
    /// The site policy (`[policy]`, each session's lists); the provider asks it too.
    pub(crate) policy: Arc<crate::policy::enforce::Policy>,
    /// Approvals asked for and granted (`approval.grant`).
    pub(crate) approvals: crate::policy::approvals::Approvals,
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

impl Broker {
    /// A broker over `provider` (tests use the fake provider; the clock drives the runtime's timers).
    #[must_use]
    pub fn with_provider(provider: Arc<dyn Provider>, clock: Arc<dyn Clock>, config: BrokerConfig) -> Arc<Self> {
        let policy = crate::policy::enforce::Policy::from_config(&config.policy);
        Self::build(provider, None, None, clock, config, policy)
    }

    /// A broker over the configured browser: the remote endpoint when `remote_cdp` is set, else a managed Chromium
    /// launched on first browser use.
    #[must_use]
    pub fn from_config(config: BrokerConfig, state_dir: Option<&std::path::Path>) -> Arc<Self> {
        let target = BrowserTarget::from_config(&config, state_dir);
        let policy = crate::policy::enforce::Policy::from_config(&config.policy);
        let options = crate::lazy::LazyOptions {
            gate_sessions: Some(policy.gate_sessions()),
            ..crate::lazy::LazyOptions::from_config(&config)
        };
        let lazy = Arc::new(LazyChromium::with_options(
            target,
            policy.with_files(crate::policy::files::chromium_config(&config.files)),
            config.browser,
            options,
        ));
        Self::build_lazy(lazy, config, policy)
    }

    /// A broker over a managed Chromium (launched on first browser use) or a remote endpoint.
    #[must_use]
    pub fn with_target(target: BrowserTarget, config: BrokerConfig) -> Arc<Self> {
        let policy = crate::policy::enforce::Policy::from_config(&config.policy);
        let lazy = Arc::new(LazyChromium::with_options(
            target,
            policy.with_files(crate::policy::files::chromium_config(&config.files)),
            crate::config::BrowserChoice::Auto,
            crate::lazy::LazyOptions {
                gate_sessions: Some(policy.gate_sessions()),
                ..crate::lazy::LazyOptions::from_config(&config)
            },
        ));
        Self::build_lazy(lazy, config, policy)
    }

    fn build_lazy(
        lazy: Arc<LazyChromium>,
        config: BrokerConfig,
        policy: Arc<crate::policy::enforce::Policy>,
    ) -> Arc<Self> {
        let browsers = Arc::new(crate::browsers::Browsers::new(lazy.clone(), config.max_browsers));
        Self::build(browsers.clone(), Some(lazy), Some(browsers), Arc::new(SystemClock::new()), config, policy)
    }

    fn build(
        provider: Arc<dyn Provider>,
        lazy: Option<Arc<LazyChromium>>,
        browsers: Option<Arc<crate::browsers::Browsers>>,
        clock: Arc<dyn Clock>,
        config: BrokerConfig,
        policy: Arc<crate::policy::enforce::Policy>,
    ) -> Arc<Self> {
        let runtime = Runtime::new(provider.clone(), clock, runtime_config(&config));
        Arc::new(Self {
            runtime,
            provider,
            lazy,
            browsers,
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
            stopped: Mutex::new(crate::stop::Stopped::default()),
            policy,
            approvals: crate::policy::approvals::Approvals::default(),
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
        self.open_journal();
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
        if let Some(browsers) = &self.browsers {
            browsers.shutdown().await;
        } else if let Some(lazy) = &self.lazy {
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
        let timers = cancel.clone();
        tokio::spawn(async move { runtime.run_timers(timers).await });
        let env = |name: &str| std::env::var(name).ok();
        crate::retention::spawn_sweeper(crate::retention::swept_dirs(&env), self.config.retention, cancel.clone());
        if let Some(lazy) = self.lazy.clone() {
            tokio::spawn(lazy.supervise(cancel));
        }
    }

    // ----- connections -----

    async fn connection(self: Arc<Self>, conn: FramedConnection, ctx: ConnectionContext) {
        let conn_id = self.next_conn.fetch_add(1, Ordering::Relaxed) + 1;
        let (mut reader, mut writer) = conn.into_split();
        let (tx, mut rx) = mpsc::channel::<Value>(64);
        let writer_task = tokio::spawn(async move {
            while let Some(message) = rx.recv().await {
                match writer.send(&message).await {
                    Ok(()) => {}
                    // Nothing was sent and the connection is intact: the caller gets a typed error under its id.
                    Err(browserd_ipc::FrameError::OutgoingTooLarge { size, limit }) => {
                        tracing::warn!(size, limit, "an answer over the frame limit was replaced by an error");
                        let Some(answer) = crate::answer_limit::too_large_answer(&message, size, limit) else {
                            continue;
                        };
                        if let Err(e) = writer.send(&answer).await {
                            tracing::debug!(%e, "a client went away while we answered");
                            break;
                        }
                    }
                    Err(e) => {
                        tracing::debug!(%e, "a client went away while we answered");
                        break;
                    }
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
        // A peer that never says `hello` would hold one of the broker's connection slots forever.
        let hello_by = tokio::time::Instant::now() + Duration::from_millis(self.config.hello_timeout_ms.max(1));
        loop {
            let frame = tokio::select! {
                frame = reader.recv() => frame,
                () = ctx.shutdown.cancelled() => break,
                () = closer.cancelled() => break,
                () = tokio::time::sleep_until(hello_by), if protocol.is_none() => {
                    tracing::debug!("closing a connection that sent no hello in time");
                    break;
                }
            };
            let value = match frame {
                Ok(Some(value)) => value,
                Ok(None) => break,
                Err(browserd_ipc::FrameError::TooLarge { limit, size, id }) => {
                    // Answered with the limit, under the request's own id when it had one; the connection goes on.
                    let id = id.and_then(|id| serde_json::from_value::<RequestId>(id).ok());
                    let response = Response::failure(id, crate::client::frame_too_large("a request", size, limit));
                    let _ = tx.send(serde_json::to_value(&response).unwrap_or(Value::Null)).await;
                    continue;
                }
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
                    outcome = crate::sessions::REQUEST_CONN.scope(conn_id, me.dispatch_audited(conn_id, version, request)) => outcome,
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

    /// Tells the idle tracker whether the broker still owns something (tabs, recovery records).
    pub(crate) fn refresh_idle(&self) {
        let idle = self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let Some(idle) = idle else { return };
        let owns = self.runtime.inspect(|engine| {
            !engine.recovery().is_empty() || engine.tabs().iter().any(|r| r.alive && r.owner().is_some())
        });
        idle.set_owns_resources(owns);
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
