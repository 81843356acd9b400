//! Measures the warm broker round trip: `status` through a real broker (fake provider, one session with one tab)
//! over its Unix socket, p50/p95 over many calls, plus `hello` on a fresh connection.
//!
//! Run: `cargo run --release -p browserd-broker --example broker_rtt -- [calls] [journal]` (default 5000 calls; with
//! `journal`, the broker keeps its de-duplication journal and audit ring in a temporary SQLite file).

use std::sync::Arc;
use std::time::{Duration, Instant};

use browserd_broker::client::{Client, ConnectOptions};
use browserd_broker::config::BrokerConfig;
use browserd_broker::server::Broker;
use browserd_core::clock::SystemClock;
use browserd_ipc::RuntimeDir;
use browserd_protocol::hello::ComponentRole;
use browserd_protocol::lifecycle::{HostKind, SessionOpenParams, StatusParams, ToolsActivateParams};
use browserd_test_support::fake_provider::FakeProvider;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{name}: n={} p50={:.1}µs p95={:.1}µs max={:.1}µs",
        samples.len(),
        percentile(&samples, 0.50).as_secs_f64() * 1e6,
        percentile(&samples, 0.95).as_secs_f64() * 1e6,
        samples.last().map_or(0.0, |d| d.as_secs_f64() * 1e6),
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let calls: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5000);
    let journal = std::env::args().nth(2).is_some_and(|a| a == "journal");
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("rt");
    let rdir = RuntimeDir::ensure(&dir)?;
    let broker = Broker::with_provider(
        Arc::new(FakeProvider::new()),
        Arc::new(SystemClock::new()),
        BrokerConfig { idle_exit_secs: 0, ..BrokerConfig::default() },
    );
    if journal {
        broker.set_journal_path(tmp.path().join("journal.sqlite3"));
    }
    println!("journal: {}", if journal { "on (audit ring written per call)" } else { "off" });
    let task = tokio::spawn({
        let broker = broker.clone();
        async move { broker.run(&rdir).await }
    });
    let options = ConnectOptions {
        role: ComponentRole::Cli,
        runtime_dir: Some(dir.clone()),
        spawn: false,
        timeout: None,
        broker_exe: None,
    };
    let client = loop {
        if let Ok(c) = Client::connect(&options).await {
            break c;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let opened = client
        .call(&SessionOpenParams {
            host: HostKind::Cli,
            host_session_id: "rtt".into(),
            label: None,
            policy: None,
            browser: None,
        })
        .await?;
    client.call(&ToolsActivateParams { session: opened.session.clone(), advanced: false }).await?;
    client.tool(&opened.session, "browser_open", serde_json::json!({"url": "https://a.test/"})).await?;

    for _ in 0..200 {
        client.call(&StatusParams::default()).await?;
    }
    let mut status = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        client.call(&StatusParams::default()).await?;
        status.push(start.elapsed());
    }
    report("warm status round trip", status);

    let mut list = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        client.tool(&opened.session, "browser_list", serde_json::json!({})).await?;
        list.push(start.elapsed());
    }
    report("warm tool.call browser_list round trip", list);

    let mut act = Vec::with_capacity(calls / 10);
    for i in 0..(calls / 10).max(100) {
        let params = browserd_protocol::tools::ToolCallParams {
            session: opened.session.clone(),
            name: "browser_act".into(),
            arguments: serde_json::json!({"action": "click", "target": "e1"}),
            call_id: Some(format!("rtt-{i}")),
        };
        let start = Instant::now();
        client.call(&params).await?;
        act.push(start.elapsed());
    }
    report("tool.call browser_act with a callId (fake browser)", act);

    let mut fresh = Vec::new();
    for _ in 0..(calls / 10).max(50) {
        let start = Instant::now();
        let c = Client::connect(&options).await?;
        fresh.push(start.elapsed());
        drop(c);
    }
    report("fresh connect + hello", fresh);

    client.shutdown_broker().await?;
    drop(client);
    let _ = task.await;
    Ok(())
}
