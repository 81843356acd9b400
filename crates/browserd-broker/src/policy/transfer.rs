//! Files in and out of the page (BRIEF §8, issue 16 item 4): an `upload` action (or batch step) of a missing file is
//! refused before dispatch; one outside `[files] upload_roots` (symbolic links resolved) waits for the user's approval
//! of exactly that file (`approved_files`; [`upload_refusal`] is the plain refusal), and a completed download
//! in an action's effects gets its receipt — size, SHA-256 and media type, read from the file in the download
//! directory, which browserd never opens or runs.

use std::io::Read;
use std::path::{Path, PathBuf};

use browserd_protocol::tools::ToolCall;
use browserd_protocol::{ActParams, ActionKind, ErrorCode, ErrorData};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::config::BrokerConfig;

/// Why the upload of `path` is refused; `None` when it may go ahead.
#[must_use]
pub fn upload_refusal(path: &str, roots: &[PathBuf]) -> Option<ErrorData> {
    let next = "ask the user to put the file in a directory listed in `upload_roots` of the `[files]` section of the \
                browserd config (`browserd config` shows the file and the current roots), or to add its directory \
                there";
    let denied = |why: String| {
        Some(
            ErrorData::new(ErrorCode::PolicyDenied, why)
                .with_next_step(next)
                .with_details(json!({"policy": "files", "key": "files.upload_roots", "outcome": "notDispatched"})),
        )
    };
    if roots.is_empty() {
        return denied(format!(
            "uploading {path} is refused: no upload directory is configured (`[files] upload_roots` is empty); \
             nothing was sent"
        ));
    }
    let Ok(real) = std::fs::canonicalize(path) else {
        return Some(ErrorData::invalid_params(format!(
            "{path} cannot be read; give the absolute path of an existing file inside an upload root"
        )));
    };
    let inside = roots.iter().any(|r| std::fs::canonicalize(r).is_ok_and(|root| real.starts_with(root)));
    if !inside {
        let shown: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
        return denied(format!(
            "uploading {path} is refused: it is not inside an upload root ({}); nothing was sent",
            shown.join(", ")
        ));
    }
    if !real.is_file() {
        return Some(ErrorData::invalid_params(format!("{path} is not a regular file")));
    }
    None
}

/// The check before a tool runs: every upload the call would make names an existing regular file (a file outside
/// the upload roots is then the user's to approve, step by step: `approved_files`).
///
/// # Errors
/// `INVALID_PARAMS` for a missing file or one that is not a regular file.
pub(crate) fn before(config: &BrokerConfig, call: &ToolCall) -> Result<(), ErrorData> {
    let upload = |p: &ActParams| (p.action == ActionKind::Upload).then(|| p.value.clone()).flatten();
    let paths: Vec<String> = match call {
        ToolCall::Act(p) => upload(p).into_iter().collect(),
        ToolCall::Batch(p) => p.steps.iter().filter_map(upload).collect(),
        _ => Vec::new(),
    };
    for path in paths {
        match upload_refusal(&path, &config.files.upload_roots) {
            Some(e) if e.code != ErrorCode::PolicyDenied => return Err(e),
            // Outside the roots: approvable, when it is an existing regular file.
            Some(_) if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) => {
                return Err(ErrorData::invalid_params(format!("{path} is not a regular file")));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The check after a tool ran: every completed download in the answer (`effects.downloads`, at any depth) gets its
/// receipt when its file is inside the download directory; one outside it is reported `failed` (`outside the
/// download directory`), since browserd did not put it there, and so is one the browser stopped (`canceled`).
pub(crate) fn after(config: &BrokerConfig, result: &mut Result<Value, ErrorData>) {
    let Ok(value) = result else { return };
    let dir = config.files.download_dir.as_ref().and_then(|d| std::fs::canonicalize(d).ok());
    visit_downloads(value, &mut |d| receipt(d, dir.as_deref()));
}

fn visit_downloads(value: &mut Value, f: &mut dyn FnMut(&mut Value)) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                match (k.as_str(), v) {
                    ("downloads", Value::Array(items)) => items.iter_mut().for_each(&mut *f),
                    (_, v) => visit_downloads(v, f),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| visit_downloads(v, f)),
        _ => {}
    }
}

/// Fills one download's receipt. The browser's `canceled` (it stopped the download: the connection broke, the server
/// failed, or the download was cancelled) is a `failed` receipt saying so.
fn receipt(download: &mut Value, dir: Option<&Path>) {
    if download["state"] == "canceled" {
        download["state"] = json!("failed");
        download["error"] = json!(
            "the browser stopped the download before it completed (the connection broke, the server failed, or it \
             was cancelled); no complete file was saved"
        );
        return;
    }
    if download["state"] != "completed" {
        return;
    }
    let Some(path) = download["path"].as_str().map(PathBuf::from) else { return };
    let real = std::fs::canonicalize(&path).ok();
    let confined = matches!((&real, dir), (Some(real), Some(dir)) if real.starts_with(dir));
    if !confined {
        download["state"] = json!("failed");
        download["error"] = json!("the saved file is not inside the download directory (`[files] download_dir`)");
        return;
    }
    match digest(&path) {
        Ok((size, sha)) => {
            download["size"] = json!(size);
            download["sha256"] = json!(sha);
            let name = download["fileName"].as_str().unwrap_or_default().to_owned();
            download["mime"] = json!(mime_of(&name));
        }
        Err(e) => {
            download["state"] = json!("failed");
            download["error"] = json!(format!("the saved file cannot be read: {e}"));
        }
    }
}

/// Size and lower-case hex SHA-256 of a file, read in blocks.
pub(crate) fn digest(path: &Path) -> std::io::Result<(u64, String)> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&buf[..n]);
    }
    let sha = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok((size, sha))
}

