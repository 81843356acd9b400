//! The audit metadata ring (BRIEF §8): what was done, to which handles, with which result and
//! timings, under which policy decision — never page content.
//!
//! **Invariant:** [`AuditRecord`] cannot hold free text. Its fields are closed enums, validated
//! [`OpaqueId`]s and [`Code`]s, an [`Origin`] (scheme, host and port only) and numbers. Page text,
//! URL paths and queries, form values and screenshots have no field to go in.
//!
//! The ring is bounded by age and by an approximate size: each row is charged
//! [`ROW_OVERHEAD_BYTES`] plus the length of its strings (at most about 1.2 KiB), and a trigger
//! keeps the total. Every insert also removes, in the same transaction, at most
//! [`AuditLimits::prune_batch`] rows past the age bound and at most as many of the oldest rows
//! while the ring is over the size bound; [`Journal::prune`] finishes the job. The charge
//! overestimates SQLite's real use: 4 MiB charged took 2.9 MiB of database in `examples/cycles.rs`.

use std::time::Duration;

use rusqlite::{Row, params};

use crate::error::{Result, corrupt_value, from_sqlite};
use crate::types::{Code, Dispatch, OpaqueId, Origin, Outcome, UnixMillis, stored_enum};
use crate::{Journal, Weight, write_tx_sql};

/// The fixed part of a row's charged size: row id, record header, numbers and index entries.
pub const ROW_OVERHEAD_BYTES: u64 = 160;

/// Bounds of the audit ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditLimits {
    /// Rows older than this are removed (default 24 h).
    pub max_age: Duration,
    /// Rows beyond this approximate size are removed, oldest first (default 20 MB).
    pub max_bytes: u64,
    /// Most rows removed by one insert (default 64).
    pub prune_batch: u32,
}

impl Default for AuditLimits {
    fn default() -> Self {
        Self { max_age: Duration::from_secs(24 * 60 * 60), max_bytes: 20 * 1024 * 1024, prune_batch: 64 }
    }
}

stored_enum! {
    /// What kind of thing happened.
    pub enum AuditAction {
        /// A session was opened or re-attached.
        SessionOpen => "session.open",
        /// A session was closed or disposed.
        SessionClose => "session.close",
        /// A turn began.
        TurnBegin => "turn.begin",
        /// A turn ended (turn-end cleanup).
        TurnEnd => "turn.end",
        /// A task was finalized.
        TaskFinalize => "task.finalize",
        /// The context was reset.
        ContextReset => "context.reset",
        /// A tab was opened or claimed.
        TabOpen => "tab.open",
        /// A tab was closed or released.
        TabClose => "tab.close",
        /// A page was observed.
        Observe => "observe",
        /// An action was performed (see [`AuditRecord::input`]).
        Act => "act",
        /// A batch ran.
        Batch => "batch",
        /// A tab was marked (deliverable, handoff, ...).
        Mark => "mark",
        /// Cleanup ran.
        Cleanup => "cleanup",
        /// The user pressed stop.
        Stop => "stop",
        /// A tab was handed to the user.
        Handoff => "handoff",
        /// A screenshot was taken (the image is not kept here).
        Screenshot => "screenshot",
        /// A download finished (the receipt is not kept here).
        Download => "download",
        /// A write lease was granted.
        LeaseGrant => "lease.grant",
        /// A write lease was released.
        LeaseRelease => "lease.release",
        /// A write lease was revoked.
        LeaseRevoke => "lease.revoke",
        /// The debugger was attached.
        DebuggerAttach => "debugger.attach",
        /// The debugger was detached.
        DebuggerDetach => "debugger.detach",
        /// An approval was asked for or answered.
        Approval => "approval",
        /// A recovery record was retried.
        Recovery => "recovery",
        /// A browser connected.
        BrowserConnect => "browser.connect",
        /// A browser disconnected.
        BrowserDisconnect => "browser.disconnect",
        /// Script was evaluated in a page (advanced tier; neither the script nor its value is kept here).
        Evaluate => "evaluate",
        /// Console messages were read (advanced tier; the messages are not kept here).
        ConsoleRead => "console.read",
        /// Network requests were read (advanced tier; the URLs are not kept here).
        NetworkRead => "network.read",
        /// A raw protocol command was sent (advanced tier; its parameters are not kept here).
        RawProtocol => "cdp",
    }
}

