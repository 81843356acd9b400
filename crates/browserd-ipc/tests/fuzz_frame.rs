//! Fuzz target (bounded, in the default run): the NDJSON frame reader. Arbitrary bytes in arbitrary pieces give
//! messages, a clean end or a typed error — never a panic, never a frame above the limit, never more rounds than bytes,
//! an over-long line reported and read past, and after a fatal error only `ReaderFailed`; any JSON the writer sends reads back equal across any split. Found
//! cases are kept in `tests/fuzz_frame.proptest-regressions`.

use std::pin::Pin;
use std::task::{Context, Poll};

use browserd_ipc::{FrameError, FramedReader, FramedWriter};
use browserd_test_support::fuzz::{json_eq, json_value, pieces, split_points};
use proptest::prelude::*;
use tokio::io::{AsyncRead, ReadBuf};

/// Hands out `pieces` one read at a time, then EOF.
struct Pieces(std::collections::VecDeque<Vec<u8>>);

impl AsyncRead for Pieces {
    fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        if let Some(mut p) = self.0.pop_front() {
            let n = p.len().min(buf.remaining());
            buf.put_slice(&p[..n]);
            if n < p.len() {
                p.drain(..n);
                self.0.push_front(p);
            }
        }
        Poll::Ready(Ok(()))
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().build().unwrap()
}

/// Bytes that look like NDJSON: fragments of JSON, newlines, `\r`, blanks and noise.
fn ndjson_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"  ".to_vec()),
        Just(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\"}".to_vec()),
        Just(b"{\"a\":".to_vec()),
        Just(b"\"\\u00".to_vec()),
        Just(b"[1,2".to_vec()),
        prop::collection::vec(any::<u8>(), 0..24),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, max_shrink_iters: 2048, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_give_messages_a_clean_end_or_typed_errors(
        bytes in ndjson_bytes(),
        cuts in split_points(300),
        max in prop_oneof![Just(0usize), 1usize..48, Just(1 << 16)],
    ) {
        let total = bytes.len();
        let mut reader = FramedReader::new(Pieces(pieces(&bytes, &cuts).into()), max);
        rt().block_on(async {
            for _ in 0..=total + 1 {
                match reader.recv().await {
                    Ok(Some(v)) => assert!(max > 0, "a frame above a zero limit: {v}"),
                    Ok(None) => return,
                    Err(FrameError::InvalidJson { .. }) => {}
                    Err(FrameError::TooLarge { limit, size, .. }) => assert!(size > limit && limit == max),
                    Err(e) => {
                        assert!(e.is_fatal(), "{e}");
                        assert!(matches!(e, FrameError::Truncated { .. }), "{e}");
                        assert!(matches!(reader.recv().await, Err(FrameError::ReaderFailed)));
                        return;
                    }
                }
            }
            panic!("the reader did not finish {total} bytes");
        });
    }

    #[test]
    fn what_the_writer_sends_reads_back_equal_across_any_split(
        messages in prop::collection::vec(json_value(vec!["jsonrpc".into(), "id".into(), "params".into()]), 0..6),
        cuts in split_points(2000),
    ) {
        let wire = rt().block_on(async {
            let mut out = Vec::new();
            let mut w = FramedWriter::new(&mut out, 1 << 20);
            for m in &messages {
                w.send(m).await.unwrap();
            }
            out
        });
        let mut reader = FramedReader::new(Pieces(pieces(&wire, &cuts).into()), 1 << 20);
        let back = rt().block_on(async {
            let mut out = Vec::new();
            while let Some(v) = reader.recv().await.unwrap() {
                out.push(v);
            }
            out
        });
        prop_assert_eq!(back.len(), messages.len());
        prop_assert!(back.iter().zip(&messages).all(|(a, b)| json_eq(a, b)), "{back:?} != {messages:?}");
    }
}
