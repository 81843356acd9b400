//! `browser_cdp` (the advanced tier's raw protocol access) cannot take a picture that `browser_observe` would refuse:
//! on a real managed Chromium, a pixel-capturing method (`Page.captureScreenshot`, `Page.startScreencast`,
//! `Page.printToPDF`) is `VISION_UNAVAILABLE` in a `semantic-only` session and `ORIGIN_NOT_AUTHORISED` on a tab that
//! shows, or frames, an origin the site policy denies — while the same method on an allowed page with an image route,
//! and a method that captures nothing, still go through (the controls).

mod real_browser;

use browserd_broker::config::{AdvancedConfig, BrokerConfig};
use browserd_protocol::lifecycle::ToolsActivateParams;
use browserd_protocol::vision::SessionVisionParams;
use browserd_protocol::{ErrorCode, VisionMode};
use real_browser::{Real, deny_localhost, ref_of, refused};
use serde_json::{Value, json};

const PIXEL_METHODS: [&str; 3] = ["Page.captureScreenshot", "Page.startScreencast", "Page.printToPDF"];

fn config() -> BrokerConfig {
    BrokerConfig {
        advanced: AdvancedConfig { enabled: true, raw_cdp: true, ..AdvancedConfig::default() },
        ..deny_localhost()
    }
}

async fn set_vision(r: &Real, mode: VisionMode) {
    r.c.call(&SessionVisionParams { session: r.s.clone(), mode, source: Some("the test".into()), limits: None })
        .await
        .unwrap();
}

/// A raw screenshot that went through: its PNG is inline (`result.data`) or in a spill file.
fn assert_captured(answer: &Value) {
    let inline = answer["result"]["data"].as_str().is_some_and(|d| d.starts_with("iVBOR"));
    assert!(inline || answer["spill"].is_object(), "a screenshot came back: {}", truncated(answer));
}

fn truncated(v: &Value) -> String {
    v.to_string().chars().take(400).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_cdp_pixel_capture_is_refused_in_semantic_only() {
    let r = Real::start_config("thread-cdp-semantic", config()).await;
    r.c.call(&ToolsActivateParams { session: r.s.clone(), advanced: true }).await.unwrap();
    let tab = r.tool("browser_open", json!({"url": r.site.url("/form.html")})).await["tab"].clone();
    // The control: with an image route (the default) the raw screenshot of an allowed page is taken.
    let shot = r.tool("browser_cdp", json!({"tab": tab, "method": "Page.captureScreenshot", "params": {}})).await;
    assert_captured(&shot);

    set_vision(&r, VisionMode::SemanticOnly).await;
    for method in PIXEL_METHODS {
        let e = refused(&r, "browser_cdp", json!({"tab": tab, "method": method, "params": {}})).await;
        assert_eq!(e.code, ErrorCode::VisionUnavailable, "{method}: {e:?}");
        assert!(e.message.contains(method) && e.message.contains("nothing was sent"), "{method}: {e:?}");
        assert!(e.next_step.contains("ask the user what the picture shows"), "{method}: {e:?}");
    }
    // A method that captures nothing is still sent.
    let sum = r
        .tool(
            "browser_cdp",
            json!({"tab": tab, "method": "Runtime.evaluate", "params": {"expression": "1 + 1", "returnByValue": true}}),
        )
        .await;
    assert_eq!(sum["result"]["result"]["value"], 2, "{sum}");
    r.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_cdp_pixel_capture_is_refused_on_a_denied_origin_and_a_page_that_frames_one() {
    let r = Real::start_config("thread-cdp-denied", config()).await;
    r.c.call(&ToolsActivateParams { session: r.s.clone(), advanced: true }).await.unwrap();
    // The control: the allowed page before its link is followed.
    let tab = r.tool("browser_open", json!({"url": r.site.url("/policy-redirect.html")})).await["tab"].clone();
    let shot = r.tool("browser_cdp", json!({"tab": tab, "method": "Page.captureScreenshot", "params": {}})).await;
    assert_captured(&shot);

    // The tab follows a link to the denied origin (the click runs; where it led is refused).
    let page = r.tool("browser_observe", json!({"tab": tab})).await;
    let link = ref_of(page["untrustedContent"].as_str().unwrap(), "Partner landing page");
    let _ = r.c.tool(&r.s, "browser_act", json!({"tab": tab, "action": "click", "target": link})).await;
    // An allowed page that frames the denied origin: an image would show the frame's pixels.
    let framed = r.tool("browser_open", json!({"url": r.site.url("/policy-frame.html")})).await["tab"].clone();
    for (tab, what) in [(&tab, "a tab on the denied origin"), (&framed, "an allowed page framing the denied origin")] {
        for method in PIXEL_METHODS {
            let e = refused(&r, "browser_cdp", json!({"tab": tab, "method": method, "params": {}})).await;
            assert_eq!(e.code, ErrorCode::OriginNotAuthorised, "{what}, {method}: {e:?}");
            assert!(e.message.contains("http://localhost:"), "{what}, {method}: {e:?}");
            let text = format!("{e:?}");
            assert!(!text.contains("Landing secret") && !text.contains("Partner secret"), "{what}: {text}");
        }
    }
    // A method that captures nothing still reaches the allowed page.
    let title = r
        .tool(
            "browser_cdp",
            json!({"tab": framed, "method": "Runtime.evaluate", "params": {"expression": "document.title", "returnByValue": true}}),
        )
        .await;
    assert!(title["result"]["result"]["value"].is_string(), "{title}");
    r.finish().await;
}
