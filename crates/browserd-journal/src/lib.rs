//! browserd's durable journal: the state that must survive a broker crash, in one SQLite file.
//!
//! # What it stores
//! - **Recovery records** ([`recovery`]): every close, release or debugger detach that failed or
//!   whose outcome is unknown, until a retry is confirmed. At most one pending record per
//!   (browser, tab, operation).
//! - **The de-duplication log** ([`dedup`], BRIEF §6): request id, payload hash, dispatch state and
//!   expiry. An action marked dispatched whose completion was never written reads back as
//!   `unknown` after a restart and can never be handed out for dispatch again.
//! - **The owned-tab ledger** ([`owned`]): the tabs a broker holds that a crash would leak, by the
//!   browser's own target id, so the next broker turns a dead one's tabs into recovery records.
//! - **The audit metadata ring** ([`audit`], BRIEF §8): action types, opaque handles, codes,
//!   timings, policy decisions and origins, bounded by age (24 h) and size (20 MB) by default. Its
//!   record type cannot hold page text, URL paths or queries, form values or screenshots.
//!
//! # Where
//! The broker keeps it at `$XDG_STATE_HOME/browserd/journal.sqlite3`, falling back to
//! `~/.local/state/browserd/journal.sqlite3` ([`default_path`]). The directory is created `0700`
//! and the file `0600` (SQLite gives its `-wal` and `-shm` files the same mode). Any path works:
//! tests use a temporary directory.
//!
//! # How it starts
//! [`Journal::open`] creates or opens the file, checks that it is a browserd journal no newer than
//! this build ([`JournalError::SchemaTooNew`] otherwise), applies the pending forward-only
//! migrations ([`SCHEMA_VERSION`]), then reconciles what a previous process left in flight:
//! dispatched actions become `unknown`, received-but-undispatched ones become retryable. The
//! result is in [`Journal::open_report`].
//!
//! # Durability
//! WAL mode. By default ([`Durability::Critical`]) the two writes whose loss could do harm are
//! committed with `synchronous=FULL` — the `dispatched` mark written before input is sent, and a
//! new recovery record — so not even a power loss can make the broker forget an input that went
//! out (and replay it) or a tab it failed to close (and leak it). Every other write uses
//! `synchronous=NORMAL`, which loses nothing on a process crash (`kill -9`) and, on power loss,
//! only commits whose loss is safe (see [`Durability`]). Measured on this project's VM disk
//! (`examples/cycles.rs`): an fsynced commit costs 0.15 to 2 ms depending on disk load, a NORMAL
//! one 0.03 to 0.06 ms. Busy timeout 5 s; foreign keys on; `secure_delete=FAST` so pruned audit
//! rows do not linger in free pages.
//!
//! # What it needs
//! SQLite is compiled in (rusqlite's `bundled` feature): no system library. The journal is
//! synchronous and `Send` but not `Sync`: the broker owns one [`Journal`] on one thread (or behind
//! `spawn_blocking`). It reads no clock: every time is an argument ([`UnixMillis`]). One
//! [`Journal`] per file at a time: it holds an exclusive advisory lock on `journal.sqlite3.lock`
//! while open, because opening reconciles in-flight rows and must not do so under a live broker.
//! The lock dies with the process, so a `kill -9` never leaves the journal locked. Tools that only
//! read (the `sqlite3` shell) can still inspect the file.
//!
//! # Layout
//! - [`recovery`], [`dedup`], [`owned`], [`audit`]: the four tables' types and operations.
//! - [`hash`]: payload hashes over canonical JSON.
//! - [`types`]: time, opaque ids, codes, origins, outcomes.
//! - [`error`]: [`JournalError`], whose messages say what to do next.
//! - `schema`: the migrations.

pub mod audit;
pub mod dedup;
pub mod error;
pub mod hash;
pub mod owned;
pub mod recovery;
mod schema;
pub mod types;

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

pub use crate::audit::{
    AuditAction, AuditEntry, AuditId, AuditLimits, AuditRecord, AuditStats, InputKind, PolicyDecision, Timings,
    read_recent_audit,
};
pub use crate::dedup::{Begin, DedupResult, DedupState, Dispatched, Pending};
pub use crate::error::{JournalError, Result};
pub use crate::hash::{PayloadHash, canonical_json};
pub use crate::recovery::{
    AttemptOutcome, CleanupFailure, CleanupOp, NewRecovery, RecoveryId, RecoveryRecord, RecoveryState, Resolution,
};
pub use crate::schema::SCHEMA_VERSION;
pub use crate::types::{Code, Dispatch, OpaqueId, Origin, Outcome, UnixMillis};