stored_enum! {
    /// The kind of input an [`AuditAction::Act`] sent.
    pub enum InputKind {
        /// Click.
        Click => "click",
        /// Double click.
        DoubleClick => "doubleClick",
        /// Hover.
        Hover => "hover",
        /// Type text (the text is not kept).
        Type => "type",
        /// Press keys.
        Press => "press",
        /// Select an option.
        Select => "select",
        /// Check or uncheck.
        Check => "check",
        /// Scroll.
        Scroll => "scroll",
        /// Drag.
        Drag => "drag",
        /// Upload a file (the path is not kept).
        Upload => "upload",
        /// Navigate (the URL's origin may be kept in [`AuditRecord::origin`]).
        Navigate => "navigate",
        /// History back or forward.
        History => "history",
        /// Reload.
        Reload => "reload",
        /// Answer a dialog.
        Dialog => "dialog",
        /// Wait for a condition.
        Wait => "wait",
    }
}

stored_enum! {
    /// The policy decision taken for the action.
    pub enum PolicyDecision {
        /// Allowed by policy.
        Allowed => "allowed",
        /// Denied by policy.
        Denied => "denied",
        /// An approval was required and requested.
        ApprovalRequired => "approvalRequired",
        /// The user approved.
        Approved => "approved",
        /// The user refused.
        ApprovalRefused => "approvalRefused",
    }
}

/// Per-phase timings in milliseconds (BRIEF §6); absent phases are `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Timings {
    /// The whole call.
    pub total_ms: Option<u32>,
    /// The policy check.
    pub policy_ms: Option<u32>,
    /// Waiting in the lease queue.
    pub queue_ms: Option<u32>,
    /// Resolving the target.
    pub resolve_ms: Option<u32>,
    /// Actionability checks.
    pub actionability_ms: Option<u32>,
    /// Dispatching input.
    pub dispatch_ms: Option<u32>,
    /// Waiting for the expectation / settle window.
    pub settle_ms: Option<u32>,
    /// Taking the observation.
    pub observe_ms: Option<u32>,
}

/// One audit entry. Build it with [`AuditRecord::new`] and set the fields that apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// When it happened.
    pub at: UnixMillis,
    /// What happened.
    pub action: AuditAction,
    /// For [`AuditAction::Act`]: the kind of input.
    pub input: Option<InputKind>,
    /// The session.
    pub session: Option<OpaqueId>,
    /// The browser.
    pub browser: Option<OpaqueId>,
    /// The tab.
    pub tab: Option<OpaqueId>,
    /// The client's request id.
    pub request: Option<OpaqueId>,
    /// The trace id.
    pub trace: Option<OpaqueId>,
    /// The page's origin (no path, no query).
    pub origin: Option<Origin>,
    /// How it ended.
    pub outcome: Option<Outcome>,
    /// How far input got.
    pub dispatch: Option<Dispatch>,
    /// Its code.
    pub code: Option<Code>,
    /// The policy decision.
    pub policy: Option<PolicyDecision>,
    /// Per-phase timings.
    pub timings: Timings,
}

impl AuditRecord {
    /// A record of `action` at `at` with every other field empty.
    #[must_use]
    pub fn new(at: UnixMillis, action: AuditAction) -> Self {
        Self {
            at,
            action,
            input: None,
            session: None,
            browser: None,
            tab: None,
            request: None,
            trace: None,
            origin: None,
            outcome: None,
            dispatch: None,
            code: None,
            policy: None,
            timings: Timings::default(),
        }
    }

    /// The size this record is charged against [`AuditLimits::max_bytes`].
    #[must_use]
    pub fn charged_bytes(&self) -> u64 {
        let ids = [&self.session, &self.browser, &self.tab, &self.request, &self.trace];
        let strings = ids.iter().filter_map(|id| id.as_ref().map(|id| id.as_str().len())).sum::<usize>()
            + self.origin.as_ref().map_or(0, |origin| origin.as_str().len())
            + self.code.as_ref().map_or(0, |code| code.as_str().len())
            + self.action.as_str().len();
        ROW_OVERHEAD_BYTES + strings as u64
    }
}

/// A stored audit row's id (increasing with insertion order, never reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AuditId(pub u64);

/// A stored audit row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// Its id.
    pub id: AuditId,
    /// Its content.
    pub record: AuditRecord,
}

/// The ring's current extent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditStats {
    /// Rows kept.
    pub rows: u64,
    /// Their charged size in bytes (see [`AuditRecord::charged_bytes`]).
    pub approx_bytes: u64,
    /// The oldest row's time.
    pub oldest: Option<UnixMillis>,
}

const COLUMNS: &str = "id, at, action, input, session, browser, tab, request, trace, origin, outcome, dispatch, \
                       code, policy, total_ms, policy_ms, queue_ms, resolve_ms, actionability_ms, dispatch_ms, \
                       settle_ms, observe_ms";

