//! Native Messaging framing (4-byte little-endian length + UTF-8 JSON), chunking of large host → extension messages,
//! and the outbound writer with a priority lane so Stop and cancel never wait behind a blob.

use std::collections::VecDeque;

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// Chromium refuses (and tears down the port on) host → browser messages of 1 MiB or more; stay below with a margin.
pub const MAX_TO_EXTENSION: usize = 1024 * 1024 - 1024;
/// Raw bytes of the original message carried per chunk (base64 makes a chunk frame about 342 KiB).
pub const CHUNK_RAW: usize = 256 * 1024;
/// The largest message the host will chunk towards the extension.
pub const MAX_CHUNKED_TOTAL: usize = 32 * 1024 * 1024;
/// Messages larger than this are chunked even though they would fit one frame, so a Stop waits at most one chunk.
pub const CHUNK_THRESHOLD: usize = CHUNK_RAW;
/// The largest extension → host message accepted (Chromium allows 64 MiB in that direction).
pub const MAX_FROM_EXTENSION: usize = 64 * 1024 * 1024;

/// A framing failure; each says what it means for the connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FramingError {
    #[error("a Native Messaging frame announced {size} bytes, above the limit of {limit}; the peer is not a browser")]
    TooLarge { size: usize, limit: usize },
    #[error(
        "a message of {size} bytes cannot go to the extension (limit {limit} bytes even when chunked); request less data"
    )]
    MessageTooLarge { size: usize, limit: usize },
    #[error("the input ended in the middle of a frame")]
    Truncated,
    #[error("Native Messaging I/O failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Reads one frame. `Ok(None)` on a clean end of input (stdin EOF between frames).
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R, limit: usize) -> Result<Option<Vec<u8>>, FramingError> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        let n = r.read(&mut len[got..]).await?;
        if n == 0 {
            return if got == 0 { Ok(None) } else { Err(FramingError::Truncated) };
        }
        got += n;
    }
    let size = u32::from_le_bytes(len) as usize;
    if size > limit {
        return Err(FramingError::TooLarge { size, limit });
    }
    let mut body = vec![0u8; size];
    r.read_exact(&mut body).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof { FramingError::Truncated } else { FramingError::Io(e) }
    })?;
    Ok(Some(body))
}

/// Encodes one frame: the 4-byte little-endian length, then the bytes.
pub fn encode_frame(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&u32::try_from(body.len()).unwrap_or(u32::MAX).to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// Turns one message for the extension into the frames that carry it: one frame when small, otherwise chunks of
/// `{"type":"chunk","id","index","count","data"}` with at most [`CHUNK_RAW`] raw bytes each (base64 in `data`).
pub fn plan_frames(message: &[u8], chunk_id: u64) -> Result<Vec<Vec<u8>>, FramingError> {
    if message.len() > MAX_CHUNKED_TOTAL {
        return Err(FramingError::MessageTooLarge { size: message.len(), limit: MAX_CHUNKED_TOTAL });
    }
    if message.len() <= CHUNK_THRESHOLD {
        return Ok(vec![encode_frame(message)]);
    }
    let count = message.len().div_ceil(CHUNK_RAW);
    let b64 = base64::engine::general_purpose::STANDARD;
    let frames = message
        .chunks(CHUNK_RAW)
        .enumerate()
        .map(|(index, raw)| {
            let chunk =
                json!({"type": "chunk", "id": chunk_id, "index": index, "count": count, "data": b64.encode(raw)});
            encode_frame(chunk.to_string().as_bytes())
        })
        .collect::<Vec<_>>();
    debug_assert!(frames.iter().all(|f| f.len() - 4 < MAX_TO_EXTENSION));
    Ok(frames)
}

/// Chunks received so far for one message: how many, and each by index.
type Partial = (usize, Vec<Option<Vec<u8>>>);

/// The most chunks one message can have: [`MAX_CHUNKED_TOTAL`] in pieces of [`CHUNK_RAW`].
pub const MAX_CHUNKS: usize = MAX_CHUNKED_TOTAL.div_ceil(CHUNK_RAW);
/// The most messages reassembled at once; a chunk of one more drops the oldest partial message.
pub const MAX_PARTIAL_MESSAGES: usize = 4;

/// Reassembles chunk frames (the extension does this in JS; this twin is for tests and tools). What it holds is bounded:
/// at most [`MAX_PARTIAL_MESSAGES`] partial messages of at most [`MAX_CHUNKS`] chunks of at most [`CHUNK_RAW`] bytes.
#[derive(Debug, Default)]
pub struct Reassembler {
    parts: std::collections::BTreeMap<u64, Partial>,
}

impl Reassembler {
    /// Feeds one parsed frame; returns the whole message once its last chunk arrived, or the frame itself if it is not
    /// a chunk. A chunk that does not fit its message (a count out of range or unlike the first chunk's, an index out
    /// of range or repeated, an oversized or undecodable piece) is dropped.
    pub fn push(&mut self, frame: Value) -> Option<Value> {
        if frame["type"] != "chunk" {
            return Some(frame);
        }
        let id = frame["id"].as_u64()?;
        let count = usize::try_from(frame["count"].as_u64()?).ok().filter(|c| (1..=MAX_CHUNKS).contains(c))?;
        let index = usize::try_from(frame["index"].as_u64()?).ok().filter(|i| *i < count)?;
        let raw = base64::engine::general_purpose::STANDARD.decode(frame["data"].as_str()?).ok()?;
        if raw.len() > CHUNK_RAW {
            return None;
        }
        if !self.parts.contains_key(&id) && self.parts.len() >= MAX_PARTIAL_MESSAGES {
            self.parts.pop_first();
        }
        let entry = self.parts.entry(id).or_insert_with(|| (0, vec![None; count]));
        if entry.1.len() != count || entry.1[index].is_some() {
            return None;
        }
        entry.1[index] = Some(raw);
        entry.0 += 1;
        if entry.0 < count {
            return None;
        }
        let (_, pieces) = self.parts.remove(&id)?;
        let bytes: Vec<u8> = pieces.into_iter().flatten().flatten().collect();
        serde_json::from_slice(&bytes).ok()
    }
}

/// Which lane a message to the extension takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// Stop and cancel: written before any further chunk of a queued blob.
    Priority,
    /// Everything else, in order.
    Bulk,
}

