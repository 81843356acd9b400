//! Broker round trips and the broker's cost per tool call (BRIEF §9: warm broker RPC round trip p95 ≤ 2 ms), measured
//! on a real `browserd broker run` process in a temporary home with its managed Chromium and the fixture site:
//! connect + `hello` on a fresh connection, a warm `status` on one connection, and `tool.call browser_observe` on
//! `/form.html` and `tool.call browser_act` (click "Save" on `/toast.html` with a `focused` expectation) through the
//! broker, next to the same provider calls in process (browserd's own observer, [`crate::browserd`], on a managed
//! Chromium of its own). Each measure is one JSON line `{"name": "broker.…", "n", "p50_ms", "p95_ms", …}`; the
//! `broker.overhead.*` rows are the differences of the percentiles (broker minus in process).

use std::time::Instant;

use browserd_broker::client::Client;
use browserd_fixtures::FixtureSite;
use browserd_protocol::lifecycle::{HostKind, SessionOpenParams, StatusParams, ToolsActivateParams};
use browserd_protocol::{
    ActParams, ActionKind, ActionResult, Dispatch, Expectation, Observation, Outcome, Postcondition, SessionId, TabId,
};
use serde::Serialize;
use serde_json::{Value, json};

use crate::broker_soak::{self, Broker};
use crate::browserd::{BrowserdObserver, BrowserdOptions, Budget, find_ref};
use crate::node_mcp::chromium_from_env;
use crate::observer::Observer;
use crate::report::{self, ErrorRow, TimingRow};
use crate::stats::{Summary, round3};

/// The page observed through the broker and in process.
pub const OBSERVE_PAGE: &str = "/form.html";
/// The page of the click, and the button clicked.
pub const CLICK_PAGE: &str = "/toast.html";
/// The accessible name of the clicked button (role `button`).
pub const CLICK_NAME: &str = "Save";
/// Untimed calls before each timed series.
const WARM_UP: usize = 20;

/// The broker's cost per call: a broker measure minus the same measure in process.
#[derive(Debug, Clone, Serialize)]
pub struct OverheadRow {
    /// `broker.overhead.observe` or `broker.overhead.act`.
    pub name: &'static str,
    /// Calls per side.
    pub n: usize,
    /// Broker p50 − in-process p50.
    pub p50_ms: f64,
    /// Broker p95 − in-process p95.
    pub p95_ms: f64,
    /// The broker row's name.
    pub broker: &'static str,
    /// The in-process row's name.
    pub in_process: &'static str,
}

/// Prints rows and counts failures.
struct Out {
    json: bool,
    failed: usize,
}

impl Out {
    fn row(&mut self, row: &TimingRow) {
        if row.failures > 0 {
            self.failed += 1;
        }
        if self.json {
            report::print_json(row);
        } else {
            println!("{}", row.human());
        }
    }

    fn overhead(&mut self, row: &OverheadRow) {
        if self.json {
            report::print_json(row);
        } else {
            println!("{}: p50 {:+.3} ms, p95 {:+.3} ms per call ({} calls)", row.name, row.p50_ms, row.p95_ms, row.n);
        }
    }

    fn error(&mut self, name: &'static str, observer: &str, page: Option<&str>, error: String) {
        self.failed += 1;
        let row = ErrorRow { name, n: None, observer: observer.into(), page: page.map(str::to_owned), error };
        if self.json {
            report::print_json(&row);
        } else {
            eprintln!("browserd-bench: FAILED {name} {observer}: {}", row.error);
        }
    }
}

fn timing_row(name: &str, observer: &str, samples: &[f64], failures: usize) -> Option<TimingRow> {
    Some(TimingRow {
        name: name.to_owned(),
        observer: Some(observer.to_owned()),
        n: Some(samples.len()),
        timing: Summary::of(samples)?,
        failures,
    })
}

