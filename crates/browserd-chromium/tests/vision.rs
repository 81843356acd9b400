//! Real-Chromium tests of coordinate (vision) actions: points of real screenshots mapped back to the page, and the
//! re-validation that refuses stale, unknown, scrolled-away and off-screen points before any input is sent.
mod common;

use base64::Engine as _;
use browserd_protocol::{
    ActParams, ActionKind, Dispatch, Expectation, ImageFormat, Observation, Outcome, Postcondition, Screenshot,
    ScreenshotOptions, ScrollDirection, codes,
};
use common::{Page, ctx, env, ref_of};

async fn shot(page: &Page, opts: ScreenshotOptions) -> Screenshot {
    env().provider.screenshot(&ctx(), page.tab, &opts).await.unwrap()
}

fn png(max_size: Option<u32>) -> ScreenshotOptions {
    ScreenshotOptions { format: Some(ImageFormat::Png), max_size, ..Default::default() }
}

/// The bounding box (inclusive, image pixels) of the solid areas of exactly this colour (horizontal runs of at least
/// 20 pixels, so anti-aliased text of a similar grey does not count).
fn find_colour(s: &Screenshot, rgb: [u8; 3]) -> (u32, u32, u32, u32) {
    let bytes = base64::engine::general_purpose::STANDARD.decode(&s.data).unwrap();
    let mut dec = png::Decoder::new(std::io::Cursor::new(bytes));
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = dec.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(channels >= 3, "colour image expected, got {:?}", info.color_type);
    assert_eq!((f64::from(info.width), f64::from(info.height)), (s.pixel_size.width, s.pixel_size.height));
    let (mut x0, mut y0, mut x1, mut y1) = (u32::MAX, u32::MAX, 0, 0);
    for y in 0..info.height {
        let mut run_start = None;
        for x in 0..=info.width {
            let i = (y as usize * info.width as usize + x as usize) * channels;
            let same = x < info.width && buf[i..i + 3] == rgb;
            match (same, run_start) {
                (true, None) => run_start = Some(x),
                (false, Some(start)) => {
                    if x - start >= 20 {
                        (x0, y0, x1, y1) = (x0.min(start), y0.min(y), x1.max(x - 1), y1.max(y));
                    }
                    run_start = None;
                }
                _ => {}
            }
        }
    }
    assert!(x0 <= x1, "no pixel of colour {rgb:?} in the screenshot");
    (x0, y0, x1, y1)
}

/// The canvas coordinates the canvas fixture last recorded.
fn last_canvas_click(o: &Observation) -> (i64, i64) {
    let line = o
        .untrusted_content
        .lines()
        .find(|l| l.contains("last: x="))
        .unwrap_or_else(|| panic!("{}", o.untrusted_content));
    let nums: Vec<i64> = line
        .split(|c: char| !c.is_ascii_digit() && c != '-')
        .filter(|t| !t.is_empty())
        .filter_map(|t| t.parse().ok())
        .collect();
    let n = nums.len();
    (nums[n - 2], nums[n - 1])
}

