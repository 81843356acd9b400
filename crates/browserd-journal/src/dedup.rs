//! The de-duplication log (BRIEF §6): one row per request id with its payload hash, dispatch
//! state and expiry, so a retried request is answered from the log instead of acting twice.
//!
//! # The protocol
//! 1. [`Journal::begin`] with the request id and payload hash. [`Begin::New`] hands out a
//!    [`Pending`] ticket; a known id answers [`Begin::Duplicate`] with its state (and result once
//!    completed); the same id with another payload answers [`Begin::PayloadMismatch`].
//! 2. [`Journal::mark_dispatched`] consumes the ticket **before** any input is sent and returns a
//!    [`Dispatched`] ticket; its commit is fsynced by default (see [`crate::Durability`]). If it
//!    fails, send nothing.
//! 3. [`Journal::complete`] consumes that ticket with the result. An action that ends before
//!    dispatch (policy denied, stale target) uses [`Journal::complete_undispatched`], or
//!    [`Journal::abandon`] to forget the request so the same id may be tried again.
//!
//! # Why nothing is replayed by accident
//! Tickets are the only way to move a row forward; they cannot be built, cloned or persisted
//! outside this crate, and each is bound to the journal opening that issued it. A duplicate gets
//! a state, never a ticket. When the journal is opened again after a crash, every row left
//! `dispatched` becomes `unknown` for good: no call turns it back into a ticket, and it expires
//! like any settled row. Rows left `received` (never dispatched) become retryable: the next
//! `begin` with the same payload issues a fresh ticket, since no input ever went out.
//!
//! Expiry applies to settled rows (completed, unknown, retryable) only; an in-flight row lives
//! until it settles or the journal is reopened. Once a settled row has expired and is purged, its
//! request id is new again: choose a TTL longer than any client's retry horizon.

use std::time::Duration;

use rusqlite::{OptionalExtension, params};

use crate::error::{JournalError, Result, corrupt_value, from_sqlite};
use crate::hash::PayloadHash;
use crate::types::{Code, Dispatch, OpaqueId, Outcome, UnixMillis};
use crate::{Journal, Weight, write_tx_sql};

/// Longest request id, in bytes.
pub const REQUEST_ID_MAX_LEN: usize = 256;

/// Settled rows removed per batch by the opportunistic purge in [`Journal::begin`].
const BEGIN_PURGE_BATCH: i64 = 64;

/// The compact result kept for duplicates: outcome, dispatch, code and trace id, no page content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DedupResult {
    /// How the action ended.
    pub outcome: Outcome,
    /// How far its input got.
    pub dispatch: Dispatch,
    /// Its code, if any.
    pub code: Option<Code>,
    /// Its trace id, to find the original call in the audit ring.
    pub trace: Option<OpaqueId>,
}

/// A request's state in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DedupState {
    /// In flight in this process, not dispatched yet.
    Received,
    /// In flight in this process, input sent (or about to be).
    Dispatched,
    /// Finished, with its result.
    Completed(DedupResult),
    /// Dispatched by a process that stopped before completing it: it may or may not have taken
    /// effect, and it is never dispatched again.
    Unknown,
    /// Received by a process that stopped before dispatching it: the next [`Journal::begin`] with
    /// the same payload starts it afresh. [`Journal::begin`] never answers with this state.
    Interrupted,
}

/// The answer of [`Journal::begin`].
#[derive(Debug)]
#[must_use = "a New ticket must be dispatched, completed or abandoned; a duplicate must be answered"]
pub enum Begin {
    /// A new request (or one interrupted before dispatch): go ahead, with this ticket.
    New(Pending),
    /// A request already seen with the same payload: answer from its state, do not act.
    Duplicate(DedupState),
    /// The same request id was seen with another payload: refuse the request.
    PayloadMismatch,
}

/// The ticket of a received, undispatched request. Only [`Journal::begin`] makes one.
#[derive(Debug)]
#[must_use = "call mark_dispatched before sending input, or complete_undispatched / abandon"]
pub struct Pending {
    request_id: String,
    incarnation: i64,
}

/// The ticket of a dispatched request. Only [`Journal::mark_dispatched`] makes one.
#[derive(Debug)]
#[must_use = "call complete once the action's result is known"]
pub struct Dispatched {
    request_id: String,
    incarnation: i64,
}

impl Pending {
    /// The request id.
    #[must_use]
    pub fn request_id(&self) -> &str {
        &self.request_id
    }
}

impl Dispatched {
    /// The request id.
    #[must_use]
    pub fn request_id(&self) -> &str {
        &self.request_id
    }
}