fn overhead(
    name: &'static str,
    broker: (&'static str, &TimingRow),
    in_process: (&'static str, &TimingRow),
) -> OverheadRow {
    OverheadRow {
        name,
        n: broker.1.timing.runs.min(in_process.1.timing.runs),
        p50_ms: round3(broker.1.timing.p50_ms - in_process.1.timing.p50_ms),
        p95_ms: round3(broker.1.timing.p95_ms - in_process.1.timing.p95_ms),
        broker: broker.0,
        in_process: in_process.0,
    }
}

/// A broker session with the tools activated and one tab.
struct BrokerTab {
    client: Client,
    session: SessionId,
    tab: u64,
}

async fn open_tab(broker: &Broker, url: &str) -> Result<BrokerTab, String> {
    let client = broker_soak::connect(broker).await?;
    let opened = client
        .call(&SessionOpenParams {
            host: HostKind::Mcp,
            host_session_id: "broker-rtt".into(),
            label: None,
            policy: None,
            browser: None,
        })
        .await
        .map_err(|e| format!("session.open: {e}"))?;
    client
        .call(&ToolsActivateParams { session: opened.session.clone(), advanced: false })
        .await
        .map_err(|e| format!("tools.activate: {e}"))?;
    let opened_tab = client
        .tool(&opened.session, "browser_open", json!({"url": url}))
        .await
        .map_err(|e| format!("browser_open {url}: {e}\n{}", broker.log()))?;
    let tab = opened_tab["tab"].as_u64().ok_or_else(|| format!("browser_open returned no tab: {opened_tab}"))?;
    Ok(BrokerTab { client, session: opened.session, tab })
}

impl BrokerTab {
    async fn navigate(&self, url: &str) -> Result<(), String> {
        let params = act_args(self.tab, ActParams::new(ActionKind::Navigate).value(url))?;
        let result = self.client.tool(&self.session, "browser_act", params).await.map_err(|e| e.to_string())?;
        let result: ActionResult =
            serde_json::from_value(result).map_err(|e| format!("browser_act did not return an action result: {e}"))?;
        if result.outcome != Outcome::Succeeded {
            return Err(format!("navigating to {url}: {:?} {}", result.outcome, result.message.unwrap_or_default()));
        }
        Ok(())
    }

    async fn observe(&self) -> Result<Value, String> {
        self.client.tool(&self.session, "browser_observe", json!({"tab": self.tab})).await.map_err(|e| e.to_string())
    }
}

fn act_args(tab: u64, params: ActParams) -> Result<Value, String> {
    let params = ActParams { tab: Some(TabId(tab)), ..params };
    serde_json::to_value(&params).map_err(|e| format!("cannot serialise the action: {e}"))
}

/// Whether a `browser_observe` result is an observation with content.
fn observed(value: Value) -> Result<(), String> {
    let observation: Observation =
        serde_json::from_value(value).map_err(|e| format!("browser_observe did not return an observation: {e}"))?;
    if observation.untrusted_content.is_empty() {
        return Err("the observation has no content".into());
    }
    Ok(())
}

/// Whether a `browser_act` click result succeeded, was observed and passed its expectation.
fn clicked(value: Value) -> Result<(), String> {
    let r: ActionResult =
        serde_json::from_value(value).map_err(|e| format!("browser_act did not return an action result: {e}"))?;
    if r.outcome == Outcome::Succeeded && r.postcondition == Postcondition::Passed && r.dispatch == Dispatch::Observed {
        Ok(())
    } else {
        Err(format!("{:?}/{:?}/{:?} {}", r.outcome, r.postcondition, r.dispatch, r.message.unwrap_or_default()))
    }
}

/// Times `n` calls of `f`, checking each result with `check` after the clock stops; returns the samples, the
/// failures and the first failure.
async fn series<F, Fut>(n: usize, mut f: F, check: fn(Value) -> Result<(), String>) -> (Vec<f64>, usize, Option<String>)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Value, String>>,
{
    let mut samples = Vec::with_capacity(n);
    let mut failures = 0;
    let mut first = None;
    for _ in 0..n {
        let started = Instant::now();
        let outcome = f().await;
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        if let Err(e) = outcome.and_then(check) {
            failures += 1;
            first.get_or_insert(e);
        }
    }
    (samples, failures, first)
}

/// Runs the broker round-trip benchmarks with `--broker-rtt N` calls per measure; returns the number of failed
/// measurements.
pub async fn run(args: &crate::run::Args) -> usize {
    let n = args.broker_rtt;
    let mut out = Out { json: args.json, failed: 0 };
    let site = match FixtureSite::start().await {
        Ok(site) => site,
        Err(e) => {
            out.error("broker", "browserd-broker", None, format!("cannot start the fixture site: {e}"));
            return out.failed;
        }
    };
    let failed = measure(args, n, &site, &mut out).await;
    site.shutdown().await;
    failed
}

async fn measure(args: &crate::run::Args, n: usize, site: &FixtureSite, out: &mut Out) -> usize {
    const BROKER: &str = "browserd-broker";
    let broker = match broker_soak::start(&broker_soak::browserd_exe(args), args.chromium.as_deref()) {
        Ok(b) => b,
        Err(e) => {
            out.error("broker", BROKER, None, e);
            return out.failed;
        }
    };
    // 1. connect + hello on a fresh connection.
    let first = match broker_soak::connect(&broker).await {
        Ok(c) => c,
        Err(e) => {
            out.error("broker", BROKER, None, e);
            return out.failed;
        }
    };
    eprintln!("browserd-bench: broker connect + hello ×{n}");
    let options = broker.options();
    for _ in 0..WARM_UP {
        let _ = Client::connect(&options).await;
    }
    let (samples, failures, first_error) = series(
        n,
        || async { Client::connect(&options).await.map(|_| Value::Null).map_err(|e| e.to_string()) },
        |_| Ok(()),
    )
    .await;
    if let Some(row) = timing_row("broker.hello", BROKER, &samples, failures) {
        out.row(&row);
    }
    if let Some(e) = first_error {
        out.error("broker.hello", BROKER, None, format!("{failures} of {n} connects failed; the first: {e}"));
    }

    // 2. warm status on one connection.
    eprintln!("browserd-bench: broker status ×{n}");
    for _ in 0..WARM_UP {
        let _ = first.call(&StatusParams::default()).await;
    }
    let (samples, failures, first_error) = series(
        n,
        || async { first.call(&StatusParams::default()).await.map(|_| Value::Null).map_err(|e| e.to_string()) },
        |_| Ok(()),
    )
    .await;
    if let Some(row) = timing_row("broker.status", BROKER, &samples, failures) {
        out.row(&row);
    }
    if let Some(e) = first_error {
        out.error("broker.status", BROKER, None, format!("{failures} of {n} status calls failed; the first: {e}"));
    }

    // 3. and 4. tool calls through the broker (its managed Chromium starts at the first browser use).
    eprintln!("browserd-bench: broker tool.call browser_observe {OBSERVE_PAGE} ×{n}");
    let broker_observe = broker_observe(&broker, site, n, out).await;
    eprintln!("browserd-bench: broker tool.call browser_act click {CLICK_NAME:?} on {CLICK_PAGE} ×{n}");
    let broker_act = broker_act(&broker, site, n, out).await;
    let _ = first.shutdown_broker().await;
    drop(first);
    drop(broker);

    // The same provider calls in process, on a managed Chromium of their own.
    let chromium = args.chromium.clone().unwrap_or_else(chromium_from_env);
    let options = BrowserdOptions {
        chromium,
        budget: Budget::Default,
        call_timeout: std::time::Duration::from_secs(60),
        change: crate::browserd::PageChange::None,
        dom_first: browserd_chromium::DomFirst::Auto,
    };
    let mut observer = match BrowserdObserver::start(&options).await {
        Ok(o) => o,
        Err(e) => {
            out.error("inprocess", "browserd", None, e.to_string());
            return out.failed;
        }
    };
    eprintln!("browserd-bench: in-process observe {OBSERVE_PAGE} ×{n}");
    let inprocess_observe = match observer.observe(&site.url(OBSERVE_PAGE), n + WARM_UP).await {
        Ok(o) => timing_row("inprocess.observe", "browserd", &o.ms_runs[WARM_UP.min(o.ms_runs.len())..], o.failures),
        Err(e) => {
            out.error("inprocess.observe", "browserd", Some(OBSERVE_PAGE), e.to_string());
            None
        }
    };
    eprintln!("browserd-bench: in-process click {CLICK_NAME:?} on {CLICK_PAGE} ×{n}");
    let inprocess_act = match observer.click(&site.url(CLICK_PAGE), "button", CLICK_NAME, n + WARM_UP).await {
        Ok(o) => timing_row("inprocess.act", "browserd", &o.ms_runs[WARM_UP.min(o.ms_runs.len())..], o.failures),
        Err(e) => {
            out.error("inprocess.act", "browserd", Some(CLICK_PAGE), e.to_string());
            None
        }
    };
    Box::new(observer).close().await;

    for row in [&inprocess_observe, &inprocess_act].into_iter().flatten() {
        out.row(row);
    }
    if let (Some(b), Some(i)) = (&broker_observe, &inprocess_observe) {
        out.overhead(&overhead("broker.overhead.observe", ("broker.tool.observe", b), ("inprocess.observe", i)));
    }
    if let (Some(b), Some(i)) = (&broker_act, &inprocess_act) {
        out.overhead(&overhead("broker.overhead.act", ("broker.tool.act", b), ("inprocess.act", i)));
    }
    out.failed
}

async fn broker_observe(broker: &Broker, site: &FixtureSite, n: usize, out: &mut Out) -> Option<TimingRow> {
    const NAME: &str = "broker.tool.observe";
    let setup = async {
        let bt = open_tab(broker, "about:blank").await?;
        bt.navigate(&site.url(OBSERVE_PAGE)).await?;
        for _ in 0..WARM_UP {
            observed(bt.observe().await?)?;
        }
        Ok::<_, String>(bt)
    };
    let bt = match setup.await {
        Ok(bt) => bt,
        Err(e) => {
            out.error(NAME, "browserd-broker", Some(OBSERVE_PAGE), e);
            return None;
        }
    };
    let (samples, failures, first) = series(n, || bt.observe(), observed).await;
    let row = timing_row(NAME, "browserd-broker", &samples, failures)?;
    out.row(&row);
    if let Some(e) = first {
        out.error(NAME, "browserd-broker", Some(OBSERVE_PAGE), format!("{failures} of {n} failed; the first: {e}"));
    }
    Some(row)
}

async fn broker_act(broker: &Broker, site: &FixtureSite, n: usize, out: &mut Out) -> Option<TimingRow> {
    const NAME: &str = "broker.tool.act";
    let setup = async {
        let bt = open_tab(broker, "about:blank").await?;
        bt.navigate(&site.url(CLICK_PAGE)).await?;
        let observation: Observation = serde_json::from_value(bt.observe().await?)
            .map_err(|e| format!("browser_observe did not return an observation: {e}"))?;
        let target = find_ref(&observation.untrusted_content, "button", CLICK_NAME)
            .ok_or_else(|| format!("no button {CLICK_NAME:?} with a ref in the observation"))?;
        // The same click as in process: the clicked button has the focus afterwards.
        let params = ActParams::new(ActionKind::Click)
            .target(target.clone())
            .expect(Expectation::State { target: target.into(), state: "focused".into() });
        let args = act_args(bt.tab, params)?;
        for _ in 0..WARM_UP {
            clicked(bt.client.tool(&bt.session, "browser_act", args.clone()).await.map_err(|e| e.to_string())?)?;
        }
        Ok::<_, String>((bt, args))
    };
    let (bt, args) = match setup.await {
        Ok(v) => v,
        Err(e) => {
            out.error(NAME, "browserd-broker", Some(CLICK_PAGE), e);
            return None;
        }
    };
    let call = || async { bt.client.tool(&bt.session, "browser_act", args.clone()).await.map_err(|e| e.to_string()) };
    let (samples, failures, first) = series(n, call, clicked).await;
    let row = timing_row(NAME, "browserd-broker", &samples, failures)?;
    out.row(&row);
    if let Some(e) = first {
        out.error(NAME, "browserd-broker", Some(CLICK_PAGE), format!("{failures} of {n} failed; the first: {e}"));
    }
    Some(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_is_the_difference_of_the_percentiles() {
        let broker = timing_row("broker.tool.observe", "browserd-broker", &[3.0, 4.0, 5.0], 0).unwrap();
        let in_process = timing_row("inprocess.observe", "browserd", &[1.0, 1.5, 2.0], 0).unwrap();
        let row =
            overhead("broker.overhead.observe", ("broker.tool.observe", &broker), ("inprocess.observe", &in_process));
        assert_eq!((row.n, row.p50_ms, row.p95_ms), (3, 2.5, 3.0));
        let json = serde_json::to_value(&row).unwrap();
        assert_eq!(json["name"], "broker.overhead.observe");
        assert!(json["p50_ms"].is_number() && json["p95_ms"].is_number() && json["n"] == 3);
    }

    #[test]
    fn action_arguments_name_the_tab_and_the_expectation() {
        let params = ActParams::new(ActionKind::Click)
            .target("e3")
            .expect(Expectation::State { target: "e3".into(), state: "focused".into() });
        let args = act_args(7, params).unwrap();
        assert_eq!(args["tab"], 7);
        assert_eq!(args["action"], "click");
        assert_eq!(args["target"], "e3");
        assert_eq!(args["expected"][0]["kind"], "state");
    }

    #[test]
    fn click_results_must_pass_their_expectation() {
        assert!(clicked(json!({"nope": 1})).is_err());
        assert!(observed(json!({"url": "x"})).is_err());
    }
}
