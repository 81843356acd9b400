//! Whether the broker's journal works, and the refusal of what must be recorded when it does not (issue 14: the
//! journal fails closed).
//!
//! The journal (`browserd-journal`) holds what a broker crash must not lose: the de-duplication log (an input sent
//! is never replayed), the owned-tab ledger (a tab it opened or claimed is cleaned up by the next broker) and the
//! recovery records. When it cannot be opened at start, or a write fails later, the operations that need it — input
//! (`browser_act`, `browser_batch`, the advanced tier) and opening or claiming a tab — are refused with
//! `JOURNAL_UNAVAILABLE`, whose message names the file and the failure and whose next step says what to free or fix.
//! Reads, marks and cleanup keep working. `status` and `browser_status` report `journal: {state, path, reason,
//! nextStep}` (`browserd doctor` reads it from `status`). Before each refused-class operation the gate tries again:
//! it reopens a journal that could not be opened, and probes a degraded one with one committed write, so freeing the
//! disk is enough to recover.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use browserd_protocol::lifecycle::{JournalState, JournalStatus};
use browserd_protocol::{ErrorCode, ErrorData};

use crate::dedup::{DedupLog, journal_unavailable};

/// What [`JournalGate::admit`] found.
#[derive(Debug)]
pub enum Admitted {
    /// No journal is configured; nothing to record.
    Off,
    /// The journal works.
    Open(Arc<DedupLog>),
    /// It works again after it could not be opened: the caller settles what a previous broker left (as at start).
    Reopened(Arc<DedupLog>),
}

/// The broker's journal and its health.
#[derive(Debug, Default)]
pub struct JournalGate {
    path: Mutex<Option<PathBuf>>,
    log: Mutex<Option<Arc<DedupLog>>>,
    /// Why the journal could not be opened (it is retried at the next recorded operation).
    open_error: Mutex<Option<String>>,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl JournalGate {
    /// Uses the journal at `path`.
    pub fn set_path(&self, path: PathBuf) {
        *locked(&self.path) = Some(path);
    }

    /// The journal file, when one is configured.
    #[must_use]
    pub fn path(&self) -> Option<PathBuf> {
        locked(&self.path).clone()
    }

    /// The open journal.
    #[must_use]
    pub fn log(&self) -> Option<Arc<DedupLog>> {
        locked(&self.log).clone()
    }

    /// Takes the open journal (at shutdown: it is closed before the instance lock is released).
    pub fn take(&self) -> Option<Arc<DedupLog>> {
        locked(&self.log).take()
    }

    /// Opens the configured journal (at start). On failure the broker still serves reads; the error is kept,
    /// reported and retried.
    pub fn open(&self) -> Option<Arc<DedupLog>> {
        let path = self.path()?;
        match DedupLog::open(&path) {
            Ok(log) => {
                let log = Arc::new(log);
                *locked(&self.log) = Some(log.clone());
                *locked(&self.open_error) = None;
                tracing::info!(journal = %path.display(), "journal open");
                Some(log)
            }
            Err(e) => {
                tracing::warn!(
                    journal = %path.display(), %e,
                    "the journal cannot be opened; input and new or claimed tabs are refused until it can"
                );
                *locked(&self.open_error) = Some(e.to_string());
                None
            }
        }
    }

    /// Before an operation that must be recorded: the journal must work now.
    ///
    /// # Errors
    /// `JOURNAL_UNAVAILABLE` when it cannot be opened or written.
    pub fn admit(&self) -> Result<Admitted, ErrorData> {
        let Some(path) = self.path() else { return Ok(Admitted::Off) };
        if let Some(log) = self.log() {
            if log.degraded().is_some() {
                log.probe()?;
                tracing::info!(journal = %path.display(), "the journal can be written again");
            }
            return Ok(Admitted::Open(log));
        }
        match self.open() {
            Some(log) => Ok(Admitted::Reopened(log)),
            None => {
                let why = locked(&self.open_error).clone().unwrap_or_else(|| "it could not be opened".to_owned());
                Err(journal_unavailable(&path, &why))
            }
        }
    }

    /// The journal as `status` reports it.
    #[must_use]
    pub fn status(&self) -> JournalStatus {
        let Some(path) = self.path() else {
            return JournalStatus { state: JournalState::Off, ..JournalStatus::default() };
        };
        let reason = match self.log() {
            Some(log) => log.degraded(),
            None => Some(locked(&self.open_error).clone().unwrap_or_else(|| "not opened yet".to_owned())),
        };
        JournalStatus {
            state: if reason.is_some() { JournalState::Degraded } else { JournalState::Ok },
            path: Some(path.display().to_string()),
            next_step: reason.as_ref().map(|_| ErrorCode::JournalUnavailable.next_step().to_owned()),
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_path_the_journal_is_off_and_nothing_is_refused() {
        let gate = JournalGate::default();
        assert!(matches!(gate.admit(), Ok(Admitted::Off)));
        assert_eq!(gate.status().state, JournalState::Off);
    }

    #[test]
    fn a_journal_that_cannot_be_opened_refuses_and_is_retried() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the journal's directory must be: opening fails.
        let blocker = dir.path().join("state");
        std::fs::write(&blocker, b"not a directory").unwrap();
        let gate = JournalGate::default();
        gate.set_path(blocker.join("journal.sqlite3"));
        assert!(gate.open().is_none());
        let status = gate.status();
        assert_eq!(status.state, JournalState::Degraded);
        assert!(status.reason.is_some() && status.next_step.is_some(), "{status:?}");
        let refused = gate.admit().unwrap_err();
        assert_eq!(refused.code, ErrorCode::JournalUnavailable);
        assert!(refused.message.contains("journal.sqlite3"), "{}", refused.message);
        // Fixed: the next recorded operation reopens it.
        std::fs::remove_file(&blocker).unwrap();
        assert!(matches!(gate.admit(), Ok(Admitted::Reopened(_))));
        assert_eq!(gate.status().state, JournalState::Ok);
        assert!(matches!(gate.admit(), Ok(Admitted::Open(_))));
    }
}
