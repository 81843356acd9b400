//! Debugger leases: attach on demand, reference-counted per operation, detached after an idle
//! window and at every turn end.
//!
//! **Owner:** [`crate::lifecycle::Lifecycle`] (one [`DebuggerLeases`] table for all sessions).
//!
//! Debugger state is recorded separately from tab state: a retained (marked) tab does not keep
//! its debugger. A user cancelling the debugger clears only the entry here. A failed detach
//! leaves the entry in [`DebuggerState::DetachFailed`]; the lifecycle engine keeps a recovery
//! record for it and retries.
//!
//! Timers are quinn-style: [`DebuggerLeases::poll_timeout`] says when to call
//! [`DebuggerLeases::handle_timeout`] with the current time.

use std::collections::BTreeMap;

use crate::Millis;
use crate::provider::{SessionKey, TabHandle};

/// Default idle window before an unused debugger is detached.
pub const DEFAULT_IDLE_DETACH_MS: u64 = 1500;

/// The debugger state of one tab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DebuggerState {
    /// An attach is in flight.
    Attaching,
    /// Attached.
    Attached,
    /// A detach is in flight.
    Detaching,
    /// A detach failed or its outcome is unknown; a recovery record retries it.
    DetachFailed,
}

/// One tab's debugger lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebuggerLease {
    /// The session whose operations use it.
    pub session: SessionKey,
    /// State.
    pub state: DebuggerState,
    /// Operations currently using it.
    pub refs: u32,
    /// When it becomes idle-detachable (set when `refs` drops to zero).
    pub idle_deadline: Option<Millis>,
}

/// What the caller must do to use the debugger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebuggerAcquire {
    /// Already attached; go ahead.
    Ready,
    /// Call the provider's attach, then [`DebuggerLeases::handle_attach_result`].
    NeedsAttach,
}

/// Every tab's debugger lease.
#[derive(Debug, Clone)]
pub struct DebuggerLeases {
    idle_window_ms: u64,
    leases: BTreeMap<TabHandle, DebuggerLease>,
}

impl Default for DebuggerLeases {
    fn default() -> Self {
        Self::new(DEFAULT_IDLE_DETACH_MS)
    }
}

impl DebuggerLeases {
    /// A table with the given idle window.
    #[must_use]
    pub fn new(idle_window_ms: u64) -> Self {
        Self { idle_window_ms, leases: BTreeMap::new() }
    }

    /// The idle window.
    #[must_use]
    pub fn idle_window_ms(&self) -> u64 {
        self.idle_window_ms
    }

    /// The lease of `tab`.
    #[must_use]
    pub fn get(&self, tab: TabHandle) -> Option<&DebuggerLease> {
        self.leases.get(&tab)
    }

    /// Every lease.
    pub fn iter(&self) -> impl Iterator<Item = (TabHandle, &DebuggerLease)> {
        self.leases.iter().map(|(t, l)| (*t, l))
    }

    /// An operation of `session` needs the debugger of `tab`: take a reference.
    pub fn acquire(&mut self, session: &SessionKey, tab: TabHandle) -> DebuggerAcquire {
        let lease = self.leases.entry(tab).or_insert_with(|| DebuggerLease {
            session: session.clone(),
            state: DebuggerState::Attaching,
            refs: 0,
            idle_deadline: None,
        });
        lease.session = session.clone();
        lease.refs += 1;
        lease.idle_deadline = None;
        if lease.state == DebuggerState::Attached {
            DebuggerAcquire::Ready
        } else {
            lease.state = DebuggerState::Attaching;
            DebuggerAcquire::NeedsAttach
        }
    }

    /// The attach finished. On failure the reference taken by [`Self::acquire`] is dropped.
    pub fn handle_attach_result(&mut self, tab: TabHandle, ok: bool) {
        let Some(lease) = self.leases.get_mut(&tab) else { return };
        if ok {
            lease.state = DebuggerState::Attached;
        } else {
            lease.refs = lease.refs.saturating_sub(1);
            if lease.refs == 0 {
                self.leases.remove(&tab);
            }
        }
    }

