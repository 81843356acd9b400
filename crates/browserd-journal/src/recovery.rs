//! Recovery records: cleanup (close, release, debugger detach) that failed or whose outcome is
//! unknown, kept until a retry is confirmed by the browser, across broker restarts.
//!
//! At most one record is pending per (browser, tab, operation): recording the same cleanup again
//! counts another attempt on the existing record. Keys are the broker's durable names for the
//! session, the browser and the tab; a tab key must let the broker find the tab again after a
//! restart (the browser's own target id, not a process-local `t<N>` handle).

use std::fmt;

use rusqlite::{OptionalExtension, Row, params};

use crate::error::{JournalError, Result, corrupt_value, from_sqlite};
use crate::types::{Code, UnixMillis, stored_enum};
use crate::{Journal, Weight, write_tx_sql};

/// Longest session, browser or tab key, in bytes.
pub const KEY_MAX_LEN: usize = 256;
/// Longest stored error message, in bytes; longer messages are cut at a character boundary.
pub const MESSAGE_MAX_LEN: usize = 512;

/// A recovery record's id (never reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecoveryId(pub u64);

impl fmt::Display for RecoveryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}

stored_enum! {
    /// The cleanup to retry.
    pub enum CleanupOp {
        /// Close an agent-created tab.
        Close => "close",
        /// Release a claim or drop ownership metadata (the page stays).
        Release => "release",
        /// Detach the debugger from the tab.
        DetachDebugger => "detachDebugger",
    }
}

stored_enum! {
    /// How the last attempt ended.
    pub enum AttemptOutcome {
        /// It failed: the cleanup did not happen.
        Failed => "failed",
        /// Nobody knows whether it happened (e.g. the connection dropped mid-call).
        Unknown => "unknown",
    }
}

stored_enum! {
    /// Why a record stopped being pending.
    pub enum Resolution {
        /// A retry succeeded and the browser confirmed it.
        Confirmed => "confirmed",
        /// The browser reports the tab (or browser) gone, so there is nothing left to clean up.
        AlreadyGone => "alreadyGone",
        /// Given up on explicitly (by the user or an operator command).
        Abandoned => "abandoned",
    }
}

/// A record's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecoveryState {
    /// Still to be retried.
    Pending,
    /// Done, and how.
    Resolved(Resolution),
}

/// One failed or unknown cleanup attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanupFailure {
    /// Failed or unknown.
    pub outcome: AttemptOutcome,
    /// A stable code (e.g. `CONNECTION_LOST`).
    pub code: Code,
    /// A short human-readable message, cut to [`MESSAGE_MAX_LEN`] bytes. Put no page content in it.
    pub message: String,
}

/// A cleanup that has to be retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRecovery {
    /// The session the cleanup is done for.
    pub session: String,
    /// The browser (the broker's durable browser key).
    pub browser: String,
    /// The tab (a key the broker can find again after a restart).
    pub tab: String,
    /// What to retry.
    pub op: CleanupOp,
    /// The attempt that failed.
    pub failure: CleanupFailure,
}

/// A stored recovery record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryRecord {
    /// Its id.
    pub id: RecoveryId,
    /// The session the cleanup is done for.
    pub session: String,
    /// The browser.
    pub browser: String,
    /// The tab.
    pub tab: String,
    /// What to retry.
    pub op: CleanupOp,
    /// Pending or resolved.
    pub state: RecoveryState,
    /// Attempts that failed or ended unknown (at least 1).
    pub attempts: u32,
    /// How the last attempt ended.
    pub last_outcome: AttemptOutcome,
    /// The last attempt's code.
    pub last_code: Code,
    /// The last attempt's message.
    pub last_message: String,
    /// When the first attempt failed.
    pub created_at: UnixMillis,
    /// When the record last changed (last failed attempt, or resolution).
    pub updated_at: UnixMillis,
}

