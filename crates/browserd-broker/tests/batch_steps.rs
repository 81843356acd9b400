//! `browser_batch` answers every step however it ends, on a real managed Chromium (issue 15 item 4): a step that
//! fails with a typed error (the earlier steps with their outcome, the failing step with its code, the later ones
//! `notStarted`), the batch deadline (the step cut short reads `unknown`, the later ones are not started), and a
//! Stop arriving while a step runs (the in-flight step and the rest are reported inside the `USER_STOPPED` error).
//! What reached the page is read back through a DevTools connection of the test's own.

mod real_browser;

use std::time::Duration;

use browserd_broker::config::{BrokerConfig, PolicyConfig};
use browserd_protocol::ErrorCode;
use real_browser::{Real, ref_of};
use serde_json::{Value, json};

fn value_of(id: &str) -> String {
    format!("document.getElementById('{id}').value")
}

/// The form's Full name, Email and Code fields: (tab, name, email, code).
async fn form(r: &Real) -> (Value, String, String, String) {
    let tab = r.tool("browser_open", json!({"url": r.site.url("/form.html")})).await["tab"].clone();
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let content = obs["untrustedContent"].as_str().unwrap();
    let name = ref_of(content, "textbox \"Full name\"");
    let email = ref_of(content, "textbox \"Email\"");
    let code = ref_of(content, "textbox \"Code\"");
    (tab, name, email, code)
}

/// A fill whose expectation never holds: the step waits (up to a minute) after its input was sent.
fn stalling_fill(target: &str, value: &str) -> Value {
    json!({"action": "fill", "target": target, "value": value, "timeoutMs": 60000,
           "expected": [{"kind": "textPresent", "text": "this text never appears"}]})
}

