//! Approvals through MCP elicitation (BRIEF §8, issue 16 item 3): when the broker answers a `browser_act` (or the
//! step a `browser_batch` stopped before) with `APPROVAL_REQUIRED` and the client declared the `elicitation`
//! capability (form mode), the user is asked with `elicitation/create`, naming exactly what will be done: the action,
//! its class, the target's role and name, the origin and the parameters.
//!
//! - **Accept**: the server grants that approval (`approval.grant`, the same binding the broker made — session,
//!   browser, origin, class, target digest, parameter hash — used once) and runs the same call once more. For a
//!   batch, only the steps from the approved one on run again; the answer is the whole batch (steps that ran before,
//!   then the rest).
//! - **Decline or cancel**: `APPROVAL_DECLINED`, nothing sent (for a batch, that step's report says so).
//! - A client without the capability, a protocol that forbids server-to-client requests (`2026-07-28`), an
//!   elicitation that fails or gets no answer within the approval's lifetime: the `APPROVAL_REQUIRED` answer as it
//!   is, for the host's own approval UI (`browserd approve <id>`).
//!
//! The model never grants: `approval.grant` is a broker method this process calls only on the user's answer.

use std::collections::BTreeMap;
use std::time::Duration;

use browserd_protocol::{ErrorCode, ErrorData};
use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::Peer;
use serde_json::{Value, json};

/// How long the user has to answer (the approval expires after five minutes).
const ANSWER_WITHIN: Duration = Duration::from_secs(290);

/// What the user said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Approved: run it once.
    Accepted,
    /// Declined or dismissed.
    Declined,
    /// Not asked (no capability) or no answer: the `APPROVAL_REQUIRED` answer stands.
    NotAsked,
}

/// Whether the client can be asked (it declared form elicitation and the protocol allows server requests).
#[must_use]
pub fn can_ask(peer: &Peer<RoleServer>) -> bool {
    peer.supported_elicitation_modes().contains(&rmcp::service::ElicitationMode::Form)
}

/// The sentence the user is asked to confirm, from an `APPROVAL_REQUIRED` answer's details.
#[must_use]
pub fn question(details: &Value) -> String {
    let text = |k: &str| details[k].as_str().unwrap_or_default().to_owned();
    let mut lines = vec![format!("browserd asks your approval for one browser action: {}.", text("confirm"))];
    lines.push(format!("Action: {} ({}).", text("action"), text("class")));
    if let Some(target) = details["target"].as_str() {
        lines.push(format!("Target: {target}."));
    }
    lines.push(format!("Site: {}.", text("origin")));
    if let Some(file) = details.get("file").filter(|f| f.is_object()) {
        lines.push(format!(
            "File: {} ({} bytes, sha256 {}).",
            file["path"].as_str().unwrap_or_default(),
            file["size"],
            file["sha256"].as_str().unwrap_or_default()
        ));
    } else if let Some(value) = details["value"].as_str() {
        lines.push(format!("Value: {value:?}."));
    }
    lines.push("Accept runs exactly this once; decline sends nothing.".to_owned());
    lines.join("\n")
}

/// Asks the user about the approval `details` describes.
pub async fn ask(peer: &Peer<RoleServer>, details: &Value) -> Answer {
    if !can_ask(peer) {
        return Answer::NotAsked;
    }
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question(details),
        requested_schema: ElicitationSchema::new(BTreeMap::new()),
    };
    match peer.create_elicitation_with_timeout(params, Some(ANSWER_WITHIN)).await {
        Ok(result) => match result.action {
            ElicitationAction::Accept => Answer::Accepted,
            // Decline, cancel, and whatever later protocol versions add: never a yes.
            _ => Answer::Declined,
        },
        Err(error) => {
            tracing::info!(%error, "elicitation/create got no answer; the approval stays with the host");
            Answer::NotAsked
        }
    }
}

/// The refusal after the user declined.
#[must_use]
pub fn declined(details: &Value) -> ErrorData {
    let what = details["confirm"].as_str().unwrap_or("the action");
    ErrorData::new(ErrorCode::ApprovalDeclined, format!("the user declined to {what}; nothing was sent"))
        .with_next_step("Do not repeat it unless the user asks for it; tell the user what you wanted to do instead.")
        .with_details(json!({"approval": details["approval"], "outcome": "notDispatched"}))
}

