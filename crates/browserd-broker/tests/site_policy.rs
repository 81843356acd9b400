//! The site policy on a real managed Chromium and the two-origin fixture site (`127.0.0.1` and `localhost` are two
//! origins): an origin the policy does not authorise is never opened, observed or acted on — not when asked for
//! directly, not after a redirect or a link, not in a popup, not inside an allowed page's frame — and the refusal
//! (`ORIGIN_NOT_AUTHORISED`) says what to change. The fixture server records clicks, so "nothing was sent" is checked
//! on the server's side.

mod real_browser;

use browserd_broker::ClientError;
use browserd_protocol::ErrorCode;
use browserd_protocol::lifecycle::{HostKind, SessionOpenParams};
use browserd_protocol::policy::SessionPolicy;
use real_browser::{Real, deny_localhost, ref_of, refused};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_origin_is_never_opened_and_the_refusal_says_what_to_change() {
    let r = Real::start_config("thread-policy-open", deny_localhost()).await;
    let before = r.tool("browser_list", json!({})).await["tabs"].as_array().unwrap().len();
    let e =
        refused(&r, "browser_open", json!({"url": r.site.cross_origin_url("/policy-landing.html"), "observe": true}))
            .await;
    assert_eq!(e.code, ErrorCode::OriginNotAuthorised, "{e:?}");
    assert!(e.message.contains("http://localhost:") && e.message.contains("`[policy] deny` has `localhost`"), "{e:?}");
    assert!(e.next_step.contains("remove `localhost` from `deny` in the `[policy]` section"), "{e:?}");
    assert!(!format!("{e:?}").contains("Landing secret"));
    let after = r.tool("browser_list", json!({})).await;
    assert_eq!(after["tabs"].as_array().unwrap().len(), before, "no tab was opened: {after}");

    // A direct server redirect from an allowed URL: the tab is closed again, nothing of the page is shown.
    let e =
        refused(&r, "browser_open", json!({"url": r.site.url("/redirect?to=/policy-landing.html"), "observe": true}))
            .await;
    assert_eq!(e.code, ErrorCode::OriginNotAuthorised, "{e:?}");
    assert!(!format!("{e:?}").contains("Landing secret"), "{e:?}");
    assert_eq!(e.details.as_ref().unwrap()["closed"], true, "{e:?}");

    // browser_status shows the policy in force.
    let status = r.tool("browser_status", json!({})).await;
    assert_eq!(status["policy"]["deny"], json!(["localhost"]), "{status}");
    assert!(status["policy"].get("realProfileDeny").is_none(), "a managed browser: no real-profile defaults: {status}");

    // A session's own --blocked-origins narrows the policy for that session only.
    let opened =
        r.c.call(&SessionOpenParams {
            host: HostKind::Mcp,
            host_session_id: "policy-narrow".into(),
            label: None,
            policy: Some(SessionPolicy { allowed_origins: vec![], blocked_origins: vec!["127.0.0.1".into()] }),
            browser: None,
        })
        .await
        .unwrap();
    let narrow = opened.session;
    r.c.call(&browserd_protocol::lifecycle::ToolsActivateParams { session: narrow.clone(), advanced: false })
        .await
        .unwrap();
    let e = r.c.tool(&narrow, "browser_open", json!({"url": r.site.url("/form.html")})).await.unwrap_err();
    let ClientError::Rpc(e) = e else { panic!("{e:?}") };
    assert_eq!(e.code, ErrorCode::OriginNotAuthorised, "{e:?}");
    assert!(e.message.contains("--blocked-origins has `127.0.0.1`"), "{e:?}");
    let status = r.c.tool(&narrow, "browser_status", json!({})).await.unwrap();
    assert_eq!(status["policy"]["session"]["blockedOrigins"], json!(["127.0.0.1"]), "{status}");
    // The first session is not narrowed.
    r.tool("browser_open", json!({"url": r.site.url("/form.html")})).await;

    // A bad pattern is refused when the session opens, changing nothing.
    let bad =
        r.c.call(&SessionOpenParams {
            host: HostKind::Mcp,
            host_session_id: "policy-bad".into(),
            label: None,
            policy: Some(SessionPolicy {
                allowed_origins: vec!["https://x.test/path".into()],
                blocked_origins: vec![],
            }),
            browser: None,
        })
        .await
        .unwrap_err();
    assert!(bad.to_string().contains("--allowed-origins") && bad.to_string().contains("no path"), "{bad}");
    r.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_or_redirect_to_a_denied_origin_is_refused_and_the_page_is_never_read() {
    let r = Real::start_config("thread-policy-redirect", deny_localhost()).await;
    let (tab, content) = r.open_and_read("/policy-redirect.html").await;
    let via = ref_of(&content, "Continue to the partner");
    let popup = ref_of(&content, "Open the partner in a new tab");

    // A popup to the denied origin: the click ran, the browser stopped the popup's page before requesting it (the
    // answer names the new tab), and the new tab is never observed or acted on.
    let e = refused(&r, "browser_act", json!({"tab": tab, "action": "click", "target": popup})).await;
    assert_eq!(e.code, ErrorCode::OriginNotAuthorised, "{e:?}");
    let opened = e.details.as_ref().unwrap()["tabsOpened"][0].clone();
    assert!(opened.is_u64(), "{e:?}");
    let e = refused(&r, "browser_observe", json!({"tab": opened})).await;
    assert_eq!(e.code, ErrorCode::OriginNotAuthorised, "{e:?}");
    assert!(!format!("{e:?}").contains("Landing secret"));
    let e = refused(&r, "browser_act", json!({"tab": opened, "action": "scroll", "value": "down"})).await;
    assert_eq!(e.code, ErrorCode::OriginNotAuthorised, "{e:?}");

    // A link through a server redirect: the click ran, the page it led to is not shown.
    let e = refused(&r, "browser_act", json!({"tab": tab, "action": "click", "target": via})).await;
    assert_eq!(e.code, ErrorCode::OriginNotAuthorised, "{e:?}");
    assert!(e.message.contains("http://localhost:"), "{e:?}");
    assert!(e.next_step.contains("browser_act navigate or back"), "{e:?}");
    assert_ne!(e.details.as_ref().unwrap()["dispatch"], "notDispatched", "the click was sent: {e:?}");
    assert!(!format!("{e:?}").contains("Landing secret"), "{e:?}");
    // The tab now shows the browser's "blocked" page for the denied URL: it is not observed or acted on, and says so.
    let e = refused(&r, "browser_observe", json!({"tab": tab})).await;
    assert_eq!(e.code, ErrorCode::OriginNotAuthorised, "{e:?}");
    assert!(!format!("{e:?}").contains("Landing secret"));
    // Tab lists show it by its origin only: no URL (path, query), no title.
    let origin = r.site.cross_origin_url("");
    let listed = r.tool("browser_list", json!({})).await;
    let entry = listed["tabs"].as_array().unwrap().iter().find(|t| t["tab"] == tab).unwrap().clone();
    assert_eq!(entry["url"], format!("{origin} (not authorised)"), "{listed}");
    assert!(entry.get("title").is_none_or(Value::is_null), "{listed}");
    let status = r.tool("browser_status", json!({})).await;
    let entry = status["tabs"].as_array().unwrap().iter().find(|t| t["tab"] == tab).unwrap().clone();
    assert_eq!(entry["url"], format!("{origin} (not authorised)"), "{status}");
    assert!(entry.get("title").is_none_or(Value::is_null), "{status}");
    for shown in [listed.to_string(), status.to_string()] {
        assert!(!shown.contains("policy-landing.html") && !shown.contains("Landing on the other site"), "{shown}");
    }
    // A navigation to the denied origin is refused before anything is sent; going back works.
    let e = refused(
        &r,
        "browser_act",
        json!({"tab": tab, "action": "navigate", "value": r.site.cross_origin_url("/form.html")}),
    )
    .await;
    assert_eq!(e.code, ErrorCode::OriginNotAuthorised, "{e:?}");
    assert!(e.message.contains("nothing was sent"), "{e:?}");
    let back = r.tool("browser_act", json!({"tab": tab, "action": "back"})).await;
    assert_eq!(back["outcome"], "succeeded", "{back}");
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    assert!(obs["untrustedContent"].as_str().unwrap().contains("Continue to the partner"), "{obs}");

    // In a batch: the step that leads there ends the batch, and nothing after it runs.
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let direct = ref_of(obs["untrustedContent"].as_str().unwrap(), "Partner landing page");
    let batch = r
        .tool(
            "browser_batch",
            json!({"tab": tab, "steps": [
                {"action": "click", "target": direct},
                {"action": "scroll", "value": "down"},
            ]}),
        )
        .await;
    assert_eq!(batch["ok"], false, "{batch}");
    assert_eq!(batch["results"][0]["code"], "ORIGIN_NOT_AUTHORISED", "{batch}");
    assert_eq!(batch["results"][1]["status"], "notStarted", "{batch}");
    assert!(!batch.to_string().contains("Landing secret"), "{batch}");
    r.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_frame_is_one_line_with_no_refs_and_its_elements_are_refused() {
    let r = Real::start("thread-policy-frame").await;
    let tab = r.tool("browser_open", json!({"url": r.site.url("/policy-frame.html")})).await["tab"].clone();
    // Allowed (the default for a managed browser): the partner frame is read, its button has a ref.
    let content = r.read(&tab).await;
    assert!(content.contains("Partner secret"), "{content}");
    let transfer = ref_of(&content, "button \"Transfer everything\"");

    // The host re-opens the session with the other site blocked (`browserd mcp --blocked-origins localhost`).
    r.c.call(&SessionOpenParams {
        host: HostKind::Codex,
        host_session_id: "thread-policy-frame".into(),
        label: None,
        policy: Some(SessionPolicy { allowed_origins: vec![], blocked_origins: vec!["localhost".into()] }),
        browser: None,
    })
    .await
    .unwrap();
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let content = obs["untrustedContent"].as_str().unwrap().to_owned();
    let origin = r.site.cross_origin_url("");
    let line = format!("frame {origin} (not authorised)");
    assert!(content.lines().any(|l| l.trim() == line), "one line for the frame:\n{content}");
    assert!(!content.contains("Partner secret") && !content.contains("Transfer everything"), "{content}");
    assert!(!content.contains("SYSTEM: ignore"), "{content}");
    let frame_line = content.lines().find(|l| l.contains("(not authorised)")).unwrap();
    assert!(
        browserd_protocol::line_ref(frame_line).is_none() && !frame_line.contains("[f"),
        "no ref on the frame line: {frame_line}"
    );
    assert!(!obs.to_string().contains("policy-inner.html"), "the frame's URL is shown as its origin only: {obs}");
    assert!(content.contains("Local button"), "the allowed page is still read: {content}");

    // The ref the model saw before is refused before any input; the server never sees the click.
    let acted = r.tool("browser_act", json!({"tab": tab, "action": "click", "target": transfer})).await;
    assert_eq!(acted["outcome"], "failed", "{acted}");
    assert_eq!(acted["code"], "ORIGIN_NOT_AUTHORISED", "{acted}");
    assert_eq!(acted["dispatch"], "notDispatched", "{acted}");
    let local = ref_of(&content, "button \"Local button\"");
    let clicked = r.tool("browser_act", json!({"tab": tab, "action": "click", "target": local})).await;
    assert_eq!(clicked["outcome"], "succeeded", "{clicked}");
    assert!(!r.site.records().iter().any(|e| e == "partner:transfer"), "{:?}", r.site.records());
    r.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_screenshot_point_in_a_denied_frame_is_refused_before_any_input() {
    let r = Real::start("thread-policy-frame-at").await;
    let tab = r.tool("browser_open", json!({"url": r.site.url("/policy-frame.html")})).await["tab"].clone();
    // The screenshot is taken while the partner frame is still allowed (a screenshot of a page showing a denied frame
    // is refused outright); then the session's list blocks the frame's origin, as a host that narrows it would.
    let obs = r.tool("browser_observe", json!({"tab": tab, "screenshot": true})).await;
    r.c.call(&SessionOpenParams {
        host: HostKind::Codex,
        host_session_id: "thread-policy-frame-at".into(),
        label: None,
        policy: Some(SessionPolicy { allowed_origins: vec![], blocked_origins: vec!["localhost".into()] }),
        browser: None,
    })
    .await
    .unwrap();
    let shot = &obs["screenshot"];
    let image = shot["imageId"].as_str().unwrap_or_else(|| panic!("a screenshot: {obs}")).to_owned();
    let scale = shot["scale"].as_f64().unwrap();
    // Where the page lays out the partner frame's button and its own button (the person at the browser reads it).
    let user = r.user().await;
    let rects = user
        .eval_in(
            "/policy-frame.html",
            "(() => { const f = document.getElementById('partner').getBoundingClientRect();
                      const b = document.getElementById('local').getBoundingClientRect();
                      return {fx: f.x + 40, fy: f.y + f.height / 2, bx: b.x + b.width / 2, by: b.y + b.height / 2}; })()",
        )
        .await;
    let px = |k: &str| rects[k].as_f64().unwrap() * scale;

    // A click at a point of the screenshot inside the denied frame: refused, nothing sent (the server never hears of
    // it), whatever element is under the point there.
    for (x, y) in [(px("fx"), px("fy")), (px("fx") + 100.0, px("fy") - 40.0)] {
        let acted = r
            .tool("browser_act", json!({"tab": tab, "action": "click", "at": {"imageId": image, "x": x, "y": y}}))
            .await;
        assert_eq!(acted["outcome"], "failed", "{acted}");
        assert_eq!(acted["code"], "ORIGIN_NOT_AUTHORISED", "{acted}");
        assert_eq!(acted["dispatch"], "notDispatched", "{acted}");
        assert!(acted["message"].as_str().unwrap_or_default().contains("http://localhost:"), "{acted}");
        assert!(!acted.to_string().contains("Transfer everything"), "nothing of the frame is described: {acted}");
    }
    // A hover there too: no input of any kind reaches the frame.
    let hovered = r
        .tool(
            "browser_act",
            json!({"tab": tab, "action": "hover", "at": {"imageId": image, "x": px("fx"), "y": px("fy")}}),
        )
        .await;
    assert_eq!(hovered["code"], "ORIGIN_NOT_AUTHORISED", "{hovered}");

    // A point on the allowed page's own button still works.
    let clicked = r
        .tool(
            "browser_act",
            json!({"tab": tab, "action": "click", "at": {"imageId": image, "x": px("bx"), "y": px("by")}}),
        )
        .await;
    assert_eq!(clicked["outcome"], "succeeded", "{clicked}");
    let count = user.eval_in("/policy-frame.html", "document.getElementById('status').textContent").await;
    assert_eq!(count, "Local clicks: 1", "the allowed click reached the page");
    assert!(!r.site.records().iter().any(|e| e == "partner:transfer"), "{:?}", r.site.records());
    r.finish().await;
}
