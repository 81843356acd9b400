//! The broker client: connects (or starts the broker on demand), says `hello`, makes typed calls, and hands out
//! the broker's notifications. Used by the CLI, the MCP server and the hooks.
//!
//! Calls may run concurrently on one client: a reader task matches responses to requests by id.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use browserd_ipc::{ConnectError, FrameError, FramedConnection, RuntimeDir, RuntimeDirError, SpawnOptions};
use browserd_protocol::hello::{ComponentRole, HelloParams, HelloResult};
use browserd_protocol::jsonrpc::{Message, Notification, Request, RequestId, Response, RpcError};
use browserd_protocol::methods::{
    BrokerCancelParams, BrokerShutdownParams, MethodParams, SelectTabParams, StopGateParams, StopGateResult,
};
use browserd_protocol::tools::{ListedTab, ToolCallParams};
use browserd_protocol::{ErrorCode, ErrorData, SessionId};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No connection to the broker.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The runtime directory is unusable.
    #[error(transparent)]
    RuntimeDir(#[from] RuntimeDirError),
    /// The broker answered with an error.
    #[error("{0}")]
    Rpc(Box<ErrorData>),
    /// The broker this client started refused to run (another broker holds the profile or journal, …).
    #[error("the browserd broker refused to start: {0}")]
    BrokerRefused(String),
    /// The connection closed before the answer came.
    #[error("the connection to the browserd broker closed before it answered; check `browserd status`")]
    Closed,
    /// No answer in time.
    #[error("the browserd broker did not answer `{method}` within {} ms", after.as_millis())]
    Timeout {
        /// The call that got no answer (`hello`: the connection's first).
        method: String,
        /// How long it waited.
        after: Duration,
    },
    /// Sending failed.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// A request could not be encoded.
    #[error("cannot encode a request: {0}")]
    Encode(#[from] serde_json::Error),
}

impl ClientError {
    /// The broker's structured error, when the broker answered with one.
    #[must_use]
    pub fn error_data(&self) -> Option<&ErrorData> {
        match self {
            ClientError::Rpc(data) => Some(data),
            _ => None,
        }
    }

    /// The stable code: the broker's, or `BROKER_UNAVAILABLE` when no answer came.
    #[must_use]
    pub fn code(&self) -> ErrorCode {
        match self {
            ClientError::Rpc(data) => data.code,
            ClientError::Encode(_) => ErrorCode::InternalError,
            ClientError::Timeout { method, .. } if method != HELLO => ErrorCode::DeadlineExceeded,
            _ => ErrorCode::BrokerUnavailable,
        }
    }

    /// As a structured error (a local failure becomes `BROKER_UNAVAILABLE` with its message).
    #[must_use]
    pub fn into_error_data(self) -> ErrorData {
        match self {
            ClientError::Rpc(data) => *data,
            ClientError::Timeout { ref method, .. } => {
                let next = if method == HELLO {
                    "The broker took the connection but does not answer: run `browserd doctor`; restart the broker \
                     with `browserd broker stop` (any browserd command starts it again)."
                } else {
                    "The call may still run in the broker: call browser_status (if it does not answer either, run \
                     `browserd broker stop` and retry), and observe before repeating a write."
                };
                ErrorData::new(self.code(), self.to_string()).with_next_step(next)
            }
            other => ErrorData::new(other.code(), other.to_string()),
        }
    }
}

impl From<RpcError> for ClientError {
    fn from(e: RpcError) -> Self {
        ClientError::Rpc(Box::new(e.into_error_data()))
    }
}

/// The error for a message over the broker's frame limit (`what`: "the `tool.call` request", "an answer"), naming the
/// limit; the same words whichever side finds it.
#[must_use]
pub fn frame_too_large(what: &str, size: usize, limit: usize) -> ErrorData {
    ErrorData::new(
        ErrorCode::InvalidParams,
        format!(
            "{what} is {size} bytes, over the broker's frame limit of {limit} bytes ({} MiB); send less (e.g. a \
             shorter value, or a file path instead of the content)",
            limit / (1024 * 1024)
        ),
    )
}

/// The method every connection starts with.
const HELLO: &str = "hello";

/// The longest a broker may take to answer `hello` (it answers at once when it is healthy), whatever the per-call
/// timeout: a broker that takes the connection and never answers must not hang its clients.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(10);

type Pending = Arc<Mutex<HashMap<RequestId, oneshot::Sender<Response>>>>;

/// A connection to the broker. Cheap to clone; closes when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    tx: mpsc::Sender<Value>,
    pending: Pending,
    next_id: AtomicI64,
    notifications: Mutex<Option<mpsc::Receiver<Notification>>>,
    closed: CancellationToken,
    hello: Mutex<Option<HelloResult>>,
    timeout: Option<Duration>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// How to reach the broker.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Who we are (sent in `hello`).
    pub role: ComponentRole,
    /// The broker's runtime directory (default: from the environment).
    pub runtime_dir: Option<std::path::PathBuf>,
    /// Start the broker when none answers.
    pub spawn: bool,
    /// Per-call timeout (`None`: wait as long as the broker takes).
    pub timeout: Option<Duration>,
    /// The `browserd` executable started on demand (default: this process's own executable, which must then be
    /// `browserd`; tests and other binaries name it).
    pub broker_exe: Option<std::path::PathBuf>,
}

