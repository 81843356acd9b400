//! Approvals bound to the target the browser finds, on a real managed Chromium with `[policy] require_approval =
//! ["highRisk"]`: a click at a screenshot point on the fixture's "Delete account" button is classed by the node the
//! point hits (not by the text of an observation, which names no target for a point), so it answers
//! `APPROVAL_REQUIRED` and sends nothing (the fixture server records every click: ground truth on the server's side)
//! until the user grants it; and an approval binds the node, so one of two same-named buttons never runs on the
//! other's approval.

mod real_browser;

use std::time::Duration;

use browserd_broker::config::{BrokerConfig, PolicyConfig};
use browserd_protocol::ErrorCode;
use browserd_protocol::policy::ApprovalGrantParams;
use real_browser::{Real, User, ref_of, refused};
use serde_json::{Value, json};

/// A fresh screenshot of `tab` (the delete-account fixture) and the point of it at the centre of the element
/// `selector` selects, where the page lays it out (read by the person at the browser): an `at` for `browser_act`.
async fn point_on(r: &Real, user: &User, tab: &Value, selector: &str) -> Value {
    let obs = r.tool("browser_observe", json!({"tab": tab, "screenshot": true})).await;
    let shot = &obs["screenshot"];
    let image = shot["imageId"].as_str().unwrap_or_else(|| panic!("a screenshot: {obs}")).to_owned();
    let scale = shot["scale"].as_f64().unwrap();
    let script = format!(
        "(() => {{ const b = document.querySelector({selector:?}).getBoundingClientRect();
                  return {{x: b.x + b.width / 2, y: b.y + b.height / 2}}; }})()"
    );
    let rect = user.eval_in("/delete-account.html", &script).await;
    json!({"imageId": image, "x": rect["x"].as_f64().unwrap() * scale, "y": rect["y"].as_f64().unwrap() * scale})
}

fn high_risk_needs_approval() -> BrokerConfig {
    BrokerConfig {
        policy: PolicyConfig { require_approval: vec!["highRisk".into()], ..PolicyConfig::default() },
        ..BrokerConfig::default()
    }
}

