//! Benchmarks the extension relay in headless Chromium with the real extension and the real native host:
//! - `ping` (broker → host → service worker → back, no CDP);
//! - the CDP round trip `Runtime.evaluate 1+1` through the relay transport (host + extension + chrome.debugger), and
//!   the same call made with `chrome.debugger.sendCommand` inside the service worker (timed there, no host);
//! - the Stop gate: Stop from the broker while four input streams run, its round trip (the gate closes before the
//!   answer leaves), the gate-close time inside the service worker, and the inputs dispatched after Stop (must be 0);
//! - reconnect: SIGKILL the native host, time until the extension has paired again through a new host;
//! - browser launch → extension paired → tab open → first observation → first verified click (fresh profile each).
//!
//! `cargo build --release -p browserd-native --bins --examples && target/release/examples/relay_rtt \
//!  [n=1000] [stops=30] [reconnects=12] [launches=5]` (`RELAY_LOG=browserd_native=debug` prints the endpoint's log;
//! add `browserd_cdp::chromium_stderr=trace` and `BROWSERD_LOG=debug` for the native host's).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use browserd_cdp::{Cdp, ConnectionOptions, LaunchOptions, ManagedBrowser, SessionId};
use browserd_chromium::{ChromiumConfig, ChromiumProvider};
use browserd_core::provider::{CreateTab, HandleAllocator, OpContext, Provider, ProviderKind, SessionKey};
use browserd_native::ExtensionLink;
use browserd_native::install::{Brand, DEV_EXTENSION_ID, InstallOptions, Locations, install};
use browserd_native::link::{EndpointOptions, ExtensionEndpoint};
use browserd_protocol::{ActParams, ActionKind, Expectation, ObserveParams, Outcome};
use browserd_test_support::fixtures::FixtureSite;
use serde_json::{Value, json};

const SESSION: &str = "bench";
const T: Duration = Duration::from_secs(10);

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn summary(name: &str, mut v: Vec<f64>) {
    if v.is_empty() {
        println!("{name}: no samples");
        return;
    }
    v.sort_by(f64::total_cmp);
    let q = |f: f64| v[((v.len() as f64 - 1.0) * f).round() as usize];
    println!(
        "{name}: n={} p50 {:.3} ms, p95 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        v.len(),
        q(0.5),
        q(0.95),
        q(0.99),
        v[v.len() - 1]
    );
}

/// One browser with the extension, paired with a private endpoint.
struct Env {
    browser: ManagedBrowser,
    link: ExtensionLink,
    links: tokio::sync::mpsc::Receiver<ExtensionLink>,
    _endpoint: ExtensionEndpoint,
    _root: tempfile::TempDir,
}

/// Launches Chromium with the extension in a fresh profile; returns once the extension has paired, with the time from
/// the launch call to the pairing.
async fn launch(host_bin: &Path) -> anyhow::Result<(Env, Instant, Duration)> {
    let root = tempfile::tempdir()?;
    let run = root.path().join("run");
    std::fs::create_dir_all(&run)?;
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700))?;
    let socket = run.join("extension.sock");
    let (endpoint, mut links) = ExtensionEndpoint::bind(&socket, EndpointOptions::default()).await?;
    let profile = root.path().join("profile");
    let loc = Locations {
        home: root.path().join("home"),
        config_home: root.path().join("config"),
        data_dir: root.path().join("data"),
    };
    install(
        &loc,
        &InstallOptions {
            brands: vec![Brand::Chromium],
            user_data_dir: Some(profile.clone()),
            extension_ids: vec![],
            exe: host_bin.to_path_buf(),
        },
    )?;
    let ext = std::fs::canonicalize(concat!(env!("CARGO_MANIFEST_DIR"), "/../../extension"))?;
    let t0 = Instant::now();
    let browser = ManagedBrowser::launch(LaunchOptions {
        user_data_dir: Some(profile),
        extensions: vec![ext],
        env: vec![
            ("BROWSERD_EXTENSION_SOCKET".into(), socket.display().to_string()),
            ("XDG_RUNTIME_DIR".into(), run.display().to_string()),
            ("XDG_CONFIG_HOME".into(), root.path().join("xdg").display().to_string()),
        ],
        window_size: Some((1000, 800)),
        ..LaunchOptions::default()
    })
    .await?;
    let link = tokio::time::timeout(Duration::from_secs(30), links.recv())
        .await
        .context("the extension did not pair within 30 s")?
        .context("the endpoint stopped")?;
    let paired = t0.elapsed();
    Ok((Env { browser, link, links, _endpoint: endpoint, _root: root }, t0, paired))
}

