//! The broker mounts the extension endpoint and drives the user's browser through it: a real broker (its own socket and
//! `extension.sock`), headless Chromium with the real extension, the real native host installed with `install`, and a
//! real client (`browserd_broker::client::Client`) — open, observe, act, turn end, claim/release, Stop, status, the
//! native host killed mid-action (re-pairing), the user closing a tab mid-action, Stop while a large screenshot is in
//! flight.

mod brokered;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use brokered::{Setup, ref_of};
use browserd_broker::client::Client;
use browserd_broker::config::{BrokerConfig, PolicyConfig};
use browserd_broker::policy::files::FilesConfig;
use browserd_protocol::ErrorCode;
use browserd_protocol::TabId;
use browserd_protocol::lifecycle::{
    AutoTurnCleanup, BrowserKind, HostKind, SessionOpenParams, StatusParams, ToolsActivateParams, TurnEndParams,
    TurnEndReason,
};
use serde_json::{Value, json};

/// A `fill` of `target` with `value` that checks the field holds it.
fn fill_checked(target: &str, value: &str) -> Value {
    json!({"action": "fill", "target": target, "value": value,
           "expected": [{"kind": "value", "target": target, "equals": value}]})
}

/// Starts the broker (browser = extension), installs the host, launches Chromium with the extension, connects a client.
async fn start() -> Setup {
    start_with(Vec::new()).await
}

/// [`start`] with more unpacked extensions loaded beside browserd's (a second debugger client for the drills).
async fn start_with(more_extensions: Vec<PathBuf>) -> Setup {
    mounted(brokered::start_with_extensions(BrokerConfig::default(), more_extensions).await)
}

/// [`start`] with a `[policy]` section.
async fn start_policy(policy: PolicyConfig) -> Setup {
    mounted(brokered::start(BrokerConfig { policy, ..BrokerConfig::default() }, false).await)
}

/// [`start`] with a `[files]` section.
async fn start_files(files: FilesConfig) -> Setup {
    mounted(brokered::start(BrokerConfig { files, ..BrokerConfig::default() }, false).await)
}

