//! Real-Chromium provider tests: tabs over the Target domain, events, claims, debugger attach/detach, capabilities,
//! and the remote-endpoint transport against a locally launched Chromium.
mod common;

use std::time::Duration;

use browserd_chromium::{ChromiumConfig, ChromiumProvider};
use browserd_core::provider::{
    Capability, CapabilityState, CreateTab, HandleAllocator, OpContext, Provider, ProviderErrorKind, ProviderEvent,
    SessionKey, UnsupportedReason,
};
use browserd_protocol::{ActParams, ActionKind, Expectation, ObserveParams, Outcome, Postcondition};
use common::{Page, ctx, env, ref_of};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tabs_are_created_listed_activated_and_closed_with_confirmation() {
    let p = &env().provider;
    let mut events = p.events();
    let info =
        p.create_tab(&ctx(), CreateTab { url: env().site.url("/form.html"), ..Default::default() }).await.unwrap();
    let tabs = p.list_tabs(&ctx()).await.unwrap();
    assert!(tabs.iter().any(|t| t.tab == info.tab));
    p.activate_tab(&ctx(), info.tab).await.unwrap();
    p.close_tab(&ctx(), info.tab).await.unwrap();
    assert!(!p.list_tabs(&ctx()).await.unwrap().iter().any(|t| t.tab == info.tab));
    // Closing again is a no-op; acting on it says the tab is gone.
    p.close_tab(&ctx(), info.tab).await.unwrap();
    let err = p.observe(&ctx(), info.tab, &ObserveParams::default()).await.unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::TabGone);
    let mut closed_by_us = false;
    while let Ok(Ok(ev)) = tokio::time::timeout(Duration::from_millis(500), events.recv()).await {
        if let ProviderEvent::TabClosed { tab, by_user } = ev
            && tab == info.tab
        {
            assert!(!by_user);
            closed_by_us = true;
            break;
        }
    }
    assert!(closed_by_us);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn popups_emit_tab_created_with_opener_and_self_close_is_by_user() {
    let p = &env().provider;
    let page = Page::open("/popup.html").await;
    let mut events = p.events();
    let o = page.observe().await;
    let win = ref_of(&o, "button \"Open window\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&win).expect(Expectation::NewTab)).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    let mut popup = None;
    while let Ok(Ok(ev)) = tokio::time::timeout(Duration::from_secs(2), events.recv()).await {
        if let ProviderEvent::TabCreated(info) = ev
            && info.opener == Some(page.tab)
        {
            popup = Some(info.tab);
            break;
        }
    }
    let popup = popup.expect("TabCreated with the opener");
    assert_eq!(r.effects.tabs_opened, vec![browserd_protocol::TabId(popup.0)]);
    // The page closes itself: reported as not closed by browserd.
    let r = p
        .act(&ctx(), popup, &ActParams::new(ActionKind::Navigate).value("javascript:window.close()").timeout_ms(3000))
        .await;
    let _ = r;
    let mut by_user = None;
    while let Ok(Ok(ev)) = tokio::time::timeout(Duration::from_secs(3), events.recv()).await {
        if let ProviderEvent::TabClosed { tab, by_user: b } = ev
            && tab == popup
        {
            by_user = Some(b);
            break;
        }
    }
    assert_eq!(by_user, Some(true));
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_are_recorded_per_session() {
    let p = &env().provider;
    let page = Page::open("/form.html").await;
    let a = OpContext::new(SessionKey("a".into()), Duration::from_secs(5), "t");
    let b = OpContext::new(SessionKey("b".into()), Duration::from_secs(5), "t");
    p.claim_tab(&a, page.tab).await.unwrap();
    p.claim_tab(&a, page.tab).await.unwrap();
    let err = p.claim_tab(&b, page.tab).await.unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Refused);
    assert!(err.message.contains("release"));
    p.release_tab(&b, page.tab).await.unwrap();
    assert!(p.claim_tab(&b, page.tab).await.is_err(), "b's release does not drop a's claim");
    p.release_tab(&a, page.tab).await.unwrap();
    p.claim_tab(&b, page.tab).await.unwrap();
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debugger_detach_is_idempotent_and_observe_reattaches() {
    let p = &env().provider;
    let page = Page::open("/dialogs.html").await;
    let o = page.observe().await;
    p.detach_debugger(&ctx(), page.tab).await.unwrap();
    p.detach_debugger(&ctx(), page.tab).await.unwrap();
    // Refs of the same document survive a detach/attach cycle.
    p.attach_debugger(&ctx(), page.tab).await.unwrap();
    p.attach_debugger(&ctx(), page.tab).await.unwrap();
    let again = page.observe().await;
    assert_eq!(ref_of(&o, "Show alert"), ref_of(&again, "Show alert"));
    let alert = ref_of(&again, "Show alert");
    let r = page.act(ActParams::new(ActionKind::Click).target(&alert).expect(Expectation::Dialog)).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    let r = page
        .act(ActParams::new(ActionKind::Dialog).expect(Expectation::TextPresent { text: "alert closed".into() }))
        .await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capabilities_say_why_something_is_missing() {
    let p = &env().provider;
    let caps = p.capabilities();
    assert!(caps.missing_for_turn_cleanup().is_empty());
    assert!(caps.supports(Capability::Screenshots) && caps.supports(Capability::CrossOriginFrames));
    assert!(caps.supports(Capability::Upload) && caps.supports(Capability::Downloads));
    match caps.0.get(&Capability::TabGroups) {
        Some(CapabilityState::Unsupported { reason: UnsupportedReason::ByImplementation, detail }) => {
            assert!(detail.contains("unsupported"));
        }
        other => panic!("{other:?}"),
    }
    let info = p.connect(&ctx()).await.unwrap();
    assert!(info.product.contains("Chrome"), "{}", info.product);
}

/// A Chromium launched here and reached as a remote endpoint (its DevTools port), as a grid's browser is: the
/// process (killed when dropped), its profile directory and the provider connected to it.
async fn remote() -> (tokio::process::Child, tempfile::TempDir, std::sync::Arc<ChromiumProvider>) {
    let dir = tempfile::tempdir().unwrap();
    let child = tokio::process::Command::new(browserd_cdp::find_executable(None).unwrap())
        .args([
            "--headless=new",
            "--no-sandbox",
            "--remote-debugging-port=0",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--disable-sync",
            "--disable-gpu",
            "--disable-quic",
            &format!("--user-data-dir={}", dir.path().join("profile").display()),
            "about:blank",
        ])
        .env("XDG_CONFIG_HOME", dir.path().join("xdg"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let port_file = dir.path().join("profile").join("DevToolsActivePort");
    let mut text = String::new();
    for _ in 0..200 {
        if let Ok(t) = std::fs::read_to_string(&port_file)
            && t.lines().count() >= 2
        {
            text = t;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut lines = text.lines();
    let url = format!("ws://127.0.0.1:{}{}", lines.next().expect("a port"), lines.next().expect("a path"));
    let p = ChromiumProvider::connect_remote(&url, HandleAllocator::new(), ChromiumConfig::default()).await.unwrap();
    (child, dir, p)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_endpoint_provider_observes_and_acts() {
    let (mut child, _dir, p) = remote().await;
    assert_eq!(p.kind(), browserd_core::provider::ProviderKind::Remote);
    assert!(!p.capabilities().supports(Capability::Upload));
    let tab = p.create_tab(&ctx(), CreateTab::default()).await.unwrap().tab;
    let html = "data:text/html,<title>r</title><button onclick=\"this.textContent='done'\">Go</button>";
    let r = p.act(&ctx(), tab, &ActParams::new(ActionKind::Navigate).value(html)).await.unwrap();
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let o = p.observe(&ctx(), tab, &ObserveParams::default()).await.unwrap();
    let go = ref_of(&o, "button \"Go\"");
    let r = p
        .act(
            &ctx(),
            tab,
            &ActParams::new(ActionKind::Click)
                .target(&go)
                .expect(Expectation::Appears { role: Some("button".into()), name: Some("done".into()) }),
        )
        .await
        .unwrap();
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    p.close_tab(&ctx(), tab).await.unwrap();
    child.kill().await.unwrap();
}

/// Regression: observing a tab the moment it was created used to see the initial empty document (0 nodes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observing_right_after_create_sees_the_loaded_page() {
    let p = &env().provider;
    for _ in 0..3 {
        let info =
            p.create_tab(&ctx(), CreateTab { url: env().site.url("/form.html"), ..Default::default() }).await.unwrap();
        let o = p.observe(&ctx(), info.tab, &ObserveParams::default()).await.unwrap();
        assert!(o.url.ends_with("/form.html"), "observed {} instead of the page", o.url);
        assert!(o.untrusted_content.contains("textbox \"Full name\""), "{}", o.untrusted_content);
        p.close_tab(&ctx(), info.tab).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_tab_says_so_until_an_action_brings_it_forward() {
    // A remote browser keeps its tabs in one window: a tab opened in the background runs no rendering steps, so
    // what its page draws on an animation frame is not there yet. The observation says so; an action on the tab
    // brings it forward, and the page then shows what it draws.
    let (mut child, _dir, p) = remote().await;
    let front_url = "data:text/html,<title>f</title><p>Front page</p>".to_owned();
    let front = p.create_tab(&ctx(), CreateTab { url: front_url, ..Default::default() }).await.unwrap().tab;
    let o = p.observe(&ctx(), front, &ObserveParams::default()).await.unwrap();
    assert_eq!(o.untrusted_content, "Front page", "a tab in front has no note");
    let html = "data:text/html,<title>b</title><p id=s>Waiting for a frame</p><button>Go</button>\
                <script>requestAnimationFrame(() => { s.textContent = 'Drawn on a frame'; })</script>";
    let back =
        p.create_tab(&ctx(), CreateTab { url: html.into(), background: true, ..Default::default() }).await.unwrap().tab;
    let o = p.observe(&ctx(), back, &ObserveParams::default()).await.unwrap();
    let first = o.untrusted_content.lines().next().unwrap_or_default();
    assert!(first.starts_with("(background tab:"), "{}", o.untrusted_content);
    assert!(o.untrusted_content.contains("Waiting for a frame"), "{}", o.untrusted_content);
    let go = ref_of(&o, "button \"Go\"");
    let r = p.act(&ctx(), back, &ActParams::new(ActionKind::Hover).target(&go)).await.unwrap();
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let o = p.observe(&ctx(), back, &ObserveParams::default()).await.unwrap();
    assert!(!o.untrusted_content.contains("(background tab:"), "{}", o.untrusted_content);
    assert!(o.untrusted_content.contains("Drawn on a frame"), "{}", o.untrusted_content);
    // The tab that went behind it now says so.
    let o = p.observe(&ctx(), front, &ObserveParams::default()).await.unwrap();
    assert!(o.untrusted_content.starts_with("(background tab:"), "{}", o.untrusted_content);
    child.kill().await.unwrap();
}
