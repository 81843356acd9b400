//! The broker's use of the durable journal: de-duplication of `tool.call`s that carry a `callId` (BRIEF §6: the same
//! id with the same payload is answered from the log and never acts twice; the same id with another payload is
//! refused, `PAYLOAD_MISMATCH`; a call a previous broker dispatched but never finished is `OUTCOME_UNKNOWN` and is
//! never replayed), the mirror of the runtime's recovery records, and the audit metadata ring.
//!
//! The journal is synchronous SQLite; each step is one short transaction (an fsync of about 2 ms for the
//! `dispatched` mark), done inline.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use browserd_journal::dedup::{Begin, DedupResult, DedupState, Dispatched, Pending};
use browserd_journal::hash::PayloadHash;
use browserd_journal::types::{Code, Dispatch, OpaqueId, Outcome, UnixMillis};
use browserd_journal::{Journal, JournalConfig};
use browserd_protocol::{ErrorCode, ErrorData};
use serde_json::{Value, json};

/// How long a settled request id is remembered.
pub const DEDUP_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// The journal-backed de-duplication log (and the broker's one handle on the journal).
///
/// Every write that fails marks the journal degraded ([`DedupLog::degraded`]) until a [`DedupLog::probe`] commits
/// again: the broker then refuses what must be recorded (input, new or claimed tabs) instead of running it
/// unrecorded.
#[derive(Debug)]
pub struct DedupLog {
    journal: Mutex<Journal>,
    path: std::path::PathBuf,
    /// The last failed write, until a probe succeeds.
    degraded: Mutex<Option<String>>,
}

/// A call admitted as new; finish it with [`DedupLog::dispatch`] and [`DedupLog::finish`] or [`DedupLog::abandon`].
#[derive(Debug)]
pub enum Ticket {
    /// Received, nothing sent yet.
    Pending(Pending),
    /// Marked dispatched.
    Dispatched(Dispatched),
}

/// What [`DedupLog::begin`] decided.
#[derive(Debug)]
pub enum Admit {
    /// Go ahead.
    New(Ticket),
    /// Answer with this instead of acting.
    Answer(Result<Value, ErrorData>),
}

fn now() -> UnixMillis {
    UnixMillis(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0)))
}

/// The refusal of an operation that must be recorded while the journal cannot be written.
#[must_use]
pub fn journal_unavailable(path: &Path, why: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::JournalUnavailable,
        format!("the broker's journal {} cannot be written ({why}); nothing was done", path.display()),
    )
    .with_details(json!({"journal": path.display().to_string(), "reason": why}))
}

impl DedupLog {
    fn journal_error(&self, e: &browserd_journal::error::JournalError) -> ErrorData {
        let why = e.to_string();
        self.note_failure(&why);
        journal_unavailable(&self.path, &why)
    }

    /// Marks the journal degraded: a write failed.
    fn note_failure(&self, why: &str) {
        tracing::warn!(journal = %self.path.display(), %why, "a journal write failed; recorded operations are refused until it works again");
        *self.degraded.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(why.to_owned());
    }

    /// Logs and records a failed write; passes the result on.
    fn noted<T>(&self, what: &str, r: browserd_journal::Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.note_failure(&format!("{what}: {e}"));
                None
            }
        }
    }

    /// Why the journal is degraded (its last failed write), or `None` when it works.
    #[must_use]
    pub fn degraded(&self) -> Option<String> {
        self.degraded.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The journal file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks with one committed write that the journal works now; clears [`Self::degraded`] when it does.
    ///
    /// # Errors
    /// `JOURNAL_UNAVAILABLE`, naming the file and the failure.
    pub fn probe(&self) -> Result<(), ErrorData> {
        let probed = self.lock().probe(now());
        match probed {
            Ok(()) => {
                *self.degraded.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
                Ok(())
            }
            Err(e) => Err(self.journal_error(&e)),
        }
    }
}

/// The payload hash of a tool call: the host session it belongs to, the tool and its arguments (not the broker's
/// session id, which changes when the broker restarts).
#[must_use]
pub fn payload_hash(host: &str, host_session_id: &str, tool: &str, arguments: &Value) -> PayloadHash {
    PayloadHash::of_json(&json!({"host": host, "hostSessionId": host_session_id, "tool": tool, "arguments": arguments}))
}

