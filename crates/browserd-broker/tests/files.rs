//! Files on a real managed Chromium through the broker client (issue 16 item 4): an upload goes through from a
//! directory of `[files] upload_roots` (the fixture server receives exactly that file); any other file waits for the
//! user's approval of exactly it (`APPROVAL_REQUIRED`, nothing set on the page, a next step naming the key), and once
//! granted that one upload goes through, once (the server receives its bytes), while another path or a changed file
//! asks again; a download lands in
//! `[files] download_dir` and the action's effects carry its receipt (name, size, SHA-256, media type, state), the
//! same bytes the fixture server sent.

mod real_browser;

use browserd_broker::ClientError;
use browserd_broker::config::BrokerConfig;
use browserd_broker::policy::files::FilesConfig;
use browserd_protocol::ErrorCode;
use browserd_test_support::fixtures::REPORT_CSV;
use real_browser::{Real, ref_of};
use serde_json::json;
use sha2::{Digest, Sha256};

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
    assert_eq!(e.code, ErrorCode::ApprovalRequired, "{e}");
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
    assert_eq!(e.code, ErrorCode::ApprovalRequired, "{e}");
    assert!(e.message.contains("no upload root is configured"), "{e}");
    assert!(e.next_step.contains("upload_roots"), "{e}");
    // A missing file is refused outright: there is nothing to approve.
    let e = match r
        .c
        .tool(
            &r.s,
            "browser_act",
            json!({"tab": tab, "action": "upload", "target": input, "value": "/nonexistent/x.txt"}),
        )
        .await
    {
        Err(ClientError::Rpc(e)) => *e,
        other => panic!("the upload was not refused: {other:?}"),
    };
    assert_eq!(e.code, ErrorCode::InvalidParams, "{e}");
    r.finish().await;
}

async fn refused(r: &Real, args: serde_json::Value) -> browserd_protocol::ErrorData {
    match r.c.tool(&r.s, "browser_act", args).await {
        Err(ClientError::Rpc(e)) => *e,
        other => panic!("the upload was not refused: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_outside_the_roots_uploads_once_after_the_user_approves_exactly_it() {
    use browserd_protocol::policy::ApprovalGrantParams;
    let tmp = tempfile::tempdir().unwrap();
    let up = tmp.path().join("uploads");
    std::fs::create_dir_all(&up).unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("letter.txt"), "Dear committee,\n").unwrap();
    std::fs::write(elsewhere.join("other.txt"), "not approved\n").unwrap();
    let files = FilesConfig { upload_roots: vec![up], ..FilesConfig::default() };
    let r = Real::start_config("thread-files-approved", BrokerConfig { files, ..BrokerConfig::default() }).await;
    let tab = r.tool("browser_open", json!({"url": r.site.url("/upload.html")})).await["tab"].clone();
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let input = ref_of(obs["untrustedContent"].as_str().unwrap(), "Document");
    let letter = elsewhere.join("letter.txt").display().to_string();
    let upload = |path: &str| json!({"tab": tab, "action": "upload", "target": input, "value": path});

    // Asked for exactly this file: its path, size and digest are named; nothing is set on the page.
    let e = refused(&r, upload(&letter)).await;
    assert_eq!(e.code, ErrorCode::ApprovalRequired, "{e}");
    assert!(e.message.contains(&letter) && e.message.contains("not inside an upload root"), "{e}");
    let details = e.details.as_ref().unwrap();
    assert_eq!(details["file"]["sha256"], hex(b"Dear committee,\n"), "{details}");
    assert_eq!(details["file"]["size"], 16, "{details}");
    let id = details["approval"].as_str().unwrap().to_owned();
    assert!(e.next_step.contains(&format!("browserd approve {id}")), "{e}");
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    assert!(obs["untrustedContent"].as_str().unwrap().contains("Chosen file: none"), "{obs}");

    // The user approves it: another file is not covered, the approved one goes through once.
    r.c.call(&ApprovalGrantParams { approval: id.clone() }).await.unwrap();
    let other = refused(&r, upload(&elsewhere.join("other.txt").display().to_string())).await;
    assert_eq!(other.code, ErrorCode::ApprovalRequired, "{other}");
    assert_ne!(other.details.as_ref().unwrap()["approval"], id.as_str());
    let set = r.tool("browser_act", upload(&letter)).await;
    assert_eq!(set["outcome"], "succeeded", "{set}");
    let obs = r.tool("browser_observe", json!({"tab": tab})).await;
    let content = obs["untrustedContent"].as_str().unwrap().to_owned();
    assert!(content.contains("letter.txt"), "the page sees the file's own name: {content}");
    let again = refused(&r, upload(&letter)).await;
    assert_eq!(again.code, ErrorCode::ApprovalRequired, "used once: {again}");

    // The server receives exactly the approved bytes.
    let submit = ref_of(&content, "button \"Upload\"");
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
    assert_eq!(got[0].file_name, "letter.txt");
    assert_eq!(got[0].sha256, hex(b"Dear committee,\n"));

    // A file changed after its approval is another file: asked again, never uploaded on the old approval.
    let e = refused(&r, upload(&letter)).await;
    let id = e.details.as_ref().unwrap()["approval"].as_str().unwrap().to_owned();
    r.c.call(&ApprovalGrantParams { approval: id }).await.unwrap();
    std::fs::write(elsewhere.join("letter.txt"), "Dear committee, (edited)\n").unwrap();
    let changed = refused(&r, upload(&letter)).await;
    assert_eq!(changed.code, ErrorCode::ApprovalRequired, "{changed}");
    assert_eq!(changed.details.as_ref().unwrap()["file"]["sha256"], hex(b"Dear committee, (edited)\n"));
    r.finish().await;
}
