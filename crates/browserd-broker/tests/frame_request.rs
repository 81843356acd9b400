//! A frame of an origin the site policy refuses is never requested, on a real managed Chromium through the broker
//! (issue 16 item 2): the browser pauses every document request before it is sent, and a frame's is failed there when
//! its origin is refused for the session using the tab, so the denied site never receives the request (and with it
//! none of the user's cookies for it). The page around it loads and works; the frame is one line with no content and
//! no refs; a frame of an allowed origin still loads.

mod real_browser;

use std::time::Duration;

use real_browser::{Real, deny_localhost, ref_of};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_frame_is_never_requested_and_shows_as_one_line() {
    let r = Real::start_config("thread-frame-request", deny_localhost()).await;
    let (tab, content) = r.open_and_read("/policy-frame.html").await;
    let origin = r.site.cross_origin_url("");
    let line = format!("frame {origin} (not authorised)");
    assert!(content.lines().any(|l| l.trim() == line), "one line for the frame:\n{content}");
    assert!(!content.contains("Partner secret") && !content.contains("Transfer everything"), "{content}");
    let local = ref_of(&content, "button \"Local button\"");
    let clicked = r.tool("browser_act", json!({"tab": tab, "action": "click", "target": local})).await;
    assert_eq!(clicked["outcome"], "succeeded", "the page around the frame works: {clicked}");
    // Ground truth on the denied site's side: it never received the frame's request.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(r.site.requests().iter().any(|u| u.ends_with("/policy-frame.html")), "{:?}", r.site.requests());
    assert_eq!(r.site.cross_origin_requests("/policy-inner.html"), Vec::<String>::new(), "{:?}", r.site.requests());
    r.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_frame_next_to_a_denied_one_still_loads_and_is_read() {
    let r = Real::start_config("thread-frame-allowed", deny_localhost()).await;
    // A same-origin frame (allowed) and a frame of the denied site, on one page.
    let (tab, content) = r.open_and_read("/iframes.html").await;
    assert!(content.contains("Inner frame: same-origin"), "the allowed frame is read:\n{content}");
    assert!(!content.contains("Inner frame: cross-origin"), "{content}");
    let inner = ref_of(&content, "button \"Inner button\"");
    let clicked = r.tool("browser_act", json!({"tab": tab, "action": "click", "target": inner})).await;
    assert_eq!(clicked["outcome"], "succeeded", "{clicked}");
    assert!(r.site.requests().iter().any(|u| u.ends_with("/frame-inner.html?frame=same-origin")));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(r.site.cross_origin_requests("/frame-inner.html"), Vec::<String>::new(), "{:?}", r.site.requests());
    r.finish().await;
}

/// A frame the page adds after browserd's debugger let go of the idle tab (its `Page.frameAttached` is never seen, so
/// browserd does not know the frame) is judged all the same: the request fails closed, and the denied site never
/// receives it, while a frame of the allowed origin added the same way loads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_frame_added_after_the_idle_detach_is_never_requested() {
    let r = Real::start_config("thread-frame-late", deny_localhost()).await;
    let (tab, _) = r.open_and_read("/index.html").await;
    r.until_detached(&tab).await;
    let denied = r.site.cross_origin_url("/policy-inner.html?late=1");
    let allowed = r.site.url("/frame-inner.html?frame=late-allowed");
    // The page adds both frames on its own (a timer), after the detach: nothing of browserd is attached.
    let script = format!(
        "setTimeout(() => {{ for (const src of ['{denied}', '{allowed}']) {{ const f = document.createElement('iframe'); \
         f.src = src; document.body.appendChild(f); }} }}, 50)"
    );
    r.user().await.run_in("/index.html", &script).await;
    let mut loaded = false;
    for _ in 0..400 {
        if r.site.requests().iter().any(|u| u.ends_with("/frame-inner.html?frame=late-allowed")) {
            loaded = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(loaded, "the allowed frame added later loads: {:?}", r.site.requests());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(r.site.cross_origin_requests("/policy-inner.html"), Vec::<String>::new(), "{:?}", r.site.requests());
    // Read again (browserd attaches anew): the stopped frame is one line of the denied origin, as any stopped frame.
    let content = r.read(&tab).await;
    let line = format!("frame {} (not authorised)", r.site.cross_origin_url(""));
    assert!(content.lines().any(|l| l.trim() == line), "one line for the frame:\n{content}");
    assert!(content.contains("Inner frame: late-allowed"), "the allowed frame is read:\n{content}");
    r.finish().await;
}