/// The approved click runs (the page records the deletion), and the same call again needs a new approval: an
/// approval is used once.
async fn runs_once_then_needs_approval_again(r: &Real, click: Value) {
    let done = r.tool("browser_act", click.clone()).await;
    assert_eq!(done["outcome"], "succeeded", "{done}");
    assert!(r.site.wait_for_record("account:delete", Duration::from_secs(5)).await, "{:?}", r.site.records());
    let again = refused(r, "browser_act", click).await;
    assert_eq!(again.code, ErrorCode::ApprovalRequired, "an approval is used once: {again:?}");
    assert_eq!(r.site.records().iter().filter(|x| *x == "account:delete").count(), 1, "{:?}", r.site.records());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_at_a_screenshot_point_on_delete_account_needs_the_users_approval() {
    let r = Real::start_config("thread-approval-point", high_risk_needs_approval()).await;
    let tab = r.tool("browser_open", json!({"url": r.site.url("/delete-account.html")})).await["tab"].clone();
    let user = r.user().await;
    let at = point_on(&r, &user, &tab, "#delete").await;
    let click = json!({"tab": tab, "action": "click", "at": at});

    let e = refused(&r, "browser_act", click.clone()).await;
    assert_eq!(e.code, ErrorCode::ApprovalRequired, "{e:?}");
    assert!(e.message.contains("button \"Delete account\"") && e.message.contains("highRisk"), "{e:?}");
    assert!(e.message.contains("nothing was sent"), "{e:?}");
    let id = e.details.as_ref().unwrap()["approval"].as_str().unwrap().to_owned();
    // Nothing reached the page: the server heard of no delete, and the page still says so.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!r.site.records().iter().any(|x| x == "account:delete"), "{:?}", r.site.records());
    let status = user.eval_in("/delete-account.html", "document.getElementById('status').textContent").await;
    assert_eq!(status, "Account: active");

    // Approved: the same call runs, once.
    let granted = r.c.call(&ApprovalGrantParams { approval: id }).await.unwrap();
    assert!(granted.approved.contains("Delete account"), "{granted:?}");
    runs_once_then_needs_approval_again(&r, click).await;
    r.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_of_one_of_two_same_named_buttons_does_not_run_the_other() {
    let r = Real::start_config("thread-approval-twins", high_risk_needs_approval()).await;
    let tab = r.tool("browser_open", json!({"url": r.site.url("/twin-buttons.html")})).await["tab"].clone();
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let content = obs["untrustedContent"].as_str().unwrap().to_owned();
    // Two "Remove card" buttons: the same role and name (and the same line but for the ref), two nodes.
    let lines: Vec<&str> = content.lines().filter(|l| l.contains("button \"Remove card\"")).collect();
    assert_eq!(lines.len(), 2, "{content}");
    let (first, second) = (ref_of(lines[0], "Remove card"), ref_of(lines[1], "Remove card"));

    let e = refused(&r, "browser_act", json!({"tab": tab, "action": "click", "target": first})).await;
    assert_eq!(e.code, ErrorCode::ApprovalRequired, "{e:?}");
    let id = e.details.as_ref().unwrap()["approval"].as_str().unwrap().to_owned();
    r.c.call(&ApprovalGrantParams { approval: id.clone() }).await.unwrap();

    // The other button of the same name is another target: its own approval is asked, nothing is clicked.
    let other = refused(&r, "browser_act", json!({"tab": tab, "action": "click", "target": second})).await;
    assert_eq!(other.code, ErrorCode::ApprovalRequired, "{other:?}");
    assert_ne!(other.details.as_ref().unwrap()["approval"], id.as_str(), "another node, another approval");

    // The approved one runs; the server heard of that one only.
    let done = r.tool("browser_act", json!({"tab": tab, "action": "click", "target": first})).await;
    assert_eq!(done["outcome"], "succeeded", "{done}");
    assert!(r.site.wait_for_record("card:remove:first", Duration::from_secs(5)).await, "{:?}", r.site.records());
    assert!(!r.site.records().iter().any(|x| x == "card:remove:second"), "{:?}", r.site.records());

    // The same page in two tabs: the same button, the same line of each observation, two documents. An approval
    // asked and granted in one tab does not run the button of the other.
    let tab_a = r.tool("browser_open", json!({"url": r.site.url("/delete-account.html")})).await["tab"].clone();
    let tab_b = r.tool("browser_open", json!({"url": r.site.url("/delete-account.html")})).await["tab"].clone();
    let delete_in = |obs: serde_json::Value| ref_of(obs["untrustedContent"].as_str().unwrap(), "\"Delete account\"");
    let a = delete_in(r.tool("browser_observe", json!({"tab": tab_a})).await);
    let b = delete_in(r.tool("browser_observe", json!({"tab": tab_b})).await);
    let e = refused(&r, "browser_act", json!({"tab": tab_a, "action": "click", "target": a})).await;
    assert_eq!(e.code, ErrorCode::ApprovalRequired, "{e:?}");
    let id = e.details.as_ref().unwrap()["approval"].as_str().unwrap().to_owned();
    r.c.call(&ApprovalGrantParams { approval: id.clone() }).await.unwrap();
    let other = refused(&r, "browser_act", json!({"tab": tab_b, "action": "click", "target": b})).await;
    assert_eq!(other.code, ErrorCode::ApprovalRequired, "{other:?}");
    assert_ne!(other.details.as_ref().unwrap()["approval"], id.as_str(), "another document, another approval");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!r.site.records().iter().any(|x| x == "account:delete"), "{:?}", r.site.records());
    let done = r.tool("browser_act", json!({"tab": tab_a, "action": "click", "target": a})).await;
    assert_eq!(done["outcome"], "succeeded", "{done}");
    assert!(r.site.wait_for_record("account:delete", Duration::from_secs(5)).await, "{:?}", r.site.records());
    r.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submitting_a_form_that_reads_like_a_transfer_needs_an_approval_whatever_the_button_says() {
    let r = Real::start_config("thread-approval-form", high_risk_needs_approval()).await;
    let tab = r.tool("browser_open", json!({"url": r.site.url("/transfer-form.html")})).await["tab"].clone();
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let content = obs["untrustedContent"].as_str().unwrap().to_owned();
    let buttons: Vec<&str> = content.lines().filter(|l| l.contains("button \"Continue\"")).collect();
    assert_eq!(buttons.len(), 2, "{content}");
    let (transfer, search) = (ref_of(buttons[0], "Continue"), ref_of(buttons[1], "Continue"));
    let amount = ref_of(&content, "textbox \"Amount\"");

    // The transfer form's "Continue" and Enter in its field: high risk, by the form's heading.
    let e = refused(&r, "browser_act", json!({"tab": tab, "action": "click", "target": transfer})).await;
    assert_eq!(e.code, ErrorCode::ApprovalRequired, "{e:?}");
    assert!(e.message.contains("submits a form") && e.message.contains("transfer"), "{e:?}");
    let e =
        refused(&r, "browser_act", json!({"tab": tab, "action": "press", "target": amount, "value": "Enter"})).await;
    assert_eq!(e.code, ErrorCode::ApprovalRequired, "{e:?}");
    // Typing into it is not a submission.
    let typed = r.tool("browser_act", json!({"tab": tab, "action": "fill", "target": amount, "value": "5"})).await;
    assert_eq!(typed["outcome"], "succeeded", "{typed}");
    // The search form's "Continue" is a plain submit: it runs.
    let searched = r.tool("browser_act", json!({"tab": tab, "action": "click", "target": search})).await;
    assert_eq!(searched["outcome"], "succeeded", "{searched}");
    assert!(r.site.wait_for_record("search:submit", Duration::from_secs(5)).await, "{:?}", r.site.records());
    assert!(!r.site.records().iter().any(|x| x == "transfer:submit"), "{:?}", r.site.records());
    r.finish().await;
}

/// An approval of a click at a point binds the button the point is on, not the text node inside it: the page
/// re-rendering the button's label (a new `<span>` and text node) between the approval and the click leaves it the
/// same target, so the approved click runs, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_point_click_runs_after_the_button_label_re_renders() {
    let r = Real::start_config("thread-approval-rerender", high_risk_needs_approval()).await;
    let tab = r.tool("browser_open", json!({"url": r.site.url("/delete-account.html")})).await["tab"].clone();
    let user = r.user().await;
    // The label is a <span> the page replaces whenever it re-renders (as a framework would).
    let rerender = "(() => { const b = document.getElementById('delete'); const s = document.createElement('span'); \
                    s.textContent = 'Delete account'; b.replaceChildren(s); })()";
    user.run_in("/delete-account.html", rerender).await;
    let at = point_on(&r, &user, &tab, "#delete span").await;
    let click = json!({"tab": tab, "action": "click", "at": at});
    let e = refused(&r, "browser_act", click.clone()).await;
    assert_eq!(e.code, ErrorCode::ApprovalRequired, "{e:?}");
    assert!(e.message.contains("button \"Delete account\""), "{e:?}");
    let id = e.details.as_ref().unwrap()["approval"].as_str().unwrap().to_owned();
    r.c.call(&ApprovalGrantParams { approval: id }).await.unwrap();
    // The page re-renders the label; the button is the same node.
    user.run_in("/delete-account.html", rerender).await;
    runs_once_then_needs_approval_again(&r, click).await;
    r.finish().await;
}
