//! The connection task that owns one transport, and `Cdp`, the cheap handle that sends calls to it.
//!
//! One task per browser owns the transport, the table of pending calls and the table of flat sessions. Handles talk to
//! it over a bounded channel; each call carries a oneshot for its answer, a deadline and optionally a cancellation
//! token, both enforced on the caller's side, so a timed-out or cancelled call simply stops waiting and its late answer
//! is dropped by the task. Events go to a bounded broadcast channel: a subscriber that falls behind gets
//! `RecvError::Lagged(n)` and so knows how many events it lost.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::error::{CdpError, TransportError};
use crate::transport::Transport;

/// A flat CDP session id (`sessionId` on the wire), naming one attachment to one target.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub String);

impl SessionId {
    /// The id as it appears on the wire.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for SessionId {
    fn from(s: &str) -> Self {
        SessionId(s.to_owned())
    }
}

/// One CDP event. `session` is `None` for browser-level events.
#[derive(Clone, Debug)]
pub struct CdpEvent {
    pub session: Option<SessionId>,
    pub method: String,
    pub params: Value,
}

/// Sizes of the connection's bounded queues.
#[derive(Clone, Debug)]
pub struct ConnectionOptions {
    /// Calls queued for the connection task before callers wait (the deadline still applies while waiting).
    pub outgoing_capacity: usize,
    /// Events kept for slow subscribers; one that falls further behind is told how many it lost.
    pub event_capacity: usize,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        ConnectionOptions { outgoing_capacity: 256, event_capacity: 4096 }
    }
}

/// How a session auto-attaches to its related targets (iframes, workers, popups), see [`Cdp::set_auto_attach`].
#[derive(Clone, Debug, PartialEq)]
pub struct AutoAttach {
    /// Pause each new target until `Runtime.runIfWaitingForDebugger`, so it can be configured before it runs.
    pub wait_for_debugger_on_start: bool,
    /// Let the connection task send `Runtime.runIfWaitingForDebugger` to each child right after configuring it.
    /// When `false` the caller resumes children itself (after enabling its domains), on `Target.attachedToTarget`.
    pub resume_children: bool,
    /// The `filter` parameter of `Target.setAutoAttach`, passed through unchanged.
    pub filter: Option<Value>,
}

impl Default for AutoAttach {
    fn default() -> Self {
        AutoAttach { wait_for_debugger_on_start: true, resume_children: true, filter: None }
    }
}

impl AutoAttach {
    fn params(&self) -> Value {
        let mut params = json!({
            "autoAttach": true,
            "waitForDebuggerOnStart": self.wait_for_debugger_on_start,
            "flatten": true,
        });
        if let Some(filter) = &self.filter {
            params["filter"] = filter.clone();
        }
        params
    }
}

/// A handle to one browser connection. Cloning is cheap; all clones talk to the same connection task.
#[derive(Clone)]
pub struct Cdp {
    tx: mpsc::Sender<Command>,
    shared: Arc<Shared>,
}

impl fmt::Debug for Cdp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cdp").field("close_reason", &self.shared.close_reason.get()).finish_non_exhaustive()
    }
}

/// State shared by the handles and the task.
struct Shared {
    /// Set once, by the task, when the connection ends.
    close_reason: OnceLock<String>,
    /// The event sender; taken out when the connection ends so subscribers see `Closed`.
    events: Mutex<Option<broadcast::Sender<CdpEvent>>>,
    /// Cancelled when the connection has ended and every pending call has been failed.
    closed: CancellationToken,
}

enum Command {
    Call {
        session: Option<SessionId>,
        method: String,
        params: Value,
        /// Made for an action (see [`Cdp::call_for_action`]).
        for_action: bool,
        reply: oneshot::Sender<Result<Value, CdpError>>,
    },
    SetAutoAttachPolicy {
        session: Option<SessionId>,
        policy: Option<AutoAttach>,
    },
    Close {
        reason: String,
    },
}

