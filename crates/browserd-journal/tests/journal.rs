//! Behaviour of the journal through its public API: recovery records, de-duplication, the audit
//! ring, restarts, a full disk, a locked file and file permissions.

use std::path::{Path, PathBuf};
use std::time::Duration;

use browserd_journal::{
    AttemptOutcome, AuditAction, AuditLimits, AuditRecord, Begin, CleanupFailure, CleanupOp, Code, DedupResult,
    DedupState, Dispatch, InputKind, Journal, JournalConfig, JournalError, NewRecovery, OpaqueId, Origin, Outcome,
    PayloadHash, PolicyDecision, RecoveryId, RecoveryState, Resolution, Timings, UnixMillis,
};
use serde_json::json;

const TTL: Duration = Duration::from_secs(600);

fn temp_journal() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/browserd/journal.sqlite3");
    (dir, path)
}

fn open(path: &Path) -> Journal {
    Journal::open(path, JournalConfig::default()).unwrap()
}

fn failure(code: &str, message: &str) -> CleanupFailure {
    CleanupFailure { outcome: AttemptOutcome::Failed, code: Code::new(code).unwrap(), message: message.to_owned() }
}

fn cleanup(session: &str, tab: &str, op: CleanupOp) -> NewRecovery {
    NewRecovery {
        session: session.to_owned(),
        browser: "managed-1".to_owned(),
        tab: tab.to_owned(),
        op,
        failure: failure("CONNECTION_LOST", "pipe closed"),
    }
}

fn hash(n: u64) -> PayloadHash {
    PayloadHash::of_json(&json!({"tool": "act", "n": n}))
}

fn result(outcome: Outcome, dispatch: Dispatch, code: Option<&str>) -> DedupResult {
    DedupResult {
        outcome,
        dispatch,
        code: code.map(|c| Code::new(c).unwrap()),
        trace: Some(OpaqueId::new("tr-1").unwrap()),
    }
}

// ---------------------------------------------------------------- recovery records

#[test]
fn recovery_records_survive_a_restart() {
    let (_dir, path) = temp_journal();
    let (first, second) = {
        let mut journal = open(&path);
        let first = journal.record_recovery(&cleanup("s1", "target-A", CleanupOp::Close), UnixMillis(1_000)).unwrap();
        let second =
            journal.record_recovery(&cleanup("s2", "target-B", CleanupOp::DetachDebugger), UnixMillis(2_000)).unwrap();
        (first, second)
    };
    let journal = open(&path);
    assert_eq!(journal.pending_recoveries().unwrap(), vec![first.clone(), second.clone()]);
    assert_eq!(first.state, RecoveryState::Pending);
    assert_eq!(first.attempts, 1);
    assert_eq!(first.last_code.as_str(), "CONNECTION_LOST");
    assert_eq!(first.last_message, "pipe closed");
    assert_eq!((first.created_at, first.updated_at), (UnixMillis(1_000), UnixMillis(1_000)));
    assert_eq!(journal.pending_recoveries_for_session("s2").unwrap(), vec![second]);
    assert_eq!(journal.pending_recoveries_for_session("nobody").unwrap(), vec![]);
    assert_eq!(journal.pending_recoveries_for_browser("managed-1").unwrap().len(), 2);
}

#[test]
fn recording_the_same_cleanup_again_counts_an_attempt() {
    let (_dir, path) = temp_journal();
    let mut journal = open(&path);
    let first = journal.record_recovery(&cleanup("s1", "target-A", CleanupOp::Close), UnixMillis(10)).unwrap();
    let mut again = cleanup("s-other", "target-A", CleanupOp::Close);
    again.failure = CleanupFailure {
        outcome: AttemptOutcome::Unknown,
        code: Code::new("DEADLINE_EXCEEDED").unwrap(),
        message: "t".into(),
    };
    let second = journal.record_recovery(&again, UnixMillis(20)).unwrap();
    assert_eq!(second.id, first.id);
    assert_eq!(second.attempts, 2);
    assert_eq!(second.session, "s1", "the first session keeps the record");
    assert_eq!(second.last_outcome, AttemptOutcome::Unknown);
    assert_eq!((second.created_at, second.updated_at), (UnixMillis(10), UnixMillis(20)));
    // Another operation on the same tab is another record.
    let release = journal.record_recovery(&cleanup("s1", "target-A", CleanupOp::Release), UnixMillis(30)).unwrap();
    assert_ne!(release.id, first.id);
    assert_eq!(journal.pending_recoveries().unwrap().len(), 2);
}

