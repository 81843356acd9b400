//! End-to-end tests of the real-profile path in headless Chromium: the real extension, the real native host (this
//! crate's binary, installed with `install`), the endpoint, the relay transport and the Chromium provider on top.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use browserd_cdp::{Cdp, ConnectionOptions, SessionId};
use browserd_chromium::{ChromiumConfig, ChromiumProvider};
use browserd_core::provider::{
    CreateTab, HandleAllocator, OpContext, Provider, ProviderErrorKind, ProviderKind, SessionKey,
};
use browserd_native::install::DEV_EXTENSION_ID;
use browserd_native::link::{ExtensionError, ExtensionLink, LinkEvent};
use browserd_protocol::hello::capability;
use browserd_protocol::{ActParams, ActionKind, Dispatch, Expectation, ObserveParams, Outcome};
use serde_json::{Value, json};

const AGENT: &str = "agent-a";

fn ctx() -> OpContext {
    OpContext::new(SessionKey(AGENT.into()), Duration::from_secs(20), "trace-ext")
}

fn provider(link: &ExtensionLink) -> (Arc<ChromiumProvider>, Cdp) {
    let cdp = Cdp::spawn(link.relay_transport(AGENT), ConnectionOptions::default());
    let p =
        ChromiumProvider::new(cdp.clone(), ProviderKind::Extension, HandleAllocator::new(), ChromiumConfig::default());
    (p, cdp)
}

fn refused_code(e: &ExtensionError) -> &str {
    match e {
        ExtensionError::Refused { code, .. } => code,
        other => panic!("expected a refusal, got {other}"),
    }
}

