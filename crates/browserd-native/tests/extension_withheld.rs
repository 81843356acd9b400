//! Over the extension relay, a tab showing an origin the policy refuses is listed without its URL or title (issue 16
//! item 2): a real broker (`[policy] deny = ["localhost"]`) drives headless Chromium through the real extension and
//! native host; the user opens a page of the denied origin in a tab of their own and takes the agent's tab there too.
//! `browser_list`, `browser_status` and the broker's `status` (what `browserd status` prints) show each of them as
//! `http://localhost:P (not authorised)`, with no title, while the allowed tab keeps its URL and title.

mod brokered;

use std::time::Duration;

use browserd_broker::config::{BrokerConfig, PolicyConfig};
use browserd_cdp::SessionId;
use browserd_protocol::lifecycle::StatusParams;
use serde_json::{Value, json};

const T: Duration = Duration::from_secs(10);
/// The denied page's title, which must not be shown.
const TITLE: &str = "Landing on the other site";

/// The user (the harness's own DevTools pipe) opens `url` in a tab of their own, or takes the page at `from` there.
async fn user_goes(s: &brokered::Setup, from: Option<&str>, url: &str) {
    let cdp = s.browser.cdp();
    let Some(from) = from else {
        cdp.call(None, "Target.createTarget", json!({"url": url}), T).await.unwrap();
        return;
    };
    let targets = cdp.call(None, "Target.getTargets", json!({}), T).await.unwrap();
    let target =
        targets["targetInfos"].as_array().unwrap().iter().find(|t| t["url"] == from).expect("the page")["targetId"]
            .clone();
    let att = cdp.call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}), T).await.unwrap();
    let session = SessionId(att["sessionId"].as_str().unwrap().to_owned());
    cdp.call(Some(&session), "Page.navigate", json!({"url": url}), T).await.unwrap();
    let _ = cdp.call(None, "Target.detachFromTarget", json!({"sessionId": session.0}), T).await;
}

/// The tab entry of `list` (a `tabs` array) for `tab`.
fn entry(list: &Value, tab: &Value) -> Value {
    list["tabs"].as_array().unwrap().iter().find(|t| t["tab"] == *tab).cloned().unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_and_status_withhold_a_refused_tabs_url_and_title_over_the_extension() {
    let config = BrokerConfig {
        policy: PolicyConfig { deny: vec!["localhost".into()], ..PolicyConfig::default() },
        ..BrokerConfig::default()
    };
    let s = brokered::start(config, false).await;
    let (c, ss) = (&s.client, &s.session);
    let origin = s.site.cross_origin_url("");
    let shown = format!("{origin} (not authorised)");
    let allowed = s.site.url("/form.html");
    let kept = c.tool(ss, "browser_open", json!({"url": allowed})).await.unwrap()["tab"].clone();
    let taken_from = s.site.url("/form.html?taken");
    let taken = c.tool(ss, "browser_open", json!({"url": taken_from})).await.unwrap()["tab"].clone();
    user_goes(&s, Some(&taken_from), &s.site.cross_origin_url("/policy-landing.html?taken")).await;
    user_goes(&s, None, &s.site.cross_origin_url("/policy-landing.html?user")).await;

    // Both denied pages are loaded (their titles are the browser's to know) before the lists are read.
    let mut list = Value::Null;
    for _ in 0..300 {
        list = c.tool(ss, "browser_list", json!({})).await.unwrap();
        let withheld = list["tabs"].as_array().unwrap().iter().filter(|t| t["url"] == shown.as_str()).count();
        if withheld == 2 && entry(&list, &taken)["url"] == shown.as_str() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let user_tab = list["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["url"] == shown.as_str() && t["tab"] != taken)
        .unwrap_or_else(|| panic!("the user's denied tab is listed by its origin: {list}"))["tab"]
        .clone();
    assert_eq!(entry(&list, &taken)["url"], shown.as_str(), "{list}");
    for tab in [&taken, &user_tab] {
        assert!(entry(&list, tab).get("title").is_none_or(Value::is_null), "no title: {list}");
    }
    assert_eq!(entry(&list, &kept)["url"], allowed.as_str(), "{list}");
    assert!(!list.to_string().contains(TITLE) && !list.to_string().contains("policy-landing"), "{list}");

    let status = c.tool(ss, "browser_status", json!({})).await.unwrap();
    let mine = entry(&status, &taken);
    assert_eq!(mine["url"], shown.as_str(), "{status}");
    assert!(mine.get("title").is_none_or(Value::is_null), "{status}");
    assert!(!status.to_string().contains(TITLE) && !status.to_string().contains("policy-landing"), "{status}");

    let all = serde_json::to_value(c.call(&StatusParams { session: None }).await.unwrap()).unwrap();
    assert!(!all.to_string().contains(TITLE) && !all.to_string().contains("policy-landing"), "{all}");
    assert_eq!(entry(&all, &taken)["url"], shown.as_str(), "{all}");
    assert_eq!(entry(&all, &kept)["url"], allowed.as_str(), "{all}");
    s.stop().await;
}
