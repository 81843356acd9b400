//! Action classes: what each action does, from the action, the target's role and name (as the caller was shown them
//! in the tab's latest observation) and the page it is on. The policy says which classes need the user's approval
//! (`[policy] require_approval`). The rules, first match wins:
//!
//! 1. `scroll`, `wait`, `hover`: **read**.
//! 2. `navigate`, `back`, `forward`, `reload`: **navigate**.
//! 3. A click, double click or Enter on a `button`, `link` or `menuitem` whose name has a high-risk word (pay,
//!    purchase, buy, checkout, order, send, transfer, delete, remove, erase, close account, publish, post, share,
//!    grant, allow, permission, authorise/authorize, invite, make admin): **highRisk**.
//! 4. The same on a submit-like control (a name with submit, save, sign in, log in, confirm, apply, continue,
//!    update), or Enter in a text field, on a page whose URL reads like checkout or payment (`checkout`, `payment`,
//!    `billing`, `/pay`): **highRisk**; elsewhere **submit**.
//! 5. A click on a `link`: **navigate**.
//! 6. Everything else (fill, type, select, check, press, upload, drag, other clicks): **input**.
//!
//! A target whose role and name are unknown (a ref not in the latest observation, a screenshot point) is judged as
//! its action alone: a click there is **input** unless rule 4's page applies. `crate::risk` keeps the batch's own
//! stop before high-risk steps.

use browserd_protocol::policy::ActionClass;
use browserd_protocol::{ActParams, ActionKind};

/// High-risk words of rule 3.
const HIGH_RISK: &[&str] = &[
    "pay",
    "purchase",
    "buy",
    "checkout",
    "order",
    "send",
    "transfer",
    "delete",
    "remove",
    "erase",
    "publish",
    "post",
    "share",
    "grant",
    "allow",
    "permission",
    "permissions",
    "authorise",
    "authorize",
    "invite",
    "admin",
];

/// Submit words of rule 4.
const SUBMIT: &[&str] = &["submit", "save", "sign", "log", "login", "confirm", "apply", "continue", "update", "next"];

/// Page URL parts of rule 4.
const PAYMENT_PAGES: &[&str] = &["checkout", "payment", "billing", "/pay"];

/// The class of `step` and the rule that gave it. `content` is the tab's latest observation (`untrustedContent`),
/// `url` the tab's page.
#[must_use]
pub fn classify(step: &ActParams, content: Option<&str>, url: &str) -> (ActionClass, String) {
    use ActionKind as A;
    let target = target_line(step, content);
    let (role, name) = target.as_deref().and_then(role_and_name).unwrap_or_default();
    let words: Vec<String> = name
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    let has = |list: &[&str]| words.iter().find(|w| list.contains(&w.as_str())).cloned();
    let payment = PAYMENT_PAGES.iter().any(|p| url.to_lowercase().contains(p));
    let enter = step.action == A::Press && step.value.as_deref().is_some_and(|k| k.eq_ignore_ascii_case("enter"));
    let activates = matches!(step.action, A::Click | A::Dblclick) || enter;
    let control = matches!(role.as_str(), "button" | "link" | "menuitem");
    let field = matches!(role.as_str(), "textbox" | "searchbox" | "combobox" | "spinbutton");
    match step.action {
        A::Scroll | A::Wait | A::Hover => return (ActionClass::Read, "reads only".to_owned()),
        A::Navigate | A::Back | A::Forward | A::Reload => {
            return (ActionClass::Navigate, "goes to another page".to_owned());
        }
        _ => {}
    }
    let what = || format!("{role} \"{name}\"");
    if activates
        && control
        && let Some(w) = has(HIGH_RISK)
    {
        return (ActionClass::HighRisk, format!("{} reads like a high-risk action ({w})", what()));
    }
    let submit_like = (activates && control && has(SUBMIT).is_some()) || (enter && field);
    if submit_like && payment {
        return (ActionClass::HighRisk, format!("{} submits on a payment page", what()));
    }
    if submit_like {
        return (ActionClass::Submit, format!("{} submits a form", what()));
    }
    if activates && role == "link" {
        return (ActionClass::Navigate, format!("{} is a link", what()));
    }
    if activates && payment && target.is_none() {
        return (ActionClass::HighRisk, "a click on an unknown target on a payment page".to_owned());
    }
    (ActionClass::Input, "changes the page".to_owned())
}

/// The target's line in the latest observation without its ref (`button "Delete account"` of `[e7] button "Delete
/// account"`), or the target itself when it is `role "name"`.
#[must_use]
pub fn target_line(step: &ActParams, content: Option<&str>) -> Option<String> {
    let target = step.target.as_ref()?.as_str().trim();
    if target.contains('"') {
        return Some(target.to_owned());
    }
    let tag = format!("[{target}]");
    let line = content?.lines().find(|l| l.contains(&tag))?;
    // Without the ref: the same role and name under a new ref is the same target.
    Some(line.replace(&tag, " ").split_whitespace().collect::<Vec<_>>().join(" "))
}

/// `role "name"` of an observation line or a target.
pub(crate) fn role_and_name(line: &str) -> Option<(String, String)> {
    let open = line.find('"')?;
    let close = open + 1 + line[open + 1..].find('"')?;
    let role = line[..open].split_whitespace().last()?.trim_start_matches(['-', '*']).to_lowercase();
    Some((role, line[open + 1..close].to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn step(v: serde_json::Value) -> ActParams {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn every_rule_gives_its_class() {
        let page = "form:\n textbox \"Display name\" [e2]\n button \"Save profile\" [e3]\n button \"Show details\" [e4]\n\
                    region \"Danger zone\":\n  button \"Delete account\" [e5]\n link \"Help\" [e6]\n";
        let c = |v: serde_json::Value, url: &str| classify(&step(v), Some(page), url).0;
        let url = "https://app.test/settings";
        assert_eq!(c(json!({"action": "scroll", "value": "down"}), url), ActionClass::Read);
        assert_eq!(c(json!({"action": "navigate", "value": "https://x.test"}), url), ActionClass::Navigate);
        assert_eq!(c(json!({"action": "click", "target": "e5"}), url), ActionClass::HighRisk);
        assert_eq!(c(json!({"action": "click", "target": "button \"Pay now\""}), url), ActionClass::HighRisk);
        assert_eq!(c(json!({"action": "click", "target": "e3"}), url), ActionClass::Submit);
        assert_eq!(c(json!({"action": "press", "target": "e2", "value": "Enter"}), url), ActionClass::Submit);
        assert_eq!(c(json!({"action": "click", "target": "e3"}), "https://shop.test/checkout"), ActionClass::HighRisk);
        assert_eq!(c(json!({"action": "click", "target": "e6"}), url), ActionClass::Navigate);
        assert_eq!(c(json!({"action": "click", "target": "e4"}), url), ActionClass::Input);
        assert_eq!(c(json!({"action": "fill", "target": "e2", "value": "x"}), url), ActionClass::Input);
        // A fill of a field named like a risky word is still input: nothing is sent by typing.
        assert_eq!(c(json!({"action": "fill", "target": "e5", "value": "x"}), url), ActionClass::Input);
        let (_, why) = classify(&step(json!({"action": "click", "target": "e5"})), Some(page), url);
        assert!(why.contains("button \"Delete account\"") && why.contains("delete"), "{why}");
    }
}