impl Cdp {
    /// Starts a connection task over `transport` on the current tokio runtime and returns its handle.
    ///
    /// The task ends when the transport closes, when [`Cdp::close`] is called, or when every handle is dropped.
    pub fn spawn(transport: impl Transport, options: ConnectionOptions) -> Cdp {
        let (tx, rx) = mpsc::channel(options.outgoing_capacity.max(1));
        let (events_tx, _) = broadcast::channel(options.event_capacity.max(1));
        let shared = Arc::new(Shared {
            close_reason: OnceLock::new(),
            events: Mutex::new(Some(events_tx.clone())),
            closed: CancellationToken::new(),
        });
        let task = ConnectionTask {
            transport,
            rx,
            events: events_tx,
            shared: shared.clone(),
            next_id: 1,
            pending: HashMap::new(),
            sweep_at: SWEEP_MIN,
            sessions: HashMap::new(),
            detached: HashMap::new(),
            crashed: HashMap::new(),
            detached_order: VecDeque::new(),
            root_policy: None,
            policies: HashMap::new(),
        };
        // The task is tracked through `Shared::closed`: it always runs to completion and signals there.
        tokio::spawn(task.run());
        Cdp { tx, shared }
    }

    /// Sends `method` with `params` to `session` (or the browser when `None`) and waits for its answer.
    pub async fn call(
        &self,
        session: Option<&SessionId>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CdpError> {
        self.call_inner(session, method, params, timeout, None, false).await
    }

    /// Like [`Cdp::call`] (or [`Cdp::call_cancellable`] with `cancel`), for a command made for an action that may change
    /// the page though its method also serves reads (a `Runtime` script that picks an option, selects text or scrolls,
    /// an agent's own script). Over a transport with a last-hop gate ([`Transport::gates_actions`], the extension
    /// relay) the command is marked so the gate checks it as a write: lease, fencing token and Stop. Elsewhere it is
    /// an ordinary call.
    pub async fn call_for_action(
        &self,
        session: Option<&SessionId>,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, CdpError> {
        self.call_inner(session, method, params, timeout, cancel, true).await
    }

    /// Like [`Cdp::call`], but gives up with [`CdpError::Cancelled`] as soon as `cancel` is cancelled.
    pub async fn call_cancellable(
        &self,
        session: Option<&SessionId>,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value, CdpError> {
        self.call_inner(session, method, params, timeout, Some(cancel), false).await
    }

    /// Hands `method` to the connection task and returns at once, without waiting for the answer; [`Queued::answer`]
    /// waits for it. Commands queued by successive `enqueue` calls on one handle (each awaited before the next) are
    /// written to the browser in that order, so a caller can have several commands in flight and still keep their
    /// order (input events, for example). `timeout` counts from this call and also bounds the wait for room in the
    /// connection's queue. An `Err` means the command was not queued (the connection is gone, or the queue stayed
    /// full until the deadline): it never reached the browser.
    pub async fn enqueue(
        &self,
        session: Option<&SessionId>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Queued, CdpError> {
        if let Some(reason) = self.shared.close_reason.get() {
            return Err(CdpError::ConnectionClosed { reason: reason.clone() });
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let (reply_tx, reply_rx) = oneshot::channel();
        let command = Command::Call {
            session: session.cloned(),
            method: method.to_owned(),
            params,
            for_action: false,
            reply: reply_tx,
        };
        match tokio::time::timeout_at(deadline, self.tx.send(command)).await {
            Ok(Ok(())) => Ok(Queued { cdp: self.clone(), method: method.to_owned(), reply: reply_rx, deadline }),
            Ok(Err(_)) => Err(self.closed_error()),
            Err(_) => Err(timeout_error(method)),
        }
    }

    async fn call_inner(
        &self,
        session: Option<&SessionId>,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: Option<&CancellationToken>,
        for_action: bool,
    ) -> Result<Value, CdpError> {
        if let Some(reason) = self.shared.close_reason.get() {
            return Err(CdpError::ConnectionClosed { reason: reason.clone() });
        }
        let (reply_tx, reply_rx) = oneshot::channel();
        let command =
            Command::Call { session: session.cloned(), method: method.to_owned(), params, for_action, reply: reply_tx };
        let exchange = async {
            self.tx.send(command).await.map_err(|_| self.closed_error())?;
            reply_rx.await.map_err(|_| self.closed_error())?
        };
        let deadline =
            async { tokio::time::timeout(timeout, exchange).await.unwrap_or_else(|_| Err(timeout_error(method))) };
        match cancel {
            Some(cancel) => tokio::select! {
                biased;
                () = cancel.cancelled() => Err(CdpError::Cancelled),
                result = deadline => result,
            },
            None => deadline.await,
        }
    }

    /// Makes `session` (or the browser when `None`) auto-attach to its related targets with flat sessions, and makes
    /// every target attached that way do the same, recursively (iframes inside iframes, workers of workers).
    ///
    /// For each `Target.attachedToTarget` under `session`, the connection task sends `Target.setAutoAttach` with the
    /// same parameters to the child and then, if `config.resume_children` and the child is waiting,
    /// `Runtime.runIfWaitingForDebugger`, before it publishes the event. Those internal calls are not reported;
    /// a child that cannot auto-attach (some worker kinds) is still resumed.
    pub async fn set_auto_attach(
        &self,
        session: Option<&SessionId>,
        config: AutoAttach,
        timeout: Duration,
    ) -> Result<(), CdpError> {
        let params = config.params();
        let policy = Command::SetAutoAttachPolicy { session: session.cloned(), policy: Some(config) };
        tokio::time::timeout(timeout, self.tx.send(policy))
            .await
            .map_err(|_| timeout_error("Target.setAutoAttach"))?
            .map_err(|_| self.closed_error())?;
        match self.call(session, "Target.setAutoAttach", params, timeout).await {
            Ok(_) => Ok(()),
            Err(err) => {
                // Best effort: the policy must not outlive a failed setAutoAttach.
                let _ = self.tx.try_send(Command::SetAutoAttachPolicy { session: session.cloned(), policy: None });
                Err(err)
            }
        }
    }

    /// Subscribes to every event of this connection, browser-level and of every session.
    ///
    /// The channel is bounded: a subscriber that falls behind receives `RecvError::Lagged(n)` with the number of
    /// events it lost, then continues with the oldest event still kept. After the connection ends it returns
    /// `RecvError::Closed` once the remaining events are read.
    pub fn events(&self) -> broadcast::Receiver<CdpEvent> {
        let events = self.shared.events.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match &*events {
            Some(tx) => tx.subscribe(),
            None => broadcast::channel(1).1,
        }
    }

    /// Subscribes to the events of one session only (see [`Cdp::events`] for the lag and close behaviour).
    pub fn session_events(&self, session: &SessionId) -> SessionEvents {
        SessionEvents { rx: self.events(), session: session.clone() }
    }

    /// Whether the connection has ended; every call then fails with [`CdpError::ConnectionClosed`].
    pub fn is_closed(&self) -> bool {
        self.shared.close_reason.get().is_some() || self.tx.is_closed()
    }

    /// Why the connection ended, once it has.
    pub fn close_reason(&self) -> Option<String> {
        self.shared.close_reason.get().cloned()
    }

    /// Waits until the connection has ended and every pending call has been failed; returns why it ended.
    pub async fn closed(&self) -> String {
        self.shared.closed.cancelled().await;
        self.close_reason().unwrap_or_else(|| "the connection task ended".to_owned())
    }

    /// Ends the connection: pending calls fail with [`CdpError::ConnectionClosed`] naming `reason`, and the transport is
    /// dropped. Returns once the task has finished.
    pub async fn close(&self, reason: &str) {
        // If the send fails the task is already finishing; either way wait for it.
        let _ = self.tx.send(Command::Close { reason: reason.to_owned() }).await;
        self.shared.closed.cancelled().await;
    }

    fn closed_error(&self) -> CdpError {
        let reason = self
            .shared
            .close_reason
            .get()
            .cloned()
            .unwrap_or_else(|| "the connection task stopped unexpectedly".to_owned());
        CdpError::ConnectionClosed { reason }
    }
}

/// A command handed to the connection by [`Cdp::enqueue`], whose answer has not been read yet. Dropping it stops
/// waiting for the answer; a command whose `Queued` is dropped before the connection task reaches it is not sent at
/// all (the task skips calls nobody waits for), so keep it, or [`Queued::answer`] in a task of its own, until the
/// command must have gone out.
#[derive(Debug)]
pub struct Queued {
    cdp: Cdp,
    method: String,
    reply: oneshot::Receiver<Result<Value, CdpError>>,
    deadline: tokio::time::Instant,
}

impl Queued {
    /// Waits for the browser's answer, until the deadline given to [`Cdp::enqueue`].
    pub async fn answer(self) -> Result<Value, CdpError> {
        match tokio::time::timeout_at(self.deadline, self.reply).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(self.cdp.closed_error()),
            Err(_) => Err(timeout_error(&self.method)),
        }
    }
}

fn timeout_error(method: &str) -> CdpError {
    CdpError::Timeout { method: method.to_owned() }
}

/// The events of one session, filtered out of the connection's event stream.
#[derive(Debug)]
pub struct SessionEvents {
    rx: broadcast::Receiver<CdpEvent>,
    session: SessionId,
}

impl SessionEvents {
    /// The next event of this session. `Lagged(n)` counts lost events of every session, so treat it as "some of
    /// mine may be lost".
    pub async fn recv(&mut self) -> Result<CdpEvent, broadcast::error::RecvError> {
        loop {
            let event = self.rx.recv().await?;
            if event.session.as_ref() == Some(&self.session) {
                return Ok(event);
            }
        }
    }
}

/// The smallest pending-table size at which abandoned entries (timed out or cancelled callers) are swept.
const SWEEP_MIN: usize = 64;
/// How many detached sessions are remembered, so that late calls on them fail with the detach reason.
const DETACHED_MEMORY: usize = 1024;

struct Pending {
    session: Option<SessionId>,
    method: String,
    reply: Reply,
}

enum Reply {
    /// A caller waits for this answer.
    Caller(oneshot::Sender<Result<Value, CdpError>>),
    /// The task sent this call itself (auto-attach); failures are only logged.
    Internal,
}

impl Pending {
    fn abandoned(&self) -> bool {
        matches!(&self.reply, Reply::Caller(tx) if tx.is_closed())
    }

    fn fail(self, err: CdpError) {
        match self.reply {
            Reply::Caller(tx) => {
                let _ = tx.send(Err(err));
            }
            Reply::Internal => tracing::debug!(method = %self.method, %err, "internal CDP call failed"),
        }
    }
}

struct SessionState {
    target_id: String,
    target_type: String,
    parent: Option<SessionId>,
    /// Why the session is going away, learnt before `Target.detachedFromTarget` (for example `Inspector.detached`).
    detach_reason: Option<String>,
}

struct ConnectionTask<T> {
    transport: T,
    rx: mpsc::Receiver<Command>,
    events: broadcast::Sender<CdpEvent>,
    shared: Arc<Shared>,
    next_id: u64,
    pending: HashMap<u64, Pending>,
    sweep_at: usize,
    sessions: HashMap<SessionId, SessionState>,
    detached: HashMap<SessionId, String>,
    /// Sessions whose renderer crashed, until `Inspector.targetReloadedAfterCrash`: calls that need the renderer fail
    /// at once instead of waiting for their deadline.
    crashed: HashMap<SessionId, String>,
    detached_order: VecDeque<SessionId>,
    /// The auto-attach policy of the browser-level session.
    root_policy: Option<AutoAttach>,
    /// The auto-attach policies of sessions, set by callers or inherited from the parent session at attach time.
    policies: HashMap<SessionId, AutoAttach>,
}

enum Flow {
    Continue,
    Stop(String),
}

impl<T: Transport> ConnectionTask<T> {
    async fn run(mut self) {
        let reason = loop {
            let flow = tokio::select! {
                incoming = self.transport.recv() => match incoming {
                    Ok(text) => self.on_message(&text).await,
                    Err(err) => Flow::Stop(transport_close_reason(err)),
                },
                command = self.rx.recv() => match command {
                    Some(command) => self.on_command(command).await,
                    None => Flow::Stop("every handle to the connection was dropped".to_owned()),
                },
            };
            if let Flow::Stop(reason) = flow {
                break reason;
            }
        };
        self.finish(reason);
    }

    fn finish(mut self, reason: String) {
        tracing::debug!(%reason, "CDP connection closed");
        let _ = self.shared.close_reason.set(reason.clone());
        self.shared.events.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
        self.rx.close();
        while let Ok(command) = self.rx.try_recv() {
            if let Command::Call { reply, .. } = command {
                let _ = reply.send(Err(CdpError::ConnectionClosed { reason: reason.clone() }));
            }
        }
        for (_, pending) in self.pending.drain() {
            pending.fail(CdpError::ConnectionClosed { reason: reason.clone() });
        }
        drop(self.transport);
        self.shared.closed.cancel();
    }

    async fn on_command(&mut self, command: Command) -> Flow {
        match command {
            Command::Call { session, method, params, for_action, reply } => {
                if let Some(session) = &session
                    && let Some(reason) = self.detached.get(session)
                {
                    let _ = reply.send(Err(CdpError::TargetClosed { reason: reason.clone() }));
                    return Flow::Continue;
                }
                if let Some(session) = &session
                    && let Some(reason) = self.crashed.get(session)
                    && needs_renderer(&method)
                {
                    let reason = format!("{reason}; reload or navigate it (Page.reload, Page.navigate) to recover");
                    let _ = reply.send(Err(CdpError::TargetClosed { reason }));
                    return Flow::Continue;
                }
                if reply.is_closed() {
                    return Flow::Continue;
                }
                let marked = for_action && self.transport.gates_actions();
                self.send_call_marked(session, method, params, Reply::Caller(reply), marked).await
            }
            Command::SetAutoAttachPolicy { session, policy } => {
                match &session {
                    None => self.root_policy = policy,
                    Some(session) => match policy {
                        Some(policy) => {
                            self.policies.insert(session.clone(), policy);
                        }
                        None => {
                            self.policies.remove(session);
                        }
                    },
                }
                Flow::Continue
            }
            Command::Close { reason } => Flow::Stop(reason),
        }
    }

    async fn send_call(&mut self, session: Option<SessionId>, method: String, params: Value, reply: Reply) -> Flow {
        self.send_call_marked(session, method, params, reply, false).await
    }

    /// Sends one call; `for_action` adds browserd's mark for the transport's last-hop gate (only ever `true` when the
    /// transport [`Transport::gates_actions`]).
    async fn send_call_marked(
        &mut self,
        session: Option<SessionId>,
        method: String,
        params: Value,
        reply: Reply,
        for_action: bool,
    ) -> Flow {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = Map::new();
        message.insert("id".into(), Value::from(id));
        message.insert("method".into(), Value::String(method.clone()));
        message.insert("params".into(), params);
        if let Some(session) = &session {
            message.insert("sessionId".into(), Value::String(session.0.clone()));
        }
        if for_action {
            message.insert("forAction".into(), Value::Bool(true));
        }
        let text = Value::Object(message).to_string();
        self.pending.insert(id, Pending { session, method, reply });
        self.sweep();
        match self.transport.send(text).await {
            Ok(()) => Flow::Continue,
            Err(err) => Flow::Stop(transport_close_reason(err)),
        }
    }

    /// Drops pending entries whose callers stopped waiting, so abandoned calls never accumulate.
    fn sweep(&mut self) {
        if self.pending.len() >= self.sweep_at {
            self.pending.retain(|_, pending| !pending.abandoned());
            self.sweep_at = (self.pending.len() * 2).max(SWEEP_MIN);
        }
    }

    async fn on_message(&mut self, text: &str) -> Flow {
        let mut message = match serde_json::from_str(text) {
            Ok(Value::Object(message)) => message,
            Ok(_) | Err(_) => {
                tracing::warn!(len = text.len(), "ignoring a CDP message that is not a JSON object");
                return Flow::Continue;
            }
        };
        let session = message.get("sessionId").and_then(Value::as_str).map(SessionId::from);
        if let Some(id) = message.get("id").and_then(Value::as_u64) {
            self.on_response(id, session, message);
            return Flow::Continue;
        }
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            tracing::warn!("ignoring a CDP message with neither id nor method");
            return Flow::Continue;
        };
        let method = method.to_owned();
        let params = message.remove("params").unwrap_or_else(|| Value::Object(Map::new()));
        let flow = self.on_event_bookkeeping(session.as_ref(), &method, &params).await;
        let _ = self.events.send(CdpEvent { session, method, params });
        flow
    }

    fn on_response(&mut self, id: u64, session: Option<SessionId>, mut message: Map<String, Value>) {
        let Some(pending) = self.pending.remove(&id) else {
            tracing::debug!(id, "ignoring the answer to a call nobody waits for (timed out or cancelled)");
            return;
        };
        let result = if let Some(error) = message.get("error") {
            let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
            let text = error.get("message").and_then(Value::as_str).unwrap_or("unknown error").to_owned();
            let text = match error.get("data").and_then(Value::as_str) {
                Some(data) => format!("{text}: {data}"),
                None => text,
            };
            if is_session_gone(code, &text) {
                let session = session.or_else(|| pending.session.clone());
                let who = session.map(|s| format!("session {s}")).unwrap_or_else(|| "the session".to_owned());
                Err(CdpError::TargetClosed { reason: format!("{who} no longer exists in the browser ({text})") })
            } else {
                Err(CdpError::Protocol { code, message: format!("{}: {text}", pending.method) })
            }
        } else {
            match message.remove("result") {
                Some(result) => Ok(result),
                None => Err(CdpError::InvalidResponse { detail: format!("answer {id} has neither result nor error") }),
            }
        };
        match pending.reply {
            Reply::Caller(tx) => {
                let _ = tx.send(result);
            }
            Reply::Internal => {
                if let Err(err) = result {
                    tracing::debug!(method = %pending.method, %err, "internal CDP call failed");
                }
            }
        }
    }

    async fn on_event_bookkeeping(&mut self, session: Option<&SessionId>, method: &str, params: &Value) -> Flow {
        match method {
            "Target.attachedToTarget" => {
                let Some(child) = params.get("sessionId").and_then(Value::as_str).map(SessionId::from) else {
                    return Flow::Continue;
                };
                let info = params.get("targetInfo");
                let field = |name: &str| {
                    info.and_then(|info| info.get(name)).and_then(Value::as_str).unwrap_or_default().to_owned()
                };
                let waiting = params.get("waitingForDebugger").and_then(Value::as_bool).unwrap_or(false);
                let policy = match session {
                    None => self.root_policy.clone(),
                    Some(parent) => self.policies.get(parent).cloned(),
                };
                self.sessions.insert(
                    child.clone(),
                    SessionState {
                        target_id: field("targetId"),
                        target_type: field("type"),
                        parent: session.cloned(),
                        detach_reason: None,
                    },
                );
                if let Some(policy) = policy {
                    self.policies.insert(child.clone(), policy.clone());
                    let flow = self
                        .send_call(Some(child.clone()), "Target.setAutoAttach".into(), policy.params(), Reply::Internal)
                        .await;
                    if let Flow::Stop(_) = flow {
                        return flow;
                    }
                    if policy.resume_children && waiting {
                        let flow = self
                            .send_call(
                                Some(child),
                                "Runtime.runIfWaitingForDebugger".into(),
                                json!({}),
                                Reply::Internal,
                            )
                            .await;
                        if let Flow::Stop(_) = flow {
                            return flow;
                        }
                    }
                }
            }
            "Target.detachedFromTarget" => {
                if let Some(child) = params.get("sessionId").and_then(Value::as_str).map(SessionId::from) {
                    let reason = match self.sessions.get(&child) {
                        Some(state) => state.detach_reason.clone().unwrap_or_else(|| {
                            format!(
                                "{} target {} was closed or detached (session {child} detached)",
                                if state.target_type.is_empty() { "the" } else { &state.target_type },
                                state.target_id
                            )
                        }),
                        None => format!("session {child} was detached (its target was closed or detached)"),
                    };
                    self.close_session(&child, &reason);
                }
            }
            "Target.targetCrashed" => {
                let target_id = params.get("targetId").and_then(Value::as_str).unwrap_or_default();
                let status = params.get("status").and_then(Value::as_str).unwrap_or("unknown");
                let code = params.get("errorCode").and_then(Value::as_i64).unwrap_or(0);
                let reason = format!("target {target_id} crashed (status {status}, error code {code})");
                let crashed: Vec<SessionId> = self
                    .sessions
                    .iter()
                    .filter(|(_, state)| state.target_id == target_id)
                    .map(|(id, _)| id.clone())
                    .collect();
                for session in crashed {
                    self.fail_pending_of(&session, &reason);
                    self.crashed.insert(session, reason.clone());
                }
            }
            "Inspector.targetCrashed" => {
                if let Some(session) = session {
                    let reason = match self.sessions.get(session) {
                        Some(state) => format!("target {} crashed (its renderer process is gone)", state.target_id),
                        None => format!("the target of session {session} crashed"),
                    };
                    self.fail_pending_of(&session.clone(), &reason);
                    self.crashed.insert(session.clone(), reason);
                }
            }
            "Inspector.targetReloadedAfterCrash" => {
                if let Some(session) = session {
                    self.crashed.remove(session);
                }
            }
            "Inspector.detached" => {
                if let Some(session) = session
                    && let Some(state) = self.sessions.get_mut(session)
                {
                    let why = params.get("reason").and_then(Value::as_str).unwrap_or("unknown reason");
                    state.detach_reason = Some(format!("target {} detached: {why}", state.target_id));
                }
            }
            _ => {}
        }
        Flow::Continue
    }

    /// Forgets `session` and every session below it, failing their pending calls with `reason`.
    fn close_session(&mut self, session: &SessionId, reason: &str) {
        let mut doomed = vec![session.clone()];
        let mut idx = 0;
        while idx < doomed.len() {
            let parent = doomed[idx].clone();
            doomed.extend(
                self.sessions
                    .iter()
                    .filter(|(_, state)| state.parent.as_ref() == Some(&parent))
                    .map(|(id, _)| id.clone())
                    .filter(|id| !doomed.contains(id))
                    .collect::<Vec<_>>(),
            );
            idx += 1;
        }
        for id in doomed {
            self.sessions.remove(&id);
            self.policies.remove(&id);
            self.crashed.remove(&id);
            self.fail_pending_of(&id, reason);
            if self.detached.insert(id.clone(), reason.to_owned()).is_none() {
                self.detached_order.push_back(id);
            }
            while self.detached_order.len() > DETACHED_MEMORY {
                if let Some(old) = self.detached_order.pop_front() {
                    self.detached.remove(&old);
                }
            }
        }
    }

    fn fail_pending_of(&mut self, session: &SessionId, reason: &str) {
        let ids: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, pending)| pending.session.as_ref() == Some(session))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            if let Some(pending) = self.pending.remove(&id) {
                pending.fail(CdpError::TargetClosed { reason: reason.to_owned() });
            }
        }
    }
}

/// Whether `method` is carried out by the target's renderer, so it cannot be answered while the renderer is crashed.
/// Browser-side domains (Page navigation, Emulation, Target, Browser, …) still answer after a crash.
fn needs_renderer(method: &str) -> bool {
    const RENDERER_DOMAINS: &[&str] = &[
        "Accessibility",
        "Animation",
        "CSS",
        "DOM",
        "DOMDebugger",
        "DOMSnapshot",
        "Debugger",
        "HeapProfiler",
        "Input",
        "LayerTree",
        "Overlay",
        "Profiler",
        "Runtime",
    ];
    let domain = method.split_once('.').map_or(method, |(domain, _)| domain);
    RENDERER_DOMAINS.contains(&domain) && method != "Runtime.runIfWaitingForDebugger"
}

/// Whether a CDP error answer means the session no longer exists.
fn is_session_gone(code: i64, message: &str) -> bool {
    code == -32001 || message.contains("Session with given id not found")
}

fn transport_close_reason(err: TransportError) -> String {
    match err {
        TransportError::Closed { reason } => reason,
        other => other.to_string(),
    }
}
