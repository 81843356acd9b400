//! Crash safety: a child process (this test binary re-executed with an environment variable)
//! writes to the journal without pause and is killed with SIGKILL mid-stream, three times over
//! the same file. After each kill the reopened journal must pass its integrity check, hold every
//! record the child reported committed, and read every dispatched-but-uncompleted action back as
//! `unknown` — never as something to dispatch again.
//!
//! `harness = false`: `main` is either the child (when the variable is set) or the test.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use browserd_journal::{
    AttemptOutcome, AuditAction, AuditRecord, Begin, CleanupFailure, CleanupOp, Code, DedupResult, DedupState,
    Dispatch, Journal, JournalConfig, NewRecovery, OpaqueId, Outcome, PayloadHash, RecoveryState, UnixMillis,
};

const CHILD_PATH: &str = "BROWSERD_JOURNAL_CRASH_CHILD_PATH";
const CHILD_START: &str = "BROWSERD_JOURNAL_CRASH_CHILD_START";
/// Iterations the parent waits for before killing the child.
const ITERATIONS_BEFORE_KILL: u64 = 150;
/// The child stops by itself after this many iterations, so it cannot outlive a dead parent for long.
const CHILD_LIMIT: u64 = 100_000;
const ROUNDS: u64 = 3;
const TTL: Duration = Duration::from_secs(86_400);

fn main() {
    if let Some(path) = std::env::var_os(CHILD_PATH) {
        let start = std::env::var(CHILD_START).ok().and_then(|s| s.parse().ok()).unwrap_or(1);
        child(Path::new(&path), start);
        return;
    }
    // Speak the part of libtest's command line that cargo-nextest uses to list tests.
    if std::env::args().any(|arg| arg == "--list") {
        if !std::env::args().any(|arg| arg == "--ignored") {
            println!("kill_9_mid_stream_keeps_every_committed_record: test");
        }
        return;
    }
    print!("test kill_9_mid_stream_keeps_every_committed_record ... ");
    kill_9_mid_stream_keeps_every_committed_record();
    println!("ok");
}

fn hash(i: u64) -> PayloadHash {
    PayloadHash::of_canonical_bytes(format!("{{\"n\":{i}}}").as_bytes())
}

/// Writes iteration after iteration, reporting each one on stdout once all its writes committed.
fn child(path: &Path, start: u64) {
    let mut journal = Journal::open(path, JournalConfig::default()).expect("child opens the journal");
    let mut stdout = std::io::stdout().lock();
    for i in start..start + CHILD_LIMIT {
        let now = UnixMillis(i);
        let Begin::New(pending) = journal.begin(&format!("req-{i}"), hash(i), now, TTL).expect("begin") else {
            panic!("req-{i} is new");
        };
        let dispatched = journal.mark_dispatched(pending, now).expect("mark dispatched");
        if i % 2 == 1 {
            let result = DedupResult {
                outcome: Outcome::Succeeded,
                dispatch: Dispatch::Dispatched,
                code: None,
                trace: Some(OpaqueId::new(format!("trace-{i}")).expect("id")),
            };
            journal.complete(dispatched, &result, now).expect("complete");
        }
        let recovery = NewRecovery {
            session: "session-1".to_owned(),
            browser: "browser-1".to_owned(),
            tab: format!("tab-{i}"),
            op: CleanupOp::Close,
            failure: CleanupFailure {
                outcome: AttemptOutcome::Unknown,
                code: Code::new("CONNECTION_LOST").expect("code"),
                message: "the browser connection dropped during close".to_owned(),
            },
        };
        journal.record_recovery(&recovery, now).expect("record recovery");
        let mut audit = AuditRecord::new(now, AuditAction::Act);
        audit.trace = Some(OpaqueId::new(format!("trace-{i}")).expect("id"));
        journal.audit(&audit).expect("audit");
        // A closed pipe means the parent is gone: stop.
        if writeln!(stdout, "{i}").and_then(|()| stdout.flush()).is_err() {
            return;
        }
    }
}