impl ConnectOptions {
    /// Options for `role`: default runtime directory, start the broker on demand, no timeout.
    #[must_use]
    pub fn new(role: ComponentRole) -> Self {
        Self { role, runtime_dir: None, spawn: true, timeout: None, broker_exe: None }
    }
}

/// Starts `browserd broker run --daemon` (`exe`, default this executable) detached, its output appended to `broker.log` in the
/// runtime directory.
///
/// # Errors
/// The executable cannot be found or started, or the log file cannot be opened.
pub fn spawn_broker(dir: &RuntimeDir, exe: Option<&std::path::Path>) -> std::io::Result<()> {
    let child = start_broker(dir, exe)?;
    reap(child);
    Ok(())
}

/// Starts the broker as [`spawn_broker`] does and hands back the child, so a client can tell a broker that refused
/// to start (it exits non-zero, its reason in `broker.log`) from one still starting.
fn start_broker(dir: &RuntimeDir, exe: Option<&std::path::Path>) -> std::io::Result<std::process::Child> {
    use std::os::unix::process::CommandExt;
    let exe = match exe {
        Some(exe) => exe.to_path_buf(),
        None => std::env::current_exe()?,
    };
    let log_path = dir.path().join("broker.log");
    let log = std::fs::OpenOptions::new().create(true).append(true).open(&log_path)?;
    let mut command = std::process::Command::new(exe);
    command
        .args(["broker", "run", "--daemon"])
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0);
    command.spawn()
}

/// Reaps `child` when it exits, so a long-lived client leaves no zombie.
fn reap(mut child: std::process::Child) {
    std::thread::spawn(move || {
        let _ = child.wait();
    });
}

/// The last `error:` line of the broker's log: why a broker this client started refused to run.
fn refusal_in_log(dir: &RuntimeDir) -> Option<String> {
    let text = std::fs::read_to_string(dir.path().join("broker.log")).ok()?;
    text.lines().rev().find_map(|line| line.strip_prefix("error: ")).map(str::to_owned)
}

/// Waits until `slot`'s child exits with a failure and returns the broker's reason; pending while it runs.
async fn refused(slot: &Mutex<Option<std::process::Child>>, dir: &RuntimeDir) -> String {
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let status = match slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_mut() {
            Some(child) => child.try_wait().ok().flatten(),
            None => None,
        };
        if let Some(status) = status {
            if status.success() {
                // Another broker already served this directory; the retries reach it.
                std::future::pending::<()>().await;
            }
            return refusal_in_log(dir).unwrap_or_else(|| {
                format!("it exited with {status}; see {}", dir.path().join("broker.log").display())
            });
        }
    }
}

