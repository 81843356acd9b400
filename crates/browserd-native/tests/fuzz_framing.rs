//! Fuzz target (bounded, in the default run): Native Messaging framing and chunk reassembly. Arbitrary bytes delivered
//! in arbitrary pieces read as whole frames within the limit, a clean end or a typed error — never a panic, never a
//! read past the end; any message the host may send comes back whole through `plan_frames` and the `Reassembler`, in
//! any chunk order; arbitrary chunk frames (counts up to `u64::MAX`, repeats, mismatched counts) never panic and never
//! yield a message that was not sent. Found cases are kept in `tests/fuzz_framing.proptest-regressions`.

use std::pin::Pin;
use std::task::{Context, Poll};

use browserd_native::framing::{
    CHUNK_RAW, FramingError, MAX_CHUNKS, Reassembler, encode_frame, plan_frames, read_frame,
};
use browserd_test_support::fuzz::{json_value, pieces, split_points};
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, ReadBuf};

/// Hands out `pieces` one read at a time (a pipe that delivers at arbitrary boundaries), then EOF.
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

fn config() -> ProptestConfig {
    ProptestConfig { cases: 256, max_shrink_iters: 2048, ..ProptestConfig::default() }
}

fn chunk_keys() -> Vec<String> {
    ["type", "id", "index", "count", "data", "chunk"].map(str::to_owned).to_vec()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_read_as_frames_a_clean_end_or_a_typed_error(
        bytes in prop::collection::vec(any::<u8>(), 0..256),
        cuts in split_points(256),
        limit in prop_oneof![Just(0usize), 1usize..64, Just(1 << 20)],
    ) {
        let total = bytes.len();
        let mut r = Pieces(pieces(&bytes, &cuts).into());
        let mut read = 0;
        rt().block_on(async {
            // Each round consumes at least one byte or ends, so this terminates.
            for _ in 0..=total {
                match read_frame(&mut r, limit).await {
                    Ok(Some(f)) => {
                        assert!(f.len() <= limit, "a frame above the limit");
                        read += 4 + f.len();
                        assert!(read <= total, "read past the end");
                    }
                    Ok(None) => {
                        assert_eq!(read, total, "a clean end only between frames");
                        return;
                    }
                    Err(FramingError::TooLarge { size, limit: l }) => {
                        assert!(size > l);
                        return;
                    }
                    Err(FramingError::Truncated) => return,
                    Err(e) => panic!("unexpected {e}"),
                }
            }
            panic!("read_frame did not finish {total} bytes");
        });
    }

    #[test]
    fn encoded_frames_read_back_whole_across_any_split(
        bodies in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..6),
        cuts in split_points(400),
    ) {
        let mut wire = Vec::new();
        for b in &bodies {
            wire.extend(encode_frame(b));
        }
        let mut r = Pieces(pieces(&wire, &cuts).into());
        let back = rt().block_on(async {
            let mut out = Vec::new();
            while let Some(f) = read_frame(&mut r, 1024).await.unwrap() {
                out.push(f);
            }
            out
        });
        prop_assert_eq!(back, bodies);
    }

    #[test]
    fn arbitrary_chunk_frames_never_panic_or_invent_a_message(
        frames in prop::collection::vec(
            prop_oneof![
                // Near-valid chunks: small ids, counts and indexes, real base64 of a JSON fragment.
                (0u64..3, 0u64..4, prop_oneof![4 => 0u64..4, 1 => Just(u64::MAX), 1 => any::<u64>()], prop_oneof![Just("{\"a\":".to_owned()), Just("1}".to_owned()), ".{0,8}"])
                    .prop_map(|(id, index, count, text)| {
                        use base64::Engine as _;
                        json!({"type": "chunk", "id": id, "index": index, "count": count,
                               "data": base64::engine::general_purpose::STANDARD.encode(text)})
                    }),
                json_value(chunk_keys()).prop_map(|mut v| {
                    if let Some(o) = v.as_object_mut() {
                        o.insert("type".into(), json!("chunk"));
                    }
                    v
                }),
            ],
            0..24,
        ),
    ) {
        let mut r = Reassembler::default();
        for f in frames {
            if let Some(whole) = r.push(f) {
                // Whatever comes out was the JSON of pieces actually sent; it is never a chunk frame itself.
                prop_assert!(whole.get("type") != Some(&json!("chunk")) || whole.get("data").is_none(), "{whole}");
            }
        }
    }

    #[test]
    fn any_message_the_host_sends_comes_back_whole_in_any_chunk_order(
        len in prop_oneof![0usize..64, (CHUNK_RAW - 8)..(CHUNK_RAW + 8), (3 * CHUNK_RAW)..(3 * CHUNK_RAW + 64)],
        seed in any::<u64>(),
    ) {
        let message = json!({"type": "call", "id": seed, "blob": "x".repeat(len)});
        let bytes = serde_json::to_vec(&message).unwrap();
        let mut frames: Vec<Value> =
            plan_frames(&bytes, seed).unwrap().iter().map(|f| serde_json::from_slice(&f[4..]).unwrap()).collect();
        // A deterministic shuffle from the seed.
        let n = frames.len();
        for i in (1..n).rev() {
            frames.swap(i, (seed.rotate_left(i as u32) % (i as u64 + 1)) as usize);
        }
        let mut r = Reassembler::default();
        let mut whole = None;
        for f in frames {
            if let Some(w) = r.push(f) {
                prop_assert!(whole.is_none(), "one message, once");
                whole = Some(w);
            }
        }
        prop_assert_eq!(whole, Some(message));
    }
}

/// Found by the target above: a chunk announcing `count: u64::MAX` made the reassembler allocate for every index (a
/// capacity-overflow panic), and a later chunk with a smaller count completed a message with pieces missing.
#[test]
fn a_huge_or_changing_chunk_count_is_dropped() {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let mut r = Reassembler::default();
    assert_eq!(r.push(json!({"type": "chunk", "id": 1, "index": 0, "count": u64::MAX, "data": ""})), None);
    assert_eq!(r.push(json!({"type": "chunk", "id": 1, "index": 0, "count": MAX_CHUNKS + 1, "data": ""})), None);
    assert_eq!(r.push(json!({"type": "chunk", "id": 2, "index": 1, "count": 3, "data": b64("\"b\"")})), None);
    assert_eq!(r.push(json!({"type": "chunk", "id": 2, "index": 0, "count": 2, "data": b64("\"a")})), None);
    assert_eq!(r.push(json!({"type": "chunk", "id": 2, "index": 0, "count": 3, "data": b64("[\"a\",")})), None);
    assert_eq!(
        r.push(json!({"type": "chunk", "id": 2, "index": 2, "count": 3, "data": b64("]")})),
        Some(json!(["a", "b"]))
    );
}
