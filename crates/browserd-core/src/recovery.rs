//! Recovery records: every close, release or detach that failed or has an unknown outcome.
//!
//! **Owner:** [`crate::lifecycle::Lifecycle`] (one [`RecoveryLog`] for all sessions).
//!
//! A record outlives its session (session switch, fork, disposal): it is retried by that
//! session's next operation, finalize or disposal, and, once the session is closed, by any later
//! operation of the runtime. A record is removed only when a retry is confirmed by the browser
//! (or the browser reports the tab closed).

use std::collections::{BTreeMap, VecDeque};

use crate::Millis;
use crate::error::{CoreError, ErrorKind};
use crate::provider::{SessionKey, TabHandle};

/// The cleanup action that has to be retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RecoveryAction {
    /// Close an agent-created tab.
    Close,
    /// Release a claim or drop ownership metadata (the page stays).
    Release,
    /// Detach the debugger.
    Detach,
}

impl RecoveryAction {
    /// Lower-case name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Close => "close",
            Self::Release => "release",
            Self::Detach => "detach",
        }
    }
}

/// One pending cleanup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryRecord {
    /// Unique id.
    pub id: u64,
    /// The session the cleanup is done for (its provider calls carry this session).
    pub session: SessionKey,
    /// The tab.
    pub tab: TabHandle,
    /// What to retry.
    pub action: RecoveryAction,
    /// Attempts so far (failed ones).
    pub attempts: u32,
    /// Whether the last failure left the outcome unknown (it may have happened).
    pub outcome_unknown: bool,
    /// The last error's kind (for the wire code).
    pub last_kind: ErrorKind,
    /// The last error message.
    pub last_error: String,
    /// When the first failure happened.
    pub created_at: Millis,
    /// When the last attempt failed.
    pub last_attempt_at: Millis,
}

/// First retry delay of a closed session's record when no operation asks for it (doubles per
/// attempt up to [`MAX_BACKOFF_MS`]).
pub const BASE_BACKOFF_MS: u64 = 500;
/// Longest delay between background retries of a closed session's record.
pub const MAX_BACKOFF_MS: u64 = 60_000;

impl RecoveryRecord {
    /// When a background retry is due (own-session operations retry regardless).
    #[must_use]
    pub fn next_retry_at(&self) -> Millis {
        let shift = self.attempts.saturating_sub(1).min(16);
        self.last_attempt_at.plus((BASE_BACKOFF_MS << shift).min(MAX_BACKOFF_MS))
    }
}

/// How many records dropped because their tab was gone are remembered (see [`RecoveryLog::resolved_gone`]).
const GONE_MEMORY: usize = 1024;

/// Every pending cleanup, at most one per (tab, action).
#[derive(Debug, Clone, Default)]
pub struct RecoveryLog {
    next_id: u64,
    records: BTreeMap<(TabHandle, RecoveryAction), RecoveryRecord>,
    /// The records dropped because the tab itself was gone (closed in the browser, or gone with a dead browser), newest
    /// last, at most [`GONE_MEMORY`]: a durable mirror resolves them `alreadyGone`, not confirmed.
    gone: VecDeque<(TabHandle, RecoveryAction)>,
}

impl RecoveryLog {
    /// An empty log.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Record a failed or unknown attempt (creates or updates the record).
    pub fn record_failure(
        &mut self,
        session: &SessionKey,
        tab: TabHandle,
        action: RecoveryAction,
        error: &CoreError,
        outcome_unknown: bool,
        now: Millis,
    ) -> &RecoveryRecord {
        let next_id = &mut self.next_id;
        let rec = self.records.entry((tab, action)).or_insert_with(|| {
            *next_id += 1;
            RecoveryRecord {
                id: *next_id,
                session: session.clone(),
                tab,
                action,
                attempts: 0,
                outcome_unknown,
                last_kind: error.kind.clone(),
                last_error: String::new(),
                created_at: now,
                last_attempt_at: now,
            }
        });
        rec.attempts += 1;
        rec.outcome_unknown = outcome_unknown;
        rec.last_kind = error.kind.clone();
        rec.last_error.clone_from(&error.message);
        rec.last_attempt_at = now;
        rec
    }

    /// The action was confirmed: drop its record.
    pub fn resolve(&mut self, tab: TabHandle, action: RecoveryAction) -> Option<RecoveryRecord> {
        self.records.remove(&(tab, action))
    }

    /// The tab is gone: drop every record of it (remembered as resolved because the tab was gone).
    pub fn resolve_tab(&mut self, tab: TabHandle) -> Vec<RecoveryRecord> {
        let keys: Vec<_> = self.records.keys().filter(|(t, _)| *t == tab).copied().collect();
        for key in &keys {
            if self.gone.len() == GONE_MEMORY {
                self.gone.pop_front();
            }
            self.gone.push_back(*key);
        }
        keys.into_iter().filter_map(|k| self.records.remove(&k)).collect()
    }

    /// The records (tab, action) dropped because the tab was gone, not because a retry was confirmed: the last
    /// [`GONE_MEMORY`] of them, oldest first.
    pub fn resolved_gone(&self) -> impl Iterator<Item = (TabHandle, RecoveryAction)> + '_ {
        self.gone.iter().copied()
    }

    /// Hand a record to another session (the tab changed hands); its provider calls then carry
    /// the new session.
    pub fn reassign(&mut self, tab: TabHandle, action: RecoveryAction, session: &SessionKey) {
        if let Some(rec) = self.records.get_mut(&(tab, action)) {
            rec.session = session.clone();
        }
    }

    /// The record for (tab, action).
    #[must_use]
    pub fn get(&self, tab: TabHandle, action: RecoveryAction) -> Option<&RecoveryRecord> {
        self.records.get(&(tab, action))
    }

    /// Every record.
    pub fn iter(&self) -> impl Iterator<Item = &RecoveryRecord> {
        self.records.values()
    }

    /// Records made for `session`.
    pub fn for_session<'a>(&'a self, session: &'a SessionKey) -> impl Iterator<Item = &'a RecoveryRecord> + 'a {
        self.records.values().filter(move |r| &r.session == session)
    }

    /// Number of records.
    #[must_use]
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}