impl Client {
    /// Connects as `options` say (starting the broker on demand when allowed) and says `hello`.
    ///
    /// # Errors
    /// No broker (and none could be started), a refused `hello`, or a broken connection.
    pub async fn connect(options: &ConnectOptions) -> Result<Self, ClientError> {
        let dir = match &options.runtime_dir {
            Some(path) => RuntimeDir::ensure(path)?,
            None => RuntimeDir::from_env()?,
        };
        let conn = if options.spawn {
            let started: Mutex<Option<std::process::Child>> = Mutex::new(None);
            let backoff = SpawnOptions::default();
            let connecting = browserd_ipc::connect_or_spawn(
                &dir,
                || {
                    let child = start_broker(&dir, options.broker_exe.as_deref())?;
                    *started.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(child);
                    Ok(())
                },
                &backoff,
                |progress| {
                    tracing::debug!(?progress, "connecting to the broker");
                },
            );
            let result = tokio::select! {
                result = connecting => result.map_err(ClientError::from),
                reason = refused(&started, &dir) => Err(ClientError::BrokerRefused(reason)),
            };
            if let Some(child) = started.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
                reap(child);
            }
            result?
        } else {
            browserd_ipc::connect(&dir).await?
        };
        Self::from_connection(conn, options.role, options.timeout).await
    }

    /// Says `hello` on an open connection.
    ///
    /// # Errors
    /// A refused `hello` or a broken connection.
    pub async fn from_connection(
        conn: FramedConnection,
        role: ComponentRole,
        timeout: Option<Duration>,
    ) -> Result<Self, ClientError> {
        let (mut reader, mut writer) = conn.into_split();
        let (tx, mut rx) = mpsc::channel::<Value>(64);
        let (note_tx, note_rx) = mpsc::channel::<Notification>(64);
        let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
        let closed = CancellationToken::new();
        tokio::spawn({
            let closed = closed.clone();
            async move {
                loop {
                    tokio::select! {
                        message = rx.recv() => match message {
                            Some(message) => {
                                if writer.send(&message).await.is_err() {
                                    break;
                                }
                            }
                            None => break,
                        },
                        () = closed.cancelled() => break,
                    }
                }
                let _ = writer.shutdown().await;
            }
        });
        tokio::spawn({
            let pending = pending.clone();
            let closed = closed.clone();
            async move {
                loop {
                    let frame = tokio::select! {
                        frame = reader.recv() => frame,
                        () = closed.cancelled() => break,
                    };
                    match frame {
                        Ok(Some(value)) => match Message::from_value(value) {
                            Ok(Message::Response(response)) => {
                                let Some(id) = response.id.clone() else { continue };
                                let waiter =
                                    pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&id);
                                if let Some(waiter) = waiter {
                                    let _ = waiter.send(response);
                                }
                            }
                            Ok(Message::Notification(note)) => {
                                let _ = note_tx.try_send(note);
                            }
                            _ => {}
                        },
                        Ok(None) => break,
                        Err(FrameError::TooLarge { limit, size, id }) => {
                            // An answer over the limit: its waiter hears so instead of waiting for ever.
                            let Some(id) = id.and_then(|id| serde_json::from_value::<RequestId>(id).ok()) else {
                                continue;
                            };
                            let waiter = pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&id);
                            if let Some(waiter) = waiter {
                                let error = frame_too_large("the broker's answer", size, limit);
                                let _ = waiter.send(Response::failure(Some(id), error));
                            }
                        }
                        Err(e) if !e.is_fatal() => {}
                        Err(_) => break,
                    }
                }
                closed.cancel();
                // Waiters see their sender dropped: `Closed`.
                pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
            }
        });
        let client = Client {
            inner: Arc::new(Inner {
                tx,
                pending,
                next_id: AtomicI64::new(0),
                notifications: Mutex::new(Some(note_rx)),
                closed,
                hello: Mutex::new(None),
                timeout,
            }),
        };
        let hello = HelloParams::new(role).component("browserd", env!("CARGO_PKG_VERSION"));
        let result = client.call(&hello).await?;
        *client.inner.hello.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(result);
        Ok(client)
    }

    /// The broker's `hello` answer.
    #[must_use]
    pub fn hello(&self) -> Option<HelloResult> {
        self.inner.hello.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The broker's notifications (`tools.changed`); `Some` only the first time.
    #[must_use]
    pub fn take_notifications(&self) -> Option<mpsc::Receiver<Notification>> {
        self.inner.notifications.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }

    /// Whether the connection has closed.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.inner.closed.is_cancelled()
    }

    /// A typed call: the method and the result type come from the params type.
    ///
    /// # Errors
    /// The broker's error, a timeout, or a closed connection.
    pub async fn call<P: MethodParams>(&self, params: &P) -> Result<P::Result, ClientError> {
        let value = self.call_value(P::METHOD.name(), params).await?;
        serde_json::from_value(value).map_err(|e| {
            ClientError::Rpc(Box::new(ErrorData::new(
                ErrorCode::InternalError,
                format!("the broker's answer to `{}` does not match its schema: {e}", P::METHOD.name()),
            )))
        })
    }

    /// A call by method name (a typed result of the caller's choice).
    ///
    /// # Errors
    /// The broker's error, a timeout, or a closed connection.
    pub async fn call_value<P: Serialize + ?Sized>(&self, method: &str, params: &P) -> Result<Value, ClientError> {
        self.call_value_cancellable(method, params, &CancellationToken::new()).await
    }

    /// A typed call that `cancel` can cancel: the broker is told to cancel it, and the answer (`CANCELLED`, or the
    /// result if it finished first) is returned.
    ///
    /// # Errors
    /// The broker's error (`CANCELLED` after a cancellation), a timeout, or a closed connection.
    pub async fn call_cancellable<P: MethodParams>(
        &self,
        params: &P,
        cancel: &CancellationToken,
    ) -> Result<P::Result, ClientError> {
        let value = self.call_value_cancellable(P::METHOD.name(), params, cancel).await?;
        serde_json::from_value(value).map_err(|e| {
            ClientError::Rpc(Box::new(ErrorData::new(
                ErrorCode::InternalError,
                format!("the broker's answer to `{}` does not match its schema: {e}", P::METHOD.name()),
            )))
        })
    }

    /// [`Client::call_value`] that `cancel` can cancel (see [`Client::call_cancellable`]).
    ///
    /// # Errors
    /// As [`Client::call_cancellable`].
    pub async fn call_value_cancellable<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
        cancel: &CancellationToken,
    ) -> Result<Value, ClientError> {
        let id = RequestId::Number(self.inner.next_id.fetch_add(1, Ordering::Relaxed) + 1);
        let request = Request::new(id.clone(), method, &params)?;
        // A frame over the broker's limit would make it drop the connection unanswered: refuse it here, typed.
        let encoded = serde_json::to_vec(&request).map(|v| v.len()).unwrap_or(0);
        if encoded >= browserd_ipc::DEFAULT_MAX_FRAME {
            let what = format!("the `{method}` request");
            return Err(ClientError::Rpc(Box::new(frame_too_large(&what, encoded, browserd_ipc::DEFAULT_MAX_FRAME))));
        }
        let (tx, rx) = oneshot::channel();
        self.inner.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(id.clone(), tx);
        let forget = || {
            self.inner.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&id);
        };
        if self.inner.tx.send(serde_json::to_value(&request)?).await.is_err() {
            forget();
            return Err(ClientError::Closed);
        }
        let mut rx = rx;
        let wait = async {
            tokio::select! {
                r = &mut rx => return r,
                () = cancel.cancelled() => {}
            }
            // Ask the broker to cancel it, then take whatever it answers (CANCELLED, or the result if it was done).
            let cancel_id = RequestId::Number(self.inner.next_id.fetch_add(1, Ordering::Relaxed) + 1);
            if let Ok(request) =
                browserd_protocol::methods::request(cancel_id, &BrokerCancelParams { request_id: id.clone() })
                && let Ok(value) = serde_json::to_value(&request)
            {
                let _ = self.inner.tx.send(value).await;
            }
            rx.await
        };
        let limit = match (self.inner.timeout, method == HELLO) {
            (Some(limit), true) => Some(limit.min(HELLO_DEADLINE)),
            (None, true) => Some(HELLO_DEADLINE),
            (limit, false) => limit,
        };
        let response = match limit {
            Some(limit) => match tokio::time::timeout(limit, wait).await {
                Ok(r) => r,
                Err(_) => {
                    forget();
                    return Err(ClientError::Timeout { method: method.to_owned(), after: limit });
                }
            },
            None => wait.await,
        };
        let response = response.map_err(|_| ClientError::Closed)?;
        Ok(response.into_result::<Value>()?)
    }

    /// A call by method name with a result type of the caller's choice.
    ///
    /// # Errors
    /// As [`Client::call_value`].
    pub async fn call_as<R: DeserializeOwned, P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<R, ClientError> {
        let value = self.call_value(method, params).await?;
        serde_json::from_value(value).map_err(|e| {
            ClientError::Rpc(Box::new(ErrorData::new(
                ErrorCode::InternalError,
                format!("the broker's answer to `{method}` does not match its schema: {e}"),
            )))
        })
    }

    /// Runs a model tool for `session` (its result is the tool's compact result type, as JSON).
    ///
    /// # Errors
    /// The tool's error (e.g. `OTHER_SESSION_TAB` with the holder), or a transport failure.
    pub async fn tool(&self, session: &SessionId, name: &str, arguments: Value) -> Result<Value, ClientError> {
        let params = ToolCallParams { session: session.clone(), name: name.to_owned(), arguments, call_id: None };
        self.call(&params).await
    }

    /// Asks the broker to shut down gracefully.
    ///
    /// # Errors
    /// A transport failure.
    pub async fn shutdown_broker(&self) -> Result<(), ClientError> {
        self.call(&BrokerShutdownParams {}).await.map(|_| ())
    }

    /// The stop gate: cancels queued and running page work on every controlled tab.
    ///
    /// # Errors
    /// A transport failure.
    pub async fn stop_gate(&self) -> Result<StopGateResult, ClientError> {
        self.call(&StopGateParams {}).await
    }

    /// Makes `tab` the session's current tab (what observe/act/batch work on).
    ///
    /// # Errors
    /// Not the session's own tab, or a transport failure.
    pub async fn select_tab(&self, params: &SelectTabParams) -> Result<ListedTab, ClientError> {
        self.call(params).await
    }
}
