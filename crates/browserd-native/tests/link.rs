//! The endpoint and link against a scripted native host (no browser): pairing rules, hello negotiation, replies,
//! numbered events with resync on a gap, Stop on the priority lane, and closing.

use std::time::Duration;

use browserd_native::link::{EndpointOptions, ExtensionEndpoint, ExtensionError, LinkEvent, probe};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

const ID: &str = "menplffdljednpgdojaklnbhimafddmj";

struct FakeHost {
    lines: tokio::io::Lines<BufReader<OwnedReadHalf>>,
    w: OwnedWriteHalf,
}

impl FakeHost {
    async fn connect(path: &std::path::Path) -> FakeHost {
        let (r, w) = UnixStream::connect(path).await.unwrap().into_split();
        FakeHost { lines: BufReader::new(r).lines(), w }
    }
    async fn send(&mut self, v: Value) {
        self.w.write_all(format!("{v}\n").as_bytes()).await.unwrap();
    }
    async fn recv(&mut self) -> Option<Value> {
        tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .map(|l| serde_json::from_str(&l).unwrap())
    }
    async fn pair(path: &std::path::Path, id: &str, capabilities: Value, protocol: Value) -> FakeHost {
        let mut h = FakeHost::connect(path).await;
        h.send(json!({"type": "host", "extensionId": id, "origin": format!("chrome-extension://{id}/"), "pid": 42, "hostVersion": "t"}))
            .await;
        h.send(json!({"type": "hello", "instance": "i1", "seq": 0, "controlEpoch": 3, "userAgent": "HeadlessChrome/156.0.0.0",
                      "params": {"role": "extension", "protocol": protocol, "components": {"extension": "0.1.0"}, "capabilities": capabilities}}))
            .await;
        h
    }
}

const ALL_CAPS: [&str; 4] = ["turnCleanup", "turnScopedMarks", "retainedCleanup", "debuggerLeaseRecovery"];

#[tokio::test]
async fn pairs_answers_calls_and_resyncs_on_an_event_gap() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("ext.sock");
    let (_ep, mut links) = ExtensionEndpoint::bind(&sock, EndpointOptions::default()).await.unwrap();
    assert_eq!(
        std::fs::metadata(&sock).map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777).unwrap(),
        0o600
    );
    assert_eq!(probe(&sock).await.unwrap(), None, "listening, nothing paired");
    let mut host = FakeHost::pair(&sock, ID, json!(ALL_CAPS), json!({"min": 1, "max": 1})).await;
    let welcome = host.recv().await.unwrap();
    assert_eq!(welcome["type"], "welcome");
    assert_eq!(welcome["protocolVersion"], 1);
    let link = links.recv().await.unwrap();
    assert_eq!(link.info().control_epoch, 3);
    assert!(link.info().missing_for_auto_turn_cleanup.is_empty());
    assert_eq!(probe(&sock).await.unwrap().unwrap()["instance"], "i1");

    // A call and its reply; an error reply keeps its code.
    let l = link.clone();
    let call = tokio::spawn(async move { l.call("ping", json!({})).await });
    let msg = host.recv().await.unwrap();
    assert_eq!((msg["type"].as_str(), msg["cmd"].as_str()), (Some("call"), Some("ping")));
    host.send(json!({"type": "reply", "id": msg["id"], "ok": true, "result": {"pong": true}})).await;
    assert_eq!(call.await.unwrap().unwrap(), json!({"pong": true}));
    let l = link.clone();
    let call = tokio::spawn(async move { l.close_tab("s", 5).await });
    let msg = host.recv().await.unwrap();
    host.send(json!({"type": "reply", "id": msg["id"], "ok": false, "error": {"code": "NOT_OWNER", "message": "no"}}))
        .await;
    assert_eq!(call.await.unwrap().unwrap_err().code(), "NOT_OWNER");

    // Events 1 and 3: the gap makes the link ask for a resync.
    let mut events = link.events();
    host.send(json!({"type": "event", "seq": 1, "kind": "tabRemoved", "tabId": 9, "owner": null})).await;
    host.send(json!({"type": "event", "seq": 3, "kind": "tabRemoved", "tabId": 10, "owner": null})).await;
    let resync = host.recv().await.unwrap();
    assert_eq!(resync["cmd"], "resync");
    host.send(json!({"type": "reply", "id": resync["id"], "ok": true, "result": {"tabs": [], "attached": [], "gate": {"epoch": 4}}}))
        .await;
    let mut saw_resync = false;
    for _ in 0..5 {
        if let LinkEvent::Resynced { expected, got, .. } = events.recv().await.unwrap() {
            assert_eq!((expected, got), (2, 3));
            saw_resync = true;
            break;
        }
    }
    assert!(saw_resync);
    assert_eq!(link.control_epoch(), 4);

    // Stop goes on the priority lane and its report updates the epoch.
    let l = link.clone();
    let stop = tokio::spawn(async move { l.stop("user left").await });
    let msg = host.recv().await.unwrap();
    assert_eq!((msg["cmd"].as_str(), msg["lane"].as_str()), (Some("stop"), Some("priority")));
    host.send(json!({"type": "reply", "id": msg["id"], "ok": true,
                     "result": {"via": "broker", "controlEpoch": 5, "droppedInputs": 2, "detached": [1]}}))
        .await;
    let report = stop.await.unwrap().unwrap();
    assert_eq!((report.control_epoch, report.dropped_inputs), (5, 2));
    assert_eq!(link.control_epoch(), 5);

    // The host goes away: pending calls fail as closed, the link says why.
    let l = link.clone();
    let pending = tokio::spawn(async move { l.call("status", json!({})).await });
    let _ = host.recv().await.unwrap();
    drop(host);
    let err = pending.await.unwrap().unwrap_err();
    assert!(matches!(err, ExtensionError::Closed { .. }), "{err}");
    assert!(link.wait_closed().await.contains("disconnected"));
}

#[tokio::test]
async fn refuses_unknown_extensions_and_incompatible_versions_and_reports_missing_capabilities() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("ext.sock");
    let (_ep, mut links) = ExtensionEndpoint::bind(&sock, EndpointOptions::default()).await.unwrap();
    let other = "abcdefghijklmnopabcdefghijklmnop";
    let mut h = FakeHost::pair(&sock, other, json!(ALL_CAPS), json!({"min": 1, "max": 1})).await;
    let refused = h.recv().await.unwrap();
    assert_eq!(refused["type"], "refused");
    assert!(refused["message"].as_str().unwrap().contains(&format!("--extension-id {other}")), "{refused}");
    let mut h = FakeHost::pair(&sock, ID, json!(ALL_CAPS), json!({"min": 7, "max": 9})).await;
    assert_eq!(h.recv().await.unwrap()["type"], "refused");
    let mut h = FakeHost::pair(&sock, ID, json!(["turnCleanup"]), json!({"min": 1, "max": 2})).await;
    assert_eq!(h.recv().await.unwrap()["type"], "welcome");
    let link = links.recv().await.unwrap();
    assert_eq!(
        link.info().missing_for_auto_turn_cleanup,
        vec!["turnScopedMarks".to_owned(), "retainedCleanup".to_owned(), "debuggerLeaseRecovery".to_owned()]
    );
    // A second endpoint on a live socket is refused; a stale socket file is replaced.
    let again = ExtensionEndpoint::bind(&sock, EndpointOptions::default()).await;
    assert!(again.is_err());
    let stale = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    let (_ep2, _rx) = ExtensionEndpoint::bind(&stale, EndpointOptions::default()).await.unwrap();
}