fn kill_9_mid_stream_keeps_every_committed_record() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("journal.sqlite3");
    let mut start = 1;
    let mut committed = Vec::new();
    for round in 0..ROUNDS {
        let last = run_and_kill(&path, start);
        committed.extend(start..=last);
        assert!(last >= start + ITERATIONS_BEFORE_KILL - 1, "round {round}: the child stopped early at {last}");

        let mut journal = Journal::open(&path, JournalConfig::default()).expect("reopen after kill -9");
        journal.check_integrity().expect("the journal is consistent after kill -9");
        let report = journal.open_report();
        assert_eq!(report.incarnation, 2 * (round + 1), "round {round}: child and parent each opened once");

        let pending = journal.pending_recoveries().expect("pending recoveries");
        let tabs: std::collections::BTreeSet<String> = pending.iter().map(|r| r.tab.clone()).collect();
        let audit = journal.audit_recent(u32::MAX).expect("audit");
        let traces: std::collections::BTreeSet<String> =
            audit.iter().filter_map(|e| e.record.trace.as_ref().map(|t| t.as_str().to_owned())).collect();
        for &i in &committed {
            let state = journal.dedup_state(&format!("req-{i}")).expect("dedup state").map(|(h, s)| {
                assert_eq!(h, hash(i));
                s
            });
            match (i % 2, state) {
                (1, Some(DedupState::Completed(result))) => assert_eq!(result.outcome, Outcome::Succeeded),
                (0, Some(DedupState::Unknown)) => {}
                (_, other) => panic!("round {round}: req-{i} (committed) reads back as {other:?}"),
            }
            assert!(tabs.contains(&format!("tab-{i}")), "round {round}: recovery for tab-{i} lost");
            assert!(traces.contains(&format!("trace-{i}")), "round {round}: audit row {i} lost");
        }
        assert!(pending.iter().all(|r| r.state == RecoveryState::Pending && r.attempts == 1));

        // The iteration the kill interrupted left a prefix of its writes, never a torn row.
        let torn = last + 1;
        match journal.dedup_state(&format!("req-{torn}")).expect("dedup state") {
            None | Some((_, DedupState::Interrupted | DedupState::Unknown | DedupState::Completed(_))) => {}
            Some((_, other)) => panic!("round {round}: req-{torn} reads back in flight: {other:?}"),
        }

        // Nothing dispatched is ever handed out again.
        for i in (start..=last).filter(|i| i % 2 == 0) {
            match journal.begin(&format!("req-{i}"), hash(i), UnixMillis(i), TTL).expect("begin") {
                Begin::Duplicate(DedupState::Unknown) => {}
                other => panic!("round {round}: req-{i} must stay unknown, got {other:?}"),
            }
        }
        // Rows the interrupted iteration may have left are cleared so the next child starts clean.
        start = last + 2;
    }
}

/// Runs a child from iteration `start`, kills it with SIGKILL once it reported
/// [`ITERATIONS_BEFORE_KILL`] iterations, and returns the last iteration it reported.
fn run_and_kill(path: &Path, start: u64) -> u64 {
    let exe = std::env::current_exe().expect("current exe");
    let mut child = Command::new(exe)
        .env(CHILD_PATH, path)
        .env(CHILD_START, start.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the writer");
    let stdout = child.stdout.take().expect("child stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut last = start - 1;
    while last < start + ITERATIONS_BEFORE_KILL - 1 {
        let Some(line) = lines.next() else { break };
        last = line.expect("read child output").trim().parse().expect("child prints numbers");
    }
    child.kill().expect("SIGKILL the writer");
    let status = child.wait().expect("reap the writer");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9), "the writer was killed mid-stream, not finished: {status:?}");
    }
    // Lines the child wrote before dying were committed too.
    for line in lines {
        let Ok(line) = line else { break };
        last = line.trim().parse().expect("child prints numbers");
    }
    last
}
