//! Which batch steps are high risk (the batch stops before them, `BatchStopReason::HighRisk`): one function,
//! [`high_risk`], for the policy's action classes to replace. Until they land: a click or Enter on a control whose
//! role is button or link (or a submit input) and whose accessible name reads like submit, send, pay, delete,
//! publish or a permission change.

use browserd_protocol::{ActParams, ActionKind};

/// Words in a control's name that mark an irreversible or outward action.
const RISKY_WORDS: &[&str] = &[
    "submit",
    "send",
    "pay",
    "purchase",
    "buy",
    "checkout",
    "order",
    "delete",
    "remove",
    "publish",
    "post",
    "transfer",
    "confirm",
    "grant",
    "allow",
    "permission",
    "authorize",
    "authorise",
];

/// Why `step` is high risk, or `None`. `content` is the tab's latest observation (`untrustedContent`), whose lines
/// name each ref's role and name (`e7 button "Submit"`); a ref not in it is not classified.
#[must_use]
pub fn high_risk(step: &ActParams, content: Option<&str>) -> Option<String> {
    if !matches!(step.action, ActionKind::Click | ActionKind::Dblclick | ActionKind::Press) {
        return None;
    }
    if step.action == ActionKind::Press && step.value.as_deref().is_some_and(|k| !k.eq_ignore_ascii_case("enter")) {
        return None;
    }
    let line = crate::policy::classes::target_line(step, content)?;
    let (role, name) = crate::policy::classes::role_and_name(&line)?;
    if !matches!(role.as_str(), "button" | "link" | "menuitem") {
        return None;
    }
    let lower = name.to_lowercase();
    let word = lower
        .split(|c: char| !c.is_alphanumeric())
        .find(|w| RISKY_WORDS.iter().any(|r| w == r || (w.starts_with(r) && w.len() <= r.len() + 4)))?
        .to_owned();
    Some(format!("{role} \"{name}\" reads like a high-risk action ({word})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn step(v: serde_json::Value) -> ActParams {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn names_like_submit_or_pay_are_high_risk_other_clicks_are_not() {
        let content = "form\n  e3 textbox \"Full name\"\n  e9 button \"Submit\"\n  e10 button \"Show more\"\n";
        let click = |t: &str| step(json!({"action": "click", "target": t}));
        assert!(high_risk(&click("e9"), Some(content)).is_some());
        assert!(high_risk(&click("e10"), Some(content)).is_none());
        assert!(high_risk(&click("e3"), Some(content)).is_none());
        assert!(high_risk(&click("button \"Pay now\""), None).is_some());
        assert!(high_risk(&click("link \"Delete account\""), None).is_some());
        assert!(high_risk(&step(json!({"action": "fill", "target": "e9", "value": "x"})), Some(content)).is_none());
        assert!(
            high_risk(&step(json!({"action": "press", "target": "e9", "value": "Enter"})), Some(content)).is_some()
        );
        assert!(high_risk(&click("e99"), Some(content)).is_none());
    }
}
