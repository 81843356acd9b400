//! The one rule for "did this tool call fully succeed": every front end (the MCP server's `isError`, the CLI's exit
//! status, the Pi and DSH adapters) reports a result as a failure exactly when [`shortfall`] finds one.
//!
//! A result falls short when:
//! - it says `ok: false` (cleanup, close, context reset, batch, turn end);
//! - it carries an `outcome` other than `succeeded` (an action that failed, was cancelled or is unknown);
//! - its `postcondition` is `failed` (the action ran but what was expected did not hold);
//! - it is a batch and one of its `steps` falls short;
//! - it is a handoff whose wait ended without completion (`status: timedOut | tabClosed`).
//!
//! A typed error (an `ErrorData` instead of a result) is always a failure; that needs no rule. The adapters'
//! `resultFailure` (`adapters/common/session.mjs`) implements the same list.

use serde_json::Value;

/// Why a result is not a full success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shortfall {
    /// `ok: false`.
    NotOk,
    /// `outcome` is not `succeeded` (the outcome's wire name, and the result's `code` when it has one).
    Outcome {
        /// `failed`, `cancelled` or `unknown`.
        outcome: String,
        /// The result's stable code (`TARGET_NOT_FOUND`, ...), when present.
        code: Option<String>,
    },
    /// `postcondition: failed`.
    PostconditionFailed,
    /// Step `index` of a batch fell short.
    Step {
        /// Index in `steps`.
        index: usize,
        /// How.
        why: Box<Shortfall>,
    },
    /// A handoff wait that ended without completion (`timedOut`, `tabClosed`).
    Handoff(String),
}

impl std::fmt::Display for Shortfall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shortfall::NotOk => f.write_str("not everything asked was done (ok: false)"),
            Shortfall::Outcome { outcome, code: Some(code) } => write!(f, "outcome {outcome} ({code})"),
            Shortfall::Outcome { outcome, code: None } => write!(f, "outcome {outcome}"),
            Shortfall::PostconditionFailed => f.write_str("the expected postcondition did not hold"),
            Shortfall::Step { index, why } => write!(f, "step {index}: {why}"),
            Shortfall::Handoff(status) => write!(f, "the handoff ended {status}"),
        }
    }
}

/// The first reason `result` is not a full success, or `None` when it is one.
#[must_use]
pub fn shortfall(result: &Value) -> Option<Shortfall> {
    let object = result.as_object()?;
    if object.get("ok").and_then(Value::as_bool) == Some(false) {
        return Some(Shortfall::NotOk);
    }
    if let Some(outcome) = object.get("outcome").and_then(Value::as_str)
        && outcome != "succeeded"
    {
        let code = object.get("code").and_then(Value::as_str).map(str::to_owned);
        return Some(Shortfall::Outcome { outcome: outcome.to_owned(), code });
    }
    if object.get("postcondition").and_then(Value::as_str) == Some("failed") {
        return Some(Shortfall::PostconditionFailed);
    }
    if let Some(steps) = object.get("steps").and_then(Value::as_array) {
        for (index, step) in steps.iter().enumerate() {
            if let Some(why) = shortfall(step) {
                return Some(Shortfall::Step { index, why: Box::new(why) });
            }
        }
    }
    if let Some(status @ ("timedOut" | "tabClosed")) = object.get("status").and_then(Value::as_str)
        && object.contains_key("tab")
    {
        return Some(Shortfall::Handoff(status.to_owned()));
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn full_successes_have_no_shortfall() {
        for ok in [
            json!({"ok": true, "closed": [1]}),
            json!({"outcome": "succeeded", "dispatch": "dispatched", "postcondition": "passed"}),
            json!({"outcome": "succeeded", "postcondition": "unverified"}),
            json!({"ok": true, "steps": [{"outcome": "succeeded", "postcondition": "passed"}]}),
            json!({"tab": 3, "status": "completed"}),
            json!({"tab": 3, "status": "waitingForUser"}),
            json!({"tabs": []}),
            json!("text"),
        ] {
            assert_eq!(shortfall(&ok), None, "{ok}");
        }
    }

    #[test]
    fn every_kind_of_failure_is_found() {
        assert_eq!(shortfall(&json!({"ok": false, "failed": []})), Some(Shortfall::NotOk));
        assert_eq!(
            shortfall(&json!({"outcome": "failed", "code": "TARGET_NOT_FOUND"})),
            Some(Shortfall::Outcome { outcome: "failed".into(), code: Some("TARGET_NOT_FOUND".into()) })
        );
        for outcome in ["unknown", "cancelled"] {
            assert!(matches!(shortfall(&json!({"outcome": outcome})), Some(Shortfall::Outcome { .. })));
        }
        assert_eq!(
            shortfall(&json!({"outcome": "succeeded", "postcondition": "failed"})),
            Some(Shortfall::PostconditionFailed)
        );
        let batch = json!({"steps": [{"outcome": "succeeded"}, {"outcome": "succeeded", "postcondition": "failed"}]});
        assert_eq!(
            shortfall(&batch),
            Some(Shortfall::Step { index: 1, why: Box::new(Shortfall::PostconditionFailed) })
        );
        assert_eq!(shortfall(&json!({"tab": 1, "status": "timedOut"})), Some(Shortfall::Handoff("timedOut".into())));
        assert_eq!(shortfall(&json!({"tab": 1, "status": "tabClosed"})), Some(Shortfall::Handoff("tabClosed".into())));
    }
}