    /// The operation finished: drop its reference; the last one arms the idle timer.
    pub fn release(&mut self, tab: TabHandle, now: Millis) {
        let Some(lease) = self.leases.get_mut(&tab) else { return };
        lease.refs = lease.refs.saturating_sub(1);
        if lease.refs == 0 && lease.state == DebuggerState::Attached {
            lease.idle_deadline = Some(now.plus(self.idle_window_ms));
        }
    }

    /// The earliest idle deadline, if any.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.leases.values().filter_map(|l| l.idle_deadline).min()
    }

    /// Sessions that have a lease whose idle deadline has passed.
    #[must_use]
    pub fn due_sessions(&self, now: Millis) -> Vec<SessionKey> {
        let mut out: Vec<SessionKey> = self
            .leases
            .values()
            .filter(|l| l.idle_deadline.is_some_and(|d| d <= now))
            .map(|l| l.session.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Idle leases of `session` (or of every session) whose deadline passed: they move to
    /// `Detaching` and are returned for the caller to detach.
    pub fn handle_timeout(&mut self, session: Option<&SessionKey>, now: Millis) -> Vec<(SessionKey, TabHandle)> {
        let mut out = Vec::new();
        for (tab, lease) in &mut self.leases {
            let mine = session.is_none_or(|s| &lease.session == s);
            if mine && lease.refs == 0 && lease.idle_deadline.is_some_and(|d| d <= now) {
                lease.idle_deadline = None;
                lease.state = DebuggerState::Detaching;
                out.push((lease.session.clone(), *tab));
            }
        }
        out
    }

    /// Every unused lease of `session` (attached or with a failed detach) moves to `Detaching`
    /// and is returned: turn end, finalize and disposal detach them all, marked tabs included.
    pub fn begin_detach_all(&mut self, session: &SessionKey) -> Vec<TabHandle> {
        let mut out = Vec::new();
        for (tab, lease) in &mut self.leases {
            if &lease.session == session
                && lease.refs == 0
                && matches!(lease.state, DebuggerState::Attached | DebuggerState::DetachFailed)
            {
                lease.idle_deadline = None;
                lease.state = DebuggerState::Detaching;
                out.push(*tab);
            }
        }
        out
    }

    /// Move one tab's unused lease to `Detaching` (handoff, recovery retry). Returns whether a
    /// detach is now due.
    pub fn begin_detach(&mut self, tab: TabHandle) -> bool {
        match self.leases.get_mut(&tab) {
            Some(lease)
                if lease.refs == 0 && matches!(lease.state, DebuggerState::Attached | DebuggerState::DetachFailed) =>
            {
                lease.idle_deadline = None;
                lease.state = DebuggerState::Detaching;
                true
            }
            _ => false,
        }
    }

    /// The detach finished. Success (or a gone tab) removes the lease; failure leaves it
    /// `DetachFailed` for a retry.
    pub fn handle_detach_result(&mut self, tab: TabHandle, ok: bool) {
        let Some(lease) = self.leases.get_mut(&tab) else { return };
        if lease.state != DebuggerState::Detaching {
            return;
        }
        if ok {
            self.leases.remove(&tab);
        } else {
            lease.state = DebuggerState::DetachFailed;
        }
    }

    /// The debugger went away without a request (the user cancelled it, the tab closed, another
    /// client took it): clear only the debugger state. Returns whether there was a lease.
    pub fn handle_detached_externally(&mut self, tab: TabHandle) -> bool {
        self.leases.remove(&tab).is_some()
    }

    /// The tab changed hands (claimed by another session after its previous owner released it
    /// with a detach still pending): the attachment becomes the new owner's to detach.
    pub fn reassign(&mut self, tab: TabHandle, session: &SessionKey) {
        if let Some(lease) = self.leases.get_mut(&tab) {
            lease.session = session.clone();
        }
    }

    /// Leases of `session`.
    pub fn for_session<'a>(&'a self, session: &'a SessionKey) -> impl Iterator<Item = TabHandle> + 'a {
        self.leases.iter().filter(move |(_, l)| &l.session == session).map(|(t, _)| *t)
    }
}
