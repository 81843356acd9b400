//! Stop is a state, not an event, on a real managed Chromium: after `broker.stopGate` (what `browserd stop` sends) a
//! write with a ref read before the Stop is refused with `USER_STOPPED` and nothing reaches the page, until the
//! session resumes with `browser_claim` `resume: true` (a new lease with a higher fencing token and a full
//! observation). Also measures the stop → resume round trip (printed; never asserted), and screenshots of error pages
//! answer (issue 15 item 7).

mod real_browser;

use std::time::{Duration, Instant};

use browserd_protocol::ErrorCode;
use browserd_protocol::lifecycle::{DebuggerLeaseState, StatusParams};
use real_browser::{Real, ref_of};
use serde_json::json;

const VALUE: &str = "document.getElementById('fullName').value";

/// A `fill` with a ref read before the Stop, after the resume: `STALE_TARGET` / `controlEpochChanged`, nothing sent.
async fn assert_pre_stop_ref_is_void(r: &Real, tab: &serde_json::Value, old: &str) {
    let args = json!({"tab": tab, "action": "fill", "target": old, "value": "pre-Stop"});
    let (code, reason, dispatch) = match r.c.tool(&r.s, "browser_act", args).await {
        Ok(v) => (v["code"].clone(), v["staleReason"].clone(), v["dispatch"].clone()),
        Err(e) => {
            let e = e.into_error_data();
            let d = e.details.as_deref().cloned().unwrap_or_default();
            (json!(e.code.as_str()), d["staleReason"].clone(), d["dispatch"].clone())
        }
    };
    assert_eq!(code, "STALE_TARGET", "a pre-Stop ref fails closed after the resume");
    assert_eq!(reason, "controlEpochChanged");
    assert!(dispatch == "notDispatched" || dispatch.is_null(), "nothing was sent: {dispatch}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_stop_a_pre_stop_ref_is_refused_until_an_explicit_resume() {
    let r = Real::start("thread-stop").await;
    let tab = r.tool("browser_open", json!({"url": r.site.url("/form.html")})).await["tab"].clone();
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let name = ref_of(obs["untrustedContent"].as_str().unwrap(), "textbox \"Full name\"");
    // The open navigated as an action: the session holds the tab's write lease.
    let fill = json!({"tab": tab, "action": "fill", "target": name, "value": "Ada"});
    let first = r.tool("browser_act", json!({"tab": tab, "action": "fill", "target": name, "value": "x"})).await;
    assert_eq!(first["outcome"], "succeeded", "{first}");
    let status = r.c.call(&StatusParams::default()).await.unwrap();
    let before = status.write_leases.iter().find(|l| l.tab.0 == tab.as_u64().unwrap()).expect("a lease").clone();

    let stopped = r.c.stop_gate().await.unwrap();
    assert_eq!(stopped.code, ErrorCode::UserStopped);
    let user = r.user().await;

    // Every write is refused before anything is sent, however often the agent retries.
    for _ in 0..2 {
        let e =
            r.c.tool(&r.s, "browser_act", fill.clone())
                .await
                .expect_err("a write after Stop is refused")
                .into_error_data();
        assert_eq!(e.code, ErrorCode::UserStopped, "{e:?}");
        let details = e.details.as_deref().cloned().unwrap_or_default();
        assert_eq!(details["staleReason"], "controlEpochChanged", "{details}");
        assert_eq!(details["dispatch"], "notSent", "{details}");
        assert!(e.message.contains("browser_claim"), "the error names the resume call: {}", e.message);
    }
    let e = r
        .c
        .tool(&r.s, "browser_batch", json!({"tab": tab, "steps": [{"action": "fill", "target": name, "value": "Ada"}]}))
        .await
        .expect_err("a batch after Stop is refused")
        .into_error_data();
    assert_eq!(e.code, ErrorCode::UserStopped, "{e:?}");
    assert_eq!(user.eval_in("/form.html", VALUE).await, json!("x"), "nothing reached the page after Stop");
    let status = r.c.call(&StatusParams::default()).await.unwrap();
    assert!(status.write_leases.iter().all(|l| l.tab != before.tab), "Stop revoked the lease: {status:?}");
    // Reads still work while stopped.
    r.tool("browser_observe", json!({"tab": tab})).await;

    // The explicit resume: a new lease (higher fencing token) and a full observation.
    let resumed = r.tool("browser_claim", json!({"tab": tab, "resume": true})).await;
    let token = resumed["resumed"]["fencingToken"].as_u64().expect("the resume names its lease");
    assert!(token > before.fencing_token.0, "{resumed} vs {before:?}");
    let content = resumed["observation"]["untrustedContent"].as_str().expect("a full observation");
    let old = name;
    let name = ref_of(content, "textbox \"Full name\"");
    assert_ne!(name, old, "the resume's observation gives new refs");
    assert_pre_stop_ref_is_void(&r, &tab, &old).await;
    assert_eq!(user.eval_in("/form.html", VALUE).await, json!("x"), "the pre-Stop ref reached nothing");
    let acted = r.tool("browser_act", json!({"tab": tab, "action": "fill", "target": name, "value": "Ada"})).await;
    assert_eq!(acted["outcome"], "succeeded", "{acted}");
    assert_eq!(user.eval_in("/form.html", VALUE).await, json!("Ada"));

    // The stop → resume round trip (printed for the report; timings are never asserted under load).
    let mut rounds = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        r.c.stop_gate().await.unwrap();
        r.tool("browser_claim", json!({"tab": tab, "resume": true})).await;
        rounds.push(t.elapsed());
    }
    rounds.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    eprintln!(
        "stop->resume round trip over {} runs: p50 {:.1} ms, p95 {:.1} ms",
        rounds.len(),
        ms(rounds[rounds.len() / 2]),
        ms(rounds[rounds.len() * 95 / 100])
    );
    r.finish().await;
}