use crate::error::from_sqlite;

/// The journal's file name inside its state directory.
pub const FILE_NAME: &str = "journal.sqlite3";

/// How hard commits are pushed to disk (SQLite's `synchronous` setting in WAL mode).
///
/// In WAL mode `synchronous=NORMAL` never corrupts the file and loses nothing on a process crash
/// (`kill -9`); on an OS crash or power loss it may lose the last commits. `synchronous=FULL`
/// fsyncs the WAL at every commit (0.15 to 2 ms on this project's VM disk), and since the WAL is
/// append-only, that fsync also makes every earlier commit durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// The default: `FULL` for the two writes whose loss could do harm — marking an action
    /// dispatched (losing it could replay an input after a power loss) and recording a failed
    /// cleanup (losing it would leak a tab) — and `NORMAL` for the rest, whose loss is safe:
    /// a lost `begin` had nothing dispatched, a lost completion reads back `unknown`, a lost
    /// resolution makes an idempotent cleanup be retried once more, a lost audit row is metadata.
    #[default]
    Critical,
    /// `FULL` for every commit.
    Full,
    /// `NORMAL` for every commit: process crashes lose nothing, power loss may.
    Normal,
}

/// How much a write matters if the machine loses power right after it (see [`Durability`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Weight {
    /// Losing it could replay an input or leak a tab.
    Critical,
    /// Losing it is safe.
    Routine,
}

/// Settings for [`Journal::open`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalConfig {
    /// Commit durability (default [`Durability::Critical`]).
    pub durability: Durability,
    /// How long a write waits for another connection's lock before [`JournalError::Busy`] (default 5 s).
    pub busy_timeout: Duration,
    /// Bounds of the audit metadata ring.
    pub audit: AuditLimits,
    /// How long resolved recovery records are kept for `status` and diagnostics (default 7 days).
    pub resolved_retention: Duration,
    /// A hard cap on the database size in bytes (SQLite's `max_page_count`); writes beyond it fail
    /// with [`JournalError::Full`]. `None` (the default): only the disk limits it.
    pub max_file_bytes: Option<u64>,
    /// SQLite's page cache for this connection, in KiB (default [`DEFAULT_CACHE_KIB`]). The journal's working set
    /// is a few index and tail pages; SQLite's own default (2 MiB) only fills the broker's memory as the audit ring
    /// grows.
    pub cache_kib: u32,
}

/// The default page cache of a journal connection, in KiB.
pub const DEFAULT_CACHE_KIB: u32 = 256;

impl Default for JournalConfig {
    fn default() -> Self {
        Self {
            durability: Durability::Critical,
            busy_timeout: Duration::from_secs(5),
            audit: AuditLimits::default(),
            resolved_retention: Duration::from_secs(7 * 24 * 60 * 60),
            max_file_bytes: None,
            cache_kib: DEFAULT_CACHE_KIB,
        }
    }
}

/// What [`Journal::open`] found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenReport {
    /// The schema version found in the file (0 for a new file).
    pub migrated_from: u32,
    /// This opening's number: 1 for the first process to open the file, then one more per open.
    pub incarnation: u64,
    /// De-duplication rows that were dispatched by an earlier process and never completed, now `unknown`.
    pub marked_unknown: u64,
    /// De-duplication rows that were received but never dispatched by an earlier process, now retryable.
    pub marked_retryable: u64,
}

/// Counts for `browserd status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalStats {
    /// The schema version (always [`SCHEMA_VERSION`] once open).
    pub schema_version: u32,
    /// This opening's incarnation.
    pub incarnation: u64,
    /// Recovery records still pending.
    pub pending_recoveries: u64,
    /// Resolved recovery records still kept.
    pub resolved_recoveries: u64,
    /// De-duplication rows (any state).
    pub dedup_rows: u64,
    /// De-duplication rows whose state is `unknown`.
    pub dedup_unknown: u64,
    /// The audit ring's rows, approximate size and oldest entry.
    pub audit: AuditStats,
    /// The database size, `page_count × page_size` (the WAL file comes on top).
    pub file_bytes: u64,
}

