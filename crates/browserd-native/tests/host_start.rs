//! The native host starts the broker when nothing listens at the default endpoint: it runs
//! `<broker exe> broker run --daemon` (here a stand-in script named by `BROWSERD_BROKER_EXE`), waits for the endpoint
//! and pairs with it once it appears. An extension that announces none of the turn-cleanup capabilities makes the
//! broker's extension browser report every one missing.

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

use browserd_native::framing::encode_frame;
use browserd_native::install::DEV_EXTENSION_ID;
use browserd_native::link::{EndpointOptions, ExtensionEndpoint};
use serde_json::json;
use tokio::io::AsyncWriteExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_starts_the_broker_when_nothing_listens_then_pairs() {
    let tmp = tempfile::tempdir().unwrap();
    let xdg = tmp.path().join("xdg");
    std::fs::create_dir(&xdg).unwrap();
    std::fs::set_permissions(&xdg, std::fs::Permissions::from_mode(0o700)).unwrap();
    let marker = tmp.path().join("broker-started");
    let script = tmp.path().join("fake-browserd");
    std::fs::write(&script, "#!/bin/sh\necho \"$@\" > \"$BROWSERD_TEST_MARKER\"\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_browserd-native"))
        .args(["native-host", &format!("chrome-extension://{DEV_EXTENSION_ID}/")])
        .env_remove("BROWSERD_EXTENSION_SOCKET")
        .env("XDG_RUNTIME_DIR", &xdg)
        .env("BROWSERD_BROKER_EXE", &script)
        .env("BROWSERD_TEST_MARKER", &marker)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut started = String::new();
    for _ in 0..400 {
        if let Ok(s) = std::fs::read_to_string(&marker)
            && !s.is_empty()
        {
            started = s;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(started.trim(), "broker run --daemon", "the host started the broker");
    // The "broker" comes up: the endpoint appears where the host looks, and the host pairs with it.
    let socket = xdg.join("browserd").join("extension.sock");
    let (_endpoint, mut links) = ExtensionEndpoint::bind(&socket, EndpointOptions::default()).await.unwrap();
    let hello = json!({"type": "hello", "instance": "i1", "seq": 0, "controlEpoch": 1, "userAgent": "test",
                       "params": {"role": "extension", "protocol": {"min": 1, "max": 1}, "capabilities": []}});
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&encode_frame(hello.to_string().as_bytes())).await.unwrap();
    let link = tokio::time::timeout(Duration::from_secs(20), links.recv())
        .await
        .expect("the host pairs once the broker listens")
        .unwrap();
    assert_eq!(link.info().extension_id, DEV_EXTENSION_ID);
    assert_eq!(link.info().missing_for_auto_turn_cleanup.len(), 4, "no capabilities announced");
    // The broker's extension browser reports each missing capability, so status says autoTurnCleanup: refused.
    let provider = browserd_broker::extension::ExtensionProvider::new(
        link.clone(),
        browserd_core::provider::HandleAllocator::new(),
        browserd_chromium::ChromiumConfig::default(),
    );
    let caps = browserd_core::provider::Provider::capabilities(&*provider);
    assert_eq!(caps.missing_for_turn_cleanup(), browserd_core::provider::Capability::TURN_CLEANUP_REQUIRED.to_vec());
    let detail = format!("{:?}", caps.0[&browserd_core::provider::Capability::TurnCleanup]);
    assert!(detail.contains("update the browserd extension"), "{detail}");
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await.expect("the host exits").unwrap();
    assert_eq!(status.code(), Some(0));
}
