//! browserd's `forAction` mark: a call made for an action carries it only over a transport whose last-hop gate reads
//! it (the extension relay); a transport straight to a browser never sees it (Chromium refuses unknown top-level
//! fields).

use std::time::Duration;

use async_trait::async_trait;
use browserd_cdp::{Cdp, ConnectionOptions, MemoryTransport, SessionId, Transport, TransportError, memory_pair};
use serde_json::{Value, json};

/// A memory transport that says a gate behind it reads the mark.
struct Gated(MemoryTransport);

#[async_trait]
impl Transport for Gated {
    async fn send(&mut self, message: String) -> Result<(), TransportError> {
        self.0.send(message).await
    }
    async fn recv(&mut self) -> Result<String, TransportError> {
        self.0.recv().await
    }
    fn gates_actions(&self) -> bool {
        true
    }
}

/// Sends a read and a call for an action over `cdp`, answering both from `peer`; returns the two messages as sent.
async fn read_then_write(cdp: &Cdp, peer: &mut MemoryTransport) -> (Value, Value) {
    let s = SessionId::from("S");
    let t = Duration::from_secs(5);
    let mut seen = Vec::new();
    let calls = async {
        cdp.call(Some(&s), "Runtime.evaluate", json!({"expression": "1"}), t).await.unwrap();
        cdp.call_for_action(Some(&s), "Runtime.callFunctionOn", json!({"objectId": "o"}), t, None).await.unwrap();
    };
    let answer = async {
        for _ in 0..2 {
            let m: Value = serde_json::from_str(&peer.recv().await.unwrap()).unwrap();
            peer.send(json!({"id": m["id"], "result": {}, "sessionId": "S"}).to_string()).await.unwrap();
            seen.push(m);
        }
    };
    tokio::join!(calls, answer);
    (seen.remove(0), seen.remove(0))
}

#[tokio::test]
async fn a_call_for_an_action_is_marked_only_for_a_gate_that_reads_the_mark() {
    let (ours, mut peer) = memory_pair(8);
    let cdp = Cdp::spawn(Gated(ours), ConnectionOptions::default());
    let (read, write) = read_then_write(&cdp, &mut peer).await;
    assert!(read.get("forAction").is_none(), "a read is not marked: {read}");
    assert_eq!(write["forAction"], true, "{write}");
    assert_eq!(write["method"], "Runtime.callFunctionOn");

    let (ours, mut peer) = memory_pair(8);
    let cdp = Cdp::spawn(ours, ConnectionOptions::default());
    let (_, write) = read_then_write(&cdp, &mut peer).await;
    assert!(write.get("forAction").is_none(), "a browser's own endpoint never sees the mark: {write}");
}