#[test]
fn attempts_and_resolution_follow_the_record() {
    let (_dir, path) = temp_journal();
    let mut journal = open(&path);
    let record = journal.record_recovery(&cleanup("s1", "target-A", CleanupOp::Close), UnixMillis(10)).unwrap();
    let retried = journal.mark_recovery_attempt(record.id, &failure("TARGET_BUSY", "busy"), UnixMillis(20)).unwrap();
    assert_eq!(retried.attempts, 2);
    assert_eq!(retried.last_code.as_str(), "TARGET_BUSY");
    assert_eq!(retried.updated_at, UnixMillis(20));

    let resolved = journal.resolve_recovery(record.id, Resolution::Confirmed, UnixMillis(30)).unwrap();
    assert_eq!(resolved.state, RecoveryState::Resolved(Resolution::Confirmed));
    assert_eq!(resolved.attempts, 2);
    assert!(journal.pending_recoveries().unwrap().is_empty());
    assert_eq!(journal.recovery(record.id).unwrap(), Some(resolved));

    let err = journal.resolve_recovery(record.id, Resolution::Abandoned, UnixMillis(40)).unwrap_err();
    assert!(matches!(err, JournalError::RecoveryResolved { id } if id == record.id), "{err}");
    let err = journal.mark_recovery_attempt(record.id, &failure("X", "x"), UnixMillis(40)).unwrap_err();
    assert!(matches!(err, JournalError::RecoveryResolved { .. }), "{err}");
    let err = journal.resolve_recovery(RecoveryId(999), Resolution::Confirmed, UnixMillis(40)).unwrap_err();
    assert!(matches!(err, JournalError::UnknownRecovery { id: RecoveryId(999) }), "{err}");
    assert!(err.to_string().contains("list the pending records again"));

    // A new failure of the same cleanup after resolution opens a new record.
    let reopened = journal.record_recovery(&cleanup("s1", "target-A", CleanupOp::Close), UnixMillis(50)).unwrap();
    assert_ne!(reopened.id, record.id);
    assert_eq!(reopened.attempts, 1);
}

#[test]
fn a_closed_tab_resolves_all_its_records_and_old_ones_are_purged() {
    let (_dir, path) = temp_journal();
    let mut journal = open(&path);
    let close = journal.record_recovery(&cleanup("s1", "target-A", CleanupOp::Close), UnixMillis(10)).unwrap();
    let detach =
        journal.record_recovery(&cleanup("s1", "target-A", CleanupOp::DetachDebugger), UnixMillis(11)).unwrap();
    let other = journal.record_recovery(&cleanup("s1", "target-B", CleanupOp::Close), UnixMillis(12)).unwrap();
    let resolved =
        journal.resolve_tab_recoveries("managed-1", "target-A", Resolution::AlreadyGone, UnixMillis(20)).unwrap();
    assert_eq!(resolved.iter().map(|r| r.id).collect::<Vec<_>>(), vec![close.id, detach.id]);
    assert!(resolved.iter().all(|r| r.state == RecoveryState::Resolved(Resolution::AlreadyGone)));
    assert_eq!(journal.pending_recoveries().unwrap(), vec![other.clone()]);
    assert!(
        journal
            .resolve_tab_recoveries("managed-1", "target-A", Resolution::AlreadyGone, UnixMillis(21))
            .unwrap()
            .is_empty()
    );

    assert_eq!(journal.purge_resolved(UnixMillis(20)).unwrap(), 0, "strictly older than the cutoff");
    assert_eq!(journal.purge_resolved(UnixMillis(21)).unwrap(), 2);
    assert_eq!(journal.recovery(close.id).unwrap(), None);
    assert_eq!(journal.pending_recoveries().unwrap(), vec![other]);
}

