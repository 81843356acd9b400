//! Action classes and approvals on a real managed Chromium: with `[policy] require_approval = ["submit",
//! "highRisk"]`, a click on the fixture's "Delete account" button answers `APPROVAL_REQUIRED` naming exactly what to
//! confirm and sends nothing (the fixture server records every click: ground truth on the server's side); once the
//! user grants it (`approval.grant`, as `browserd approve` does) the same call runs once; a changed action needs its
//! own approval; a batch stops before a step that needs one.

mod real_browser;

use std::time::Duration;

use browserd_broker::config::{BrokerConfig, PolicyConfig};
use browserd_protocol::ErrorCode;
use browserd_protocol::policy::ApprovalGrantParams;
use real_browser::{Real, ref_of, refused};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_high_risk_click_needs_an_approval_bound_to_exactly_it() {
    let policy = PolicyConfig { require_approval: vec!["submit".into(), "highRisk".into()], ..PolicyConfig::default() };
    let r = Real::start_config("thread-approvals", BrokerConfig { policy, ..BrokerConfig::default() }).await;
    let tab = r.tool("browser_open", json!({"url": r.site.url("/delete-account.html")})).await["tab"].clone();
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let content = obs["untrustedContent"].as_str().unwrap().to_owned();
    let delete = ref_of(&content, "button \"Delete account\"");
    let show = ref_of(&content, "button \"Show details\"");
    let save = ref_of(&content, "button \"Save profile\"");
    let name = ref_of(&content, "textbox \"Display name\"");

    let status = r.tool("browser_status", json!({})).await;
    assert_eq!(status["policy"]["requireApproval"], json!(["submit", "highRisk"]), "{status}");

    // Asked: what to confirm, the class, the origin; nothing reached the page.
    let e = refused(&r, "browser_act", json!({"tab": tab, "action": "click", "target": delete})).await;
    assert_eq!(e.code, ErrorCode::ApprovalRequired, "{e:?}");
    assert!(e.message.contains("click button \"Delete account\"") && e.message.contains("highRisk"), "{e:?}");
    assert!(e.message.contains("nothing was sent"), "{e:?}");
    let details = e.details.as_ref().unwrap();
    let id = details["approval"].as_str().unwrap().to_owned();
    assert_eq!(details["origin"], r.site.url("").trim_end_matches('/'), "{details}");
    assert!(e.next_step.contains(&format!("browserd approve {id}")), "{e:?}");

    // An input-class click needs nothing.
    let shown = r.tool("browser_act", json!({"tab": tab, "action": "click", "target": show})).await;
    assert_eq!(shown["outcome"], "succeeded", "{shown}");
    assert!(r.site.wait_for_record("details:show", Duration::from_secs(5)).await);

    // A batch stops before the step that needs an approval (a submit), after the steps before it.
    let batch = r
        .tool(
            "browser_batch",
            json!({"tab": tab, "steps": [
                {"action": "fill", "target": name, "value": "Grace"},
                {"action": "click", "target": save},
            ]}),
        )
        .await;
    assert_eq!(batch["ok"], false, "{batch}");
    assert_eq!(batch["results"][0]["status"], "ran", "{batch}");
    assert_eq!(batch["results"][1]["code"], "APPROVAL_REQUIRED", "{batch}");
    assert_eq!(batch["results"][1]["status"], "notStarted", "{batch}");

    // The user approves; a changed action (another parameter) is not covered by it.
    let granted = r.c.call(&ApprovalGrantParams { approval: id.clone() }).await.unwrap();
    assert!(granted.approved.contains("Delete account"), "{granted:?}");
    let e = refused(&r, "browser_act", json!({"tab": tab, "action": "dblclick", "target": delete})).await;
    assert_eq!(e.code, ErrorCode::ApprovalRequired, "{e:?}");
    assert_ne!(e.details.as_ref().unwrap()["approval"], id.as_str(), "another action, another approval");
    assert!(!r.site.records().iter().any(|x| x == "account:delete"), "{:?}", r.site.records());

    // The approved call runs, once.
    let done = r.tool("browser_act", json!({"tab": tab, "action": "click", "target": delete})).await;
    assert_eq!(done["outcome"], "succeeded", "{done}");
    assert!(r.site.wait_for_record("account:delete", Duration::from_secs(5)).await, "{:?}", r.site.records());
    let e = refused(&r, "browser_act", json!({"tab": tab, "action": "click", "target": delete})).await;
    assert_eq!(e.code, ErrorCode::ApprovalRequired, "an approval is used once: {e:?}");
    assert_eq!(r.site.records().iter().filter(|x| *x == "account:delete").count(), 1, "{:?}", r.site.records());

    // An unknown (or used) approval id is refused with what to do.
    let bad = r.c.call(&ApprovalGrantParams { approval: id }).await.unwrap_err();
    assert!(bad.to_string().contains("no approval"), "{bad}");
    r.finish().await;
}
