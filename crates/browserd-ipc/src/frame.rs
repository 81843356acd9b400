//! Newline-delimited JSON framing: one JSON value (one JSON-RPC message) per line, with a maximum frame size that is
//! enforced while reading, so a peer can never make the reader buffer more than the limit.
//!
//! Compact JSON never contains a raw newline (string newlines are escaped as `\n`), so a line is exactly one message.
//! Blank lines and a trailing `\r` are tolerated on input, which makes `socat`-style manual sessions work.

use std::io;

use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use crate::oversize::IdScanner;
use crate::peer::PeerCred;

/// Default largest frame (bytes, newline excluded) in either direction: 16 MiB.
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;

/// Buffers that grew past this are released after the frame, so an idle connection stays small.
const KEEP_BUFFER: usize = 64 * 1024;

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The peer sent a line longer than the limit. The line was read to its end without being kept (its top-level
    /// `id`, when it had one, is in `id`), so the framing is intact: answer it and go on.
    #[error(
        "a message of {size} bytes is over the frame limit of {limit} bytes (16 MiB by default); it was not read \
         (send large data as a file path or in parts)"
    )]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
        /// The line's length (newline excluded).
        size: usize,
        /// The line's top-level JSON-RPC `id` (a number or a string), if it had one.
        id: Option<Value>,
    },
    /// We were asked to send a message larger than the limit; nothing was sent and the connection is still usable.
    #[error("refusing to send a {size}-byte frame: the limit is {limit} bytes; send large data as a file path instead")]
    OutgoingTooLarge {
        /// The serialized size.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The connection ended in the middle of a frame.
    #[error(
        "the connection closed in the middle of a frame ({bytes} bytes without a newline); the peer likely crashed"
    )]
    Truncated {
        /// Bytes of the unfinished frame.
        bytes: usize,
    },
    /// A complete line was not valid JSON. The framing is intact, so the connection can go on (answer with a
    /// JSON-RPC parse error).
    #[error("a frame is not valid JSON: {source}")]
    InvalidJson {
        /// The parser's error.
        source: serde_json::Error,
    },
    /// The message could not be serialized to JSON; nothing was sent.
    #[error("cannot serialize a message to JSON: {source}")]
    Serialize {
        /// The serializer's error.
        source: serde_json::Error,
    },
    /// Reading or writing the socket failed.
    #[error("the connection failed: {source}")]
    Io {
        /// The I/O error.
        source: io::Error,
    },
    /// An earlier fatal error already ended this reader.
    #[error("this connection's reader already failed; close the connection")]
    ReaderFailed,
}

impl FrameError {
    /// Whether the connection must be closed after this error (`InvalidJson`, `TooLarge`, `OutgoingTooLarge` and
    /// `Serialize` leave it usable).
    pub fn is_fatal(&self) -> bool {
        !matches!(
            self,
            FrameError::InvalidJson { .. }
                | FrameError::TooLarge { .. }
                | FrameError::OutgoingTooLarge { .. }
                | FrameError::Serialize { .. }
        )
    }
}

/// The reading half: yields one JSON value per line.
#[derive(Debug)]
pub struct FramedReader<R> {
    /// The byte source, buffered so that lines are found without a syscall per byte.
    inner: BufReader<R>,
    /// The current frame's bytes so far; never longer than `max_frame`.
    line: Vec<u8>,
    /// Largest accepted frame, newline excluded.
    max_frame: usize,
    /// Set after a fatal error: the stream position is no longer at a frame boundary.
    failed: bool,
    /// While an over-long line is read to its end without being kept: its length so far and the scan for its id.
    over: Option<(usize, IdScanner)>,
}

impl<R: AsyncRead + Unpin> FramedReader<R> {
    /// Wraps a byte stream with a frame limit.
    pub fn new(inner: R, max_frame: usize) -> Self {
        FramedReader { inner: BufReader::new(inner), line: Vec::new(), max_frame, failed: false, over: None }
    }

    /// The next message, or `Ok(None)` on a clean end of stream at a frame boundary.
    ///
    /// Cancel-safe: if the future is dropped (e.g. in `select!`), the bytes read so far stay buffered and the next
    /// call continues the same frame.
    pub async fn recv(&mut self) -> Result<Option<Value>, FrameError> {
        loop {
            if !self.next_line().await? {
                return Ok(None);
            }
            let mut line = self.line.as_slice();
            if let [rest @ .., b'\r'] = line {
                line = rest;
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                self.line.clear();
                continue;
            }
            let parsed = serde_json::from_slice(line);
            self.line.clear();
            if self.line.capacity() > KEEP_BUFFER {
                self.line = Vec::new();
            }
            return parsed.map(Some).map_err(|source| FrameError::InvalidJson { source });
        }
    }

