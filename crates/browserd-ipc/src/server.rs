//! The broker's accept loop: peer-uid check on every connection, one task per connection under a connection cap, and
//! graceful shutdown (stop accepting, let connections finish within a grace period, then abort the rest).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::{JoinError, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::frame::{DEFAULT_MAX_FRAME, FramedConnection};
use crate::idle::IdleTracker;
use crate::listener::BrokerListener;
use crate::peer::{PeerCred, check_peer};

/// Tuning for [`serve`].
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Connections served at once. When all are taken, the loop stops accepting until one ends; further clients wait
    /// in the kernel's listen backlog (back-pressure, not refusal).
    pub max_connections: usize,
    /// After shutdown is requested, how long running connections get to finish before they are aborted.
    pub shutdown_grace: Duration,
    /// Largest frame in either direction.
    pub max_frame: usize,
    /// Counts every accepted connection as a client for idle exit, when given.
    pub idle: Option<IdleTracker>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_connections: 128,
            shutdown_grace: Duration::from_secs(5),
            max_frame: DEFAULT_MAX_FRAME,
            idle: None,
        }
    }
}

/// What a connection handler gets besides the connection.
#[derive(Debug, Clone)]
pub struct ConnectionContext {
    /// Serial number of the connection within this `serve` call, for logs.
    pub id: u64,
    /// The peer, already checked to be our uid.
    pub peer: PeerCred,
    /// Cancelled when the server shuts down: finish the current request, answer it, then return.
    pub shutdown: CancellationToken,
}

/// What happened while serving; returned once `serve` has stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServeSummary {
    /// Connections accepted and handed to the handler.
    pub served: u64,
    /// Connections closed at once because the peer's uid differed or its credentials were unreadable.
    pub refused_peers: u64,
    /// Handlers that panicked (each failed only its own connection).
    pub panicked: u64,
    /// Handlers still running when the grace period ended, and therefore aborted.
    pub aborted_after_grace: u64,
}

/// Longest pause after repeated `accept` failures (e.g. out of file descriptors).
const MAX_ACCEPT_BACKOFF: Duration = Duration::from_secs(1);

/// Serves connections until `shutdown` is cancelled, then stops accepting (the socket file is removed, so new clients
/// see "not running"), cancels every [`ConnectionContext::shutdown`], waits up to
/// [`ServeOptions::shutdown_grace`] for the handlers to return, and aborts the rest.
///
/// Each accepted connection is checked with [`check_peer`]; a different uid is logged and closed without a byte sent.
/// A failing `accept` is retried with a growing pause (capped at one second), never ending the loop.
pub async fn serve<H, F>(
    listener: BrokerListener,
    handler: H,
    shutdown: CancellationToken,
    options: ServeOptions,
) -> ServeSummary
where
    H: Fn(FramedConnection, ConnectionContext) -> F + Send + Sync + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let handler = Arc::new(handler);
    let limit = Arc::new(Semaphore::new(options.max_connections.max(1)));
    let mut tasks = JoinSet::new();
    let mut summary = ServeSummary::default();
    let mut backoff = Duration::ZERO;
    let mut next_id = 0u64;

    loop {
        // Like mini-redis: take a slot before accepting, so at most `max_connections` run at once.
        let permit = tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                record(&mut summary, done);
                continue;
            }
            permit = Arc::clone(&limit).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_closed) => break,
            },
        };
        let accepted = tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                record(&mut summary, done);
                continue;
            }
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => {
                backoff = Duration::ZERO;
                accepted
            }
            Err(error) => {
                backoff = (backoff * 2).clamp(Duration::from_millis(10), MAX_ACCEPT_BACKOFF);
                tracing::warn!(%error, ?backoff, "accepting a broker connection failed; retrying");
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(backoff) => continue,
                }
            }
        };
        if let Err(refused) = check_peer(listener.uid(), &peer) {
            summary.refused_peers += 1;
            tracing::warn!(%refused, "refused a broker connection");
            drop(stream);
            continue;
        }
        next_id += 1;
        let ctx = ConnectionContext { id: next_id, peer, shutdown: shutdown.child_token() };
        let conn = FramedConnection::new(stream, peer, options.max_frame);
        let client = options.idle.as_ref().map(IdleTracker::client);
        let handler = Arc::clone(&handler);
        summary.served += 1;
        tasks.spawn(async move {
            let _permit = permit;
            let _client = client;
            handler(conn, ctx).await;
        });
    }

    // Stop accepting: closing the listener removes broker.sock.
    drop(listener);
    let grace = tokio::time::sleep(options.shutdown_grace);
    tokio::pin!(grace);
    loop {
        tokio::select! {
            done = tasks.join_next() => match done {
                Some(done) => record(&mut summary, done),
                None => break,
            },
            () = &mut grace => {
                summary.aborted_after_grace = tasks.len() as u64;
                tracing::warn!(count = tasks.len(), "aborting broker connections still running after the grace period");
                tasks.shutdown().await;
                break;
            }
        }
    }
    summary
}

fn record(summary: &mut ServeSummary, done: Result<(), JoinError>) {
    if let Err(error) = done
        && error.is_panic()
    {
        summary.panicked += 1;
        tracing::error!(%error, "a broker connection handler panicked; only that connection was lost");
    }
}
