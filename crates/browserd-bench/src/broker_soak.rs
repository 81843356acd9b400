//! Broker memory (BRIEF §9: idle RSS ≤ 20 MB, flat over a 1 000-cycle connect/release soak), measured on a real
//! `browserd broker run` process in a temporary home: its resident set (`VmRSS` of `/proc/<pid>/status`) right after
//! start-up and after an idle wait, then a soak of `--broker-soak N` cycles of connect → `hello` → `session.open` →
//! `browser_open` → `browser_close` → `session.close` → disconnect against its managed Chromium, with the RSS at the
//! start and the end of the soak and the cycle time percentiles; then a tab soak of as many cycles in one session:
//! `browser_open` of a fixture page → `browser_observe` → `browser_close`, with the RSS at its start, peak and end.
//! Then four 12 MB requests (refused after parsing) with the RSS before and after. Only the broker process is measured,
//! not Chromium.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use browserd_broker::client::{Client, ConnectOptions};
use browserd_protocol::hello::ComponentRole;
use browserd_protocol::lifecycle::{
    CloseReason, HostKind, SessionCloseParams, SessionOpenParams, StatusParams, ToolsActivateParams,
};
use serde::Serialize;
use serde_json::json;

use crate::report::{self, ErrorRow};
use crate::run::Args;
use crate::stats::Summary;

/// How long the broker is left idle before the second RSS reading.
pub const IDLE_WAIT: Duration = Duration::from_secs(10);
/// RSS is also sampled every this many cycles (the `rss_series_kib` field), to show whether it is flat.
pub const SERIES_EVERY: usize = 100;

/// The broker's memory when idle.
#[derive(Debug, Clone, Serialize)]
pub struct IdleRow {
    /// `broker.idle_rss`.
    pub name: &'static str,
    /// RSS once the broker answers its first `status` (no browser started).
    pub rss_start_kib: u64,
    /// RSS after [`IDLE_WAIT`] with one idle client connected.
    pub rss_idle_kib: u64,
    /// Seconds waited.
    pub idle_secs: u64,
    /// The broker's threads.
    pub threads: u64,
}

/// The soak.
#[derive(Debug, Clone, Serialize)]
pub struct SoakRow {
    /// `broker.soak`.
    pub name: &'static str,
    /// Cycles run.
    pub cycles: usize,
    /// RSS after one warm-up cycle (the managed Chromium is started then).
    pub rss_start_kib: u64,
    /// RSS after the last cycle.
    pub rss_end_kib: u64,
    /// The highest RSS seen (`VmHWM`).
    pub rss_peak_kib: u64,
    /// RSS every [`SERIES_EVERY`] cycles.
    pub rss_series_kib: Vec<u64>,
    /// Of the RSS at the start: anonymous memory (heap, stacks).
    pub anon_start_kib: u64,
    /// Of the RSS at the end: anonymous memory. The rest is mapped files (the binary, SQLite's shared WAL index).
    pub anon_end_kib: u64,
    /// One cycle's time.
    #[serde(flatten)]
    pub timing: Summary,
    /// Cycles that failed (included in the timings).
    pub failures: usize,
    /// The broker's threads at the end.
    pub threads: u64,
}

/// The tab soak: open, observe and close a tab, over and over, in one session.
#[derive(Debug, Clone, Serialize)]
pub struct TabSoakRow {
    /// `broker.tab_soak`.
    pub name: &'static str,
    /// Cycles run.
    pub cycles: usize,
    /// RSS after ten warm-up cycles.
    pub rss_start_kib: u64,
    /// The highest RSS seen during the soak (sampled after every cycle).
    pub rss_peak_kib: u64,
    /// RSS after the last cycle.
    pub rss_end_kib: u64,
    /// RSS every [`SERIES_EVERY`] cycles.
    pub rss_series_kib: Vec<u64>,
    /// (end − start) / cycles, in bytes.
    pub growth_per_cycle_bytes: f64,
    /// One cycle's time.
    #[serde(flatten)]
    pub timing: Summary,
    /// Cycles that failed (included in the timings).
    pub failures: usize,
}

/// One tab cycle in `s`: open `url`, observe it, close it.
async fn tab_cycle(c: &Client, s: &browserd_protocol::SessionId, url: &str) -> Result<(), String> {
    let fail = |what: &str, e: browserd_broker::client::ClientError| format!("{what}: {e}");
    let tab = c.tool(s, "browser_open", json!({"url": url})).await.map_err(|e| fail("browser_open", e))?["tab"]
        .as_u64()
        .ok_or("browser_open returned no tab")?;
    c.tool(s, "browser_observe", json!({"tab": tab})).await.map_err(|e| fail("browser_observe", e))?;
    c.tool(s, "browser_close", json!({"tabs": [tab]})).await.map_err(|e| fail("browser_close", e))?;
    Ok(())
}