/// Evaluates `expr` (awaited) in the extension's service worker over the browser's own DevTools pipe.
async fn sw_eval(browser: &ManagedBrowser, expr: &str, timeout: Duration) -> anyhow::Result<Value> {
    let cdp = browser.cdp();
    let targets = cdp.call(None, "Target.getTargets", json!({}), T).await?;
    let sw = targets["targetInfos"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|x| x["type"] == "service_worker" && x["url"].as_str().unwrap_or_default().contains(DEV_EXTENSION_ID))
        .context("the extension's service worker is not running")?["targetId"]
        .clone();
    let att = cdp.call(None, "Target.attachToTarget", json!({"targetId": sw, "flatten": true}), T).await?;
    let s = SessionId(att["sessionId"].as_str().unwrap_or_default().to_owned());
    let r = cdp
        .call(
            Some(&s),
            "Runtime.evaluate",
            json!({"expression": expr, "awaitPromise": true, "returnByValue": true}),
            timeout,
        )
        .await?;
    let _ = cdp.call(None, "Target.detachFromTarget", json!({"sessionId": s.0}), T).await;
    anyhow::ensure!(r.get("exceptionDetails").is_none(), "{expr} threw: {r}");
    Ok(r["result"]["value"].clone())
}

fn samples(v: &Value) -> Vec<f64> {
    v.as_array().into_iter().flatten().filter_map(Value::as_f64).collect()
}

async fn round_trips(env: &Env, n: usize) -> anyhow::Result<()> {
    let link = &env.link;
    let tab = link.create_tab(SESSION, "about:blank", true).await?;
    let mut ping = Vec::new();
    for i in 0..n + 50 {
        let t0 = Instant::now();
        link.call("ping", json!({})).await?;
        if i >= 50 {
            ping.push(ms(t0.elapsed()));
        }
    }
    let cdp = Cdp::spawn(link.relay_transport(SESSION), ConnectionOptions::default());
    let att = cdp.call(None, "Target.attachToTarget", json!({"targetId": tab.target_id, "flatten": true}), T).await?;
    let s = SessionId(att["sessionId"].as_str().unwrap_or_default().to_owned());
    let mut eval = Vec::new();
    for i in 0..n + 50 {
        let t0 = Instant::now();
        let r = cdp.call(Some(&s), "Runtime.evaluate", json!({"expression": "1+1", "returnByValue": true}), T).await?;
        anyhow::ensure!(r["result"]["value"] == 2);
        if i >= 50 {
            eval.push(ms(t0.elapsed()));
        }
    }
    // The same command made by the service worker itself (the tab is attached through the relay above).
    let raw = sw_eval(
        &env.browser,
        &format!(
            "(async () => {{ const out = []; for (let i = 0; i < {total}; i++) {{ const t0 = performance.now(); \
             const r = await chrome.debugger.sendCommand({{tabId: {tab}}}, 'Runtime.evaluate', \
             {{expression: '1+1', returnByValue: true}}); if (r.result.value !== 2) throw new Error('bad'); \
             if (i >= 50) out.push(performance.now() - t0); }} return out; }})()",
            total = n + 50,
            tab = tab.tab_id
        ),
        Duration::from_secs(120),
    )
    .await?;
    summary("ping (broker → host → service worker → back)", ping);
    summary("CDP Runtime.evaluate 1+1 through host + extension (relay transport)", eval);
    summary("raw chrome.debugger.sendCommand Runtime.evaluate 1+1, timed inside the service worker", samples(&raw));
    link.close_tab(SESSION, tab.tab_id).await?;
    Ok(())
}

async fn input(link: &ExtensionLink, tab: i64, fence: Value) -> Result<Value, browserd_native::link::ExtensionError> {
    link.call(
        "cdp.send",
        json!({"target": {"tabId": tab}, "method": "Input.dispatchMouseEvent",
               "params": {"type": "mouseMoved", "x": 5, "y": 5}, "fence": fence}),
    )
    .await
}

async fn stop_gate(env: &Env, stops: usize) -> anyhow::Result<()> {
    let link = &env.link;
    let tab = link.create_tab(SESSION, "about:blank", true).await?.tab_id;
    let (mut rtt, mut in_sw, mut dropped) = (Vec::new(), Vec::new(), 0u64);
    let mut after_stop = 0u64;
    let mut dispatched_total = 0u64;
    for k in 0..stops {
        link.call("debugger.attach", json!({"session": SESSION, "tabId": tab})).await?;
        let fence = link.grant_lease(SESSION, tab, k as u64 + 1).await?;
        let fence = json!({"token": fence.token, "epoch": fence.epoch});
        let acked = Arc::new(AtomicU64::new(0));
        let mut senders = Vec::new();
        for _ in 0..4 {
            let (link, fence, acked) = (link.clone(), fence.clone(), acked.clone());
            senders.push(tokio::spawn(async move {
                while input(&link, tab, fence.clone()).await.is_ok() {
                    acked.fetch_add(1, Ordering::SeqCst);
                }
            }));
        }
        while acked.load(Ordering::SeqCst) < 8 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let t0 = Instant::now();
        let report = link.stop("bench").await?;
        rtt.push(ms(t0.elapsed()));
        for s in senders {
            s.await?;
        }
        let status = link.status().await?;
        let dispatched = status["gate"]["dispatched"].as_u64().unwrap_or(0);
        after_stop += dispatched - report.dispatched_before_stop;
        dispatched_total = dispatched;
        dropped += report.dropped_inputs;
        if let Some(t) = report.timings {
            in_sw.push(t.gate_closed_ms);
        }
    }
    summary("Stop from the broker: round trip (gate closed, inputs dropped, debugger detached, answered)", rtt);
    summary("Stop: gate closed, timed inside the service worker from the start of Stop", in_sw);
    println!(
        "Stop: {stops} stops with 4 input streams each; {dispatched_total} inputs dispatched in all, {dropped} dropped \
         while queued, {after_stop} dispatched after Stop"
    );
    anyhow::ensure!(after_stop == 0, "{after_stop} inputs passed the gate after Stop");
    Ok(())
}