impl DedupLog {
    /// Opens (or creates) the journal at `path`; a previous broker's in-flight calls become unknown.
    ///
    /// # Errors
    /// The journal cannot be opened (see its message).
    pub fn open(path: &Path) -> Result<Self, browserd_journal::error::JournalError> {
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let journal = Journal::open(path, JournalConfig::default())?;
        Ok(Self { journal: Mutex::new(journal), path: path.to_path_buf(), degraded: Mutex::new(None) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Looks `call_id` up.
    pub fn begin(&self, call_id: &str, hash: PayloadHash) -> Admit {
        let begun = self.lock().begin(call_id, hash, now(), DEDUP_TTL);
        match begun {
            Err(e) => Admit::Answer(Err(self.journal_error(&e))),
            Ok(Begin::New(pending)) => Admit::New(Ticket::Pending(pending)),
            Ok(Begin::PayloadMismatch) => Admit::Answer(Err(ErrorData::new(
                ErrorCode::PayloadMismatch,
                format!("callId `{call_id}` was used before with other arguments; nothing was done"),
            ))),
            Ok(Begin::Duplicate(state)) => Admit::Answer(Err(duplicate(call_id, &state))),
        }
    }

    /// Marks the call dispatched before anything is sent. On error nothing must be sent.
    ///
    /// # Errors
    /// The journal write failed.
    pub fn dispatch(&self, ticket: Ticket) -> Result<Ticket, ErrorData> {
        match ticket {
            Ticket::Pending(pending) => {
                let marked = self.lock().mark_dispatched(pending, now());
                marked.map(Ticket::Dispatched).map_err(|e| self.journal_error(&e))
            }
            already => Ok(already),
        }
    }

    /// Forgets a call that never started (e.g. refused by back-pressure), so the same id may be sent again.
    pub fn abandon(&self, ticket: Ticket) {
        if let Ticket::Pending(pending) = ticket {
            let abandoned = self.lock().abandon(pending);
            self.noted("abandoning a de-duplication row", abandoned);
        }
    }

    /// Records how the call ended.
    pub fn finish(&self, ticket: Ticket, result: &Result<Value, ErrorData>) {
        let compact = compact(result);
        let written = match ticket {
            Ticket::Dispatched(d) => self.lock().complete(d, &compact, now()),
            Ticket::Pending(p) => {
                let mut compact = compact;
                // Nothing was marked dispatched, so nothing was sent.
                compact.dispatch = Dispatch::NotDispatched;
                self.lock().complete_undispatched(p, &compact, now())
            }
        };
        self.noted("recording a call's completion (a duplicate reads it back as unknown)", written);
    }

    /// Resolves the record of a call that was cancelled or interrupted before it finished: `unknown` when it was
    /// marked dispatched (input may have been sent), else `cancelled`. A retry of its call id reads that answer at
    /// once, never "already running".
    pub fn interrupt(&self, ticket: Ticket) {
        let code = Code::new(ErrorCode::Cancelled.as_str()).ok();
        let written = match ticket {
            Ticket::Dispatched(d) => {
                let result =
                    DedupResult { outcome: Outcome::Unknown, dispatch: Dispatch::Dispatched, code, trace: None };
                self.lock().complete(d, &result, now())
            }
            Ticket::Pending(p) => {
                let result =
                    DedupResult { outcome: Outcome::Cancelled, dispatch: Dispatch::NotDispatched, code, trace: None };
                self.lock().complete_undispatched(p, &result, now())
            }
        };
        self.noted("resolving a cancelled call", written);
    }
}

/// A de-duplicated call's record while the call runs: whatever ends the call — its result, or the call being dropped
/// (cancellation, a client gone) — resolves the record. Dropped unresolved, it is [`DedupLog::interrupt`]ed.
#[derive(Debug)]
pub struct CallRecord {
    log: Option<std::sync::Arc<DedupLog>>,
    ticket: Option<Ticket>,
}

impl CallRecord {
    /// A record of no call (no call id, or no journal).
    #[must_use]
    pub fn none() -> Self {
        Self { log: None, ticket: None }
    }

    /// The record of `ticket` in `log`.
    #[must_use]
    pub fn new(log: std::sync::Arc<DedupLog>, ticket: Ticket) -> Self {
        Self { log: Some(log), ticket: Some(ticket) }
    }

    /// The ticket, for the steps that mark it dispatched.
    pub fn slot(&mut self) -> &mut Option<Ticket> {
        &mut self.ticket
    }

    /// Resolves the record with the call's result (refused before anything was sent for a retryable reason: the row
    /// is dropped, so the same id may be sent again).
    pub fn finish(mut self, result: &Result<Value, ErrorData>) {
        let (Some(log), Some(ticket)) = (self.log.take(), self.ticket.take()) else { return };
        match (&ticket, result) {
            (Ticket::Pending(_), Err(e)) if e.code.is_retryable() => log.abandon(ticket),
            _ => log.finish(ticket, result),
        }
    }
}

impl Drop for CallRecord {
    fn drop(&mut self) {
        if let (Some(log), Some(ticket)) = (self.log.take(), self.ticket.take()) {
            log.interrupt(ticket);
        }
    }
}

fn compact(result: &Result<Value, ErrorData>) -> DedupResult {
    match result {
        Ok(v) => {
            let outcome = v.get("outcome").and_then(Value::as_str).and_then(Outcome::from_name);
            let dispatch = v.get("dispatch").and_then(Value::as_str).and_then(Dispatch::from_name);
            DedupResult {
                outcome: outcome.unwrap_or(if v.get("ok").and_then(Value::as_bool) == Some(false) {
                    Outcome::Failed
                } else {
                    Outcome::Succeeded
                }),
                dispatch: dispatch.unwrap_or(Dispatch::Dispatched),
                code: v.get("code").and_then(Value::as_str).and_then(|c| Code::new(c).ok()),
                trace: v.get("traceId").and_then(Value::as_str).map(OpaqueId::digest_of),
            }
        }
        Err(e) => {
            let unknown = matches!(
                e.code,
                ErrorCode::OutcomeUnknown
                    | ErrorCode::UserStopped
                    | ErrorCode::ConnectionLost
                    | ErrorCode::DeadlineExceeded
                    | ErrorCode::Cancelled
            );
            DedupResult {
                outcome: if unknown { Outcome::Unknown } else { Outcome::Failed },
                dispatch: if unknown { Dispatch::Dispatched } else { Dispatch::NotDispatched },
                code: Code::new(e.code.as_str()).ok(),
                trace: None,
            }
        }
    }
}

/// Whether a completed row was resolved by [`DedupLog::interrupt`] (the call was cancelled or dropped before it
/// finished), not by the call's own result.
fn interrupted(result: &DedupResult) -> bool {
    result.code.as_ref().is_some_and(|c| c.as_str() == ErrorCode::Cancelled.as_str()) && result.trace.is_none()
}

fn duplicate(call_id: &str, state: &DedupState) -> ErrorData {
    match state {
        DedupState::Received | DedupState::Dispatched => ErrorData::new(
            ErrorCode::DuplicateRequest,
            format!("callId `{call_id}` is already running; it is not started twice"),
        )
        .with_details(json!({"state": "running"})),
        DedupState::Completed(result) if interrupted(result) && result.outcome == Outcome::Unknown => ErrorData::new(
            ErrorCode::OutcomeUnknown,
            format!(
                "callId `{call_id}` ended before it finished (cancelled or interrupted) after input may have been \
                 sent; it may or may not have taken effect and is not run again"
            ),
        )
        .with_next_step("Observe the page to see whether it took effect, then act with a new callId if needed.")
        .with_details(json!({"state": "unknown", "outcome": "unknown", "dispatch": result.dispatch.as_str()})),
        DedupState::Completed(result) if interrupted(result) && result.outcome == Outcome::Cancelled => ErrorData::new(
            ErrorCode::Cancelled,
            format!("callId `{call_id}` was cancelled before anything was sent; nothing reached the page"),
        )
        .with_next_step("Send the call again with a new callId if it is still wanted.")
        .with_details(json!({"state": "cancelled", "outcome": "cancelled", "dispatch": "notDispatched"})),
        DedupState::Completed(result) => ErrorData::new(
            ErrorCode::DuplicateRequest,
            format!("callId `{call_id}` already ran ({}); it was not run again", result.outcome.as_str()),
        )
        .with_details(json!({
            "state": "completed",
            "outcome": result.outcome.as_str(),
            "dispatch": result.dispatch.as_str(),
            "code": result.code.as_ref().map(Code::as_str),
        })),
        DedupState::Unknown | DedupState::Interrupted => ErrorData::new(
            ErrorCode::OutcomeUnknown,
            format!(
                "callId `{call_id}` was dispatched by a broker that stopped before it finished; it may or may not \
                 have taken effect and is never replayed"
            ),
        )
        .with_details(json!({"state": "unknown"})),
    }
}

/// Audit metadata of one call: what was done, to which opaque handles, how it ended, how long it took. Never page
/// content, URL paths or queries, or typed values (the record type cannot hold them).
#[derive(Debug, Clone)]
pub struct AuditNote<'a> {
    /// Method or tool name.
    pub name: &'a str,
    /// The broker session.
    pub session: Option<&'a str>,
    /// The tool's arguments (only `action` and `tab` are read).
    pub arguments: Option<&'a Value>,
    /// The host's call id.
    pub call_id: Option<&'a str>,
    /// How long it took.
    pub elapsed: Duration,
}

fn audit_action(name: &str) -> Option<browserd_journal::audit::AuditAction> {
    use browserd_journal::audit::AuditAction as A;
    Some(match name {
        "session.open" => A::SessionOpen,
        "session.close" => A::SessionClose,
        "turn.begin" => A::TurnBegin,
        "turn.end" => A::TurnEnd,
        "context.reset" | "browser_context_reset" => A::ContextReset,
        "broker.stopGate" => A::Stop,
        "browser_open" => A::TabOpen,
        "browser_close" => A::TabClose,
        "browser_observe" => A::Observe,
        "browser_act" => A::Act,
        "browser_batch" => A::Batch,
        "browser_mark_deliverable" | "browser_mark_handoff" => A::Mark,
        "browser_cleanup" => A::TaskFinalize,
        "browser_handoff" => A::Handoff,
        "browser_claim" => A::TabOpen,
        "browser_evaluate" => A::Evaluate,
        "browser_console" => A::ConsoleRead,
        "browser_network" => A::NetworkRead,
        "browser_cdp" => A::RawProtocol,
        _ => return None,
    })
}

fn input_kind(action: &str) -> Option<browserd_journal::audit::InputKind> {
    use browserd_journal::audit::InputKind as I;
    Some(match action {
        "click" => I::Click,
        "dblclick" => I::DoubleClick,
        "hover" => I::Hover,
        "fill" | "type" => I::Type,
        "press" => I::Press,
        "select" => I::Select,
        "check" | "uncheck" => I::Check,
        "scroll" => I::Scroll,
        "drag" => I::Drag,
        "upload" => I::Upload,
        "navigate" => I::Navigate,
        "back" | "forward" => I::History,
        "reload" => I::Reload,
        "dialog" => I::Dialog,
        "wait" => I::Wait,
        _ => return None,
    })
}

fn opaque(text: &str) -> OpaqueId {
    OpaqueId::new(text).unwrap_or_else(|_| OpaqueId::digest_of(text))
}

impl DedupLog {
    /// Appends the audit metadata of one call (lifecycle methods and state-changing or page tools).
    pub fn audit(&self, note: &AuditNote<'_>, result: &Result<Value, ErrorData>) {
        let Some(action) = audit_action(note.name) else { return };
        let mut record = browserd_journal::audit::AuditRecord::new(now(), action);
        record.input = note.arguments.and_then(|a| a.get("action")).and_then(Value::as_str).and_then(input_kind);
        record.session = note.session.map(opaque);
        let tab = note
            .arguments
            .and_then(|a| a.get("tab"))
            .or_else(|| result.as_ref().ok().and_then(|v| v.get("tab")))
            .and_then(Value::as_u64);
        record.tab = tab.map(|t| opaque(&format!("t{t}")));
        record.request = note.call_id.map(OpaqueId::digest_of);
        let compact = compact(result);
        record.trace = compact.trace.clone();
        if matches!(
            action,
            browserd_journal::audit::AuditAction::Act
                | browserd_journal::audit::AuditAction::Batch
                | browserd_journal::audit::AuditAction::Evaluate
                | browserd_journal::audit::AuditAction::RawProtocol
        ) || result.is_err()
        {
            record.outcome = Some(compact.outcome);
            record.dispatch = Some(compact.dispatch);
        }
        record.code = compact.code;
        record.origin = result
            .as_ref()
            .ok()
            .and_then(|v| v.get("url"))
            .and_then(Value::as_str)
            .and_then(browserd_journal::types::Origin::from_url);
        record.timings.total_ms = Some(u32::try_from(note.elapsed.as_millis()).unwrap_or(u32::MAX));
        let appended = self.lock().audit(&record);
        self.noted("appending an audit record", appended);
    }
}

/// One recovery record of the runtime, as the journal mirrors it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryMirror {
    /// Broker session id.
    pub session: String,
    /// Tab handle number.
    pub tab: u64,
    /// The durable browser key (see [`DedupLog::browser_key`]; `remote:<endpoint>` for a remote browser).
    pub browser: String,
    /// The durable tab key: `target:<id>` when the browser's target id is known, else `t<handle>`.
    pub tab_key: String,
    /// What is retried.
    pub op: browserd_journal::recovery::CleanupOp,
    /// Failed attempts so far.
    pub attempts: u32,
    /// Whether the last failure left the outcome unknown.
    pub outcome_unknown: bool,
    /// Wire code of the last failure.
    pub code: String,
    /// Its message.
    pub message: String,
}

/// What the journal held from a previous broker when this one started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreviousRecovery {
    /// Records resolved as already gone (the managed browser exited with its broker).
    pub resolved_gone: usize,
    /// Records left pending that nothing can match (another broker's managed browser while this one is remote).
    pub left_pending: usize,
    /// Records of remote endpoints, for reconciliation by target id.
    pub remote_pending: usize,
}

