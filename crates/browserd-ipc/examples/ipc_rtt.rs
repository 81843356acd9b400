//! Measures the warm round trip of a small JSON-RPC request over the broker socket, p50/p95/p99 (BRIEF §9 goal: a warm
//! broker RPC round trip p95 ≤ 2 ms), plus the cost of a fresh connect + first call.
//!
//! By default the server runs in a separate process (this example re-executed with `--serve DIR`, started through
//! `connect_or_spawn` exactly as a client starts the broker), so the figures include real cross-process wake-ups.
//! The runtime directory is a fresh temp dir, never the real `$XDG_RUNTIME_DIR`.
//!
//! ```text
//! cargo run --release -p browserd-ipc --example ipc_rtt -- [--calls N] [--connects N] [--in-process]
//! ```

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use browserd_ipc::{
    BrokerListener, ConnectionContext, FramedConnection, IdleTracker, InstanceLock, RuntimeDir, ServeOptions,
    SpawnOptions, connect, connect_or_spawn, serve,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Answers every request with a small JSON-RPC result carrying its id, like a `status`-sized reply.
async fn respond(mut conn: FramedConnection, ctx: ConnectionContext) {
    loop {
        let msg = tokio::select! {
            biased;
            msg = conn.recv() => msg,
            () = ctx.shutdown.cancelled() => return,
        };
        let Ok(Some(request)) = msg else { return };
        let reply = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"ok": true, "sessions": 0}});
        if conn.send(&reply).await.is_err() {
            return;
        }
    }
}

/// Server mode: a minimal broker on `dir` that exits after two idle seconds.
async fn run_server(dir: RuntimeDir) -> Result<(), Box<dyn std::error::Error>> {
    let lock = InstanceLock::acquire(&dir)?;
    let listener = BrokerListener::bind(&dir, &lock).await?;
    let idle = IdleTracker::start(Duration::from_secs(2));
    let options = ServeOptions { idle: Some(idle.clone()), ..ServeOptions::default() };
    serve(listener, respond, idle.idle(), options).await;
    Ok(())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn report(label: &str, mut samples: Vec<Duration>) {
    samples.sort_unstable();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{label}: n={} p50={:.1}µs p95={:.1}µs p99={:.1}µs max={:.1}µs",
        samples.len(),
        us(percentile(&samples, 50.0)),
        us(percentile(&samples, 95.0)),
        us(percentile(&samples, 99.0)),
        us(*samples.last().expect("samples")),
    );
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown cpu".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    format!("{cpu}, {cores} cores, Linux {}", kernel.trim())
}

fn arg_value(args: &[String], name: &str, default: usize) -> usize {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        let dir = RuntimeDir::ensure(args.get(i + 1).ok_or("--serve needs a directory")?)?;
        return run_server(dir).await;
    }
    let calls = arg_value(&args, "--calls", 20_000);
    let connects = arg_value(&args, "--connects", 500);
    let in_process = args.iter().any(|a| a == "--in-process");

    let tmp = tempfile::tempdir()?;
    let dir = RuntimeDir::ensure(tmp.path().join("browserd"))?;
    let mut child: Option<Child> = None;
    let local_shutdown = CancellationToken::new();
    let mut local_server = None;
    let started = Instant::now();
    let mut conn = if in_process {
        let lock = InstanceLock::acquire(&dir)?;
        let listener = BrokerListener::bind(&dir, &lock).await?;
        local_server =
            Some((lock, tokio::spawn(serve(listener, respond, local_shutdown.clone(), ServeOptions::default()))));
        connect(&dir).await?
    } else {
        let exe = std::env::current_exe()?;
        connect_or_spawn(
            &dir,
            || {
                child = Some(Command::new(exe).arg("--serve").arg(dir.path()).spawn()?);
                Ok(())
            },
            &SpawnOptions::default(),
            |progress| eprintln!("progress: {progress:?}"),
        )
        .await?
    };
    println!("machine: {}", machine());
    println!(
        "server: {}; connected after {:.1} ms",
        if in_process { "same process (tokio task)" } else { "separate process started by connect_or_spawn" },
        started.elapsed().as_secs_f64() * 1e3
    );

    let request = |id: usize| json!({"jsonrpc": "2.0", "id": id, "method": "status", "params": {}});
    for id in 0..1_000 {
        conn.call(&request(id)).await?;
    }
    let mut samples = Vec::with_capacity(calls);
    for id in 0..calls {
        let msg = request(id);
        let t = Instant::now();
        let reply: Option<Value> = conn.call(&msg).await?;
        samples.push(t.elapsed());
        let reply = reply.ok_or("the server closed the connection")?;
        if reply["id"] != json!(id) {
            return Err(format!("reply {reply} does not answer request {id}").into());
        }
    }
    report("warm round trip (one connection, sequential status-sized calls)", samples);

    let mut samples = Vec::with_capacity(connects);
    for id in 0..connects {
        let t = Instant::now();
        let mut fresh = connect(&dir).await?;
        fresh.call(&request(id)).await?.ok_or("the server closed the connection")?;
        samples.push(t.elapsed());
    }
    report("fresh connect + first call", samples);

    drop(conn);
    if let Some((_lock, task)) = local_server {
        local_shutdown.cancel();
        task.await?;
    }
    if let Some(mut child) = child {
        child.kill()?;
        child.wait()?;
    }
    Ok(())
}