async fn reconnect(env: &mut Env, n: usize) -> anyhow::Result<()> {
    let mut v = Vec::new();
    for _ in 0..n {
        // A round trip first: the `welcome` that resets the extension's reconnect backoff went out before its answer,
        // so the extension is in its steady paired state when the host dies.
        env.link.call("ping", json!({})).await?;
        let pid = env.link.info().host_pid;
        let instance = env.link.info().instance.clone();
        let t0 = Instant::now();
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(pid)?), nix::sys::signal::SIGKILL)?;
        let Ok(link) = tokio::time::timeout(Duration::from_secs(30), env.links.recv()).await else {
            let status = sw_eval(&env.browser, "browserd.status()", T).await;
            anyhow::bail!("no re-pairing within 30 s; the extension says {status:?}");
        };
        let link = link.context("the endpoint stopped")?;
        v.push(ms(t0.elapsed()));
        tracing::info!(ms = ms(t0.elapsed()), pid = link.info().host_pid, "paired again");
        anyhow::ensure!(link.info().instance == instance, "the service worker restarted");
        anyhow::ensure!(link.info().host_pid != pid, "the same host");
        env.link = link;
    }
    summary("reconnect: native host SIGKILLed → extension paired again through a new host", v);
    Ok(())
}

async fn first_action(host_bin: &Path, site: &FixtureSite, launches: usize) -> anyhow::Result<()> {
    let (mut paired, mut first) = (Vec::new(), Vec::new());
    for _ in 0..launches {
        let (env, t0, to_pair) = launch(host_bin).await?;
        let cdp = Cdp::spawn(env.link.relay_transport(SESSION), ConnectionOptions::default());
        let p = ChromiumProvider::new(cdp, ProviderKind::Extension, HandleAllocator::new(), ChromiumConfig::default());
        let ctx = OpContext::new(SessionKey(SESSION.into()), Duration::from_secs(20), "bench-first");
        p.connect(&ctx).await?;
        let url = site.url("/duplicates.html");
        let tab = p.create_tab(&ctx, CreateTab { url: url.clone(), ..Default::default() }).await?;
        let tab_id = env
            .link
            .list_tabs()
            .await?
            .into_iter()
            .find(|t| t.url == url || t.target_id.as_deref() == p.target_id(tab.tab).as_deref())
            .context("the tab is listed")?
            .tab_id;
        env.link.grant_lease(SESSION, tab_id, 1).await?;
        let o = p.observe(&ctx, tab.tab, &ObserveParams::default()).await?;
        let line = o
            .untrusted_content
            .lines()
            .find(|l| l.contains("button \"Delete\" (in \"Team lunch\""))
            .context("the button is observed")?;
        let r#ref = browserd_protocol::line_ref(line).context("ref")?;
        let click = ActParams::new(ActionKind::Click)
            .target(r#ref)
            .expect(Expectation::TextPresent { text: "Deleted: Inbox / Team lunch".into() });
        let r = p.act(&ctx, tab.tab, &click).await?;
        anyhow::ensure!(r.outcome == Outcome::Succeeded, "the first click failed: {r:?}");
        first.push(ms(t0.elapsed()));
        paired.push(ms(to_pair));
        let _ = env.browser.shutdown().await;
    }
    summary("browser launch → extension paired (fresh profile)", paired);
    summary("browser launch → paired → tab open → observed → first verified click", first);
    Ok(())
}

fn arg(name: &str, default: usize) -> usize {
    std::env::args()
        .skip(1)
        .find_map(|a| a.strip_prefix(&format!("{name}=")).and_then(|v| v.parse().ok()))
        .unwrap_or(default)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    if let Ok(filter) = std::env::var("RELAY_LOG") {
        let filter = tracing_subscriber::EnvFilter::new(filter);
        let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
    }
    let (n, stops, reconnects, launches) =
        (arg("n", 1000), arg("stops", 30), arg("reconnects", 12), arg("launches", 5));
    let exe_dir = std::env::current_exe()?.parent().and_then(|p| p.parent()).map(PathBuf::from).context("exe dir")?;
    let host_bin = exe_dir.join("browserd-native");
    anyhow::ensure!(host_bin.exists(), "build the host first: cargo build --release -p browserd-native --bins");
    let site = FixtureSite::start().await?;

    let (mut env, _, to_pair) = launch(&host_bin).await?;
    println!("launch → extension paired: {:.0} ms", ms(to_pair));
    round_trips(&env, n).await?;
    stop_gate(&env, stops).await?;
    reconnect(&mut env, reconnects).await?;
    let _ = env.browser.shutdown().await;
    first_action(&host_bin, &site, launches).await?;
    site.shutdown().await;
    Ok(())
}
