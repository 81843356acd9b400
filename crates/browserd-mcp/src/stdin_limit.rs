//! The MCP stdin line limit: a message line over [`MAX_LINE`] is answered with a JSON-RPC error naming the limit
//! (under the request's own id when it had one) instead of rmcp's silent drop, and the next lines are served.
//!
//! [`LineLimit`] sits between stdin and rmcp's line transport. It passes lines through as they come; once a line runs
//! over the limit it ends what rmcp has of it with a byte no JSON may hold (`\0\n`, which rmcp ignores as unparsable),
//! reads the rest of that line without keeping it while [`IdScanner`] looks for its `id`, and then reports it.
//! [`LimitedTransport`] answers each report through rmcp's own writer, so the error never interleaves with another
//! message.

use std::pin::Pin;
use std::task::{Context, Poll};

use browserd_ipc::IdScanner;
use browserd_protocol::{ErrorCode, ErrorData};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;

/// Longest MCP message line read from stdin (bytes, newline excluded): 16 MiB, the broker's frame limit.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// What ends the part of an over-long line rmcp already has: it can never parse as JSON.
const CUT: &[u8] = b"\0\n";

/// A line that was over the limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Oversized {
    /// Its length in bytes (newline excluded).
    pub size: usize,
    /// Its top-level JSON-RPC id, if it had one.
    pub id: Option<serde_json::Value>,
}

/// A reader that passes lines up to `limit` bytes through and reports longer ones on a channel.
#[derive(Debug)]
pub struct LineLimit<R> {
    inner: R,
    limit: usize,
    /// Bytes of the current line so far.
    len: usize,
    scan: IdScanner,
    /// Reading the rest of an over-long line without passing it on.
    discarding: bool,
    /// Bytes of [`CUT`] still to hand out.
    cut_left: &'static [u8],
    /// Bytes read but not yet gone through (what followed the byte that ran a line over the limit).
    rest: Vec<u8>,
    reports: mpsc::UnboundedSender<Oversized>,
}

impl<R> LineLimit<R> {
    /// Wraps `inner`; over-long lines are reported on the returned channel.
    pub fn new(inner: R, limit: usize) -> (Self, mpsc::UnboundedReceiver<Oversized>) {
        let (reports, rx) = mpsc::unbounded_channel();
        let reader = Self {
            inner,
            limit,
            len: 0,
            scan: IdScanner::new(),
            discarding: false,
            cut_left: &[],
            rest: Vec::new(),
            reports,
        };
        (reader, rx)
    }

    /// Goes through `data` (fresh bytes, in place): moves the ones to pass on to its front and returns how many, and
    /// how many of `data` it went through (all of it, or up to the byte that ran a line over the limit: the cut must
    /// come before the rest).
    fn filter(&mut self, data: &mut [u8]) -> (usize, usize) {
        let mut keep = 0;
        for i in 0..data.len() {
            let b = data[i];
            if b == b'\n' {
                if self.discarding {
                    let _ = self.reports.send(Oversized { size: self.len, id: self.scan.id() });
                    self.discarding = false;
                } else {
                    data[keep] = b;
                    keep += 1;
                }
                self.len = 0;
                self.scan = IdScanner::new();
                continue;
            }
            self.scan.feed(&[b]);
            self.len += 1;
            if self.discarding {
                continue;
            }
            if self.len > self.limit {
                self.discarding = true;
                self.cut_left = CUT;
                return (keep, i + 1);
            }
            data[keep] = b;
            keep += 1;
        }
        (keep, data.len())
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineLimit<R> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if !this.cut_left.is_empty() {
                let n = this.cut_left.len().min(buf.remaining());
                buf.put_slice(&this.cut_left[..n]);
                this.cut_left = &this.cut_left[n..];
                return Poll::Ready(Ok(()));
            }
            let before = buf.filled().len();
            if this.rest.is_empty() {
                match Pin::new(&mut this.inner).poll_read(cx, buf) {
                    Poll::Ready(Ok(())) => {}
                    other => return other,
                }
                if buf.filled().len() == before {
                    return Poll::Ready(Ok(())); // end of stdin
                }
            } else {
                let n = this.rest.len().min(buf.remaining());
                buf.put_slice(&this.rest[..n]);
                this.rest.drain(..n);
            }
            let fresh = &mut buf.filled_mut()[before..];
            let (keep, used) = this.filter(fresh);
            if used < fresh.len() {
                let mut rest = fresh[used..].to_vec();
                rest.append(&mut this.rest);
                this.rest = rest;
            }
            buf.set_filled(before + keep);
            if keep > 0 {
                return Poll::Ready(Ok(()));
            }
            // Nothing to pass on yet (the discarded line, or the cut comes first): go on.
        }
    }
}