/// The prefix of a remote endpoint's durable browser key.
pub const REMOTE_KEY_PREFIX: &str = "remote:";

/// The secret-free identity a remote key's URL stands for (see `browserd_cdp::Endpoint::identity`); an unparsable URL
/// is cut at its query and userinfo.
#[must_use]
pub fn remote_key_identity(url: &str) -> String {
    browserd_cdp::Endpoint::parse(url).map_or_else(
        |_| {
            let redacted = browserd_cdp::redact_url(url);
            redacted.split('?').next().unwrap_or_default().to_owned()
        },
        |e| e.identity(),
    )
}

/// One tab of the owned-tab ledger as the broker mirrors it: the handle, and the durable row.
pub type OwnedMirror = (u64, browserd_journal::owned::OwnedTab);

/// The journal's owned-tab ledger mirror of this broker incarnation.
#[derive(Debug, Default)]
pub struct OwnedJournal {
    written: Mutex<std::collections::HashMap<u64, browserd_journal::owned::OwnedTab>>,
}

type MirrorKey = (String, u64, browserd_journal::recovery::CleanupOp);

/// The journal's recovery-record mirror of this broker incarnation.
#[derive(Debug, Default)]
pub struct RecoveryJournal {
    written: Mutex<std::collections::HashMap<MirrorKey, (browserd_journal::recovery::RecoveryId, u32)>>,
}