/// The lane a link → extension message asks for: `"lane":"priority"`, or a `stop`/`cancel` call.
pub fn lane_of(message: &Value) -> Lane {
    let cmd = message["cmd"].as_str().unwrap_or_default();
    if message["lane"] == "priority" || cmd == "stop" || cmd == "cancel" { Lane::Priority } else { Lane::Bulk }
}

/// The sending side of the outbound writer.
#[derive(Debug, Clone)]
pub struct Outbound {
    priority: mpsc::Sender<Vec<u8>>,
    bulk: mpsc::Sender<Vec<u8>>,
}

impl Outbound {
    /// Queues one serialized JSON message on `lane`. Fails once the writer has stopped.
    pub async fn send(&self, lane: Lane, message: Vec<u8>) -> Result<(), FramingError> {
        let tx = if lane == Lane::Priority { &self.priority } else { &self.bulk };
        tx.send(message).await.map_err(|_| FramingError::Io(std::io::ErrorKind::BrokenPipe.into()))
    }
}

/// Starts the writer task that owns `out` (stdout in the host). Priority messages go out before the next frame of any
/// bulk message; bulk messages keep their order. Each queue holds `capacity` messages. The task ends when both senders
/// are dropped or a write fails; its result says which.
pub fn spawn_writer<W: AsyncWrite + Unpin + Send + 'static>(
    mut out: W,
    capacity: usize,
) -> (Outbound, tokio::task::JoinHandle<Result<(), FramingError>>) {
    let (ptx, mut prx) = mpsc::channel::<Vec<u8>>(capacity.max(1));
    let (btx, mut brx) = mpsc::channel::<Vec<u8>>(capacity.max(1));
    let task = tokio::spawn(async move {
        let mut pending: VecDeque<Vec<u8>> = VecDeque::new();
        let mut next_chunk_id = 1u64;
        let mut bulk_open = true;
        let mut prio_open = true;
        loop {
            let frame = if let Ok(m) = prx.try_recv() {
                encode_frame(&m)
            } else if let Some(f) = pending.pop_front() {
                f
            } else {
                if !bulk_open && !prio_open {
                    break;
                }
                tokio::select! {
                    biased;
                    m = prx.recv(), if prio_open => match m {
                        Some(m) => encode_frame(&m),
                        None => { prio_open = false; continue; }
                    },
                    m = brx.recv(), if bulk_open => match m {
                        Some(m) => {
                            match plan_frames(&m, next_chunk_id) {
                                Ok(frames) => { next_chunk_id += 1; pending.extend(frames); }
                                Err(e) => tracing::warn!("dropping a message for the extension: {e}"),
                            }
                            continue;
                        }
                        None => { bulk_open = false; continue; }
                    },
                }
            };
            if frame.len() - 4 >= MAX_TO_EXTENSION {
                tracing::warn!("dropping a {}-byte priority message: above the Native Messaging limit", frame.len());
                continue;
            }
            out.write_all(&frame).await?;
            out.flush().await?;
        }
        Ok(())
    });
    (Outbound { priority: ptx, bulk: btx }, task)
}