const COLUMNS: &str = "id, session, browser, tab, op, state, resolution, attempts, last_outcome, last_code, \
                       last_message, created_at, updated_at";

impl Journal {
    /// Records a failed or unknown cleanup. If a record for the same (browser, tab, op) is already
    /// pending, counts another attempt on it instead (its session stays the first one's).
    /// Returns the stored record.
    pub fn record_recovery(&mut self, new: &NewRecovery, now: UnixMillis) -> Result<RecoveryRecord> {
        for (what, key) in [("session key", &new.session), ("browser key", &new.browser), ("tab key", &new.tab)] {
            check_key(what, key)?;
        }
        let message = truncate(&new.failure.message);
        let path = self.path.clone();
        let sql = write_tx_sql(&path);
        let tx = self.write_tx(Weight::Critical)?;
        let existing: Option<i64> = tx
            .query_row(
                "SELECT id FROM recovery WHERE browser = ?1 AND tab = ?2 AND op = ?3 AND state = 'pending'",
                params![new.browser, new.tab, new.op.as_str()],
                |row| row.get(0),
            )
            .optional()
            .map_err(sql)?;
        let id = match existing {
            Some(id) => {
                tx.execute(
                    "UPDATE recovery SET attempts = attempts + 1, last_outcome = ?2, last_code = ?3,
                         last_message = ?4, updated_at = ?5 WHERE id = ?1",
                    params![id, new.failure.outcome.as_str(), new.failure.code.as_str(), message, now.to_sql()],
                )
                .map_err(sql)?;
                id
            }
            None => tx
                .query_row(
                    "INSERT INTO recovery (session, browser, tab, op, state, attempts, last_outcome, last_code,
                         last_message, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, 'pending', 1, ?5, ?6, ?7, ?8, ?8) RETURNING id",
                    params![
                        new.session,
                        new.browser,
                        new.tab,
                        new.op.as_str(),
                        new.failure.outcome.as_str(),
                        new.failure.code.as_str(),
                        message,
                        now.to_sql()
                    ],
                    |row| row.get(0),
                )
                .map_err(sql)?,
        };
        let record = read_one(&tx, &path, id)?;
        tx.commit().map_err(sql)?;
        record.ok_or(JournalError::UnknownRecovery { id: RecoveryId(u64::try_from(id).unwrap_or(0)) })
    }

    /// Counts one more failed or unknown retry of pending record `id`. Fails with
    /// [`JournalError::UnknownRecovery`] or [`JournalError::RecoveryResolved`].
    pub fn mark_recovery_attempt(
        &mut self,
        id: RecoveryId,
        failure: &CleanupFailure,
        now: UnixMillis,
    ) -> Result<RecoveryRecord> {
        let message = truncate(&failure.message);
        let path = self.path.clone();
        let sql = write_tx_sql(&path);
        let tx = self.write_tx(Weight::Routine)?;
        let changed = tx
            .execute(
                "UPDATE recovery SET attempts = attempts + 1, last_outcome = ?2, last_code = ?3, last_message = ?4,
                     updated_at = ?5 WHERE id = ?1 AND state = 'pending'",
                params![to_sql_id(id), failure.outcome.as_str(), failure.code.as_str(), message, now.to_sql()],
            )
            .map_err(sql)?;
        let record = read_one(&tx, &path, to_sql_id(id))?;
        tx.commit().map_err(sql)?;
        settled(id, changed, record)
    }

    /// Marks pending record `id` resolved. Fails with [`JournalError::UnknownRecovery`] or
    /// [`JournalError::RecoveryResolved`] (it was already resolved; nothing changes).
    pub fn resolve_recovery(
        &mut self,
        id: RecoveryId,
        resolution: Resolution,
        now: UnixMillis,
    ) -> Result<RecoveryRecord> {
        let path = self.path.clone();
        let sql = write_tx_sql(&path);
        let tx = self.write_tx(Weight::Routine)?;
        let changed = tx
            .execute(
                "UPDATE recovery SET state = 'resolved', resolution = ?2, updated_at = ?3
                 WHERE id = ?1 AND state = 'pending'",
                params![to_sql_id(id), resolution.as_str(), now.to_sql()],
            )
            .map_err(sql)?;
        let record = read_one(&tx, &path, to_sql_id(id))?;
        tx.commit().map_err(sql)?;
        settled(id, changed, record)
    }

    /// Resolves every pending record of one tab (e.g. the browser reports it closed). Returns the
    /// records it resolved, oldest first (none if nothing was pending).
    pub fn resolve_tab_recoveries(
        &mut self,
        browser: &str,
        tab: &str,
        resolution: Resolution,
        now: UnixMillis,
    ) -> Result<Vec<RecoveryRecord>> {
        let path = self.path.clone();
        let sql = write_tx_sql(&path);
        let tx = self.write_tx(Weight::Routine)?;
        let ids: Vec<i64> = {
            let mut stmt = tx
                .prepare(
                    "UPDATE recovery SET state = 'resolved', resolution = ?3, updated_at = ?4
                     WHERE browser = ?1 AND tab = ?2 AND state = 'pending' RETURNING id",
                )
                .map_err(sql)?;
            stmt.query_map(params![browser, tab, resolution.as_str(), now.to_sql()], |row| row.get(0))
                .map_err(sql)?
                .collect::<rusqlite::Result<_>>()
                .map_err(sql)?
        };
        let mut records = Vec::with_capacity(ids.len());
        for id in ids {
            records.extend(read_one(&tx, &path, id)?);
        }
        tx.commit().map_err(sql)?;
        records.sort_by_key(|record| record.id);
        Ok(records)
    }

    /// Record `id`, pending or resolved; `None` if there is none (or it was purged).
    pub fn recovery(&self, id: RecoveryId) -> Result<Option<RecoveryRecord>> {
        read_one(&self.conn, &self.path, to_sql_id(id))
    }

    /// Every pending record, oldest first.
    pub fn pending_recoveries(&self) -> Result<Vec<RecoveryRecord>> {
        self.query_records(&format!("SELECT {COLUMNS} FROM recovery WHERE state = 'pending' ORDER BY id"), "")
    }

    /// The pending records made for `session`, oldest first.
    pub fn pending_recoveries_for_session(&self, session: &str) -> Result<Vec<RecoveryRecord>> {
        self.query_records(
            &format!("SELECT {COLUMNS} FROM recovery WHERE state = 'pending' AND session = ?1 ORDER BY id"),
            session,
        )
    }

    /// The pending records of `browser`, oldest first (what to retry when that browser reconnects).
    pub fn pending_recoveries_for_browser(&self, browser: &str) -> Result<Vec<RecoveryRecord>> {
        self.query_records(
            &format!("SELECT {COLUMNS} FROM recovery WHERE state = 'pending' AND browser = ?1 ORDER BY id"),
            browser,
        )
    }

    /// Deletes resolved records last changed before `before`; returns how many.
    pub fn purge_resolved(&mut self, before: UnixMillis) -> Result<u64> {
        let path = self.path.clone();
        let sql = write_tx_sql(&path);
        let tx = self.write_tx(Weight::Routine)?;
        let removed = tx
            .execute("DELETE FROM recovery WHERE state = 'resolved' AND updated_at < ?1", params![before.to_sql()])
            .map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(removed as u64)
    }

    fn query_records(&self, query: &str, key: &str) -> Result<Vec<RecoveryRecord>> {
        let sql = |e| from_sqlite(&self.path, e);
        let mut stmt = self.conn.prepare_cached(query).map_err(sql)?;
        let rows = if query.contains("?1") { stmt.query(params![key]) } else { stmt.query([]) };
        let mut rows = rows.map_err(sql)?;
        let mut records = Vec::new();
        while let Some(row) = rows.next().map_err(sql)? {
            records.push(from_row(row, &self.path)?);
        }
        Ok(records)
    }
}

