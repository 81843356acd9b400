//! The benchmark run: start the fixture site, start each observer, observe every target page, print the rows.
//! To add an observer, implement [`Observer`] and add one arm to [`start_observer`] and its name to [`OBSERVERS`].
//!
//! Each browserd observer runs in a child process of its own (this binary again, with `--child`): a browser
//! connection's epoch is counted per process, and refs and cursors of every connection after a process's first end
//! in a letter tag (`e12b`), which a fresh broker never shows. In its own process every browserd observer is that
//! process's first connection, exactly what an agent sees from a broker that just started; the parent reads the
//! child's JSON rows back for the `compare` rows. Playwright MCP, chrome-devtools-mcp, agent-browser and `browserd-mcp`
//! (the real `browserd mcp` server, with a broker of its own) run in the parent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use browserd_chromium::DomFirst;
use browserd_fixtures::{BenchElement, FixtureSite, app_truth, generate_elements_page, operable_elements};
use clap::Parser;

use crate::addressability;
use crate::agent_browser::{AGENT_BROWSER, AgentBrowser, AgentBrowserOptions, SnapshotForm};
use crate::browserd::{BrowserdObserver, BrowserdOptions, Budget, PageChange};
use crate::browserd_mcp::{BrowserdMcp, BrowserdMcpOptions};
use crate::fidelity;
use crate::node_mcp::{NodeTool, chromium_from_env, ensure_installed, installed_version};
use crate::observer::{Observer, ObserverError};
use crate::report::{self, CompareRow, ErrorRow, MachineRow, ObserveRow};
use crate::stats::{Summary, round3};
use crate::tokens::count_tokens;
use crate::{devtools, playwright};

/// Every observer this binary knows, in run order; the first is the baseline of the `compare` rows.
pub const OBSERVERS: &[&str] = &[
    "playwright-mcp",
    "chrome-devtools-mcp",
    "agent-browser",
    "agent-browser-full",
    "agent-browser-changed",
    "agent-browser-cold",
    "browserd",
    "browserd-unbounded",
    "browserd-changed",
    "browserd-cold",
    "browserd-cold-ax",
    "browserd-mcp",
];

/// Command-line options.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "browserd-bench",
    about = "browserd's benchmarks, side by side with Playwright MCP, chrome-devtools-mcp and agent-browser"
)]
pub struct Args {
    /// Print one JSON object per line instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Timed observation calls per page.
    #[arg(long, default_value_t = 20)]
    pub runs: usize,
    /// Sizes of the generated pages, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "100,1000,5000")]
    pub sizes: Vec<usize>,
    /// Which pages: `all`, `generated` or `fixtures`.
    #[arg(long, default_value = "all")]
    pub pages: String,
    /// Only the pages whose path contains one of these strings (repeatable), e.g. `--page form --page n=1000`.
    #[arg(long = "page")]
    pub page_filter: Vec<String>,
    /// Measure the broker's memory instead: its idle RSS, then a soak of this many connect/open/close/disconnect
    /// cycles against `browserd broker run` (module `broker_soak`). 0 (the default) runs the observation benchmarks.
    #[arg(long, default_value_t = 0)]
    pub broker_soak: usize,
    /// Measure broker round trips instead: connect + `hello`, a warm `status`, and `browser_observe`/`browser_act`
    /// tool calls through `browserd broker run` next to the same provider calls in process, this many calls each
    /// (module `broker_rtt`). 0 (the default) runs the observation benchmarks.
    #[arg(long, default_value_t = 0)]
    pub broker_rtt: usize,
    /// The `browserd` executable for `--broker-soak`, `--broker-rtt` and the `browserd-mcp` observer (default: next to
    /// this binary).
    #[arg(long)]
    pub browserd: Option<PathBuf>,
    /// Observers to run (repeatable); default: all of them.
    #[arg(long = "observer")]
    pub observers: Vec<String>,
    /// The `bench/playwright-mcp` package directory.
    #[arg(long)]
    pub playwright_dir: Option<PathBuf>,
    /// The `bench/chrome-devtools-mcp` package directory.
    #[arg(long)]
    pub devtools_dir: Option<PathBuf>,
    /// The `bench/agent-browser` package directory.
    #[arg(long)]
    pub agent_browser_dir: Option<PathBuf>,
    /// The Chromium executable every observer uses.
    #[arg(long)]
    pub chromium: Option<PathBuf>,
    /// Timed clicks per click target (0 skips the click benchmark).
    #[arg(long, default_value_t = 10)]
    pub click_runs: usize,
    /// Write every observation text to DIR/<observer>/<page>.txt.
    #[arg(long)]
    pub dump: Option<PathBuf>,
    /// Internal: this process is the child that runs one browserd observer for a parent run (see the module docs).
    #[arg(long, hide = true)]
    pub child: bool,
}

