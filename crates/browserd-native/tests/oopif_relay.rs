//! Refs into an out-of-process frame over the extension relay, the negative side of
//! `broker.rs`'s `oopif_refs_survive_the_idle_detach_on_the_relay` (issue 15 item 3): a real broker drives headless
//! Chromium through the real extension and native host; while browserd's extension is detached from the idle tab the
//! cross-site frame navigates (moved by the harness's own DevTools pipe), so its old ref answers `STALE_TARGET` /
//! `documentChanged` and reaches nothing, while the same-origin frame's ref, whose document did not change, acts.

mod brokered;

use std::time::Duration;

use browserd_broker::config::BrokerConfig;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oopif_that_navigated_during_the_idle_detach_voids_its_refs_on_the_relay() {
    let h = brokered::start(BrokerConfig::default(), false).await;
    let (c, s) = (&h.client, &h.session);
    let (url, inner) = h.open_iframes().await;
    // In document order: the same-origin frame, then the cross-site one.
    let (same, cross) = (&inner[0], &inner[1]);
    h.until_browserd_detached().await;

    // Meanwhile the cross-site frame moves to another page of its site, and finishes loading it.
    h.page_eval(
        &url,
        "window.__moved = false; const f = document.getElementById('cross'); f.onload = () => { window.__moved = true; }; \
         f.src = f.src.replace('frame=cross-origin', 'frame=moved'); 'moving'",
    )
    .await;
    let mut moved = false;
    for _ in 0..400 {
        if h.page_eval(&url, "window.__moved").await == json!(true) {
            moved = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(moved, "the cross-site frame loaded its new page");
    let attached = h.sw_eval("browserd.status().then(s => s.attached.length)").await;
    assert_eq!(attached, 0, "browserd was still detached when the frame navigated");

    let (code, reason) = match c.tool(s, "browser_act", json!({"action": "click", "target": cross})).await {
        Ok(v) => (v["code"].clone(), v["staleReason"].clone()),
        Err(e) => {
            let d = e.error_data().and_then(|d| d.details.clone()).unwrap_or_default();
            (json!(e.code().as_str()), d["staleReason"].clone())
        }
    };
    assert_eq!((code, reason), (json!("STALE_TARGET"), json!("documentChanged")), "a ref of the old document is void");
    let acted = c.tool(s, "browser_act", json!({"action": "click", "target": same})).await.unwrap();
    assert_eq!(acted["outcome"], "succeeded", "{same}, whose document did not change: {acted}");
    let mut counted = String::new();
    for _ in 0..20 {
        let obs = c.tool(s, "browser_observe", json!({})).await.unwrap();
        counted = obs["untrustedContent"].as_str().unwrap().to_owned();
        if counted.contains("Inner clicks: 1") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(counted.contains("moved"), "the cross-site frame shows its new page: {counted}");
    assert_eq!(counted.matches("Inner clicks: 1").count(), 1, "only the same-origin frame counted a click: {counted}");
    assert_eq!(counted.matches("Inner clicks: 0").count(), 1, "nothing reached the new document: {counted}");
    h.stop().await;
}