#[test]
fn recovery_inputs_are_validated_and_messages_bounded() {
    let (_dir, path) = temp_journal();
    let mut journal = open(&path);
    let mut bad = cleanup("", "t", CleanupOp::Close);
    assert!(matches!(
        journal.record_recovery(&bad, UnixMillis(1)).unwrap_err(),
        JournalError::InvalidInput { what: "session key", .. }
    ));
    bad.session = "s".into();
    bad.tab = "x".repeat(300);
    assert!(matches!(
        journal.record_recovery(&bad, UnixMillis(1)).unwrap_err(),
        JournalError::InvalidInput { what: "tab key", .. }
    ));
    let mut long = cleanup("s", "t", CleanupOp::Close);
    long.failure.message = "m".repeat(5_000);
    let record = journal.record_recovery(&long, UnixMillis(1)).unwrap();
    assert_eq!(record.last_message.len(), browserd_journal::recovery::MESSAGE_MAX_LEN);
}

// ---------------------------------------------------------------- de-duplication

#[test]
fn a_completed_request_answers_duplicates_with_its_result() {
    let (_dir, path) = temp_journal();
    let mut journal = open(&path);
    let Begin::New(pending) = journal.begin("req-1", hash(1), UnixMillis(100), TTL).unwrap() else {
        panic!("a fresh request id must be new");
    };
    assert_eq!(pending.request_id(), "req-1");
    assert!(matches!(
        journal.begin("req-1", hash(1), UnixMillis(101), TTL).unwrap(),
        Begin::Duplicate(DedupState::Received)
    ));
    let dispatched = journal.mark_dispatched(pending, UnixMillis(102)).unwrap();
    assert!(matches!(
        journal.begin("req-1", hash(1), UnixMillis(103), TTL).unwrap(),
        Begin::Duplicate(DedupState::Dispatched)
    ));
    let done = result(Outcome::Succeeded, Dispatch::Observed, None);
    journal.complete(dispatched, &done, UnixMillis(104)).unwrap();
    match journal.begin("req-1", hash(1), UnixMillis(105), TTL).unwrap() {
        Begin::Duplicate(DedupState::Completed(stored)) => assert_eq!(stored, done),
        other => panic!("expected the stored result, got {other:?}"),
    }
    assert!(matches!(journal.begin("req-1", hash(2), UnixMillis(106), TTL).unwrap(), Begin::PayloadMismatch));
    assert_eq!(journal.dedup_state("req-1").unwrap(), Some((hash(1), DedupState::Completed(done))));
}

#[test]
fn a_dispatched_request_reads_back_unknown_after_a_restart_and_is_never_new_again() {
    let (_dir, path) = temp_journal();
    {
        let mut journal = open(&path);
        let Begin::New(pending) = journal.begin("req-sent", hash(1), UnixMillis(100), TTL).unwrap() else { panic!() };
        let _lost = journal.mark_dispatched(pending, UnixMillis(101)).unwrap();
        let Begin::New(_never_sent) = journal.begin("req-held", hash(2), UnixMillis(102), TTL).unwrap() else {
            panic!()
        };
        // The process dies here: no completion is written.
    }
    for restart in 0..3 {
        let mut journal = open(&path);
        if restart == 0 {
            let report = journal.open_report();
            assert_eq!((report.marked_unknown, report.marked_retryable), (1, 1));
        }
        assert_eq!(journal.dedup_state("req-sent").unwrap(), Some((hash(1), DedupState::Unknown)));
        assert!(matches!(
            journal.begin("req-sent", hash(1), UnixMillis(200), TTL).unwrap(),
            Begin::Duplicate(DedupState::Unknown)
        ));
        assert!(matches!(journal.begin("req-sent", hash(9), UnixMillis(200), TTL).unwrap(), Begin::PayloadMismatch));
        if restart == 0 {
            // Received but never dispatched: nothing went out, so the same request may start afresh.
            assert_eq!(journal.dedup_state("req-held").unwrap(), Some((hash(2), DedupState::Interrupted)));
            let Begin::New(pending) = journal.begin("req-held", hash(2), UnixMillis(201), TTL).unwrap() else {
                panic!("an interrupted undispatched request restarts");
            };
            journal.abandon(pending).unwrap();
        }
    }
}