fn statuses(results: &Value) -> Vec<String> {
    results.as_array().unwrap().iter().map(|r| r["status"].as_str().unwrap_or("?").to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_with_a_typed_error_ends_the_batch_and_every_step_is_answered() {
    let r = Real::start("thread-batch-error").await;
    let (tab, name, _, code) = form(&r).await;
    let batch = r
        .tool(
            "browser_batch",
            json!({"tab": tab, "steps": [
                {"action": "fill", "target": name, "value": "Ada"},
                {"action": "click", "target": "e99999"},
                {"action": "fill", "target": code, "value": "123"}]}),
        )
        .await;
    assert_eq!(batch["ok"], false, "{batch}");
    let results = &batch["results"];
    assert_eq!(statuses(results), ["ran", "ran", "notStarted"], "{batch}");
    assert_eq!(results[0]["outcome"], "succeeded", "{batch}");
    assert_eq!(results[1]["outcome"], "failed", "{batch}");
    assert_eq!(results[1]["code"], "TARGET_NOT_FOUND", "the failing step names its code: {batch}");
    assert!(results[1]["message"].as_str().unwrap_or_default().contains("e99999"), "{batch}");
    assert_eq!(results[1]["dispatch"], "notDispatched", "{batch}");
    assert_eq!(results[2]["dispatch"], "notDispatched", "{batch}");
    assert_eq!(batch["stopped"], json!({"step": 1, "reason": "failed"}), "{batch}");
    let user = r.user().await;
    assert_eq!(user.eval_in("/form.html", &value_of("fullName")).await, json!("Ada"), "the first step ran");
    assert_eq!(user.eval_in("/form.html", &value_of("code")).await, json!(""), "the step after the error never ran");
    r.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_batch_deadline_cuts_the_running_step_short_and_starts_no_other() {
    let config = BrokerConfig { batch_deadline_ms: 3000, ..BrokerConfig::default() };
    let r = Real::start_config("thread-batch-deadline", config).await;
    let (tab, name, email, code) = form(&r).await;
    // The first step's input is sent, then it waits for an expectation that never holds: the deadline cuts it.
    let batch = r
        .tool(
            "browser_batch",
            json!({"tab": tab, "steps": [
                stalling_fill(&email, "ada@example.org"),
                {"action": "fill", "target": name, "value": "Ada"},
                {"action": "fill", "target": code, "value": "123"}]}),
        )
        .await;
    assert_eq!(batch["ok"], false, "{batch}");
    let results = &batch["results"];
    assert_eq!(statuses(results), ["cutShort", "notStarted", "notStarted"], "{batch}");
    assert_eq!(results[0]["outcome"], "unknown", "its input may have been sent: {batch}");
    assert!(results[0].get("dispatch").is_none(), "the cut step does not claim notDispatched: {batch}");
    assert_eq!(results[0]["code"], "DEADLINE_EXCEEDED", "{batch}");
    assert_eq!(results[1]["dispatch"], "notDispatched", "{batch}");
    assert_eq!(batch["stopped"], json!({"step": 0, "reason": "deadline"}), "{batch}");
    let user = r.user().await;
    assert_eq!(user.eval_in("/form.html", &value_of("fullName")).await, json!(""), "no later step ran");
    assert_eq!(user.eval_in("/form.html", &value_of("code")).await, json!(""), "no later step ran");
    // The tab works after the cut batch.
    let acted = r.tool("browser_act", json!({"tab": tab, "action": "fill", "target": name, "value": "Bea"})).await;
    assert_eq!(acted["outcome"], "succeeded", "{acted}");
    r.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_mid_batch_reports_the_step_in_flight_and_the_rest() {
    let r = Real::start("thread-batch-stop").await;
    let (tab, name, email, code) = form(&r).await;
    let user = r.user().await;
    let batch = r.c.tool(
        &r.s,
        "browser_batch",
        json!({"tab": tab, "steps": [
            {"action": "fill", "target": name, "value": "Ada"},
            stalling_fill(&email, "ada@example.org"),
            {"action": "fill", "target": code, "value": "123"}]}),
    );
    let stop = async {
        // The second step's input reached the page: it is now waiting for its expectation.
        for _ in 0..2000 {
            if user.eval_in("/form.html", &value_of("email")).await == json!("ada@example.org") {
                return r.c.stop_gate().await.unwrap();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the second step never sent its input");
    };
    let (batched, stopped) = tokio::join!(batch, stop);
    assert_eq!(stopped.code, ErrorCode::UserStopped);
    let e = batched.expect_err("a batch Stop cut answers USER_STOPPED").into_error_data();
    assert_eq!(e.code, ErrorCode::UserStopped, "{e:?}");
    let details = e.details.as_deref().cloned().unwrap_or_default();
    let results = &details["batch"]["results"];
    assert_eq!(statuses(results), ["ran", "cutShort", "notStarted"], "{details}");
    assert_eq!(results[0]["outcome"], "succeeded", "{details}");
    assert_eq!(results[1]["outcome"], "unknown", "{details}");
    assert_eq!(results[1]["code"], "USER_STOPPED", "{details}");
    assert!(results[1].get("dispatch").is_none(), "the cut step does not claim notDispatched: {details}");
    assert_eq!(results[2]["dispatch"], "notDispatched", "{details}");
    assert_eq!(details["batch"]["stopped"], json!({"step": 1, "reason": "userStopped"}), "{details}");
    assert_eq!(user.eval_in("/form.html", &value_of("code")).await, json!(""), "the last step never ran");
    // Stop holds: the next write is refused until the explicit resume.
    let again =
        r.c.tool(&r.s, "browser_act", json!({"tab": tab, "action": "fill", "target": code, "value": "1"}))
            .await
            .expect_err("Stop holds after the batch")
            .into_error_data();
    assert_eq!(again.code, ErrorCode::UserStopped, "{again:?}");
    r.finish().await;
}

fn approvals_with_deadline(batch_deadline_ms: u64) -> BrokerConfig {
    BrokerConfig {
        batch_deadline_ms,
        policy: PolicyConfig { require_approval: vec!["highRisk".into()], ..PolicyConfig::default() },
        ..BrokerConfig::default()
    }
}

/// With approvals in force, a step whose approval check fails for another reason than the user's approval (here its
/// screenshot point cannot be checked against the page) ends the batch as an error, not as a high-risk step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_approval_check_ends_the_batch_as_an_error_not_high_risk() {
    let r = Real::start_config("thread-batch-check-error", approvals_with_deadline(30_000)).await;
    let (tab, name, _, code) = form(&r).await;
    let batch = r
        .tool(
            "browser_batch",
            json!({"tab": tab, "steps": [
                {"action": "fill", "target": name, "value": "Ada"},
                {"action": "click", "at": {"imageId": "no-such-image", "x": 5.0, "y": 5.0}},
                {"action": "fill", "target": code, "value": "123"}]}),
        )
        .await;
    assert_eq!(batch["ok"], false, "{batch}");
    let results = &batch["results"];
    assert_eq!(statuses(results), ["ran", "notStarted", "notStarted"], "{batch}");
    assert_eq!(results[1]["code"], "STALE_TARGET", "{batch}");
    assert_eq!(results[1]["dispatch"], "notDispatched", "{batch}");
    assert_eq!(batch["stopped"], json!({"step": 1, "reason": "error"}), "{batch}");
    let user = r.user().await;
    assert_eq!(user.eval_in("/form.html", &value_of("code")).await, json!(""), "the step after it never ran");
    r.finish().await;
}

/// The approval check reads the target in the page: a page too busy to answer holds it, and the batch deadline ends
/// it there (the step not started, nothing sent), as it would end the step itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_batch_deadline_ends_a_step_whose_approval_check_hangs() {
    let r = Real::start_config("thread-batch-check-deadline", approvals_with_deadline(2000)).await;
    let (tab, name, _, _) = form(&r).await;
    // The page's main thread is busy for 20 s from now: nothing browserd asks of it is answered meanwhile.
    let user = r.user().await;
    user.run_in("/form.html", "setTimeout(() => { const t = Date.now(); while (Date.now() - t < 20000) {} }, 0)").await;
    let batch = r
        .tool("browser_batch", json!({"tab": tab, "steps": [{"action": "fill", "target": name, "value": "Ada"}]}))
        .await;
    assert_eq!(batch["ok"], false, "{batch}");
    let results = &batch["results"];
    assert_eq!(statuses(results), ["notStarted"], "{batch}");
    assert_eq!(results[0]["code"], "DEADLINE_EXCEEDED", "{batch}");
    assert_eq!(results[0]["dispatch"], "notDispatched", "{batch}");
    assert_eq!(batch["stopped"], json!({"step": 0, "reason": "deadline"}), "{batch}");
    r.finish().await;
}
