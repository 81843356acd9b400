//! A download that fails, on a real managed Chromium through the broker client (issue 16 item 4): the fixture server
//! promises a whole file and cuts the connection after its first lines; the action's effects carry the download's
//! receipt with state `failed` and why (the browser's own word is `canceled`), with no size or digest, and nothing
//! complete of it is in `[files] download_dir`. The `downloadFinished` expectation is not met by it.

mod real_browser;

use browserd_broker::config::BrokerConfig;
use browserd_broker::policy::files::FilesConfig;
use real_browser::{Real, ref_of};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_whose_connection_is_cut_comes_back_as_a_failed_receipt() {
    let tmp = tempfile::tempdir().unwrap();
    let dl = tmp.path().join("downloads");
    let files = FilesConfig { download_dir: Some(dl.clone()), ..FilesConfig::default() };
    let r = Real::start_config("thread-download-failed", BrokerConfig { files, ..BrokerConfig::default() }).await;
    let tab = r.tool("browser_open", json!({"url": r.site.url("/broken-download.html")})).await["tab"].clone();
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let link = ref_of(obs["untrustedContent"].as_str().unwrap(), "link \"Download broken.csv\"");
    let clicked = r
        .tool(
            "browser_act",
            json!({"tab": tab, "action": "click", "target": link, "expected": [{"kind": "downloadFinished"}],
                   "timeoutMs": 5000}),
        )
        .await;
    let downloads = clicked["effects"]["downloads"].as_array().unwrap_or_else(|| panic!("{clicked}"));
    let broken = downloads.iter().find(|d| d["fileName"] == "broken.csv").unwrap_or_else(|| panic!("{clicked}"));
    assert_eq!(broken["state"], "failed", "{clicked}");
    assert!(broken["error"].as_str().unwrap_or_default().contains("before it completed"), "{clicked}");
    assert!(broken.get("sha256").is_none() && broken.get("size").is_none(), "no receipt of bytes: {clicked}");
    // Nothing complete of it is in the download directory (a partial file may wait there, never the promised one).
    let complete: Vec<_> = std::fs::read_dir(&dl)
        .map(|d| d.filter_map(Result::ok).filter(|e| e.metadata().is_ok_and(|m| m.len() >= 64 * 1024)).collect())
        .unwrap_or_default();
    assert!(complete.is_empty(), "{complete:?}");
    // The server did cut it: it was asked for the file once (no retry reached it as a whole).
    assert!(r.site.requests().iter().any(|q| q.ends_with("/download/broken.csv")), "{:?}", r.site.requests());
    r.finish().await;
}
