//! Schema migrations: forward-only, versioned with `PRAGMA user_version`, one transaction each.
//!
//! Version N means the first N entries of [`MIGRATIONS`] have been applied. A migration is never
//! edited once released: a change is a new entry at the end. The file is marked as a browserd
//! journal with `PRAGMA application_id` by the first migration.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use crate::error::{JournalError, Result, from_sqlite};

/// `PRAGMA application_id` of a browserd journal (`brsd` in ASCII).
pub(crate) const APPLICATION_ID: i32 = 0x6272_7364;

/// Every migration, oldest first; entry `i` takes the schema from version `i` to `i + 1`.
pub(crate) const MIGRATIONS: &[&str] = &[
    // v1: key/value metadata and recovery records.
    r"
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value INTEGER NOT NULL
    ) STRICT;
    INSERT INTO meta (key, value) VALUES ('incarnation', 0);

    CREATE TABLE recovery (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        session       TEXT NOT NULL,
        browser       TEXT NOT NULL,
        tab           TEXT NOT NULL,
        op            TEXT NOT NULL CHECK (op IN ('close', 'release', 'detachDebugger')),
        state         TEXT NOT NULL CHECK (state IN ('pending', 'resolved')),
        resolution    TEXT CHECK (resolution IN ('confirmed', 'alreadyGone', 'abandoned')),
        attempts      INTEGER NOT NULL CHECK (attempts >= 1),
        last_outcome  TEXT NOT NULL CHECK (last_outcome IN ('failed', 'unknown')),
        last_code     TEXT NOT NULL,
        last_message  TEXT NOT NULL,
        created_at    INTEGER NOT NULL,
        updated_at    INTEGER NOT NULL,
        CHECK ((state = 'pending') = (resolution IS NULL))
    ) STRICT;
    CREATE UNIQUE INDEX recovery_one_pending ON recovery (browser, tab, op) WHERE state = 'pending';
    CREATE INDEX recovery_pending_session ON recovery (session) WHERE state = 'pending';
    CREATE INDEX recovery_resolved_at ON recovery (updated_at) WHERE state = 'resolved';
    ",
    // v2: the de-duplication log.
    r"
    CREATE TABLE dedup (
        request_id    TEXT PRIMARY KEY,
        payload_hash  BLOB NOT NULL CHECK (length(payload_hash) = 32),
        state         TEXT NOT NULL
                      CHECK (state IN ('received', 'dispatched', 'completed', 'unknown', 'abandoned')),
        incarnation   INTEGER NOT NULL,
        outcome       TEXT,
        dispatch      TEXT,
        code          TEXT,
        trace         TEXT,
        received_at   INTEGER NOT NULL,
        dispatched_at INTEGER,
        completed_at  INTEGER,
        expires_at    INTEGER NOT NULL,
        CHECK ((state = 'completed') = (outcome IS NOT NULL AND dispatch IS NOT NULL))
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX dedup_expiry ON dedup (expires_at);
    ",
    // v3: the audit metadata ring, with its approximate size kept by triggers.
    r"
    CREATE TABLE audit (
        id                INTEGER PRIMARY KEY AUTOINCREMENT,
        at                INTEGER NOT NULL,
        action            TEXT NOT NULL,
        input             TEXT,
        session           TEXT,
        browser           TEXT,
        tab               TEXT,
        request           TEXT,
        trace             TEXT,
        origin            TEXT,
        outcome           TEXT,
        dispatch          TEXT,
        code              TEXT,
        policy            TEXT,
        total_ms          INTEGER,
        policy_ms         INTEGER,
        queue_ms          INTEGER,
        resolve_ms        INTEGER,
        actionability_ms  INTEGER,
        dispatch_ms       INTEGER,
        settle_ms         INTEGER,
        observe_ms        INTEGER,
        cost              INTEGER NOT NULL CHECK (cost > 0)
    ) STRICT;
    CREATE INDEX audit_at ON audit (at);
    INSERT INTO meta (key, value) VALUES ('audit_bytes', 0);
    CREATE TRIGGER audit_bytes_insert AFTER INSERT ON audit BEGIN
        UPDATE meta SET value = value + NEW.cost WHERE key = 'audit_bytes';
    END;
    CREATE TRIGGER audit_bytes_delete AFTER DELETE ON audit BEGIN
        UPDATE meta SET value = value - OLD.cost WHERE key = 'audit_bytes';
    END;
    ",
    // v4: the owned-tab ledger (tabs a crash would leak, by durable browser and tab keys).
    r"
    CREATE TABLE owned_tab (
        browser     TEXT NOT NULL,
        tab         TEXT NOT NULL,
        session     TEXT NOT NULL,
        op          TEXT NOT NULL CHECK (op IN ('close', 'release')),
        incarnation INTEGER NOT NULL,
        created_at  INTEGER NOT NULL,
        PRIMARY KEY (browser, tab)
    ) STRICT, WITHOUT ROWID;
    ",
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = 4;
const _: () = assert!(MIGRATIONS.len() == SCHEMA_VERSION as usize, "one migration per schema version");

/// Reads `PRAGMA user_version`.
pub(crate) fn user_version(conn: &Connection, path: &Path) -> Result<u32> {
    let version: i64 =
        conn.pragma_query_value(None, "user_version", |row| row.get(0)).map_err(|e| from_sqlite(path, e))?;
    u32::try_from(version).map_err(|_| JournalError::NotAJournal {
        path: path.to_path_buf(),
        detail: format!("negative schema version {version}"),
    })
}

/// Refuses a file that is not (and cannot become) a browserd journal, or that is newer than this build.
pub(crate) fn check_identity(conn: &Connection, path: &Path) -> Result<()> {
    let application_id: i32 =
        conn.pragma_query_value(None, "application_id", |row| row.get(0)).map_err(|e| from_sqlite(path, e))?;
    let version = user_version(conn, path)?;
    if application_id == 0 {
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))
            .map_err(|e| from_sqlite(path, e))?;
        if tables > 0 || version > 0 {
            return Err(JournalError::NotAJournal {
                path: path.to_path_buf(),
                detail: format!("a SQLite database of another program ({tables} schema objects, version {version})"),
            });
        }
    } else if application_id != APPLICATION_ID {
        return Err(JournalError::NotAJournal {
            path: path.to_path_buf(),
            detail: format!("a SQLite database with application id {application_id:#x}"),
        });
    }
    if version > SCHEMA_VERSION {
        return Err(JournalError::SchemaTooNew { path: path.to_path_buf(), found: version, supported: SCHEMA_VERSION });
    }
    Ok(())
}

