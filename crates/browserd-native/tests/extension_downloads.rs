//! Downloads over the extension relay (issue 16 item 4): the user's own browser saves a download where its own
//! settings say, and neither browserd nor its extension can put it in `[files] download_dir` (chrome.downloads names
//! only paths under the browser's Downloads folder; `Browser.setDownloadBehavior` is out of reach of an extension). A
//! real broker drives headless Chromium (its `HOME` a temp dir) through the real extension and native host:
//! `browser_status` says `downloads` is unsupported `byImplementation` with the reason in words, and a click that
//! starts a download answers with it in `effects.downloads`, saying it is not confined and has no receipt; the file
//! is in the browser's own Downloads folder, not in the download directory.

mod brokered;

use std::time::Duration;

use browserd_broker::config::BrokerConfig;
use browserd_broker::policy::files::FilesConfig;
use browserd_test_support::fixtures::REPORT_CSV;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_over_the_extension_is_reported_unconfined_and_without_a_receipt() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let dir = tmp.path().join("downloads");
    std::fs::create_dir_all(&home).unwrap();
    let config = BrokerConfig {
        files: FilesConfig { download_dir: Some(dir.clone()), ..FilesConfig::default() },
        ..BrokerConfig::default()
    };
    let env = vec![("HOME".to_owned(), home.display().to_string())];
    let s = brokered::start_with_env(config, false, env).await;
    let (c, ss) = (&s.client, &s.session);

    let tab = c.tool(ss, "browser_open", json!({"url": s.site.url("/download.html")})).await.unwrap()["tab"].clone();
    // Once the browser is in use, its capabilities are known.
    let status = c.tool(ss, "browser_status", json!({})).await.unwrap();
    let downloads = status["unsupported"].as_array().unwrap().iter().find(|u| u["name"] == "downloads").cloned();
    let downloads = downloads.unwrap_or_else(|| panic!("downloads is listed as unsupported: {status}"));
    assert_eq!(downloads["unsupported"], "byImplementation", "{status}");
    let detail = downloads["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("not confined over the extension relay") && detail.contains("no receipt"), "{status}");

    let obs = c.tool(ss, "browser_observe", json!({"tab": tab})).await.unwrap();
    let link = brokered::ref_of(obs["untrustedContent"].as_str().unwrap(), "Download report.csv");
    let clicked = c.tool(ss, "browser_act", json!({"tab": tab, "action": "click", "target": link})).await.unwrap();
    let reported = clicked["effects"]["downloads"].as_array().cloned().unwrap_or_default();
    assert_eq!(reported.len(), 1, "the click reports the download it started: {clicked}");
    let d = &reported[0];
    assert_eq!(d["fileName"], "report.csv", "{clicked}");
    assert!(d["state"] == "inProgress" || d["state"] == "completed", "{clicked}");
    let error = d["error"].as_str().unwrap_or_default();
    assert!(error.contains("not confined") && error.contains("no receipt"), "{clicked}");
    for field in ["path", "size", "sha256", "mime"] {
        assert!(d.get(field).is_none_or(Value::is_null), "no {field}: {clicked}");
    }

    // Where the file really went: the browser's own Downloads folder, byte for byte; not the download directory.
    let saved = home.join("Downloads").join("report.csv");
    let mut bytes = None;
    for _ in 0..500 {
        bytes = std::fs::read_to_string(&saved).ok().filter(|b| b == REPORT_CSV);
        if bytes.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(bytes.is_some(), "the user's browser saved it in {}", saved.display());
    let confined = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
    assert_eq!(confined, 0, "nothing landed in the download directory");
    s.stop().await;
}