    /// Fills `self.line` with the next line (newline removed). `false` means a clean end of stream.
    async fn next_line(&mut self) -> Result<bool, FrameError> {
        if self.failed {
            return Err(FrameError::ReaderFailed);
        }
        loop {
            let available = match self.inner.fill_buf().await {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    self.failed = true;
                    return Err(FrameError::Io { source });
                }
            };
            if available.is_empty() {
                if let Some((size, _)) = self.over.take() {
                    self.failed = true;
                    return Err(FrameError::Truncated { bytes: size });
                }
                if self.line.is_empty() {
                    return Ok(false);
                }
                self.failed = true;
                return Err(FrameError::Truncated { bytes: self.line.len() });
            }
            let (take, consumed, done) = match available.iter().position(|&b| b == b'\n') {
                Some(pos) => (pos, pos + 1, true),
                None => (available.len(), available.len(), false),
            };
            if self.over.is_none() && self.line.len() + take > self.max_frame {
                // Too long to keep: from here on the line is only counted and scanned for its id, never buffered.
                let mut scan = IdScanner::new();
                scan.feed(&self.line);
                self.over = Some((self.line.len(), scan));
                self.line = Vec::new();
            }
            if let Some((size, scan)) = self.over.as_mut() {
                scan.feed(&available[..take]);
                *size += take;
                self.inner.consume(consumed);
                if done {
                    let (size, scan) = self.over.take().unwrap_or_default();
                    return Err(FrameError::TooLarge { limit: self.max_frame, size, id: scan.id() });
                }
                continue;
            }
            self.line.extend_from_slice(&available[..take]);
            self.inner.consume(consumed);
            if done {
                return Ok(true);
            }
        }
    }
}

/// The writing half: one message per line.
#[derive(Debug)]
pub struct FramedWriter<W> {
    /// The byte sink.
    inner: W,
    /// Reused serialization buffer (released when it grew large).
    buf: Vec<u8>,
    /// Largest frame we agree to send, newline excluded.
    max_frame: usize,
}

impl<W: AsyncWrite + Unpin> FramedWriter<W> {
    /// Wraps a byte sink with a frame limit.
    pub fn new(inner: W, max_frame: usize) -> Self {
        FramedWriter { inner, buf: Vec::new(), max_frame }
    }

    /// Serializes `message` as compact JSON and writes it followed by a newline.
    ///
    /// Not cancel-safe: dropping the future mid-write can leave half a frame on the wire; close the connection then.
    pub async fn send<T: Serialize + ?Sized>(&mut self, message: &T) -> Result<(), FrameError> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, message).map_err(|source| FrameError::Serialize { source })?;
        if self.buf.len() > self.max_frame {
            let size = self.buf.len();
            self.buf = Vec::new();
            return Err(FrameError::OutgoingTooLarge { size, limit: self.max_frame });
        }
        self.buf.push(b'\n');
        let result = async {
            self.inner.write_all(&self.buf).await?;
            self.inner.flush().await
        }
        .await;
        if self.buf.capacity() > KEEP_BUFFER {
            self.buf = Vec::new();
        }
        result.map_err(|source| FrameError::Io { source })
    }

    /// Closes the write direction (the peer's reader then sees end of stream).
    pub async fn shutdown(&mut self) -> Result<(), FrameError> {
        self.inner.shutdown().await.map_err(|source| FrameError::Io { source })
    }
}

/// A connected, peer-checked Unix socket speaking newline-delimited JSON.
#[derive(Debug)]
pub struct FramedConnection {
    /// Incoming frames.
    reader: FramedReader<OwnedReadHalf>,
    /// Outgoing frames.
    writer: FramedWriter<OwnedWriteHalf>,
    /// Who is on the other end (already checked to be our uid).
    peer: PeerCred,
}

impl FramedConnection {
    /// Wraps a stream whose peer was already checked.
    pub fn new(stream: UnixStream, peer: PeerCred, max_frame: usize) -> Self {
        let (read, write) = stream.into_split();
        FramedConnection {
            reader: FramedReader::new(read, max_frame),
            writer: FramedWriter::new(write, max_frame),
            peer,
        }
    }

    /// The peer's credentials.
    pub fn peer(&self) -> PeerCred {
        self.peer
    }

    /// See [`FramedReader::recv`].
    pub async fn recv(&mut self) -> Result<Option<Value>, FrameError> {
        self.reader.recv().await
    }

    /// See [`FramedWriter::send`].
    pub async fn send<T: Serialize + ?Sized>(&mut self, message: &T) -> Result<(), FrameError> {
        self.writer.send(message).await
    }

    /// Sends one message and waits for the next incoming one (for strictly request/response clients; a client that
    /// may receive notifications should split the connection and match replies by id).
    pub async fn call<T: Serialize + ?Sized>(&mut self, message: &T) -> Result<Option<Value>, FrameError> {
        self.send(message).await?;
        self.recv().await
    }

