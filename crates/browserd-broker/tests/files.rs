//! Files on a real managed Chromium through the broker client (issue 16 item 4): an upload goes through only from a
//! directory of `[files] upload_roots` (the fixture server receives exactly that file), is refused before dispatch
//! otherwise with a next step naming the key (the page's file input stays empty); a download lands in
//! `[files] download_dir` and the action's effects carry its receipt (name, size, SHA-256, media type, state), the
//! same bytes the fixture server sent.

mod real_browser;

use browserd_broker::ClientError;
use browserd_broker::config::BrokerConfig;
use browserd_broker::policy::files::FilesConfig;
use browserd_protocol::ErrorCode;
use browserd_test_support::fixtures::REPORT_CSV;
use real_browser::Real;
use serde_json::json;
use sha2::{Digest, Sha256};

fn ref_of(content: &str, needle: &str) -> String {
    let line = content.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle} in\n{content}"));
    line[line.find('[').unwrap() + 1..line.find(']').unwrap()].to_owned()
}

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_only_from_upload_roots_and_downloads_come_back_as_receipts() {
    let tmp = tempfile::tempdir().unwrap();
    let up = tmp.path().join("uploads");
    let dl = tmp.path().join("downloads");
    std::fs::create_dir_all(&up).unwrap();
    std::fs::write(up.join("cv.txt"), "Ada Lovelace, analyst\n").unwrap();
    std::fs::write(tmp.path().join("private.txt"), "not for the web\n").unwrap();
    let files =
        FilesConfig { upload_roots: vec![up.clone()], download_dir: Some(dl.clone()), ..FilesConfig::default() };
    let r = Real::start_config("thread-files", BrokerConfig { files, ..BrokerConfig::default() }).await;

    // Upload: outside the roots refused before anything is sent; inside it reaches the server.
    let tab = r.tool("browser_open", json!({"url": r.site.url("/upload.html")})).await["tab"].clone();
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let content = obs["untrustedContent"].as_str().unwrap().to_owned();
    let input = ref_of(&content, "Document");
    let private = tmp.path().join("private.txt").display().to_string();
    let e = match r
        .c
        .tool(&r.s, "browser_act", json!({"tab": tab, "action": "upload", "target": input, "value": private}))
        .await
    {
        Err(ClientError::Rpc(e)) => *e,
        other => panic!("the upload was not refused: {other:?}"),
    };
    assert_eq!(e.code, ErrorCode::PolicyDenied, "{e}");
    assert!(e.next_step.contains("upload_roots") && e.next_step.contains("[files]"), "{e}");
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    assert!(obs["untrustedContent"].as_str().unwrap().contains("Chosen file: none"), "nothing was set: {obs}");
    let cv = up.join("cv.txt").display().to_string();
    let set = r.tool("browser_act", json!({"tab": tab, "action": "upload", "target": input, "value": cv})).await;
    assert_eq!(set["outcome"], "succeeded", "{set}");
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let submit = ref_of(obs["untrustedContent"].as_str().unwrap(), "button \"Upload\"");
    r.tool("browser_act", json!({"tab": tab, "action": "click", "target": submit})).await;
    let mut got = Vec::new();
    for _ in 0..200 {
        got = r.site.uploads();
        if !got.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(got.len(), 1, "exactly one upload reached the server");
    assert_eq!(got[0].file_name, "cv.txt");
    assert_eq!(got[0].sha256, hex(b"Ada Lovelace, analyst\n"));

    // Download: lands in the download directory; the effects carry the receipt of the bytes the server sent.
    r.tool("browser_act", json!({"tab": tab, "action": "navigate", "value": r.site.url("/download.html")})).await;
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let link = ref_of(obs["untrustedContent"].as_str().unwrap(), "link \"Download report.csv\"");
    let clicked = r
        .tool(
            "browser_act",
            json!({"tab": tab, "action": "click", "target": link, "expected": [{"kind": "downloadFinished"}]}),
        )
        .await;
    let downloads = clicked["effects"]["downloads"].as_array().unwrap_or_else(|| panic!("{clicked}"));
    let done = downloads.iter().find(|d| d["state"] == "completed").unwrap_or_else(|| panic!("{clicked}"));
    assert_eq!(done["fileName"], "report.csv");
    assert_eq!(done["size"], REPORT_CSV.len());
    assert_eq!(done["sha256"], hex(REPORT_CSV.as_bytes()));
    assert_eq!(done["mime"], "text/csv");
    let path = std::path::PathBuf::from(done["path"].as_str().unwrap());
    assert!(
        std::fs::canonicalize(&path).unwrap().starts_with(std::fs::canonicalize(&dl).unwrap()),
        "{path:?} is in the download directory"
    );
    assert_eq!(std::fs::read(&path).unwrap(), REPORT_CSV.as_bytes());
    r.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_upload_roots_an_upload_says_which_key_to_set() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.txt"), "a").unwrap();
    let r = Real::start("thread-files-none").await;
    let tab = r.tool("browser_open", json!({"url": r.site.url("/upload.html")})).await["tab"].clone();
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let input = ref_of(obs["untrustedContent"].as_str().unwrap(), "Document");
    let path = tmp.path().join("a.txt").display().to_string();
    let e = match r
        .c
        .tool(&r.s, "browser_act", json!({"tab": tab, "action": "upload", "target": input, "value": path}))
        .await
    {
        Err(ClientError::Rpc(e)) => *e,
        other => panic!("the upload was not refused: {other:?}"),
    };
    assert_eq!(e.code, ErrorCode::PolicyDenied, "{e}");
    assert!(e.message.contains("no upload directory is configured"), "{e}");
    assert!(e.next_step.contains("upload_roots"), "{e}");
    r.finish().await;
}