#[test]
fn tickets_from_an_earlier_opening_cannot_move_a_row() {
    let (_dir, path) = temp_journal();
    let mut old = open(&path);
    let Begin::New(pending) = old.begin("req-1", hash(1), UnixMillis(100), TTL).unwrap() else { panic!() };
    let Begin::New(other) = old.begin("req-2", hash(2), UnixMillis(100), TTL).unwrap() else { panic!() };
    let dispatched = old.mark_dispatched(other, UnixMillis(101)).unwrap();
    drop(old);

    // The next opening reconciles: req-1 becomes retryable, req-2 unknown; old tickets are void.
    let mut new = open(&path);
    assert_eq!(new.dedup_state("req-2").unwrap(), Some((hash(2), DedupState::Unknown)));
    let err =
        new.complete(dispatched, &result(Outcome::Succeeded, Dispatch::Dispatched, None), UnixMillis(103)).unwrap_err();
    assert!(matches!(&err, JournalError::NotInFlight { request_id } if request_id == "req-2"), "{err}");
    assert!(err.to_string().contains("do not send its input"), "{err}");
    assert_eq!(new.dedup_state("req-2").unwrap(), Some((hash(2), DedupState::Unknown)));

    // Even once req-1 is re-claimed by the new opening, the old ticket cannot touch it.
    let Begin::New(fresh) = new.begin("req-1", hash(1), UnixMillis(104), TTL).unwrap() else { panic!() };
    let err = new.mark_dispatched(pending, UnixMillis(105)).unwrap_err();
    assert!(matches!(&err, JournalError::NotInFlight { request_id } if request_id == "req-1"), "{err}");
    assert_eq!(new.dedup_state("req-1").unwrap(), Some((hash(1), DedupState::Received)));
    let _dispatched = new.mark_dispatched(fresh, UnixMillis(106)).unwrap();
}

#[test]
fn only_one_journal_may_hold_a_file() {
    let (_dir, path) = temp_journal();
    let mut first = open(&path);
    let Begin::New(pending) = first.begin("req-1", hash(1), UnixMillis(0), TTL).unwrap() else { panic!() };
    let dispatched = first.mark_dispatched(pending, UnixMillis(1)).unwrap();
    let err = Journal::open(&path, JournalConfig::default()).unwrap_err();
    assert!(matches!(err, JournalError::Busy { .. }), "{err}");
    assert!(err.to_string().contains("browserd broker stop"), "{err}");
    // The refused opener reconciled nothing: the live journal completes its action.
    first.complete(dispatched, &result(Outcome::Succeeded, Dispatch::Dispatched, None), UnixMillis(2)).unwrap();
    drop(first);
    assert!(matches!(open(&path).dedup_state("req-1").unwrap(), Some((_, DedupState::Completed(_)))));
}

#[test]
fn undispatched_endings_are_recorded_or_forgotten() {
    let (_dir, path) = temp_journal();
    let mut journal = open(&path);
    let Begin::New(pending) = journal.begin("req-denied", hash(1), UnixMillis(1), TTL).unwrap() else { panic!() };
    let err = journal
        .complete_undispatched(
            pending,
            &result(Outcome::Failed, Dispatch::Dispatched, Some("POLICY_DENIED")),
            UnixMillis(2),
        )
        .unwrap_err();
    assert!(matches!(err, JournalError::InvalidInput { what: "undispatched result", .. }), "{err}");
    // The rejected call consumed the ticket; the row stays in flight.
    assert!(matches!(
        journal.begin("req-denied", hash(1), UnixMillis(3), TTL).unwrap(),
        Begin::Duplicate(DedupState::Received)
    ));

    let Begin::New(pending) = journal.begin("req-denied-2", hash(1), UnixMillis(1), TTL).unwrap() else { panic!() };
    let denied = result(Outcome::Failed, Dispatch::NotDispatched, Some("POLICY_DENIED"));
    journal.complete_undispatched(pending, &denied, UnixMillis(2)).unwrap();
    match journal.begin("req-denied-2", hash(1), UnixMillis(3), TTL).unwrap() {
        Begin::Duplicate(DedupState::Completed(stored)) => assert_eq!(stored, denied),
        other => panic!("expected the stored denial, got {other:?}"),
    }

    let Begin::New(pending) = journal.begin("req-busy", hash(1), UnixMillis(1), TTL).unwrap() else { panic!() };
    journal.abandon(pending).unwrap();
    assert_eq!(journal.dedup_state("req-busy").unwrap(), None);
    assert!(matches!(journal.begin("req-busy", hash(5), UnixMillis(2), TTL).unwrap(), Begin::New(_)));
}