impl Args {
    /// The arguments of the child process that runs the browserd observer `observer` for this run: the same pages,
    /// runs, Chromium and dump directory, JSON rows, and no machine or `compare` rows of its own.
    pub fn child_args(&self, observer: &str) -> Vec<std::ffi::OsString> {
        let mut a: Vec<std::ffi::OsString> = Vec::new();
        let mut push = |k: &str, v: std::ffi::OsString| {
            a.push(k.into());
            a.push(v);
        };
        push("--observer", observer.into());
        push("--runs", self.runs.to_string().into());
        push("--click-runs", self.click_runs.to_string().into());
        push("--pages", self.pages.clone().into());
        let sizes: Vec<String> = self.sizes.iter().map(usize::to_string).collect();
        if !sizes.is_empty() {
            push("--sizes", sizes.join(",").into());
        }
        for page in &self.page_filter {
            push("--page", page.into());
        }
        if let Some(chromium) = &self.chromium {
            push("--chromium", chromium.into());
        }
        if let Some(dump) = &self.dump {
            push("--dump", dump.into());
        }
        a.push("--json".into());
        a.push("--child".into());
        a
    }
}

/// Whether the observer runs in a child process of its own (every in-process browserd observer, unless this is that
/// child; `browserd-mcp` is a `browserd mcp` process with a fresh broker of its own already).
fn runs_in_child(args: &Args, observer: &str) -> bool {
    !args.child && observer.starts_with("browserd") && observer != "browserd-mcp"
}

/// Errors that stop the whole run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The fixture site could not bind its loopback ports.
    #[error("cannot start the fixture site: {0}; check that loopback networking works")]
    FixtureSite(std::io::Error),
    /// Bad command-line values.
    #[error("{0}")]
    Usage(String),
    /// The tokenizer is unavailable.
    #[error(transparent)]
    Tokenizer(#[from] crate::tokens::TokenizerError),
}

/// A page to observe.
#[derive(Debug, Clone)]
pub struct Target {
    /// Path on the fixture site.
    pub path: String,
    /// Fixture category.
    pub category: String,
    /// Page size for generated pages.
    pub n: Option<usize>,
    /// Ground truth of the page's operable elements, when it has one.
    pub expected: Option<Vec<BenchElement>>,
    /// Texts the page must show exactly as rendered (the fixture apps' ground truth), when it has them.
    pub texts: Option<Vec<String>>,
}

/// The pages selected by `args`: generated pages of each size, then every hand-written fixture page.
pub fn targets(args: &Args) -> Result<Vec<Target>, RunError> {
    let (generated, fixtures) = match args.pages.as_str() {
        "all" => (true, true),
        "generated" => (true, false),
        "fixtures" => (false, true),
        other => return Err(RunError::Usage(format!("--pages {other}: use all, generated or fixtures"))),
    };
    let mut out = Vec::new();
    if generated {
        for &n in &args.sizes {
            let (_, manifest) = generate_elements_page(n);
            out.push(Target {
                path: format!("/gen/elements?n={n}"),
                category: "generated".into(),
                n: Some(n),
                expected: Some(manifest.interactive),
                texts: None,
            });
        }
    }
    if fixtures {
        for page in FixtureSite::pages().iter().filter(|p| p.category != "generated") {
            out.push(Target {
                path: page.path.into(),
                category: page.category.into(),
                n: None,
                expected: operable_elements(page.path),
                texts: app_truth(page.path).map(|t| t.texts),
            });
        }
    }
    if !args.page_filter.is_empty() {
        out.retain(|t| args.page_filter.iter().any(|f| t.path.contains(f.as_str())));
        if out.is_empty() {
            return Err(RunError::Usage(format!("--page {}: no page matches", args.page_filter.join(", --page "))));
        }
    }
    Ok(out)
}

