//! Popups on a real managed Chromium: a tab opened by an agent tab during the agent's action (a `target=_blank`
//! link) is the session's scratch tab — listed as the agent's, named in the action's effects, closed at turn end —
//! while the user's own tabs, and a popup the page opens outside any agent action, stay the user's.

mod real_browser;

use browserd_protocol::lifecycle::{TurnEndParams, TurnEndReason};
use real_browser::{Real, ref_of};
use serde_json::{Value, json};

fn find<'a>(listed: &'a Value, url_part: &str) -> Option<&'a Value> {
    listed["tabs"].as_array().unwrap().iter().find(|t| t["url"].as_str().unwrap_or_default().contains(url_part))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_popup_is_a_scratch_tab_and_user_tabs_stay_the_users() {
    let r = Real::start("thread-popups").await;
    let opener = r.tool("browser_open", json!({"url": r.site.url("/popup.html")})).await["tab"].clone();
    let obs = r.tool("browser_observe", json!({"tab": opener})).await;
    let link = ref_of(obs["untrustedContent"].as_str().unwrap(), "link \"Open in new tab\"");
    let clicked = r.tool("browser_act", json!({"tab": opener, "action": "click", "target": link})).await;
    assert_eq!(clicked["outcome"], "succeeded", "{clicked}");
    let opened = clicked["effects"]["tabsOpened"].as_array().expect("the effects name the new tab").clone();
    assert_eq!(opened.len(), 1, "{clicked}");

    let user = r.user().await;
    user.open(&r.site.url("/index.html?mine=1")).await;
    user.run_in("/popup.html", "window.open('/popup-target.html?via=page', '_blank')").await;

    // The page's popup loads on its own time: list until it shows its URL.
    let mut listed = r.tool("browser_list", json!({})).await;
    for _ in 0..200 {
        if find(&listed, "via=page").is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        listed = r.tool("browser_list", json!({})).await;
    }
    let popup = find(&listed, "via=link").unwrap_or_else(|| panic!("the popup is listed: {listed}")).clone();
    assert_eq!(popup["provenance"], "agentCreated", "{listed}");
    assert_eq!(popup["tab"], opened[0], "the effect names the same tab id as browser_list");
    let mine = find(&listed, "mine=1").unwrap_or_else(|| panic!("the user's tab is listed: {listed}"));
    assert_eq!(mine["provenance"], "user", "{listed}");
    let by_page = find(&listed, "via=page").unwrap_or_else(|| panic!("the page's popup is listed: {listed}"));
    assert_eq!(by_page["provenance"], "user", "opened outside an agent action: {listed}");

    // The agent can work in its popup like in any of its tabs.
    let seen = r.tool("browser_observe", json!({"tab": popup["tab"]})).await;
    assert!(seen["untrustedContent"].as_str().unwrap().contains("Popup target"), "{seen}");

    let end =
        r.c.call(&TurnEndParams { session: r.s.clone(), reason: TurnEndReason::HostStop, host_turn_id: None })
            .await
            .unwrap();
    assert!(end.ok, "{end:?}");
    let closed: Vec<u64> = end.closed.iter().map(|t| t.0).collect();
    assert!(closed.contains(&popup["tab"].as_u64().unwrap()), "the popup is closed with the scratch tab: {end:?}");
    assert!(closed.contains(&opener.as_u64().unwrap()), "{end:?}");
    let listed = r.tool("browser_list", json!({})).await;
    assert!(find(&listed, "via=link").is_none(), "{listed}");
    assert!(find(&listed, "mine=1").is_some() && find(&listed, "via=page").is_some(), "user tabs stay: {listed}");
    r.finish().await;
}