fn to_sql_id(id: RecoveryId) -> i64 {
    i64::try_from(id.0).unwrap_or(i64::MAX)
}

fn settled(id: RecoveryId, changed: usize, record: Option<RecoveryRecord>) -> Result<RecoveryRecord> {
    match (changed, record) {
        (_, None) => Err(JournalError::UnknownRecovery { id }),
        (0, Some(_)) => Err(JournalError::RecoveryResolved { id }),
        (_, Some(record)) => Ok(record),
    }
}

fn check_key(what: &'static str, key: &str) -> Result<()> {
    if key.is_empty() || key.len() > KEY_MAX_LEN || key.chars().any(char::is_control) {
        return Err(JournalError::InvalidInput {
            what,
            reason: format!("it must be 1 to {KEY_MAX_LEN} bytes without control characters, got {} bytes", key.len()),
        });
    }
    Ok(())
}

fn truncate(message: &str) -> &str {
    if message.len() <= MESSAGE_MAX_LEN {
        return message;
    }
    let mut end = MESSAGE_MAX_LEN;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    &message[..end]
}

fn read_one(conn: &rusqlite::Connection, path: &std::path::Path, id: i64) -> Result<Option<RecoveryRecord>> {
    let sql = |e| from_sqlite(path, e);
    let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM recovery WHERE id = ?1")).map_err(sql)?;
    let mut rows = stmt.query(params![id]).map_err(sql)?;
    match rows.next().map_err(sql)? {
        Some(row) => Ok(Some(from_row(row, path)?)),
        None => Ok(None),
    }
}

