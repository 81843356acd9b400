//! Measures the extension relay in headless Chromium: `ping` (broker → host → service worker → back, no CDP) and the
//! CDP round trip `Runtime.evaluate 1+1` through the relay transport (host + extension + chrome.debugger included).
//!
//! `cargo build --release -p browserd-native --bins --examples && target/release/examples/relay_rtt [n]`

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use browserd_cdp::{Cdp, ConnectionOptions, LaunchOptions, ManagedBrowser, SessionId};
use browserd_native::install::{Brand, InstallOptions, Locations, install};
use browserd_native::link::{EndpointOptions, ExtensionEndpoint};
use serde_json::json;

fn summary(name: &str, mut v: Vec<f64>) {
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

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let exe_dir = std::env::current_exe()?.parent().and_then(|p| p.parent()).map(PathBuf::from).unwrap();
    let host_bin = exe_dir.join("browserd-native");
    anyhow::ensure!(host_bin.exists(), "build the host first: cargo build --release -p browserd-native --bins");
    let root = tempfile::tempdir()?;
    let run = root.path().join("run");
    std::fs::create_dir_all(&run)?;
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700))?;
    let socket = run.join("extension.sock");
    let (_endpoint, mut links) = ExtensionEndpoint::bind(&socket, EndpointOptions::default()).await?;
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
            exe: host_bin,
        },
    )?;
    let ext = std::fs::canonicalize(concat!(env!("CARGO_MANIFEST_DIR"), "/../../extension"))?;
    let t_launch = Instant::now();
    let browser = ManagedBrowser::launch(LaunchOptions {
        user_data_dir: Some(profile),
        extensions: vec![ext],
        env: vec![
            ("BROWSERD_EXTENSION_SOCKET".into(), socket.display().to_string()),
            ("XDG_CONFIG_HOME".into(), root.path().join("xdg").display().to_string()),
        ],
        ..LaunchOptions::default()
    })
    .await?;
    let link = tokio::time::timeout(Duration::from_secs(30), links.recv()).await?.unwrap();
    println!("launch → extension paired: {:.0} ms", t_launch.elapsed().as_secs_f64() * 1000.0);
    let tab = link.create_tab("bench", "about:blank", true).await?;
    let mut ping = Vec::new();
    for i in 0..n + 50 {
        let t0 = Instant::now();
        link.call("ping", json!({})).await?;
        if i >= 50 {
            ping.push(t0.elapsed().as_secs_f64() * 1000.0);
        }
    }
    let cdp = Cdp::spawn(link.relay_transport("bench"), ConnectionOptions::default());
    let t = Duration::from_secs(10);
    let att = cdp.call(None, "Target.attachToTarget", json!({"targetId": tab.target_id, "flatten": true}), t).await?;
    let s = SessionId(att["sessionId"].as_str().unwrap().to_owned());
    let mut eval = Vec::new();
    for i in 0..n + 50 {
        let t0 = Instant::now();
        let r = cdp.call(Some(&s), "Runtime.evaluate", json!({"expression": "1+1", "returnByValue": true}), t).await?;
        anyhow::ensure!(r["result"]["value"] == 2);
        if i >= 50 {
            eval.push(t0.elapsed().as_secs_f64() * 1000.0);
        }
    }
    summary("ping (broker → host → service worker → back)", ping);
    summary("CDP Runtime.evaluate 1+1 through the relay", eval);
    let _ = browser.shutdown().await;
    Ok(())
}