    /// Splits into halves that can live in different tasks (e.g. a reader loop and a writer task fed by a channel).
    pub fn into_split(self) -> (FramedReader<OwnedReadHalf>, FramedWriter<OwnedWriteHalf>) {
        (self.reader, self.writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::{AsyncWriteExt, duplex};

    #[tokio::test]
    async fn reads_lines_skipping_blank_ones_and_crlf() {
        let (mut tx, rx) = duplex(1024);
        let mut reader = FramedReader::new(rx, 1024);
        tx.write_all(b"{\"a\":1}\n\n  \r\n{\"b\":\"x\\ny\"}\r\n").await.unwrap();
        drop(tx);
        assert_eq!(reader.recv().await.unwrap(), Some(json!({"a": 1})));
        assert_eq!(reader.recv().await.unwrap(), Some(json!({"b": "x\ny"})));
        assert_eq!(reader.recv().await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_frame_over_the_limit_is_read_to_its_end_unkept_and_reported_with_its_id() {
        let (mut tx, rx) = duplex(64);
        let mut reader = FramedReader::new(rx, 100);
        let writer = tokio::spawn(async move {
            // 10 000 bytes with the id after them: the reader keeps none of it, yet finds the id.
            let big = "x".repeat(10_000);
            tx.write_all(format!("{{\"params\":\"{big}\",\"id\":42}}\n[1]\n").as_bytes()).await.unwrap();
            tx
        });
        let err = reader.recv().await.unwrap_err();
        assert!(
            matches!(&err, FrameError::TooLarge { limit: 100, size: 10_021, id: Some(id) } if *id == json!(42)),
            "{err:?}"
        );
        assert!(!err.is_fatal() && err.to_string().contains("frame limit of 100 bytes"), "{err}");
        assert!(reader.line.capacity() <= 100, "the over-long line was buffered");
        assert_eq!(reader.recv().await.unwrap(), Some(json!([1])), "the next frame reads");
        drop(writer.await.unwrap());
        assert_eq!(reader.recv().await.unwrap(), None);
    }

    #[tokio::test]
    async fn end_of_stream_inside_an_over_long_frame_is_truncated() {
        let (mut tx, rx) = duplex(1024);
        let mut reader = FramedReader::new(rx, 10);
        tx.write_all(&[b'x'; 30]).await.unwrap();
        drop(tx);
        assert!(matches!(reader.recv().await, Err(FrameError::Truncated { bytes: 30 })));
        assert!(matches!(reader.recv().await, Err(FrameError::ReaderFailed)));
    }

    #[tokio::test]
    async fn a_frame_exactly_at_the_limit_is_accepted() {
        let (mut tx, rx) = duplex(1024);
        let mut reader = FramedReader::new(rx, 10);
        tx.write_all(b"\"12345678\"\n\"123456789\"\n").await.unwrap();
        assert_eq!(reader.recv().await.unwrap(), Some(json!("12345678")));
        assert!(matches!(reader.recv().await, Err(FrameError::TooLarge { limit: 10, size: 11, id: None })));
    }

    #[tokio::test]
    async fn invalid_json_is_not_fatal() {
        let (mut tx, rx) = duplex(1024);
        let mut reader = FramedReader::new(rx, 1024);
        tx.write_all(b"{nope\n[1]\n").await.unwrap();
        let err = reader.recv().await.unwrap_err();
        assert!(matches!(err, FrameError::InvalidJson { .. }) && !err.is_fatal(), "{err}");
        assert_eq!(reader.recv().await.unwrap(), Some(json!([1])));
    }

    #[tokio::test]
    async fn end_of_stream_mid_frame_is_truncated() {
        let (mut tx, rx) = duplex(1024);
        let mut reader = FramedReader::new(rx, 1024);
        tx.write_all(b"{\"a\":").await.unwrap();
        drop(tx);
        assert!(matches!(reader.recv().await, Err(FrameError::Truncated { bytes: 5 })));
    }

    #[tokio::test]
    async fn writer_refuses_oversize_messages_and_stays_usable() {
        let (tx, rx) = duplex(1024);
        let mut writer = FramedWriter::new(tx, 16);
        let mut reader = FramedReader::new(rx, 1024);
        let err = writer.send(&json!({"big": "0123456789abcdef"})).await.unwrap_err();
        assert!(matches!(err, FrameError::OutgoingTooLarge { limit: 16, .. }) && !err.is_fatal(), "{err}");
        writer.send(&json!({"ok": true})).await.unwrap();
        assert_eq!(reader.recv().await.unwrap(), Some(json!({"ok": true})));
    }

    #[tokio::test]
    async fn recv_is_cancel_safe() {
        let (mut tx, rx) = duplex(1024);
        let mut reader = FramedReader::new(rx, 1024);
        tx.write_all(b"{\"split\":").await.unwrap();
        // The first half is consumed, then the read is cancelled while waiting for the rest.
        tokio::select! {
            biased;
            r = reader.recv() => panic!("no complete frame yet, got {r:?}"),
            () = tokio::task::yield_now() => {}
        }
        tx.write_all(b"true}\n").await.unwrap();
        assert_eq!(reader.recv().await.unwrap(), Some(json!({"split": true})));
    }
}
