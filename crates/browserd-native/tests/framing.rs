//! Native Messaging framing: frames, chunking below Chromium's 1 MiB limit, the total cap, the priority lane, and the
//! host's behaviour on stdin EOF and on a bad origin (run as the real binary).

use std::process::Stdio;
use std::time::Duration;

use browserd_native::framing::{
    CHUNK_RAW, Lane, MAX_CHUNKED_TOTAL, MAX_TO_EXTENSION, Reassembler, encode_frame, lane_of, plan_frames, read_frame,
    spawn_writer,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn frames_of(mut bytes: &[u8]) -> Vec<Value> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let len = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
        out.push(serde_json::from_slice(&bytes[4..4 + len]).unwrap());
        bytes = &bytes[4 + len..];
    }
    out
}

#[test]
fn frame_is_little_endian_length_then_json() {
    let f = encode_frame(br#"{"a":1}"#);
    assert_eq!(&f[..4], &[7, 0, 0, 0]);
    assert_eq!(&f[4..], br#"{"a":1}"#);
}

#[tokio::test]
async fn read_frame_reads_whole_frames_and_reports_clean_eof() {
    let mut input = Vec::new();
    input.extend(encode_frame(b"{\"x\":1}"));
    input.extend(encode_frame(b"[]"));
    let mut r = &input[..];
    assert_eq!(read_frame(&mut r, 1024).await.unwrap().unwrap(), b"{\"x\":1}");
    assert_eq!(read_frame(&mut r, 1024).await.unwrap().unwrap(), b"[]");
    assert!(read_frame(&mut r, 1024).await.unwrap().is_none(), "EOF between frames is a clean end");
    let cut = &encode_frame(b"{\"x\":1}")[..6];
    let mut r = cut;
    assert!(read_frame(&mut r, 1024).await.is_err(), "EOF inside a frame is an error");
    let big = encode_frame(&vec![b' '; 2048]);
    let mut r = &big[..];
    assert!(read_frame(&mut r, 1024).await.is_err(), "a frame over the limit is refused");
}

#[test]
fn large_messages_are_chunked_below_the_limit_and_reassemble() {
    let payload = json!({"type": "call", "id": 7, "cmd": "cdp.send", "args": {"blob": "é".repeat(700_000)}});
    let bytes = payload.to_string().into_bytes();
    assert!(bytes.len() > 1024 * 1024, "the test message is over 1 MiB");
    let frames = plan_frames(&bytes, 3).unwrap();
    assert_eq!(frames.len(), bytes.len().div_ceil(CHUNK_RAW));
    let mut re = Reassembler::default();
    let mut whole = None;
    for f in &frames {
        assert!(f.len() - 4 < MAX_TO_EXTENSION, "frame of {} bytes", f.len());
        let v: Value = serde_json::from_slice(&f[4..]).unwrap();
        assert_eq!(v["type"], "chunk");
        assert_eq!(v["id"], 3);
        whole = re.push(v).or(whole);
    }
    assert_eq!(whole.unwrap(), payload);
    // Small messages go as one plain frame.
    let small = plan_frames(br#"{"type":"call"}"#, 4).unwrap();
    assert_eq!(small.len(), 1);
    assert_eq!(frames_of(&small[0]), vec![json!({"type": "call"})]);
}

#[test]
fn messages_over_the_total_cap_are_refused() {
    let too_big = vec![b'x'; MAX_CHUNKED_TOTAL + 1];
    let err = plan_frames(&too_big, 1).unwrap_err();
    assert!(err.to_string().contains("request less data"), "{err}");
}

#[test]
fn stop_and_cancel_take_the_priority_lane() {
    assert_eq!(lane_of(&json!({"type": "call", "cmd": "stop"})), Lane::Priority);
    assert_eq!(lane_of(&json!({"type": "call", "cmd": "cancel"})), Lane::Priority);
    assert_eq!(lane_of(&json!({"type": "call", "cmd": "x", "lane": "priority"})), Lane::Priority);
    assert_eq!(lane_of(&json!({"type": "call", "cmd": "cdp.send"})), Lane::Bulk);
}

#[tokio::test]
async fn stop_is_never_queued_behind_a_blob() {
    // A small pipe: the writer blocks on the first chunk of the blob until the reader drains it.
    let (w, mut r) = tokio::io::duplex(64 * 1024);
    let (out, task) = spawn_writer(w, 8);
    let blob = json!({"type": "call", "id": 1, "cmd": "cdp.send", "args": {"data": "b".repeat(1_500_000)}});
    out.send(Lane::Bulk, blob.to_string().into_bytes()).await.unwrap();
    out.send(Lane::Bulk, json!({"type": "call", "id": 2, "cmd": "ping"}).to_string().into_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await; // the writer is now stuck inside chunk 0
    let stop = json!({"type": "call", "id": 3, "cmd": "stop", "lane": "priority"});
    out.send(Lane::Priority, stop.to_string().into_bytes()).await.unwrap();
    drop(out);
    let mut all = Vec::new();
    r.read_to_end(&mut all).await.unwrap();
    task.await.unwrap().unwrap();
    let frames = frames_of(&all);
    let order: Vec<String> =
        frames
            .iter()
            .map(|f| {
                if f["type"] == "chunk" {
                    format!("chunk{}", f["index"])
                } else {
                    f["cmd"].as_str().unwrap().to_owned()
                }
            })
            .collect();
    let chunks = order.iter().filter(|o| o.starts_with("chunk")).count();
    assert!(chunks >= 5, "{order:?}");
    let stop_at = order.iter().position(|o| o == "stop").unwrap();
    assert!(stop_at <= 1, "stop went out right after the chunk in progress: {order:?}");
    assert_eq!(order.last().map(String::as_str), Some("ping"), "bulk order is kept: {order:?}");
    let mut re = Reassembler::default();
    let whole = frames.into_iter().filter(|f| f["type"] == "chunk").find_map(|f| re.push(f)).unwrap();
    assert_eq!(whole, blob);
}

fn host_command(socket: &std::path::Path) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_browserd-native"));
    c.env("BROWSERD_EXTENSION_SOCKET", socket)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    c
}

#[tokio::test]
async fn host_relays_both_ways_and_exits_on_stdin_eof() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("ext.sock");
    let listener = tokio::net::UnixListener::bind(&sock).unwrap();
    let mut child = host_command(&sock)
        .args(["native-host", "chrome-extension://menplffdljednpgdojaklnbhimafddmj/"])
        .spawn()
        .unwrap();
    let (stream, _) = listener.accept().await.unwrap();
    let (rd, mut wr) = stream.into_split();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(rd));
    let intro: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(intro["type"], "host");
    assert_eq!(intro["extensionId"], "menplffdljednpgdojaklnbhimafddmj");
    // extension → endpoint
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&encode_frame(br#"{"type":"hello","seq":0}"#)).await.unwrap();
    let hello: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(hello, json!({"type": "hello", "seq": 0}));
    // endpoint → extension
    wr.write_all(b"{\"type\":\"welcome\"}\n").await.unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let frame = read_frame(&mut stdout, 1 << 20).await.unwrap().unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&frame).unwrap(), json!({"type": "welcome"}));
    // stdin EOF: the host exits cleanly (well inside Chromium's 2 s kill window) and writes nothing else to stdout.
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await.expect("the host exits").unwrap();
    assert_eq!(status.code(), Some(0));
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty(), "stdout carries only frames: {rest:?}");
}

#[tokio::test]
async fn host_refuses_a_bad_origin_without_touching_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let out = host_command(&dir.path().join("none.sock"))
        .args(["native-host", "https://example.com/"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an extension origin"));
}

#[tokio::test]
async fn host_without_an_endpoint_tells_the_extension_why_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = host_command(&dir.path().join("missing.sock"))
        .args(["native-host", "chrome-extension://menplffdljednpgdojaklnbhimafddmj/"])
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let frame = read_frame(&mut stdout, 1 << 20).await.unwrap().expect("one frame");
    let v: Value = serde_json::from_slice(&frame).unwrap();
    assert_eq!(v["type"], "hostError");
    assert!(v["message"].as_str().unwrap().contains("start browserd"), "{v}");
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(1));
}