impl Journal {
    /// Starts request `request_id` with payload hash `hash` at `now`; its row expires `ttl` after
    /// it settles at the earliest (`now + ttl`). Also purges a small batch of expired settled rows.
    pub fn begin(&mut self, request_id: &str, hash: PayloadHash, now: UnixMillis, ttl: Duration) -> Result<Begin> {
        check_request_id(request_id)?;
        let incarnation = self.incarnation();
        let path = self.path.clone();
        let sql = write_tx_sql(&path);
        let tx = self.write_tx(Weight::Routine)?;
        tx.execute(
            "DELETE FROM dedup WHERE request_id IN (
                 SELECT request_id FROM dedup
                 WHERE expires_at <= ?1 AND state IN ('completed', 'unknown', 'abandoned') LIMIT ?2)",
            params![now.to_sql(), BEGIN_PURGE_BATCH],
        )
        .map_err(sql)?;
        let row: Option<(Vec<u8>, String, i64)> = tx
            .query_row(
                "SELECT payload_hash, state, expires_at FROM dedup WHERE request_id = ?1",
                params![request_id],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .optional()
            .map_err(sql)?;
        let expires_at = now.saturating_add(ttl).to_sql();
        let answer = match row {
            Some((_, state, row_expiry)) if is_settled(&state) && row_expiry <= now.to_sql() => {
                tx.execute("DELETE FROM dedup WHERE request_id = ?1", params![request_id]).map_err(sql)?;
                insert_received(&tx, request_id, hash, incarnation, now, expires_at).map_err(sql)?;
                Begin::New(Pending { request_id: request_id.to_owned(), incarnation })
            }
            None => {
                insert_received(&tx, request_id, hash, incarnation, now, expires_at).map_err(sql)?;
                Begin::New(Pending { request_id: request_id.to_owned(), incarnation })
            }
            Some((stored, _, _)) if stored.as_slice() != hash.as_bytes() => Begin::PayloadMismatch,
            Some((_, state, _)) if state == "abandoned" => {
                tx.execute(
                    "UPDATE dedup SET state = 'received', incarnation = ?2, received_at = ?3, expires_at = ?4
                     WHERE request_id = ?1",
                    params![request_id, incarnation, now.to_sql(), expires_at],
                )
                .map_err(sql)?;
                Begin::New(Pending { request_id: request_id.to_owned(), incarnation })
            }
            Some(_) => {
                let (_, state) = read_state(&tx, &path, request_id)?
                    .ok_or_else(|| corrupt_value(&path, "missing de-duplication row", request_id))?;
                Begin::Duplicate(state)
            }
        };
        tx.commit().map_err(sql)?;
        Ok(answer)
    }

    /// Marks the request dispatched. Call it **before** sending any input; if it fails, send none.
    /// Fails with [`JournalError::NotInFlight`] if the row was reconciled by another opening.
    pub fn mark_dispatched(&mut self, pending: Pending, now: UnixMillis) -> Result<Dispatched> {
        let changed = self.settle(
            Weight::Critical,
            "UPDATE dedup SET state = 'dispatched', dispatched_at = ?3
             WHERE request_id = ?1 AND incarnation = ?2 AND state = 'received'",
            params![pending.request_id, pending.incarnation, now.to_sql()],
        )?;
        if changed == 0 {
            return Err(JournalError::NotInFlight { request_id: pending.request_id });
        }
        Ok(Dispatched { request_id: pending.request_id, incarnation: pending.incarnation })
    }

    /// Records the result of a dispatched request; later duplicates get it back.
    pub fn complete(&mut self, dispatched: Dispatched, result: &DedupResult, now: UnixMillis) -> Result<()> {
        let changed = self.settle(
            Weight::Routine,
            "UPDATE dedup SET state = 'completed', outcome = ?3, dispatch = ?4, code = ?5, trace = ?6, completed_at = ?7
             WHERE request_id = ?1 AND incarnation = ?2 AND state = 'dispatched'",
            params![
                dispatched.request_id,
                dispatched.incarnation,
                result.outcome.as_str(),
                result.dispatch.as_str(),
                result.code.as_ref().map(Code::as_str),
                result.trace.as_ref().map(OpaqueId::as_str),
                now.to_sql()
            ],
        )?;
        if changed == 0 {
            return Err(JournalError::NotInFlight { request_id: dispatched.request_id });
        }
        Ok(())
    }

    /// Records the result of a request that ended before any input was sent (its `dispatch` must
    /// be [`Dispatch::NotDispatched`]); later duplicates get the same answer.
    pub fn complete_undispatched(&mut self, pending: Pending, result: &DedupResult, now: UnixMillis) -> Result<()> {
        if result.dispatch != Dispatch::NotDispatched {
            return Err(JournalError::InvalidInput {
                what: "undispatched result",
                reason: format!(
                    "its dispatch is {}, but the request was never marked dispatched; call mark_dispatched before \
                     sending input",
                    result.dispatch
                ),
            });
        }
        let changed = self.settle(
            Weight::Routine,
            "UPDATE dedup SET state = 'completed', outcome = ?3, dispatch = ?4, code = ?5, trace = ?6, completed_at = ?7
             WHERE request_id = ?1 AND incarnation = ?2 AND state = 'received'",
            params![
                pending.request_id,
                pending.incarnation,
                result.outcome.as_str(),
                result.dispatch.as_str(),
                result.code.as_ref().map(Code::as_str),
                result.trace.as_ref().map(OpaqueId::as_str),
                now.to_sql()
            ],
        )?;
        if changed == 0 {
            return Err(JournalError::NotInFlight { request_id: pending.request_id });
        }
        Ok(())
    }