impl Journal {
    /// Appends `record` to the ring and, in the same transaction, removes at most
    /// [`AuditLimits::prune_batch`] rows older than [`AuditLimits::max_age`] before `record.at`
    /// and at most as many of the oldest rows while the ring is over [`AuditLimits::max_bytes`].
    pub fn audit(&mut self, record: &AuditRecord) -> Result<AuditId> {
        let limits = self.config.audit;
        let path = self.path.clone();
        let sql = write_tx_sql(&path);
        let tx = self.write_tx(Weight::Routine)?;
        let id: i64 = tx
            .query_row(
                &format!(
                    "INSERT INTO audit ({}, cost)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)
                     RETURNING id",
                    &COLUMNS["id, ".len()..]
                ),
                params![
                    record.at.to_sql(),
                    record.action.as_str(),
                    record.input.map(InputKind::as_str),
                    record.session.as_ref().map(OpaqueId::as_str),
                    record.browser.as_ref().map(OpaqueId::as_str),
                    record.tab.as_ref().map(OpaqueId::as_str),
                    record.request.as_ref().map(OpaqueId::as_str),
                    record.trace.as_ref().map(OpaqueId::as_str),
                    record.origin.as_ref().map(Origin::as_str),
                    record.outcome.map(Outcome::as_str),
                    record.dispatch.map(Dispatch::as_str),
                    record.code.as_ref().map(Code::as_str),
                    record.policy.map(PolicyDecision::as_str),
                    record.timings.total_ms,
                    record.timings.policy_ms,
                    record.timings.queue_ms,
                    record.timings.resolve_ms,
                    record.timings.actionability_ms,
                    record.timings.dispatch_ms,
                    record.timings.settle_ms,
                    record.timings.observe_ms,
                    i64::try_from(record.charged_bytes()).unwrap_or(i64::MAX),
                ],
                |row| row.get(0),
            )
            .map_err(&sql)?;
        prune_batch(&tx, limits, record.at, id).map_err(&sql)?;
        tx.commit().map_err(sql)?;
        Ok(AuditId(u64::try_from(id).unwrap_or(0)))
    }

    /// The newest `limit` rows, newest first.
    pub fn audit_recent(&self, limit: u32) -> Result<Vec<AuditEntry>> {
        let sql = |e| from_sqlite(&self.path, e);
        let mut stmt =
            self.conn.prepare_cached(&format!("SELECT {COLUMNS} FROM audit ORDER BY id DESC LIMIT ?1")).map_err(sql)?;
        let mut rows = stmt.query(params![limit]).map_err(sql)?;
        let mut entries = Vec::new();
        while let Some(row) = rows.next().map_err(sql)? {
            entries.push(entry_from_row(row, &self.path)?);
        }
        Ok(entries)
    }

    /// The ring's row count, charged size and oldest time.
    pub fn audit_stats(&self) -> Result<AuditStats> {
        let (rows, bytes, oldest): (i64, i64, Option<i64>) = self
            .conn
            .query_row(
                "SELECT (SELECT count(*) FROM audit), (SELECT value FROM meta WHERE key = 'audit_bytes'),
                        (SELECT min(at) FROM audit)",
                [],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .map_err(|e| from_sqlite(&self.path, e))?;
        Ok(AuditStats {
            rows: u64::try_from(rows).unwrap_or(0),
            approx_bytes: u64::try_from(bytes).unwrap_or(0),
            oldest: oldest.map(UnixMillis::from_sql),
        })
    }

    /// Removes every row past the age bound (relative to `now`) or the size bound, one batch per
    /// transaction; returns how many.
    pub fn prune_audit(&mut self, now: UnixMillis) -> Result<u64> {
        let limits = self.config.audit;
        let path = self.path.clone();
        let sql = write_tx_sql(&path);
        let mut removed = 0;
        loop {
            let tx = self.write_tx(Weight::Routine)?;
            let batch = prune_batch(&tx, limits, now, i64::MAX).map_err(&sql)?;
            tx.commit().map_err(&sql)?;
            removed += batch;
            if batch == 0 {
                return Ok(removed);
            }
        }
    }
}

/// The newest `limit` audit rows of the journal at `path`, newest first, read through a read-only connection that
/// takes no lock: it works while a broker holds the journal (WAL lets readers in) and when none runs (`browserd
/// diagnose`). Never creates or changes the file.
pub fn read_recent_audit(path: &std::path::Path, limit: u32) -> Result<Vec<AuditEntry>> {
    let sql = |e| from_sqlite(path, e);
    let conn = rusqlite::Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql)?;
    conn.busy_timeout(Duration::from_secs(2)).map_err(sql)?;
    let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM audit ORDER BY id DESC LIMIT ?1")).map_err(sql)?;
    let mut rows = stmt.query(params![limit]).map_err(sql)?;
    let mut entries = Vec::new();
    while let Some(row) = rows.next().map_err(sql)? {
        entries.push(entry_from_row(row, path)?);
    }
    Ok(entries)
}

