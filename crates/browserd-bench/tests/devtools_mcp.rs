//! Real run of the chrome-devtools-mcp observer (Node, `npm ci` when needed, Debian's Chromium, headless and
//! `--isolated`) against the fixture site: the snapshot is the text a model would get, every node of it has a uid,
//! and the text-fidelity check reads its text nodes.

use browserd_bench::observer::Observer;
use browserd_bench::{addressability, devtools, fidelity};
use browserd_fixtures::{FixtureSite, app_truth, generate_elements_page, operable_elements};

#[tokio::test]
async fn chrome_devtools_mcp_snapshots_fixture_pages() {
    let site = FixtureSite::start().await.expect("start fixture site");
    let mut observer = devtools::start(&devtools::options_from_env()).await.expect("start chrome-devtools-mcp");

    let duplicates = observer.observe(&site.url("/duplicates.html"), 2).await.expect("observe duplicates.html");
    assert_eq!(duplicates.ms_runs.len(), 2);
    assert!(duplicates.text.contains("## Latest page snapshot"), "{}", duplicates.text);
    assert!(duplicates.text.contains("\"Deleted: none\""), "{}", duplicates.text);
    let refs = observer.addressable(&duplicates.text);
    assert_eq!(refs.iter().filter(|r| r.role == "button" && r.name == "Delete").count(), 5, "{}", duplicates.text);
    assert!(refs.iter().any(|r| r.role == "link" && r.name == "Settings"), "{}", duplicates.text);

    // Both frames' content is in the snapshot, the cross-site one too; but `Inner frame: <b>same-origin</b>` is two
    // text nodes on two lines, which the fidelity check counts as not read whole.
    let iframes = observer.observe(&site.url("/iframes.html"), 1).await.expect("observe iframes.html");
    let refs = observer.addressable(&iframes.text);
    assert_eq!(refs.iter().filter(|r| r.role == "button" && r.name == "Inner button").count(), 2, "{}", iframes.text);
    assert!(refs.iter().any(|r| r.role == "StaticText" && r.name == "cross-origin"), "{}", iframes.text);
    let read = fidelity::check(&["Inner frame: same-origin".to_owned()], &iframes.text);
    assert_eq!(read.text_mismatches, 1, "{}", iframes.text);

    let (_, manifest) = generate_elements_page(100);
    let page = observer.observe(&site.url("/gen/elements?n=100"), 1).await.expect("observe generated page");
    let report = addressability::check(&manifest.interactive, &observer.addressable(&page.text));
    assert!(report.interactive > 10);
    assert!(report.addressable * 10 >= report.interactive * 9, "{report:?}");

    // A React app: its operable elements are found by their text nodes' uids; its texts are checked line by line.
    let tracker = observer.observe(&site.url("/apps/tracker.html"), 1).await.expect("observe the tracker app");
    let expected = operable_elements("/apps/tracker.html").expect("the tracker's ground truth");
    let report = addressability::check(&expected, &observer.addressable(&tracker.text));
    assert!(report.addressable > 0, "{report:?}\n{}", tracker.text);
    let truth = app_truth("/apps/tracker.html").expect("the tracker's texts");
    let read = fidelity::check(&truth.texts, &tracker.text);
    assert_eq!(read.texts, truth.texts.len());
    assert!(read.text_mismatches < read.texts, "{read:?}\n{}", tracker.text);

    let click = observer.click(&site.url("/toast.html"), "button", "Save", 2).await.expect("click Save");
    assert_eq!(click.ms_runs.len(), 2);
    assert!(click.text.contains("Successfully clicked"), "{}", click.text);
    let missing = observer.click(&site.url("/toast.html"), "button", "No such button", 1).await;
    assert!(missing.is_err(), "clicking a button that does not exist succeeded");

    Box::new(observer).close().await;
    site.shutdown().await;
}