/// Starts the observer called `name`.
pub async fn start_observer(name: &str, args: &Args) -> Result<Box<dyn Observer>, ObserverError> {
    match name {
        "playwright-mcp" | "chrome-devtools-mcp" => {
            let tool = node_tool(name).expect("a Node.js tool");
            let mut options = crate::node_mcp::NodeOptions::from_env(tool);
            options.dir = node_dir(args, tool);
            if let Some(chromium) = &args.chromium {
                options.chromium = chromium.clone();
            }
            Ok(Box::new(crate::node_mcp::NodeMcp::start(tool, &options).await?))
        }
        "agent-browser" | "agent-browser-full" | "agent-browser-changed" | "agent-browser-cold" => {
            let mut options = AgentBrowserOptions::from_env();
            options.dir = agent_browser_dir(args);
            if let Some(chromium) = &args.chromium {
                options.chromium = chromium.clone();
            }
            match name {
                "agent-browser-full" => options.form = SnapshotForm::Full,
                "agent-browser-changed" => options.change = PageChange::Small,
                "agent-browser-cold" => options.change = PageChange::Whole,
                _ => {}
            }
            Ok(Box::new(AgentBrowser::start(&options).await?))
        }
        "browserd-mcp" => {
            let mut options = BrowserdMcpOptions::from_env();
            if let Some(browserd) = &args.browserd {
                options.browserd = browserd.clone();
            }
            if let Some(chromium) = &args.chromium {
                options.chromium = chromium.clone();
            }
            Ok(Box::new(BrowserdMcp::start(&options).await?))
        }
        "browserd" | "browserd-cold" | "browserd-cold-ax" | "browserd-changed" | "browserd-unbounded" => {
            let budget = if name == "browserd-unbounded" { Budget::Unbounded } else { Budget::Default };
            let chromium = args.chromium.clone().unwrap_or_else(chromium_from_env);
            let change = match name {
                "browserd-cold" | "browserd-cold-ax" => PageChange::Whole,
                "browserd-changed" => PageChange::Small,
                _ => PageChange::None,
            };
            let dom_first = if name == "browserd-cold-ax" { DomFirst::Never } else { DomFirst::Auto };
            let call_timeout = std::time::Duration::from_secs(60);
            let options = BrowserdOptions { chromium, budget, call_timeout, change, dom_first };
            Ok(Box::new(BrowserdObserver::start(&options).await?))
        }
        other => Err(ObserverError::Start {
            observer: other.into(),
            reason: format!("unknown observer; known: {}", OBSERVERS.join(", ")),
        }),
    }
}

/// The Node.js tool (MCP server run through its `snapshot.mjs`) called `name`.
fn node_tool(name: &str) -> Option<&'static NodeTool> {
    match name {
        "playwright-mcp" => Some(&playwright::PLAYWRIGHT_MCP),
        "chrome-devtools-mcp" => Some(&devtools::CHROME_DEVTOOLS_MCP),
        _ => None,
    }
}

/// The package directory of a Node.js tool: its command-line option, else its default.
fn node_dir(args: &Args, tool: &NodeTool) -> PathBuf {
    let given = if tool.name == "playwright-mcp" { &args.playwright_dir } else { &args.devtools_dir };
    given.clone().unwrap_or_else(|| crate::node_mcp::NodeOptions::from_env(tool).dir)
}

/// The `bench/agent-browser` package directory: `--agent-browser-dir`, else its default.
fn agent_browser_dir(args: &Args) -> PathBuf {
    args.agent_browser_dir.clone().unwrap_or_else(|| AgentBrowserOptions::from_env().dir)
}

