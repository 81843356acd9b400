//! The rows the benchmark prints: one JSON object per line with `--json`, an aligned table line otherwise.

use serde::{Deserialize, Serialize};

use crate::addressability::AddressabilityReport;
use crate::fidelity::FidelityReport;
use crate::stats::Summary;

/// One observer on one page. It is read back from the JSON line of a child process too (see `run::run_in_child`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ObserveRow {
    /// `observe` (observation calls) or `act.click` (click calls; sizes are those of the click's result).
    pub name: String,
    /// Page size in elements for generated pages; `None` (null) for hand-written fixture pages.
    pub n: Option<usize>,
    /// Which tool observed.
    pub observer: String,
    /// Path of the page on the fixture site.
    pub page: String,
    /// Fixture category.
    pub category: String,
    /// Timing of the observation calls: for `observe`, the reads after the first look (the page as it stays).
    #[serde(flatten)]
    pub timing: Summary,
    /// For `observe`: the first read after the page loaded (its first look, every tree read whole), in milliseconds;
    /// not among the timed reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_look_ms: Option<f64>,
    /// UTF-8 bytes of the observation text.
    pub bytes: usize,
    /// o200k_base tokens of the observation text.
    pub tokens: usize,
    /// UTF-8 bytes of the page rendering inside the tool's envelope (browserd: `Observation.untrusted_content`), when
    /// the text has an envelope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_bytes: Option<usize>,
    /// o200k_base tokens of that page rendering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_tokens: Option<usize>,
    /// Operable nodes the observer left out (browserd's budget of 120 nodes / 80 KiB), when it truncated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted_nodes: Option<u32>,
    /// Timed calls that failed (they are included in the timings).
    pub failures: usize,
    /// Per-phase medians of the action's own timings (browserd's clicks), in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases_p50_ms: Option<std::collections::BTreeMap<String, f64>>,
    /// Addressability against the page's ground truth (generated pages and most hand-written ones).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub addressability: Option<AddressabilityReport>,
    /// Text fidelity against the page's must-read texts (the fixture apps).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub fidelity: Option<FidelityReport>,
}

/// A failed measurement; it counts as a failure in the exit code.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorRow {
    /// What was being measured (`observe`, `observer`).
    pub name: &'static str,
    /// Page size when known.
    pub n: Option<usize>,
    /// Which tool.
    pub observer: String,
    /// Which page, when the failure concerns one.
    pub page: Option<String>,
    /// What went wrong and what to do.
    pub error: String,
}

/// An observer against the baseline on the same page: ratios above 1 mean the observer is smaller/faster.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    /// Always `compare`.
    pub name: &'static str,
    /// Page size for generated pages.
    pub n: Option<usize>,
    /// What is compared: `observe` or `act.click`.
    pub measure: String,
    /// Page path.
    pub page: String,
    /// The observer compared.
    pub observer: String,
    /// The baseline (Playwright MCP).
    pub baseline: String,
    /// baseline tokens / observer tokens.
    pub tokens_ratio: f64,
    /// baseline bytes / observer bytes.
    pub bytes_ratio: f64,
    /// baseline tokens / observer's content tokens (its page rendering without the envelope), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_tokens_ratio: Option<f64>,
    /// baseline p50 / observer p50.
    pub p50_ratio: f64,
    /// baseline p95 / observer p95.
    pub p95_ratio: f64,
}

/// The machine the numbers come from.
#[derive(Debug, Clone, Serialize)]
pub struct MachineRow {
    /// Always `machine`.
    pub name: &'static str,
    /// Always null (keeps the `n` field present on every row).
    pub n: Option<usize>,
    /// CPU model.
    pub cpu: String,
    /// Logical CPUs.
    pub cpus: usize,
    /// Total memory.
    pub memory_gib: f64,
    /// Kernel and OS.
    pub os: String,
    /// `chromium --version`.
    pub chromium: String,
    /// `node --version`.
    pub node: String,
    /// Installed `@playwright/mcp` version.
    pub playwright_mcp: String,
    /// Installed `chrome-devtools-mcp` version.
    pub chrome_devtools_mcp: String,
    /// Installed `agent-browser` version.
    pub agent_browser: String,
    /// `/proc/loadavg`'s 1, 5 and 15 minute load averages when the run started.
    pub load: String,
    /// Timed calls per page.
    pub runs: usize,
    /// Whether this binary was built with optimisations.
    pub release_build: bool,
}

