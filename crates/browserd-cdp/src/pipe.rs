//! The pipe transport: CDP over the two pipes of `--remote-debugging-pipe`, each message terminated by a NUL byte.

use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::watch;

use crate::error::TransportError;
use crate::transport::Transport;

/// The largest message accepted from the browser (full-page screenshots of long pages are big).
pub const MAX_PIPE_MESSAGE: usize = 512 * 1024 * 1024;

/// How long to wait, after the pipe closed, for the process watcher to say why.
const EXIT_REASON_GRACE: Duration = Duration::from_secs(5);

/// CDP over a pair of pipes: the browser reads commands from one (its fd 3) and writes answers and events to the other
/// (its fd 4).
#[derive(Debug)]
pub struct PipeTransport {
    writer: pipe::Sender,
    reader: pipe::Receiver,
    /// Bytes read but not yet returned; kept here so `recv` is cancel-safe.
    buf: Vec<u8>,
    /// Where the NUL search resumes in `buf`.
    scanned: usize,
    /// Tells why the peer went away (for a managed browser: its exit status), once known.
    exit_reason: Option<watch::Receiver<Option<String>>>,
}

impl PipeTransport {
    /// Wraps the parent's ends of the two pipes. `exit_reason` names why the browser went away once the pipe closes.
    pub fn new(
        writer: pipe::Sender,
        reader: pipe::Receiver,
        exit_reason: Option<watch::Receiver<Option<String>>>,
    ) -> PipeTransport {
        PipeTransport { writer, reader, buf: Vec::with_capacity(64 * 1024), scanned: 0, exit_reason }
    }

    async fn closed_reason(&mut self) -> String {
        let fallback = "the browser closed its end of the DevTools pipe".to_owned();
        let Some(exit) = &mut self.exit_reason else { return fallback };
        match tokio::time::timeout(EXIT_REASON_GRACE, exit.wait_for(Option::is_some)).await {
            Ok(Ok(reason)) => reason.clone().unwrap_or(fallback),
            Ok(Err(_)) | Err(_) => fallback,
        }
    }
}

#[async_trait]
impl Transport for PipeTransport {
    async fn send(&mut self, message: String) -> Result<(), TransportError> {
        let mut bytes = message.into_bytes();
        bytes.push(0);
        match self.writer.write_all(&bytes).await {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {
                Err(TransportError::Closed { reason: self.closed_reason().await })
            }
            Err(err) => Err(TransportError::Io { action: "writing to the DevTools pipe", message: err.to_string() }),
        }
    }

    async fn recv(&mut self) -> Result<String, TransportError> {
        loop {
            if let Some(pos) = self.buf[self.scanned..].iter().position(|&b| b == 0) {
                let end = self.scanned + pos;
                let rest = self.buf.split_off(end + 1);
                let mut message = std::mem::replace(&mut self.buf, rest);
                message.truncate(end);
                self.scanned = 0;
                return String::from_utf8(message)
                    .map_err(|err| TransportError::Malformed { detail: format!("message is not UTF-8: {err}") });
            }
            self.scanned = self.buf.len();
            if self.buf.len() > MAX_PIPE_MESSAGE {
                return Err(TransportError::TooLarge { size: self.buf.len(), limit: MAX_PIPE_MESSAGE });
            }
            self.buf.reserve(64 * 1024);
            // `read_buf` reads at most once, so dropping this future never loses bytes.
            match self.reader.read_buf(&mut self.buf).await {
                Ok(0) => return Err(TransportError::Closed { reason: self.closed_reason().await }),
                Ok(_) => {}
                Err(err) => {
                    return Err(TransportError::Io { action: "reading the DevTools pipe", message: err.to_string() });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