/// Applies every migration above the file's version up to `target`, each in its own immediate
/// transaction that also bumps `user_version`. Returns the version found before migrating.
pub(crate) fn migrate_to(conn: &mut Connection, path: &Path, target: u32) -> Result<u32> {
    let sql = |e| from_sqlite(path, e);
    let found = user_version(conn, path)?;
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql)?;
        // Re-read inside the write lock: another process may have migrated meanwhile.
        let version = user_version(&tx, path)?;
        if version > SCHEMA_VERSION {
            return Err(JournalError::SchemaTooNew {
                path: path.to_path_buf(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        if version >= target {
            return Ok(found);
        }
        let migration = MIGRATIONS[version as usize];
        tx.execute_batch(migration).map_err(sql)?;
        if version == 0 {
            tx.pragma_update(None, "application_id", APPLICATION_ID).map_err(sql)?;
        }
        tx.pragma_update(None, "user_version", version + 1).map_err(sql)?;
        tx.commit().map_err(sql)?;
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::params;

    use super::*;
    use crate::{Journal, JournalConfig, UnixMillis};

    /// Writes rows that a journal at `version` can hold, using only that version's tables.
    fn seed(conn: &Connection, version: u32) {
        if version >= 1 {
            conn.execute(
                "INSERT INTO recovery (session, browser, tab, op, state, attempts, last_outcome, last_code,
                     last_message, created_at, updated_at)
                 VALUES ('s1', 'b1', 't1', 'close', 'pending', 2, 'unknown', 'CONNECTION_LOST', 'socket closed', 10, 20)",
                [],
            )
            .unwrap();
        }
        if version >= 2 {
            conn.execute(
                "INSERT INTO dedup (request_id, payload_hash, state, incarnation, received_at, dispatched_at, expires_at)
                 VALUES ('r1', ?1, 'dispatched', 1, 30, 31, 100000)",
                params![[7u8; 32]],
            )
            .unwrap();
        }
    }

    #[test]
    fn migrates_from_every_version_and_keeps_the_data() {
        for start in 0..=SCHEMA_VERSION {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("journal.sqlite3");
            {
                let mut conn = Connection::open(&path).unwrap();
                assert_eq!(migrate_to(&mut conn, &path, start).unwrap(), 0);
                assert_eq!(user_version(&conn, &path).unwrap(), start);
                seed(&conn, start);
            }
            let journal = Journal::open(&path, JournalConfig::default()).unwrap();
            assert_eq!(journal.open_report().migrated_from, start, "start {start}");
            assert_eq!(journal.stats().unwrap().schema_version, SCHEMA_VERSION);
            let pending = journal.pending_recoveries().unwrap();
            assert_eq!(pending.len(), usize::from(start >= 1), "start {start}");
            if start >= 1 {
                assert_eq!(pending[0].attempts, 2);
                assert_eq!(pending[0].created_at, UnixMillis(10));
            }
            if start >= 2 {
                let (_, state) = journal.dedup_state("r1").unwrap().unwrap();
                assert_eq!(state, crate::DedupState::Unknown, "a dispatched row from before the reopen is unknown");
            }
            journal.check_integrity().unwrap();
        }
    }

    #[test]
    fn a_failed_migration_leaves_the_previous_version_intact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.sqlite3");
        let mut conn = Connection::open(&path).unwrap();
        migrate_to(&mut conn, &path, 1).unwrap();
        // Make v2 fail half-way: its index name is already taken.
        conn.execute_batch("CREATE TABLE squatter (x); CREATE INDEX dedup_expiry ON squatter (x);").unwrap();
        let err = migrate_to(&mut conn, &path, 2).unwrap_err();
        assert!(matches!(err, JournalError::Sqlite { .. }), "{err}");
        assert_eq!(user_version(&conn, &path).unwrap(), 1);
        let dedup_tables: i64 =
            conn.query_row("SELECT count(*) FROM sqlite_schema WHERE name = 'dedup'", [], |row| row.get(0)).unwrap();
        assert_eq!(dedup_tables, 0, "the half-applied migration was rolled back");
    }

    #[test]
    fn a_newer_schema_is_refused_with_advice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.sqlite3");
        drop(Journal::open(&path, JournalConfig::default()).unwrap());
        {
            let conn = Connection::open(&path).unwrap();
            conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
        }
        let err = Journal::open(&path, JournalConfig::default()).unwrap_err();
        match &err {
            JournalError::SchemaTooNew { found, supported, .. } => {
                assert_eq!((*found, *supported), (SCHEMA_VERSION + 1, SCHEMA_VERSION));
            }
            other => panic!("expected SchemaTooNew, got {other}"),
        }
        assert!(err.to_string().contains("upgrade browserd"), "{err}");
    }

    #[test]
    fn foreign_databases_and_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let foreign = dir.path().join("other.sqlite3");
        Connection::open(&foreign).unwrap().execute_batch("CREATE TABLE notes (x);").unwrap();
        let err = Journal::open(&foreign, JournalConfig::default()).unwrap_err();
        assert!(matches!(err, JournalError::NotAJournal { .. }), "{err}");

        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "this is not a database, just some text that is long enough to have a header....")
            .unwrap();
        let err = Journal::open(&text, JournalConfig::default()).unwrap_err();
        assert!(matches!(err, JournalError::NotAJournal { .. }), "{err}");
    }
}