/// Prints a row as one JSON line.
pub fn print_json<T: Serialize>(row: &T) {
    match serde_json::to_string(row) {
        Ok(line) => println!("{line}"),
        Err(e) => eprintln!("browserd-bench: cannot serialise a row: {e}"),
    }
}

/// Header of the human-readable table.
pub fn human_header() -> String {
    format!(
        "{:<19} {:<34} {:>6} {:>9} {:>9} {:>9} {:>8} {:>12} {:>10} {:>9}",
        "observer", "page", "n", "p50 ms", "p95 ms", "bytes", "tokens", "addressable", "mismatches", "first ms"
    )
}

impl ObserveRow {
    /// One aligned table line.
    pub fn human(&self) -> String {
        let n = self.n.map(|n| n.to_string()).unwrap_or_else(|| "-".into());
        let label = if self.name == "observe" { self.page.clone() } else { format!("{} {}", self.name, self.page) };
        let addr = self
            .addressability
            .as_ref()
            .map(|a| format!("{}/{}", a.addressable, a.interactive))
            .unwrap_or_else(|| "-".into());
        let mismatches =
            self.fidelity.as_ref().map(|f| format!("{}/{}", f.text_mismatches, f.texts)).unwrap_or_else(|| "-".into());
        let first = self.first_look_ms.map(|ms| format!("{ms:.1}")).unwrap_or_else(|| "-".into());
        format!(
            "{:<19} {:<34} {:>6} {:>9.1} {:>9.1} {:>9} {:>8} {:>12} {:>10} {:>9}",
            self.observer,
            label,
            n,
            self.timing.p50_ms,
            self.timing.p95_ms,
            self.bytes,
            self.tokens,
            addr,
            mismatches,
            first
        )
    }
}

/// A timing-only measurement (action loop, RPC round trip, …): `{"name", "n", "p50_ms", "p95_ms", ...}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TimingRow {
    /// What was measured, e.g. `cdp.roundtrip`.
    pub name: String,
    /// Which tool, when it is a per-observer measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observer: Option<String>,
    /// The size parameter of the measurement, when it has one.
    pub n: Option<usize>,
    /// The samples' summary.
    #[serde(flatten)]
    pub timing: Summary,
    /// How many of the runs failed (failures are included in the timings).
    pub failures: usize,
}

impl TimingRow {
    /// One aligned table line.
    pub fn human(&self) -> String {
        let n = self.n.map(|n| n.to_string()).unwrap_or_else(|| "-".into());
        format!(
            "{:<19} {:<34} {:>6} {:>9.3} {:>9.3} {:>9} {:>8} {:>12}",
            self.observer.as_deref().unwrap_or("-"),
            self.name,
            n,
            self.timing.p50_ms,
            self.timing.p95_ms,
            "-",
            "-",
            format!("{} failed", self.failures)
        )
    }
}

/// Runs `f` `runs` times and times each call (failures included in the timings and counted).
pub async fn measure<F, Fut, T, E>(name: &str, n: Option<usize>, runs: usize, mut f: F) -> Option<TimingRow>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let mut samples = Vec::with_capacity(runs);
    let mut failures = 0;
    for _ in 0..runs {
        let started = std::time::Instant::now();
        let outcome = f().await;
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        if outcome.is_err() {
            failures += 1;
        }
    }
    Some(TimingRow { name: name.to_owned(), observer: None, n, timing: Summary::of(&samples)?, failures })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn measure_counts_runs_and_failures() {
        let mut i = 0;
        let row = measure("t", Some(3), 4, || {
            i += 1;
            let fail = i % 2 == 0;
            async move { if fail { Err("no") } else { Ok(()) } }
        })
        .await
        .unwrap();
        assert_eq!((row.timing.runs, row.failures), (4, 2));
        let json = serde_json::to_value(&row).unwrap();
        assert_eq!(json["name"], "t");
        assert_eq!(json["n"], 3);
        assert!(json["p50_ms"].is_number() && json["p95_ms"].is_number());
        assert!(measure("t", None, 0, || async { Ok::<(), ()>(()) }).await.is_none());
    }
}
