//! Pages the acceptance checks open and how they read them back: fixture-site URLs made unique per tab (so the
//! browser's own tab list tells them apart), a counter page whose text shows how many clicks really arrived, and
//! finding a ref in an observation.

use serde_json::{Value, json};

use crate::harness::Mcp;

/// A fixture-site URL unique to `name` (the fixture index page with a query naming the tab).
pub(crate) fn fixture(site: &browserd_fixtures::FixtureSite, name: &str) -> String {
    site.url(&format!("/index.html?tab={name}"))
}

/// A page with one button; every real click adds one to the count it shows (`clicks: N`).
pub(crate) fn counter(name: &str) -> String {
    format!(
        "data:text/html,<title>{name}</title><button onclick=\"n.textContent=String(Number(n.textContent)+1)\">Count</button>\
         <p>clicks: <span id=n>0</span></p>"
    )
}

/// The ref of the first element of `role` named `name` in an observation's lines (`e2 button "Count"`).
pub(crate) fn ref_of(observation: &Value, role: &str, name: &str) -> String {
    let content = observation["untrustedContent"].as_str().unwrap_or_default();
    let needle = format!("{role} \"{name}\"");
    content
        .lines()
        .find_map(|line| {
            let (r, rest) = browserd_protocol::split_ref(line)?;
            rest.starts_with(&needle).then(|| r.to_owned())
        })
        .unwrap_or_else(|| panic!("no {role} {name:?} in the observation:\n{content}"))
}

/// The click count the counter page on `tab` shows now (read with `browser_observe`).
pub(crate) async fn clicks(mcp: &Mcp, tab: u64) -> u64 {
    let observation = mcp.call("browser_observe", json!({"tab": tab})).await.ok();
    let content = observation["untrustedContent"].as_str().unwrap_or_default();
    content
        .lines()
        .find_map(|line| line.split("clicks: ").nth(1))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no click count on the page:\n{content}"))
}

/// `browser_open` of `url`; returns the tab id.
pub(crate) async fn open(mcp: &Mcp, url: &str) -> u64 {
    let opened = mcp.call("browser_open", json!({"url": url})).await.ok();
    opened["tab"].as_u64().unwrap_or_else(|| panic!("browser_open names its tab: {opened}"))
}

/// `browser_observe` of `tab`, then the ref of `role` `name` on it.
pub(crate) async fn find(mcp: &Mcp, tab: u64, role: &str, name: &str) -> String {
    let observation = mcp.call("browser_observe", json!({"tab": tab})).await.ok();
    ref_of(&observation, role, name)
}