/// Removes at most one batch of too-old rows and one batch of over-size rows (oldest first, never
/// row `keep` or newer). Returns how many rows it removed.
fn prune_batch(
    tx: &rusqlite::Transaction<'_>,
    limits: AuditLimits,
    now: UnixMillis,
    keep: i64,
) -> rusqlite::Result<u64> {
    let batch = i64::from(limits.prune_batch.max(1));
    let cutoff = now.saturating_sub(limits.max_age).to_sql();
    let mut removed = tx.execute(
        "DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < ?1 AND id < ?2 ORDER BY at LIMIT ?3)",
        params![cutoff, keep, batch],
    )? as u64;
    let max_bytes = i64::try_from(limits.max_bytes).unwrap_or(i64::MAX);
    let bytes: i64 = tx.query_row("SELECT value FROM meta WHERE key = 'audit_bytes'", [], |row| row.get(0))?;
    if bytes > max_bytes {
        // Remove the oldest rows, up to one batch, until the ring fits.
        removed += tx.execute(
            "DELETE FROM audit WHERE id IN (
                 SELECT id FROM (
                     SELECT id, cost, sum(cost) OVER (ORDER BY id) AS freed
                     FROM (SELECT id, cost FROM audit WHERE id < ?1 ORDER BY id LIMIT ?2))
                 WHERE freed - cost < ?3)",
            params![keep, batch, bytes - max_bytes],
        )? as u64;
    }
    Ok(removed)
}

fn entry_from_row(row: &Row<'_>, path: &std::path::Path) -> Result<AuditEntry> {
    let sql = |e| from_sqlite(path, e);
    let text = |index: usize| -> Result<Option<String>> { row.get(index).map_err(sql) };
    let checked = |index: usize, what: &str, parse: &dyn Fn(&str) -> Option<()>| -> Result<Option<String>> {
        match text(index)? {
            Some(value) if parse(&value).is_none() => Err(corrupt_value(path, what, &value)),
            other => Ok(other),
        }
    };
    let id_at = |index: usize, what: &str| -> Result<Option<OpaqueId>> {
        Ok(checked(index, what, &|v| OpaqueId::new(v).ok().map(drop))?.and_then(|v| OpaqueId::new(v).ok()))
    };
    let ms = |index: usize| -> Result<Option<u32>> { row.get(index).map_err(sql) };
    let action: String = row.get(2).map_err(sql)?;
    let record = AuditRecord {
        at: UnixMillis::from_sql(row.get(1).map_err(sql)?),
        action: AuditAction::from_name(&action).ok_or_else(|| corrupt_value(path, "audit action", &action))?,
        input: checked(3, "input kind", &|v| InputKind::from_name(v).map(drop))?.and_then(|v| InputKind::from_name(&v)),
        session: id_at(4, "session id")?,
        browser: id_at(5, "browser id")?,
        tab: id_at(6, "tab id")?,
        request: id_at(7, "request id")?,
        trace: id_at(8, "trace id")?,
        origin: checked(9, "origin", &|v| Origin::from_url(v).map(drop))?.and_then(|v| Origin::from_url(&v)),
        outcome: checked(10, "outcome", &|v| Outcome::from_name(v).map(drop))?.and_then(|v| Outcome::from_name(&v)),
        dispatch: checked(11, "dispatch", &|v| Dispatch::from_name(v).map(drop))?.and_then(|v| Dispatch::from_name(&v)),
        code: checked(12, "code", &|v| Code::new(v).ok().map(drop))?.and_then(|v| Code::new(v).ok()),
        policy: checked(13, "policy decision", &|v| PolicyDecision::from_name(v).map(drop))?
            .and_then(|v| PolicyDecision::from_name(&v)),
        timings: Timings {
            total_ms: ms(14)?,
            policy_ms: ms(15)?,
            queue_ms: ms(16)?,
            resolve_ms: ms(17)?,
            actionability_ms: ms(18)?,
            dispatch_ms: ms(19)?,
            settle_ms: ms(20)?,
            observe_ms: ms(21)?,
        },
    };
    let id: i64 = row.get(0).map_err(sql)?;
    Ok(AuditEntry { id: AuditId(u64::try_from(id).unwrap_or(0)), record })
}