impl DedupLog {
    /// This opening's browser key: recovery records name the browser of one broker incarnation, since tab handles
    /// are numbers of one broker process.
    #[must_use]
    pub fn browser_key(&self) -> String {
        format!("b{}", self.lock().open_report().incarnation)
    }

    /// Settles records a previous broker left pending, after turning the tabs it still owned (its ledger) into
    /// recovery records. A managed Chromium exits when its broker dies (its pipe closes), so its tabs are gone:
    /// resolved `alreadyGone`. Records of a remote endpoint (`remote:` keys) are left to
    /// [`crate::server::Broker`]'s reconciliation, which finds each tab again by its target id; any other record is
    /// left pending and reported.
    pub fn settle_previous(&self, managed: bool) -> PreviousRecovery {
        match self.lock().adopt_orphans(now()) {
            Ok(adopted) if !adopted.is_empty() => {
                tracing::info!(count = adopted.len(), "tabs a previous broker still owned became recovery records");
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(%e, "could not read the previous broker's owned tabs"),
        }
        use browserd_journal::recovery::Resolution;
        let mine = self.browser_key();
        let mut journal = self.lock();
        let pending = match journal.pending_recoveries() {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(%e, "could not read the journal's recovery records");
                return PreviousRecovery::default();
            }
        };
        let mut out = PreviousRecovery::default();
        for record in pending.into_iter().filter(|r| r.browser != mine) {
            if record.browser.starts_with(REMOTE_KEY_PREFIX) {
                out.remote_pending += 1;
            } else if managed {
                match journal.resolve_recovery(record.id, Resolution::AlreadyGone, now()) {
                    Ok(_) => out.resolved_gone += 1,
                    Err(e) => tracing::warn!(%e, id = %record.id, "could not resolve a previous recovery record"),
                }
            } else {
                out.left_pending += 1;
            }
        }
        out
    }

