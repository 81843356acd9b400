//! The owned-tab ledger: the tabs a broker holds for its sessions that a crash would leak — agent-created tabs it
//! would close at disposal, claimed user tabs it would release — keyed by durable names (the browser endpoint and
//! the browser's own target id), so a broker that starts after a `kill -9` can find them again.
//!
//! The broker keeps the ledger in line with its sessions (a tab that is closed, released or kept as a deliverable or
//! handoff leaves it). Rows written by an earlier broker process (another incarnation) are *orphans*:
//! [`Journal::adopt_orphans`] turns each one into a pending recovery record (the disposal cleanup the dead broker
//! never did), which is then retried and resolved like any other.

use rusqlite::params;

use crate::error::{Result, corrupt_value, from_sqlite};
use crate::recovery::{CleanupOp, KEY_MAX_LEN, RecoveryRecord};
use crate::types::UnixMillis;
use crate::{Journal, Weight, write_tx_sql};

/// The code of a recovery record adopted from a dead broker's ledger.
pub const BROKER_EXITED: &str = "BROKER_EXITED";

/// One tab in the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OwnedTab {
    /// The broker's durable browser key (e.g. the remote endpoint).
    pub browser: String,
    /// The tab's durable key (e.g. its target id).
    pub tab: String,
    /// The session that owns it.
    pub session: String,
    /// The cleanup disposal would do: `Close` for an agent-created tab, `Release` for a claimed user tab.
    pub op: CleanupOp,
}

fn check(what: &'static str, key: &str) -> Result<()> {
    if key.is_empty() || key.len() > KEY_MAX_LEN || key.chars().any(char::is_control) {
        return Err(crate::error::JournalError::InvalidInput {
            what,
            reason: format!("it must be 1 to {KEY_MAX_LEN} bytes without control characters, got {} bytes", key.len()),
        });
    }
    Ok(())
}