fn from_row(row: &Row<'_>, path: &std::path::Path) -> Result<RecoveryRecord> {
    let sql = |e| from_sqlite(path, e);
    let op: String = row.get(4).map_err(sql)?;
    let state: String = row.get(5).map_err(sql)?;
    let resolution: Option<String> = row.get(6).map_err(sql)?;
    let outcome: String = row.get(8).map_err(sql)?;
    let code: String = row.get(9).map_err(sql)?;
    let attempts: i64 = row.get(7).map_err(sql)?;
    let state = match (state.as_str(), resolution) {
        ("pending", None) => RecoveryState::Pending,
        ("resolved", Some(resolution)) => RecoveryState::Resolved(
            Resolution::from_name(&resolution).ok_or_else(|| corrupt_value(path, "resolution", &resolution))?,
        ),
        (state, _) => return Err(corrupt_value(path, "recovery state", state)),
    };
    Ok(RecoveryRecord {
        id: RecoveryId(u64::try_from(row.get::<_, i64>(0).map_err(sql)?).unwrap_or(0)),
        session: row.get(1).map_err(sql)?,
        browser: row.get(2).map_err(sql)?,
        tab: row.get(3).map_err(sql)?,
        op: CleanupOp::from_name(&op).ok_or_else(|| corrupt_value(path, "cleanup op", &op))?,
        state,
        attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
        last_outcome: AttemptOutcome::from_name(&outcome).ok_or_else(|| corrupt_value(path, "outcome", &outcome))?,
        last_code: Code::new(code.clone()).map_err(|_| corrupt_value(path, "code", &code))?,
        last_message: row.get(10).map_err(sql)?,
        created_at: UnixMillis::from_sql(row.get(11).map_err(sql)?),
        updated_at: UnixMillis::from_sql(row.get(12).map_err(sql)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_cut_at_a_character_boundary() {
        let message = "é".repeat(400);
        let cut = truncate(&message);
        assert!(cut.len() <= MESSAGE_MAX_LEN);
        assert_eq!(cut.len(), MESSAGE_MAX_LEN);
        assert_eq!(truncate("short"), "short");
    }
}