    /// Brings the journal in line with the runtime's current recovery records: new ones are written (fsynced),
    /// further failed attempts recorded, and ones the runtime no longer holds resolved: `alreadyGone` when `tab_gone`
    /// says the tab itself went away (tab handle and cleanup), else confirmed.
    pub fn sync_recovery(
        &self,
        mirror: &RecoveryJournal,
        current: &[RecoveryMirror],
        tab_gone: impl Fn(u64, browserd_journal::recovery::CleanupOp) -> bool,
    ) {
        use browserd_journal::recovery::{AttemptOutcome, CleanupFailure, NewRecovery, Resolution};
        let mut written = mirror.written.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut journal = self.lock();
        let failure = |r: &RecoveryMirror| CleanupFailure {
            outcome: if r.outcome_unknown { AttemptOutcome::Unknown } else { AttemptOutcome::Failed },
            code: Code::new(r.code.as_str()).unwrap_or_else(|_| Code::new("CLEANUP_FAILED").expect("a valid code")),
            message: r.message.clone(),
        };
        let mut seen = std::collections::HashSet::new();
        for r in current {
            let key = (r.session.clone(), r.tab, r.op);
            seen.insert(key.clone());
            match written.get(&key).copied() {
                None => {
                    let new = NewRecovery {
                        session: r.session.clone(),
                        browser: r.browser.clone(),
                        tab: r.tab_key.clone(),
                        op: r.op,
                        failure: failure(r),
                    };
                    if let Some(rec) = self.noted("journaling a recovery record", journal.record_recovery(&new, now()))
                    {
                        written.insert(key, (rec.id, r.attempts));
                    }
                }
                Some((id, attempts)) if r.attempts > attempts => {
                    let marked = journal.mark_recovery_attempt(id, &failure(r), now());
                    if self.noted("recording a failed recovery attempt", marked).is_some() {
                        written.insert(key, (id, r.attempts));
                    }
                }
                Some(_) => {}
            }
        }
        let gone: Vec<MirrorKey> = written.keys().filter(|k| !seen.contains(*k)).cloned().collect();
        for key in gone {
            if let Some((id, _)) = written.get(&key).copied() {
                let how = if tab_gone(key.1, key.2) { Resolution::AlreadyGone } else { Resolution::Confirmed };
                let resolved = journal.resolve_recovery(id, how, now());
                if self.noted("resolving a journaled recovery record", resolved).is_some() {
                    written.remove(&key);
                }
            }
        }
    }
}