async fn tab_id_of(link: &ExtensionLink, url: &str) -> i64 {
    for _ in 0..100 {
        if let Some(t) = link.list_tabs().await.unwrap().into_iter().find(|t| t.url == url) {
            return t.tab_id;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no tab with url {url}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairs_with_hello_capabilities_and_answers_probe() {
    let h = common::start().await;
    let info = h.link.info();
    assert_eq!(info.extension_id, DEV_EXTENSION_ID);
    assert_eq!(info.protocol_version, 1);
    for c in capability::REQUIRED_FOR_AUTO_TURN_CLEANUP {
        assert!(info.capabilities.contains(c), "missing {c}: {info:?}");
    }
    assert!(info.missing_for_auto_turn_cleanup.is_empty());
    assert_eq!(info.components.get("extension").map(String::as_str), Some("0.1.0"));
    assert!(info.user_agent.contains("Chrome/"), "{}", info.user_agent);
    assert!(info.control_epoch >= 1);
    let probed = browserd_native::link::probe(&h.socket).await.unwrap().expect("paired");
    assert_eq!(probed["extensionId"], DEV_EXTENSION_ID);
    // A restarted (here: fresh) service worker has no lease.
    let status = h.link.status().await.unwrap();
    assert_eq!(status["gate"]["leases"], json!([]));
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_observes_and_clicks_through_the_relay() {
    let h = common::start().await;
    let (p, cdp) = provider(&h.link);
    let info = p.connect(&ctx()).await.unwrap();
    assert_eq!(info.kind, ProviderKind::Extension);
    assert!(info.product.contains("Chrome/"), "{}", info.product);

    let url = h.site.url("/duplicates.html");
    let tab = p.create_tab(&ctx(), CreateTab { url: url.clone(), ..Default::default() }).await.unwrap();
    let tab_id = tab_id_of(&h.link, &url).await;
    let owners = h.link.owners().await.unwrap();
    assert!(owners.iter().any(|o| o.tab_id == tab_id && o.session == AGENT && o.kind == "created"), "{owners:?}");

    // Raw CDP through the relay, and its round trip.
    let targets = cdp.call(None, "Target.getTargets", json!({}), Duration::from_secs(10)).await.unwrap();
    let target = targets["targetInfos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["url"] == url.as_str())
        .expect("the tab is listed")["targetId"]
        .clone();
    let att = cdp
        .call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}), Duration::from_secs(10))
        .await
        .unwrap();
    let s = SessionId(att["sessionId"].as_str().unwrap().to_owned());
    let mut rtts = Vec::new();
    for i in 0..220 {
        let t0 = Instant::now();
        let r = cdp
            .call(
                Some(&s),
                "Runtime.evaluate",
                json!({"expression": "1+1", "returnByValue": true}),
                Duration::from_secs(10),
            )
            .await
            .unwrap();
        if i >= 20 {
            rtts.push(t0.elapsed().as_secs_f64() * 1000.0);
        }
        assert_eq!(r["result"]["value"], 2);
    }
    rtts.sort_by(f64::total_cmp);
    let q = |f: f64| rtts[((rtts.len() as f64 - 1.0) * f).round() as usize];
    eprintln!(
        "relay CDP round trip (Runtime.evaluate 1+1, n={}, debug build): p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        rtts.len(),
        q(0.5),
        q(0.95),
        q(0.99),
        rtts[rtts.len() - 1]
    );

    // Observe and click: input needs the lease (fence) granted to the tab.
    let o = p.observe(&ctx(), tab.tab, &ObserveParams::default()).await.unwrap();
    let line = o
        .untrusted_content
        .lines()
        .find(|l| l.contains("button \"Delete\" (in \"Team lunch\""))
        .expect(&o.untrusted_content);
    let r#ref = browserd_protocol::line_ref(line).expect("a ref line");
    let click = ActParams::new(ActionKind::Click)
        .target(r#ref)
        .expect(Expectation::TextPresent { text: "Deleted: Inbox / Team lunch".into() });
    let gate = |s: &Value, what: &str| s["gate"][what].as_u64().unwrap();
    let before = h.link.status().await.unwrap();
    let refused = p.act(&ctx(), tab.tab, &click).await;
    let refused_ok = match &refused {
        Ok(r) => r.outcome != Outcome::Succeeded && r.dispatch == Dispatch::NotDispatched,
        Err(_) => true,
    };
    assert!(refused_ok, "a click without a lease must not succeed, and nothing reached the page: {refused:?}");
    // The move and the press are sent together, and the gate refuses each of them.
    let after = h.link.status().await.unwrap();
    assert_eq!(gate(&after, "refused") - gate(&before, "refused"), 2, "{after}");
    assert_eq!(gate(&after, "dispatched"), gate(&before, "dispatched"), "{after}");
    h.link.grant_lease(AGENT, tab_id, 1).await.unwrap();
    let r = p.act(&ctx(), tab.tab, &click).await.unwrap();
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    // Each of the move, the press and the release passed the gate on its own.
    let clicked = h.link.status().await.unwrap();
    assert_eq!(gate(&clicked, "dispatched") - gate(&after, "dispatched"), 3, "{clicked}");

    p.close_tab(&ctx(), tab.tab).await.unwrap();
    assert!(h.link.list_tabs().await.unwrap().iter().all(|t| t.tab_id != tab_id));
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ownership_records_gate_close_and_release() {
    let h = common::start().await;
    let (p, _cdp) = provider(&h.link);
    p.connect(&ctx()).await.unwrap();
    // A user's tab: opened outside the extension (over the harness's own DevTools pipe), so no ownership record.
    let user_url = h.site.url("/index.html");
    h.browser.cdp().call(None, "Target.createTarget", json!({"url": user_url}), Duration::from_secs(10)).await.unwrap();
    let user_tab = tab_id_of(&h.link, &user_url).await;
    let listed = p.list_tabs(&ctx()).await.unwrap();
    let handle = listed.iter().find(|t| t.url == user_url).expect("provider lists the user's tab").tab;
    let err = p.close_tab(&ctx(), handle).await.unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Refused, "{err}");
    assert!(err.to_string().contains("NOT_OWNER"), "{err}");
    // Another session's tab is refused too.
    let other = h.link.create_tab("agent-b", &h.site.url("/form.html"), false).await.unwrap();
    let e = h.link.close_tab(AGENT, other.tab_id).await.unwrap_err();
    assert_eq!(refused_code(&e), "NOT_OWNER");
    let e = h.link.claim_tab(AGENT, other.tab_id).await.unwrap_err();
    assert_eq!(refused_code(&e), "NOT_OWNER");
    // Claiming the user's tab lets the agent use it, but never close it: release keeps the page.
    let rec = h.link.claim_tab(AGENT, user_tab).await.unwrap();
    assert_eq!((rec.session.as_str(), rec.kind.as_str()), (AGENT, "claimed"));
    let e = h.link.close_tab(AGENT, user_tab).await.unwrap_err();
    assert_eq!(refused_code(&e), "NOT_OWNER");
    h.link.release_tab(AGENT, user_tab).await.unwrap();
    let tabs = h.link.list_tabs().await.unwrap();
    let still = tabs.iter().find(|t| t.tab_id == user_tab).expect("the released tab stays open");
    assert!(still.owner.is_none());
    // One named, coloured group per agent session.
    let mine = h.link.create_tab(AGENT, &h.site.url("/form.html"), false).await.unwrap();
    let mine2 = h.link.create_tab(AGENT, &h.site.url("/toast.html"), false).await.unwrap();
    assert!(mine.group_id >= 0 && mine.group_id == mine2.group_id, "{mine:?} {mine2:?}");
    assert!(other.group_id >= 0 && other.group_id != mine.group_id);
    // Updating (activating, navigating) needs ownership too.
    h.link.call("tabs.update", json!({"session": AGENT, "tabId": mine.tab_id, "active": true})).await.unwrap();
    let e =
        h.link.call("tabs.update", json!({"session": AGENT, "tabId": other.tab_id, "active": true})).await.unwrap_err();
    assert_eq!(refused_code(&e), "NOT_OWNER");
    // A resync snapshot lists every tab with its owner and the current event number.
    let snap = h.link.call("resync", json!({})).await.unwrap();
    assert!(snap["seq"].as_u64().unwrap() > 0);
    let listed = snap["tabs"].as_array().unwrap();
    assert!(listed.iter().any(|t| t["tabId"] == mine.tab_id && t["owner"]["session"] == AGENT), "{snap}");
    // Closing one owned tab never closes its group's other tabs.
    h.link.close_tab(AGENT, mine.tab_id).await.unwrap();
    let tabs = h.link.list_tabs().await.unwrap();
    assert!(tabs.iter().any(|t| t.tab_id == mine2.tab_id && t.group_id == mine2.group_id));
    // The owner may close its own tab; the group it was in is untouched for others.
    h.link.close_tab("agent-b", other.tab_id).await.unwrap();
    h.stop().await;
}

async fn input(link: &ExtensionLink, tab_id: i64, fence: Value, kind: &str) -> Result<Value, ExtensionError> {
    link.call(
        "cdp.send",
        json!({"target": {"tabId": tab_id}, "method": "Input.dispatchMouseEvent",
               "params": {"type": kind, "x": 20, "y": 20, "button": "left", "clickCount": 1}, "fence": fence}),
    )
    .await
}

async fn counted_tab(h: &common::Harness) -> i64 {
    let url = h.site.url("/index.html");
    let tab = h.link.create_tab(AGENT, &url, true).await.unwrap();
    h.link.call("debugger.attach", json!({"session": AGENT, "tabId": tab.tab_id})).await.unwrap();
    // Install the counters in the loaded document, not in the initial about:blank one.
    let expression = format!(
        "(location.href === {url:?} && document.readyState === 'complete') ? (window.__n = 0, \
         addEventListener('mousedown', () => __n++, true), addEventListener('mouseup', () => __n++, true), true) : false"
    );
    for _ in 0..200 {
        let r = h
            .link
            .call(
                "cdp.send",
                json!({"target": {"tabId": tab.tab_id}, "method": "Runtime.evaluate", "params": {"expression": expression, "returnByValue": true}}),
            )
            .await
            .unwrap();
        if r["result"]["value"] == true {
            return tab.tab_id;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{url} did not load");
}

async fn page_count(link: &ExtensionLink, tab_id: i64) -> i64 {
    link.call("debugger.attach", json!({"session": AGENT, "tabId": tab_id})).await.unwrap();
    let r = link
        .call(
            "cdp.send",
            json!({"target": {"tabId": tab_id}, "method": "Runtime.evaluate", "params": {"expression": "window.__n", "returnByValue": true}}),
        )
        .await
        .unwrap();
    r["result"]["value"].as_i64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_hop_gate_refuses_stale_fencing_tokens() {
    let h = common::start().await;
    let tab = counted_tab(&h).await;
    let epoch = h.link.control_epoch();
    let e = input(&h.link, tab, Value::Null, "mousePressed").await.unwrap_err();
    assert_eq!(refused_code(&e), "LEASE_REVOKED", "no lease, no input: {e}");
    h.link.grant_lease(AGENT, tab, 5).await.unwrap();
    let e = input(&h.link, tab, json!({"token": 4, "epoch": epoch}), "mousePressed").await.unwrap_err();
    assert_eq!(refused_code(&e), "LEASE_REVOKED", "{e}");
    assert!(e.to_string().contains("stale fencing token"), "{e}");
    let e = input(&h.link, tab, json!({"token": 5, "epoch": epoch - 1}), "mousePressed").await.unwrap_err();
    assert_eq!(refused_code(&e), "LEASE_REVOKED", "{e}");
    input(&h.link, tab, json!({"token": 5, "epoch": epoch}), "mousePressed").await.unwrap();
    input(&h.link, tab, json!({"token": 5, "epoch": epoch}), "mouseReleased").await.unwrap();
    // Tokens only go up; another session cannot take a lease on a tab it does not own.
    let e = h.link.grant_lease(AGENT, tab, 3).await.unwrap_err();
    assert_eq!(refused_code(&e), "LEASE_REVOKED");
    let e = h.link.grant_lease("agent-b", tab, 9).await.unwrap_err();
    assert_eq!(refused_code(&e), "NOT_OWNER");
    assert_eq!(page_count(&h.link, tab).await, 2, "exactly the two fenced inputs reached the page");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_closes_the_gate_and_no_input_follows() {
    let h = common::start().await;
    let mut events = h.link.events();
    let tab = counted_tab(&h).await;
    let fence = h.link.grant_lease(AGENT, tab, 1).await.unwrap();
    let fence = json!({"token": fence.token, "epoch": fence.epoch});
    // Streams of input in flight (8 concurrent senders), then Stop from the broker once some have landed.
    let acked = Arc::new(std::sync::atomic::AtomicI64::new(0));
    let mut calls = Vec::new();
    for w in 0..8 {
        let link = h.link.clone();
        let fence = fence.clone();
        let acked = acked.clone();
        calls.push(tokio::spawn(async move {
            let mut ok = 0i64;
            let mut refusals = Vec::new();
            for i in 0..40 {
                let kind = if (w + i) % 2 == 0 { "mousePressed" } else { "mouseReleased" };
                match input(&link, tab, fence.clone(), kind).await {
                    Ok(_) if refusals.is_empty() => {
                        ok += 1;
                        acked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    Ok(_) => panic!("input acknowledged after a refusal"),
                    Err(e) => refusals.push(refused_code(&e).to_owned()),
                }
            }
            (ok, refusals)
        }));
    }
    while acked.load(std::sync::atomic::Ordering::SeqCst) < 12 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let report = h.link.stop("test stop").await.unwrap();
    assert_eq!(report.via, "broker");
    assert!(report.control_epoch > fence["epoch"].as_u64().unwrap());
    assert!(report.detached.contains(&tab), "{report:?}");
    let mut ok = 0;
    let mut refused = 0;
    let mut unknown = 0;
    for c in calls {
        let (n, refusals) = c.await.unwrap();
        ok += n;
        refused += refusals.len();
        for code in refusals {
            match code.as_str() {
                "USER_STOPPED" | "LEASE_REVOKED" => {}
                // handed to the browser just before Stop, failed as Stop detached: outcome unknown, never replayed
                "DISPATCH_UNKNOWN" => unknown += 1,
                other => panic!("unexpected refusal {other}"),
            }
        }
    }
    assert!(ok >= 12 && refused > 0, "ok {ok}, refused {refused}");
    eprintln!(
        "stop drill: {ok} of 320 inputs acknowledged before Stop, {refused} refused ({unknown} in flight at Stop), {} dropped from the queue",
        report.dropped_inputs
    );
    // Everything after Stop is refused, with or without the old fence.
    let e = input(&h.link, tab, fence.clone(), "mousePressed").await.unwrap_err();
    assert_eq!(refused_code(&e), "USER_STOPPED", "{e}");
    // The broker hears about it, the page is kept, and only inputs acknowledged before Stop reached the page.
    let stopped = loop {
        match tokio::time::timeout(Duration::from_secs(10), events.recv()).await.unwrap().unwrap() {
            LinkEvent::Stopped(r) => break r,
            _ => continue,
        }
    };
    assert_eq!(stopped.control_epoch, report.control_epoch);
    assert!(h.link.list_tabs().await.unwrap().iter().any(|t| t.tab_id == tab), "Stop keeps the page");
    // The debugger does not attach to the stopped tab again until a resume grants it a new lease, under the new
    // epoch.
    let e = h.link.call("debugger.attach", json!({"session": AGENT, "tabId": tab})).await.unwrap_err();
    assert_eq!(refused_code(&e), "USER_STOPPED", "{e}");
    let fresh = h.link.grant_lease(AGENT, tab, 2).await.unwrap();
    assert_eq!(fresh.epoch, report.control_epoch);
    let landed = page_count(&h.link, tab).await;
    assert!(
        landed >= ok && landed <= ok + unknown,
        "{landed} inputs reached the page; {ok} acknowledged, {unknown} unknown"
    );
    input(&h.link, tab, json!({"token": 2, "epoch": fresh.epoch}), "mousePressed").await.unwrap();
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chrome_pages_are_unsupported_plainly() {
    let h = common::start().await;
    h.browser
        .cdp()
        .call(None, "Target.createTarget", json!({"url": "chrome://version/"}), Duration::from_secs(10))
        .await
        .unwrap();
    let tab = tab_id_of(&h.link, "chrome://version/").await;
    // The scheme gate refuses the browser's own pages before chrome.debugger is asked (tests/extension_schemes.rs).
    let e = h.link.claim_tab(AGENT, tab).await.unwrap_err();
    assert_eq!(refused_code(&e), "POLICY_DENIED", "{e}");
    let e = h.link.call("debugger.attach", json!({"session": AGENT, "tabId": tab})).await.unwrap_err();
    assert!(matches!(refused_code(&e), "POLICY_DENIED" | "NOT_OWNER"), "{e}");
    // Target.getTargets itself is not allowed through chrome.debugger; the relay answers it from getTargets.
    let (_p, cdp) = provider(&h.link);
    let all = cdp.call(None, "Target.getTargets", json!({}), Duration::from_secs(10)).await.unwrap();
    assert!(all["targetInfos"].as_array().unwrap().iter().any(|t| t["url"] == "chrome://version/"));
    let e = cdp.call(None, "Browser.close", json!({}), Duration::from_secs(10)).await.unwrap_err();
    assert!(e.to_string().contains("unsupported over the extension relay"), "{e}");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_over_one_mib_reach_the_extension_in_chunks() {
    let h = common::start().await;
    let tab = counted_tab(&h).await;
    // 2.5 MB of expression text: one frame that size would kill the port; chunked, it arrives whole.
    let n = 2_500_000;
    let expression = format!("'{}'.length", "x".repeat(n));
    let r = h
        .link
        .call("cdp.send", json!({"target": {"tabId": tab}, "method": "Runtime.evaluate", "params": {"expression": expression, "returnByValue": true}}))
        .await
        .unwrap();
    assert_eq!(r["result"]["value"], n);
    // The port survived: the next small call works and the service worker is the same instance.
    let status = h.link.status().await.unwrap();
    assert_eq!(status["instance"], h.link.info().instance.as_str());
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_native_host_reconnects_with_ownership_intact() {
    let mut h = common::start().await;
    let tab = h.link.create_tab(AGENT, &h.site.url("/index.html"), false).await.unwrap();
    let old = h.link.info().clone();
    let t0 = Instant::now();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(old.host_pid as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    let reason = h.link.wait_closed().await;
    assert!(reason.contains("native host"), "{reason}");
    let e = h.link.list_tabs().await.unwrap_err();
    assert!(matches!(e, ExtensionError::Closed { .. }), "{e}");
    let link = tokio::time::timeout(Duration::from_secs(30), h.links.recv()).await.unwrap().unwrap();
    eprintln!("native host killed → extension paired again in {:.0} ms", t0.elapsed().as_secs_f64() * 1000.0);
    assert_ne!(link.info().host_pid, old.host_pid, "a new host process");
    assert_eq!(link.info().instance, old.instance, "the same service worker");
    let owners = link.owners().await.unwrap();
    assert!(owners.iter().any(|o| o.tab_id == tab.tab_id && o.session == AGENT), "{owners:?}");
    h.link = link;
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_service_worker_has_no_valid_lease() {
    let mut h = common::start().await;
    let tab = counted_tab(&h).await;
    let fence = h.link.grant_lease(AGENT, tab, 1).await.unwrap();
    let old = h.link.info().clone();
    // Stop the service worker through the harness's own DevTools pipe, then wake it with a tab event.
    let targets = h.browser.cdp().call(None, "Target.getTargets", json!({}), Duration::from_secs(10)).await.unwrap();
    let sw = targets["targetInfos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "service_worker" && t["url"].as_str().unwrap_or_default().contains(DEV_EXTENSION_ID))
        .expect("the extension's service worker")["targetId"]
        .clone();
    h.browser.cdp().call(None, "Target.closeTarget", json!({"targetId": sw}), Duration::from_secs(10)).await.unwrap();
    h.link.wait_closed().await;
    h.browser
        .cdp()
        .call(None, "Target.createTarget", json!({"url": "about:blank"}), Duration::from_secs(10))
        .await
        .unwrap();
    let link = tokio::time::timeout(Duration::from_secs(30), h.links.recv()).await.unwrap().unwrap();
    assert_ne!(link.info().instance, old.instance, "a new service-worker instance");
    assert!(link.info().control_epoch > fence.epoch, "the control epoch moved on");
    let status = link.status().await.unwrap();
    assert_eq!(status["gate"]["leases"], json!([]), "no lease survives a restart");
    assert_eq!(status["recoveredDetaches"], 1, "the old instance's debugger attachment was detached: {status}");
    let owners = link.owners().await.unwrap();
    assert!(owners.iter().any(|o| o.tab_id == tab && o.session == AGENT), "ownership records survive: {owners:?}");
    link.call("debugger.attach", json!({"session": AGENT, "tabId": tab})).await.unwrap();
    let e = input(&link, tab, json!({"token": fence.token, "epoch": fence.epoch}), "mousePressed").await.unwrap_err();
    assert_eq!(refused_code(&e), "LEASE_REVOKED", "{e}");
    h.link = link;
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn popup_shows_the_connection_and_its_stop_button_stops() {
    let h = common::start().await;
    let mut events = h.link.events();
    let tab = counted_tab(&h).await;
    let fence = h.link.grant_lease(AGENT, tab, 1).await.unwrap();
    // Open the popup page as a tab over the harness's own DevTools pipe and press its button.
    let cdp = h.browser.cdp();
    let t = Duration::from_secs(10);
    let url = format!("chrome-extension://{DEV_EXTENSION_ID}/popup.html");
    let target = cdp.call(None, "Target.createTarget", json!({"url": url}), t).await.unwrap();
    let att = cdp
        .call(None, "Target.attachToTarget", json!({"targetId": target["targetId"], "flatten": true}), t)
        .await
        .unwrap();
    let s = SessionId(att["sessionId"].as_str().unwrap().to_owned());
    let mut conn_text = String::new();
    for _ in 0..100 {
        let r = cdp
            .call(
                Some(&s),
                "Runtime.evaluate",
                json!({"expression": "document.getElementById('conn')?.textContent ?? ''", "returnByValue": true}),
                t,
            )
            .await
            .unwrap();
        conn_text = r["result"]["value"].as_str().unwrap_or_default().to_owned();
        if conn_text.contains("paired") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(conn_text.contains("paired with browserd"), "{conn_text}");
    cdp.call(Some(&s), "Runtime.evaluate", json!({"expression": "document.getElementById('stop').click()"}), t)
        .await
        .unwrap();
    let stopped = loop {
        match tokio::time::timeout(Duration::from_secs(10), events.recv()).await.unwrap().unwrap() {
            LinkEvent::Stopped(r) => break r,
            _ => continue,
        }
    };
    assert_eq!(stopped.via, "popup");
    assert!(stopped.control_epoch > fence.epoch);
    assert_eq!(h.link.control_epoch(), stopped.control_epoch, "the link learned the new epoch");
    let e = input(&h.link, tab, json!({"token": fence.token, "epoch": fence.epoch}), "mousePressed").await.unwrap_err();
    assert_eq!(refused_code(&e), "USER_STOPPED", "{e}");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oopif_content_and_clicks_go_through_flat_child_sessions() {
    let h = common::start().await;
    let (p, _cdp) = provider(&h.link);
    p.connect(&ctx()).await.unwrap();
    let url = h.site.url("/iframes.html");
    let tab = p.create_tab(&ctx(), CreateTab { url: url.clone(), ..Default::default() }).await.unwrap();
    let tab_id = tab_id_of(&h.link, &url).await;
    h.link.grant_lease(AGENT, tab_id, 1).await.unwrap();
    let mut o = p.observe(&ctx(), tab.tab, &ObserveParams::default()).await.unwrap();
    for _ in 0..50 {
        if o.untrusted_content.contains("Inner frame: cross-origin") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        o = p.observe(&ctx(), tab.tab, &ObserveParams::default()).await.unwrap();
    }
    assert!(
        o.untrusted_content.contains("Inner frame: cross-origin"),
        "the OOPIF's content is observed: {}",
        o.untrusted_content
    );
    let cross = o.untrusted_content.split("Inner frame: cross-origin").nth(1).unwrap();
    let line = cross.lines().find(|l| l.contains("button \"Inner button\"")).expect(&o.untrusted_content);
    let r#ref = browserd_protocol::line_ref(line).expect("a ref line");
    let r = p.act(&ctx(), tab.tab, &ActParams::new(ActionKind::Click).target(r#ref)).await.unwrap();
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let o = p.observe(&ctx(), tab.tab, &ObserveParams::default()).await.unwrap();
    let cross = o.untrusted_content.split("Inner frame: cross-origin").nth(1).unwrap();
    assert!(cross.contains("Inner clicks: 1"), "the click landed in the cross-origin frame: {}", o.untrusted_content);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_drops_queued_input_but_keeps_the_lease() {
    let h = common::start().await;
    let tab = counted_tab(&h).await;
    let f = h.link.grant_lease(AGENT, tab, 1).await.unwrap();
    let fence = json!({"token": f.token, "epoch": f.epoch});
    let mut calls = Vec::new();
    for i in 0..60 {
        let link = h.link.clone();
        let fence = fence.clone();
        let kind = if i % 2 == 0 { "mousePressed" } else { "mouseReleased" };
        calls.push(tokio::spawn(async move { input(&link, tab, fence, kind).await }));
    }
    // Wait until the first input has landed, so the rest are queued behind it in the extension.
    while page_count_quiet(&h.link, tab).await == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let dropped = h.link.cancel_inputs(Some(tab)).await.unwrap();
    let (mut ok, mut cancelled) = (0i64, 0u64);
    for c in calls {
        match c.await.unwrap() {
            Ok(_) => ok += 1,
            Err(e) => {
                assert_eq!(refused_code(&e), "CANCELLED", "{e}");
                cancelled += 1;
            }
        }
    }
    eprintln!("cancel drill: {ok} inputs dispatched, {cancelled} cancelled while queued");
    assert_eq!(cancelled, dropped, "every dropped input was answered CANCELLED");
    assert_eq!(page_count_quiet(&h.link, tab).await, ok, "cancelled inputs never reached the page");
    // The lease and the gate are intact.
    input(&h.link, tab, fence, "mousePressed").await.unwrap();
    h.stop().await;
}

async fn page_count_quiet(link: &ExtensionLink, tab_id: i64) -> i64 {
    let r = link
        .call(
            "cdp.send",
            json!({"target": {"tabId": tab_id}, "method": "Runtime.evaluate", "params": {"expression": "window.__n", "returnByValue": true}}),
        )
        .await
        .unwrap();
    r["result"]["value"].as_i64().unwrap()
}