/// Stop holds on a plain remote DevTools endpoint too (a Chromium started with `--remote-debugging-port`, reached
/// by URL as a grid would be): a ref read before the Stop is refused with `USER_STOPPED` (`controlEpochChanged`)
/// while stopped and fails closed with `STALE_TARGET` / `controlEpochChanged` after the resume; writes answer
/// `USER_STOPPED` until `browser_claim` `resume: true`, whose new observation works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_holds_on_a_remote_endpoint_until_an_explicit_resume() {
    let r = Real::start_remote("thread-stop-remote").await;
    let tab = r.tool("browser_open", json!({"url": r.site.url("/form.html")})).await["tab"].clone();
    let status = r.c.call(&StatusParams::default()).await.unwrap();
    assert!(status.browsers.iter().any(|b| b.endpoint.is_some()), "a remote endpoint: {status:?}");
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let name = ref_of(obs["untrustedContent"].as_str().unwrap(), "textbox \"Full name\"");
    let first = r.tool("browser_act", json!({"tab": tab, "action": "fill", "target": name, "value": "x"})).await;
    assert_eq!(first["outcome"], "succeeded", "{first}");
    let user = r.user().await;

    let stopped = r.c.stop_gate().await.unwrap();
    assert_eq!(stopped.code, ErrorCode::UserStopped);
    assert!(stopped.leases_released >= 1, "{stopped:?}");
    for _ in 0..2 {
        let e =
            r.c.tool(&r.s, "browser_act", json!({"tab": tab, "action": "fill", "target": name, "value": "Ada"}))
                .await
                .expect_err("a write after Stop is refused")
                .into_error_data();
        assert_eq!(e.code, ErrorCode::UserStopped, "{e:?}");
        let details = e.details.as_deref().cloned().unwrap_or_default();
        assert_eq!(details["staleReason"], "controlEpochChanged", "{details}");
        assert_eq!(details["dispatch"], "notSent", "{details}");
    }
    // Observing again does not resume.
    let again = r.tool("browser_observe", json!({"tab": tab})).await;
    let fresh = ref_of(again["untrustedContent"].as_str().unwrap(), "textbox \"Full name\"");
    let e =
        r.c.tool(&r.s, "browser_act", json!({"tab": tab, "action": "fill", "target": fresh, "value": "Ada"}))
            .await
            .expect_err("a fresh ref is refused too until the resume")
            .into_error_data();
    assert_eq!(e.code, ErrorCode::UserStopped, "{e:?}");
    assert_eq!(user.eval_in("/form.html", VALUE).await, json!("x"), "nothing reached the page after Stop");

    let resumed = r.tool("browser_claim", json!({"tab": tab, "resume": true})).await;
    assert!(resumed["resumed"]["fencingToken"].as_u64().is_some(), "{resumed}");
    let content = resumed["observation"]["untrustedContent"].as_str().expect("a full observation");
    let new = ref_of(content, "textbox \"Full name\"");
    assert_pre_stop_ref_is_void(&r, &tab, &name).await;
    assert_eq!(user.eval_in("/form.html", VALUE).await, json!("x"), "the pre-Stop ref reached nothing");
    let acted = r.tool("browser_act", json!({"tab": tab, "action": "fill", "target": new, "value": "Ada"})).await;
    assert_eq!(acted["outcome"], "succeeded", "{acted}");
    assert_eq!(user.eval_in("/form.html", VALUE).await, json!("Ada"));
    r.finish().await;
}

