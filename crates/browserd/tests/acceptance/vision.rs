//! Vision modes through the real `browserd mcp`: `--vision semantic` refuses screenshots with `VISION_UNAVAILABLE`
//! and the page's text observation (no image block), refuses screenshot points before anything is sent, and says a
//! canvas page needs vision; the default (`--vision native`) returns the image. `browser_status` names the mode.

use serde_json::{Value, json};

use crate::harness::{Home, Host, Mcp, Options};

/// The raw `tools/call` result: `isError` and its content blocks.
async fn raw_call(mcp: &Mcp, name: &str, arguments: Value) -> (bool, Vec<Value>) {
    let response = mcp.request("tools/call", mcp.call_params(name, arguments)).await;
    let result = response.get("result").unwrap_or_else(|| panic!("tools/call answers a result: {response}"));
    (result["isError"].as_bool().unwrap_or(false), result["content"].as_array().cloned().unwrap_or_default())
}

fn texts(content: &[Value]) -> Vec<&str> {
    content.iter().filter_map(|b| b["text"].as_str()).collect()
}

fn images(content: &[Value]) -> usize {
    content.iter().filter(|b| b["type"] == "image").count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_vision_semantic_refuses_screenshots_with_the_text_observation_and_says_a_canvas_needs_vision() {
    let site = browserd_fixtures::FixtureSite::start().await.unwrap();
    let home = Home::new(&Options::default());
    let mcp =
        Mcp::spawn_with(&home, Host::ClaudeCode { session: "cc-vision-semantic".into() }, &["--vision", "semantic"])
            .await;
    let status = mcp.call("browser_status", json!({})).await.ok();
    assert_eq!(status["vision"]["mode"], "semantic-only", "{status}");
    assert_eq!(status["vision"]["source"], "browserd mcp --vision semantic", "{status}");

    let opened = mcp.call("browser_open", json!({"url": site.url("/canvas.html")})).await.ok();
    let tab = opened["tab"].as_u64().unwrap();
    let (is_error, content) = raw_call(&mcp, "browser_observe", json!({"tab": tab, "screenshot": true})).await;
    assert!(is_error, "a screenshot without an image route is an error: {content:?}");
    assert_eq!(images(&content), 0, "no image goes to a semantic-only host: {content:?}");
    let blocks = texts(&content);
    let error: Value = serde_json::from_str(blocks[0]).unwrap();
    assert_eq!(error["error"]["code"], "VISION_UNAVAILABLE", "{error}");
    let next = error["error"]["nextStep"].as_str().unwrap();
    assert!(next.contains("ask the user") && next.contains("enable a vision route"), "{next}");
    assert!(error["error"]["details"].get("observation").is_none(), "the observation is rendered as text: {error}");
    // The AX/DOM observation comes as the page's text, with the canvas note saying it needs vision.
    let page = blocks.get(1).unwrap_or_else(|| panic!("the text observation follows the error: {blocks:?}"));
    let (envelope, lines) = page.split_once('\n').unwrap();
    assert!(lines.contains("# Canvas") && lines.contains("Clicks: 0"), "{page}");
    assert!(envelope.contains(r#""needsVision":true"#) && envelope.contains(r#""canvases":1"#), "{envelope}");
    assert!(!page.contains("base64") && !page.contains(".png"), "no image path or data: {page}");

    // A screenshot point is refused before anything is sent: the canvas still counts no click.
    let act = mcp
        .call("browser_act", json!({"tab": tab, "action": "click", "at": {"imageId": "img1", "x": 5, "y": 5}}))
        .await;
    assert!(act.is_error && act.code() == Some("VISION_UNAVAILABLE"), "{:?}", act.value);
    let (_, content) = raw_call(&mcp, "browser_observe", json!({"tab": tab})).await;
    assert!(texts(&content)[0].contains("Clicks: 0, last: none"), "{content:?}");
    mcp.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_vision_native_by_default_returns_the_image_and_points_to_it_for_a_canvas() {
    let site = browserd_fixtures::FixtureSite::start().await.unwrap();
    let home = Home::new(&Options::default());
    let mcp = Mcp::spawn(&home, Host::ClaudeCode { session: "cc-vision-native".into() }).await;
    let status = mcp.call("browser_status", json!({})).await.ok();
    assert_eq!(status["vision"]["mode"], "native-multimodal", "{status}");
    assert_eq!(status["vision"]["source"], "browserd mcp --vision native", "{status}");
    let opened = mcp.call("browser_open", json!({"url": site.url("/canvas.html")})).await.ok();
    let tab = opened["tab"].as_u64().unwrap();
    let (is_error, content) = raw_call(&mcp, "browser_observe", json!({"tab": tab, "screenshot": true})).await;
    assert!(!is_error, "{content:?}");
    assert_eq!(images(&content), 1, "the screenshot is image content: {content:?}");
    let envelope = texts(&content)[0].lines().next().unwrap().to_owned();
    assert!(envelope.contains(r#""pixelContent""#) && !envelope.contains("needsVision"), "{envelope}");
    assert!(envelope.contains("screenshot: true"), "{envelope}");
    mcp.close().await;
}
