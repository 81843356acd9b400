//! Measures browserd against a Browserless grid on this machine and prints p50/p95: connect time, the observe and act
//! round trip next to the managed pipe in the same run, the reconnect time after a grid restart, and how many parallel
//! brokers' browsers one machine sustains (each doing open → observe → act). Browserless is a test component only.
//!
//! `cargo run -p browserd-broker --example grid_bench -- [ROUNDS] [MAX_PARALLEL]` (numbers in docs/grid.md)

use std::sync::Arc;
use std::time::{Duration, Instant};

use browserd_broker::config::BrowserChoice;
use browserd_broker::lazy::{BrowserTarget, LazyChromium, LazyOptions};
use browserd_cdp::{ConnectOptions, LaunchOptions};
use browserd_chromium::{ChromiumConfig, ChromiumProvider};
use browserd_core::provider::{CreateTab, HandleAllocator, OpContext, Provider, SessionKey};
use browserd_protocol::{ActParams, ActionKind, ObserveParams};
use browserd_test_support::browserless::{Browserless, Options};
use browserd_test_support::fixtures::FixtureSite;

fn ctx() -> OpContext {
    OpContext::new(SessionKey("bench".into()), Duration::from_secs(30), "bench")
}

fn pct(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    (at(0.5), at(0.95))
}

fn show(what: &str, v: Vec<f64>) -> (f64, f64) {
    let n = v.len();
    let (p50, p95) = pct(v);
    println!("{what:<44} p50 {p50:>8.1} ms  p95 {p95:>8.1} ms  (n={n})");
    (p50, p95)
}

/// Opens the counter page and measures `rounds` observations and clicks.
async fn round_trips(p: &dyn Provider, site: &FixtureSite, rounds: usize) -> (Vec<f64>, Vec<f64>) {
    let tab = p.create_tab(&ctx(), CreateTab { url: site.url("/"), background: true, group_for: None }).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    p.attach_debugger(&ctx(), tab.tab).await.unwrap();
    let (mut obs, mut act) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        let o = p.observe(&ctx(), tab.tab, &ObserveParams::default()).await.unwrap();
        obs.push(t.elapsed().as_secs_f64() * 1000.0);
        let target = o
            .untrusted_content
            .lines()
            .find(|l| browserd_protocol::line_ref(l).is_some() && (l.contains("link") || l.contains("button")))
            .map(|l| browserd_protocol::line_ref(l).expect("a ref line").to_owned())
            .expect("a link or button on the index");
        let t = Instant::now();
        let _ = p.act(&ctx(), tab.tab, &ActParams::new(ActionKind::Hover).target(&target)).await;
        act.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let _ = p.close_tab(&ctx(), tab.tab).await;
    (obs, act)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    let max_parallel: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(8);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at start: {}", load.trim());
    let mut grid = Browserless::start(Options { concurrent: 16, queued: 16, ..Options::default() }).await;
    let site = FixtureSite::start().await.unwrap();
    let url = grid.ws_url("");

    let mut connect = Vec::new();
    for _ in 0..rounds.min(10) {
        let t = Instant::now();
        let p = ChromiumProvider::connect_remote_with(
            &url,
            ConnectOptions::default(),
            &[],
            HandleAllocator::new(),
            ChromiumConfig::default(),
        )
        .await
        .unwrap();
        connect.push(t.elapsed().as_secs_f64() * 1000.0);
        drop(p);
    }
    show("connect (Browserless, a fresh browser each)", connect);

    let remote = ChromiumProvider::connect_remote_with(
        &url,
        ConnectOptions::default(),
        &[],
        HandleAllocator::new(),
        ChromiumConfig::default(),
    )
    .await
    .unwrap();
    let (robs, ract) = round_trips(&*remote, &site, rounds).await;
    drop(remote);
    let (managed, browser) =
        ChromiumProvider::launch_managed(LaunchOptions::default(), HandleAllocator::new(), ChromiumConfig::default())
            .await
            .unwrap();
    let (mobs, mact) = round_trips(&*managed, &site, rounds).await;
    drop(managed);
    let _ = browser.shutdown().await;
    let (ro, _) = show("observe, Browserless", robs);
    let (mo, _) = show("observe, managed pipe", mobs);
    let (ra, _) = show("act (hover), Browserless", ract);
    let (ma, _) = show("act (hover), managed pipe", mact);
    println!("ratio Browserless/managed (p50): observe {:.2}, act {:.2}", ro / mo, ra / ma);

    // Reconnect after a grid restart, through the broker's browser (its supervisor brings it back).
    let options = LazyOptions { backoff: Duration::from_millis(100), ..LazyOptions::default() };
    let lazy = Arc::new(LazyChromium::with_options(
        BrowserTarget::Remote(url.clone()),
        ChromiumConfig::default(),
        BrowserChoice::Remote,
        options,
    ));
    let cancel = tokio_util::sync::CancellationToken::new();
    tokio::spawn(lazy.clone().supervise(cancel.clone()));
    let mut reconnect = Vec::new();
    lazy.connect(&ctx()).await.unwrap();
    for n in 0..rounds.min(5) {
        grid.restart().await;
        let mut took = None;
        for _ in 0..1200 {
            let r = lazy.reconnect_status();
            if r.reconnects as usize > n {
                took = r.last_reconnect_ms;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        reconnect.push(took.expect("reconnected") as f64);
    }
    cancel.cancel();
    show("reconnect after a grid restart (loss → connected)", reconnect);

    // Parallel brokers' browsers: each connects and does open → observe → act at once.
    for n in (2..=max_parallel).step_by(2) {
        let t = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..n {
            let (url, site_url) = (url.clone(), site.url("/"));
            tasks.push(tokio::spawn(async move {
                let p = ChromiumProvider::connect_remote_with(
                    &url,
                    ConnectOptions::default(),
                    &[],
                    HandleAllocator::new(),
                    ChromiumConfig::default(),
                )
                .await?;
                let tab = p.create_tab(&ctx(), CreateTab { url: site_url, background: true, group_for: None }).await?;
                tokio::time::sleep(Duration::from_millis(300)).await;
                p.attach_debugger(&ctx(), tab.tab).await?;
                let started = Instant::now();
                p.observe(&ctx(), tab.tab, &ObserveParams::default()).await?;
                Ok::<f64, browserd_core::provider::ProviderError>(started.elapsed().as_secs_f64() * 1000.0)
            }));
        }
        let mut ok = Vec::new();
        let mut failed = 0;
        for task in tasks {
            match task.await.unwrap() {
                Ok(ms) => ok.push(ms),
                Err(e) => {
                    failed += 1;
                    eprintln!("  parallel {n}: {e}");
                }
            }
        }
        let all = t.elapsed().as_secs_f64();
        if ok.is_empty() {
            println!("parallel {n}: all failed");
            break;
        }
        let (p50, p95) = pct(ok.clone());
        println!(
            "parallel {n:>2}: {} ok, {failed} failed in {all:.1} s; observe under load p50 {p50:.1} ms p95 {p95:.1} ms",
            ok.len()
        );
    }
    println!("load average at end: {}", std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim());
    site.shutdown().await;
}