/// The call's own deadline (the broker's default) and the bound a screenshot of an error or blank page answers within:
/// well inside the deadline, so an answer proves the call did not wait for it.
const CALL_DEADLINE: Duration = Duration::from_secs(10);
const FAST: Duration = Duration::from_secs(5);

/// `browser_observe` with a screenshot of `tab`, three times: each answers in under [`FAST`] with the image, or with
/// a typed error (never the deadline) whose message says `says` about what the tab shows.
async fn screenshots_answer_fast(r: &Real, tab: &serde_json::Value, says: &str) {
    for _ in 0..3 {
        let t0 = Instant::now();
        let answer = r.c.tool(&r.s, "browser_observe", json!({"tab": tab, "screenshot": true})).await;
        let took = t0.elapsed();
        match answer {
            Ok(obs) => assert!(obs["screenshot"].is_object(), "the answer carries the image: {obs}"),
            Err(e) => {
                let e = e.into_error_data();
                assert_ne!(e.code, ErrorCode::DeadlineExceeded, "answered inside the deadline: {e:?}");
                assert!(e.message.contains(says), "the error says what the tab shows: {e:?}");
            }
        }
        assert!(took < FAST, "answered in {took:?}, not near the {CALL_DEADLINE:?} deadline");
    }
}

/// A screenshot of a `chrome-error://` page (a tab navigated to a port nothing listens on) answers with the image
/// and the page's state, or a typed error, well inside the call's deadline; so does one of `about:blank`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_screenshot_of_an_error_page_answers() {
    let r = Real::start("thread-error-page").await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let tab = r.tool("browser_open", json!({"url": r.site.url("/index.html")})).await["tab"].clone();
    let url = format!("http://127.0.0.1:{port}/");
    let _ = r.c.tool(&r.s, "browser_act", json!({"tab": tab, "action": "navigate", "value": url})).await;
    screenshots_answer_fast(&r, &tab, "error page").await;
    // The page's state is still readable.
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    assert!(obs["url"].as_str().is_some(), "{obs}");

    let blank = r.tool("browser_open", json!({"url": "about:blank"})).await["tab"].clone();
    screenshots_answer_fast(&r, &blank, "blank").await;
    let obs = r.tool("browser_observe", json!({"tab": blank})).await;
    assert_eq!(obs["url"], "about:blank", "{obs}");
    r.finish().await;
}

/// Refs inside an out-of-process iframe survive the debugger's idle detach (1.5 s): after a wait longer than the
/// idle window the re-attached child session maps to the same document (its loader id), so the click lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oopif_refs_survive_the_idle_detach() {
    let r = Real::start("thread-oopif-idle").await;
    let (tab, inner) = r.open_iframes().await;
    tokio::time::sleep(Duration::from_millis(3000)).await;
    for target in &inner {
        let acted = r.tool("browser_act", json!({"tab": tab, "action": "click", "target": target})).await;
        assert_eq!(acted["outcome"], "succeeded", "{target} after the idle window: {acted}");
    }
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let content = obs["untrustedContent"].as_str().unwrap();
    assert_eq!(content.matches("Inner clicks: 1").count(), 2, "{content}");
    r.finish().await;
}