/// Runs the benchmark; returns the number of failed measurements (0 = all good).
pub async fn run(args: Args) -> Result<usize, RunError> {
    if args.broker_soak > 0 {
        return Ok(crate::broker_soak::run(&args).await);
    }
    if args.broker_rtt > 0 {
        return Ok(crate::broker_rtt::run(&args).await);
    }
    if args.runs == 0 {
        return Err(RunError::Usage("--runs must be at least 1".into()));
    }
    let observers: Vec<String> = if args.observers.is_empty() {
        OBSERVERS.iter().map(|s| s.to_string()).collect()
    } else {
        args.observers.clone()
    };
    let targets = targets(&args)?;
    count_tokens("warm up")?; // load the tokenizer before anything is timed
    let site = FixtureSite::start().await.map_err(RunError::FixtureSite)?;

    for tool in observers.iter().filter_map(|o| node_tool(o)) {
        // Install first so the machine row can name the installed version; a failure shows up when it starts.
        let _ = ensure_installed(tool, &node_dir(&args, tool)).await;
    }
    if observers.iter().any(|o| o.starts_with("agent-browser")) {
        let _ = ensure_installed(&AGENT_BROWSER, &agent_browser_dir(&args)).await;
    }
    // A child's parent prints the machine row and the header.
    let machine = if args.child { None } else { Some(machine_row(&args).await) };
    if let Some(machine) = machine.as_ref().filter(|_| args.json) {
        report::print_json(machine);
    } else if let Some(machine) = &machine {
        println!(
            "machine: {} ({} CPUs, {:.1} GiB), {}; {}; node {}; @playwright/mcp {}; chrome-devtools-mcp {}; agent-browser {}; load {}; {} runs per page{}",
            machine.cpu,
            machine.cpus,
            machine.memory_gib,
            machine.os,
            machine.chromium,
            machine.node,
            machine.playwright_mcp,
            machine.chrome_devtools_mcp,
            machine.agent_browser,
            machine.load,
            machine.runs,
            if machine.release_build { "" } else { " (debug build: use --release for real numbers)" }
        );
        println!("{}", report::human_header());
    }

    let mut failures = 0;
    let mut results: BTreeMap<(String, String, String), ObserveRow> = BTreeMap::new();
    let clicks: &[ClickTarget] = if args.click_runs == 0 { &[] } else { CLICK_TARGETS };
    let steps = targets.len() + clicks.len();
    for name in &observers {
        if runs_in_child(&args, name) {
            failures += run_in_child(&args, name, &mut results).await;
            continue;
        }
        let mut observer = match start_observer(name, &args).await {
            Ok(observer) => observer,
            Err(e) => {
                failures += 1;
                emit_error(
                    &args,
                    ErrorRow { name: "observer", n: None, observer: name.clone(), page: None, error: e.to_string() },
                );
                continue;
            }
        };
        let mut step = 0;
        for target in &targets {
            step += 1;
            eprintln!("browserd-bench: [{step}/{steps}] {name} observe {}", target.path);
            // One read more than timed: the first is the page's first look, reported apart; the timed reads are
            // the page as it stays (or, for the observers that change it first, as it changed).
            let outcome = observer.observe(&site.url(&target.path), args.runs + 1).await;
            let row = match outcome {
                Ok(mut observation) => {
                    let first_look_ms = (observation.ms_runs.len() > 1).then(|| observation.ms_runs.remove(0));
                    let text = redact_origin(&observation.text, &site);
                    if let Some(dir) = &args.dump {
                        dump(dir, name, &target.path, &text);
                    }
                    let addressability =
                        target.expected.as_ref().map(|e| addressability::check(e, &observer.addressable(&text)));
                    let fidelity = target.texts.as_ref().map(|t| fidelity::check(t, &text));
                    row_of("observe", name, target, observation, addressability, fidelity)?
                        .map(|row| ObserveRow { first_look_ms, ..row })
                }
                Err(e) => Err(e),
            };
            if !record(&args, "observe", name, target, row, &mut results, &mut failures) {
                break; // the session is gone; the remaining pages of this observer cannot be measured
            }
        }
        // Clicks do not depend on what the observation may reuse: `browserd` measures them.
        let observer_clicks = if matches!(
            name.as_str(),
            "browserd-cold"
                | "browserd-cold-ax"
                | "browserd-changed"
                | "agent-browser-full"
                | "agent-browser-changed"
                | "agent-browser-cold"
        ) {
            &[][..]
        } else {
            clicks
        };
        for click in observer_clicks {
            step += 1;
            eprintln!(
                "browserd-bench: [{step}/{steps}] {name} click {} {:?} on {}",
                click.role, click.name, click.path
            );
            let target =
                Target { path: click.path.into(), category: "click".into(), n: click.n, expected: None, texts: None };
            let outcome = observer.click(&site.url(click.path), click.role, click.name, args.click_runs).await;
            let row = match outcome {
                Ok(result) => {
                    if let Some(dir) = &args.dump {
                        dump(dir, name, &format!("click-{}", click.path), &redact_origin(&result.text, &site));
                    }
                    row_of("act.click", name, &target, result, None, None)?
                }
                Err(e) => Err(e),
            };
            if !record(&args, "act.click", name, &target, row, &mut results, &mut failures) {
                break;
            }
        }
        for timing in observer.timings(args.runs.max(100)).await {
            match timing {
                Ok(mut row) => {
                    row.observer = Some(name.clone());
                    if args.json {
                        report::print_json(&row);
                    } else {
                        println!("{}", row.human());
                    }
                }
                Err(e) => {
                    failures += 1;
                    let row =
                        ErrorRow { name: "timing", n: None, observer: name.clone(), page: None, error: e.to_string() };
                    emit_error(&args, row);
                }
            }
        }
        observer.close().await;
    }
    if let Some(baseline) = observers.first() {
        for ((kind, page, observer), row) in &results {
            if observer == baseline {
                continue;
            }
            let Some(base) = results.get(&(kind.clone(), page.clone(), baseline.clone())) else { continue };
            let compare = CompareRow {
                name: "compare",
                n: row.n,
                measure: kind.clone(),
                page: page.clone(),
                observer: observer.clone(),
                baseline: baseline.clone(),
                tokens_ratio: ratio(base.tokens as f64, row.tokens as f64),
                bytes_ratio: ratio(base.bytes as f64, row.bytes as f64),
                content_tokens_ratio: row.content_tokens.map(|c| ratio(base.tokens as f64, c as f64)),
                p50_ratio: ratio(base.timing.p50_ms, row.timing.p50_ms),
                p95_ratio: ratio(base.timing.p95_ms, row.timing.p95_ms),
            };
            if args.json {
                report::print_json(&compare);
            } else {
                println!(
                    "compare {kind} {observer} vs {baseline} on {page}: tokens {:.2}x, bytes {:.2}x, p50 {:.2}x",
                    compare.tokens_ratio, compare.bytes_ratio, compare.p50_ratio
                );
            }
        }
    }
    site.shutdown().await;
    Ok(failures)
}

