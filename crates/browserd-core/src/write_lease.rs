//! Per-tab write leases with strictly monotonic fencing tokens.
//!
//! **Owner:** [`crate::lifecycle::Lifecycle`] (one [`WriteLeases`] table for all sessions).
//!
//! **Invariant:** fencing is checked in exactly one function, [`WriteLeases::check`]. Tokens come
//! from one counter, so they strictly increase per tab (and globally); a token is never reused.

use std::collections::BTreeMap;

use crate::Millis;
use crate::error::{CoreError, ErrorKind};
use crate::provider::{FencingToken, SessionKey, TabHandle};

/// A held write lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteLease {
    /// The tab.
    pub tab: TabHandle,
    /// The session holding it.
    pub holder: SessionKey,
    /// Its fencing token.
    pub token: FencingToken,
    /// When it was granted.
    pub acquired_at: Millis,
}

/// Every write lease, one per tab at most.
#[derive(Debug, Clone, Default)]
pub struct WriteLeases {
    last_token: u64,
    held: BTreeMap<TabHandle, WriteLease>,
}

impl WriteLeases {
    /// An empty table.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Grant `session` the write lease of `tab`. Idempotent: the holder gets its current token
    /// back. Another holder is refused with [`ErrorKind::LeaseHeldByOther`].
    pub fn acquire(&mut self, session: &SessionKey, tab: TabHandle, now: Millis) -> Result<FencingToken, CoreError> {
        if let Some(lease) = self.held.get(&tab) {
            if &lease.holder == session {
                return Ok(lease.token);
            }
            return Err(CoreError::new(
                ErrorKind::LeaseHeldByOther { tab, holder: lease.holder.clone() },
                format!(
                    "session {} holds the write lease of tab {tab}; wait for it to finish or use another tab",
                    lease.holder
                ),
            ));
        }
        self.last_token += 1;
        let token = FencingToken(self.last_token);
        self.held.insert(tab, WriteLease { tab, holder: session.clone(), token, acquired_at: now });
        Ok(token)
    }

    /// Release `session`'s lease of `tab`. Idempotent; returns whether a lease was dropped.
    pub fn release(&mut self, session: &SessionKey, tab: TabHandle) -> bool {
        if self.held.get(&tab).is_some_and(|l| &l.holder == session) {
            self.held.remove(&tab);
            return true;
        }
        false
    }

    /// Drop whatever lease `tab` has (user stop, tab gone). The next grant gets a larger token.
    pub fn revoke(&mut self, tab: TabHandle) -> Option<WriteLease> {
        self.held.remove(&tab)
    }

    /// Drop every lease of `session`; returns the tabs.
    pub fn release_all(&mut self, session: &SessionKey) -> Vec<TabHandle> {
        let tabs: Vec<TabHandle> = self.held.values().filter(|l| &l.holder == session).map(|l| l.tab).collect();
        for tab in &tabs {
            self.held.remove(tab);
        }
        tabs
    }

    /// The current lease of `tab`.
    #[must_use]
    pub fn get(&self, tab: TabHandle) -> Option<&WriteLease> {
        self.held.get(&tab)
    }

    /// The one fencing check: `token` must be the current token of `session`'s lease on `tab`.
    pub fn check(&self, session: &SessionKey, tab: TabHandle, token: FencingToken) -> Result<(), CoreError> {
        match self.held.get(&tab) {
            Some(lease) if lease.token == token && &lease.holder == session => Ok(()),
            Some(lease) if &lease.holder != session => Err(CoreError::new(
                ErrorKind::LeaseHeldByOther { tab, holder: lease.holder.clone() },
                format!(
                    "session {} holds the write lease of tab {tab}; acquire your own lease when it is free",
                    lease.holder
                ),
            )),
            current => Err(CoreError::new(
                ErrorKind::StaleFencingToken { tab, presented: token, current: current.map(|l| l.token) },
                format!(
                    "fencing token {} for tab {tab} is stale; acquire a new write lease and observe again",
                    token.0
                ),
            )),
        }
    }
}
