//! `/download/broken.csv`: an attachment whose connection is cut mid-body (the headers promise more bytes than are
//! sent before the body ends, so the server drops the connection), so the browser's download fails: the ground truth
//! of a failed download's receipt.

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use tokio::io::AsyncWriteExt;
use tokio_util::io::ReaderStream;

/// The bytes sent before the cut.
const SENT: &[u8] = b"id,item,amount\n1,Widget,12.50\n";

/// How many bytes the headers promise.
const PROMISED: usize = 64 * 1024;

pub(crate) async fn broken_download() -> Response {
    let (mut tx, rx) = tokio::io::duplex(1024);
    tokio::spawn(async move {
        let _ = tx.write_all(SENT).await;
        // The headers and the first lines reach the browser (the download has begun) before the body ends short.
        tokio::time::sleep(Duration::from_millis(300)).await;
        drop(tx);
    });
    let mut response = Response::new(Body::from_stream(ReaderStream::new(rx)));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/csv; charset=utf-8"));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(PROMISED));
    headers.insert(header::CONTENT_DISPOSITION, HeaderValue::from_static("attachment; filename=\"broken.csv\""));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
