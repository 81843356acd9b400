//! Vision modes through the real `browserd mcp`: `--vision semantic` refuses screenshots with `VISION_UNAVAILABLE`
//! and the page's text observation (no image block), refuses screenshot points before anything is sent, and says a
//! canvas page needs vision; the default (`--vision native`) returns the image. `browser_status` names the mode.
//! `--max-image-edge/--max-image-bytes` fit every screenshot (a point of the downscaled image still lands); a
//! screenshot of an origin the site policy denies is refused, and no image is sent or written.

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

/// The screenshot geometry of an observation as the MCP server renders it: the envelope line's JSON.
fn shot_of(content: &[Value]) -> Value {
    let envelope = texts(content)[0].lines().next().unwrap().to_owned();
    let json: Value = serde_json::from_str(&envelope[envelope.find('{').unwrap()..]).unwrap();
    json["screenshot"].clone()
}

/// The bytes of the one image block.
fn image_bytes(content: &[Value]) -> Vec<u8> {
    use base64::Engine as _;
    let block = content.iter().find(|b| b["type"] == "image").expect("an image block");
    base64::engine::general_purpose::STANDARD.decode(block["data"].as_str().unwrap()).unwrap()
}

/// The picture check's red dot (`#e00000`), found in a PNG's own pixels: its centre in image pixels, and the size.
fn red_dot(png_bytes: &[u8]) -> ((f64, f64), (u32, u32)) {
    let mut dec = png::Decoder::new(std::io::Cursor::new(png_bytes));
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = dec.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let (mut n, mut sx, mut sy) = (0.0, 0.0, 0.0);
    for y in 0..info.height {
        for x in 0..info.width {
            let i = (y as usize * info.width as usize + x as usize) * channels;
            // Downscaled, the dot's edge blends with the grey: count the clearly red pixels.
            if buf[i] > 0xb0 && buf[i + 1] < 0x40 && buf[i + 2] < 0x40 {
                (n, sx, sy) = (n + 1.0, sx + f64::from(x), sy + f64::from(y));
            }
        }
    }
    assert!(n >= 4.0, "no red dot in the {}x{} screenshot", info.width, info.height);
    ((sx / n + 0.5, sy / n + 0.5), (info.width, info.height))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_image_limits_fit_every_screenshot_and_a_point_of_the_downscaled_image_lands() {
    let site = browserd_fixtures::FixtureSite::start().await.unwrap();
    let home = Home::new(&Options::default());
    let flags = ["--max-image-edge", "300", "--max-image-bytes", "60000"];
    let mcp = Mcp::spawn_with(&home, Host::ClaudeCode { session: "cc-vision-limits".into() }, &flags).await;
    let status = mcp.call("browser_status", json!({})).await.ok();
    let limits = &status["vision"]["limits"];
    assert_eq!((limits["maxEdge"].as_u64(), limits["maxBytes"].as_u64()), (Some(300), Some(60000)), "{status}");
    let source = limits["source"].as_str().unwrap();
    assert!(source.contains("--max-image-edge 300") && source.contains("--max-image-bytes 60000"), "{status}");

    let opened = mcp.call("browser_open", json!({"url": site.url("/vision-check.html")})).await.ok();
    let tab = opened["tab"].as_u64().unwrap();
    // The call asks for more than the host takes: the host's limits win.
    let args = json!({"tab": tab, "screenshot": true, "screenshotOptions": {"format": "png", "maxSize": 4000}});
    let (is_error, content) = raw_call(&mcp, "browser_observe", args).await;
    assert!(!is_error, "{content:?}");
    let shot = shot_of(&content);
    let bytes = image_bytes(&content);
    let ((x, y), (w, h)) = red_dot(&bytes);
    assert!(w <= 300 && h <= 300 && bytes.len() <= 60000, "{w}x{h}, {} bytes: {shot}", bytes.len());
    assert_eq!(
        (f64::from(w), f64::from(h)),
        (shot["pixelSize"]["width"].as_f64().unwrap(), shot["pixelSize"]["height"].as_f64().unwrap())
    );
    assert!(shot["scale"].as_f64().unwrap() < 0.5, "downscaled to fit: {shot}");
    // The dot found in the downscaled image's pixels, clicked through `at`: the page's own check says it landed.
    let at = json!({"imageId": shot["imageId"], "x": x, "y": y});
    let clicked = mcp.call("browser_act", json!({"tab": tab, "action": "click", "at": at})).await.ok();
    assert_eq!(clicked["outcome"], "succeeded", "{clicked}");
    let check = site.vision_challenges().pop().unwrap();
    let answer = check.answers.last().unwrap_or_else(|| panic!("the page posted no answer: {check:?}"));
    assert!(answer.click_ok, "the click landed {:.1} px from the dot's centre: {answer:?}", answer.distance);
    mcp.close().await;
}

/// The screenshot files in `dir`.
fn files_in(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

/// A screenshot of `tab` is refused with `ORIGIN_NOT_AUTHORISED`: no image block, nothing of the page.
async fn screenshot_refused(mcp: &Mcp, tab: u64, what: &str) {
    let (is_error, content) = raw_call(
        mcp,
        "browser_observe",
        json!({"tab": tab, "screenshot": true, "screenshotOptions": {"format": "png"}}),
    )
    .await;
    assert!(is_error, "{what}: a screenshot of a denied origin is an error: {content:?}");
    assert_eq!(images(&content), 0, "{what}: no image: {content:?}");
    let error: Value = serde_json::from_str(texts(&content)[0]).unwrap();
    assert_eq!(error["error"]["code"], "ORIGIN_NOT_AUTHORISED", "{what}: {error}");
    assert!(!format!("{content:?}").contains("Landing secret") && !format!("{content:?}").contains("Partner secret"));
}

/// Opens the redirects page, clicks the link named `link` and returns the tab (now on the denied origin).
async fn follow(mcp: &Mcp, site: &browserd_fixtures::FixtureSite, link: &str) -> u64 {
    let opened = mcp.call("browser_open", json!({"url": site.url("/policy-redirect.html")})).await.ok();
    let tab = opened["tab"].as_u64().unwrap();
    let (_, content) = raw_call(mcp, "browser_observe", json!({"tab": tab})).await;
    let page = texts(&content)[0];
    let line = page.lines().find(|l| l.contains(link)).unwrap_or_else(|| panic!("no {link} in {page}"));
    let r = browserd_protocol::line_ref(line).expect("a ref line");
    // The click runs; what it led to is refused (the action's own answer may say so).
    let _ = mcp.call("browser_act", json!({"tab": tab, "action": "click", "target": r})).await;
    tab
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_a_screenshot_of_a_denied_origin_is_refused_and_no_image_is_sent_or_written() {
    let site = browserd_fixtures::FixtureSite::start().await.unwrap();
    // The session's own list (`--blocked-origins`): a tab that followed a link there, and an allowed page that
    // frames the denied origin (an image would show the frame's pixels).
    let home = Home::new(&Options::default());
    let dir = home.path().join("shots");
    let dir_flag = dir.display().to_string();
    let flags = ["--blocked-origins", "localhost", "--screenshot-dir", dir_flag.as_str()];
    let mcp = Mcp::spawn_with(&home, Host::ClaudeCode { session: "cc-vision-denied".into() }, &flags).await;
    // The control: an allowed page's screenshot is sent and written to the directory.
    let opened = mcp.call("browser_open", json!({"url": site.url("/policy-redirect.html")})).await.ok();
    let control = opened["tab"].as_u64().unwrap();
    let (is_error, content) = raw_call(&mcp, "browser_observe", json!({"tab": control, "screenshot": true})).await;
    assert!(!is_error && images(&content) == 1, "{content:?}");
    assert_eq!(files_in(&dir).len(), 1, "the allowed page's screenshot is written: {:?}", files_in(&dir));
    let direct = follow(&mcp, &site, "Partner landing page").await;
    screenshot_refused(&mcp, direct, "a link to the denied origin").await;
    let framed = mcp.call("browser_open", json!({"url": site.url("/policy-frame.html")})).await.ok();
    screenshot_refused(&mcp, framed["tab"].as_u64().unwrap(), "an allowed page framing the denied origin").await;
    assert_eq!(files_in(&dir).len(), 1, "no file of a denied page: {:?}", files_in(&dir));
    mcp.close().await;

    // The broker's `[policy] deny`: a server redirect from an allowed page to the denied origin.
    let home = Home::new(&Options::default());
    let config = home.path().join(".config/browserd/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[policy]\ndeny = [\"localhost\"]\n");
    std::fs::write(&config, text).unwrap();
    let dir = home.path().join("shots");
    let dir_flag = dir.display().to_string();
    let flags = ["--screenshot-dir", dir_flag.as_str()];
    let mcp = Mcp::spawn_with(&home, Host::ClaudeCode { session: "cc-vision-denied-config".into() }, &flags).await;
    let redirected = follow(&mcp, &site, "Continue to the partner").await;
    screenshot_refused(&mcp, redirected, "a redirect to the denied origin").await;
    assert!(files_in(&dir).is_empty(), "no file of a denied page: {:?}", files_in(&dir));
    mcp.close().await;
}
