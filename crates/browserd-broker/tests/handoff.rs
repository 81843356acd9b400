//! `browser_handoff` with `until` on a real managed Chromium: the tab is handed to the user, who finishes through
//! their own DevTools connection (standing in for clicks and typing), and the call returns `completed` with the
//! evidence; a deadline gives `DEADLINE_EXCEEDED` with the tab still handed off; the user closing the tab, a turn
//! end and Stop end the wait with a typed answer.

mod real_browser;

use std::time::Duration;

use browserd_broker::client::ClientError;
use browserd_protocol::ErrorCode;
use browserd_protocol::lifecycle::{TurnEndParams, TurnEndReason};
use real_browser::Real;
use serde_json::{Value, json};

/// After the handoff let go of the tab, lets its wait begin before the user acts (not a timing assertion).
const USER_DELAY: Duration = Duration::from_millis(800);

fn rpc_error(res: Result<Value, ClientError>) -> browserd_protocol::ErrorData {
    match res {
        Err(ClientError::Rpc(e)) => *e,
        other => panic!("expected a broker error, got {other:?}"),
    }
}

fn provenance_of(listed: &Value, tab: &Value) -> String {
    let entry = listed["tabs"].as_array().unwrap().iter().find(|t| &t["tab"] == tab);
    entry.unwrap_or_else(|| panic!("tab {tab} not listed: {listed}"))["provenance"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_user_finishes_and_the_agent_gets_the_tab_back() {
    let r = Real::start("thread-handoff-done").await;
    let opened = r.tool("browser_open", json!({"url": r.site.url("/form.html?handoff=login")})).await;
    let tab = opened["tab"].clone();
    let user = r.user().await;

    // Waiting on the URL: `navigated` proves the user moved after the wait began.
    let wait = r.c.tool(
        &r.s,
        "browser_handoff",
        json!({"tab": tab, "message": "Sign in, please", "timeoutMs": 60000,
               "until": [{"kind": "navigated"}, {"kind": "url", "contains": "signed-in=1"}]}),
    );
    let act = async {
        r.until_let_go(&tab).await;
        tokio::time::sleep(USER_DELAY).await;
        user.run_in("handoff=login", "location.href = '/index.html?signed-in=1'").await;
    };
    let (done, ()) = tokio::join!(wait, act);
    let done = done.unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["url"].as_str().unwrap().contains("/index.html?signed-in=1"), "{done}");
    let evidence = done["evidence"].as_array().unwrap();
    assert_eq!(evidence.len(), 2, "{done}");
    assert!(evidence.iter().all(|e| e["passed"] == true), "{done}");

    // The agent has the tab again: it can act on it.
    let nav = r
        .tool("browser_act", json!({"tab": tab, "action": "navigate", "value": r.site.url("/form.html?again=1")}))
        .await;
    assert_eq!(nav["outcome"], "succeeded", "{nav}");

    // Waiting on the page's text: read with observations, never with input.
    let wait = r.c.tool(
        &r.s,
        "browser_handoff",
        json!({"tab": tab, "message": "Approve the payment",
               "until": [{"kind": "textPresent", "text": "Payment approved"}]}),
    );
    let act = async {
        r.until_let_go(&tab).await;
        tokio::time::sleep(USER_DELAY).await;
        user.run_in("again=1", "document.body.insertAdjacentHTML('beforeend', '<p>Payment approved</p>')").await;
    };
    let (done, ()) = tokio::join!(wait, act);
    let done = done.unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["evidence"][0]["passed"], true, "{done}");
    r.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_closed_tab_turn_end_and_stop_end_the_wait() {
    let r = Real::start("thread-handoff-end").await;

    // The deadline: a typed DEADLINE_EXCEEDED, the evidence in the details, and the tab still handed off.
    let t1 = r.tool("browser_open", json!({"url": r.site.url("/form.html?wait=deadline")})).await["tab"].clone();
    let user = r.user().await;
    let err = rpc_error(
        r.c.tool(
            &r.s,
            "browser_handoff",
            json!({"tab": t1, "message": "Solve the CAPTCHA", "timeoutMs": 1500,
                   "until": [{"kind": "url", "contains": "/never"}]}),
        )
        .await,
    );
    assert_eq!(err.code, ErrorCode::DeadlineExceeded, "{err:?}");
    let details = err.details.clone().expect("details with the evidence");
    assert_eq!(details["status"], "timedOut", "{details}");
    assert_eq!(details["evidence"][0]["passed"], false, "{details}");
    let listed = r.tool("browser_list", json!({})).await;
    assert_eq!(provenance_of(&listed, &t1), "handoff", "{listed}");

    // The user closes the tab while the agent waits.
    let t2 = r.tool("browser_open", json!({"url": r.site.url("/form.html?wait=close")})).await["tab"].clone();
    let wait = r.c.tool(
        &r.s,
        "browser_handoff",
        json!({"tab": t2, "message": "Log in", "until": [{"kind": "url", "contains": "/never"}]}),
    );
    let act = async {
        r.until_let_go(&t2).await;
        tokio::time::sleep(USER_DELAY).await;
        user.close("wait=close").await;
    };
    let (closed, ()) = tokio::join!(wait, act);
    let closed = closed.unwrap();
    assert_eq!(closed["status"], "tabClosed", "{closed}");

    // The turn ends while the agent waits: the wait is cancelled, the page is kept.
    let t3 = r.tool("browser_open", json!({"url": r.site.url("/form.html?wait=turn")})).await["tab"].clone();
    let wait = r.c.tool(
        &r.s,
        "browser_handoff",
        json!({"tab": t3, "message": "Log in", "until": [{"kind": "url", "contains": "/never"}]}),
    );
    let end_turn = async {
        r.until_let_go(&t3).await;
        tokio::time::sleep(USER_DELAY).await;
        r.c.call(&TurnEndParams { session: r.s.clone(), reason: TurnEndReason::HostStop, host_turn_id: None }).await
    };
    let (cancelled, ended) = tokio::join!(wait, end_turn);
    let err = rpc_error(cancelled);
    assert_eq!(err.code, ErrorCode::Cancelled, "{err:?}");
    let ended = ended.unwrap();
    assert!(ended.ok, "{ended:?}");
    let kept: Vec<u64> = ended.kept.iter().map(|t| t.0).collect();
    assert!(ended.closed.is_empty(), "nothing of this session is a plain scratch tab: {ended:?}");
    let listed = r.tool("browser_list", json!({})).await;
    let live: Vec<u64> = listed["tabs"].as_array().unwrap().iter().map(|t| t["tab"].as_u64().unwrap()).collect();
    assert!(live.contains(&t3.as_u64().unwrap()), "the handed-off page stays open: {listed} (kept {kept:?})");

    // Stop while the agent waits: USER_STOPPED, and the tab stays handed off.
    let t4 = r.tool("browser_open", json!({"url": r.site.url("/form.html?wait=stop")})).await["tab"].clone();
    let wait = r.c.tool(
        &r.s,
        "browser_handoff",
        json!({"tab": t4, "message": "Log in", "until": [{"kind": "url", "contains": "/never"}]}),
    );
    let stop = async {
        r.until_let_go(&t4).await;
        tokio::time::sleep(USER_DELAY).await;
        r.c.stop_gate().await
    };
    let (stopped, gate) = tokio::join!(wait, stop);
    gate.unwrap();
    let err = rpc_error(stopped);
    assert_eq!(err.code, ErrorCode::UserStopped, "{err:?}");
    let listed = r.tool("browser_list", json!({})).await;
    assert_eq!(provenance_of(&listed, &t4), "handoff", "{listed}");
    r.finish().await;
}