/// What [`Journal::prune`] removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PruneReport {
    /// Expired, settled de-duplication rows.
    pub dedup_expired: u64,
    /// Audit rows past the age or size bound.
    pub audit_removed: u64,
    /// Resolved recovery records past their retention.
    pub recoveries_removed: u64,
}

/// The durable journal over one SQLite file. See the crate docs.
#[derive(Debug)]
pub struct Journal {
    conn: Connection,
    path: PathBuf,
    config: JournalConfig,
    report: OpenReport,
    /// Whether the connection is currently at `synchronous=FULL`.
    synchronous_full: bool,
    /// The exclusive lock on `<path>.lock`: one read-write journal per file.
    _lock: fs::File,
}

impl Journal {
    /// Opens (creating if needed) the journal at `path`: creates the directory (`0700`) and file
    /// (`0600`), takes an exclusive lock on `<path>.lock` for as long as the journal lives
    /// ([`JournalError::Busy`] if another journal holds it), checks it is a browserd journal no
    /// newer than this build, applies migrations, and reconciles rows a previous process left in
    /// flight (see [`OpenReport`]).
    pub fn open(path: impl AsRef<Path>, config: JournalConfig) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        create_parent(&path)?;
        let lock = lock_journal(&path)?;
        open_private(&path, &path)?;
        let sql = |e| from_sqlite(&path, e);
        let mut conn = Connection::open(&path).map_err(sql)?;
        conn.busy_timeout(config.busy_timeout).map_err(sql)?;
        schema::check_identity(&conn, &path)?;
        let fresh = schema::user_version(&conn, &path)? == 0;
        if fresh {
            // Only possible before the first table exists; lets `prune` hand pages back to the disk.
            conn.pragma_update(None, "auto_vacuum", "INCREMENTAL").map_err(sql)?;
        }
        let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0)).map_err(sql)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(JournalError::Open {
                path: path.clone(),
                source: io::Error::other(format!(
                    "SQLite could not switch to WAL mode (it stayed in {mode:?}); put the journal on a local \
                     file system"
                )),
            });
        }
        // Migrations and reconciliation run at FULL; `write_tx` adjusts per write afterwards.
        conn.pragma_update(None, "synchronous", "FULL").map_err(sql)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(sql)?;
        conn.pragma_update(None, "trusted_schema", "OFF").map_err(sql)?;
        conn.pragma_update(None, "secure_delete", "FAST").map_err(sql)?;
        conn.pragma_update(None, "journal_size_limit", 4 * 1024 * 1024).map_err(sql)?;
        // A negative cache_size is in KiB.
        conn.pragma_update(None, "cache_size", -i64::from(config.cache_kib.max(64))).map_err(sql)?;
        if let Some(max_bytes) = config.max_file_bytes {
            let page_size: i64 = conn.pragma_query_value(None, "page_size", |row| row.get(0)).map_err(sql)?;
            let pages = max_bytes.div_ceil(u64::try_from(page_size.max(512)).unwrap_or(4096)).max(1);
            conn.pragma_update(None, "max_page_count", i64::try_from(pages).unwrap_or(i64::MAX)).map_err(sql)?;
        }
        let migrated_from = schema::migrate_to(&mut conn, &path, SCHEMA_VERSION)?;
        let report = reconcile(&mut conn, &path, migrated_from)?;
        Ok(Self { conn, path, config, report, synchronous_full: true, _lock: lock })
    }

    /// The file this journal writes.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The settings it was opened with.
    #[must_use]
    pub fn config(&self) -> &JournalConfig {
        &self.config
    }

    /// What opening found and did (migration, incarnation, rows reconciled).
    #[must_use]
    pub fn open_report(&self) -> OpenReport {
        self.report
    }

    /// Counts for `browserd status`.
    pub fn stats(&self) -> Result<JournalStats> {
        let sql = |e| from_sqlite(&self.path, e);
        let count = |query: &str| -> Result<u64> {
            let n: i64 = self.conn.query_row(query, [], |row| row.get(0)).map_err(sql)?;
            Ok(u64::try_from(n).unwrap_or(0))
        };
        let page_count = count("PRAGMA page_count")?;
        let page_size = count("PRAGMA page_size")?;
        Ok(JournalStats {
            schema_version: schema::user_version(&self.conn, &self.path)?,
            incarnation: self.report.incarnation,
            pending_recoveries: count("SELECT count(*) FROM recovery WHERE state = 'pending'")?,
            resolved_recoveries: count("SELECT count(*) FROM recovery WHERE state = 'resolved'")?,
            dedup_rows: count("SELECT count(*) FROM dedup")?,
            dedup_unknown: count("SELECT count(*) FROM dedup WHERE state = 'unknown'")?,
            audit: self.audit_stats()?,
            file_bytes: page_count * page_size,
        })
    }

    /// Checks the file end to end: SQLite's `integrity_check` and `foreign_key_check`, and that the
    /// audit ring's size counter matches its rows. Fails with [`JournalError::Corrupt`] naming the problem.
    pub fn check_integrity(&self) -> Result<()> {
        let sql = |e| from_sqlite(&self.path, e);
        let mut stmt = self.conn.prepare("PRAGMA integrity_check").map_err(sql)?;
        let problems: Vec<String> =
            stmt.query_map([], |row| row.get(0)).map_err(sql)?.collect::<rusqlite::Result<_>>().map_err(sql)?;
        if problems != ["ok"] {
            return Err(self.corrupt(format!("integrity_check: {}", problems.join("; "))));
        }
        let mut stmt = self.conn.prepare("PRAGMA foreign_key_check").map_err(sql)?;
        if stmt.query([]).map_err(sql)?.next().map_err(sql)?.is_some() {
            return Err(self.corrupt("foreign_key_check found dangling references".to_owned()));
        }
        let (counted, summed): (i64, i64) = self
            .conn
            .query_row(
                "SELECT (SELECT value FROM meta WHERE key = 'audit_bytes'), (SELECT coalesce(sum(cost), 0) FROM audit)",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .map_err(sql)?;
        if counted != summed {
            return Err(self.corrupt(format!("audit size counter {counted} does not match the rows' {summed}")));
        }
        Ok(())
    }

    /// Housekeeping: removes expired settled de-duplication rows, audit rows past the configured
    /// age or size, and resolved recovery records older than their retention, then returns free
    /// pages to the file system in a bounded step. Call it periodically (e.g. once a minute).
    pub fn prune(&mut self, now: UnixMillis) -> Result<PruneReport> {
        let dedup_expired = self.purge_expired(now)?;
        let audit_removed = self.prune_audit(now)?;
        let recoveries_removed = self.purge_resolved(now.saturating_sub(self.config.resolved_retention))?;
        self.use_weight(Weight::Routine)?;
        self.conn.execute_batch("PRAGMA incremental_vacuum(512)").map_err(|e| from_sqlite(&self.path, e))?;
        Ok(PruneReport { dedup_expired, audit_removed, recoveries_removed })
    }

    /// Checks that the journal can be written right now: one committed (fsynced) write of a `meta` row. The broker
    /// probes before an operation that must be recorded (a new tab, input) once a write has failed, so a full disk
    /// refuses that operation instead of letting it run unrecorded.
    pub fn probe(&mut self, now: UnixMillis) -> Result<()> {
        let path = self.path.clone();
        let sql = write_tx_sql(&path);
        let tx = self.write_tx(Weight::Critical)?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('probe', ?1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [i64::try_from(now.0).unwrap_or(i64::MAX)],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)
    }

    /// An immediate (write-locking) transaction whose commit is as durable as `weight` needs.
    pub(crate) fn write_tx(&mut self, weight: Weight) -> Result<rusqlite::Transaction<'_>> {
        self.use_weight(weight)?;
        self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| from_sqlite(&self.path, e))
    }

    /// Sets `synchronous` for the next commits as `weight` needs under the configured durability.
    fn use_weight(&mut self, weight: Weight) -> Result<()> {
        let full = match (self.config.durability, weight) {
            (Durability::Full, _) | (Durability::Critical, Weight::Critical) => true,
            (Durability::Normal, _) | (Durability::Critical, Weight::Routine) => false,
        };
        if full != self.synchronous_full {
            let level = if full { "FULL" } else { "NORMAL" };
            self.conn.pragma_update(None, "synchronous", level).map_err(|e| from_sqlite(&self.path, e))?;
            self.synchronous_full = full;
        }
        Ok(())
    }

    fn corrupt(&self, detail: String) -> JournalError {
        JournalError::Corrupt { path: self.path.clone(), detail }
    }
}