/// An element to click repeatedly for the action benchmark.
#[derive(Debug, Clone, Copy)]
pub struct ClickTarget {
    /// Page path.
    pub path: &'static str,
    /// Page size for generated pages.
    pub n: Option<usize>,
    /// Role of the element.
    pub role: &'static str,
    /// Accessible name of the element.
    pub name: &'static str,
}

/// The click benchmark: a small page whose button shows a toast, and a button on a 1000-element page.
pub const CLICK_TARGETS: &[ClickTarget] = &[
    ClickTarget { path: "/toast.html", n: None, role: "button", name: "Save" },
    ClickTarget { path: "/gen/elements?n=1000", n: Some(1000), role: "button", name: "Save section 1" },
];

/// Builds the row of a successful measurement; `Ok(Err(_))` when it has no timings.
fn row_of(
    kind: &'static str,
    observer: &str,
    target: &Target,
    observation: crate::observer::Observation,
    addressability: Option<addressability::AddressabilityReport>,
    fidelity: Option<fidelity::FidelityReport>,
) -> Result<Result<ObserveRow, ObserverError>, RunError> {
    let content_tokens = observation.content.as_deref().map(count_tokens).transpose()?;
    let Some(timing) = Summary::of(&observation.ms_runs) else {
        return Ok(Err(ObserverError::Page {
            observer: observer.into(),
            url: target.path.clone(),
            reason: "no timings".into(),
        }));
    };
    Ok(Ok(ObserveRow {
        first_look_ms: None,
        name: kind.to_owned(),
        n: target.n,
        observer: observer.into(),
        page: target.path.clone(),
        category: target.category.clone(),
        timing,
        bytes: observation.text.len(),
        tokens: count_tokens(&observation.text)?,
        content_bytes: observation.content.as_ref().map(String::len),
        content_tokens,
        omitted_nodes: observation.omitted_nodes,
        failures: observation.failures,
        phases_p50_ms: observation.phases_p50_ms,
        addressability,
        fidelity,
    }))
}

