//! `browserd demo`: an agent session on a managed Chromium through three turns, printed step by step.
//!
//! What it starts: the loopback fixture site (two ports: `127.0.0.1` and `localhost`, so cross-site
//! frames are real), a managed Chromium over `--remote-debugging-pipe` (headless unless `--headed`),
//! and the lifecycle runtime with the Chromium provider. What it needs: a Chromium-family
//! executable (`apt-get install chromium`, or `BROWSERD_CHROMIUM`). Everything it opens is closed
//! by the runtime's own lifecycle rules; the browser is shut down at the end.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use browserd_broker::to_proto;
use browserd_cdp::LaunchOptions;
use browserd_chromium::{ChromiumConfig, ChromiumProvider};
use browserd_core::clock::SystemClock;
use browserd_core::lifecycle::{CleanupReport, FinalizeInputs, TabView};
use browserd_core::provider::{HandleAllocator, SessionKey, TabHandle};
use browserd_core::runtime::{Runtime, RuntimeConfig};
use browserd_fixtures::FixtureSite;
use browserd_protocol::{ActParams, ActionKind, ActionResult, Expectation, NodeRef, Observation, ObserveParams};
use serde_json::{Value, json};

/// Options of `browserd demo`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct DemoArgs {
    /// Show the browser window instead of running headless.
    #[arg(long)]
    headed: bool,
    /// Print one JSON object per step instead of text.
    #[arg(long)]
    json: bool,
}

/// Prints steps as text or JSON lines.
struct Printer {
    json: bool,
    started: Instant,
}

impl Printer {
    fn step(&self, turn: u64, step: &str, ms: f64, text: &str, details: Value) {
        if self.json {
            let mut obj = json!({ "turn": turn, "step": step, "ms": round(ms), "summary": text });
            if let (Some(o), Value::Object(d)) = (obj.as_object_mut(), details) {
                o.extend(d);
            }
            println!("{obj}");
        } else {
            println!("[turn {turn}] {step:<12} {text}  ({ms:.0} ms)");
        }
    }

    fn note(&self, text: &str) {
        if !self.json {
            println!("{text}");
        }
    }
}