impl DedupLog {
    /// Brings the owned-tab ledger in line with the tabs the sessions hold now: new ones are written (fsynced),
    /// changed ones updated, and ones no longer held (closed, released, kept as a deliverable or handoff) removed.
    pub fn sync_owned(&self, mirror: &OwnedJournal, current: &[OwnedMirror]) {
        let mut written = mirror.written.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut journal = self.lock();
        let mut seen = std::collections::HashSet::new();
        for (tab, row) in current {
            seen.insert(*tab);
            if written.get(tab) == Some(row) {
                continue;
            }
            if let Some(old) = written.get(tab)
                && (old.browser != row.browser || old.tab != row.tab)
            {
                self.noted("moving an owned tab in the ledger", journal.forget_owned(&old.browser, &old.tab));
            }
            if self.noted("journaling an owned tab", journal.record_owned(row, now())).is_some() {
                written.insert(*tab, row.clone());
            }
        }
        let gone: Vec<u64> = written.keys().filter(|k| !seen.contains(*k)).copied().collect();
        for tab in gone {
            if let Some(row) = written.get(&tab).cloned() {
                let forgotten = journal.forget_owned(&row.browser, &row.tab);
                if self.noted("removing a tab from the owned-tab ledger", forgotten).is_some() {
                    written.remove(&tab);
                }
            }
        }
    }