#[test]
fn settled_rows_expire_but_in_flight_rows_do_not() {
    let (_dir, path) = temp_journal();
    let ttl = Duration::from_millis(1_000);
    {
        let mut journal = open(&path);
        let Begin::New(done) = journal.begin("done", hash(1), UnixMillis(0), ttl).unwrap() else { panic!() };
        let done = journal.mark_dispatched(done, UnixMillis(1)).unwrap();
        journal.complete(done, &result(Outcome::Succeeded, Dispatch::Dispatched, None), UnixMillis(2)).unwrap();
        let Begin::New(lost) = journal.begin("lost", hash(2), UnixMillis(0), ttl).unwrap() else { panic!() };
        let _lost = journal.mark_dispatched(lost, UnixMillis(1)).unwrap();
    }
    let mut journal = open(&path);
    let Begin::New(_in_flight) = journal.begin("in-flight", hash(3), UnixMillis(0), ttl).unwrap() else { panic!() };
    assert_eq!(journal.purge_expired(UnixMillis(999)).unwrap(), 0);
    assert_eq!(journal.purge_expired(UnixMillis(5_000)).unwrap(), 2, "the completed and the unknown row");
    assert_eq!(journal.dedup_state("lost").unwrap(), None);
    assert_eq!(journal.dedup_state("in-flight").unwrap().map(|(_, s)| s), Some(DedupState::Received));
    assert!(matches!(journal.begin("in-flight", hash(3), UnixMillis(9_000), ttl).unwrap(), Begin::Duplicate(_)));
    // After expiry the request id is new again, even with another payload.
    assert!(matches!(journal.begin("done", hash(7), UnixMillis(5_001), ttl).unwrap(), Begin::New(_)));
}

#[test]
fn begin_purges_an_expired_row_it_meets() {
    let (_dir, path) = temp_journal();
    let mut journal = open(&path);
    let ttl = Duration::from_millis(10);
    let Begin::New(pending) = journal.begin("r", hash(1), UnixMillis(0), ttl).unwrap() else { panic!() };
    let denied = result(Outcome::Failed, Dispatch::NotDispatched, Some("POLICY_DENIED"));
    journal.complete_undispatched(pending, &denied, UnixMillis(1)).unwrap();
    assert!(matches!(journal.begin("r", hash(2), UnixMillis(9), ttl).unwrap(), Begin::PayloadMismatch));
    assert!(matches!(journal.begin("r", hash(2), UnixMillis(10), ttl).unwrap(), Begin::New(_)));
    assert_eq!(journal.stats().unwrap().dedup_rows, 1);
}

#[test]
fn request_ids_are_validated() {
    let (_dir, path) = temp_journal();
    let mut journal = open(&path);
    for bad in [String::new(), "x".repeat(257), "a\nb".to_owned()] {
        let err = journal.begin(&bad, hash(1), UnixMillis(0), TTL).unwrap_err();
        assert!(matches!(err, JournalError::InvalidInput { what: "request id", .. }), "{err}");
    }
}

// ---------------------------------------------------------------- audit ring

fn act_record(at: u64, n: u64) -> AuditRecord {
    let mut record = AuditRecord::new(UnixMillis(at), AuditAction::Act);
    record.input = Some(InputKind::Type);
    record.session = Some(OpaqueId::new("codex:s1").unwrap());
    record.browser = Some(OpaqueId::new("managed-1").unwrap());
    record.tab = Some(OpaqueId::new(format!("t{n}")).unwrap());
    record.request = Some(OpaqueId::digest_of("a request id with spaces"));
    record.trace = Some(OpaqueId::new(format!("trace-{n}")).unwrap());
    record.origin = Origin::from_url("https://shop.example/checkout?card=4111111111111111");
    record.outcome = Some(Outcome::Succeeded);
    record.dispatch = Some(Dispatch::Observed);
    record.code = None;
    record.policy = Some(PolicyDecision::Allowed);
    record.timings = Timings { total_ms: Some(41), dispatch_ms: Some(3), settle_ms: Some(30), ..Timings::default() };
    record
}

