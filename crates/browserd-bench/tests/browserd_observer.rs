//! Real run of the browserd observer (managed Debian Chromium, browserd's Chromium provider) against the fixture site:
//! the text is the serialised tool result, the refs parsed from it cover the page's ground truth, clicks carry a
//! verified expectation, and the raw CDP round trip is measured; the binary runs each browserd observer in a process
//! of its own (fresh-broker refs). Only the shape of the results is asserted, never timing.

use browserd_bench::addressability;
use browserd_bench::browserd::{BrowserdObserver, BrowserdOptions, Budget, PageChange};
use browserd_bench::node_mcp::chromium_from_env;
use browserd_bench::observer::Observer;
use browserd_fixtures::{FixtureSite, generate_elements_page, operable_elements};
use browserd_protocol::{ActionResult, Outcome, Postcondition};

fn options(budget: Budget) -> BrowserdOptions {
    BrowserdOptions {
        chromium: chromium_from_env(),
        budget,
        call_timeout: std::time::Duration::from_secs(60),
        change: PageChange::None,
        dom_first: browserd_chromium::DomFirst::Auto,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browserd_observes_clicks_and_round_trips_on_real_chromium() {
    let site = FixtureSite::start().await.expect("start fixture site");
    let mut observer = BrowserdObserver::start(&options(Budget::Default)).await.expect("launch Chromium");
    assert_eq!(observer.name(), "browserd");

    let page = observer.observe(&site.url("/duplicates.html"), 2).await.expect("observe duplicates.html");
    assert_eq!(page.ms_runs.len(), 2);
    assert_eq!(page.failures, 0);
    // The text is what browserd's MCP server sends: browserd's envelope line, the page's own line (its URL and
    // title, inside the page's framing), then the page text unescaped.
    let (envelope, rest) = page.text.split_once('\n').expect("an envelope line, then the page text");
    assert!(envelope.split_whitespace().any(|w| w.starts_with('@')), "{envelope}");
    let (page_line, content) = rest.split_once('\n').expect("the page line, then its text");
    assert!(page_line.starts_with("page ") && page_line.contains("/duplicates.html"), "{page_line}");
    assert_eq!(page.content.as_deref(), Some(content));
    assert!(content.starts_with("# Duplicate names\n"), "{content}");
    let refs = observer.addressable(&page.text);
    assert_eq!(refs.iter().filter(|r| r.role == "button" && r.name == "Delete").count(), 5, "{refs:?}");
    let truth = operable_elements("/duplicates.html").expect("ground truth");
    let report = addressability::check(&truth, &refs);
    assert!(report.complete(), "{report:?}");

    // Operable elements without a role are addressable too (`clickable`/`focusable` count as `generic`).
    let clickables = observer.observe(&site.url("/clickables.html"), 1).await.expect("observe clickables.html");
    let report =
        addressability::check(&operable_elements("/clickables.html").unwrap(), &observer.addressable(&clickables.text));
    assert!(report.complete(), "{report:?}\n{}", clickables.content.unwrap_or_default());

    let click = observer.click(&site.url("/toast.html"), "button", "Save", 2).await.expect("click Save");
    assert_eq!((click.ms_runs.len(), click.failures), (2, 0));
    let result: ActionResult = serde_json::from_str(&click.text).expect("the text is a serialised ActionResult");
    assert_eq!((result.outcome, result.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{result:?}");
    assert!(result.effects.announced.iter().any(|a| a.contains("Saved successfully")), "{result:?}");
    let missing = observer.click(&site.url("/toast.html"), "button", "No such button", 1).await;
    assert!(missing.is_err(), "clicking a button that does not exist succeeded");

    // The default budget (120 operable nodes) truncates a large page and says how much it left out.
    let (_, manifest) = generate_elements_page(1000);
    let big = observer.observe(&site.url("/gen/elements?n=1000"), 1).await.expect("observe generated page");
    assert!(big.omitted_nodes.is_some_and(|n| n > 0), "{:?}", big.omitted_nodes);
    let report = addressability::check(&manifest.interactive, &observer.addressable(&big.text));
    assert!(report.addressable <= 120 && !report.complete(), "{report:?}");
    assert_eq!(page.omitted_nodes, None, "a small page is not truncated");

    let timings = observer.timings(3).await;
    assert_eq!(timings.len(), 1);
    let row = timings.into_iter().next().unwrap().expect("CDP round trips");
    assert_eq!((row.name.as_str(), row.timing.runs, row.failures), ("cdp.roundtrip", 3, 0));

    Box::new(observer).close().await;

    // Without a budget every operable element of a generated page is listed in one observation.
    let mut unbounded = BrowserdObserver::start(&options(Budget::Unbounded)).await.expect("launch Chromium");
    assert_eq!(unbounded.name(), "browserd-unbounded");
    let page = unbounded.observe(&site.url("/gen/elements?n=1000"), 1).await.expect("observe generated page");
    let report = addressability::check(&manifest.interactive, &unbounded.addressable(&page.text));
    assert!(report.interactive > 120, "{report:?}");
    assert_eq!(page.omitted_nodes, None);
    assert!(report.complete(), "{report:?}");
    assert!(unbounded.timings(3).await.is_empty(), "the round trip is measured once, by `browserd`");
    Box::new(unbounded).close().await;

    // The cold observer changes the page before every run and still shows the same page with the same refs.
    let mut cold = BrowserdObserver::start(&BrowserdOptions { change: PageChange::Whole, ..options(Budget::Default) })
        .await
        .expect("launch Chromium");
    assert_eq!(cold.name(), "browserd-cold");
    let page = cold.observe(&site.url("/form.html"), 3).await.expect("observe form.html cold");
    assert_eq!((page.ms_runs.len(), page.failures), (3, 0));
    let report =
        addressability::check(&operable_elements("/form.html").expect("ground truth"), &cold.addressable(&page.text));
    assert!(report.complete(), "{report:?}");
    assert!(cold.timings(3).await.is_empty(), "the round trip is measured once, by `browserd`");
    Box::new(cold).close().await;

    // The changed observer edits one paragraph before every run: the page shows the edit, every element stays
    // addressable.
    let mut changed =
        BrowserdObserver::start(&BrowserdOptions { change: PageChange::Small, ..options(Budget::Default) })
            .await
            .expect("launch Chromium");
    assert_eq!(changed.name(), "browserd-changed");
    let page = changed.observe(&site.url("/form.html"), 3).await.expect("observe form.html changed");
    assert_eq!((page.ms_runs.len(), page.failures), (3, 0));
    assert!(page.text.contains("[run 2]"), "the last edit shows: {}", page.text);
    let report = addressability::check(
        &operable_elements("/form.html").expect("ground truth"),
        &changed.addressable(&page.text),
    );
    assert!(report.complete(), "{report:?}");
    Box::new(changed).close().await;
    site.shutdown().await;
}

/// The binary runs each browserd observer in a child process of its own, so a later observer shows the same refs
/// and cursors as the first one: those of a fresh broker's first browser connection, without a connection tag.
#[test]
fn every_browserd_observer_shows_a_fresh_brokers_refs() {
    let dump = tempfile::tempdir().expect("temporary dump directory");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_browserd-bench"))
        .args(["--json", "--observer", "browserd", "--observer", "browserd-unbounded", "--page", "duplicates.html"])
        .args(["--click-runs", "0", "--runs", "1", "--chromium"])
        .arg(chromium_from_env())
        .arg("--dump")
        .arg(dump.path())
        .output()
        .expect("run browserd-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).expect("a JSON row")).collect();
    let observed: Vec<&str> =
        rows.iter().filter(|r| r["name"] == "observe").map(|r| r["observer"].as_str().unwrap()).collect();
    assert_eq!(observed, ["browserd", "browserd-unbounded"], "{stdout}");
    assert!(rows.iter().any(|r| r["name"] == "compare" && r["observer"] == "browserd-unbounded"), "{stdout}");
    for observer in ["browserd", "browserd-unbounded"] {
        let text = std::fs::read_to_string(dump.path().join(observer).join("duplicates.html.txt")).expect("a dump");
        let (envelope, content) = text.split_once('\n').expect("an envelope line, then the page text");
        let cursor = envelope.split_whitespace().find_map(|w| w.strip_prefix('@')).unwrap_or("");
        assert!(!cursor.is_empty() && cursor.bytes().all(|c| c.is_ascii_digit()), "{observer}: {envelope}");
        let refs: Vec<String> =
            content.lines().filter_map(browserd_bench::browserd::parse_line).map(|(r, _, _)| r).collect();
        assert_eq!(refs, ["e1", "e2", "e3", "e4", "e5", "e6", "e7"], "{observer}:\n{content}");
    }
}