    /// Whether every row the ledger mirror holds was written (after [`Self::sync_owned`]): a tab `tab` a session holds
    /// that the ledger could not record is one a broker crash would leak.
    #[must_use]
    pub fn owned_recorded(mirror: &OwnedJournal, tab: u64) -> bool {
        mirror.written.lock().unwrap_or_else(std::sync::PoisonError::into_inner).contains_key(&tab)
    }

    /// The pending recovery records of `browser` (a durable browser key).
    #[must_use]
    pub fn pending_for_browser(&self, browser: &str) -> Vec<browserd_journal::recovery::RecoveryRecord> {
        self.lock().pending_recoveries_for_browser(browser).unwrap_or_else(|e| {
            tracing::warn!(%e, "could not read the journal's recovery records");
            Vec::new()
        })
    }

    /// Re-keys every remote browser key that is not a secret-free identity (an older broker keyed a remote browser by
    /// the whole URL, its token included) by the endpoint's identity: the token leaves the journal, and records written
    /// under another token or spelling of the same endpoint are found again.
    pub fn rekey_remote_rows(&self) {
        let mut journal = self.lock();
        let keys = match journal.browser_keys() {
            Ok(keys) => keys,
            Err(e) => {
                tracing::warn!(%e, "could not read the journal's browser keys");
                return;
            }
        };
        for key in keys {
            let Some(url) = key.strip_prefix(REMOTE_KEY_PREFIX) else { continue };
            let identity = remote_key_identity(url);
            if identity == url {
                continue;
            }
            let new = format!("{REMOTE_KEY_PREFIX}{identity}");
            match journal.rekey_browser(&key, &new) {
                Ok(n) => {
                    tracing::info!(rows = n, endpoint = %identity, "journal rows re-keyed by the endpoint's identity")
                }
                Err(e) => tracing::warn!(%e, endpoint = %identity, "could not re-key journal rows"),
            }
        }
    }

    /// Resolves pending record `id`.
    pub fn resolve(&self, id: browserd_journal::recovery::RecoveryId, how: browserd_journal::recovery::Resolution) {
        let resolved = self.lock().resolve_recovery(id, how, now());
        self.noted("resolving a recovery record", resolved);
    }

    /// Counts one more failed attempt on pending record `id`.
    pub fn attempt_failed(&self, id: browserd_journal::recovery::RecoveryId, code: &str, message: &str) {
        use browserd_journal::recovery::{AttemptOutcome, CleanupFailure};
        let failure = CleanupFailure {
            outcome: AttemptOutcome::Failed,
            code: Code::new(code).unwrap_or_else(|_| Code::new("CLEANUP_FAILED").expect("a valid code")),
            message: message.to_owned(),
        };
        let marked = self.lock().mark_recovery_attempt(id, &failure, now());
        self.noted("recording a failed recovery attempt", marked);
    }
}

#[cfg(test)]
mod tests {
    use browserd_journal::recovery::CleanupOp;

    use super::*;

    fn mirror(tab: u64) -> RecoveryMirror {
        RecoveryMirror {
            session: "s1".into(),
            tab,
            browser: "b1".into(),
            tab_key: format!("t{tab}"),
            op: CleanupOp::Close,
            attempts: 1,
            outcome_unknown: true,
            code: "OUTCOME_UNKNOWN".into(),
            message: "no answer".into(),
        }
    }