/// Runs the tab soak on `broker`; returns the row or why it could not run.
async fn tab_soak(broker: &Broker, cycles: usize, url: &str) -> Result<TabSoakRow, String> {
    let c = connect(broker).await?;
    let opened = c
        .call(&SessionOpenParams {
            host: HostKind::Mcp,
            host_session_id: "tab-soak".into(),
            label: None,
            policy: None,
            browser: None,
        })
        .await
        .map_err(|e| format!("session.open: {e}"))?;
    let s = opened.session;
    c.call(&ToolsActivateParams { session: s.clone(), advanced: false })
        .await
        .map_err(|e| format!("tools.activate: {e}"))?;
    for _ in 0..10 {
        tab_cycle(&c, &s, url).await.map_err(|e| format!("a warm-up tab cycle failed: {e}"))?;
    }
    let rss_start_kib = broker.rss();
    let (mut peak, mut series, mut samples, mut failures) = (rss_start_kib, vec![rss_start_kib], Vec::new(), 0);
    let mut first_error = None;
    for n in 1..=cycles {
        let started = Instant::now();
        if let Err(e) = tab_cycle(&c, &s, url).await {
            failures += 1;
            first_error.get_or_insert(e);
        }
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        let rss = broker.rss();
        peak = peak.max(rss);
        if n % SERIES_EVERY == 0 {
            series.push(rss);
            eprintln!("browserd-bench: tab soak {n}/{cycles}, RSS {rss} KiB");
        }
    }
    let _ = c.call(&SessionCloseParams { session: s, reason: CloseReason::HostExit }).await;
    if let Some(e) = first_error {
        return Err(format!("{failures} of {cycles} tab cycles failed; the first: {e}"));
    }
    let Some(timing) = Summary::of(&samples) else { return Err("no tab cycles were run".into()) };
    let rss_end_kib = broker.rss();
    #[allow(clippy::cast_precision_loss)]
    let growth_per_cycle_bytes = (rss_end_kib as f64 - rss_start_kib as f64) * 1024.0 / cycles.max(1) as f64;
    Ok(TabSoakRow {
        name: "broker.tab_soak",
        cycles,
        rss_start_kib,
        rss_peak_kib: peak,
        rss_end_kib,
        rss_series_kib: series,
        growth_per_cycle_bytes,
        timing,
        failures,
    })
}

/// RSS around a few large requests (each refused after it was read and parsed): is the memory given back?
#[derive(Debug, Clone, Serialize)]
pub struct LargeFramesRow {
    /// `broker.large_frames`.
    pub name: &'static str,
    /// Requests sent.
    pub frames: usize,
    /// Bytes of each request.
    pub frame_bytes: usize,
    /// RSS before the first.
    pub rss_before_kib: u64,
    /// RSS 2 s after the last answer.
    pub rss_after_kib: u64,
    /// The highest RSS seen so far (`VmHWM`).
    pub rss_peak_kib: u64,
}