/// The approval details of the step a batch answer stopped before, if it stopped for an approval.
#[must_use]
pub fn batch_waits(value: &Value) -> Option<(usize, Value)> {
    let step = usize::try_from(value["stopped"]["step"].as_u64()?).ok()?;
    let report = value["results"].as_array()?.iter().find(|r| r["step"].as_u64() == Some(step as u64))?;
    (report["code"] == "APPROVAL_REQUIRED")
        .then(|| report["approval"].clone())
        .filter(Value::is_object)
        .map(|d| (step, d))
}

/// The batch arguments for the steps from `from` on.
#[must_use]
pub fn rest_of(arguments: &Value, from: usize) -> Value {
    let mut rest = arguments.clone();
    if let Some(steps) = rest["steps"].as_array_mut() {
        steps.drain(..from.min(steps.len()));
    }
    rest
}

/// The whole batch's answer: `first` (stopped before step `from`) followed by `rest` (the steps from `from` on).
#[must_use]
pub fn merge(mut first: Value, from: usize, rest: &Value) -> Value {
    let shift = |v: &Value| v.as_u64().map(|n| json!(n + from as u64)).unwrap_or(Value::Null);
    if let Some(steps) = first["steps"].as_array_mut() {
        steps.extend(rest["steps"].as_array().cloned().unwrap_or_default());
    }
    if let Some(results) = first["results"].as_array_mut() {
        results.truncate(from);
        for r in rest["results"].as_array().cloned().unwrap_or_default() {
            let mut r = r;
            r["step"] = shift(&r["step"]);
            results.push(r);
        }
    }
    first["ok"] = rest["ok"].clone();
    first["stopped"] = match rest.get("stopped").filter(|s| s.is_object()) {
        Some(s) => {
            let mut s = s.clone();
            s["step"] = shift(&s["step"]);
            s
        }
        None => Value::Null,
    };
    if first["stopped"].is_null()
        && let Some(map) = first.as_object_mut()
    {
        map.remove("stopped");
    }
    first
}

/// The batch answer after the user declined the step `from`.
#[must_use]
pub fn batch_declined(mut value: Value, from: usize) -> Value {
    if let Some(report) =
        value["results"].as_array_mut().and_then(|r| r.iter_mut().find(|r| r["step"].as_u64() == Some(from as u64)))
    {
        let what = report["approval"]["confirm"].as_str().unwrap_or("this step").to_owned();
        report["code"] = json!(ErrorCode::ApprovalDeclined.as_str());
        report["message"] = json!(format!("not started: the user declined to {what}; nothing was sent"));
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_resumed_after_an_approval_answers_every_step_once() {
        let first = json!({"ok": false, "steps": [{"n": 0}], "stopped": {"step": 1, "reason": "highRisk"},
            "results": [{"step": 0, "status": "ran"}, {"step": 1, "status": "notStarted", "code": "APPROVAL_REQUIRED",
            "approval": {"approval": "a1", "confirm": "click button \"Send\""}}, {"step": 2, "status": "notStarted"}]});
        let (from, details) = batch_waits(&first).unwrap();
        assert_eq!((from, details["approval"].as_str()), (1, Some("a1")));
        let args = json!({"tab": "t1", "steps": [{"action": "click"}, {"action": "click"}, {"action": "fill"}]});
        assert_eq!(rest_of(&args, 1)["steps"].as_array().unwrap().len(), 2);
        let rest = json!({"ok": true, "steps": [{"n": 1}, {"n": 2}],
            "results": [{"step": 0, "status": "ran"}, {"step": 1, "status": "ran"}]});
        let all = merge(first.clone(), from, &rest);
        assert_eq!(all["ok"], true);
        assert!(all.get("stopped").is_none(), "{all}");
        assert_eq!(all["steps"].as_array().unwrap().len(), 3);
        let steps: Vec<u64> = all["results"].as_array().unwrap().iter().map(|r| r["step"].as_u64().unwrap()).collect();
        assert_eq!(steps, [0, 1, 2]);
        let no = batch_declined(first, 1);
        assert_eq!(no["results"][1]["code"], "APPROVAL_DECLINED");
        assert!(batch_waits(&no).is_none());
    }

    #[test]
    fn the_question_names_the_action_class_target_site_and_value() {
        let q = question(&json!({"confirm": "fill textbox \"Amount\" with \"10\" in tab 1", "action": "fill",
            "class": "input", "target": "textbox \"Amount\"", "origin": "https://bank.test", "value": "10"}));
        for part in ["fill (input)", "textbox \"Amount\"", "https://bank.test", "\"10\""] {
            assert!(q.contains(part), "{part} in {q}");
        }
    }
}
