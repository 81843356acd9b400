//! A navigation to an origin the site policy refuses is stopped before the document is requested, on a real managed
//! Chromium through the broker: a server redirect from an allowed page, a link click, a script's `location =` and a
//! popup (`window.open`) all end in `ORIGIN_NOT_AUTHORISED` naming the origin and the setting to change, and the
//! denied site's own request log shows it never received the request. Ordinary navigations and downloads still work
//! with the interception on.

mod real_browser;

use browserd_broker::ClientError;
use browserd_protocol::{ErrorCode, ErrorData};
use real_browser::{Real, deny_localhost, ref_of, refused};
use serde_json::json;

/// The refusal of an action whose navigation the browser stopped: the origin, the rule, the setting to change.
fn assert_stopped(e: &ErrorData, origin: &str) {
    assert_eq!(e.code, ErrorCode::OriginNotAuthorised, "{e:?}");
    assert!(e.message.contains(origin) && e.message.contains("`[policy] deny` has `localhost`"), "{e:?}");
    assert!(e.message.contains("stopped before requesting it"), "{e:?}");
    assert!(e.next_step.contains("remove `localhost` from `deny` in the `[policy]` section"), "{e:?}");
    assert!(e.next_step.contains(&format!("Nothing was sent to {origin}")), "{e:?}");
    let details = e.details.as_ref().unwrap();
    assert_eq!(details["origin"], origin, "{e:?}");
    assert_eq!(details["stoppedBeforeRequest"], true, "{e:?}");
    assert!(!format!("{e:?}").contains("Landing secret"), "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_links_scripts_and_popups_to_a_denied_origin_never_reach_it() {
    let r = Real::start_config("thread-policy-stop", deny_localhost()).await;
    let origin = r.site.cross_origin_url("");
    let landing = |r: &Real| r.site.cross_origin_requests("/policy-landing.html");

    // browser_open of an allowed URL that redirects (302) to the denied origin: the tab is closed again.
    let e =
        refused(&r, "browser_open", json!({"url": r.site.url("/redirect?to=/policy-landing.html"), "observe": true}))
            .await;
    assert_stopped(&e, &origin);
    assert_eq!(e.details.as_ref().unwrap()["closed"], true, "{e:?}");
    assert!(
        r.site.requests().iter().any(|u| u.ends_with("/redirect?to=/policy-landing.html")),
        "the allowed redirect was requested: {:?}",
        r.site.requests()
    );
    assert_eq!(landing(&r), Vec::<String>::new(), "the denied page was never requested");

    let tab = r.tool("browser_open", json!({"url": r.site.url("/policy-redirect.html")})).await["tab"].clone();
    // A navigate action to an allowed URL that redirects there.
    let e = refused(
        &r,
        "browser_act",
        json!({"tab": tab, "action": "navigate", "value": r.site.url("/redirect?to=/policy-landing.html")}),
    )
    .await;
    assert_stopped(&e, &origin);
    assert_eq!(landing(&r), Vec::<String>::new(), "the denied page was never requested");
    r.tool("browser_act", json!({"tab": tab, "action": "navigate", "value": r.site.url("/policy-redirect.html")}))
        .await;

    // A link click through a server redirect, a direct link, a script's `location =`, a popup by window.open.
    for (name, case) in [
        ("Continue to the partner", "a link through a 302"),
        ("Partner landing page", "a direct link"),
        ("Go to the partner by script", "location ="),
        ("Open the partner in a window", "window.open"),
    ] {
        let obs = r.tool("browser_observe", json!({"tab": tab})).await;
        let target = ref_of(obs["untrustedContent"].as_str().unwrap(), name);
        let e = refused(&r, "browser_act", json!({"tab": tab, "action": "click", "target": target})).await;
        assert_stopped(&e, &origin);
        assert_ne!(e.details.as_ref().unwrap()["dispatch"], "notDispatched", "{case}: the click was sent: {e:?}");
        assert_eq!(landing(&r), Vec::<String>::new(), "{case}: the denied page was never requested");
        if case == "window.open" {
            let opened = &e.details.as_ref().unwrap()["tabsOpened"];
            assert_eq!(opened.as_array().map(Vec::len), Some(1), "{case}: the popup is named: {e:?}");
            // The popup shows the browser's "blocked" page for the denied URL: it is never read.
            let e = refused(&r, "browser_observe", json!({"tab": opened[0]})).await;
            assert_eq!(e.code, ErrorCode::OriginNotAuthorised, "{case}: {e:?}");
            assert!(e.message.contains(&origin), "{case}: {e:?}");
            r.tool("browser_close", json!({"tabs": [opened[0]]})).await;
        }
        // The tab shows the browser's "blocked" page under the denied URL (never read), or stayed where it was; it
        // can go on from there.
        match r.c.tool(&r.s, "browser_observe", json!({"tab": tab})).await {
            Ok(now) => {
                let text = now["untrustedContent"].as_str().unwrap_or_default().to_owned();
                assert!(text.contains("Continue to the partner"), "{case}: {now}");
            }
            Err(ClientError::Rpc(e)) => {
                assert_eq!(e.code, ErrorCode::OriginNotAuthorised, "{case}: {e:?}");
                let back = r.tool("browser_act", json!({"tab": tab, "action": "back"})).await;
                assert_eq!(back["outcome"], "succeeded", "{case}: {back}");
            }
            Err(other) => panic!("{case}: {other:?}"),
        }
    }
    // The allowed origin and the rest of the allowed site keep working with the interception on.
    let nav = r.tool("browser_act", json!({"tab": tab, "action": "navigate", "value": r.site.url("/form.html")})).await;
    assert_eq!(nav["outcome"], "succeeded", "{nav}");
    assert_eq!(landing(&r), Vec::<String>::new(), "the denied page was never requested");
    r.finish().await;
}