/// Sends `frames` requests of about `bytes` each (`browser_list` with an unknown, huge argument: read, parsed and
/// refused) and reads the RSS before and after.
async fn large_frames(broker: &Broker, frames: usize, bytes: usize) -> Result<LargeFramesRow, String> {
    let c = connect(broker).await?;
    let opened = c
        .call(&SessionOpenParams {
            host: HostKind::Mcp,
            host_session_id: "large-frames".into(),
            label: None,
            policy: None,
            browser: None,
        })
        .await
        .map_err(|e| format!("session.open: {e}"))?;
    c.call(&ToolsActivateParams { session: opened.session.clone(), advanced: false })
        .await
        .map_err(|e| format!("tools.activate: {e}"))?;
    let rss_before_kib = broker.rss();
    let junk = "x".repeat(bytes);
    for _ in 0..frames {
        match c.tool(&opened.session, "browser_list", json!({"junk": junk})).await {
            Err(e) if e.code() == browserd_protocol::ErrorCode::InvalidParams => {}
            other => return Err(format!("a large request was not refused as invalid: {other:?}")),
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    Ok(LargeFramesRow {
        name: "broker.large_frames",
        frames,
        frame_bytes: bytes,
        rss_before_kib,
        rss_after_kib: broker.rss(),
        rss_peak_kib: proc_status(broker.pid(), "VmHWM").unwrap_or(0),
    })
}

/// A field of `/proc/<pid>/status` in kB (or a plain count for `Threads`).
fn proc_status(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?;
    line[field.len() + 1..].split_whitespace().next()?.parse().ok()
}

/// A `browserd broker run` process in a temporary home; killed when dropped.
pub(crate) struct Broker {
    child: std::process::Child,
    dir: tempfile::TempDir,
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Broker {
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    fn rss(&self) -> u64 {
        proc_status(self.pid(), "VmRSS").unwrap_or(0)
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("broker.log")).unwrap_or_default()
    }

    pub(crate) fn options(&self) -> ConnectOptions {
        ConnectOptions {
            role: ComponentRole::Mcp,
            runtime_dir: Some(self.dir.path().join("run/browserd")),
            spawn: false,
            timeout: Some(Duration::from_secs(60)),
            broker_exe: None,
        }
    }
}

/// The `browserd` binary: `--browserd`, else next to this executable.
pub(crate) fn browserd_exe(args: &Args) -> PathBuf {
    args.browserd.clone().unwrap_or_else(|| {
        std::env::current_exe().ok().and_then(|p| p.parent().map(|d| d.join("browserd"))).unwrap_or_default()
    })
}

/// Starts `browserd broker run` in a fresh temporary home with a managed (headless) Chromium.
pub(crate) fn start(exe: &Path, chromium: Option<&Path>) -> Result<Broker, String> {
    if !exe.is_file() {
        return Err(format!(
            "no browserd binary at {}; build it (`cargo build --release -p browserd`) or pass --browserd",
            exe.display()
        ));
    }
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a temporary home: {e}"))?;
    for sub in ["run", "state", "config/browserd"] {
        std::fs::create_dir_all(dir.path().join(sub)).map_err(|e| e.to_string())?;
    }
    let mut config = format!(
        "idle_exit_secs = 0\nextension_endpoint = false\nbrowser = \"managed\"\nprofile_dir = \"{}\"\n\
         chromium_args = [\"--no-sandbox\", \"--disable-gpu\", \"--no-first-run\", \
         \"--disable-background-networking\", \"--disable-component-update\", \"--disable-sync\", \
         \"--disable-quic\"]\n",
        dir.path().join("profile").display()
    );
    if let Some(chromium) = chromium {
        config.push_str(&format!("chromium_path = \"{}\"\n", chromium.display()));
    }
    std::fs::write(dir.path().join("config/browserd/config.toml"), config).map_err(|e| e.to_string())?;
    let log = std::fs::File::create(dir.path().join("broker.log")).map_err(|e| e.to_string())?;
    let child = std::process::Command::new(exe)
        .args(["broker", "run"])
        .env("XDG_RUNTIME_DIR", dir.path().join("run"))
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("BROWSERD_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    Ok(Broker { child, dir })
}

/// Connects to the broker (`hello` included), retrying while it starts up.
pub(crate) async fn connect(broker: &Broker) -> Result<Client, String> {
    let options = broker.options();
    let mut last = String::new();
    for _ in 0..400 {
        match Client::connect(&options).await {
            Ok(c) => return Ok(c),
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Err(format!("the broker did not answer: {last}\n{}", broker.log()))
}

/// One soak cycle: connect, open a session, open a tab, close it, close the session, disconnect.
async fn cycle(broker: &Broker, n: usize, url: &str) -> Result<(), String> {
    let c = Client::connect(&broker.options()).await.map_err(|e| format!("connect: {e}"))?;
    let fail = |what: &str, e: browserd_broker::client::ClientError| format!("{what}: {e}");
    let opened = c
        .call(&SessionOpenParams {
            host: HostKind::Mcp,
            host_session_id: format!("soak-{n}"),
            label: None,
            policy: None,
            browser: None,
        })
        .await
        .map_err(|e| fail("session.open", e))?;
    let s = opened.session;
    c.call(&ToolsActivateParams { session: s.clone(), advanced: false })
        .await
        .map_err(|e| fail("tools.activate", e))?;
    let tab = c.tool(&s, "browser_open", json!({"url": url})).await.map_err(|e| fail("browser_open", e))?["tab"]
        .as_u64()
        .ok_or("browser_open returned no tab")?;
    c.tool(&s, "browser_close", json!({"tabs": [tab]})).await.map_err(|e| fail("browser_close", e))?;
    c.call(&SessionCloseParams { session: s, reason: CloseReason::HostExit })
        .await
        .map_err(|e| fail("session.close", e))?;
    drop(c);
    Ok(())
}

/// Runs the broker memory benchmarks; returns the number of failed measurements.
pub async fn run(args: &Args) -> usize {
    let error = |e: String| {
        let row = ErrorRow { name: "broker", n: None, observer: "browserd-broker".into(), page: None, error: e };
        if args.json {
            report::print_json(&row);
        } else {
            eprintln!("broker: {}", row.error);
        }
        1
    };
    let broker = match start(&browserd_exe(args), args.chromium.as_deref()) {
        Ok(b) => b,
        Err(e) => return error(e),
    };
    let idle_client = match connect(&broker).await {
        Ok(c) => c,
        Err(e) => return error(e),
    };
    if let Err(e) = idle_client.call(&StatusParams::default()).await {
        return error(format!("status: {e}"));
    }
    let rss_start_kib = broker.rss();
    eprintln!("browserd-bench: broker idle for {} s", IDLE_WAIT.as_secs());
    tokio::time::sleep(IDLE_WAIT).await;
    let idle = IdleRow {
        name: "broker.idle_rss",
        rss_start_kib,
        rss_idle_kib: broker.rss(),
        idle_secs: IDLE_WAIT.as_secs(),
        threads: proc_status(broker.pid(), "Threads").unwrap_or(0),
    };
    if args.json {
        report::print_json(&idle);
    } else {
        println!(
            "broker idle RSS: {} KiB at start, {} KiB after {} s idle ({} threads)",
            idle.rss_start_kib, idle.rss_idle_kib, idle.idle_secs, idle.threads
        );
    }

    let url = "about:blank";
    // Warm-up: the managed Chromium starts at the first browser use.
    if let Err(e) = cycle(&broker, 0, url).await {
        return error(format!("the warm-up cycle failed: {e}\n{}", broker.log()));
    }
    let rss_start_kib = broker.rss();
    let anon_start_kib = proc_status(broker.pid(), "RssAnon").unwrap_or(0);
    let cycles = args.broker_soak;
    let mut samples = Vec::with_capacity(cycles);
    let mut series = vec![rss_start_kib];
    let mut failures = 0;
    let mut first_error = None;
    for n in 1..=cycles {
        let started = Instant::now();
        if let Err(e) = cycle(&broker, n, url).await {
            failures += 1;
            first_error.get_or_insert(e);
        }
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        if n % SERIES_EVERY == 0 {
            series.push(broker.rss());
            eprintln!("browserd-bench: broker soak {n}/{cycles}, RSS {} KiB", series.last().unwrap_or(&0));
        }
    }
    let Some(timing) = Summary::of(&samples) else { return error("no soak cycles were run".into()) };
    let row = SoakRow {
        name: "broker.soak",
        cycles,
        rss_start_kib,
        rss_end_kib: broker.rss(),
        rss_peak_kib: proc_status(broker.pid(), "VmHWM").unwrap_or(0),
        rss_series_kib: series,
        anon_start_kib,
        anon_end_kib: proc_status(broker.pid(), "RssAnon").unwrap_or(0),
        timing,
        failures,
        threads: proc_status(broker.pid(), "Threads").unwrap_or(0),
    };
    if args.json {
        report::print_json(&row);
    } else {
        println!(
            "broker soak: {} cycles, RSS {} KiB → {} KiB (peak {} KiB), cycle p50 {} ms p95 {} ms, {} failed",
            row.cycles, row.rss_start_kib, row.rss_end_kib, row.rss_peak_kib, timing.p50_ms, timing.p95_ms, failures
        );
    }
    let mut failed = usize::from(failures > 0);
    if let Some(e) = first_error {
        failed += error(format!("{failures} of {cycles} soak cycles failed; the first: {e}"));
    }
    let site = match browserd_fixtures::FixtureSite::start().await {
        Ok(site) => site,
        Err(e) => return error(format!("the fixture site did not start: {e}")),
    };
    match tab_soak(&broker, cycles, &site.url("/form.html")).await {
        Ok(row) if args.json => report::print_json(&row),
        Ok(row) => println!(
            "broker tab soak: {} open/observe/close cycles, RSS {} KiB → {} KiB (peak {} KiB, {:+.0} B per cycle), \
             cycle p50 {} ms p95 {} ms",
            row.cycles,
            row.rss_start_kib,
            row.rss_end_kib,
            row.rss_peak_kib,
            row.growth_per_cycle_bytes,
            row.timing.p50_ms,
            row.timing.p95_ms
        ),
        Err(e) => failed += error(format!("{e}\n{}", broker.log())),
    }
    site.shutdown().await;
    match large_frames(&broker, 4, 12 * 1024 * 1024).await {
        Ok(row) if args.json => report::print_json(&row),
        Ok(row) => println!(
            "broker large frames: {} requests of {} MB, RSS {} KiB → {} KiB 2 s after (peak {} KiB)",
            row.frames,
            row.frame_bytes / (1024 * 1024),
            row.rss_before_kib,
            row.rss_after_kib,
            row.rss_peak_kib
        ),
        Err(e) => failed += error(e),
    }
    let _ = idle_client.shutdown_broker().await;
    drop(idle_client);
    failed.min(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process_rss_and_threads() {
        let pid = std::process::id();
        assert!(proc_status(pid, "VmRSS").is_some_and(|kib| kib > 0));
        assert!(proc_status(pid, "Threads").is_some_and(|n| n >= 1));
        assert_eq!(proc_status(pid, "VmNope"), None);
    }
}