/// The broker mounted the extension endpoint, for its user alone.
fn mounted(h: Setup) -> Setup {
    assert!(h.socket.exists(), "the broker mounts the extension endpoint");
    let mode = std::fs::metadata(&h.socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_drives_the_extension_browser_open_observe_act_turn_end() {
    let h = start().await;
    let (c, s) = (&h.client, &h.session);

    let form = c.tool(s, "browser_open", json!({"url": h.site.url("/form.html")})).await.unwrap();
    let scratch = TabId(form["tab"].as_u64().unwrap());
    let obs = c.tool(s, "browser_observe", json!({})).await.unwrap();
    let content = obs["untrustedContent"].as_str().unwrap();
    let name = ref_of(content, "textbox \"Full name\"");
    let acted = c
        .tool(
            s,
            "browser_act",
            json!({"action": "fill", "target": name, "value": "Ada",
                   "expected": [{"kind": "value", "target": name, "equals": "Ada"}]}),
        )
        .await
        .unwrap();
    assert_eq!(acted["outcome"], "succeeded", "{acted}");

    let status = c.call(&StatusParams::default()).await.unwrap();
    let b = &status.browsers[0];
    assert_eq!(b.kind, BrowserKind::Extension, "{b:?}");
    assert_eq!(b.auto_turn_cleanup, AutoTurnCleanup::Enabled, "{b:?}");
    assert!(b.missing_capabilities.is_empty(), "{b:?}");
    let product = b.product.as_deref().unwrap_or_default();
    assert!(product.contains("browser = extension") && product.contains("in use: extension"), "{product}");
    let caps = serde_json::to_value(&b.capabilities).unwrap();
    assert!(caps.to_string().contains("turnCleanup"), "{caps}");

    let kept = c.tool(s, "browser_open", json!({"url": h.site.url("/index.html")})).await.unwrap();
    let deliverable = TabId(kept["tab"].as_u64().unwrap());
    c.tool(s, "browser_mark_deliverable", json!({"tab": deliverable.0})).await.unwrap();
    let end = c
        .call(&TurnEndParams { session: s.clone(), reason: TurnEndReason::HostStop, host_turn_id: None })
        .await
        .unwrap();
    assert!(end.ok, "{end:?}");
    assert_eq!(end.closed, vec![scratch], "{end:?}");
    assert_eq!(end.kept, vec![deliverable], "{end:?}");
    let urls: Vec<String> = h.user_tabs().await.iter().map(|t| t["url"].as_str().unwrap().to_owned()).collect();
    assert!(!urls.contains(&h.site.url("/form.html")), "the scratch tab is closed in the browser: {urls:?}");
    assert!(urls.contains(&h.site.url("/index.html")), "the deliverable stays: {urls:?}");
    assert!(h.socket.exists());
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claimed_user_tab_is_released_not_closed_and_browserd_stop_voids_old_refs() {
    let h = start().await;
    let (c, s) = (&h.client, &h.session);
    // The user's tab, opened outside browserd.
    let user_url = h.site.url("/duplicates.html");
    h.browser.cdp().call(None, "Target.createTarget", json!({"url": user_url}), Duration::from_secs(10)).await.unwrap();
    let mut user_tab = None;
    for _ in 0..100 {
        let listed = c.tool(s, "browser_list", json!({})).await.unwrap();
        user_tab = listed["tabs"].as_array().unwrap().iter().find(|t| t["url"] == user_url.as_str()).cloned();
        if user_tab.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let user_tab = user_tab.expect("the user's tab is listed");
    let tab = user_tab["tab"].as_u64().unwrap();
    c.tool(s, "browser_claim", json!({"tab": tab})).await.unwrap();
    let obs = c.tool(s, "browser_observe", json!({})).await.unwrap();
    let content = obs["untrustedContent"].as_str().unwrap();
    let delete = ref_of(content, "button \"Delete\" (in \"Team lunch\"");
    let other = ref_of(content, "button \"Delete\" (in \"Old contract\"");
    let click = json!({"action": "click", "target": delete,
                       "expected": [{"kind": "textPresent", "text": "Deleted: Inbox / Team lunch"}]});
    let acted = act_approved(c, s, click.clone()).await;
    assert_eq!(acted["outcome"], "succeeded", "{acted}");

    // Stop from the broker side (`browserd stop`): the extension closes its gate too; the next action does not pass.
    let stopped = c.stop_gate().await.unwrap();
    assert_eq!(stopped.code, ErrorCode::UserStopped);
    let click_other = json!({"action": "click", "target": other,
                             "expected": [{"kind": "textPresent", "text": "Deleted: Archive / Old contract"}]});
    // Stop is a state: the pre-Stop ref is refused before anything is sent, however often the agent retries, and
    // observing again does not resume (on the user's own browser the stopped tab is not even read: the extension's
    // debugger does not attach to it again until the resume).
    for _ in 0..2 {
        let after = c.tool(s, "browser_act", click_other.clone()).await.unwrap_err();
        assert_eq!(after.code(), ErrorCode::UserStopped, "{after}");
        let details = after.error_data().and_then(|d| d.details.clone()).unwrap_or_default();
        assert_eq!(details["staleReason"], "controlEpochChanged", "{details}");
        let read = c.tool(s, "browser_observe", json!({})).await.unwrap_err();
        assert_eq!(read.code(), ErrorCode::UserStopped, "{read}");
    }
    let status_line = h.page_text(&user_url, "document.getElementById('status').textContent").await;
    assert_eq!(status_line, "Deleted: Inbox / Team lunch", "the refused click reached nothing");
    // Resuming is explicit: `browser_claim` `resume: true` takes a new lease and a full observation.
    let resumed = c.tool(s, "browser_claim", json!({"tab": tab, "resume": true})).await.unwrap();
    assert!(resumed["resumed"]["fencingToken"].as_u64().is_some(), "{resumed}");
    let other =
        ref_of(resumed["observation"]["untrustedContent"].as_str().unwrap(), "button \"Delete\" (in \"Old contract\"");
    let resumed = act_approved(
        c,
        s,
        json!({"action": "click", "target": other,
               "expected": [{"kind": "textPresent", "text": "Deleted: Archive / Old contract"}]}),
    )
    .await;
    assert_eq!(resumed["outcome"], "succeeded", "{resumed}");

    // Turn end releases the claimed tab: it stays open.
    let end = c
        .call(&TurnEndParams { session: s.clone(), reason: TurnEndReason::HostStop, host_turn_id: None })
        .await
        .unwrap();
    assert!(end.closed.is_empty(), "a claimed tab is never closed: {end:?}");
    let urls: Vec<String> = h.user_tabs().await.iter().map(|t| t["url"].as_str().unwrap().to_owned()).collect();
    assert!(urls.contains(&user_url), "the user's tab stays open: {urls:?}");
    let listed = c.tool(s, "browser_list", json!({})).await.unwrap();
    let tab_now = listed["tabs"].as_array().unwrap().iter().find(|t| t["tab"] == tab).cloned();
    assert_eq!(tab_now.map(|t| t["provenance"].clone()), Some(json!("user")), "released back to the user: {listed}");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_in_the_extension_reports_user_stopped_to_the_caller_and_no_input_follows() {
    let h = start().await;
    let (c, s) = (&h.client, &h.session);
    let (form_url, _, name) = h.open_form(s).await;
    // The extension's popup, opened over the harness's own DevTools pipe, ready to press Stop.
    let cdp = h.browser.cdp();
    let t = Duration::from_secs(10);
    let popup = format!("chrome-extension://{}/popup.html", browserd_native::install::DEV_EXTENSION_ID);
    let target = cdp.call(None, "Target.createTarget", json!({"url": popup}), t).await;
    let target = target.unwrap_or_else(|e| panic!("{e}"));
    let att = cdp
        .call(None, "Target.attachToTarget", json!({"targetId": target["targetId"], "flatten": true}), t)
        .await
        .unwrap();
    let ps = browserd_cdp::SessionId(att["sessionId"].as_str().unwrap().to_owned());
    let mut conn_text = String::new();
    for _ in 0..200 {
        let expr = "document.getElementById('stop') ? (document.getElementById('conn')?.textContent ?? '') : ''";
        let r = cdp.call(Some(&ps), "Runtime.evaluate", json!({"expression": expr, "returnByValue": true}), t).await;
        conn_text = r.unwrap()["result"]["value"].as_str().unwrap_or_default().to_owned();
        if conn_text.contains("paired") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(conn_text.contains("paired with browserd"), "the popup shows the pairing: {conn_text}");
    // A long typing action (hundreds of key events through the relay) is in flight when the user presses Stop.
    let text = "abcdefghij".repeat(60);
    let typing = c.tool(s, "browser_act", json!({"action": "type", "target": name, "value": text}));
    let press = async {
        let expr = "document.getElementById('fullName')?.value.length ?? 0";
        loop {
            let n = h.page_text_number(&form_url, expr).await;
            if n > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let r = cdp
            .call(Some(&ps), "Runtime.evaluate", json!({"expression": "document.getElementById('stop').click()"}), t)
            .await
            .unwrap();
        assert!(r.get("exceptionDetails").is_none(), "pressing Stop failed: {r}");
    };
    let (typed, ()) = tokio::join!(typing, press);
    let e = typed.expect_err("the action in flight at Stop does not complete");
    assert_eq!(e.code(), ErrorCode::UserStopped, "{e}");
    let details = e.error_data().and_then(|d| d.details.clone()).expect("USER_STOPPED carries the Stop evidence");
    assert_eq!(details["stop"]["via"], "popup", "{details}");
    let evidence = &details["stop"]["lastEvidence"];
    assert_eq!(evidence["lastObservation"]["url"], form_url.as_str(), "{details}");
    assert_eq!(
        (evidence["lastAction"]["action"].as_str(), evidence["lastAction"]["state"].as_str()),
        (Some("type"), Some("inFlight")),
        "{details}"
    );
    assert!(details["stop"]["controlEpoch"].as_u64().unwrap() > 1, "{details}");
    let len_at_stop = h.page_text_number(&form_url, "document.getElementById('fullName').value.length").await;
    assert!(len_at_stop < 600, "Stop cut the typing short: {len_at_stop}");
    // Nothing more reaches the page: the old refs are void and the next action is refused before any input.
    let again = c.tool(s, "browser_act", json!({"action": "type", "target": name, "value": "zzz"})).await;
    let again = again.unwrap_err();
    assert_eq!(again.code(), ErrorCode::UserStopped, "{again}");
    let len_after = h.page_text_number(&form_url, "document.getElementById('fullName').value.length").await;
    assert_eq!(len_after, len_at_stop, "no input after Stop");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_native_host_repairs_and_keeps_tabs_and_ownership() {
    let h = start().await;
    let (c, s) = (&h.client, &h.session);
    let (form_url, scratch, name) = h.open_form(s).await;
    let scratch = TabId(scratch);
    let fill = |v: &str| fill_checked(&name, v);
    assert_eq!(c.tool(s, "browser_act", fill("Ada")).await.unwrap()["outcome"], "succeeded");

    // Kill the native host in the middle of a long typing action: the browser sees the port drop, the extension
    // reconnects (new host, new link). The action in flight is not reported as done and is never replayed.
    let before = browserd_native::link::probe(&h.socket).await.unwrap().expect("paired");
    let pid = before["hostPid"].as_i64().unwrap();
    let text = "abcdefghij".repeat(60);
    let typing = c.tool(s, "browser_act", json!({"action": "type", "target": name, "value": text}));
    let kill = async {
        while h.page_text_number(&form_url, "document.getElementById('fullName').value.length").await <= 3 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()), nix::sys::signal::SIGKILL)
            .unwrap();
    };
    let (typed, ()) = tokio::join!(typing, kill);
    match &typed {
        Ok(r) => assert_ne!(r["outcome"], "succeeded", "an action cut by the link loss is not reported done: {r}"),
        Err(e) => assert!(matches!(e.code(), ErrorCode::ConnectionLost | ErrorCode::OutcomeUnknown), "{e}"),
    }
    let len_at_kill = h.page_text_number(&form_url, "document.getElementById('fullName').value.length").await;
    assert!(len_at_kill < 603, "the typing was cut short: {len_at_kill}");
    let mut after = None;
    for _ in 0..300 {
        if let Ok(Some(p)) = browserd_native::link::probe(&h.socket).await
            && p["hostPid"].as_i64() != Some(pid)
        {
            after = Some(p);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after = after.expect("the extension pairs again through a new host");
    assert_eq!(after["instance"], before["instance"], "the same service worker, no restart");

    // The same tab handle works again: observed through the new link, acted on under a lease granted to it.
    let mut obs = None;
    for _ in 0..50 {
        match c.tool(s, "browser_observe", json!({})).await {
            Ok(o) => {
                obs = Some(o);
                break;
            }
            Err(e) => {
                assert_eq!(e.code(), ErrorCode::ConnectionLost, "only a connection loss is expected meanwhile: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    let obs = obs.expect("observing works after the re-pairing");
    let len_now = h.page_text_number(&form_url, "document.getElementById('fullName').value.length").await;
    assert_eq!(len_now, len_at_kill, "nothing of the cut action is replayed");
    assert!(obs["untrustedContent"].as_str().unwrap().contains("textbox \"Full name\" focused: Ada"), "{obs}");
    let name = ref_of(obs["untrustedContent"].as_str().unwrap(), "textbox \"Full name\"");
    let acted = c
        .tool(
            s,
            "browser_act",
            json!({"action": "fill", "target": name, "value": "Grace",
                   "expected": [{"kind": "value", "target": name, "equals": "Grace"}]}),
        )
        .await
        .unwrap();
    assert_eq!(acted["outcome"], "succeeded", "{acted}");
    // Ownership survived in the extension's records: turn end may close the scratch tab it opened.
    let end = c
        .call(&TurnEndParams { session: s.clone(), reason: TurnEndReason::HostStop, host_turn_id: None })
        .await
        .unwrap();
    assert!(end.ok, "{end:?}");
    assert_eq!(end.closed, vec![scratch], "{end:?}");
    let urls: Vec<String> = h.user_tabs().await.iter().map(|t| t["url"].as_str().unwrap().to_owned()).collect();
    assert!(!urls.contains(&form_url), "{urls:?}");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_user_closing_a_leased_tab_mid_action_gives_a_typed_result() {
    let h = start().await;
    let (c, s) = (&h.client, &h.session);
    let (form_url, tab, name) = h.open_form(s).await;
    let text = "abcdefghij".repeat(60);
    let typing = c.tool(s, "browser_act", json!({"action": "type", "target": name, "value": text}));
    let close = async {
        while h.page_text_number(&form_url, "document.getElementById('fullName').value.length").await == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // The user closes the tab (over the harness's own DevTools pipe, not through browserd).
        let target = h.user_tabs().await.into_iter().find(|t| t["url"] == form_url.as_str()).unwrap();
        h.browser
            .cdp()
            .call(None, "Target.closeTarget", json!({"targetId": target["targetId"]}), Duration::from_secs(10))
            .await
            .unwrap();
    };
    let (typed, ()) = tokio::join!(typing, close);
    let typed = typed.expect("a typed action result, not a transport error");
    // Input was reaching the page when the tab went away: the outcome is unknown (never "failed", never replayed).
    assert_eq!((&typed["outcome"], &typed["code"]), (&json!("unknown"), &json!("TARGET_CLOSED")), "{typed}");
    assert_eq!(typed["dispatch"], "dispatched", "{typed}");
    assert_eq!(typed["effects"]["tabsClosed"], json!([tab]), "the result names the closed tab: {typed}");
    let listed = c.tool(s, "browser_list", json!({})).await.unwrap();
    assert!(listed["tabs"].as_array().unwrap().iter().all(|t| t["tab"] != tab), "{listed}");
    let next = c.tool(s, "browser_observe", json!({"tab": tab})).await.unwrap_err();
    assert_eq!(next.code(), ErrorCode::TargetClosed, "{next}");
    h.stop().await;
}

/// The typed `USER_STOPPED` details: the extension's Stop report with the last evidence the broker had.
fn stop_details(e: &browserd_broker::client::ClientError) -> Value {
    assert_eq!(e.code(), ErrorCode::UserStopped, "{e}");
    e.error_data().and_then(|d| d.details.clone()).expect("USER_STOPPED carries the Stop report")["stop"].clone()
}

/// Waits until the form's name field has some typed text (a long typing action is in flight).
async fn until_typing(h: &Setup, url: &str) {
    while h.page_text_number(url, "document.getElementById('fullName')?.value.length ?? 0").await <= 3 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The keyboard Stop command, as far as headless Chromium lets a test go: it cannot press `Alt+Shift+S`, so this test
/// checks that the manifest's `stop-agent` command is registered with the browser (`chrome.commands.getAll`) and that
/// the service worker's `chrome.commands.onCommand` listener is the function it then calls (`hasListener`), and calls
/// that very listener with `stop-agent` in the service worker (`Runtime.evaluate` over the harness's own DevTools
/// pipe) while a long typing action runs through the broker. Not exercised: the browser turning a key press into the
/// command event (Chromium's own shortcut handling).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyboard_stop_command_closes_the_gate_and_reports_user_stopped_with_the_last_evidence() {
    let h = start().await;
    let (c, s) = (&h.client, &h.session);
    let (form_url, tab, name) = h.open_form(s).await;
    let fill = fill_checked(&name, "Ada");
    let filled = c.tool(s, "browser_act", fill).await.unwrap();
    assert_eq!(filled["outcome"], "succeeded", "{filled}");
    let fill_trace = filled["traceId"].as_str().unwrap().to_owned();
    let last = c.tool(s, "browser_observe", json!({})).await.unwrap();

    let command =
        h.sw_eval("chrome.commands.getAll().then((all) => all.find((c) => c.name === 'stop-agent') ?? null)").await;
    assert_eq!(command["name"], "stop-agent", "the manifest's command is registered: {command}");
    assert_eq!(h.sw_eval("chrome.commands.onCommand.hasListener(browserd.onCommand)").await, json!(true));
    let before = h.sw_eval("browserd.status()").await;
    assert_eq!(before["gate"]["stopped"], false, "{before}");
    assert_eq!(before["gate"]["leases"].as_array().map(Vec::len), Some(1), "the fill's lease: {before}");

    let text = "abcdefghij".repeat(60);
    let typing = c.tool(s, "browser_act", json!({"action": "type", "target": name, "value": text}));
    let press = async {
        until_typing(&h, &form_url).await;
        h.sw_eval("browserd.onCommand('stop-agent')").await
    };
    let (typed, report) = tokio::join!(typing, press);
    assert_eq!(report["via"], "keyboard", "{report}");
    let stop = stop_details(&typed.expect_err("the action in flight at Stop does not complete"));
    assert_eq!(stop["via"], "keyboard", "{stop}");
    assert_eq!(stop["controlEpoch"], report["controlEpoch"], "{stop}");
    // The last evidence: the latest observation and the action that was in flight, with its trace id.
    let seen = &stop["lastEvidence"]["lastObservation"];
    assert_eq!(seen["tab"], tab, "{stop}");
    assert_eq!(seen["url"], form_url.as_str(), "{stop}");
    assert_eq!(seen["title"], last["title"], "{stop}");
    assert_eq!(seen["cursor"], last["cursor"], "the last observation is the one the agent saw last: {stop}");
    let acting = &stop["lastEvidence"]["lastAction"];
    assert_eq!((acting["action"].as_str(), acting["state"].as_str()), (Some("type"), Some("inFlight")), "{stop}");
    assert_eq!(acting["tab"], tab, "{stop}");
    let trace = acting["traceId"].as_str().unwrap_or_default();
    assert!(!trace.is_empty() && trace != fill_trace, "the typing action's own trace id: {stop}");

    // The gate is closed in the extension: no lease, and nothing more reaches the page.
    let after = h.sw_eval("browserd.status()").await;
    assert_eq!(after["gate"]["stopped"], true, "{after}");
    assert_eq!(after["gate"]["leases"], json!([]), "{after}");
    assert_eq!(after["lastStop"]["via"], "keyboard", "{after}");
    assert_eq!(
        after["gate"]["dispatched"], after["lastStop"]["dispatchedBeforeStop"],
        "no input passed the gate: {after}"
    );
    let len_at_stop = h.page_text_number(&form_url, "document.getElementById('fullName').value.length").await;
    assert!(len_at_stop < 603, "Stop cut the typing short: {len_at_stop}");
    // Stop holds: the next write is refused before anything is sent, until `browser_claim` `resume: true`.
    let again = c.tool(s, "browser_act", json!({"action": "type", "target": name, "value": "zzz"})).await;
    assert_eq!(again.unwrap_err().code(), ErrorCode::UserStopped);
    let len_after = h.page_text_number(&form_url, "document.getElementById('fullName').value.length").await;
    assert_eq!(len_after, len_at_stop, "no input after Stop");
    h.stop().await;
}

/// A service-worker restart (the worker target closed over the harness's own DevTools pipe, then woken by a tab
/// event) leaves no valid lease, end to end through the broker: the new worker's gate holds none, the old refs are
/// refused before any input, and resuming takes a full observation and a new lease with a higher fencing token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_worker_restart_leaves_no_valid_lease_through_the_broker() {
    let h = start().await;
    let (c, s) = (&h.client, &h.session);
    let (form_url, scratch, name) = h.open_form(s).await;
    let scratch = TabId(scratch);
    let fill = |v: &str| fill_checked(&name, v);
    assert_eq!(c.tool(s, "browser_act", fill("Ada")).await.unwrap()["outcome"], "succeeded");
    let before = h.sw_eval("browserd.status()").await;
    let old_token = before["gate"]["leases"][0]["token"].as_u64().expect("the fill's lease in the extension");
    let old_epoch = before["gate"]["epoch"].as_u64().unwrap();
    let old_instance = before["instance"].clone();

    let cdp = h.browser.cdp();
    let t = Duration::from_secs(10);
    let sw = h.worker_target(true).await;
    cdp.call(None, "Target.closeTarget", json!({"targetId": sw}), t).await.unwrap();
    let mut after = None;
    for i in 0..300 {
        if i % 20 == 0 {
            // A tab event wakes the stopped worker.
            let _ = cdp.call(None, "Target.createTarget", json!({"url": "about:blank"}), t).await;
        }
        if let Ok(Some(p)) = browserd_native::link::probe(&h.socket).await
            && p["instance"] != old_instance
        {
            after = Some(p);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after = after.expect("a new service-worker instance pairs with the broker");
    assert!(after["controlEpoch"].as_u64().unwrap() > old_epoch, "{after}");
    let status = h.sw_eval("browserd.status()").await;
    assert_eq!(status["gate"]["leases"], json!([]), "the new worker holds no lease: {status}");

    // The old ref and the old lease do not pass: refused before any input (the value stays "Ada").
    let mut refused = None;
    for _ in 0..50 {
        match c.tool(s, "browser_act", fill("Grace")).await {
            Err(e) if e.code() == ErrorCode::ConnectionLost => tokio::time::sleep(Duration::from_millis(100)).await,
            other => {
                refused = Some(other);
                break;
            }
        }
    }
    let refused = refused.expect("an answer once the broker moved to the new link");
    let e = refused.expect_err("an action with the refs and lease from before the restart is refused");
    assert_eq!(e.code(), ErrorCode::LeaseRevoked, "{e}");
    let value = h.page_text(&form_url, "document.getElementById('fullName').value").await;
    assert_eq!(value, "Ada", "nothing was dispatched");
    let status = h.sw_eval("browserd.status()").await;
    assert_eq!(status["gate"]["dispatched"], 0, "no input reached the new worker's gate: {status}");

    // Resuming: a full observation, then a new lease with a higher fencing token.
    let obs = c.tool(s, "browser_observe", json!({})).await.unwrap();
    let name = ref_of(obs["untrustedContent"].as_str().unwrap(), "textbox \"Full name\"");
    let acted = c
        .tool(
            s,
            "browser_act",
            json!({"action": "fill", "target": name, "value": "Grace",
                   "expected": [{"kind": "value", "target": name, "equals": "Grace"}]}),
        )
        .await
        .unwrap();
    assert_eq!(acted["outcome"], "succeeded", "{acted}");
    let status = h.sw_eval("browserd.status()").await;
    let new_token = status["gate"]["leases"][0]["token"].as_u64().expect("a lease granted to the new worker");
    assert!(new_token > old_token, "a new lease, not the old one re-used: {new_token} vs {old_token}");
    // Ownership records survived the restart (chrome.storage.session): turn end may close the tab the agent opened.
    let end = c
        .call(&TurnEndParams { session: s.clone(), reason: TurnEndReason::HostStop, host_turn_id: None })
        .await
        .unwrap();
    assert_eq!(end.closed, vec![scratch], "{end:?}");
    h.stop().await;
}

/// Another session's tab is refused through the broker, naming the holder, before anything reaches the browser.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_sessions_tab_is_refused_naming_the_holder() {
    let h = start().await;
    let (c, a) = (&h.client, &h.session);
    let (form_url, tab, name) = h.open_form(a).await;

    let b = c
        .call(&SessionOpenParams {
            host: HostKind::Codex,
            host_session_id: "thread-other".into(),
            label: None,
            policy: None,
            browser: None,
        })
        .await
        .unwrap()
        .session;
    c.call(&ToolsActivateParams { session: b.clone(), advanced: false }).await.unwrap();
    let listed = c.tool(&b, "browser_list", json!({})).await.unwrap();
    let row = listed["tabs"].as_array().unwrap().iter().find(|t| t["tab"] == tab).cloned().expect("listed");
    assert_eq!(row["provenance"], "otherSession", "{listed}");
    let attempts = [
        ("browser_observe", json!({"tab": tab})),
        ("browser_act", json!({"tab": tab, "action": "fill", "target": name, "value": "Mallory"})),
        ("browser_claim", json!({"tab": tab})),
        ("browser_close", json!({"tabs": [tab]})),
    ];
    for (tool, args) in attempts {
        let e = c.tool(&b, tool, args).await.expect_err(tool);
        assert_eq!(e.code(), ErrorCode::OtherSessionTab, "{tool}: {e}");
        let holder = e.error_data().and_then(|d| d.holder_session.clone());
        assert_eq!(holder.as_ref(), Some(a), "{tool} names the holder: {e}");
    }
    let value = h.page_text(&form_url, "document.getElementById('fullName').value").await;
    assert_eq!(value, "", "nothing reached the page");
    let urls: Vec<String> = h.user_tabs().await.iter().map(|t| t["url"].as_str().unwrap().to_owned()).collect();
    assert!(urls.contains(&form_url), "the tab is still open: {urls:?}");
    // The holder still works on it.
    let acted = c
        .tool(
            a,
            "browser_act",
            json!({"action": "fill", "target": name, "value": "Ada",
                   "expected": [{"kind": "value", "target": name, "equals": "Ada"}]}),
        )
        .await
        .unwrap();
    assert_eq!(acted["outcome"], "succeeded", "{acted}");
    h.stop().await;
}

/// Stop from the broker (`browserd stop`) in the middle of a `browser_batch` through the extension: the batch reports
/// `USER_STOPPED`, the step in flight is cut short and no later step dispatches any input.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_in_the_middle_of_a_batch_dispatches_no_further_input() {
    let h = start().await;
    let (c, s) = (&h.client, &h.session);
    let form_url = h.site.url("/form.html");
    c.tool(s, "browser_open", json!({"url": form_url})).await.unwrap();
    let obs = c.tool(s, "browser_observe", json!({})).await.unwrap();
    let content = obs["untrustedContent"].as_str().unwrap();
    let name = ref_of(content, "textbox \"Full name\"");
    let notes = ref_of(content, "textbox \"Notes\"");
    let email = ref_of(content, "textbox \"Email\"");
    let steps = json!([
        {"action": "type", "target": name, "value": "abcdefghij".repeat(60)},
        {"action": "type", "target": notes, "value": "later step"},
        {"action": "fill", "target": email, "value": "ada@example.org"},
    ]);
    let batch = c.tool(s, "browser_batch", json!({"steps": steps}));
    let stop = async {
        until_typing(&h, &form_url).await;
        c.stop_gate().await.unwrap()
    };
    let (batched, stopped) = tokio::join!(batch, stop);
    assert_eq!(stopped.code, ErrorCode::UserStopped);
    let e = batched.expect_err("the batch in flight at Stop does not complete");
    assert_eq!(stop_details(&e)["via"], "broker", "{e}");
    // The answer still lists every step: the one Stop cut short (its input may have been sent) and the ones not
    // started.
    let details = e.error_data().and_then(|d| d.details.clone()).unwrap_or_default();
    let results = details["batch"]["results"].as_array().cloned().unwrap_or_default();
    let status: Vec<&str> = results.iter().map(|r| r["status"].as_str().unwrap_or("?")).collect();
    assert_eq!(status, ["cutShort", "notStarted", "notStarted"], "{details}");
    assert_eq!(results[0]["outcome"], "unknown", "{details}");
    assert!(results[0].get("dispatch").is_none(), "the cut step's dispatch is unknown: {details}");
    assert_eq!(results[0]["code"], "USER_STOPPED", "{details}");
    assert_eq!(details["batch"]["stopped"], json!({"step": 0, "reason": "userStopped"}), "{details}");
    let read = |id: &str| format!("document.getElementById('{id}').value");
    let len_at_stop = h.page_text_number(&form_url, &format!("{}.length", read("fullName"))).await;
    assert!(len_at_stop < 600, "Stop cut the first step short: {len_at_stop}");
    // The extension's own count: nothing passed its gate after Stop.
    let status = h.sw_eval("browserd.status()").await;
    assert_eq!(status["gate"]["stopped"], true, "the extension's gate closed too: {status}");
    assert_eq!(status["lastStop"]["via"], "broker", "{status}");
    assert_eq!(status["gate"]["dispatched"], status["lastStop"]["dispatchedBeforeStop"], "{status}");
    let len_after = h.page_text_number(&form_url, &format!("{}.length", read("fullName"))).await;
    assert_eq!(len_after, len_at_stop, "no input after Stop");
    assert_eq!(h.page_text(&form_url, &read("notes")).await, "", "the later steps never ran");
    assert_eq!(h.page_text(&form_url, &read("email")).await, "", "the later steps never ran");
    h.stop().await;
}

/// The extension's one gate covers every page-mutating DevTools method, not only `Input.*`: navigation, reload,
/// history, file input, dialogs, focus, input and a script run for an action are refused with a stale fencing token
/// and after Stop, and none of them reaches the page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mutating_method_is_gated_by_lease_fencing_and_stop() {
    let h = start().await;
    let (c, s) = (&h.client, &h.session);
    let (form_url, _, name) = h.open_form(s).await;
    let acted = c.tool(s, "browser_act", json!({"action": "fill", "target": name, "value": "Ada"})).await.unwrap();
    assert_eq!(acted["outcome"], "succeeded", "{acted}");
    h.page_text(&form_url, "String(window.__mark = 'kept')").await;
    let gate = h.sw_eval("browserd.status().then((s) => s.gate)").await;
    let lease = gate["leases"].as_array().and_then(|l| l.first()).cloned().expect("the act left a lease");
    let (tab_id, token, epoch) = (&lease["tabId"], lease["token"].as_u64().unwrap(), gate["epoch"].clone());
    let methods = json!([
        ["Page.navigate", {"url": h.site.url("/index.html")}, false],
        ["Page.reload", {}, false],
        ["Page.navigateToHistoryEntry", {"entryId": 0}, false],
        ["DOM.setFileInputFiles", {"files": ["/etc/hostname"], "backendNodeId": 1}, false],
        ["Page.handleJavaScriptDialog", {"accept": true}, false],
        ["DOM.focus", {"backendNodeId": 1}, false],
        ["Input.insertText", {"text": "zzz"}, false],
        ["Runtime.evaluate", {"expression": "document.getElementById('fullName').value = 'hacked'"}, true],
    ]);
    let send_all = |fence: Value| {
        format!(
            "Promise.all({methods}.map(([method, params, forAction]) => browserd.cdpSend({{target: {{tabId: {tab_id}}}, \
             method, params, forAction, fence: {fence}}}).then(() => method + ' passed', (e) => e.code)))"
        )
    };
    let codes =
        |v: Value| v.as_array().unwrap().iter().map(|c| c.as_str().unwrap_or("?").to_owned()).collect::<Vec<_>>();
    let stale = h.sw_eval(&send_all(json!({"token": token + 1000, "epoch": epoch}))).await;
    assert!(codes(stale.clone()).iter().all(|c| c == "LEASE_REVOKED"), "a stale token passes nothing: {stale}");
    c.stop_gate().await.unwrap();
    let after = h.sw_eval(&send_all(json!({"token": token, "epoch": epoch}))).await;
    assert!(codes(after.clone()).iter().all(|c| c == "USER_STOPPED"), "nothing passes after Stop: {after}");
    assert_eq!(h.page_text(&form_url, "location.href").await, form_url, "no navigation reached the page");
    assert_eq!(h.page_text(&form_url, "String(window.__mark)").await, "kept", "no reload reached the page");
    assert_eq!(h.page_text(&form_url, "document.getElementById('fullName').value").await, "Ada", "no input");
    h.stop().await;
}

/// Releasing a claimed tab keeps the user's own tab group: release takes a tab only out of the group browserd put it
/// in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_keeps_a_claimed_tab_in_the_users_own_group() {
    let h = start().await;
    let (c, s) = (&h.client, &h.session);
    let user_url = h.site.url("/duplicates.html");
    h.browser.cdp().call(None, "Target.createTarget", json!({"url": user_url}), Duration::from_secs(10)).await.unwrap();
    let mut user_tab = None;
    for _ in 0..100 {
        let listed = c.tool(s, "browser_list", json!({})).await.unwrap();
        user_tab = listed["tabs"].as_array().unwrap().iter().find(|t| t["url"] == user_url.as_str()).cloned();
        if user_tab.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let tab = user_tab.expect("the user's tab is listed")["tab"].as_u64().unwrap();
    // The user's own group.
    // chrome.tabs may still hold the new tab's URL as `pendingUrl` when the DevTools target already reports it.
    let find = format!("ts.find((t) => t.url === {user_url:?} || t.pendingUrl === {user_url:?})");
    let group_of = format!("chrome.tabs.query({{}}).then((ts) => {find}.groupId)");
    let made = format!("chrome.tabs.query({{}}).then((ts) => chrome.tabs.group({{tabIds: [{find}.id]}}))");
    let group = h.sw_eval(&made).await;
    assert!(group.as_i64().is_some_and(|g| g >= 0), "the user grouped the tab: {group}");
    c.tool(s, "browser_claim", json!({"tab": tab})).await.unwrap();
    c.tool(s, "browser_observe", json!({})).await.unwrap();
    let end = c
        .call(&TurnEndParams { session: s.clone(), reason: TurnEndReason::HostStop, host_turn_id: None })
        .await
        .unwrap();
    assert!(end.closed.is_empty(), "{end:?}");
    assert_eq!(h.sw_eval(&group_of).await, group, "the released tab stays in the user's group");
    h.stop().await;
}

/// A second extension that only asks for `debugger` and `tabs`: the other debugging client of the drill below.
fn rogue_extension(dir: &std::path::Path) -> PathBuf {
    let path = dir.join("rogue-debugger");
    std::fs::create_dir_all(&path).unwrap();
    std::fs::write(
        path.join("manifest.json"),
        r#"{"manifest_version": 3, "name": "another debugger", "version": "1.0",
            "background": {"service_worker": "sw.js"}, "permissions": ["debugger", "tabs"]}"#,
    )
    .unwrap();
    std::fs::write(path.join("sw.js"), "// Attaches chrome.debugger when the test asks (over DevTools).\n").unwrap();
    path
}

/// `DEBUGGER_IN_USE` from a `browser_act` (an error, or a typed result that names it), with nothing dispatched.
fn assert_debugger_in_use(acted: Result<Value, browserd_broker::client::ClientError>) {
    match acted {
        Err(e) => {
            assert_eq!(e.code(), ErrorCode::DebuggerInUse, "{e}");
            assert!(e.to_string().contains("another debugger"), "the error says what holds the tab: {e}");
            assert!(e.error_data().and_then(|d| d.retry_after_ms).is_some(), "a retry hint: {e}");
        }
        Ok(r) => panic!("expected DEBUGGER_IN_USE, got a result: {r}"),
    }
}

/// Drill "another DevTools client takes the debugger": Chromium lets several debugging clients share a tab, so with
/// another client on a leased tab browserd refuses to attach (`DEBUGGER_IN_USE`, naming what holds it), dispatches no
/// input (the extension's gate counts none, the field keeps its value), and works again once the tab is free. Two
/// other clients, one after the other: a second extension's `chrome.debugger.attach` (the extension's `DEBUGGER_BUSY`
/// mapped through the relay) and a raw CDP session over the harness's own DevTools pipe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_debugger_on_a_leased_tab_reads_debugger_in_use_sends_nothing_and_recovers() {
    let extra = tempfile::tempdir().unwrap();
    let h = start_with(vec![rogue_extension(extra.path())]).await;
    let (c, s) = (&h.client, &h.session);
    let (form_url, _tab, name) = h.open_form(s).await;
    let value = "document.getElementById('fullName').value";

    // 1. Another extension attaches chrome.debugger to the tab while browserd's attachment is idle-detached.
    h.until_browserd_detached().await;
    let dispatched = h.sw_eval("browserd.status().then(s => s.gate.dispatched)").await;
    let find = format!("chrome.tabs.query({{}}).then(ts => ts.find(t => t.url === {form_url:?}).id)");
    let other = h
        .worker_eval(false, &format!("{find}.then(id => chrome.debugger.attach({{tabId: id}}, '1.3').then(() => id))"))
        .await;
    assert!(other.is_i64(), "the other extension attached: {other}");
    assert_debugger_in_use(c.tool(s, "browser_act", fill_checked(&name, "Ada")).await);
    assert_eq!(h.page_text(&form_url, value).await, "", "nothing reached the field");
    assert_eq!(h.sw_eval("browserd.status().then(s => s.gate.dispatched)").await, dispatched, "no input dispatched");
    // The tab is free again: the same ref works.
    h.worker_eval(false, &format!("chrome.debugger.detach({{tabId: {other}}}).then(() => true)")).await;
    let acted = c.tool(s, "browser_act", fill_checked(&name, "Ada")).await.unwrap();
    assert_eq!(acted["outcome"], "succeeded", "{acted}");
    assert_eq!(h.page_text(&form_url, value).await, "Ada");

    // 2. A raw CDP client (the harness's own DevTools pipe) holds a session on the tab.
    h.until_browserd_detached().await;
    let cdp = h.browser.cdp();
    let t = Duration::from_secs(10);
    let target = h.user_tabs().await.into_iter().find(|x| x["url"] == form_url.as_str()).unwrap();
    let att =
        cdp.call(None, "Target.attachToTarget", json!({"targetId": target["targetId"], "flatten": true}), t).await;
    let raw = att.unwrap()["sessionId"].as_str().unwrap().to_owned();
    let dispatched = h.sw_eval("browserd.status().then(s => s.gate.dispatched)").await;
    assert_debugger_in_use(c.tool(s, "browser_act", fill_checked(&name, "Bea")).await);
    let still = cdp
        .call(
            Some(&browserd_cdp::SessionId(raw.clone())),
            "Runtime.evaluate",
            json!({"expression": value, "returnByValue": true}),
            t,
        )
        .await
        .unwrap();
    assert_eq!(still["result"]["value"], "Ada", "nothing reached the field");
    assert_eq!(h.sw_eval("browserd.status().then(s => s.gate.dispatched)").await, dispatched, "no input dispatched");
    cdp.call(None, "Target.detachFromTarget", json!({"sessionId": raw}), t).await.unwrap();
    let acted = c.tool(s, "browser_act", fill_checked(&name, "Bea")).await.unwrap();
    assert_eq!(acted["outcome"], "succeeded", "{acted}");
    assert_eq!(h.page_text(&form_url, value).await, "Bea");
    h.stop().await;
}

/// Found by the drill above: after browserd's idle debugger detach (1.5 s without a page operation) the extension
/// dropped the write lease, and the next action re-granted the same fencing token, which the gate refused
/// (`LEASE_REVOKED: fencing token 1 … is not above 1`): every action after a pause failed. The same lease may now be
/// granted again in the same control epoch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_after_the_idle_debugger_detach_keeps_its_lease() {
    let h = start().await;
    let (c, s) = (&h.client, &h.session);
    let (form_url, _tab, name) = h.open_form(s).await;
    h.until_browserd_detached().await;
    let acted = c.tool(s, "browser_act", fill_checked(&name, "Ada")).await.unwrap();
    assert_eq!(acted["outcome"], "succeeded", "{acted}");
    assert_eq!(h.page_text(&form_url, "document.getElementById('fullName').value").await, "Ada");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broker_hands_its_site_policy_to_the_extension_gate_and_status_shows_the_real_profile_defaults() {
    let h = start().await;
    let (c, s) = (&h.client, &h.session);
    c.tool(s, "browser_open", json!({"url": h.site.url("/form.html")})).await.unwrap();
    // The broker's policy reached the last-hop gate: the real-profile default deny list, from the broker.
    let sites = h.sw_eval("browserd.status().then((s) => s.sites)").await;
    assert_eq!(sites["fromBroker"], true, "{sites}");
    assert_eq!(
        sites["realProfileDeny"].as_u64().unwrap() as usize,
        browserd_broker::policy::sites::REAL_PROFILE_DENY.len(),
        "{sites}"
    );
    // browser_status shows the policy in force on the user's own browser: the real-profile defaults apply.
    let status = c.tool(s, "browser_status", json!({})).await.unwrap();
    let shown = status["policy"]["realProfileDeny"].as_array().cloned().unwrap_or_default();
    assert!(shown.iter().any(|p| p == "*.1password.com"), "{status}");

    // The session's own lists (`browserd mcp --blocked-origins`) reach the gate too, keyed by the session that owns
    // the tabs, before the next browser call.
    let reopened = c
        .call(&SessionOpenParams {
            host: HostKind::Codex,
            host_session_id: "thread-ext".into(),
            label: None,
            policy: Some(browserd_protocol::policy::SessionPolicy {
                allowed_origins: vec![],
                blocked_origins: vec!["localhost".into()],
            }),
            browser: None,
        })
        .await
        .unwrap();
    assert_eq!(&reopened.session, s);
    c.tool(s, "browser_observe", json!({})).await.unwrap();
    let sites = h.sw_eval("browserd.status().then((s) => s.sites)").await;
    assert_eq!(sites["sessions"][s.as_str()]["blocked"], json!(["localhost"]), "{sites}");
    h.stop().await;
}

/// `browser_act` as a user who approves it: on the user's own browser a "Delete" click is high-risk and answers
/// `APPROVAL_REQUIRED`; the user grants that approval (`browserd approve`, here the broker method) and the same call
/// runs once.
async fn act_approved(c: &Client, s: &browserd_protocol::SessionId, args: serde_json::Value) -> serde_json::Value {
    match c.tool(s, "browser_act", args.clone()).await {
        Ok(done) => done,
        Err(e) if e.code() == ErrorCode::ApprovalRequired => {
            let details = e.error_data().and_then(|d| d.details.clone()).unwrap_or_default();
            let approval = details["approval"].as_str().expect("the refusal names its approval").to_owned();
            c.call(&browserd_protocol::policy::ApprovalGrantParams { approval }).await.unwrap();
            c.tool(s, "browser_act", args).await.unwrap()
        }
        Err(e) => panic!("browser_act {args} failed: {e}"),
    }
}

/// Stop closes the extension's gate to the debugger too (issue 15 item 2): while the tab is stopped,
/// `chrome.debugger.attach` to it is refused with `USER_STOPPED` (the extension's own `debugger.attach` command, as
/// the broker sends it) and no debugger is on the tab; the broker's reads and writes on it answer `USER_STOPPED`.
/// `browser_claim` `resume: true` hands the extension the new lease, after which the debugger attaches again, the
/// resume's refs work and a ref read before the Stop stays void (`STALE_TARGET` / `controlEpochChanged`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_debugger_does_not_attach_to_a_stopped_tab_until_the_resume() {
    let h = start().await;
    let (c, s) = (&h.client, &h.session);
    let (form_url, tab, name) = h.open_form(s).await;
    let acted = c.tool(s, "browser_act", fill_checked(&name, "Ada")).await.unwrap();
    assert_eq!(acted["outcome"], "succeeded", "{acted}");
    let gate = h.sw_eval("browserd.status().then((s) => s.gate)").await;
    let lease = gate["leases"].as_array().and_then(|l| l.first()).cloned().expect("the act left a lease");
    let (tab_id, session) = (lease["tabId"].clone(), lease["session"].clone());
    c.stop_gate().await.unwrap();

    let attach = format!(
        "browserd.command('debugger.attach', {{tabId: {tab_id}, session: {session}}}).then(() => 'attached', (e) => e.code)"
    );
    for _ in 0..2 {
        assert_eq!(h.sw_eval(&attach).await, "USER_STOPPED", "the extension refuses the debugger while stopped");
    }
    let status = h.sw_eval("browserd.status()").await;
    assert!(!status["attached"].as_array().unwrap().contains(&tab_id), "{status}");
    assert!(status["stoppedTabs"].as_array().unwrap().contains(&tab_id), "{status}");
    let on_tab = format!("chrome.debugger.getTargets().then((ts) => ts.find((t) => t.tabId === {tab_id})?.attached)");
    assert_eq!(h.sw_eval(&on_tab).await, false, "no debugger is on the stopped tab");
    let read = c.tool(s, "browser_observe", json!({"tab": tab})).await.unwrap_err();
    assert_eq!(read.code(), ErrorCode::UserStopped, "{read}");
    assert!(read.to_string().contains("browser_claim"), "the answer names the resume call: {read}");
    let write = c.tool(s, "browser_act", fill_checked(&name, "Bea")).await.unwrap_err();
    assert_eq!(write.code(), ErrorCode::UserStopped, "{write}");
    assert_eq!(h.sw_eval(&on_tab).await, false, "still no debugger on the tab");

    // The explicit resume: the extension takes the new lease, and the debugger may attach again.
    let resumed = c.tool(s, "browser_claim", json!({"tab": tab, "resume": true})).await.unwrap();
    let content = resumed["observation"]["untrustedContent"].as_str().expect("a full observation");
    let fresh = ref_of(content, "textbox \"Full name\"");
    assert_ne!(fresh, name, "the resume's observation gives new refs");
    let status = h.sw_eval("browserd.status()").await;
    assert!(!status["stoppedTabs"].as_array().unwrap().contains(&tab_id), "{status}");
    let old = c.tool(s, "browser_act", fill_checked(&name, "Old")).await;
    let (code, reason) = match old {
        Ok(v) => (v["code"].clone(), v["staleReason"].clone()),
        Err(e) => {
            let d = e.error_data().and_then(|d| d.details.clone()).unwrap_or_default();
            (json!(e.code().as_str()), d["staleReason"].clone())
        }
    };
    assert_eq!((code, reason), (json!("STALE_TARGET"), json!("controlEpochChanged")), "a pre-Stop ref stays void");
    let acted = c.tool(s, "browser_act", fill_checked(&fresh, "Bea")).await.unwrap();
    assert_eq!(acted["outcome"], "succeeded", "{acted}");
    assert_eq!(h.page_text(&form_url, "document.getElementById('fullName').value").await, "Bea");
    assert_eq!(h.sw_eval(&attach).await, "attached", "the extension's debugger attaches after the resume");
    h.stop().await;
}

/// Refs inside an out-of-process iframe survive the debugger's idle detach on the extension relay (issue 15 item 3):
/// observe, wait until browserd's extension has detached from the idle tab, then click the button in both frames
/// (the cross-site one out of process): each click lands and each frame counts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oopif_refs_survive_the_idle_detach_on_the_relay() {
    let h = start().await;
    let (c, s) = (&h.client, &h.session);
    let (_url, inner) = h.open_iframes().await;
    h.until_browserd_detached().await;
    for target in &inner {
        let acted = c.tool(s, "browser_act", json!({"action": "click", "target": target})).await.unwrap();
        assert_eq!(acted["outcome"], "succeeded", "{target} after the idle detach: {acted}");
    }
    let mut counted = String::new();
    for _ in 0..20 {
        let obs = c.tool(s, "browser_observe", json!({})).await.unwrap();
        counted = obs["untrustedContent"].as_str().unwrap().to_owned();
        if counted.matches("Inner clicks: 1").count() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(counted.matches("Inner clicks: 1").count(), 2, "each frame counted its click: {counted}");
    h.stop().await;
}

/// A large image never holds Stop up. A full-page screenshot of a tall table is captured in the user's browser and
/// held in the extension — the service worker's `chrome.debugger.sendCommand` is wrapped over the harness's own
/// DevTools pipe so the captured image waits there until the test lets it go — and while it waits `browserd stop`
/// goes broker → link → native host → extension (the priority lane towards the extension). The order is read from
/// what the broker and the extension report, never from timings: the extension confirms Stop and closes its gate,
/// and the screenshot call answers `USER_STOPPED` without any image, all while the image is still held; only then is
/// the image let go, and nothing of it reaches the caller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_gets_through_and_takes_effect_while_a_large_screenshot_is_in_flight() {
    let h = start().await;
    let (c, s) = (&h.client, &h.session);
    let opened = c.tool(s, "browser_open", json!({"url": h.site.url("/large-table.html")})).await.unwrap();
    let tab = opened["tab"].as_u64().unwrap();
    let hold = "(() => {
        const real = chrome.debugger.sendCommand.bind(chrome.debugger);
        globalThis.heldShot = { bytes: 0, released: false, release: null };
        chrome.debugger.sendCommand = async (target, method, params) => {
          const r = await real(target, method, params);
          if (method === 'Page.captureScreenshot') {
            await new Promise((go) => { globalThis.heldShot.release = go; globalThis.heldShot.bytes = (r?.data ?? '').length; });
            globalThis.heldShot.released = true;
          }
          return r;
        };
        return true;
      })()";
    assert_eq!(h.sw_eval(hold).await, json!(true));
    let args = json!({"tab": tab, "screenshot": true,
                      "screenshotOptions": {"fullPage": true, "format": "png", "maxSize": 8000}});
    let shot = tokio::spawn({
        let c = c.clone();
        let s = s.clone();
        async move { c.tool(&s, "browser_observe", args).await }
    });
    // The image is captured and waits in the extension.
    let mut held = 0;
    for _ in 0..600 {
        held = h.sw_eval("globalThis.heldShot.bytes").await.as_u64().unwrap_or(0);
        if held > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Larger than one relay chunk (a message this size towards the extension would travel in several).
    let chunk = browserd_native::framing::CHUNK_RAW as u64;
    assert!(held > chunk, "a large image (over one {chunk}-byte relay chunk) is held: {held} base64 bytes");

    // Stop goes through while the image has not left the extension.
    let stopped = c.stop_gate().await.unwrap();
    assert_eq!(stopped.code, ErrorCode::UserStopped);
    let gate = h.sw_eval("browserd.status()").await;
    assert_eq!(gate["gate"]["stopped"], true, "the extension closed its gate: {gate}");
    let answered = tokio::time::timeout(Duration::from_secs(90), shot)
        .await
        .expect("the screenshot call answers at Stop without waiting for the image")
        .unwrap();
    let e = answered.expect_err("a screenshot in flight at Stop is not handed over");
    assert_eq!(e.code(), ErrorCode::UserStopped, "{e}");
    assert!(!format!("{e:?}").contains("iVBOR"), "no image data in the answer");
    assert_eq!(h.sw_eval("globalThis.heldShot.released").await, json!(false), "all of it before the image left");

    // Now the image goes; nothing of it reaches the caller, and the tab stays stopped.
    assert_eq!(h.sw_eval("(globalThis.heldShot.release(), true)").await, json!(true));
    let again = c.tool(s, "browser_act", json!({"tab": tab, "action": "scroll", "value": "down"})).await;
    let again = again.expect_err("after Stop nothing is sent to the tab");
    assert_eq!(again.code(), ErrorCode::UserStopped, "{again}");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_or_redirect_to_a_denied_origin_is_stopped_before_it_is_requested_over_the_extension() {
    let s = start_policy(PolicyConfig { deny: vec!["localhost".into()], ..PolicyConfig::default() }).await;
    let origin = s.site.cross_origin_url("");
    let opened =
        s.client.tool(&s.session, "browser_open", json!({"url": s.site.url("/policy-redirect.html")})).await.unwrap();
    let tab = opened["tab"].clone();
    for (name, case) in [("Continue to the partner", "a link through a 302"), ("Partner landing page", "a direct link")]
    {
        let obs = s.client.tool(&s.session, "browser_observe", json!({"tab": tab})).await.unwrap();
        let target = ref_of(obs["untrustedContent"].as_str().unwrap(), name);
        let e = s
            .client
            .tool(&s.session, "browser_act", json!({"tab": tab, "action": "click", "target": target}))
            .await
            .unwrap_err();
        let browserd_broker::ClientError::Rpc(e) = e else { panic!("{case}: {e:?}") };
        assert_eq!(e.code, ErrorCode::OriginNotAuthorised, "{case}: {e:?}");
        assert!(e.message.contains(&origin) && e.message.contains("stopped before requesting it"), "{case}: {e:?}");
        assert!(e.next_step.contains("remove `localhost` from `deny` in the `[policy]` section"), "{case}: {e:?}");
        assert_eq!(e.details.as_ref().unwrap()["stoppedBeforeRequest"], true, "{case}: {e:?}");
        assert_eq!(
            s.site.cross_origin_requests("/policy-landing.html"),
            Vec::<String>::new(),
            "{case}: never requested"
        );
        // The tab shows the browser's "blocked" page under the denied URL, which the extension's gate reads as that
        // origin: going to an allowed page is what it lets through (the browser's history is not read there).
        let page = s.site.url("/policy-redirect.html");
        let nav = s
            .client
            .tool(&s.session, "browser_act", json!({"tab": tab, "action": "navigate", "value": page}))
            .await
            .unwrap();
        assert_eq!(nav["outcome"], "succeeded", "{case}: {nav}");
    }
    s.stop().await;
}

/// A configured download directory (`browserd broker run` has one by default, under the XDG data dir) does not stop
/// the user's browser from connecting over the extension relay, which cannot confine downloads: the capability says
/// so, and pages open and act as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_dir_does_not_stop_the_extension_browser_and_its_capability_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let s =
        start_files(FilesConfig { download_dir: Some(dir.path().join("downloads")), ..FilesConfig::default() }).await;
    let opened = s.client.tool(&s.session, "browser_open", json!({"url": s.site.url("/form.html")})).await.unwrap();
    assert!(opened["tab"].is_u64(), "{opened}");
    let obs = s.client.tool(&s.session, "browser_observe", json!({})).await.unwrap();
    assert!(obs["untrustedContent"].as_str().unwrap().contains("Full name"), "{obs}");
    let status = s.client.tool(&s.session, "browser_status", json!({})).await.unwrap();
    let unsupported = status["unsupported"].as_array().unwrap();
    let downloads = unsupported.iter().find(|u| u["name"] == "downloads").expect("downloads is unsupported");
    assert_eq!(downloads["unsupported"], "byImplementation", "{status}");
    s.stop().await;
}

/// Uploads over the extension relay (issue 16 item 4): a file outside `[files] upload_roots` is refused before
/// anything is set on the page (`APPROVAL_REQUIRED` naming the key) and, once the user approves exactly it, its
/// staged copy passes the extension's upload gate; a file inside the roots is set on the file input and reaches the
/// fixture server byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_over_the_extension_come_only_from_upload_roots() {
    let tmp = tempfile::tempdir().unwrap();
    let up = tmp.path().join("uploads");
    std::fs::create_dir_all(&up).unwrap();
    std::fs::write(up.join("cv.txt"), "Ada Lovelace, analyst\n").unwrap();
    std::fs::write(tmp.path().join("private.txt"), "not for the web\n").unwrap();
    let s = start_files(FilesConfig { upload_roots: vec![up.clone()], ..FilesConfig::default() }).await;
    let (c, ss) = (&s.client, &s.session);
    let tab = c.tool(ss, "browser_open", json!({"url": s.site.url("/upload.html")})).await.unwrap()["tab"].clone();
    let obs = c.tool(ss, "browser_observe", json!({"tab": tab})).await.unwrap();
    let input = ref_of(obs["untrustedContent"].as_str().unwrap(), "Document");
    let private = tmp.path().join("private.txt").display().to_string();
    let e = c
        .tool(ss, "browser_act", json!({"tab": tab, "action": "upload", "target": input, "value": private}))
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::ApprovalRequired, "{e}");
    assert!(e.to_string().contains("upload_roots"), "{e}");
    let obs = c.tool(ss, "browser_observe", json!({"tab": tab})).await.unwrap();
    assert!(obs["untrustedContent"].as_str().unwrap().contains("Chosen file: none"), "nothing was set: {obs}");

    // The user approves exactly that file for one call: its private staged copy passes the extension's upload gate.
    let id = e.error_data().and_then(|d| d.details.clone()).unwrap()["approval"].as_str().unwrap().to_owned();
    c.call(&browserd_protocol::policy::ApprovalGrantParams { approval: id }).await.unwrap();
    let approved = c
        .tool(ss, "browser_act", json!({"tab": tab, "action": "upload", "target": input, "value": private}))
        .await
        .unwrap();
    assert_eq!(approved["outcome"], "succeeded", "{approved}");
    let obs = c.tool(ss, "browser_observe", json!({"tab": tab})).await.unwrap();
    assert!(obs["untrustedContent"].as_str().unwrap().contains("private.txt"), "the approved file was set: {obs}");

    let cv = up.join("cv.txt").display().to_string();
    let set = c.tool(ss, "browser_act", json!({"tab": tab, "action": "upload", "target": input, "value": cv})).await;
    let set = set.unwrap();
    assert_eq!(set["outcome"], "succeeded", "{set}");
    let obs = c.tool(ss, "browser_observe", json!({"tab": tab})).await.unwrap();
    let submit = ref_of(obs["untrustedContent"].as_str().unwrap(), "button \"Upload\"");
    c.tool(ss, "browser_act", json!({"tab": tab, "action": "click", "target": submit})).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..200 {
        got = s.site.uploads();
        if !got.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(got.len(), 1, "exactly one upload reached the server");
    assert_eq!(got[0].file_name, "cv.txt");
    assert_eq!(got[0].bytes, b"Ada Lovelace, analyst\n");
    s.stop().await;
}
