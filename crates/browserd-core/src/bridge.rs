//! The bridge state machine (one per browser connection): `stopped → connected ⇄ reconnecting →
//! stopped`.
//!
//! **Owner:** [`crate::lifecycle::Lifecycle`] (one [`Bridge`] per browser; one browser for now).
//!
//! **Invariant:** the bridge never closes tabs and never changes tool activation: it has no
//! access to either, and no lifecycle boundary other than plugin disposal or an explicit host
//! disconnect stops it.

use crate::Millis;

/// The connection state of one browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BridgeState {
    /// Not connected: never started, or stopped by plugin disposal / explicit disconnect.
    Stopped,
    /// Connected, with the provider's connection epoch.
    Connected {
        /// The provider's connection epoch.
        epoch: u64,
    },
    /// The connection dropped; the provider (or the next operation) is reconnecting.
    Reconnecting {
        /// The epoch that was lost.
        last_epoch: u64,
    },
}

impl BridgeState {
    /// Stable lower-case name (`stopped`, `connected`, `reconnecting`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Stopped => "stopped",
            Self::Connected { .. } => "connected",
            Self::Reconnecting { .. } => "reconnecting",
        }
    }
}

/// Why the bridge stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopCause {
    /// Plugin disposal / host exit.
    PluginDisposal,
    /// The host explicitly disconnected this client.
    ExplicitDisconnect,
}

/// The per-browser bridge machine.
#[derive(Debug, Clone)]
pub struct Bridge {
    state: BridgeState,
    since: Millis,
    reconnects: u64,
    stop_cause: Option<StopCause>,
}

impl Default for Bridge {
    fn default() -> Self {
        Self::new()
    }
}

impl Bridge {
    /// A stopped bridge.
    #[must_use]
    pub fn new() -> Self {
        Self { state: BridgeState::Stopped, since: Millis(0), reconnects: 0, stop_cause: None }
    }

    /// Current state.
    #[must_use]
    pub fn state(&self) -> BridgeState {
        self.state
    }

    /// When the state last changed.
    #[must_use]
    pub fn since(&self) -> Millis {
        self.since
    }

    /// How many times the connection came back after a loss.
    #[must_use]
    pub fn reconnects(&self) -> u64 {
        self.reconnects
    }

    /// Why it was stopped, if it was stopped on purpose.
    #[must_use]
    pub fn stop_cause(&self) -> Option<StopCause> {
        self.stop_cause
    }

    /// Whether the next operation should (re)connect first.
    #[must_use]
    pub fn needs_connect(&self) -> bool {
        !matches!(self.state, BridgeState::Connected { .. })
    }

    /// The connection is up (first operation, or health restored). An epoch older than the
    /// current one is ignored; a newer one while connected counts as a reconnect (the loss went unseen).
    pub fn handle_connected(&mut self, epoch: u64, now: Millis) {
        match self.state {
            BridgeState::Connected { epoch: cur } if cur >= epoch => {}
            BridgeState::Reconnecting { last_epoch } if epoch < last_epoch => {}
            // The same connection answered again (a call failed, the connection did not): nothing restarted.
            BridgeState::Reconnecting { last_epoch } if epoch == last_epoch => {
                self.set(BridgeState::Connected { epoch }, now);
            }
            // A new epoch is a new connection, whether or not the loss was seen first.
            BridgeState::Reconnecting { .. } | BridgeState::Connected { .. } => {
                self.reconnects += 1;
                self.set(BridgeState::Connected { epoch }, now);
            }
            _ => {
                self.stop_cause = None;
                self.set(BridgeState::Connected { epoch }, now);
            }
        }
    }

    /// The connection dropped. A stopped bridge stays stopped.
    pub fn handle_connection_lost(&mut self, now: Millis) {
        if let BridgeState::Connected { epoch } = self.state {
            self.set(BridgeState::Reconnecting { last_epoch: epoch }, now);
        }
    }

    /// Plugin disposal or an explicit host disconnect. Idempotent.
    pub fn handle_stop(&mut self, cause: StopCause, now: Millis) {
        if self.state != BridgeState::Stopped {
            self.set(BridgeState::Stopped, now);
        }
        self.stop_cause = Some(cause);
    }

    fn set(&mut self, state: BridgeState, now: Millis) {
        self.state = state;
        self.since = now;
    }
}
