//! The client side: connect to the broker (checking that the broker runs as our uid too), or start it on demand and
//! wait for it with a bounded backoff.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use tokio::net::UnixStream;
use tokio::time::Instant;

use crate::frame::{DEFAULT_MAX_FRAME, FramedConnection};
use crate::listener::{BindError, check_socket_path_len};
use crate::peer::{PeerCred, PeerRefused, check_peer};
use crate::rundir::RuntimeDir;

/// Why no connection to the broker was made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// No broker listens on the socket (no socket file, or a stale one).
    #[error("no browserd broker is running at {path}; start one with `browserd broker --daemon`")]
    NotRunning {
        /// The socket path.
        path: PathBuf,
    },
    /// The socket path does not fit `sockaddr_un`.
    #[error(transparent)]
    Path(#[from] BindError),
    /// The process listening on the socket runs as another user.
    #[error("the process listening on {path} is not yours: {refused}; remove the socket and report this")]
    ForeignBroker {
        /// The socket path.
        path: PathBuf,
        /// The credential check that failed.
        refused: PeerRefused,
    },
    /// Connecting failed for another reason (permissions, resources).
    #[error("cannot connect to the browserd broker at {path}: {source}")]
    Io {
        /// The socket path.
        path: PathBuf,
        /// The failing system call's error.
        source: io::Error,
    },
    /// The `spawn` callback of [`connect_or_spawn`] failed.
    #[error("could not start the browserd broker: {source}; run `browserd broker` in a terminal to see why")]
    SpawnFailed {
        /// The callback's error.
        source: io::Error,
    },
    /// The broker was started but its socket did not answer in time.
    #[error(
        "started the browserd broker but it did not answer at {path} within {waited:?} ({attempts} attempts); run \
         `browserd broker` in a terminal to see why it does not start"
    )]
    BrokerDidNotStart {
        /// The socket path.
        path: PathBuf,
        /// Time spent waiting after the start.
        waited: Duration,
        /// Connection attempts after the start.
        attempts: u32,
    },
}

/// Connects to `broker.sock` in `dir` and checks that the broker runs as our uid.
pub async fn connect(dir: &RuntimeDir) -> Result<FramedConnection, ConnectError> {
    connect_with_limit(dir, DEFAULT_MAX_FRAME).await
}

/// [`connect`] with a non-default frame limit.
pub async fn connect_with_limit(dir: &RuntimeDir, max_frame: usize) -> Result<FramedConnection, ConnectError> {
    let path = dir.socket_path();
    check_socket_path_len(&path)?;
    let stream = match UnixStream::connect(&path).await {
        Ok(stream) => stream,
        Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused) => {
            return Err(ConnectError::NotRunning { path });
        }
        Err(source) => return Err(ConnectError::Io { path, source }),
    };
    let peer = PeerCred::of(&stream).map_err(|source| ConnectError::Io { path: path.clone(), source })?;
    check_peer(dir.uid(), &peer).map_err(|refused| ConnectError::ForeignBroker { path, refused })?;
    Ok(FramedConnection::new(stream, peer, max_frame))
}

/// Backoff for [`connect_or_spawn`].
#[derive(Debug, Clone)]
pub struct SpawnOptions {
    /// Pause before the first retry after starting the broker.
    pub first_delay: Duration,
    /// Longest pause between retries (the pause doubles up to this).
    pub max_delay: Duration,
    /// Give up this long after starting the broker.
    pub deadline: Duration,
}

impl Default for SpawnOptions {
    fn default() -> Self {
        SpawnOptions {
            first_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(200),
            deadline: Duration::from_secs(10),
        }
    }
}

/// Progress of [`connect_or_spawn`], for a status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectProgress {
    /// No broker answered; the spawn callback is about to run.
    StartingBroker {
        /// The socket that did not answer.
        path: PathBuf,
    },
    /// Still waiting for the started broker.
    Waiting {
        /// Retries so far.
        attempt: u32,
        /// Time since the start.
        waited: Duration,
    },
    /// Connected.
    Connected {
        /// Whether this call started the broker.
        spawned: bool,
        /// Time since the start (zero when already running).
        waited: Duration,
    },
}

/// Connects to the broker, starting it when none answers.
///
/// If [`connect`] says [`ConnectError::NotRunning`], `spawn` runs once (e.g. it starts `browserd broker --daemon`;
/// it must not wait for the broker), then connecting is retried with a doubling pause until it succeeds or
/// [`SpawnOptions::deadline`] passes. A started broker that finds another one already running exits, and the retries
/// then reach that one. Any other error ends the wait at once. `progress` hears each step.
pub async fn connect_or_spawn<S, P>(
    dir: &RuntimeDir,
    spawn: S,
    options: &SpawnOptions,
    mut progress: P,
) -> Result<FramedConnection, ConnectError>
where
    S: FnOnce() -> io::Result<()>,
    P: FnMut(&ConnectProgress),
{
    let path = match connect(dir).await {
        Ok(conn) => {
            progress(&ConnectProgress::Connected { spawned: false, waited: Duration::ZERO });
            return Ok(conn);
        }
        Err(ConnectError::NotRunning { path }) => path,
        Err(other) => return Err(other),
    };
    progress(&ConnectProgress::StartingBroker { path: path.clone() });
    spawn().map_err(|source| ConnectError::SpawnFailed { source })?;
    let started = Instant::now();
    let mut delay = options.first_delay;
    let mut attempt = 0u32;
    loop {
        let waited = started.elapsed();
        if waited >= options.deadline {
            return Err(ConnectError::BrokerDidNotStart { path, waited, attempts: attempt });
        }
        tokio::time::sleep(delay.min(options.deadline - waited)).await;
        delay = (delay * 2).min(options.max_delay);
        attempt += 1;
        match connect(dir).await {
            Ok(conn) => {
                progress(&ConnectProgress::Connected { spawned: true, waited: started.elapsed() });
                return Ok(conn);
            }
            Err(ConnectError::NotRunning { .. }) => {
                progress(&ConnectProgress::Waiting { attempt, waited: started.elapsed() });
            }
            Err(other) => return Err(other),
        }
    }
}
