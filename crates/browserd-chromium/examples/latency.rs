//! Measures observe latency on the small form fixture and click-with-expectation on a stable page (p50/p95).
//!
//! Run: `cargo run --release -p browserd-chromium --example latency -- [iterations]`. Prints one JSON line per measure.

use std::time::{Duration, Instant};

use browserd_cdp::LaunchOptions;
use browserd_chromium::{ChromiumConfig, ChromiumProvider};
use browserd_core::provider::{CreateTab, HandleAllocator, OpContext, Provider, SessionKey};
use browserd_protocol::{ActParams, ActionKind, Expectation, ObserveParams, Postcondition};
use browserd_test_support::fixtures::FixtureSite;

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let site = FixtureSite::start().await?;
    let dir = tempfile::tempdir()?;
    let opts = LaunchOptions {
        user_data_dir: Some(dir.path().join("profile")),
        env: vec![("XDG_CONFIG_HOME".into(), dir.path().join("xdg").display().to_string())],
        ..LaunchOptions::default()
    };
    let (p, browser) =
        ChromiumProvider::launch_managed(opts, HandleAllocator::new(), ChromiumConfig::default()).await?;
    let ctx = OpContext::new(SessionKey("bench".into()), Duration::from_secs(20), "bench");
    let tab = p.create_tab(&ctx, CreateTab { url: "about:blank".into(), ..Default::default() }).await?.tab;
    p.act(&ctx, tab, &ActParams::new(ActionKind::Navigate).value(site.url("/form.html"))).await?;
    let mut obs = Vec::new();
    let mut size = 0;
    for _ in 0..n {
        let t = Instant::now();
        let o = p.observe(&ctx, tab, &ObserveParams::default()).await?;
        obs.push(t.elapsed().as_secs_f64() * 1000.0);
        size = o.untrusted_content.len();
    }
    println!(
        "{{\"name\":\"observe_form\",\"n\":{n},\"p50_ms\":{:.2},\"p95_ms\":{:.2},\"bytes\":{size}}}",
        pct(&mut obs, 0.5),
        pct(&mut obs, 0.95)
    );
    for n_el in [1000, 5000] {
        p.act(&ctx, tab, &ActParams::new(ActionKind::Navigate).value(site.url(&format!("/gen/elements?n={n_el}"))))
            .await?;
        let mut v = Vec::new();
        let mut size = 0;
        for _ in 0..(n / 4).max(5) {
            let t = Instant::now();
            let o = p.observe(&ctx, tab, &ObserveParams::default()).await?;
            v.push(t.elapsed().as_secs_f64() * 1000.0);
            size = o.untrusted_content.len();
        }
        println!(
            "{{\"name\":\"observe_gen_{n_el}\",\"n\":{},\"p50_ms\":{:.2},\"p95_ms\":{:.2},\"bytes\":{size}}}",
            v.len(),
            pct(&mut v, 0.5),
            pct(&mut v, 0.95)
        );
    }
    p.act(&ctx, tab, &ActParams::new(ActionKind::Navigate).value(site.url("/duplicates.html"))).await?;
    let o = p.observe(&ctx, tab, &ObserveParams::default()).await?;
    let line = o.untrusted_content.lines().find(|l| l.contains("button \"Settings\"")).expect("the Settings button");
    let r = browserd_protocol::line_ref(line).expect("a ref line");
    let mut clicks = Vec::new();
    let mut failures = 0;
    let mut last = None;
    for _ in 0..n {
        let t = Instant::now();
        let res = p
            .act(
                &ctx,
                tab,
                &ActParams::new(ActionKind::Click)
                    .target(r)
                    .expect(Expectation::TextPresent { text: "Settings opened by: button".into() }),
            )
            .await?;
        clicks.push(t.elapsed().as_secs_f64() * 1000.0);
        last = Some(res.timings.clone());
        if res.postcondition != Postcondition::Passed {
            failures += 1;
        }
    }
    println!(
        "{{\"name\":\"click_with_expectation\",\"n\":{n},\"p50_ms\":{:.2},\"p95_ms\":{:.2},\"failures\":{failures}}}",
        pct(&mut clicks, 0.5),
        pct(&mut clicks, 0.95)
    );
    eprintln!("last click phases (ms): {last:?}");
    p.close_tab(&ctx, tab).await?;
    browser.shutdown().await?;
    Ok(())
}