/// The other side of the test above: while the tab is idle-detached the out-of-process frame navigates (the user's own
/// DevTools connection moves it to another page of the same site), so a ref read in it before is void: the click
/// answers `STALE_TARGET` / `documentChanged`, nothing reaches the new document, and the same-origin frame's ref,
/// whose document did not change, still acts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oopif_that_navigated_during_the_idle_detach_voids_its_refs() {
    let r = Real::start("thread-oopif-moved").await;
    let (tab, inner) = r.open_iframes().await;
    // In document order: the same-origin frame, then the cross-site one.
    let (same, cross) = (&inner[0], &inner[1]);
    // The idle detach: browserd lets go of the tab's debugger after the idle window.
    r.until_detached(&tab).await;
    let id = tab.as_u64().unwrap();
    // Meanwhile the cross-site frame moves to another page of its site, and finishes loading it.
    let user = r.user().await;
    user.run_in(
        "/iframes.html",
        "window.__moved = false; const f = document.getElementById('cross'); f.onload = () => { window.__moved = true; }; \
         f.src = f.src.replace('frame=cross-origin', 'frame=moved')",
    )
    .await;
    let mut moved = false;
    for _ in 0..400 {
        if user.eval_in("/iframes.html", "window.__moved").await == json!(true) {
            moved = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(moved, "the cross-site frame loaded its new page");
    let st = r.c.call(&StatusParams::default()).await.unwrap();
    assert!(
        st.debugger_leases.iter().all(|l| l.tab.0 != id || l.state == DebuggerLeaseState::Detached),
        "still detached when the frame navigated: {:?}",
        st.debugger_leases
    );

    let (code, reason) =
        match r.c.tool(&r.s, "browser_act", json!({"tab": tab, "action": "click", "target": cross})).await {
            Ok(v) => (v["code"].clone(), v["staleReason"].clone()),
            Err(e) => {
                let e = e.into_error_data();
                let d = e.details.as_deref().cloned().unwrap_or_default();
                (json!(e.code.as_str()), d["staleReason"].clone())
            }
        };
    assert_eq!((code, reason), (json!("STALE_TARGET"), json!("documentChanged")), "a ref of the old document is void");
    let acted = r.tool("browser_act", json!({"tab": tab, "action": "click", "target": same})).await;
    assert_eq!(acted["outcome"], "succeeded", "{same}, whose document did not change: {acted}");
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let content = obs["untrustedContent"].as_str().unwrap();
    assert!(content.contains("moved"), "the cross-site frame shows its new page: {content}");
    assert_eq!(content.matches("Inner clicks: 1").count(), 1, "only the same-origin frame counted a click: {content}");
    assert_eq!(content.matches("Inner clicks: 0").count(), 1, "nothing reached the new document: {content}");
    r.finish().await;
}

/// A batch stops before a high-risk step (a button named Submit) and answers every step: the fill ran, the submit
/// and the step after it were not started, and the form was not submitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_stops_before_a_high_risk_step_and_answers_every_step() {
    let r = Real::start("thread-batch-risk").await;
    let tab = r.tool("browser_open", json!({"url": r.site.url("/form.html")})).await["tab"].clone();
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let content = obs["untrustedContent"].as_str().unwrap();
    let name = ref_of(content, "textbox \"Full name\"");
    let submit = ref_of(content, "button \"Submit\"");
    let batch = r
        .tool(
            "browser_batch",
            json!({"tab": tab, "steps": [
                {"action": "fill", "target": name, "value": "Ada"},
                {"action": "click", "target": submit},
                {"action": "fill", "target": name, "value": "Bob"}]}),
        )
        .await;
    assert_eq!(batch["ok"], false, "{batch}");
    assert_eq!(batch["stopped"], json!({"step": 1, "reason": "highRisk"}), "{batch}");
    let results = batch["results"].as_array().unwrap();
    let status: Vec<&str> = results.iter().map(|s| s["status"].as_str().unwrap()).collect();
    assert_eq!(status, ["ran", "notStarted", "notStarted"], "{batch}");
    assert_eq!(results[0]["outcome"], "succeeded", "{batch}");
    assert_eq!(results[1]["code"], "HIGH_RISK", "{batch}");
    assert_eq!(results[1]["dispatch"], "notDispatched", "{batch}");
    let user = r.user().await;
    assert_eq!(user.eval_in("/form.html", VALUE).await, json!("Ada"), "the step after the high-risk one never ran");
    let url = user.eval_in("/form.html", "location.href").await;
    assert!(!url.as_str().unwrap_or_default().contains('?'), "the form was not submitted: {url}");
    r.finish().await;
}
