//! Action classes: what each action does, from the action, its target (its role and name, and the form it belongs to)
//! and the page it is on. The policy says which classes need the user's approval (`[policy] require_approval`).
//!
//! The target is what the browser finds for the action before it runs (`Provider::describe_target`: the ref's node, or
//! the node a screenshot point hits now, with its live role and name and its enclosing form); only when the browser
//! cannot say is it the target's line in the tab's latest observation, or the `role "name"` the caller gave. The
//! rules, first match wins:
//!
//! 1. `scroll`, `wait`, `hover`: **read**.
//! 2. `navigate`, `back`, `forward`, `reload`: **navigate**.
//! 3. A click, double click or Enter on a `button`, `link` or `menuitem` whose name has a high-risk word (pay,
//!    purchase, buy, checkout, order, send, transfer, delete, remove, erase, close account, cancel subscription,
//!    publish, post, share, grant, allow, permission, authorise/authorize, invite, make admin): **highRisk**.
//! 4. A click, double click or Enter that submits a form (a submit button of the form, or Enter in one of its text
//!    fields) whose name, id, label, `action` URL, legend or headings have a high-risk word (a form `action` of
//!    `/account/delete`, a form headed "Transfer money"): **highRisk**, whatever the button is called.
//! 5. The same on a submit-like control (a name with submit, save, sign in, log in, confirm, apply, continue,
//!    update, or any submit button of a form), or Enter in a text field, on a page whose URL reads like checkout or
//!    payment (`checkout`, `payment`, `billing`, `/pay`): **highRisk**; elsewhere **submit**.
//! 6. A click on a `link`: **navigate**.
//! 7. Everything else (fill, type, select, check, press, upload, drag, other clicks): **input**.
//!
//! A target nothing can be found for (the browser cannot resolve it, and it is in no observation) is judged as its
//! action alone: a click there is **input** unless rule 5's page applies (the action itself then fails before anything
//! is sent). `crate::risk` keeps the batch's own stop before high-risk steps.

use browserd_core::provider::TargetDescription;
use browserd_protocol::policy::ActionClass;
use browserd_protocol::{ActParams, ActionKind};

/// High-risk words of rules 3 and 4.
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

/// High-risk phrases of rules 3 and 4 (their words are harmless alone).
const HIGH_RISK_PHRASES: &[&str] = &["close account", "close my account", "cancel subscription", "make admin"];

/// Submit words of rule 5.
const SUBMIT: &[&str] = &["submit", "save", "sign", "log", "login", "confirm", "apply", "continue", "update", "next"];

/// Page URL parts of rule 5.
const PAYMENT_PAGES: &[&str] = &["checkout", "payment", "billing", "/pay"];

/// What an action is done to, as [`classify`] judges it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    /// Its role, lower case.
    pub role: String,
    /// Its accessible name.
    pub name: String,
    /// Activating it submits its form.
    pub submits: bool,
    /// What names its form (empty: none, or unknown).
    pub form: Vec<String>,
}

impl Target {
    /// The target as the browser found it.
    #[must_use]
    pub fn described(d: &TargetDescription) -> Target {
        Target { role: d.role.to_lowercase(), name: d.name.clone(), submits: d.submits, form: d.form.clone() }
    }

    /// The target of an observation line or a `role "name"` target (no form known).
    #[must_use]
    pub fn of_line(line: &str) -> Option<Target> {
        let (role, name) = role_and_name(line)?;
        Some(Target { role, name, ..Target::default() })
    }
}

/// The lower-case words of `text`.
fn words(text: &str) -> Vec<String> {
    text.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_owned).collect()
}

/// The high-risk word or phrase of rules 3 and 4 in `text`, if any.
fn high_risk(text: &str) -> Option<String> {
    let words = words(text);
    if let Some(w) = words.iter().find(|w| HIGH_RISK.contains(&w.as_str())) {
        return Some(w.clone());
    }
    let joined = format!(" {} ", words.join(" "));
    HIGH_RISK_PHRASES.iter().find(|p| joined.contains(&format!(" {p} "))).map(|p| (*p).to_owned())
}

