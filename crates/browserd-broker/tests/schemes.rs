//! The scheme policy on a real managed Chromium, through the broker client as a host calls it (issue 16 item 1):
//! `javascript:`, `file:`, `chrome:`, `data:`, `view-source:` and the like are refused with `POLICY_DENIED` before
//! anything is sent (the page is unchanged, no tab is opened, no contents come back) at every entry point — open,
//! navigate, a batch step, claiming a user tab that shows one — and a page that leads a tab there (a link, a
//! redirect, a popup) gets no observation or action out of it. `file:` works inside `[files] file_url_roots`.

mod real_browser;

use std::path::Path;

use browserd_broker::ClientError;
use browserd_broker::config::BrokerConfig;
use browserd_broker::policy::files::FilesConfig;
use browserd_protocol::{ErrorCode, ErrorData};
use real_browser::{Real, ref_of};
use serde_json::{Value, json};

async fn refused(r: &Real, name: &str, args: Value) -> ErrorData {
    match r.c.tool(&r.s, name, args.clone()).await {
        Err(ClientError::Rpc(e)) => *e,
        other => panic!("{name} {args} was not refused: {other:?}"),
    }
}

fn assert_denied(e: &ErrorData, scheme: &str) {
    assert_eq!(e.code, ErrorCode::PolicyDenied, "{e}");
    assert!(e.message.contains(&format!("`{scheme}:`")), "the message names the scheme: {e}");
    assert!(!e.next_step.is_empty(), "{e}");
}

