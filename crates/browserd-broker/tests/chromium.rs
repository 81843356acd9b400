//! The broker with a real managed Chromium (launched on first browser use) and the loopback fixture site:
//! open → observe → act through `tool.call`, a turn end that closes the scratch tab and keeps the marked one, and a
//! graceful shutdown that closes the browser.

use std::time::Duration;

use browserd_broker::client::{Client, ConnectOptions};
use browserd_broker::config::BrokerConfig;
use browserd_broker::lazy::BrowserTarget;
use browserd_broker::server::Broker;
use browserd_cdp::LaunchOptions;
use browserd_ipc::RuntimeDir;
use browserd_protocol::TabId;
use browserd_protocol::hello::ComponentRole;
use browserd_protocol::lifecycle::{
    AutoTurnCleanup, BridgeState, BrowserKind, HostKind, SessionOpenParams, StatusParams, ToolsActivateParams,
    TurnEndParams, TurnEndReason,
};
use browserd_test_support::fixtures::FixtureSite;
use serde_json::json;

fn ref_of(content: &str, needle: &str) -> String {
    let line = content.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle} in\n{content}"));
    browserd_protocol::line_ref(line).expect("a ref line").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managed_chromium_open_observe_act_and_turn_end() {
    let site = FixtureSite::start().await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rt");
    let rdir = RuntimeDir::ensure(&dir).unwrap();
    let target = BrowserTarget::Managed(Box::new(LaunchOptions {
        user_data_dir: Some(tmp.path().join("profile")),
        env: vec![("XDG_CONFIG_HOME".into(), tmp.path().join("xdg").display().to_string())],
        window_size: Some((1000, 800)),
        ..LaunchOptions::default()
    }));
    let broker = Broker::with_target(target, BrokerConfig { idle_exit_secs: 0, ..BrokerConfig::default() });
    let task = tokio::spawn({
        let broker = broker.clone();
        async move { broker.run(&rdir).await }
    });
    let options = ConnectOptions {
        role: ComponentRole::Cli,
        runtime_dir: Some(dir.clone()),
        spawn: false,
        timeout: Some(Duration::from_secs(60)),
        broker_exe: None,
    };
    let mut client = None;
    for _ in 0..500 {
        if let Ok(c) = Client::connect(&options).await {
            client = Some(c);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let c = client.expect("the broker listens");

    // Nothing launched yet: the browser starts on first use.
    let status = c.call(&StatusParams::default()).await.unwrap();
    assert_eq!(status.browsers[0].kind, BrowserKind::Managed);
    assert_ne!(status.browsers[0].bridge, BridgeState::Connected);

    let opened = c
        .call(&SessionOpenParams {
            host: HostKind::Codex,
            host_session_id: "thread-real".into(),
            label: None,
            policy: None,
            browser: None,
        })
        .await
        .unwrap();
    let s = opened.session;
    c.call(&ToolsActivateParams { session: s.clone(), advanced: false }).await.unwrap();

    let form = c.tool(&s, "browser_open", json!({"url": site.url("/form.html")})).await.unwrap();
    let scratch = TabId(form["tab"].as_u64().unwrap());
    let obs = c.tool(&s, "browser_observe", json!({})).await.unwrap();
    let content = obs["untrustedContent"].as_str().unwrap();
    assert!(content.contains("textbox \"Full name\""), "{content}");
    let name = ref_of(content, "textbox \"Full name\"");
    let acted = c
        .tool(
            &s,
            "browser_act",
            json!({"action": "fill", "target": name, "value": "Ada",
                   "expected": [{"kind": "value", "target": name, "equals": "Ada"}]}),
        )
        .await
        .unwrap();
    assert_eq!(acted["outcome"], "succeeded", "{acted}");
    assert_eq!(acted["postcondition"], "passed", "{acted}");

    let status = c.call(&StatusParams::default()).await.unwrap();
    assert_eq!(status.browsers[0].bridge, BridgeState::Connected);
    assert_eq!(status.browsers[0].auto_turn_cleanup, AutoTurnCleanup::Enabled, "{:?}", status.browsers[0]);

    let result = c.tool(&s, "browser_open", json!({"url": site.url("/index.html")})).await.unwrap();
    let deliverable = TabId(result["tab"].as_u64().unwrap());
    c.tool(&s, "browser_mark_deliverable", json!({"tab": deliverable.0})).await.unwrap();

    let end = c
        .call(&TurnEndParams { session: s.clone(), reason: TurnEndReason::HostStop, host_turn_id: None })
        .await
        .unwrap();
    assert!(end.ok, "{end:?}");
    assert_eq!(end.closed, vec![scratch], "{end:?}");
    assert_eq!(end.kept, vec![deliverable], "{end:?}");
    let listed = c.tool(&s, "browser_list", json!({})).await.unwrap();
    let tabs: Vec<u64> = listed["tabs"].as_array().unwrap().iter().map(|t| t["tab"].as_u64().unwrap()).collect();
    assert!(!tabs.contains(&scratch.0), "the scratch tab is gone from the browser: {listed}");
    assert!(tabs.contains(&deliverable.0), "{listed}");

    // Page tools name a tab explicitly; the default is the tab last opened or used.
    let scratch2 = c.tool(&s, "browser_open", json!({"url": site.url("/form.html")})).await.unwrap();
    let kept = c.tool(&s, "browser_observe", json!({"tab": deliverable.0})).await.unwrap();
    assert!(kept["url"].as_str().unwrap().ends_with("/index.html"), "{kept}");
    // A batch stops before a step that would leave the site, and never dispatches it.
    let batch = c
        .tool(
            &s,
            "browser_batch",
            json!({"tab": scratch2["tab"], "steps": [
                {"action": "navigate", "value": site.url("/duplicates.html")},
                {"action": "navigate", "value": site.cross_origin_url("/index.html")},
                {"action": "reload"}]}),
        )
        .await
        .unwrap();
    assert_eq!(batch["steps"].as_array().unwrap().len(), 1, "{batch}");
    assert_eq!(batch["stopped"], json!({"step": 1, "reason": "crossSite"}), "{batch}");
    assert_eq!(batch["ok"], false, "{batch}");

    c.shutdown_broker().await.unwrap();
    drop(c);
    let summary = tokio::time::timeout(Duration::from_secs(60), task).await.unwrap().unwrap().unwrap();
    assert_eq!(summary.disposed_sessions, 1);
    assert!(!dir.join("broker.sock").exists());
    site.shutdown().await;
}