/// Maps SQLite errors on `path` to typed errors (a closure for `map_err`).
pub(crate) fn write_tx_sql(path: &Path) -> impl Fn(rusqlite::Error) -> JournalError + Copy + '_ {
    move |e| from_sqlite(path, e)
}

/// The journal path for this user: `$XDG_STATE_HOME/browserd/journal.sqlite3` when
/// `XDG_STATE_HOME` is an absolute path, else `$HOME/.local/state/browserd/journal.sqlite3`.
/// Takes the two variables' values so callers and tests decide where they come from.
pub fn default_path(xdg_state_home: Option<&OsStr>, home: Option<&OsStr>) -> Result<PathBuf> {
    if let Some(state) = xdg_state_home.map(Path::new).filter(|path| path.is_absolute()) {
        return Ok(state.join("browserd").join(FILE_NAME));
    }
    if let Some(home) = home.map(Path::new).filter(|path| path.is_absolute()) {
        return Ok(home.join(".local/state/browserd").join(FILE_NAME));
    }
    Err(JournalError::NoStateDir)
}

/// [`default_path`] with `XDG_STATE_HOME` and `HOME` read from this process's environment.
pub fn default_path_from_env() -> Result<PathBuf> {
    default_path(std::env::var_os("XDG_STATE_HOME").as_deref(), std::env::var_os("HOME").as_deref())
}