    /// Forgets an undispatched request, so the same request id can start again (e.g. it was
    /// refused by back-pressure and the client will retry).
    pub fn abandon(&mut self, pending: Pending) -> Result<()> {
        let changed = self.settle(
            Weight::Routine,
            "DELETE FROM dedup WHERE request_id = ?1 AND incarnation = ?2 AND state = 'received'",
            params![pending.request_id, pending.incarnation],
        )?;
        if changed == 0 {
            return Err(JournalError::NotInFlight { request_id: pending.request_id });
        }
        Ok(())
    }

    /// The stored payload hash and state of `request_id`, for inspection; `None` if unknown.
    pub fn dedup_state(&self, request_id: &str) -> Result<Option<(PayloadHash, DedupState)>> {
        read_state(&self.conn, &self.path, request_id)
    }

    /// Deletes every settled row that expired at or before `now`, in short transactions;
    /// returns how many.
    pub fn purge_expired(&mut self, now: UnixMillis) -> Result<u64> {
        let mut removed = 0;
        loop {
            let batch = self.settle(
                Weight::Routine,
                "DELETE FROM dedup WHERE request_id IN (
                     SELECT request_id FROM dedup
                     WHERE expires_at <= ?1 AND state IN ('completed', 'unknown', 'abandoned') LIMIT 512)",
                params![now.to_sql()],
            )?;
            removed += batch as u64;
            if batch < 512 {
                return Ok(removed);
            }
        }
    }

    /// This opening's incarnation, as stored.
    fn incarnation(&self) -> i64 {
        i64::try_from(self.report.incarnation).unwrap_or(i64::MAX)
    }

    /// Runs one write statement in its own immediate transaction; returns the rows changed.
    fn settle(&mut self, weight: Weight, statement: &str, params: impl rusqlite::Params) -> Result<usize> {
        let path = self.path.clone();
        let sql = write_tx_sql(&path);
        let tx = self.write_tx(weight)?;
        let changed = tx.execute(statement, params).map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(changed)
    }
}

fn is_settled(state: &str) -> bool {
    matches!(state, "completed" | "unknown" | "abandoned")
}

fn check_request_id(request_id: &str) -> Result<()> {
    if request_id.is_empty() || request_id.len() > REQUEST_ID_MAX_LEN || request_id.chars().any(char::is_control) {
        return Err(JournalError::InvalidInput {
            what: "request id",
            reason: format!(
                "it must be 1 to {REQUEST_ID_MAX_LEN} bytes without control characters, got {} bytes",
                request_id.len()
            ),
        });
    }
    Ok(())
}

fn insert_received(
    tx: &rusqlite::Transaction<'_>,
    request_id: &str,
    hash: PayloadHash,
    incarnation: i64,
    now: UnixMillis,
    expires_at: i64,
) -> rusqlite::Result<usize> {
    tx.execute(
        "INSERT INTO dedup (request_id, payload_hash, state, incarnation, received_at, expires_at)
         VALUES (?1, ?2, 'received', ?3, ?4, ?5)",
        params![request_id, hash.as_bytes(), incarnation, now.to_sql(), expires_at],
    )
}

fn read_state(
    conn: &rusqlite::Connection,
    path: &std::path::Path,
    request_id: &str,
) -> Result<Option<(PayloadHash, DedupState)>> {
    type Raw = (Vec<u8>, String, Option<String>, Option<String>, Option<String>, Option<String>);
    let row: Option<Raw> = conn
        .query_row(
            "SELECT payload_hash, state, outcome, dispatch, code, trace FROM dedup WHERE request_id = ?1",
            params![request_id],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?)),
        )
        .optional()
        .map_err(|e| from_sqlite(path, e))?;
    let Some((hash, state, outcome, dispatch, code, trace)) = row else {
        return Ok(None);
    };
    let hash = PayloadHash::from_slice(&hash).ok_or_else(|| corrupt_value(path, "payload hash", "(wrong length)"))?;
    let state = match state.as_str() {
        "received" => DedupState::Received,
        "dispatched" => DedupState::Dispatched,
        "unknown" => DedupState::Unknown,
        "abandoned" => DedupState::Interrupted,
        "completed" => {
            let outcome = outcome.unwrap_or_default();
            let dispatch = dispatch.unwrap_or_default();
            DedupState::Completed(DedupResult {
                outcome: Outcome::from_name(&outcome).ok_or_else(|| corrupt_value(path, "outcome", &outcome))?,
                dispatch: Dispatch::from_name(&dispatch).ok_or_else(|| corrupt_value(path, "dispatch", &dispatch))?,
                code: code
                    .map(|code| Code::new(code.clone()).map_err(|_| corrupt_value(path, "code", &code)))
                    .transpose()?,
                trace: trace
                    .map(|trace| OpaqueId::new(trace.clone()).map_err(|_| corrupt_value(path, "trace id", &trace)))
                    .transpose()?,
            })
        }
        other => return Err(corrupt_value(path, "de-duplication state", other)),
    };
    Ok(Some((hash, state)))
}
