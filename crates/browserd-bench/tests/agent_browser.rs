//! Real run of the agent-browser observer (its pinned npm package, `npm ci` when needed, its native CLI and daemon on
//! Debian's Chromium with `--no-sandbox`) against the fixture site: `snapshot -i` is the text an agent's shell would
//! get, its refs are counted against the page's ground truth, a page changed between snapshots is still read, and a
//! click by ref reaches the page.

use browserd_bench::addressability;
use browserd_bench::agent_browser::{AgentBrowser, AgentBrowserOptions, SnapshotForm};
use browserd_bench::browserd::PageChange;
use browserd_bench::observer::Observer;
use browserd_fixtures::{FixtureSite, operable_elements};

#[tokio::test]
async fn agent_browser_snapshots_and_clicks_a_small_page() {
    let site = FixtureSite::start().await.expect("start fixture site");
    let mut observer = AgentBrowser::start(&AgentBrowserOptions::from_env()).await.expect("start agent-browser");
    assert_eq!(observer.name(), "agent-browser");

    let duplicates = observer.observe(&site.url("/duplicates.html"), 2).await.expect("observe duplicates.html");
    assert_eq!(duplicates.ms_runs.len(), 2);
    assert!(duplicates.text.contains("- heading \"Duplicate names\""), "{}", duplicates.text);
    let refs = observer.addressable(&duplicates.text);
    assert_eq!(refs.iter().filter(|r| r.role == "button" && r.name == "Delete").count(), 5, "{}", duplicates.text);
    assert!(refs.iter().any(|r| r.role == "link" && r.name == "Settings"), "{}", duplicates.text);
    let expected = operable_elements("/duplicates.html").expect("the page's ground truth");
    let report = addressability::check(&expected, &refs);
    assert!(report.interactive > 0 && report.complete(), "{report:?}\n{}", duplicates.text);
    // The interactive form leaves the page's plain text out; the full tree has it.
    assert!(!duplicates.text.contains("Deleted: none"), "{}", duplicates.text);

    let click = observer.click(&site.url("/toast.html"), "button", "Save", 2).await.expect("click Save");
    assert_eq!((click.ms_runs.len(), click.failures), (2, 0));
    assert!(click.text.contains("Done"), "{}", click.text);
    let missing = observer.click(&site.url("/toast.html"), "button", "No such button", 1).await;
    assert!(missing.is_err(), "clicking a button that does not exist succeeded");
    Box::new(observer).close().await;

    // The full tree, on a page whose text changes before every snapshot: the change is in the text it returns.
    let options =
        AgentBrowserOptions { form: SnapshotForm::Full, change: PageChange::Small, ..AgentBrowserOptions::from_env() };
    let mut observer = AgentBrowser::start(&options).await.expect("start agent-browser");
    let changed = observer.observe(&site.url("/duplicates.html"), 2).await.expect("observe a changing page");
    assert!(changed.text.contains("Deleted: none"), "{}", changed.text);
    assert!(changed.text.contains("[run 1] "), "the last change is not in the snapshot:\n{}", changed.text);
    Box::new(observer).close().await;
    site.shutdown().await;
}