#[test]
fn audit_records_round_trip_without_page_content() {
    let (_dir, path) = temp_journal();
    let record = act_record(1_000, 1);
    let id = open(&path).audit(&record).unwrap();
    let journal = open(&path);
    let entries = journal.audit_recent(10).unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].id, id);
    assert_eq!(entries[0].record, record);
    assert_eq!(record.origin.as_ref().unwrap().as_str(), "https://shop.example");
    // Nothing of the URL's path or query reached the file.
    drop(journal);
    let bytes = std::fs::read(&path).unwrap();
    let haystack = String::from_utf8_lossy(&bytes);
    assert!(!haystack.contains("4111111111111111") && !haystack.contains("checkout"));
    assert!(haystack.contains("https://shop.example"));
}

#[test]
fn the_audit_ring_is_bounded_by_size() {
    let (_dir, path) = temp_journal();
    let row = act_record(0, 1).charged_bytes();
    let config = JournalConfig {
        audit: AuditLimits { max_bytes: row * 50, prune_batch: 8, ..AuditLimits::default() },
        ..JournalConfig::default()
    };
    let mut journal = Journal::open(&path, config).unwrap();
    for n in 0..400 {
        journal.audit(&act_record(1_000 + n, n)).unwrap();
        let stats = journal.audit_stats().unwrap();
        assert!(stats.approx_bytes <= row * 50 + row, "after {n}: {stats:?}");
    }
    let stats = journal.audit_stats().unwrap();
    assert!((45..=51).contains(&stats.rows), "{stats:?}");
    let newest = journal.audit_recent(1).unwrap();
    assert_eq!(newest[0].record.trace.as_ref().unwrap().as_str(), "trace-399", "the newest rows are kept");
    journal.check_integrity().unwrap();
}

#[test]
fn the_audit_ring_is_bounded_by_age_on_insert_and_by_prune() {
    let (_dir, path) = temp_journal();
    let hour = 3_600_000;
    let config = JournalConfig {
        audit: AuditLimits { max_age: Duration::from_secs(3_600), prune_batch: 4, ..AuditLimits::default() },
        ..JournalConfig::default()
    };
    let mut journal = Journal::open(&path, config).unwrap();
    for n in 0..10 {
        journal.audit(&act_record(n, n)).unwrap();
    }
    // One insert an hour later removes one small batch of the old rows.
    journal.audit(&act_record(hour + 10, 100)).unwrap();
    assert_eq!(journal.audit_stats().unwrap().rows, 11 - 4);
    // The next insert removes the next batch; prune finishes the job. A row exactly max_age old stays.
    journal.audit(&act_record(hour + 10, 101)).unwrap();
    assert_eq!(journal.audit_stats().unwrap().oldest, Some(UnixMillis(8)));
    assert_eq!(journal.prune_audit(UnixMillis(hour + 9)).unwrap(), 1);
    assert_eq!(journal.audit_stats().unwrap().oldest, Some(UnixMillis(9)));
    assert_eq!(journal.prune_audit(UnixMillis(hour + 9)).unwrap(), 0);
    assert_eq!(journal.prune_audit(UnixMillis(hour + 10)).unwrap(), 1);
    let stats = journal.audit_stats().unwrap();
    assert_eq!((stats.rows, stats.oldest), (2, Some(UnixMillis(hour + 10))));
    journal.check_integrity().unwrap();
}

#[test]
fn prune_cleans_every_table() {
    let (_dir, path) = temp_journal();
    let mut journal = open(&path);
    let day = 86_400_000;
    let record = journal.record_recovery(&cleanup("s", "t", CleanupOp::Close), UnixMillis(0)).unwrap();
    journal.resolve_recovery(record.id, Resolution::Confirmed, UnixMillis(1)).unwrap();
    let Begin::New(pending) = journal.begin("r", hash(1), UnixMillis(0), TTL).unwrap() else { panic!() };
    journal
        .complete_undispatched(pending, &result(Outcome::Failed, Dispatch::NotDispatched, None), UnixMillis(1))
        .unwrap();
    journal.audit(&act_record(0, 0)).unwrap();
    let report = journal.prune(UnixMillis(8 * day)).unwrap();
    assert_eq!((report.dedup_expired, report.audit_removed, report.recoveries_removed), (1, 1, 1));
    let stats = journal.stats().unwrap();
    assert_eq!((stats.resolved_recoveries, stats.dedup_rows, stats.audit.rows), (0, 0, 0));
}