/// The media type of a file name, by its extension (`application/octet-stream` when unknown).
#[must_use]
pub fn mime_of(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "csv" => "text/csv",
        "txt" | "log" => "text/plain",
        "html" | "htm" => "text/html",
        "json" => "application/json",
        "xml" => "application/xml",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "webp" => "image/webp",
        "doc" => "application/msword",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uploads_pass_only_from_inside_a_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("up");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("cv.pdf"), "pdf").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("link.txt")).unwrap();
        let roots = vec![root.clone()];
        assert!(upload_refusal(&root.join("cv.pdf").display().to_string(), &roots).is_none());
        for out in [dir.path().join("secret.txt"), root.join("link.txt"), root.join("../secret.txt")] {
            let e = upload_refusal(&out.display().to_string(), &roots).unwrap();
            assert_eq!(e.code, ErrorCode::PolicyDenied, "{e}");
            assert!(e.next_step.contains("upload_roots") && e.next_step.contains("[files]"), "{e}");
        }
        let e = upload_refusal(&root.join("cv.pdf").display().to_string(), &[]).unwrap();
        assert!(e.message.contains("no upload directory"), "{e}");
        assert_eq!(upload_refusal("/nonexistent/x", &roots).unwrap().code, ErrorCode::InvalidParams);
    }

    #[test]
    fn a_completed_download_gets_its_receipt_only_inside_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let dl = dir.path().join("dl");
        std::fs::create_dir_all(&dl).unwrap();
        std::fs::write(dl.join("guid-1"), "abc").unwrap();
        std::fs::write(dir.path().join("elsewhere"), "abc").unwrap();
        let mut config = BrokerConfig::default();
        config.files.download_dir = Some(dl.clone());
        let mut result = Ok(json!({"effects": {"downloads": [
            {"fileName": "r.csv", "state": "completed", "path": dl.join("guid-1").display().to_string()},
            {"fileName": "x.bin", "state": "completed", "path": dir.path().join("elsewhere").display().to_string()},
            {"fileName": "y", "state": "canceled"}]}}));
        after(&config, &mut result);
        let d = &result.unwrap()["effects"]["downloads"];
        assert_eq!(d[0]["size"], 3);
        assert_eq!(d[0]["sha256"], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(d[0]["mime"], "text/csv");
        assert_eq!(d[1]["state"], "failed", "{d}");
        assert_eq!(d[2]["state"], "failed", "a download the browser stopped is a failed receipt: {d}");
        assert!(d[2]["error"].as_str().unwrap().contains("before it completed"), "{d}");
        assert!(d[2].get("sha256").is_none(), "no receipt of bytes: {d}");
    }
}