impl Journal {
    /// Records (or updates) `tab` as owned by this broker process. Fsynced under the default durability: losing it
    /// on power loss would leak the tab.
    pub fn record_owned(&mut self, tab: &OwnedTab, now: UnixMillis) -> Result<()> {
        for (what, key) in [("browser key", &tab.browser), ("tab key", &tab.tab), ("session key", &tab.session)] {
            check(what, key)?;
        }
        let incarnation = i64::try_from(self.report.incarnation).unwrap_or(i64::MAX);
        let path = self.path.clone();
        let sql = write_tx_sql(&path);
        let tx = self.write_tx(Weight::Critical)?;
        tx.execute(
            "INSERT INTO owned_tab (browser, tab, session, op, incarnation, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (browser, tab) DO UPDATE SET session = ?3, op = ?4, incarnation = ?5",
            params![tab.browser, tab.tab, tab.session, tab.op.as_str(), incarnation, now.to_sql()],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(())
    }

    /// Removes a tab from the ledger (closed, released, or kept on purpose). Returns whether it was there.
    pub fn forget_owned(&mut self, browser: &str, tab: &str) -> Result<bool> {
        let path = self.path.clone();
        let sql = write_tx_sql(&path);
        let tx = self.write_tx(Weight::Routine)?;
        let removed =
            tx.execute("DELETE FROM owned_tab WHERE browser = ?1 AND tab = ?2", params![browser, tab]).map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(removed > 0)
    }

    /// Every tab in the ledger, this process's and orphans alike, ordered by browser and tab.
    pub fn owned_tabs(&self) -> Result<Vec<OwnedTab>> {
        let sql = |e| from_sqlite(&self.path, e);
        let mut stmt = self
            .conn
            .prepare_cached("SELECT browser, tab, session, op FROM owned_tab ORDER BY browser, tab")
            .map_err(sql)?;
        let mut rows = stmt.query([]).map_err(sql)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(sql)? {
            let op: String = row.get(3).map_err(sql)?;
            out.push(OwnedTab {
                browser: row.get(0).map_err(sql)?,
                tab: row.get(1).map_err(sql)?,
                session: row.get(2).map_err(sql)?,
                op: CleanupOp::from_name(&op).ok_or_else(|| corrupt_value(&self.path, "cleanup op", &op))?,
            });
        }
        Ok(out)
    }

    /// Every browser key the ledger and the recovery records name (e.g. to re-key old ones), sorted.
    pub fn browser_keys(&self) -> Result<Vec<String>> {
        let sql = |e| from_sqlite(&self.path, e);
        let mut stmt = self
            .conn
            .prepare("SELECT browser FROM owned_tab UNION SELECT browser FROM recovery ORDER BY 1")
            .map_err(sql)?;
        let mut rows = stmt.query([]).map_err(sql)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(sql)? {
            out.push(row.get(0).map_err(sql)?);
        }
        Ok(out)
    }

    /// Renames browser key `old` to `new` in the ledger and the recovery records, in one fsynced transaction (an older
    /// broker keyed a remote browser by its whole URL, token included). Where a row under `new` already names the same
    /// tab (and, for a pending record, the same cleanup), the old row is the duplicate and goes. Returns how many rows
    /// were re-keyed.
    pub fn rekey_browser(&mut self, old: &str, new: &str) -> Result<usize> {
        check("browser key", new)?;
        let path = self.path.clone();
        let sql = write_tx_sql(&path);
        let tx = self.write_tx(Weight::Critical)?;
        let mut moved = tx
            .execute("UPDATE OR IGNORE owned_tab SET browser = ?2 WHERE browser = ?1", params![old, new])
            .map_err(sql)?;
        tx.execute("DELETE FROM owned_tab WHERE browser = ?1", params![old]).map_err(sql)?;
        moved += tx
            .execute("UPDATE OR IGNORE recovery SET browser = ?2 WHERE browser = ?1", params![old, new])
            .map_err(sql)?;
        tx.execute("DELETE FROM recovery WHERE browser = ?1", params![old]).map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(moved)
    }

    /// Turns every tab an earlier broker process left in the ledger into a pending recovery record (outcome
    /// unknown, code [`BROKER_EXITED`]) and removes it from the ledger, in one fsynced transaction. A tab that
    /// already has a pending record for the same cleanup counts another attempt on it. Returns the records.
    pub fn adopt_orphans(&mut self, now: UnixMillis) -> Result<Vec<RecoveryRecord>> {
        let incarnation = i64::try_from(self.report.incarnation).unwrap_or(i64::MAX);
        let orphans: Vec<OwnedTab> = {
            let sql = |e| from_sqlite(&self.path, e);
            let mut stmt = self
                .conn
                .prepare("SELECT browser, tab, session, op FROM owned_tab WHERE incarnation <> ?1 ORDER BY created_at")
                .map_err(sql)?;
            let mut rows = stmt.query(params![incarnation]).map_err(sql)?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().map_err(sql)? {
                let op: String = row.get(3).map_err(sql)?;
                out.push(OwnedTab {
                    browser: row.get(0).map_err(sql)?,
                    tab: row.get(1).map_err(sql)?,
                    session: row.get(2).map_err(sql)?,
                    op: CleanupOp::from_name(&op).ok_or_else(|| corrupt_value(&self.path, "cleanup op", &op))?,
                });
            }
            out
        };
        let mut adopted = Vec::with_capacity(orphans.len());
        for orphan in orphans {
            let failure = crate::recovery::CleanupFailure {
                outcome: crate::recovery::AttemptOutcome::Unknown,
                code: crate::types::Code::new(BROKER_EXITED).expect("a valid code"),
                message: "the broker exited before it cleaned up this session's tab".to_owned(),
            };
            let new = crate::recovery::NewRecovery {
                session: orphan.session.clone(),
                browser: orphan.browser.clone(),
                tab: orphan.tab.clone(),
                op: orphan.op,
                failure,
            };
            // The record is written (fsynced) before the ledger row goes: a crash in between leaves both, and the
            // next adoption counts another attempt on the same record.
            adopted.push(self.record_recovery(&new, now)?);
            self.forget_owned(&orphan.browser, &orphan.tab)?;
        }
        Ok(adopted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::RecoveryState;
    use crate::{JournalConfig, JournalError};

    fn tab(n: u32, op: CleanupOp) -> OwnedTab {
        OwnedTab {
            browser: "remote:http://127.0.0.1:9222".into(),
            tab: format!("target:T{n}"),
            session: "s1".into(),
            op,
        }
    }

    #[test]
    fn a_browser_key_is_renamed_everywhere_and_duplicates_go() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(dir.path().join("j.sqlite3"), JournalConfig::default()).unwrap();
        let old = "remote:ws://127.0.0.1:3000/?token=SECRET";
        let new = "remote:ws://127.0.0.1:3000";
        j.record_owned(&OwnedTab { browser: old.into(), ..tab(1, CleanupOp::Close) }, UnixMillis(1)).unwrap();
        j.record_owned(&OwnedTab { browser: old.into(), ..tab(2, CleanupOp::Close) }, UnixMillis(1)).unwrap();
        j.record_owned(&OwnedTab { browser: new.into(), ..tab(2, CleanupOp::Close) }, UnixMillis(1)).unwrap();
        assert_eq!(j.browser_keys().unwrap(), vec![new.to_owned(), old.to_owned()]);
        assert_eq!(j.rekey_browser(old, new).unwrap(), 1);
        assert_eq!(j.browser_keys().unwrap(), vec![new.to_owned()]);
        let tabs: Vec<String> = j.owned_tabs().unwrap().into_iter().map(|t| t.tab).collect();
        assert_eq!(tabs, vec!["target:T1".to_owned(), "target:T2".to_owned()]);
    }

    #[test]
    fn a_dead_brokers_tabs_become_pending_recovery_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.sqlite3");
        {
            let mut j = Journal::open(&path, JournalConfig::default()).unwrap();
            j.record_owned(&tab(1, CleanupOp::Close), UnixMillis(1)).unwrap();
            j.record_owned(&tab(2, CleanupOp::Release), UnixMillis(2)).unwrap();
            j.record_owned(&tab(3, CleanupOp::Close), UnixMillis(3)).unwrap();
            assert!(j.forget_owned("remote:http://127.0.0.1:9222", "target:T3").unwrap());
            assert!(!j.forget_owned("remote:http://127.0.0.1:9222", "target:T3").unwrap());
            // This process's own tabs are not orphans.
            assert!(j.adopt_orphans(UnixMillis(4)).unwrap().is_empty());
            assert_eq!(j.owned_tabs().unwrap().len(), 2);
        }
        let mut j = Journal::open(&path, JournalConfig::default()).unwrap();
        let adopted = j.adopt_orphans(UnixMillis(10)).unwrap();
        assert_eq!(adopted.len(), 2);
        assert_eq!((adopted[0].tab.as_str(), adopted[0].op), ("target:T1", CleanupOp::Close));
        assert_eq!((adopted[1].tab.as_str(), adopted[1].op), ("target:T2", CleanupOp::Release));
        assert!(adopted.iter().all(|r| r.state == RecoveryState::Pending && r.last_code.as_str() == BROKER_EXITED));
        assert!(j.owned_tabs().unwrap().is_empty(), "adopted tabs leave the ledger");
        assert_eq!(j.pending_recoveries().unwrap().len(), 2);
        assert!(j.adopt_orphans(UnixMillis(11)).unwrap().is_empty(), "adopting twice adopts nothing");
    }

    #[test]
    fn keys_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(dir.path().join("j.sqlite3"), JournalConfig::default()).unwrap();
        let mut bad = tab(1, CleanupOp::Close);
        bad.tab = String::new();
        assert!(matches!(j.record_owned(&bad, UnixMillis(1)), Err(JournalError::InvalidInput { what: "tab key", .. })));
    }
}