const CANVAS_GREY: [u8; 3] = [0xf4, 0xf4, 0xf4];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn click_at_a_screenshot_point_lands_on_the_seen_canvas_spot() {
    let page = Page::open("/canvas.html").await;
    let s = shot(&page, png(None)).await;
    // Find the canvas in the image itself (its bitmap is filled with #f4f4f4), then aim at canvas point (100, 50).
    let (x0, y0, x1, _) = find_colour(&s, CANVAS_GREY);
    let per_canvas_px = f64::from(x1 - x0 + 1) / 400.0;
    assert!(
        (per_canvas_px - s.scale).abs() < 0.02,
        "400 canvas px are {per_canvas_px} image px each; scale {}",
        s.scale
    );
    let (ix, iy) = (f64::from(x0) + 100.5 * per_canvas_px, f64::from(y0) + 50.5 * per_canvas_px);
    let r = page.act(ActParams::new(ActionKind::Click).at(&s.image_id, ix, iy)).await;
    assert_eq!(
        (r.outcome, r.dispatch != Dispatch::NotDispatched, r.code.as_deref()),
        (Outcome::Succeeded, true, None),
        "{r:#?}"
    );
    let hit = r.hit.as_ref().expect("the receiving element is reported");
    assert_eq!(hit.name, "Drawing board", "{hit:#?}");
    let o = page.observe().await;
    assert_eq!(ref_of(&o, "\"Drawing board\""), hit.node.as_str(), "the hit ref is the observation's ref");
    let (cx, cy) = last_canvas_click(&o);
    assert!((cx - 100).abs() <= 2 && (cy - 50).abs() <= 2, "the page recorded ({cx}, {cy}) for (100, 50)");

    // The same image again, dblclick and hover also take points.
    let r = page.act(ActParams::new(ActionKind::Dblclick).at(&s.image_id, ix + 100.0 * s.scale, iy)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let o = page.observe().await;
    assert!(o.untrusted_content.contains("Clicks: 3"), "a double click is two clicks: {}", o.untrusted_content);
    let r = page.act(ActParams::new(ActionKind::Hover).at(&s.image_id, ix, iy)).await;
    assert_eq!((r.outcome, r.hit.map(|h| h.name)), (Outcome::Succeeded, Some("Drawing board".into())));
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_screenshot_over_max_bytes_is_made_smaller_with_exact_geometry_and_its_points_still_land() {
    let page = Page::open("/canvas.html").await;
    let full = shot(&page, png(None)).await;
    let full_bytes = base64::engine::general_purpose::STANDARD.decode(&full.data).unwrap().len();
    let bound = u32::try_from(full_bytes / 3).unwrap();
    let small = shot(&page, ScreenshotOptions { max_bytes: Some(bound), ..png(None) }).await;
    let bytes = base64::engine::general_purpose::STANDARD.decode(&small.data).unwrap().len();
    assert!(bytes <= bound as usize, "{bytes} bytes over the bound {bound} (full: {full_bytes})");
    assert!(small.scale < full.scale, "downscaled to fit: {} vs {}", small.scale, full.scale);
    // `find_colour` checks the decoded size is the reported pixel size; the canvas is where the metadata says.
    let (sx0, sy0, ..) = find_colour(&small, CANVAS_GREY);
    let (fx0, fy0, ..) = find_colour(&full, CANVAS_GREY);
    let css = (full.clip_origin.x + f64::from(fx0) / full.scale, full.clip_origin.y + f64::from(fy0) / full.scale);
    let small_at = ((css.0 - small.clip_origin.x) * small.scale, (css.1 - small.clip_origin.y) * small.scale);
    assert!(
        (small_at.0 - f64::from(sx0)).abs() <= 1.5 && (small_at.1 - f64::from(sy0)).abs() <= 1.5,
        "canvas corner at {small_at:?} by the metadata, at ({sx0}, {sy0}) in the byte-bounded image"
    );
    let (ix, iy) =
        ((css.0 + 200.5 - small.clip_origin.x) * small.scale, (css.1 + 100.5 - small.clip_origin.y) * small.scale);
    let r = page.act(ActParams::new(ActionKind::Click).at(&small.image_id, ix, iy)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let (cx, cy) = last_canvas_click(&page.observe().await);
    assert!((cx - 200).abs() <= 2 && (cy - 100).abs() <= 2, "the page recorded ({cx}, {cy}) for (200, 100)");
    // A JPEG over the bound loses quality first, and still fits.
    let jpeg = ScreenshotOptions {
        format: Some(ImageFormat::Jpeg),
        quality: Some(95),
        max_bytes: Some(8000),
        ..Default::default()
    };
    let j = shot(&page, jpeg).await;
    assert!(base64::engine::general_purpose::STANDARD.decode(&j.data).unwrap().len() <= 8000);
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_downscaled_screenshot_maps_back_to_css_pixels() {
    let page = Page::open("/canvas.html").await;
    let full = shot(&page, png(None)).await;
    let small = shot(&page, png(Some(400))).await;
    assert!(small.pixel_size.width <= 400.0 && small.pixel_size.height <= 400.0, "{:?}", small.pixel_size);
    assert!(small.scale < full.scale * 0.6, "downscaled: {} vs {}", small.scale, full.scale);
    // The canvas is where the metadata says in both images.
    let (fx0, fy0, ..) = find_colour(&full, CANVAS_GREY);
    let (sx0, sy0, ..) = find_colour(&small, CANVAS_GREY);
    let css = (full.clip_origin.x + f64::from(fx0) / full.scale, full.clip_origin.y + f64::from(fy0) / full.scale);
    let small_at = ((css.0 - small.clip_origin.x) * small.scale, (css.1 - small.clip_origin.y) * small.scale);
    assert!(
        (small_at.0 - f64::from(sx0)).abs() <= 1.5 && (small_at.1 - f64::from(sy0)).abs() <= 1.5,
        "canvas corner at {small_at:?} by the metadata, at ({sx0}, {sy0}) in the small image"
    );
    // Canvas point (300, 200) in the small image's pixels.
    let (ix, iy) =
        ((css.0 + 300.5 - small.clip_origin.x) * small.scale, (css.1 + 200.5 - small.clip_origin.y) * small.scale);
    let r = page.act(ActParams::new(ActionKind::Click).at(&small.image_id, ix, iy)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let (cx, cy) = last_canvas_click(&page.observe().await);
    assert!((cx - 300).abs() <= 2 && (cy - 200).abs() <= 2, "the page recorded ({cx}, {cy}) for (300, 200)");
    page.close().await;
}

const TALL: &str = "data:text/html,<title>tall</title><body style=\"margin:0\"><div id=d style=\"height:3000px;width:900px;background:%23f4f4f4\" onclick=\"document.getElementById('o').textContent='at '+event.pageX+','+event.pageY\"></div><p id=o>none</p></body>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_scrolling_a_point_moves_with_the_page_or_is_refused() {
    let page = Page::open(TALL).await;
    let s = shot(&page, png(None)).await;
    assert_eq!(s.scroll.y, 0.0);
    let mut p = ActParams::new(ActionKind::Scroll);
    p.direction = Some(ScrollDirection::Down);
    let r = page.act(p).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let now = shot(&page, png(None)).await;
    let dy = now.scroll.y;
    assert!(dy > 100.0 && dy < 700.0, "scrolled by {dy}");
    // A point still on screen after the scroll: clicked where it now is in the page.
    let y = (dy + 50.0).round();
    let r = page
        .act(
            ActParams::new(ActionKind::Click)
                .at(&s.image_id, 100.0 * s.scale, y * s.scale)
                .expect(Expectation::TextPresent { text: format!("at 100,{y}") }),
        )
        .await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    assert!(r.message.as_deref().unwrap_or_default().contains(&format!("scrolled by (0, {dy:.0})")), "{r:#?}");
    // A point that scrolled off the top: refused, nothing sent.
    let r = page.act(ActParams::new(ActionKind::Click).at(&s.image_id, 100.0 * s.scale, 20.0 * s.scale)).await;
    assert_eq!((r.code.as_deref(), r.dispatch), (Some(codes::OUT_OF_VIEWPORT), Dispatch::NotDispatched), "{r:#?}");
    assert!(r.message.as_deref().unwrap_or_default().contains("scrolled by"), "{r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_unknown_and_off_screen_points_are_refused() {
    let page = Page::open(TALL).await;
    let full = shot(&page, ScreenshotOptions { full_page: true, max_size: Some(4000), ..Default::default() }).await;
    let viewport = shot(&page, png(None)).await;
    assert!(full.pixel_size.height > viewport.pixel_size.height * 2.0, "{:?}", full.pixel_size);

    // Below the fold of a full-page image: outside the viewport.
    let r = page.act(ActParams::new(ActionKind::Click).at(&full.image_id, 50.0, full.pixel_size.height - 50.0)).await;
    assert_eq!((r.code.as_deref(), r.dispatch), (Some(codes::OUT_OF_VIEWPORT), Dispatch::NotDispatched), "{r:#?}");
    assert!(r.message.as_deref().unwrap_or_default().contains("outside the current viewport"), "{r:#?}");
    // Outside the image itself.
    let r =
        page.act(ActParams::new(ActionKind::Click).at(&viewport.image_id, viewport.pixel_size.width + 5.0, 5.0)).await;
    assert_eq!(r.code.as_deref(), Some(codes::INVALID_PARAMS), "{r:#?}");
    // Never issued.
    let r = page.act(ActParams::new(ActionKind::Click).at("img999999", 5.0, 5.0)).await;
    assert_eq!((r.code.as_deref(), r.dispatch), (Some(codes::TARGET_NOT_FOUND), Dispatch::NotDispatched), "{r:#?}");
    // Another tab's image.
    let other = Page::open("/canvas.html").await;
    let theirs = shot(&other, png(None)).await;
    let r = page.act(ActParams::new(ActionKind::Click).at(&theirs.image_id, 5.0, 5.0)).await;
    assert_eq!(r.code.as_deref(), Some(codes::TARGET_NOT_FOUND), "{r:#?}");
    assert!(r.message.as_deref().unwrap_or_default().contains("another tab"), "{r:#?}");
    other.close().await;
    // Both a ref and a point: refused.
    let r = page.act(ActParams::new(ActionKind::Click).target("e1").at(&viewport.image_id, 5.0, 5.0)).await;
    assert_eq!(r.code.as_deref(), Some(codes::INVALID_PARAMS), "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Fill).value("x").at(&viewport.image_id, 5.0, 5.0)).await;
    assert_eq!(r.code.as_deref(), Some(codes::INVALID_PARAMS), "{r:#?}");

    // After navigation the image belongs to a replaced document.
    let r = page.act(ActParams::new(ActionKind::Reload)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Click).at(&viewport.image_id, 5.0, 5.0)).await;
    assert_eq!((r.code.as_deref(), r.dispatch), (Some(codes::STALE_TARGET), Dispatch::NotDispatched), "{r:#?}");
    assert!(r.message.as_deref().unwrap_or_default().contains("take a new one"), "{r:#?}");
    let o = page.observe().await;
    assert!(o.untrusted_content.contains("none"), "nothing was clicked: {}", o.untrusted_content);
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn points_inside_frames_report_the_frame_qualified_receiver() {
    let page = Page::open("/iframes.html").await;
    let o = page.observe().await;
    for frame in ["same-origin", "cross-origin"] {
        // The inner button of this frame, located through an element screenshot (clip origin ≠ viewport origin).
        let button = o
            .untrusted_content
            .lines()
            .skip_while(|l| !l.contains(&format!("Inner frame: {frame}")))
            .find(|l| l.contains("button \"Inner button\""))
            .map(|l| browserd_protocol::line_ref(l).expect("a ref line").to_owned())
            .unwrap_or_else(|| panic!("no inner button for {frame} in\n{}", o.untrusted_content));
        assert!(button.starts_with('f'), "frame-qualified: {button}");
        let s = shot(&page, ScreenshotOptions { target: Some(button.as_str().into()), ..Default::default() }).await;
        let r = page
            .act(ActParams::new(ActionKind::Click).at(&s.image_id, s.pixel_size.width / 2.0, s.pixel_size.height / 2.0))
            .await;
        assert_eq!(r.outcome, Outcome::Succeeded, "{frame}: {r:#?}");
        let hit = r.hit.expect("the receiver is reported");
        assert_eq!(
            (hit.node.as_str(), hit.role.as_str(), hit.name.as_str()),
            (button.as_str(), "button", "Inner button")
        );
    }
    // An out-of-process frame handles its input asynchronously: wait until no frame shows zero clicks.
    let r = page
        .act(
            ActParams::new(ActionKind::Wait)
                .expect(Expectation::Disappears { target: None, text: Some("Inner clicks: 0".into()) }),
        )
        .await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    let o = page.observe().await;
    assert_eq!(
        o.untrusted_content.matches("Inner clicks: 1").count(),
        2,
        "each frame's button got its click: {}",
        o.untrusted_content
    );
    page.close().await;
}

const PINNED: &str = "data:text/html,<title>pinned</title><body style=\"margin:0\"><header style=\"position:fixed;top:0;left:0;right:0;height:50px;background:%23333;color:white\" onclick=\"document.getElementById('o').textContent='header'\">Menu</header><div style=\"height:3000px;padding-top:60px\" onclick=\"document.getElementById('o').textContent='content '+event.pageY\">Content</div><footer style=\"position:fixed;bottom:0;left:0;right:0;height:30px;background:%23555;color:white\">Footer</footer><p id=o>none</p></body>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_scrolling_points_on_fixed_content_are_refused() {
    let page = Page::open(PINNED).await;
    let s = shot(&page, png(None)).await;
    let mut p = ActParams::new(ActionKind::Scroll);
    p.direction = Some(ScrollDirection::Down);
    assert_eq!(page.act(p).await.outcome, Outcome::Succeeded);
    let dy = shot(&page, png(None)).await.scroll.y;
    let vh = s.viewport_css_size.height;
    assert!(dy > 100.0 && 80.0 + dy < vh - 30.0, "this test needs a scroll of 100..{} px, got {dy}", vh - 110.0);
    let at = |y: f64| ActParams::new(ActionKind::Click).at(&s.image_id, 200.0 * s.scale, y * s.scale);
    // Seen on the fixed footer: the footer did not move, so moving the point with the page would miss it.
    let r = page.act(at(vh - 15.0)).await;
    assert_eq!((r.code.as_deref(), r.dispatch), (Some(codes::STALE_TARGET), Dispatch::NotDispatched), "{r:#?}");
    assert!(r.message.as_deref().unwrap_or_default().contains("was on fixed-position"), "{r:#?}");
    // Seen on content that the fixed header now covers.
    let r = page.act(at(dy + 20.0)).await;
    assert_eq!((r.code.as_deref(), r.dispatch), (Some(codes::STALE_TARGET), Dispatch::NotDispatched), "{r:#?}");
    assert!(r.message.as_deref().unwrap_or_default().contains("now lands on fixed-position"), "{r:#?}");
    // Seen on content that is still visible: moved with the page.
    let y = (dy + 80.0).round();
    let r = page.act(at(y).expect(Expectation::TextPresent { text: format!("content {y}") })).await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    page.close().await;
}

const DRAG: &str = "data:text/html,<title>drag</title><body style=\"margin:0\"><div style=\"width:900px;height:600px;background:%23f4f4f4\" onmousedown=\"window.d=event.clientX+','+event.clientY\" onmouseup=\"document.getElementById('o').textContent='dragged '+window.d+' to '+event.clientX+','+event.clientY\"></div><p id=o>none</p></body>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drag_between_two_screenshot_points() {
    let page = Page::open(DRAG).await;
    let s = shot(&page, png(Some(500))).await;
    let mut p = ActParams::new(ActionKind::Drag).at(&s.image_id, 50.0 * s.scale, 60.0 * s.scale);
    p.drop_at =
        Some(browserd_protocol::ImagePoint { image_id: s.image_id.clone(), x: 400.0 * s.scale, y: 300.0 * s.scale });
    let r = page.act(p.expect(Expectation::TextPresent { text: "dragged 50,60 to 400,300".into() })).await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    assert!(r.hit.is_some(), "the element under the start point is reported: {r:#?}");
    page.close().await;
}

/// Sends one raw protocol command to the page (what the advanced tier's `browser_cdp` does).
async fn raw(page: &Page, method: &str, params: serde_json::Value) -> serde_json::Value {
    use browserd_core::provider::Provider as _;
    let p = browserd_protocol::tools::RawProtocolParams {
        tab: browserd_protocol::TabId(page.tab.0),
        method: method.to_owned(),
        params: params.as_object().cloned(),
    };
    env().provider.raw_protocol(&ctx(), page.tab, &p).await.unwrap().result
}

const DOT_RED: [u8; 3] = [0xe0, 0x00, 0x00];

/// The centre (image pixels) of the picture check's red dot, found in the image's own pixels.
fn dot_centre(s: &Screenshot) -> (f64, f64) {
    let bytes = base64::engine::general_purpose::STANDARD.decode(&s.data).unwrap();
    let mut dec = png::Decoder::new(std::io::Cursor::new(bytes));
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = dec.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert_eq!((f64::from(info.width), f64::from(info.height)), (s.pixel_size.width, s.pixel_size.height));
    let (mut n, mut sx, mut sy) = (0.0, 0.0, 0.0);
    for y in 0..info.height {
        for x in 0..info.width {
            let i = (y as usize * info.width as usize + x as usize) * channels;
            if buf[i..i + 3] == DOT_RED {
                (n, sx, sy) = (n + 1.0, sx + f64::from(x), sy + f64::from(y));
            }
        }
    }
    assert!(n > 20.0, "no red dot in the screenshot ({n} red pixels)");
    (sx / n + 0.5, sy / n + 0.5)
}

/// The newest picture check's verdicts.
fn last_check() -> browserd_test_support::fixtures::VisionChallenge {
    env().site.vision_challenges().pop().expect("the picture check page made a challenge")
}

/// `visualViewport.scale` and the pinch-zoomed view's offset in the layout viewport, read in the page.
async fn pinch_of(page: &Page) -> (f64, f64, f64) {
    let e = "JSON.stringify([visualViewport.scale, visualViewport.offsetLeft, visualViewport.offsetTop])";
    let r = raw(page, "Runtime.evaluate", serde_json::json!({"expression": e, "returnByValue": true})).await;
    let v: Vec<f64> = serde_json::from_str(r["result"]["value"].as_str().unwrap()).unwrap();
    (v[0], v[1], v[2])
}

/// A real pinch gesture (`Input.synthesizePinchGesture`) around a viewport point, until the page reports `scale`.
async fn pinch(page: &Page, x: f64, y: f64, factor: f64, scale: f64) {
    let args = serde_json::json!({"x": x, "y": y, "scaleFactor": factor, "gestureSourceType": "mouse"});
    raw(page, "Input.synthesizePinchGesture", args).await;
    let now = pinch_of(page).await.0;
    assert!((now - scale).abs() < 0.01, "the pinch gesture left scale {now}, not {scale}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_pinch_zoom_2_the_drawn_dot_is_clicked_through_at_and_a_changed_pinch_is_refused() {
    let page = Page::open("/vision-check.html").await;
    let flat = shot(&page, png(None)).await;
    // Pinch zoom 2 around a point left of the picture: the view is panned into the layout viewport as well.
    pinch(&page, 40.0, 200.0, 2.0, 2.0).await;
    let before = pinch_of(&page).await;
    let (_, ox, oy) = before;
    assert!(ox.max(oy) > 5.0, "the pinch-zoomed view is panned: ({ox}, {oy})");
    let s = shot(&page, png(None)).await;
    // The screenshot is the view as shown, and taking it left the pinch zoom as it was.
    assert_eq!(pinch_of(&page).await, before, "the screenshot kept the pinch zoom");
    assert!((s.scale - 2.0 * flat.scale).abs() < 0.01, "image px per CSS px count the pinch: {s:?}");
    assert!((s.viewport_css_size.width * 2.0 - flat.viewport_css_size.width).abs() < 1.0, "{:?}", s.viewport_css_size);
    assert!((s.clip_origin.x - ox).abs() < 0.5 && (s.clip_origin.y - oy).abs() < 0.5, "{:?}", s.clip_origin);
    // The dot found in the image's own pixels, clicked through `at`: the page's check says it landed.
    let (x, y) = dot_centre(&s);
    let r = page.act(ActParams::new(ActionKind::Click).at(&s.image_id, x, y)).await;
    assert_eq!((r.outcome, r.code.as_deref()), (Outcome::Succeeded, None), "{r:#?}");
    assert_eq!(r.hit.as_ref().map(|h| h.name.as_str()), Some("Picture"), "the hit test saw the canvas: {r:#?}");
    let check = last_check();
    let answer = check.answers.last().unwrap_or_else(|| panic!("the page got no click: {check:?}"));
    assert!(answer.click_ok, "the click landed {:.1} px from the dot's centre: {answer:?}", answer.distance);

    // A part of the page or the full page cannot be captured without resetting the pinch zoom: refused, kept.
    for opts in [
        ScreenshotOptions { full_page: true, ..png(None) },
        ScreenshotOptions { target: Some("e1".into()), ..png(None) },
    ] {
        let e = env().provider.screenshot(&ctx(), page.tab, &opts).await.unwrap_err();
        assert!(e.message.contains("pinch-zoomed (scale 2.00)"), "{e:?}");
    }
    assert_eq!(pinch_of(&page).await, before, "the refused screenshots left the pinch zoom");

    // The pinch zoom undone: a point of the pinch-zoomed image is refused, nothing sent.
    pinch(&page, 40.0, 200.0, 0.5, 1.0).await;
    let r = page.act(ActParams::new(ActionKind::Click).at(&s.image_id, x, y)).await;
    assert_eq!((r.code.as_deref(), r.dispatch), (Some(codes::STALE_TARGET), Dispatch::NotDispatched), "{r:#?}");
    assert!(r.message.as_deref().unwrap_or_default().contains("pinch zoom changed"), "{r:#?}");
    assert_eq!(last_check().answers.len(), check.answers.len(), "no click reached the page");
    page.close().await;
}

/// A browser of its own whose profile zooms every page to 150 % (Chromium's default zoom level, log base 1.2 of 1.5),
/// with the fixture site.
async fn zoomed_browser() -> (
    std::sync::Arc<browserd_chromium::ChromiumProvider>,
    browserd_cdp::ManagedBrowser,
    browserd_test_support::fixtures::FixtureSite,
    tempfile::TempDir,
) {
    let root = tempfile::tempdir().unwrap();
    let prefs = root.path().join("profile/Default/Preferences");
    std::fs::create_dir_all(prefs.parent().unwrap()).unwrap();
    let level = 1.5_f64.ln() / 1.2_f64.ln();
    std::fs::write(&prefs, serde_json::json!({"partition": {"default_zoom_level": {"x": level}}}).to_string()).unwrap();
    let opts = browserd_cdp::LaunchOptions {
        user_data_dir: Some(root.path().join("profile")),
        env: vec![("XDG_CONFIG_HOME".into(), root.path().join("xdg").display().to_string())],
        window_size: Some((1000, 800)),
        ..browserd_cdp::LaunchOptions::default()
    };
    let (provider, browser) = browserd_chromium::ChromiumProvider::launch_managed(
        opts,
        browserd_core::provider::HandleAllocator::new(),
        browserd_chromium::ChromiumConfig::default(),
    )
    .await
    .expect("chromium launches");
    let site = browserd_test_support::fixtures::FixtureSite::start().await.unwrap();
    (provider, browser, site, root)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_page_zoom_150_element_and_full_page_screenshots_have_exact_geometry_and_their_points_land() {
    use browserd_core::provider::{CreateTab, Provider as _};
    let (p, browser, site, _root) = zoomed_browser().await;
    let info = p.create_tab(&ctx(), CreateTab { url: "about:blank".into(), ..Default::default() }).await.unwrap();
    let tab = info.tab;
    let nav = ActParams::new(ActionKind::Navigate).value(site.url("/vision-check.html"));
    assert_eq!(p.act(&ctx(), tab, &nav).await.unwrap().outcome, Outcome::Succeeded);
    let o = p.observe(&ctx(), tab, &browserd_protocol::ObserveParams::default()).await.unwrap();
    let picture = ref_of(&o, "\"Picture\"");
    let view = p.screenshot(&ctx(), tab, &png(None)).await.unwrap();
    assert!((view.dpr - 1.5).abs() < 0.01, "the profile zooms to 150 %: dpr {}", view.dpr);
    let element = ScreenshotOptions { target: Some(picture.as_str().into()), ..png(None) };
    let full = ScreenshotOptions { full_page: true, max_size: Some(4000), ..png(None) };
    for (what, opts) in [("element", element), ("full page", full)] {
        let s = p.screenshot(&ctx(), tab, &opts).await.unwrap();
        // One image pixel per device pixel: 1.5 per CSS pixel, and the decoded size is the reported one.
        assert!((s.scale - 1.5).abs() < 0.01, "{what}: scale {}", s.scale);
        if what == "element" {
            // The canvas is 320x200 CSS px inside a 1 px border.
            let (w, h) = (s.pixel_size.width, s.pixel_size.height);
            assert!((w - 322.0 * 1.5).abs() <= 2.0 && (h - 202.0 * 1.5).abs() <= 2.0, "{what}: {w}x{h}");
        } else {
            assert!(s.pixel_size.height >= view.pixel_size.height - 2.0, "{what}: {:?}", s.pixel_size);
        }
        let (x, y) = dot_centre(&s);
        let answers = site.vision_challenges().pop().unwrap().answers.len();
        let r = p.act(&ctx(), tab, &ActParams::new(ActionKind::Click).at(&s.image_id, x, y)).await.unwrap();
        assert_eq!((r.outcome, r.code.as_deref()), (Outcome::Succeeded, None), "{what}: {r:#?}");
        assert_eq!(r.hit.as_ref().map(|h| h.name.as_str()), Some("Picture"), "{what}: {r:#?}");
        let check = site.vision_challenges().pop().unwrap();
        assert_eq!(check.answers.len(), answers + 1, "{what}: the page got the click");
        let answer = check.answers.last().unwrap();
        assert!(answer.click_ok, "{what}: the click landed {:.1} px from the dot: {answer:?}", answer.distance);
    }
    let _ = browser.shutdown().await;
}
