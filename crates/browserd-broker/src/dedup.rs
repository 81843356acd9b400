//! De-duplication of `tool.call`s that carry a `callId`, on the durable journal (BRIEF §6): the same id with the
//! same payload is answered from the log and never acts twice; the same id with another payload is refused
//! (`PAYLOAD_MISMATCH`); a call a previous broker dispatched but never finished is `OUTCOME_UNKNOWN` and is never
//! replayed.
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

/// The journal-backed de-duplication log.
#[derive(Debug)]
pub struct DedupLog {
    journal: Mutex<Journal>,
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

fn journal_error(e: &browserd_journal::error::JournalError) -> ErrorData {
    ErrorData::new(ErrorCode::InternalError, format!("the de-duplication journal failed: {e}; nothing was done"))
        .with_next_step("Retry with a new callId; if it persists run `browserd doctor`.")
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
        Ok(Self { journal: Mutex::new(Journal::open(path, JournalConfig::default())?) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Looks `call_id` up.
    pub fn begin(&self, call_id: &str, hash: PayloadHash) -> Admit {
        let begun = self.lock().begin(call_id, hash, now(), DEDUP_TTL);
        match begun {
            Err(e) => Admit::Answer(Err(journal_error(&e))),
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
                self.lock().mark_dispatched(pending, now()).map(Ticket::Dispatched).map_err(|e| journal_error(&e))
            }
            already => Ok(already),
        }
    }

    /// Forgets a call that never started (e.g. refused by back-pressure), so the same id may be sent again.
    pub fn abandon(&self, ticket: Ticket) {
        if let Ticket::Pending(pending) = ticket
            && let Err(e) = self.lock().abandon(pending)
        {
            tracing::warn!(%e, "could not abandon a de-duplication row");
        }
    }

    /// Records how the call ended.
    pub fn finish(&self, ticket: Ticket, result: &Result<Value, ErrorData>) {
        let compact = compact(result);
        let written = match ticket {
            Ticket::Dispatched(d) => self.lock().complete(d, &compact, now()),
            Ticket::Pending(p) => self.lock().complete_undispatched(p, &compact, now()),
        };
        if let Err(e) = written {
            tracing::warn!(%e, "could not record a call's completion; a duplicate will read it back as unknown");
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

fn duplicate(call_id: &str, state: &DedupState) -> ErrorData {
    match state {
        DedupState::Received | DedupState::Dispatched => ErrorData::new(
            ErrorCode::DuplicateRequest,
            format!("callId `{call_id}` is already running; it is not started twice"),
        )
        .with_details(json!({"state": "running"})),
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
        if matches!(action, browserd_journal::audit::AuditAction::Act | browserd_journal::audit::AuditAction::Batch)
            || result.is_err()
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
        if let Err(e) = self.lock().audit(&record) {
            tracing::warn!(%e, "could not append an audit record");
        }
    }
}
