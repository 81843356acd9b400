//! Fault drill: the managed Chromium dies mid-session — killed (SIGKILL) or quit cleanly (`Browser.close`) — under
//! a broker with two sessions. `status` tells the truth at every step (never `connected` on the dead browser, never
//! `reconnecting` without an attempt), the broker relaunches the browser on its own, each session's next call gets
//! one typed `BROWSER_RESTARTED` and then works; the dead browser's tabs are released (gone), their records
//! resolved, the tab limit freed, and refs read before do not act.

mod real_browser;

use std::time::Duration;

use browserd_protocol::lifecycle::{BridgeState, StatusParams, StatusResult};
use browserd_protocol::{ErrorCode, SessionId};
use real_browser::Real;
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug)]
enum Death {
    Killed,
    Quit,
}

async fn status(real: &Real) -> StatusResult {
    real.c.call(&StatusParams::default()).await.unwrap()
}

async fn error(real: &Real, s: &SessionId, name: &str, args: Value) -> browserd_protocol::ErrorData {
    match real.c.tool(s, name, args.clone()).await {
        Ok(v) => panic!("{name} {args} succeeded: {v}"),
        Err(e) => e.into_error_data(),
    }
}

fn first_ref(observed: &Value) -> String {
    let content = observed["untrustedContent"].as_str().unwrap();
    let line = content
        .lines()
        .find(|l| browserd_protocol::line_ref(l).is_some() && l.contains("button"))
        .unwrap_or_else(|| panic!("{content}"));
    browserd_protocol::line_ref(line).expect("a ref line").to_owned()
}

async fn drill(death: Death) {
    let real = Real::start(&format!("drill-{death:?}-a")).await;
    let other = real.session(&format!("drill-{death:?}-b")).await;
    let url = real.site.url("/iframes.html");
    let ta = real.tool("browser_open", json!({"url": url})).await["tab"].as_u64().unwrap();
    let tb = real.c.tool(&other, "browser_open", json!({"url": url})).await.unwrap()["tab"].as_u64().unwrap();
    let old_ref = first_ref(&real.tool("browser_observe", json!({"tab": ta})).await);
    real.c.tool(&other, "browser_observe", json!({"tab": tb})).await.unwrap();
    let before = status(&real).await;
    assert_eq!(before.browsers[0].bridge, BridgeState::Connected);
    assert_eq!(before.tabs.iter().filter(|t| t.session.is_some()).count(), 2);

    match death {
        Death::Killed => {
            let pid = real.browser_pid();
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL).unwrap();
        }
        Death::Quit => real.user().await.quit_browser().await,
    }

    // Truthful at every step until the browser is back.
    let mut back = None;
    for _ in 0..600 {
        let st = status(&real).await;
        let b = &st.browsers[0];
        let r = b.reconnect.clone();
        match (b.bridge, &r) {
            (BridgeState::Connected, None) => {} // the loss is not known yet (the browser is still going down)
            (BridgeState::Connected, Some(r)) => {
                assert!(r.lost.is_none(), "connected while the connection is lost: {r:?}");
                assert!(r.reconnects >= 1, "{r:?}");
                back = Some(st);
                break;
            }
            (BridgeState::Reconnecting, Some(r)) => {
                let due = r.next_attempt_in_ms.is_some();
                assert!(
                    r.attempts > 0 || r.in_progress || r.reconnects > 0 || due,
                    "reconnecting with no attempt: {r:?}"
                )
            }
            (state, r) => panic!("unexpected bridge {state:?} with {r:?}"),
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let st = back.expect("the broker relaunched the browser");
    let lost = st.browsers[0].reconnect.as_ref().and_then(|r| r.last_lost.clone()).unwrap_or_default();
    assert!(!lost.is_empty(), "the loss is named");
    // The dead browser's tabs are gone from the records; nothing is left pending.
    assert!(st.tabs.iter().all(|t| t.session.is_none()), "the dead browser's tabs are released: {:?}", st.tabs);
    assert!(st.recovery.is_empty(), "no record stays pending: {:?}", st.recovery);

    // Each session is told once, then works.
    for (s, tab) in [(&real.s, ta), (&other, tb)] {
        let told = error(&real, s, "browser_observe", json!({"tab": tab})).await;
        assert_eq!(told.code, ErrorCode::BrowserRestarted, "{told:?}");
        let listed = real.c.tool(s, "browser_list", json!({})).await.unwrap();
        assert!(listed["tabs"].as_array().unwrap().iter().all(|t| t["tab"] != tab), "{listed}");
    }
    // A ref read before does not act on anything.
    let stale = error(&real, &real.s, "browser_act", json!({"tab": ta, "action": "click", "target": old_ref})).await;
    assert!(
        matches!(stale.code, ErrorCode::TabNotFound | ErrorCode::TargetClosed | ErrorCode::StaleTarget),
        "{stale:?}"
    );
    // The tab limit (3 per session) is free again: the dead tabs no longer count.
    for _ in 0..3 {
        let tab = real.tool("browser_open", json!({"url": url})).await["tab"].as_u64().unwrap();
        let observed = real.tool("browser_observe", json!({"tab": tab})).await;
        assert!(observed["untrustedContent"].as_str().unwrap().contains("Outer clicks: 0"), "{observed}");
    }
    let tb2 = real.c.tool(&other, "browser_open", json!({"url": url})).await.unwrap()["tab"].as_u64().unwrap();
    let r = first_ref(&real.c.tool(&other, "browser_observe", json!({"tab": tb2})).await.unwrap());
    let acted = real.c.tool(&other, "browser_act", json!({"tab": tb2, "action": "click", "target": r})).await.unwrap();
    assert_eq!(acted["outcome"], "succeeded", "{acted}");
    let took = st.browsers[0].reconnect.as_ref().and_then(|r| r.last_reconnect_ms);
    eprintln!("managed browser {death:?}: relaunched in {took:?} ms");
    real.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_managed_chromium_comes_back_and_each_session_is_told_once() {
    drill(Death::Killed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_managed_chromium_quit_mid_session_comes_back_and_each_session_is_told_once() {
    drill(Death::Quit).await;
}