// ---------------------------------------------------------------- the file

#[test]
fn a_full_disk_fails_the_write_with_advice_and_loses_nothing_committed() {
    let (_dir, path) = temp_journal();
    drop(open(&path));
    let cap = std::fs::metadata(&path).unwrap().len() + 64 * 1024;
    let config = JournalConfig { max_file_bytes: Some(cap), ..JournalConfig::default() };
    let mut journal = Journal::open(&path, config).unwrap();
    let mut committed = Vec::new();
    let err = loop {
        let mut new = cleanup("s", &format!("tab-{}", committed.len()), CleanupOp::Close);
        new.failure.message = "x".repeat(500);
        match journal.record_recovery(&new, UnixMillis(committed.len() as u64)) {
            Ok(record) => committed.push(record),
            Err(err) => break err,
        }
        assert!(committed.len() < 10_000, "the size cap was never hit");
    };
    assert!(matches!(err, JournalError::Full { .. }), "{err}");
    assert!(err.to_string().contains("nothing committed before it was lost"), "{err}");
    assert!(committed.len() > 10, "only {} records fit", committed.len());
    // Reads still work, other writes may fail the same way, and everything committed is there.
    assert_eq!(journal.pending_recoveries().unwrap(), committed);
    journal.check_integrity().unwrap();
    drop(journal);
    let mut journal = open(&path);
    assert_eq!(journal.pending_recoveries().unwrap(), committed);
    journal.record_recovery(&cleanup("s", "after", CleanupOp::Close), UnixMillis(0)).unwrap();
}

#[test]
fn a_locked_journal_fails_with_busy_after_the_timeout() {
    let (_dir, path) = temp_journal();
    let config = JournalConfig { busy_timeout: Duration::from_millis(50), ..JournalConfig::default() };
    let mut journal = Journal::open(&path, config).unwrap();
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let err = journal.record_recovery(&cleanup("s", "t", CleanupOp::Close), UnixMillis(0)).unwrap_err();
    assert!(matches!(err, JournalError::Busy { .. }), "{err}");
    assert!(err.to_string().contains("only one broker"), "{err}");
    other.execute_batch("ROLLBACK").unwrap();
    journal.record_recovery(&cleanup("s", "t", CleanupOp::Close), UnixMillis(0)).unwrap();
}

#[cfg(unix)]
#[test]
fn the_directory_and_file_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, path) = temp_journal();
    let journal = open(&path);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    let wal = path.with_extension("sqlite3-wal");
    assert!(wal.exists(), "WAL mode is on");
    assert_eq!(mode(&wal), 0o600);
    assert_eq!(mode(&path.with_extension("sqlite3.lock")), 0o600);
    drop(journal);

    // A file others can read is tightened on open.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    drop(open(&path));
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn stats_count_what_is_stored() {
    let (_dir, path) = temp_journal();
    {
        let mut journal = open(&path);
        assert_eq!(journal.open_report().incarnation, 1);
        journal.record_recovery(&cleanup("s", "t", CleanupOp::Close), UnixMillis(0)).unwrap();
        let Begin::New(pending) = journal.begin("r", hash(1), UnixMillis(0), TTL).unwrap() else { panic!() };
        let _ = journal.mark_dispatched(pending, UnixMillis(1)).unwrap();
        journal.audit(&act_record(0, 0)).unwrap();
    }
    let journal = open(&path);
    let stats = journal.stats().unwrap();
    assert_eq!(stats.schema_version, browserd_journal::SCHEMA_VERSION);
    assert_eq!(stats.incarnation, 2);
    assert_eq!((stats.pending_recoveries, stats.dedup_rows, stats.dedup_unknown, stats.audit.rows), (1, 1, 1, 1));
    assert_eq!(stats.audit.approx_bytes, act_record(0, 0).charged_bytes());
    assert!(stats.file_bytes > 0);
    let raw = rusqlite::Connection::open(&path).unwrap();
    let mode: String = raw.pragma_query_value(None, "journal_mode", |row| row.get(0)).unwrap();
    assert_eq!(mode, "wal");
    let auto_vacuum: i64 = raw.pragma_query_value(None, "auto_vacuum", |row| row.get(0)).unwrap();
    assert_eq!(auto_vacuum, 2, "incremental auto-vacuum, so prune can give pages back");
}