async fn tab_count(r: &Real) -> usize {
    r.tool("browser_list", json!({})).await["tabs"].as_array().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn javascript_urls_never_run_and_answer_policy_denied() {
    let r = Real::start("thread-schemes-js").await;
    let tab = r.tool("browser_open", json!({"url": r.site.url("/form.html")})).await["tab"].clone();
    let user = r.user().await;
    let title = user.eval_in("/form.html", "document.title").await;
    // Opened as a new tab: refused before any tab is made.
    let before = tab_count(&r).await;
    for url in ["javascript:void(document.title='pwned')", " JAVASCRIPT:alert(1)"] {
        let e = refused(&r, "browser_open", json!({"url": url, "observe": true})).await;
        assert_denied(&e, "javascript");
    }
    assert_eq!(tab_count(&r).await, before, "no tab was opened");
    for url in [
        "javascript:void(document.title='pwned')",
        "  JavaScript:void(document.title='pwned')",
        "java\tscript:void(document.title='pwned')",
    ] {
        let e = refused(&r, "browser_act", json!({"tab": tab, "action": "navigate", "value": url})).await;
        assert_denied(&e, "javascript");
        assert!(e.message.contains("nothing was sent"), "{e}");
        assert_eq!(e.details.as_deref().unwrap()["outcome"], "notDispatched");
    }
    // A batch that would get there is refused whole, before its first step.
    let e = refused(
        &r,
        "browser_batch",
        json!({"tab": tab, "steps": [{"action": "scroll", "value": "down"},
            {"action": "navigate", "value": "javascript:document.title='pwned'"}]}),
    )
    .await;
    assert_denied(&e, "javascript");
    assert_eq!(user.eval_in("/form.html", "document.title").await, title, "no script ran");
    // The tab is still the agent's and works.
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    assert!(obs["untrustedContent"].as_str().unwrap().contains("Full name"), "{obs}");
    r.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_chrome_data_and_view_source_are_refused_at_open_and_navigate() {
    let r = Real::start("thread-schemes-open").await;
    let page = r.tool("browser_open", json!({"url": r.site.url("/index.html")})).await["tab"].clone();
    let before = tab_count(&r).await;
    for (url, scheme) in [
        ("file:///etc/passwd", "file"),
        ("FILE:///etc/passwd", "file"),
        ("chrome://settings", "chrome"),
        ("chrome://version/", "chrome"),
        ("data:text/html,<title>inline</title><p>hi", "data"),
        ("view-source:file:///etc/passwd", "view-source"),
        ("devtools://devtools/bundled/inspector.html", "devtools"),
        ("chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/popup.html", "chrome-extension"),
    ] {
        let e = refused(&r, "browser_open", json!({"url": url, "observe": true})).await;
        assert_denied(&e, scheme);
        let text = serde_json::to_string(&e).unwrap();
        assert!(!text.contains("root:x:0:0"), "no file contents: {text}");
        let e = refused(&r, "browser_act", json!({"tab": page, "action": "navigate", "value": url})).await;
        assert_denied(&e, scheme);
    }
    assert_eq!(tab_count(&r).await, before, "no tab was opened");
    let e = refused(&r, "browser_open", json!({"url": "file:///etc/passwd"})).await;
    assert!(e.next_step.contains("file_url_roots"), "says which config key allows a directory: {e}");
    let obs = r.tool("browser_observe", json!({"tab": page})).await;
    assert!(obs["url"].as_str().unwrap().starts_with("http://"), "the tab stayed where it was: {obs}");
    r.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_tab_showing_a_refused_scheme_cannot_be_claimed() {
    let r = Real::start("thread-schemes-claim").await;
    r.tool("browser_open", json!({"url": r.site.url("/index.html")})).await;
    let user = r.user().await;
    let source = format!("view-source:{}", r.site.url("/form.html"));
    for (url, scheme) in [
        ("file:///etc/passwd", "file"),
        ("chrome://version/", "chrome"),
        ("data:text/html,<title>Inline</title><p>DATA-TAB-SECRET</p>", "data"),
        (source.as_str(), "view-source"),
    ] {
        user.open(url).await;
        let mut tab = None;
        for _ in 0..200 {
            let listed = r.tool("browser_list", json!({})).await;
            // The listing names a refused tab by its scheme only, never by its URL.
            assert!(!listed.to_string().contains(url), "a refused tab's URL is withheld: {listed}");
            let withheld = format!("{scheme}: (not authorised)");
            tab = listed["tabs"].as_array().unwrap().iter().find(|t| t["url"] == withheld).map(|t| t["tab"].clone());
            if tab.is_some() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        let tab = tab.unwrap_or_else(|| panic!("the user's {url} tab is listed"));
        let e = refused(&r, "browser_claim", json!({"tab": tab, "observe": true})).await;
        assert_denied(&e, scheme);
        let text = serde_json::to_string(&e).unwrap();
        assert!(
            !text.contains("root:x:0:0") && !text.contains("DATA-TAB-SECRET") && !text.contains("Full name"),
            "{e}"
        );
        let listed = r.tool("browser_list", json!({})).await;
        let shown = listed["tabs"].as_array().unwrap().iter().find(|t| t["tab"] == tab).unwrap().clone();
        assert_eq!(shown["provenance"], "user", "still the user's, unclaimed: {shown}");
    }
    r.finish().await;
}

/// An allowed directory with a page that leads out of it: a link, a meta refresh and a popup to a file outside.
fn allowed_dir(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let allowed = root.join("allowed");
    std::fs::create_dir_all(&allowed).unwrap();
    let secret = root.join("secret.txt");
    std::fs::write(&secret, "SECRET-TOKEN-4417\n").unwrap();
    let s = secret.display();
    std::fs::write(
        allowed.join("report.html"),
        format!(
            "<!doctype html><title>Report</title><h1>Quarterly report</h1>\
             <p><a href=\"file://{s}\">Read the secret</a></p>\
             <p><a href=\"file://{s}\" target=\"_blank\">Secret in a new tab</a></p>\
             <p><a href=\"refresh.html\">Refresh page</a></p>"
        ),
    )
    .unwrap();
    std::fs::write(
        allowed.join("refresh.html"),
        format!("<!doctype html><title>Moving</title><meta http-equiv=\"refresh\" content=\"0;url=file://{s}\">"),
    )
    .unwrap();
    (allowed, secret)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_roots_allow_a_directory_and_pages_leading_out_of_it_are_withheld() {
    let tmp = tempfile::tempdir().unwrap();
    let (allowed, secret) = allowed_dir(tmp.path());
    let files = FilesConfig { file_url_roots: vec![allowed.clone()], ..FilesConfig::default() };
    let r = Real::start_config("thread-schemes-files", BrokerConfig { files, ..BrokerConfig::default() }).await;
    let report = format!("file://{}/report.html", allowed.display());
    let opened = r.tool("browser_open", json!({"url": report, "observe": true})).await;
    let tab = opened["tab"].clone();
    let content = opened["observation"]["untrustedContent"].as_str().unwrap().to_owned();
    assert!(content.contains("Quarterly report"), "a file of an allowed directory is shown: {content}");
    let e = refused(&r, "browser_open", json!({"url": format!("file://{}", secret.display())})).await;
    assert_denied(&e, "file");

    // A link out of the directory: the click runs (Chromium lets file pages link to files), its answer is withheld.
    let link = ref_of(&content, "link \"Read the secret\"");
    let e = refused(&r, "browser_act", json!({"tab": tab, "action": "click", "target": link})).await;
    assert_denied(&e, "file");
    assert!(e.message.contains("withheld"), "{e}");
    assert!(!serde_json::to_string(&e).unwrap().contains("SECRET-TOKEN"), "{e}");
    // The tab now shows the secret: it cannot be read or acted on, only sent elsewhere.
    let e = refused(&r, "browser_observe", json!({"tab": tab})).await;
    assert_denied(&e, "file");
    assert!(!serde_json::to_string(&e).unwrap().contains("SECRET-TOKEN"), "{e}");
    let e = refused(&r, "browser_act", json!({"tab": tab, "action": "back"})).await;
    assert_denied(&e, "file");
    let back = r.tool("browser_act", json!({"tab": tab, "action": "navigate", "value": report})).await;
    assert_eq!(back["outcome"], "succeeded", "a tab may leave the page for an allowed URL: {back}");

    // A meta refresh to the secret.
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let refresh = ref_of(obs["untrustedContent"].as_str().unwrap(), "link \"Refresh page\"");
    let clicked = r.c.tool(&r.s, "browser_act", json!({"tab": tab, "action": "click", "target": refresh})).await;
    assert!(!format!("{clicked:?}").contains("SECRET-TOKEN"), "{clicked:?}");
    let mut last = None;
    for _ in 0..200 {
        match r.c.tool(&r.s, "browser_observe", json!({"tab": tab})).await {
            Err(ClientError::Rpc(e)) => {
                last = Some(*e);
                break;
            }
            Ok(seen) => {
                assert!(!seen.to_string().contains("SECRET-TOKEN"), "{seen}");
                tokio::time::sleep(std::time::Duration::from_millis(25)).await;
            }
            Err(other) => panic!("{other}"),
        }
    }
    assert_denied(&last.expect("the refreshed tab is refused"), "file");

    // A popup to the secret: the new tab is named in the listing but never read.
    r.tool("browser_act", json!({"tab": tab, "action": "navigate", "value": report})).await;
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let popup_link = ref_of(obs["untrustedContent"].as_str().unwrap(), "link \"Secret in a new tab\"");
    let clicked = r.c.tool(&r.s, "browser_act", json!({"tab": tab, "action": "click", "target": popup_link})).await;
    assert!(!format!("{clicked:?}").contains("SECRET-TOKEN"), "{clicked:?}");
    let mut popup = None;
    for _ in 0..200 {
        let listed = r.tool("browser_list", json!({})).await;
        popup = listed["tabs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tab"] != tab && t["url"] == "file: (not authorised)")
            .map(|t| t["tab"].clone());
        if popup.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let popup = popup.expect("the popup is listed, by its scheme only");
    let listed = r.tool("browser_list", json!({})).await;
    assert!(!listed.to_string().contains("secret.txt"), "the popup's URL is withheld: {listed}");
    let e = refused(&r, "browser_observe", json!({"tab": popup})).await;
    assert_denied(&e, "file");
    r.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_or_a_web_page_link_to_a_refused_scheme_shows_nothing_of_it() {
    let r = Real::start("thread-schemes-redirect").await;
    // An HTTP redirect to a file: Chromium refuses to follow it; the open fails and no contents come back.
    let url = r.site.url("/scheme-redirect?to=file:///etc/passwd");
    let before = tab_count(&r).await;
    let e = refused(&r, "browser_open", json!({"url": url, "observe": true})).await;
    assert!(!serde_json::to_string(&e).unwrap().contains("root:x:0:0"), "{e}");
    assert_eq!(e.code, ErrorCode::NavigationFailed, "{e}");
    assert!(e.message.contains("ERR_UNSAFE_REDIRECT"), "the browser refused to follow it: {e}");
    assert_eq!(e.details.as_deref().unwrap()["closed"], true, "the tab was closed again: {e}");
    assert_eq!(tab_count(&r).await, before, "no tab is left on it");
    // A web page's own navigation to chrome: and file: (the page's script, as a link would): Chromium blocks it;
    // the tab stays on its page and reads as before.
    let tab = r.tool("browser_open", json!({"url": r.site.url("/index.html")})).await["tab"].clone();
    let user = r.user().await;
    user.run_in("/index.html", "location.href = 'file:///etc/passwd'").await;
    user.run_in("/index.html", "location.href = 'chrome://settings'").await;
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    assert!(obs["url"].as_str().unwrap().starts_with("http://"), "{obs}");
    assert!(!obs.to_string().contains("root:x:0:0"));
    r.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_popup_from_a_web_page_to_data_or_chrome_shows_nothing_of_it() {
    let r = Real::start("thread-schemes-popup").await;
    let tab = r.tool("browser_open", json!({"url": r.site.url("/scheme-popup.html")})).await["tab"].clone();
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let content = obs["untrustedContent"].as_str().unwrap().to_owned();
    for name in ["Open data popup", "Open chrome popup"] {
        let button = ref_of(&content, name);
        // The click runs; whatever popup it opens is never read on the refused scheme.
        let answer = r.c.tool(&r.s, "browser_act", json!({"tab": tab, "action": "click", "target": button})).await;
        let text = format!("{answer:?}");
        assert!(!text.contains("DATA-POPUP-SECRET") && !text.contains("chrome://version"), "{text}");
        let listed = r.tool("browser_list", json!({})).await;
        for t in listed["tabs"].as_array().unwrap().iter().filter(|t| t["tab"] != tab && t["provenance"] != "user") {
            let url = t["url"].as_str().unwrap_or_default();
            assert!(
                !url.starts_with("data:") && !url.starts_with("chrome:") || url.ends_with("(not authorised)"),
                "the listing withholds a refused popup's URL: {listed}"
            );
            // The popup (Chromium leaves it blank, or never opens it) answers nothing of the refused page.
            match r.c.tool(&r.s, "browser_observe", json!({"tab": t["tab"]})).await {
                Err(ClientError::Rpc(e)) => assert_eq!(e.code, ErrorCode::PolicyDenied, "{e}"),
                Ok(seen) => {
                    assert!(!seen.to_string().contains("DATA-POPUP-SECRET"), "{seen}");
                    let shown = seen["url"].as_str().unwrap_or_default();
                    assert!(shown.starts_with("http://") || shown == "about:blank", "{seen}");
                }
                Err(other) => panic!("{other}"),
            }
        }
    }
    // The page that opened them still works.
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    assert!(obs["url"].as_str().unwrap().starts_with("http://"), "{obs}");
    r.finish().await;
}