fn round(ms: f64) -> f64 {
    (ms * 10.0).round() / 10.0
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// Runs the demo; returns the process exit code.
pub(crate) async fn run(args: DemoArgs) -> Result<i32> {
    let p = Printer { json: args.json, started: Instant::now() };
    p.note("browserd demo — an agent session on a managed Chromium, three turns");

    let t = Instant::now();
    let site = FixtureSite::start().await.context("starting the loopback fixture site")?;
    let opts = LaunchOptions { headless: !args.headed, ..LaunchOptions::default() };
    let (provider, browser) =
        ChromiumProvider::launch_managed(opts, HandleAllocator::new(), ChromiumConfig::default()).await.context(
            "launching the managed Chromium (install it with `apt-get install chromium` or set BROWSERD_CHROMIUM)",
        )?;
    let runtime = Runtime::new(provider.clone(), Arc::new(SystemClock::new()), RuntimeConfig::default());
    p.step(0, "start", ms_since(t), &format!("fixture site {} + managed Chromium", site.url("/")), json!({}));

    let outcome = session(&p, &runtime, &site).await;
    let t = Instant::now();
    if let Err(e) = browser.shutdown().await {
        eprintln!("warning: the managed Chromium did not shut down cleanly: {e}");
    }
    p.step(3, "shutdown", ms_since(t), "browser closed", json!({}));
    match outcome {
        Ok(()) => {
            p.note(&format!("demo finished in {:.1} s", p.started.elapsed().as_secs_f64()));
            Ok(0)
        }
        Err(e) => {
            eprintln!("demo failed: {e:#}");
            Ok(1)
        }
    }
}

async fn session(p: &Printer, rt: &Runtime, site: &FixtureSite) -> Result<()> {
    let s = SessionKey("demo".into());
    rt.open_session(&s).await?;
    rt.activate_tools(&s).await?;

    // ---- Turn 1: fill a form, hit an overlay, mark the form deliverable.
    let turn = rt.begin_turn(&s).await?;
    let form = open(p, rt, &s, turn, &site.url("/form.html")).await?;
    let obs = observe(p, rt, &s, turn, form.tab).await?;
    let name = find_ref(&obs.untrusted_content, "textbox", "Full name")?;
    let email = find_ref(&obs.untrusted_content, "textbox", "Email")?;
    let submit = find_ref(&obs.untrusted_content, "button", "Submit")?;
    act(p, rt, &s, turn, form.tab, "fill", fill(&name, "张伟 Zhang Wei")).await?;
    act(p, rt, &s, turn, form.tab, "fill", fill(&email, "zhang.wei@example.com")).await?;
    let click = ActParams::new(ActionKind::Click)
        .target(submit.0.clone())
        .expect(Expectation::TextPresent { text: "zhang.wei@example.com".into() });
    act(p, rt, &s, turn, form.tab, "click", click).await?;

    let overlay = open(p, rt, &s, turn, &site.url("/overlay.html")).await?;
    let obs = observe(p, rt, &s, turn, overlay.tab).await?;
    let subscribe = find_ref(&obs.untrusted_content, "button", "Subscribe")?;
    let res = act(p, rt, &s, turn, overlay.tab, "click", ActParams::new(ActionKind::Click).target(subscribe.0)).await?;
    if res.code.as_deref() != Some("NOT_ACTIONABLE") {
        bail!("expected the covered button to be NOT_ACTIONABLE, got {:?}", res.code);
    }

    let t = Instant::now();
    rt.mark_deliverable(&s, form.tab).await?;
    p.step(turn, "mark", ms_since(t), &format!("{} deliverable", form.tab), json!({"tab": form.tab.0}));
    turn_end(p, rt, &s, turn).await?;

    // ---- Turn 2: the deliverable is still there; it is not marked again, so it goes at turn end.
    let turn = rt.begin_turn(&s).await?;
    list(p, rt, &s, turn).await?;
    let obs = observe(p, rt, &s, turn, form.tab).await?;
    if !obs.untrusted_content.contains("zhang.wei@example.com") {
        bail!("the deliverable tab lost its submitted result");
    }
    turn_end(p, rt, &s, turn).await?;

    // ---- Turn 3: hand a page to the user, finalize on request; tools stay active.
    let turn = rt.begin_turn(&s).await?;
    let toast = open(p, rt, &s, turn, &site.url("/toast.html")).await?;
    let scratch = open(p, rt, &s, turn, &site.url("/duplicates.html")).await?;
    let t = Instant::now();
    rt.mark_handoff(&s, toast.tab).await?;
    p.step(turn, "mark", ms_since(t), &format!("{} handoff", toast.tab), json!({"tab": toast.tab.0}));
    let t = Instant::now();
    let report = rt.finalize(&s, &FinalizeInputs::default()).await?;
    let wire = serde_json::to_value(to_proto::cleanup_result(&report))?;
    p.step(turn, "cleanup", ms_since(t), &compact(&wire), json!({ "result": wire }));
    if !report.closed.contains(&scratch.tab) || !report.tools_active {
        bail!("finalize should close the scratch tab and keep tools active: {report:?}");
    }
    turn_end(p, rt, &s, turn).await?;
    list(p, rt, &s, turn).await?;
    Ok(())
}

fn fill(target: &NodeRef, text: &str) -> ActParams {
    ActParams::new(ActionKind::Fill)
        .target(target.0.clone())
        .value(text)
        .expect(Expectation::Value { target: target.clone(), equals: text.into() })
}

async fn open(p: &Printer, rt: &Runtime, s: &SessionKey, turn: u64, url: &str) -> Result<TabView> {
    let t = Instant::now();
    let tab = rt.open_tab(s, url).await?;
    let path = url.split_once("//").map_or(url, |(_, rest)| rest.split_once('/').map_or(rest, |(_, p)| p));
    p.step(turn, "open", ms_since(t), &format!("/{path} → {}", tab.tab), json!({"tab": tab.tab.0, "url": url}));
    Ok(tab)
}

async fn observe(p: &Printer, rt: &Runtime, s: &SessionKey, turn: u64, tab: TabHandle) -> Result<Observation> {
    let t = Instant::now();
    let obs = rt.observe(s, tab, &ObserveParams::default()).await?;
    let ms = ms_since(t);
    p.step(
        turn,
        "observe",
        ms,
        &format!("{tab}: {} nodes, {} bytes", obs.node_count, obs.untrusted_content.len()),
        json!({"tab": tab.0, "nodes": obs.node_count, "bytes": obs.untrusted_content.len(), "untrustedContent": obs.untrusted_content}),
    );
    if !p.json {
        for line in obs.untrusted_content.lines().filter(|l| browserd_protocol::line_ref(l).is_some()).take(12) {
            println!("             │ {line}");
        }
    }
    Ok(obs)
}

async fn act(
    p: &Printer,
    rt: &Runtime,
    s: &SessionKey,
    turn: u64,
    tab: TabHandle,
    what: &str,
    params: ActParams,
) -> Result<ActionResult> {
    let t = Instant::now();
    let res = rt.act(s, tab, &params, None).await?;
    let ms = ms_since(t);
    let target = params.target.as_ref().map_or(String::new(), |r| r.0.clone());
    let wire = serde_json::to_value(&res)?;
    let field = |k: &str| wire.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let mut text = format!(
        "{what} {target}: outcome {}, dispatch {}, postcondition {}",
        field("outcome"),
        field("dispatch"),
        field("postcondition")
    );
    if let Some(code) = &res.code {
        text.push_str(&format!(", {code}"));
    }
    if let Some(c) = &res.covering {
        text.push_str(&format!(" — covered by [{}] {} \"{}\"", c.node.0, c.role, c.name));
    }
    p.step(turn, "act", ms, &text, json!({"tab": tab.0, "result": wire}));
    Ok(res)
}

async fn turn_end(p: &Printer, rt: &Runtime, s: &SessionKey, turn: u64) -> Result<CleanupReport> {
    let t = Instant::now();
    let report = rt.end_turn(s).await?;
    let wire = serde_json::to_value(to_proto::turn_end_result(&report, turn))?;
    p.step(turn, "turn end", ms_since(t), &compact(&wire), json!({ "result": wire }));
    Ok(report)
}

async fn list(p: &Printer, rt: &Runtime, s: &SessionKey, turn: u64) -> Result<()> {
    let t = Instant::now();
    let tabs: Vec<_> = rt.list_tabs(s).await?.iter().map(to_proto::listed_tab).collect();
    let wire = serde_json::to_value(&tabs)?;
    let text = tabs
        .iter()
        .map(|v| {
            let v = serde_json::to_value(v).unwrap_or_default();
            let field = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
            let mark = field("mark");
            let mark = if mark.is_empty() { String::new() } else { format!(" marked {mark}") };
            let state = field("state");
            let state = if state.is_empty() { String::new() } else { format!(" {state}") };
            format!("t{} {}{state}{mark}", v.get("tab").unwrap_or(&Value::Null), field("provenance"))
        })
        .collect::<Vec<_>>()
        .join(", ");
    p.step(turn, "list", ms_since(t), &format!("tabs: {text}"), json!({ "tabs": wire }));
    Ok(())
}

/// One-line JSON of a wire result.
fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Finds the ref of the first line `ref role "name…"` in an observation.
fn find_ref(content: &str, role: &str, name: &str) -> Result<NodeRef> {
    let needle = format!("{role} \"{name}");
    content
        .lines()
        .find_map(|l| {
            let (r, rest) = browserd_protocol::split_ref(l)?;
            rest.starts_with(&needle).then(|| NodeRef::new(r))
        })
        .with_context(|| format!("no {role} \"{name}\" in the observation"))
}
