//! The `Transport` trait (one JSON message out, one JSON message in) and the in-memory transport used by tests.

use async_trait::async_trait;
use tokio::sync::mpsc;

use crate::error::TransportError;

/// Carries whole CDP messages (JSON text) between the connection task and a browser.
///
/// Implementations: [`crate::PipeTransport`] (`--remote-debugging-pipe`), [`crate::WsTransport`] (a `ws://` endpoint)
/// and [`MemoryTransport`] (tests). The future extension relay implements it too, framing each message as a Native
/// Messaging frame.
///
/// Contract:
/// - `recv` must be cancel-safe: the connection task drops a pending `recv` future whenever it has a message to send,
///   and a later `recv` must return the message that was in flight, whole.
/// - `recv` returns [`TransportError::Closed`] with a human-readable reason once the peer is gone, and keeps returning
///   an error afterwards.
/// - `send` need not be cancel-safe; it is always awaited to completion.
#[async_trait]
pub trait Transport: Send + 'static {
    /// Sends one message.
    async fn send(&mut self, message: String) -> Result<(), TransportError>;
    /// Receives the next message.
    async fn recv(&mut self) -> Result<String, TransportError>;
    /// Whether a last-hop gate behind this transport (the extension relay) tells reads from writes by browserd's mark:
    /// then a command sent with [`crate::Cdp::call_for_action`] carries `"forAction": true` beside its `id`, and the
    /// transport takes it off before the browser sees it. Chromium refuses a message with any other top-level field,
    /// so transports straight to a browser keep the default `false` and never see the mark.
    fn gates_actions(&self) -> bool {
        false
    }
}

#[async_trait]
impl Transport for Box<dyn Transport> {
    async fn send(&mut self, message: String) -> Result<(), TransportError> {
        (**self).send(message).await
    }
    async fn recv(&mut self) -> Result<String, TransportError> {
        (**self).recv().await
    }
    fn gates_actions(&self) -> bool {
        (**self).gates_actions()
    }
}

/// One end of an in-memory transport pair, made by [`memory_pair`].
#[derive(Debug)]
pub struct MemoryTransport {
    tx: Option<mpsc::Sender<Frame>>,
    rx: mpsc::Receiver<Frame>,
    /// Why the peer is gone, once known: from its close frame, or a default when it just hung up.
    closed: Option<String>,
}

#[derive(Debug)]
enum Frame {
    Message(String),
    Close(String),
}

/// Makes two connected in-memory transports. Each direction is a bounded channel of `capacity` messages.
pub fn memory_pair(capacity: usize) -> (MemoryTransport, MemoryTransport) {
    let (a_tx, a_rx) = mpsc::channel(capacity.max(1));
    let (b_tx, b_rx) = mpsc::channel(capacity.max(1));
    (
        MemoryTransport { tx: Some(a_tx), rx: b_rx, closed: None },
        MemoryTransport { tx: Some(b_tx), rx: a_rx, closed: None },
    )
}

impl MemoryTransport {
    /// Closes this end; the peer's `recv` then fails with [`TransportError::Closed`] naming `reason`, after it has
    /// received the messages sent before.
    pub async fn close(&mut self, reason: &str) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Frame::Close(reason.to_owned())).await;
        }
    }
}

#[async_trait]
impl Transport for MemoryTransport {
    async fn send(&mut self, message: String) -> Result<(), TransportError> {
        let Some(tx) = &self.tx else {
            return Err(TransportError::Closed { reason: "this end of the in-memory transport was closed".into() });
        };
        if tx.send(Frame::Message(message)).await.is_err() {
            let reason = self.closed.clone().unwrap_or_else(|| "the in-memory peer hung up".to_owned());
            return Err(TransportError::Closed { reason });
        }
        Ok(())
    }

    async fn recv(&mut self) -> Result<String, TransportError> {
        if let Some(reason) = &self.closed {
            return Err(TransportError::Closed { reason: reason.clone() });
        }
        let reason = match self.rx.recv().await {
            Some(Frame::Message(message)) => return Ok(message),
            Some(Frame::Close(reason)) => reason,
            None => "the in-memory peer hung up".to_owned(),
        };
        self.closed = Some(reason.clone());
        Err(TransportError::Closed { reason })
    }
}