/// Creates the parent directory (`0700`) if missing.
fn create_parent(path: &Path) -> Result<()> {
    if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(parent).map_err(|source| JournalError::Open { path: path.to_path_buf(), source })?;
    }
    Ok(())
}

/// Opens `file`, creating it `0600` if missing and tightening it if others can read it.
/// Errors name `journal`, the path the caller asked for.
fn open_private(file: &Path, journal: &Path) -> Result<fs::File> {
    let open_err = |source| JournalError::Open { path: journal.to_path_buf(), source };
    let mut options = fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let opened = options.open(file).map_err(open_err)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = opened.metadata().map_err(open_err)?.permissions().mode();
        if mode & 0o077 != 0 {
            opened.set_permissions(fs::Permissions::from_mode(mode & 0o700)).map_err(open_err)?;
        }
    }
    Ok(opened)
}

/// Takes the exclusive advisory lock on `<journal>.lock`, held as long as the returned file is
/// open (the kernel drops it when the process dies, `kill -9` included).
fn lock_journal(path: &Path) -> Result<fs::File> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock = open_private(Path::new(&lock_path), path)?;
    match lock.try_lock() {
        Ok(()) => Ok(lock),
        Err(fs::TryLockError::WouldBlock) => Err(JournalError::Busy { path: path.to_path_buf() }),
        Err(fs::TryLockError::Error(source)) => Err(JournalError::Open { path: path.to_path_buf(), source }),
    }
}