/// The error that answers an over-long line.
#[must_use]
pub fn too_long_error(line: &Oversized, limit: usize) -> rmcp::ErrorData {
    let data = ErrorData::new(
        ErrorCode::InvalidRequest,
        format!(
            "this MCP message is {} bytes, over browserd's limit of {limit} bytes ({} MiB) per message line; it was \
             not read",
            line.size,
            limit / (1024 * 1024)
        ),
    )
    .with_next_step(
        "Send less in one call: a shorter value, a file path instead of the content, or the work split into \
         several calls.",
    );
    rmcp::ErrorData::new(
        rmcp::model::ErrorCode::INVALID_REQUEST,
        data.message.clone(),
        serde_json::to_value(&data).ok(),
    )
}

/// rmcp's line transport over a [`LineLimit`] reader: every over-long line is answered with [`too_long_error`].
pub struct LimitedTransport<R: AsyncRead + Unpin, W: AsyncWrite> {
    inner: AsyncRwTransport<RoleServer, LineLimit<R>, W>,
    reports: mpsc::UnboundedReceiver<Oversized>,
    limit: usize,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite> std::fmt::Debug for LimitedTransport<R, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LimitedTransport").field("limit", &self.limit).finish_non_exhaustive()
    }
}

impl<R, W> LimitedTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Serves MCP on `read`/`write` with a line limit of `limit` bytes.
    pub fn new(read: R, write: W, limit: usize) -> Self {
        let (reader, reports) = LineLimit::new(read, limit);
        // rmcp's own limit stays above ours (plus `\r` and the cut), so it never drops a line we passed.
        let inner = AsyncRwTransport::new_server(reader, write).with_max_line_length(limit + CUT.len() + 2);
        Self { inner, reports, limit }
    }
}

impl<R, W> Transport<RoleServer> for LimitedTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            tokio::select! {
                biased;
                Some(line) = self.reports.recv() => {
                    tracing::warn!(size = line.size, limit = self.limit, "answered an MCP message over the line limit");
                    let id = line.id.clone().and_then(|id| serde_json::from_value(id).ok());
                    let answer = TxJsonRpcMessage::<RoleServer>::error(too_long_error(&line, self.limit), id);
                    if self.inner.send(answer).await.is_err() {
                        return None;
                    }
                }
                message = self.inner.receive() => return message,
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tokio::io::AsyncReadExt;

    use super::*;

    async fn through(input: &[u8], limit: usize) -> (Vec<u8>, Vec<Oversized>) {
        let (mut reader, mut reports) = LineLimit::new(input, limit);
        let mut out = Vec::new();
        reader.read_to_end(&mut out).await.unwrap();
        drop(reader);
        let mut seen = Vec::new();
        while let Some(line) = reports.recv().await {
            seen.push(line);
        }
        (out, seen)
    }

    #[tokio::test]
    async fn lines_up_to_the_limit_pass_and_a_longer_one_is_cut_and_reported_with_its_id() {
        let input = b"{\"id\":1}\n{\"id\":2,\"x\":\"aaaaaaaaaaaaaaaaaaaa\"}\n{\"ok\":3}\r\n";
        let (out, seen) = through(input, 12).await;
        assert_eq!(out, b"{\"id\":1}\n{\"id\":2,\"x\":\0\n{\"ok\":3}\r\n");
        assert_eq!(seen, vec![Oversized { size: 35, id: Some(json!(2)) }]);
    }

    #[test]
    fn the_answer_names_the_limit_and_what_to_do() {
        let error = too_long_error(&Oversized { size: 17 << 20, id: None }, MAX_LINE);
        assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_REQUEST);
        assert!(error.message.contains("limit of 16777216 bytes (16 MiB)"), "{}", error.message);
        let data = error.data.unwrap();
        assert_eq!(data["code"], json!("INVALID_REQUEST"));
        assert!(data["nextStep"].as_str().unwrap().contains("file path"), "{data}");
    }
}
