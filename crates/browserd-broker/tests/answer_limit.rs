//! The broker's own answer over the 16 MiB frame limit, on a real managed Chromium: a page with ~20 MB of text
//! observed with budgets large enough to hold it. The caller gets a typed `INVALID_PARAMS` error under its request's
//! id that names the limit and how to ask for less (it used to get its connection closed), and the same connection
//! goes on working (issue 15 item 8).

mod real_browser;

use browserd_protocol::ErrorCode;
use real_browser::Real;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_over_the_frame_limit_is_a_typed_error_and_the_connection_goes_on() {
    let r = Real::start("thread-answer-limit").await;
    let tab = r.tool("browser_open", json!({"url": r.site.url("/index.html")})).await["tab"].clone();
    let user = r.user().await;
    // About 20 MB of page text, in paragraphs of 1 000 characters.
    user.run_in(
        "/index.html",
        "{ const p = 'lorem ipsum dolor sit amet '.repeat(40); const f = document.createDocumentFragment(); \
         for (let i = 0; i < 20000; i++) { const e = document.createElement('p'); e.textContent = i + ' ' + p; \
         f.appendChild(e); } document.body.appendChild(f); }",
    )
    .await;
    let huge = json!({"tab": tab, "maxBytes": 4_000_000_000u32, "maxTokens": 4_000_000_000u32, "maxNodes": 100000});
    let e = r
        .c
        .tool(&r.s, "browser_observe", huge)
        .await
        .expect_err("an answer over 16 MiB is not sent")
        .into_error_data();
    assert_eq!(e.code, ErrorCode::InvalidParams, "a typed error, not a closed connection: {e:?}");
    assert!(e.message.contains("frame limit of 16777216 bytes (16 MiB)"), "names the limit: {}", e.message);
    assert!(e.message.contains("maxBytes or maxTokens"), "says how to ask for less: {}", e.message);
    assert!(e.next_step.contains("browser_observe"), "{e:?}");
    // The same connection goes on, and the smaller observation the error suggests works.
    let obs = r.tool("browser_observe", json!({"tab": tab, "maxBytes": 100_000})).await;
    assert!(obs["untrustedContent"].as_str().unwrap().contains("lorem ipsum"), "{obs}");
    r.finish().await;
}