/// Starts a new incarnation and settles the de-duplication rows an earlier process left in flight.
fn reconcile(conn: &mut Connection, path: &Path, migrated_from: u32) -> Result<OpenReport> {
    let sql = |e| from_sqlite(path, e);
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql)?;
    let incarnation: i64 = tx
        .query_row("UPDATE meta SET value = value + 1 WHERE key = 'incarnation' RETURNING value", [], |row| row.get(0))
        .map_err(sql)?;
    let marked_unknown =
        tx.execute("UPDATE dedup SET state = 'unknown' WHERE state = 'dispatched'", []).map_err(sql)?;
    let marked_retryable =
        tx.execute("UPDATE dedup SET state = 'abandoned' WHERE state = 'received'", []).map_err(sql)?;
    tx.commit().map_err(sql)?;
    Ok(OpenReport {
        migrated_from,
        incarnation: u64::try_from(incarnation).unwrap_or(0),
        marked_unknown: marked_unknown as u64,
        marked_retryable: marked_retryable as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synchronous(journal: &Journal) -> i64 {
        journal.conn.pragma_query_value(None, "synchronous", |row| row.get(0)).unwrap()
    }

    #[test]
    fn only_critical_writes_are_fsynced_by_default() {
        const NORMAL: i64 = 1;
        const FULL: i64 = 2;
        let dir = tempfile::tempdir().unwrap();
        let hash = PayloadHash::of_canonical_bytes(b"{}");
        let ttl = Duration::from_secs(60);
        let failure = CleanupFailure {
            outcome: AttemptOutcome::Failed,
            code: Code::new("CONNECTION_LOST").unwrap(),
            message: String::new(),
        };
        let new = NewRecovery {
            session: "s".into(),
            browser: "b".into(),
            tab: "t".into(),
            op: CleanupOp::Close,
            failure: failure.clone(),
        };
        let done = DedupResult { outcome: Outcome::Succeeded, dispatch: Dispatch::Dispatched, code: None, trace: None };
        for (durability, routine, critical) in
            [(Durability::Critical, NORMAL, FULL), (Durability::Full, FULL, FULL), (Durability::Normal, NORMAL, NORMAL)]
        {
            let path = dir.path().join(format!("{durability:?}.sqlite3"));
            let mut journal = Journal::open(&path, JournalConfig { durability, ..JournalConfig::default() }).unwrap();
            let Begin::New(pending) = journal.begin("r", hash, UnixMillis(0), ttl).unwrap() else { panic!() };
            assert_eq!(synchronous(&journal), routine, "{durability:?}: begin");
            let dispatched = journal.mark_dispatched(pending, UnixMillis(1)).unwrap();
            assert_eq!(synchronous(&journal), critical, "{durability:?}: mark_dispatched");
            journal.complete(dispatched, &done, UnixMillis(2)).unwrap();
            assert_eq!(synchronous(&journal), routine, "{durability:?}: complete");
            let record = journal.record_recovery(&new, UnixMillis(3)).unwrap();
            assert_eq!(synchronous(&journal), critical, "{durability:?}: record_recovery");
            journal.mark_recovery_attempt(record.id, &failure, UnixMillis(4)).unwrap();
            assert_eq!(synchronous(&journal), routine, "{durability:?}: mark_recovery_attempt");
            journal.audit(&AuditRecord::new(UnixMillis(5), AuditAction::Stop)).unwrap();
            assert_eq!(synchronous(&journal), routine, "{durability:?}: audit");
        }
    }

    #[test]
    fn a_probe_is_one_committed_write_of_a_row_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::open(dir.path().join("p.sqlite3"), JournalConfig::default()).unwrap();
        journal.probe(UnixMillis(7)).unwrap();
        let at: i64 = journal.conn.query_row("SELECT value FROM meta WHERE key = 'probe'", [], |r| r.get(0)).unwrap();
        assert_eq!(at, 7);
        // A probe proves only that a small write commits: with no page left to grow into, bigger writes still fail.
        let pages: i64 = journal.conn.pragma_query_value(None, "page_count", |row| row.get(0)).unwrap();
        journal.conn.pragma_update(None, "max_page_count", pages).unwrap();
        let filler = "x".repeat(64 * 1024);
        let grew = journal.conn.execute("INSERT INTO meta (key, value) VALUES (?1, 1)", [&filler]);
        assert!(grew.is_err(), "the file is at its page limit");
        assert!(journal.probe(UnixMillis(8)).is_ok(), "an in-place update still fits");
    }

    #[test]
    fn the_page_cache_is_bounded_as_configured() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(dir.path().join("j.sqlite3"), JournalConfig::default()).unwrap();
        let cache: i64 = journal.conn.pragma_query_value(None, "cache_size", |row| row.get(0)).unwrap();
        assert_eq!(cache, -i64::from(DEFAULT_CACHE_KIB));
        let config = JournalConfig { cache_kib: 1024, ..JournalConfig::default() };
        let journal = Journal::open(dir.path().join("k.sqlite3"), config).unwrap();
        let cache: i64 = journal.conn.pragma_query_value(None, "cache_size", |row| row.get(0)).unwrap();
        assert_eq!(cache, -1024);
    }

    #[test]
    fn default_path_prefers_absolute_xdg_state_home() {
        let state = OsStr::new("/var/state");
        let home = OsStr::new("/home/ada");
        assert_eq!(default_path(Some(state), Some(home)).unwrap(), Path::new("/var/state/browserd/journal.sqlite3"));
        assert_eq!(
            default_path(Some(OsStr::new("relative")), Some(home)).unwrap(),
            Path::new("/home/ada/.local/state/browserd/journal.sqlite3")
        );
        assert_eq!(
            default_path(None, Some(home)).unwrap(),
            Path::new("/home/ada/.local/state/browserd/journal.sqlite3")
        );
        assert!(matches!(default_path(None, None), Err(JournalError::NoStateDir)));
        assert!(matches!(default_path(None, Some(OsStr::new("rel"))), Err(JournalError::NoStateDir)));
    }
}
