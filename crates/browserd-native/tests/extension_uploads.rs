//! The extension's upload gate, in headless Chromium with the real extension and native host: with its own copy of
//! the upload roots (`schemes.set` `uploadRoots`, as the broker sends it at connect), `DOM.setFileInputFiles` with a
//! file outside them is refused with `POLICY_DENIED` before the page's file input gets anything, even under a valid
//! lease; a file inside them is set.

mod common;

use std::time::Duration;

use browserd_native::link::{ExtensionError, ExtensionLink};
use serde_json::{Value, json};

const AGENT: &str = "agent-uploads";

async fn send(
    link: &ExtensionLink,
    tab: i64,
    method: &str,
    params: Value,
    fence: Value,
) -> Result<Value, ExtensionError> {
    link.call("cdp.send", json!({"target": {"tabId": tab}, "method": method, "params": params, "fence": fence})).await
}

async fn evaluate(link: &ExtensionLink, tab: i64, expression: &str) -> Value {
    let r = send(link, tab, "Runtime.evaluate", json!({"expression": expression, "returnByValue": true}), Value::Null)
        .await
        .unwrap();
    r["result"]["value"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upload_gate_sets_only_files_inside_the_upload_roots() {
    let h = common::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let up = std::fs::canonicalize(tmp.path()).unwrap().join("uploads");
    std::fs::create_dir_all(&up).unwrap();
    std::fs::write(up.join("cv.txt"), "Ada Lovelace, analyst\n").unwrap();
    let private = up.parent().unwrap().join("private.txt");
    std::fs::write(&private, "not for the web\n").unwrap();
    let set = h.link.call("schemes.set", json!({"fileRoots": [], "extra": [], "uploadRoots": [up]})).await.unwrap();
    assert_eq!(set["uploadRoots"], json!([up]), "{set}");

    let url = h.site.url("/upload.html");
    let tab = h.link.create_tab(AGENT, &url, true).await.unwrap().tab_id;
    h.link.call("debugger.attach", json!({"session": AGENT, "tabId": tab})).await.unwrap();
    let probe = format!("location.href === {url:?} && document.readyState === 'complete'");
    let mut loaded = false;
    for _ in 0..300 {
        if evaluate(&h.link, tab, &probe).await == true {
            loaded = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(loaded, "the upload page loads");
    let doc = send(&h.link, tab, "DOM.getDocument", json!({}), Value::Null).await.unwrap();
    let found = send(
        &h.link,
        tab,
        "DOM.querySelector",
        json!({"nodeId": doc["root"]["nodeId"], "selector": "input[type=file]"}),
        Value::Null,
    )
    .await
    .unwrap();
    let node = found["nodeId"].clone();
    let lease = h.link.grant_lease(AGENT, tab, 1).await.unwrap();
    let fence = json!({"token": lease.token, "epoch": lease.epoch});
    let count = "String(document.querySelector('input[type=file]').files.length)";

    // Outside the roots: refused at the last hop, the input stays empty.
    for outside in [private.display().to_string(), format!("{}/../private.txt", up.display())] {
        let e = send(&h.link, tab, "DOM.setFileInputFiles", json!({"files": [outside], "nodeId": node}), fence.clone())
            .await
            .unwrap_err();
        match &e {
            ExtensionError::Refused { code, .. } => assert_eq!(code, "POLICY_DENIED", "{e}"),
            other => panic!("expected a refusal, got {other}"),
        }
        assert!(e.to_string().contains("upload_roots") || e.to_string().contains(".."), "{e}");
        assert_eq!(evaluate(&h.link, tab, count).await, "0", "nothing was set");
    }
    // Without a lease the lease's own refusal comes first.
    let e = send(
        &h.link,
        tab,
        "DOM.setFileInputFiles",
        json!({"files": [private], "nodeId": node}),
        json!({"token": 99, "epoch": lease.epoch}),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("LEASE_REVOKED") || format!("{e:?}").contains("LEASE_REVOKED"), "{e:?}");

    // Inside the roots: set.
    let inside = up.join("cv.txt").display().to_string();
    send(&h.link, tab, "DOM.setFileInputFiles", json!({"files": [inside], "nodeId": node}), fence).await.unwrap();
    assert_eq!(evaluate(&h.link, tab, count).await, "1", "the file was set");
    h.stop().await;
}
