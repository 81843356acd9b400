//! The provider's news of tabs on a scripted CDP peer: every page target it learns of is announced once
//! (`TabCreated`), whether the browser's own `Target.targetCreated` came first or the tab list (`Target.getTargets`)
//! met it first. The runtime learns of tabs by these events only; a tab the list registered used to be announced by
//! nobody (the event then found it known), so `browser_list` missed a tab the user had just opened until its title or
//! URL changed.

use std::sync::Arc;
use std::time::Duration;

use browserd_chromium::{ChromiumConfig, ChromiumProvider};
use browserd_core::provider::{HandleAllocator, OpContext, Provider, ProviderEvent, ProviderKind, SessionKey};
use browserd_test_support::scripted_cdp::{Rule, ScriptedCdp, ScriptedEvent, ScriptedServer};
use serde_json::json;
use tokio::sync::broadcast;

fn ctx() -> OpContext {
    OpContext::new(SessionKey("test".into()), Duration::from_secs(10), "trace-tabs")
}

fn page(id: &str, url: &str) -> serde_json::Value {
    json!({"targetId": id, "type": "page", "url": url, "title": "", "attached": false})
}

/// A fake browser whose tab list holds two pages the provider has had no event about.
fn peer() -> (Arc<ChromiumProvider>, ScriptedServer) {
    let (cdp, server) = ScriptedCdp::new()
        .rule(Rule::reply(
            "Target.getTargets",
            json!({"targetInfos": [page("T1", "http://site/one"), page("T2", "http://site/two")]}),
        ))
        .answer_unmatched_with_empty_result()
        .spawn();
    let p = ChromiumProvider::new(cdp, ProviderKind::Remote, HandleAllocator::new(), ChromiumConfig::default());
    (p, server)
}

/// The URLs of the `TabCreated` events that arrive within a short while.
async fn created(rx: &mut broadcast::Receiver<ProviderEvent>) -> Vec<String> {
    let mut urls = Vec::new();
    while let Ok(Ok(ev)) = tokio::time::timeout(Duration::from_millis(300), rx.recv()).await {
        if let ProviderEvent::TabCreated(info) = ev {
            urls.push(info.url);
        }
    }
    urls
}

#[tokio::test]
async fn a_tab_the_list_meets_first_is_announced_once() {
    let (p, server) = peer();
    let mut rx = p.events();
    let tabs = p.list_tabs(&ctx()).await.unwrap();
    assert_eq!(tabs.len(), 2, "{tabs:?}");
    assert_eq!(created(&mut rx).await, ["http://site/one", "http://site/two"], "each new tab is announced");

    // The browser's own news of T2 comes after the list: nothing new to say.
    server
        .emit(ScriptedEvent::new(None, "Target.targetCreated", json!({"targetInfo": page("T2", "http://site/two")})))
        .await;
    // A tab only the news tells of is announced by it, as before.
    server
        .emit(ScriptedEvent::new(None, "Target.targetCreated", json!({"targetInfo": page("T3", "http://site/three")})))
        .await;
    assert_eq!(created(&mut rx).await, ["http://site/three"]);

    // A second list announces nothing again.
    p.list_tabs(&ctx()).await.unwrap();
    assert_eq!(created(&mut rx).await, Vec::<String>::new());
}