/// The class of `step` and the rule that gave it. `target` is what the step acts on (see the module's rules), `url`
/// the tab's page.
#[must_use]
pub fn classify(step: &ActParams, target: Option<&Target>, url: &str) -> (ActionClass, String) {
    use ActionKind as A;
    let Target { role, name, submits, form } = target.cloned().unwrap_or_default();
    let named = words(&name);
    let has = |list: &[&str]| named.iter().find(|w| list.contains(&w.as_str())).cloned();
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
        && let Some(w) = high_risk(&name)
    {
        return (ActionClass::HighRisk, format!("{} reads like a high-risk action ({w})", what()));
    }
    let submits_form = (activates && control && submits) || (enter && field && submits);
    if submits_form && let Some((text, w)) = form.iter().find_map(|t| high_risk(t).map(|w| (t, w))) {
        return (
            ActionClass::HighRisk,
            format!("{} submits a form that reads like a high-risk action ({w}: {text:?})", what()),
        );
    }
    let submit_like = (activates && control && has(SUBMIT).is_some()) || (enter && field) || submits_form;
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

/// The target's line in the latest observation without its ref (`button "Delete account"` of `e7 button "Delete
/// account"`), or the target itself when it is `role "name"`.
#[must_use]
pub fn target_line(step: &ActParams, content: Option<&str>) -> Option<String> {
    let target = step.target.as_ref()?.as_str().trim();
    if target.contains('"') {
        return Some(target.to_owned());
    }
    let (_, rest) = browserd_protocol::split_ref(browserd_protocol::ref_line(content?, target)?)?;
    // Without the ref: the same role and name under a new ref is the same target.
    Some(rest.split_whitespace().collect::<Vec<_>>().join(" "))
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
        let page = "form:\n e2 textbox \"Display name\"\n e3 button \"Save profile\"\n e4 button \"Show details\"\n\
                    region \"Danger zone\":\n  e5 button \"Delete account\"\n e6 link \"Help\"\n\
                    text: e7 button \"Show more\"\n e77 button \"Pay now\"\n";
        let line = |v: &serde_json::Value| target_line(&step(v.clone()), Some(page)).and_then(|l| Target::of_line(&l));
        let c = |v: serde_json::Value, url: &str| classify(&step(v.clone()), line(&v).as_ref(), url).0;
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
        // A ref is read from the line it starts, never from page text that only shows it or a longer ref.
        assert_eq!(line(&json!({"action": "click", "target": "e7"})), None);
        assert_eq!(c(json!({"action": "click", "target": "e77"}), url), ActionClass::HighRisk);
        assert_eq!(c(json!({"action": "fill", "target": "e2", "value": "x"}), url), ActionClass::Input);
        // A fill of a field named like a risky word is still input: nothing is sent by typing.
        assert_eq!(c(json!({"action": "fill", "target": "e5", "value": "x"}), url), ActionClass::Input);
        let click = json!({"action": "click", "target": "e5"});
        let (_, why) = classify(&step(click.clone()), line(&click).as_ref(), url);
        assert!(why.contains("button \"Delete account\"") && why.contains("delete"), "{why}");
    }

    #[test]
    fn a_form_that_reads_like_a_high_risk_action_makes_its_submit_high_risk() {
        let url = "https://app.test/settings";
        let t = |role: &str, name: &str, submits: bool, form: &[&str]| Target {
            role: role.into(),
            name: name.into(),
            submits,
            form: form.iter().map(|s| (*s).to_owned()).collect(),
        };
        let click = step(json!({"action": "click", "target": "e3"}));
        let enter = step(json!({"action": "press", "target": "e2", "value": "Enter"}));
        let class = |s: &ActParams, target: Target| classify(s, Some(&target), url).0;
        // A neutral name, a form whose action, name, label, legend or heading says what it does.
        for form in
            [&["/account/delete"][..], &["close-account", "Close your account"], &["Transfer money"], &["Pay invoice"]]
        {
            assert_eq!(class(&click, t("button", "Continue", true, form)), ActionClass::HighRisk, "{form:?}");
            assert_eq!(class(&enter, t("textbox", "Amount", true, form)), ActionClass::HighRisk, "{form:?}");
        }
        let (_, why) = classify(&click, Some(&t("button", "Confirm", true, &["/wire/transfer"])), url);
        assert!(why.contains("transfer") && why.contains("/wire/transfer"), "{why}");
        // A submit button of a harmless form is submit, whatever it is called; a button that does not submit the
        // form, or typing into a field, is not judged by the form.
        assert_eq!(class(&click, t("button", "Go", true, &["search", "/search"])), ActionClass::Submit);
        assert_eq!(class(&click, t("button", "Show details", false, &["/account/delete"])), ActionClass::Input);
        let fill = step(json!({"action": "fill", "target": "e2", "value": "x"}));
        assert_eq!(class(&fill, t("textbox", "Amount", true, &["Transfer money"])), ActionClass::Input);
        // The same submit button on a payment page is high risk.
        let go = t("button", "Go", true, &["search"]);
        assert_eq!(classify(&click, Some(&go), "https://shop.test/checkout").0, ActionClass::HighRisk);
    }
}
