//! The scripts an action runs in the page pass the extension's last-hop gate as writes (issue 15 item 2): a real
//! broker drives headless Chromium through the real extension and native host; the extension's lease on the tab moves
//! on behind the broker's back (what a newer grant or a Stop racing the action leaves), and `browser_act` `select`
//! and `scroll` `untilText` — whose only page-changing step is browserd's script, not an `Input.*` command — are
//! refused with nothing reaching the page, read from the page itself over the harness's own DevTools pipe.

mod brokered;

use browserd_broker::config::{AdvancedConfig, BrokerConfig};
use serde_json::{Value, json};

use brokered::{Setup, ref_of};

/// Grants the extension a newer lease on the tab showing `url`, for the same session, as the broker would: the
/// broker's own fence on that tab is stale from then on.
async fn move_lease_on(h: &Setup, url: &str) {
    let gate = h.sw_eval("browserd.status().then((s) => s.gate)").await;
    let tab_id =
        h.sw_eval(&format!("chrome.tabs.query({{}}).then((ts) => ts.find((t) => t.url === {url:?}).id)")).await;
    let lease = gate["leases"]
        .as_array()
        .and_then(|l| l.iter().find(|l| l["tabId"] == tab_id))
        .cloned()
        .unwrap_or_else(|| panic!("the act left a lease on tab {tab_id}: {gate}"));
    let (session, token, epoch) = (&lease["session"], lease["token"].as_u64().unwrap(), &gate["epoch"]);
    let granted = h
        .sw_eval(&format!(
            "browserd.command('lease.grant', {{tabId: {tab_id}, session: {session}, token: {}, epoch: {epoch}}})",
            token + 1000
        ))
        .await;
    assert_eq!(granted["token"], token + 1000, "{granted}");
}

/// The gate's refusal as the agent reads it: the action failed with `LEASE_REVOKED`, nothing dispatched.
fn assert_refused(acted: Result<Value, browserd_broker::client::ClientError>, what: &str) {
    let r = acted.unwrap_or_else(|e| panic!("{what}: a typed action result, not {e}"));
    assert_eq!(r["outcome"], "failed", "{what} passed the gate: {r}");
    assert_eq!(r["code"], "LEASE_REVOKED", "{what}: {r}");
    assert_eq!(r["dispatch"], "notDispatched", "{what}: {r}");
    assert!(r["message"].as_str().unwrap().contains("observe the tab again"), "{what}: what to do next: {r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actions_scripts_are_refused_by_the_extensions_gate_with_a_stale_fencing_token() {
    let config = BrokerConfig {
        advanced: AdvancedConfig { enabled: true, ..AdvancedConfig::default() },
        ..BrokerConfig::default()
    };
    let h = brokered::start(config, true).await;
    let (c, s) = (&h.client, &h.session);

    // `select`: browserd's script picks the option; nothing else in the action changes the page.
    let form_url = h.site.url("/form.html");
    c.tool(s, "browser_open", json!({"url": form_url})).await.unwrap();
    let obs = c.tool(s, "browser_observe", json!({})).await.unwrap();
    let country = ref_of(obs["untrustedContent"].as_str().unwrap(), "combobox \"Country\"");
    let acted = c.tool(s, "browser_act", json!({"action": "select", "target": country, "value": "France"})).await;
    assert_eq!(acted.as_ref().unwrap()["outcome"], "succeeded", "{acted:?}");
    let value = "document.getElementById('country').value";
    assert_eq!(h.page_eval(&form_url, value).await, "fr");
    move_lease_on(&h, &form_url).await;
    let refused_before = h.sw_eval("browserd.status().then((s) => s.gate.refused)").await.as_u64().unwrap();
    let acted = c.tool(s, "browser_act", json!({"action": "select", "target": country, "value": "Japan"})).await;
    assert_refused(acted, "select with a stale fencing token");
    assert_eq!(h.page_eval(&form_url, value).await, "fr", "the select script never reached the page");
    let refused = h.sw_eval("browserd.status().then((s) => s.gate.refused)").await.as_u64().unwrap();
    assert!(refused > refused_before, "the extension's gate refused it: {refused} after {refused_before}");

    // `browser_evaluate` over the relay: the advanced tier's script never reaches the page either (the relay does
    // not offer it: it answers before anything is sent).
    let evaluated =
        c.tool(s, "browser_evaluate", json!({"expression": "document.getElementById('country').value = 'us'"})).await;
    assert!(evaluated.is_err(), "browser_evaluate over the relay: {evaluated:?}");
    assert_eq!(h.page_eval(&form_url, value).await, "fr", "the evaluated script never reached the page");

    // `scroll` `untilText`: browserd's script scrolls the text into view before any wheel input.
    let table_url = h.site.url("/large-table.html");
    c.tool(s, "browser_open", json!({"url": table_url})).await.unwrap();
    c.tool(s, "browser_observe", json!({})).await.unwrap();
    let acted = c.tool(s, "browser_act", json!({"action": "scroll", "direction": "down"})).await;
    assert_eq!(acted.as_ref().unwrap()["outcome"], "succeeded", "{acted:?}");
    let scrolled = h.page_eval(&table_url, "scrollY").await;
    assert!(scrolled.as_f64().unwrap() > 0.0, "the first scroll moved the page: {scrolled}");
    move_lease_on(&h, &table_url).await;
    let acted = c.tool(s, "browser_act", json!({"action": "scroll", "untilText": "Order 900"})).await;
    assert_refused(acted, "scroll untilText with a stale fencing token");
    assert_eq!(h.page_eval(&table_url, "scrollY").await, scrolled, "the scroll script never reached the page");
    h.stop().await;
}
