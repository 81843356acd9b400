//! Idle exit: a tracker of connected clients plus an "owns resources" flag set by the broker, which fires a token once
//! nothing has been connected or owned for a configured duration.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The state the idle decision is made on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct IdleState {
    /// Live [`ClientGuard`]s.
    clients: usize,
    /// Whether the broker owns sessions, browsers or pending cleanup (set by the broker).
    owns_resources: bool,
}

impl IdleState {
    fn is_idle(self) -> bool {
        self.clients == 0 && !self.owns_resources
    }
}

/// Shared handle: clone it freely. [`IdleTracker::start`] spawns one watcher task that fires [`IdleTracker::idle`]
/// after `idle_after` of uninterrupted idleness (no client connected and nothing owned). Any change to either resets
/// the clock. Once fired, the token stays fired.
#[derive(Debug, Clone)]
pub struct IdleTracker {
    /// Shared state; the watcher subscribes to it.
    state: Arc<watch::Sender<IdleState>>,
    /// Fired once when idle long enough.
    idle: CancellationToken,
}

impl IdleTracker {
    /// Creates the tracker and spawns its watcher (needs a tokio runtime). It starts idle: a broker nobody connects to
    /// exits after `idle_after`. The watcher ends when the token fires or every handle is dropped.
    pub fn start(idle_after: Duration) -> Self {
        let (tx, rx) = watch::channel(IdleState::default());
        let idle = CancellationToken::new();
        tokio::spawn(watch_idle(rx, idle.clone(), idle_after));
        IdleTracker { state: Arc::new(tx), idle }
    }

    /// Counts one connected client until the guard is dropped.
    pub fn client(&self) -> ClientGuard {
        self.state.send_modify(|s| s.clients += 1);
        ClientGuard { state: Arc::clone(&self.state) }
    }

    /// Records whether the broker owns anything (sessions, browsers, recovery work) that must keep it alive.
    pub fn set_owns_resources(&self, owns: bool) {
        self.state.send_if_modified(|s| std::mem::replace(&mut s.owns_resources, owns) != owns);
    }

    /// Number of connected clients right now.
    pub fn clients(&self) -> usize {
        self.state.borrow().clients
    }

    /// Fired once the broker has been idle for the configured duration.
    pub fn idle(&self) -> CancellationToken {
        self.idle.clone()
    }
}

/// One connected client; dropping it decrements the count.
#[derive(Debug)]
pub struct ClientGuard {
    /// The tracker's state.
    state: Arc<watch::Sender<IdleState>>,
}

impl Drop for ClientGuard {
    fn drop(&mut self) {
        self.state.send_modify(|s| s.clients -= 1);
    }
}

async fn watch_idle(mut rx: watch::Receiver<IdleState>, idle: CancellationToken, idle_after: Duration) {
    loop {
        let is_idle = rx.borrow_and_update().is_idle();
        if is_idle {
            tokio::select! {
                () = tokio::time::sleep(idle_after) => {
                    idle.cancel();
                    return;
                }
                changed = rx.changed() => if changed.is_err() { return },
            }
        } else if rx.changed().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::advance;

    /// Lets the watcher task run after a state change or a clock advance.
    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn fires_after_the_idle_duration_with_nothing_connected() {
        let tracker = IdleTracker::start(Duration::from_secs(30));
        settle().await;
        advance(Duration::from_secs(29)).await;
        settle().await;
        assert!(!tracker.idle().is_cancelled());
        advance(Duration::from_secs(2)).await;
        settle().await;
        assert!(tracker.idle().is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn a_connected_client_keeps_it_alive_and_leaving_restarts_the_clock() {
        let tracker = IdleTracker::start(Duration::from_secs(30));
        let guard = tracker.client();
        assert_eq!(tracker.clients(), 1);
        settle().await;
        advance(Duration::from_secs(120)).await;
        settle().await;
        assert!(!tracker.idle().is_cancelled());
        drop(guard);
        assert_eq!(tracker.clients(), 0);
        settle().await;
        advance(Duration::from_secs(20)).await;
        settle().await;
        assert!(!tracker.idle().is_cancelled(), "the clock must restart when the last client leaves");
        advance(Duration::from_secs(11)).await;
        settle().await;
        assert!(tracker.idle().is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn owned_resources_keep_it_alive_without_clients() {
        let tracker = IdleTracker::start(Duration::from_secs(10));
        tracker.set_owns_resources(true);
        settle().await;
        advance(Duration::from_secs(60)).await;
        settle().await;
        assert!(!tracker.idle().is_cancelled());
        tracker.set_owns_resources(false);
        settle().await;
        advance(Duration::from_secs(11)).await;
        settle().await;
        assert!(tracker.idle().is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn repeating_the_same_flag_does_not_restart_the_clock() {
        let tracker = IdleTracker::start(Duration::from_secs(10));
        settle().await;
        advance(Duration::from_secs(6)).await;
        tracker.set_owns_resources(false);
        settle().await;
        advance(Duration::from_secs(5)).await;
        settle().await;
        assert!(tracker.idle().is_cancelled());
    }
}