/// Prints a measurement and files it; returns false when the observer's session is gone.
fn record(
    args: &Args,
    kind: &'static str,
    observer: &str,
    target: &Target,
    row: Result<ObserveRow, ObserverError>,
    results: &mut BTreeMap<(String, String, String), ObserveRow>,
    failures: &mut usize,
) -> bool {
    match row {
        Ok(row) => {
            if args.json {
                report::print_json(&row);
            } else {
                println!("{}", row.human());
            }
            results.insert((kind.to_owned(), target.path.clone(), observer.to_owned()), row);
            true
        }
        Err(e) => {
            // An unsupported measurement is reported as such, and is not a failure of this run.
            if !matches!(e, ObserverError::Unsupported { .. }) {
                *failures += 1;
            }
            let gone = matches!(e, ObserverError::Gone { .. });
            let row = ErrorRow {
                name: kind,
                n: target.n,
                observer: observer.into(),
                page: Some(target.path.clone()),
                error: e.to_string(),
            };
            emit_error(args, row);
            !gone
        }
    }
}

/// Runs the browserd observer `name` in a child process (this binary with [`Args::child_args`]) and prints its
/// rows as this run's own, keeping its `observe` and `act.click` rows for the `compare` rows. Returns the failures:
/// none when the child succeeded, else the error rows it printed (at least one).
async fn run_in_child(args: &Args, name: &str, results: &mut BTreeMap<(String, String, String), ObserveRow>) -> usize {
    use tokio::io::AsyncBufReadExt;
    let fail = |error: String| {
        emit_error(args, ErrorRow { name: "observer", n: None, observer: name.to_owned(), page: None, error });
        1
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return fail(format!("cannot find this executable to run the observer in a child process: {e}")),
    };
    let spawned = tokio::process::Command::new(&exe)
        .args(args.child_args(name))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => return fail(format!("cannot start {} for the observer: {e}", exe.display())),
    };
    let Some(stdout) = child.stdout.take() else { return fail("the child process has no stdout".into()) };
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let mut error_rows = 0;
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&line) else {
            eprintln!("browserd-bench: {name}: the child printed a line that is not a row: {line}");
            continue;
        };
        if value.get("error").is_some() {
            error_rows += 1;
            if args.json {
                println!("{line}");
            } else {
                let field = |k: &str| value[k].as_str().unwrap_or("-").to_owned();
                eprintln!("browserd-bench: FAILED {} {}: {}", field("observer"), field("page"), field("error"));
            }
            continue;
        }
        match value["name"].as_str() {
            Some(kind @ ("observe" | "act.click")) => match serde_json::from_value::<ObserveRow>(value.clone()) {
                Ok(row) => {
                    if args.json {
                        println!("{line}");
                    } else {
                        println!("{}", row.human());
                    }
                    results.insert((kind.to_owned(), row.page.clone(), row.observer.clone()), row);
                }
                Err(e) => eprintln!("browserd-bench: {name}: cannot read the child's row ({e}): {line}"),
            },
            _ if args.json => println!("{line}"),
            _ => match serde_json::from_value::<crate::report::TimingRow>(value) {
                Ok(row) => println!("{}", row.human()),
                Err(_) => println!("{line}"),
            },
        }
    }
    match child.wait().await {
        Ok(status) if status.success() => 0,
        Ok(status) if error_rows > 0 => {
            eprintln!("browserd-bench: {name}: the child process exited with {status}");
            error_rows
        }
        Ok(status) => fail(format!(
            "the child process running it exited with {status} and no error row; run it alone to see why: \
             browserd-bench --observer {name}"
        )),
        Err(e) => fail(format!("waiting for the child process running it: {e}")),
    }
}

