//! Measures the CDP round trip over the pipe: `Runtime.evaluate 1+1` on a page session, p50/p95/p99/max in ms.
//!
//! `cargo run --release -p browserd-cdp --example cdp_rtt -- [N]` (N defaults to 1000, after 50 warm-up calls).

use std::time::{Duration, Instant};

use browserd_cdp::{LaunchOptions, ManagedBrowser, SessionId};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).map(|n| n.parse()).transpose()?.unwrap_or(1000);
    let timeout = Duration::from_secs(10);
    let browser = ManagedBrowser::launch(LaunchOptions::default()).await?;
    let cdp = browser.cdp();
    let target = cdp.call(None, "Target.createTarget", json!({"url": "about:blank"}), timeout).await?;
    let attached = cdp
        .call(None, "Target.attachToTarget", json!({"targetId": target["targetId"], "flatten": true}), timeout)
        .await?;
    let session = SessionId(attached["sessionId"].as_str().ok_or("no sessionId")?.to_owned());
    let params = json!({"expression": "1+1", "returnByValue": true});
    for _ in 0..50 {
        cdp.call(Some(&session), "Runtime.evaluate", params.clone(), timeout).await?;
    }
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        cdp.call(Some(&session), "Runtime.evaluate", params.clone(), timeout).await?;
        samples.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    let line = json!({
        "name": "cdp_pipe_rtt_runtime_evaluate",
        "product": browser.product(),
        "n": n,
        "p50_ms": at(0.50),
        "p95_ms": at(0.95),
        "p99_ms": at(0.99),
        "max_ms": at(1.0),
    });
    browser.shutdown().await?;
    // An example binary: its output is the measurement.
    #[allow(clippy::print_stdout)]
    {
        println!("{line}");
    }
    Ok(())
}
