//! The broker's own answer over the 16 MiB frame limit, on a real managed Chromium: a page that draws a 2 400 × 2 400
//! canvas of noise, observed with a full-page PNG screenshot whose byte and size budgets are raised to hold it (about
//! 23 MB of base64). The caller gets a typed `INVALID_PARAMS` error under its request's id that names the limit and
//! how to ask for less (it used to get its connection closed), and the same connection goes on working (issue 15
//! item 8).

mod real_browser;

use browserd_protocol::ErrorCode;
use real_browser::Real;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_over_the_frame_limit_is_a_typed_error_and_the_connection_goes_on() {
    let r = Real::start("thread-answer-limit").await;
    let tab = r.tool("browser_open", json!({"url": r.site.url("/index.html")})).await["tab"].clone();
    let user = r.user().await;
    // Noise does not compress: a PNG of it is about as large as its pixels.
    user.run_in(
        "/index.html",
        "{ const c = document.createElement('canvas'); c.width = 2400; c.height = 2400; c.id = 'noise'; \
         const g = c.getContext('2d'); const img = g.createImageData(2400, 2400); const d = img.data; \
         let x = 2463534242; for (let i = 0; i < d.length; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; \
         d[i] = (i & 3) === 3 ? 255 : x & 255; } g.putImageData(img, 0, 0); document.body.appendChild(c); }",
    )
    .await;
    let huge = json!({"tab": tab, "screenshot": true, "screenshotOptions":
        {"format": "png", "fullPage": true, "maxSize": 4000, "maxBytes": 200_000_000}});
    let e =
        r.c.tool(&r.s, "browser_observe", huge).await.expect_err("an answer over 16 MiB is not sent").into_error_data();
    assert_eq!(e.code, ErrorCode::InvalidParams, "a typed error, not a closed connection: {e:?}");
    assert!(e.message.contains("frame limit of 16777216 bytes (16 MiB)"), "names the limit: {}", e.message);
    assert!(e.message.contains("lower quality or maxBytes"), "says how to ask for less: {}", e.message);
    assert!(e.next_step.contains("browser_observe"), "{e:?}");
    // The same connection goes on, and the smaller screenshot the error suggests works.
    let obs = r.tool("browser_observe", json!({"tab": tab, "screenshot": true})).await;
    assert!(obs["screenshot"].is_object(), "{obs}");
    r.finish().await;
}