fn ratio(baseline: f64, observer: f64) -> f64 {
    if observer == 0.0 { f64::INFINITY } else { round3(baseline / observer) }
}

fn emit_error(args: &Args, row: ErrorRow) {
    if args.json {
        report::print_json(&row);
    } else {
        eprintln!("browserd-bench: FAILED {} {}: {}", row.observer, row.page.as_deref().unwrap_or("-"), row.error);
    }
}

/// Replaces the fixture site's ephemeral origins by fixed placeholders, so dumps are comparable between runs.
/// Sizes and tokens are measured on the original text.
fn redact_origin(text: &str, site: &FixtureSite) -> String {
    text.replace(site.url("").as_str(), "http://127.0.0.1:PORT")
        .replace(site.cross_origin_url("").as_str(), "http://localhost:PORT2")
}

fn dump(dir: &Path, observer: &str, page: &str, text: &str) {
    let slug: String = page
        .trim_start_matches('/')
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' })
        .collect();
    let path = dir.join(observer).join(format!("{slug}.txt"));
    let result = std::fs::create_dir_all(path.parent().unwrap_or(dir)).and_then(|()| std::fs::write(&path, text));
    if let Err(e) = result {
        eprintln!("browserd-bench: cannot write {}: {e}", path.display());
    }
}

async fn command_output(program: &Path, arg: &str) -> String {
    match tokio::process::Command::new(program).arg(arg).output().await {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        Ok(out) => format!("unknown ({} exited with {})", program.display(), out.status),
        Err(e) => format!("unknown ({}: {e})", program.display()),
    }
}

