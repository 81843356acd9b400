//! A quick measurement, not a benchmark suite: the time of 1 000 recovery record+resolve cycles
//! and of 1 000 de-duplication begin/dispatch/complete cycles, for each durability setting, on a
//! journal in a temporary directory (or in the directory given as the first argument, to measure
//! another file system); then how the audit ring's charged size compares with the file's size.
//!
//! Run: `cargo run -p browserd-journal --example cycles [DIR]`

use std::time::{Duration, Instant};

use browserd_journal::{
    AttemptOutcome, AuditAction, AuditLimits, AuditRecord, Begin, CleanupFailure, CleanupOp, Code, DedupResult,
    Dispatch, Durability, InputKind, Journal, JournalConfig, NewRecovery, OpaqueId, Origin, Outcome, PayloadHash,
    Resolution, Timings, UnixMillis,
};

const CYCLES: u64 = 1_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = match std::env::args_os().nth(1) {
        Some(dir) => tempfile::tempdir_in(dir)?,
        None => tempfile::tempdir()?,
    };
    println!("{CYCLES} cycles each, journal under {}", base.path().display());
    for durability in [Durability::Critical, Durability::Full, Durability::Normal] {
        let path = base.path().join(format!("{durability:?}.sqlite3"));
        let mut journal = Journal::open(&path, JournalConfig { durability, ..JournalConfig::default() })?;

        let started = Instant::now();
        for i in 0..CYCLES {
            let new = NewRecovery {
                session: "session-1".to_owned(),
                browser: "browser-1".to_owned(),
                tab: format!("tab-{i}"),
                op: CleanupOp::Close,
                failure: CleanupFailure {
                    outcome: AttemptOutcome::Failed,
                    code: Code::new("CONNECTION_LOST")?,
                    message: "pipe closed".to_owned(),
                },
            };
            let record = journal.record_recovery(&new, UnixMillis(i))?;
            journal.resolve_recovery(record.id, Resolution::Confirmed, UnixMillis(i))?;
        }
        report(durability, "record+resolve", started.elapsed());

        let started = Instant::now();
        for i in 0..CYCLES {
            let hash = PayloadHash::of_canonical_bytes(&i.to_le_bytes());
            let Begin::New(pending) =
                journal.begin(&format!("req-{i}"), hash, UnixMillis(i), Duration::from_secs(600))?
            else {
                return Err(format!("req-{i} was not new").into());
            };
            let dispatched = journal.mark_dispatched(pending, UnixMillis(i))?;
            let result =
                DedupResult { outcome: Outcome::Succeeded, dispatch: Dispatch::Dispatched, code: None, trace: None };
            journal.complete(dispatched, &result, UnixMillis(i))?;
        }
        report(durability, "begin+dispatch+complete", started.elapsed());
    }
    audit_size(base.path())?;
    Ok(())
}

/// Fills a 4 MB audit ring with typical action rows, twice over, and prints charged vs file size.
fn audit_size(dir: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let limits = AuditLimits { max_bytes: 4 * 1024 * 1024, ..AuditLimits::default() };
    let config = JournalConfig { durability: Durability::Normal, audit: limits, ..JournalConfig::default() };
    let mut journal = Journal::open(dir.join("audit.sqlite3"), config)?;
    let row = typical_row(0)?.charged_bytes();
    let rows = 2 * limits.max_bytes / row;
    let started = Instant::now();
    for i in 0..rows {
        journal.audit(&typical_row(i)?)?;
    }
    let elapsed = started.elapsed();
    let stats = journal.stats()?;
    println!(
        "audit: {rows} inserts of {row}-byte rows in {elapsed:.2?}; ring holds {} rows charged {} bytes (cap {}); \
         database {} bytes",
        stats.audit.rows, stats.audit.approx_bytes, limits.max_bytes, stats.file_bytes
    );
    Ok(())
}

fn typical_row(i: u64) -> Result<AuditRecord, Box<dyn std::error::Error>> {
    let mut record = AuditRecord::new(UnixMillis(i), AuditAction::Act);
    record.input = Some(InputKind::Click);
    record.session = Some(OpaqueId::new("codex:019a7c1e-5b2f-7d41-9c3a-1f2e3d4c5b6a")?);
    record.browser = Some(OpaqueId::new("managed-1")?);
    record.tab = Some(OpaqueId::new(format!("target-{i:08}"))?);
    record.request = Some(OpaqueId::new(format!("req-{i:012}"))?);
    record.trace = Some(OpaqueId::new(format!("trace-{i:012}"))?);
    record.origin = Origin::from_url("https://accounts.example.com/login");
    record.outcome = Some(Outcome::Succeeded);
    record.dispatch = Some(Dispatch::Observed);
    record.timings = Timings { total_ms: Some(38), dispatch_ms: Some(2), settle_ms: Some(30), ..Timings::default() };
    Ok(record)
}

fn report(durability: Durability, what: &str, elapsed: Duration) {
    let per_cycle = elapsed / u32::try_from(CYCLES).unwrap_or(u32::MAX);
    println!("{durability:?}: {what}: {elapsed:.2?} total, {per_cycle:.2?} per cycle");
}
