//! The journal's typed errors ([`JournalError`]); every message says what to do next.

use std::io;
use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

use crate::recovery::RecoveryId;

/// Everything the journal can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// Neither `XDG_STATE_HOME` nor `HOME` gives an absolute directory.
    #[error(
        "no state directory for the journal: neither XDG_STATE_HOME nor HOME is an absolute path; \
         set one of them, or pass a journal path explicitly"
    )]
    NoStateDir,

    /// The file or its directory could not be created or opened.
    #[error(
        "cannot open the journal at {}: {source}; check that its directory exists and is writable by this \
         user, or pass another path",
        path.display()
    )]
    Open {
        /// The journal file.
        path: PathBuf,
        /// The I/O failure.
        #[source]
        source: io::Error,
    },

    /// The file was written by a newer browserd.
    #[error(
        "the journal at {} has schema version {found}, newer than the version {supported} this browserd \
         understands; upgrade browserd, or stop the broker and move the file (with its -wal and -shm files) \
         aside to start an empty journal (its pending recovery records are then not retried)",
        path.display()
    )]
    SchemaTooNew {
        /// The journal file.
        path: PathBuf,
        /// The version found in the file.
        found: u32,
        /// The newest version this build knows.
        supported: u32,
    },

    /// The file is not a browserd journal (another SQLite database, or not SQLite at all).
    #[error(
        "{} is not a browserd journal ({detail}); point browserd at another path, or move the file aside",
        path.display()
    )]
    NotAJournal {
        /// The file.
        path: PathBuf,
        /// What was found instead.
        detail: String,
    },

    /// SQLite reports the file as damaged, or a consistency check failed.
    #[error(
        "the journal at {} is damaged ({detail}); stop the broker, move the file (with its -wal and -shm \
         files) aside and start again, which creates an empty journal",
        path.display()
    )]
    Corrupt {
        /// The journal file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },

    /// The write did not fit: the disk or a quota is full, or the configured size cap is reached.
    #[error(
        "the journal at {} is full (disk, quota or the configured size cap): this write was not recorded and \
         nothing committed before it was lost; free disk space or raise the cap, then retry",
        path.display()
    )]
    Full {
        /// The journal file.
        path: PathBuf,
    },

    /// Another connection holds a lock longer than the busy timeout.
    #[error(
        "the journal at {} is locked by another process; only one broker may use it: stop the other one \
         (`browserd broker stop`) or retry later",
        path.display()
    )]
    Busy {
        /// The journal file.
        path: PathBuf,
    },

    /// The file or its directory is not writable.
    #[error("the journal at {} is read-only; make the file and its directory writable by this user", path.display())]
    ReadOnly {
        /// The journal file.
        path: PathBuf,
    },

    /// A value handed to the journal breaks its rules (too long, wrong characters, free text).
    #[error("invalid {what}: {reason}")]
    InvalidInput {
        /// Which value.
        what: &'static str,
        /// Which rule it breaks, and how to fix it.
        reason: String,
    },

    /// No recovery record has this id.
    #[error("recovery record {id} does not exist; list the pending records again")]
    UnknownRecovery {
        /// The id asked for.
        id: RecoveryId,
    },

    /// The recovery record was already resolved; there is nothing left to retry.
    #[error("recovery record {id} is already resolved; nothing is left to retry for it")]
    RecoveryResolved {
        /// The record.
        id: RecoveryId,
    },

    /// A de-duplication ticket no longer matches an in-flight row (the row was reconciled or removed).
    #[error(
        "request {request_id} is no longer in flight in this journal (the journal was reopened, which marks \
         it unknown, or its row was removed); do not send its input: report the action as unknown"
    )]
    NotInFlight {
        /// The request.
        request_id: String,
    },

    /// Any other SQLite failure.
    #[error(
        "the journal at {} failed: {source}; retry, and if it keeps failing run `browserd doctor`",
        path.display()
    )]
    Sqlite {
        /// The journal file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
}

/// The result type of this crate.
pub type Result<T, E = JournalError> = std::result::Result<T, E>;

/// Maps a SQLite error to the typed error that says what to do.
pub(crate) fn from_sqlite(path: &Path, err: rusqlite::Error) -> JournalError {
    let path = path.to_path_buf();
    if let rusqlite::Error::SqliteFailure(failure, _) = &err {
        match failure.code {
            ErrorCode::DiskFull => return JournalError::Full { path },
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => return JournalError::Busy { path },
            ErrorCode::ReadOnly => return JournalError::ReadOnly { path },
            ErrorCode::DatabaseCorrupt => return JournalError::Corrupt { path, detail: err.to_string() },
            ErrorCode::NotADatabase => return JournalError::NotAJournal { path, detail: err.to_string() },
            _ => {}
        }
    }
    JournalError::Sqlite { path, source: err }
}

/// A stored value the journal cannot read back: the file was edited or damaged.
pub(crate) fn corrupt_value(path: &Path, what: &str, value: &str) -> JournalError {
    JournalError::Corrupt { path: path.to_path_buf(), detail: format!("unexpected {what} {value:?} in a stored row") }
}
