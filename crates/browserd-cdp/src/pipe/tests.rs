//! Unit tests of the pipe transport's NUL framing and close reporting.

use std::io::Write;
use std::os::fd::OwnedFd;

use tokio::sync::watch;

use super::PipeTransport;
use crate::error::TransportError;
use crate::transport::Transport;

/// A transport plus the far ends of its pipes: `browser_in` receives what the transport sends, `browser_out` feeds it.
fn transport(
    exit_reason: Option<watch::Receiver<Option<String>>>,
) -> (PipeTransport, std::io::PipeReader, std::io::PipeWriter) {
    let (browser_in, to_browser) = std::io::pipe().unwrap();
    let (from_browser, browser_out) = std::io::pipe().unwrap();
    let writer = tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(to_browser)).unwrap();
    let reader = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(from_browser)).unwrap();
    (PipeTransport::new(writer, reader, exit_reason), browser_in, browser_out)
}

#[tokio::test]
async fn messages_split_and_joined_across_reads_are_framed_by_nul() {
    let (mut transport, _browser_in, mut browser_out) = transport(None);
    browser_out.write_all(b"{\"a\":1}\0").unwrap();
    assert_eq!(transport.recv().await.unwrap(), "{\"a\":1}");
    browser_out.write_all(b"{\"b\"").unwrap();
    // The second message is incomplete: a recv dropped while waiting must not lose the bytes read so far.
    tokio::select! {
        biased;
        _ = transport.recv() => panic!("the second message is not complete yet"),
        () = std::future::ready(()) => {}
    }
    browser_out.write_all(b":2}\0\0{\"c\":\"\xe4\xb8\xad\"}\0").unwrap();
    assert_eq!(transport.recv().await.unwrap(), "{\"b\":2}");
    assert_eq!(transport.recv().await.unwrap(), "");
    assert_eq!(transport.recv().await.unwrap(), "{\"c\":\"中\"}");
}

#[tokio::test]
async fn sent_messages_are_nul_terminated() {
    let (mut transport, mut browser_in, _browser_out) = transport(None);
    transport.send("{\"id\":1}".into()).await.unwrap();
    transport.send("{\"id\":2}".into()).await.unwrap();
    let mut buf = [0u8; 18];
    std::io::Read::read_exact(&mut browser_in, &mut buf).unwrap();
    assert_eq!(&buf, b"{\"id\":1}\0{\"id\":2}\0");
}

#[tokio::test]
async fn end_of_pipe_reports_the_reason_from_the_process_watcher() {
    let (reason_tx, reason_rx) = watch::channel(None);
    let (mut transport, _browser_in, browser_out) = transport(Some(reason_rx));
    drop(browser_out);
    reason_tx.send(Some("browser process 7 exited with status 0".to_owned())).unwrap();
    let err = transport.recv().await.unwrap_err();
    assert!(matches!(&err, TransportError::Closed { reason } if reason == "browser process 7 exited with status 0"));
}

#[tokio::test]
async fn end_of_pipe_without_a_watcher_says_the_pipe_closed() {
    let (mut transport, _browser_in, browser_out) = transport(None);
    drop(browser_out);
    let err = transport.recv().await.unwrap_err();
    assert!(matches!(&err, TransportError::Closed { reason } if reason.contains("DevTools pipe")), "{err:?}");
}

#[tokio::test]
async fn invalid_utf8_is_malformed() {
    let (mut transport, _browser_in, mut browser_out) = transport(None);
    browser_out.write_all(b"\xff\xfe\0").unwrap();
    assert!(matches!(transport.recv().await, Err(TransportError::Malformed { .. })));
}
