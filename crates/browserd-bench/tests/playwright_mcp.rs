//! Real run of the Playwright MCP observer (Node, `npm ci` when needed, Debian's Chromium) against the fixture site:
//! the snapshot is the text a model would get, and the addressability check finds which controls have a ref.

use browserd_bench::addressability;
use browserd_bench::observer::Observer;
use browserd_bench::playwright;
use browserd_fixtures::{FixtureSite, generate_elements_page};

#[tokio::test]
async fn playwright_mcp_snapshots_fixture_pages() {
    let site = FixtureSite::start().await.expect("start fixture site");
    let mut observer = playwright::start(&playwright::options_from_env()).await.expect("start Playwright MCP");

    let duplicates = observer.observe(&site.url("/duplicates.html"), 2).await.expect("observe duplicates.html");
    assert_eq!(duplicates.ms_runs.len(), 2);
    assert!(duplicates.text.contains("### Snapshot"), "{}", duplicates.text);
    assert!(duplicates.text.contains("\"Deleted: none\""), "{}", duplicates.text);
    let refs = observer.addressable(&duplicates.text);
    assert_eq!(refs.iter().filter(|r| r.role == "button" && r.name == "Delete").count(), 5);
    assert!(refs.iter().any(|r| r.role == "link" && r.name == "Settings"));

    // The cross-site iframe is loaded (the second site answers on `localhost`) and inlined.
    let iframes = observer.observe(&site.url("/iframes.html"), 1).await.expect("observe iframes.html");
    assert!(iframes.text.contains("Inner frame: cross-origin"), "{}", iframes.text);
    assert!(iframes.text.contains("Inner frame: same-origin"), "{}", iframes.text);

    let (_, manifest) = generate_elements_page(100);
    let page = observer.observe(&site.url("/gen/elements?n=100"), 1).await.expect("observe generated page");
    let report = addressability::check(&manifest.interactive, &observer.addressable(&page.text));
    assert!(report.interactive > 10);
    // Playwright MCP gives every element with a role a ref, and the clickable card too, but folds the pointer span
    // inside a paragraph into the paragraph's text: the one operable element a model cannot address.
    assert_eq!(report.missing_sample, vec!["b19 generic \"Show details for section 1\"".to_owned()]);
    assert_eq!(report.addressable, report.interactive - 1);

    let click = observer.click(&site.url("/toast.html"), "button", "Save", 2).await.expect("click Save");
    assert_eq!(click.ms_runs.len(), 2);
    assert!(click.text.contains("name: 'Save' }).click()"), "{}", click.text);
    let missing = observer.click(&site.url("/toast.html"), "button", "No such button", 1).await;
    assert!(missing.is_err(), "clicking a button that does not exist succeeded");

    Box::new(observer).close().await;
    site.shutdown().await;
}
