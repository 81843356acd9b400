//! Over the extension relay, a frame of an origin the policy refuses is never requested (issue 16 item 2): a real
//! broker (`[policy] deny = ["localhost"]`) drives headless Chromium through the real extension and native host; the
//! page's own request is paused on its session, the frame's document request is failed there before it is sent, and
//! the denied site's request log shows it never received it. The page around it is read; the frame is one line.

mod brokered;

use std::time::Duration;

use browserd_broker::config::{BrokerConfig, PolicyConfig};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_frame_is_never_requested_over_the_extension() {
    let config = BrokerConfig {
        policy: PolicyConfig { deny: vec!["localhost".into()], ..PolicyConfig::default() },
        ..BrokerConfig::default()
    };
    let s = brokered::start(config, false).await;
    let (c, ss) = (&s.client, &s.session);
    let tab =
        c.tool(ss, "browser_open", json!({"url": s.site.url("/policy-frame.html")})).await.unwrap()["tab"].clone();
    let obs = c.tool(ss, "browser_observe", json!({"tab": tab})).await.unwrap();
    let content = obs["untrustedContent"].as_str().unwrap().to_owned();
    let line = format!("frame {} (not authorised)", s.site.cross_origin_url(""));
    assert!(content.lines().any(|l| l.trim() == line), "one line for the frame:\n{content}");
    assert!(content.contains("Local button") && !content.contains("Partner secret"), "{content}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(s.site.requests().iter().any(|u| u.ends_with("/policy-frame.html")), "{:?}", s.site.requests());
    assert_eq!(s.site.cross_origin_requests("/policy-inner.html"), Vec::<String>::new(), "{:?}", s.site.requests());
    s.stop().await;
}