async fn machine_row(args: &Args) -> MachineRow {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim().to_owned()))
        .unwrap_or_else(|| "unknown".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kib: f64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    let os = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_owned())))
        .unwrap_or_else(|| std::env::consts::OS.into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let chromium = args.chromium.clone().unwrap_or_else(chromium_from_env);
    let version = |tool: &NodeTool| installed_version(tool, &node_dir(args, tool));
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into());
    MachineRow {
        name: "machine",
        n: None,
        cpu,
        cpus: std::thread::available_parallelism().map(usize::from).unwrap_or(1),
        memory_gib: round3(mem_kib / (1024.0 * 1024.0)),
        os: format!("{os}, Linux {}", kernel.trim()),
        chromium: command_output(&chromium, "--version").await,
        node: command_output(Path::new("node"), "--version").await,
        playwright_mcp: version(&playwright::PLAYWRIGHT_MCP),
        chrome_devtools_mcp: version(&devtools::CHROME_DEVTOOLS_MCP),
        agent_browser: installed_version(&AGENT_BROWSER, &agent_browser_dir(args)),
        load,
        runs: args.runs,
        release_build: !cfg!(debug_assertions),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Args {
        Args::parse_from(std::iter::once("browserd-bench").chain(list.iter().copied()))
    }

    #[test]
    fn targets_cover_generated_sizes_then_every_fixture_page() {
        let all = targets(&args(&[])).unwrap();
        let generated: Vec<_> = all.iter().filter(|t| t.category == "generated").map(|t| t.n).collect();
        assert_eq!(generated, vec![Some(100), Some(1000), Some(5000)]);
        assert!(all.iter().any(|t| t.path == "/form.html"));
        assert!(all.iter().filter(|t| t.category == "generated").all(|t| t.expected.is_some()));
        assert!(all.iter().any(|t| t.path == "/clickables.html" && t.expected.is_some()));
        let only = targets(&args(&["--pages", "generated", "--sizes", "42"])).unwrap();
        assert_eq!(only.len(), 1);
        assert_eq!(only[0].path, "/gen/elements?n=42");
        assert!(targets(&args(&["--pages", "nope"])).is_err());
        let picked = targets(&args(&["--page", "form.html", "--page", "n=1000"])).unwrap();
        let paths: Vec<&str> = picked.iter().map(|t| t.path.as_str()).collect();
        assert_eq!(paths, ["/gen/elements?n=1000", "/form.html"]);
        assert!(targets(&args(&["--page", "no-such-page"])).is_err());
    }

    #[test]
    fn browserd_observers_run_in_a_child_with_the_same_pages_and_budget() {
        let parent = args(&[
            "--observer",
            "playwright-mcp",
            "--observer",
            "browserd-unbounded",
            "--runs",
            "3",
            "--click-runs",
            "0",
            "--sizes",
            "100,1000",
            "--page",
            "form",
            "--chromium",
            "/opt/chromium",
            "--dump",
            "/tmp/d",
        ]);
        assert!(!runs_in_child(&parent, "playwright-mcp"));
        assert!(runs_in_child(&parent, "browserd-unbounded") && runs_in_child(&parent, "browserd-cold"));
        let child = Args::parse_from(
            std::iter::once(std::ffi::OsString::from("browserd-bench")).chain(parent.child_args("browserd-unbounded")),
        );
        assert!(child.child && child.json);
        assert_eq!(child.observers, ["browserd-unbounded"]);
        assert_eq!((child.runs, child.click_runs, child.sizes.clone()), (3, 0, vec![100, 1000]));
        assert_eq!((child.pages.as_str(), child.page_filter.clone()), ("all", vec!["form".to_owned()]));
        assert_eq!(child.chromium, Some(PathBuf::from("/opt/chromium")));
        assert_eq!(child.dump, Some(PathBuf::from("/tmp/d")));
        assert!(!runs_in_child(&child, "browserd-unbounded"), "the child runs its observer itself");
    }

    #[test]
    fn observe_rows_read_back_from_a_childs_json_line() {
        let row = ObserveRow {
            name: "observe".into(),
            n: None,
            observer: "browserd".into(),
            page: "/form.html".into(),
            category: "form".into(),
            timing: Summary::of(&[1.0, 2.0]).unwrap(),
            first_look_ms: Some(7.5),
            bytes: 10,
            tokens: 5,
            content_bytes: Some(6),
            content_tokens: Some(3),
            omitted_nodes: None,
            failures: 0,
            phases_p50_ms: Some([("dispatch".to_owned(), 4.5)].into()),
            addressability: Some(addressability::AddressabilityReport {
                interactive: 2,
                addressable: 2,
                missing_sample: Vec::new(),
            }),
            fidelity: Some(fidelity::FidelityReport {
                texts: 3,
                text_mismatches: 1,
                mismatch_sample: vec!["x".into()],
            }),
        };
        let back: ObserveRow = serde_json::from_str(&serde_json::to_string(&row).unwrap()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&row).unwrap());
        let bare =
            ObserveRow { addressability: None, fidelity: None, content_bytes: None, content_tokens: None, ..row };
        let back: ObserveRow = serde_json::from_str(&serde_json::to_string(&bare).unwrap()).unwrap();
        assert!(back.addressability.is_none() && back.fidelity.is_none() && back.content_tokens.is_none());
    }

    #[tokio::test]
    async fn unknown_observer_is_refused_by_name() {
        let Err(e) = start_observer("nope", &args(&[])).await else { panic!("an unknown observer started") };
        assert!(
            e.to_string().contains(
                "unknown observer; known: playwright-mcp, chrome-devtools-mcp, agent-browser, agent-browser-full, \
                 agent-browser-changed, agent-browser-cold, browserd, browserd-unbounded, browserd-changed, \
                 browserd-cold, browserd-cold-ax, browserd-mcp"
            ),
            "{e}"
        );
    }
}