    #[test]
    fn a_previous_brokers_records_are_settled_by_browser_kind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.sqlite3");
        {
            let log = DedupLog::open(&path).unwrap();
            log.sync_recovery(&RecoveryJournal::default(), &[mirror(4), mirror(5)], |_, _| false);
        }
        // Not a managed browser now: another process's handle-keyed records cannot be matched, so they stay pending.
        {
            let log = DedupLog::open(&path).unwrap();
            assert_eq!(
                log.settle_previous(false),
                PreviousRecovery { resolved_gone: 0, left_pending: 2, remote_pending: 0 }
            );
        }
        // A managed browser exits with its broker: its tabs are gone.
        let log = DedupLog::open(&path).unwrap();
        assert_eq!(
            log.settle_previous(true),
            PreviousRecovery { resolved_gone: 2, left_pending: 0, remote_pending: 0 }
        );
        assert!(log.lock().pending_recoveries().unwrap().is_empty());
    }

    #[test]
    fn the_owned_tab_ledger_follows_the_sessions_and_outlives_a_crash() {
        use browserd_journal::owned::OwnedTab;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.sqlite3");
        let row = |n: u32, op| OwnedTab {
            browser: "remote:http://127.0.0.1:9222".into(),
            tab: format!("target:T{n}"),
            session: "s1".into(),
            op,
        };
        {
            let log = DedupLog::open(&path).unwrap();
            let ledger = OwnedJournal::default();
            log.sync_owned(&ledger, &[(1, row(1, CleanupOp::Close)), (2, row(2, CleanupOp::Close))]);
            // Tab 2 was marked deliverable (kept): it leaves the ledger; tab 3 was claimed.
            log.sync_owned(&ledger, &[(1, row(1, CleanupOp::Close)), (3, row(3, CleanupOp::Release))]);
            let tabs: Vec<String> = log.lock().owned_tabs().unwrap().into_iter().map(|t| t.tab).collect();
            assert_eq!(tabs, ["target:T1", "target:T3"]);
            // The process dies here (no shutdown).
        }
        let log = DedupLog::open(&path).unwrap();
        assert_eq!(
            log.settle_previous(false),
            PreviousRecovery { resolved_gone: 0, left_pending: 0, remote_pending: 2 }
        );
        let pending = log.pending_for_browser("remote:http://127.0.0.1:9222");
        let ops: Vec<(&str, CleanupOp)> = pending.iter().map(|r| (r.tab.as_str(), r.op)).collect();
        assert_eq!(ops, [("target:T1", CleanupOp::Close), ("target:T3", CleanupOp::Release)]);
        log.attempt_failed(pending[0].id, "CONNECTION_LOST", "the endpoint did not answer");
        log.resolve(pending[1].id, browserd_journal::recovery::Resolution::AlreadyGone);
        let left = log.pending_for_browser("remote:http://127.0.0.1:9222");
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].attempts, 2);
    }

    #[test]
    fn a_dropped_call_resolves_its_row_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let log = std::sync::Arc::new(DedupLog::open(&dir.path().join("j.sqlite3")).unwrap());
        let hash = PayloadHash::of_json(&json!({"a": 1}));
        let begin = |id: &str| match log.begin(id, hash) {
            Admit::New(t) => t,
            Admit::Answer(a) => panic!("new: {a:?}"),
        };
        // Dropped after it was marked dispatched: unknown.
        let mut sent = CallRecord::new(log.clone(), begin("sent"));
        let ticket = sent.slot().take().unwrap();
        *sent.slot() = Some(log.dispatch(ticket).unwrap());
        drop(sent);
        let Admit::Answer(Err(e)) = log.begin("sent", hash) else { panic!("answered") };
        assert_eq!(e.code, ErrorCode::OutcomeUnknown, "{e:?}");
        // Dropped before: cancelled.
        drop(CallRecord::new(log.clone(), begin("queued")));
        let Admit::Answer(Err(e)) = log.begin("queued", hash) else { panic!("answered") };
        assert_eq!(e.code, ErrorCode::Cancelled, "{e:?}");
        // Finished normally with an unknown outcome: the repeat says it already ran.
        CallRecord::new(log.clone(), begin("ran")).finish(&Ok(json!({"outcome": "unknown", "traceId": "t1"})));
        let Admit::Answer(Err(e)) = log.begin("ran", hash) else { panic!("answered") };
        assert_eq!(e.code, ErrorCode::DuplicateRequest, "{e:?}");
    }

    #[test]
    fn records_the_runtime_drops_are_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let log = DedupLog::open(&dir.path().join("j.sqlite3")).unwrap();
        let mirror_state = RecoveryJournal::default();
        log.sync_recovery(&mirror_state, &[mirror(1), mirror(2), mirror(3)], |_, _| false);
        let mut again = mirror(2);
        again.attempts = 3;
        // Tab 1's cleanup was confirmed; tab 3 went away (with its browser) before any retry.
        log.sync_recovery(&mirror_state, &[again], |tab, _| tab == 3);
        let pending = log.lock().pending_recoveries().unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].tab, "t2");
        assert_eq!(pending[0].attempts, 2, "one more failed attempt was recorded");
        use browserd_journal::recovery::{RecoveryId, RecoveryState::Resolved, Resolution};
        let state = |id| log.lock().recovery(RecoveryId(id)).unwrap().unwrap().state;
        assert_eq!((state(1), state(3)), (Resolved(Resolution::Confirmed), Resolved(Resolution::AlreadyGone)));
    }
}
