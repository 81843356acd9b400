//! Discovery of a remote endpoint's browser WebSocket through `/json/version`, over a real HTTP/1.1 client (hyper:
//! chunked bodies, keep-alive servers, TLS by rustls), and the typed answers of grids (401/403, 429).

use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use serde_json::Value;
use tokio::net::TcpStream;

use crate::endpoint::Endpoint;
use crate::error::TransportError;

/// The largest `/json/version` answer read.
const MAX_HTTP_RESPONSE: usize = 1024 * 1024;

/// One HTTP answer.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) retry_after_ms: Option<u64>,
    pub(crate) body: Bytes,
}

/// `GET target` on `endpoint` (over TLS for `https://`), with `authorization` when given.
pub(crate) async fn get(
    endpoint: &Endpoint,
    target: &str,
    authorization: Option<&str>,
    tls: &Arc<rustls::ClientConfig>,
) -> Result<Answer, TransportError> {
    let connect_error = |message: String| TransportError::Connect { endpoint: endpoint.redacted(), message };
    let tcp = TcpStream::connect((endpoint.server_name(), endpoint.port))
        .await
        .map_err(|err| connect_error(format!("{err}; check that the grid or browser is running there")))?;
    let _ = tcp.set_nodelay(true);
    let request = {
        let mut builder = hyper::Request::get(target).header(hyper::header::HOST, endpoint.host_header());
        if let Some(value) = authorization {
            builder = builder.header(hyper::header::AUTHORIZATION, value);
        }
        builder.body(Empty::<Bytes>::new()).map_err(|err| connect_error(format!("invalid request: {err}")))?
    };
    if endpoint.scheme.tls() {
        let name = ServerName::try_from(endpoint.server_name().to_owned())
            .map_err(|err| connect_error(format!("invalid TLS server name: {err}")))?;
        let stream = tokio_rustls::TlsConnector::from(tls.clone())
            .connect(name, tcp)
            .await
            .map_err(|err| connect_error(format!("TLS handshake failed: {err}")))?;
        send(TokioIo::new(stream), request, connect_error).await
    } else {
        send(TokioIo::new(tcp), request, connect_error).await
    }
}

async fn send<S>(
    io: S,
    request: hyper::Request<Empty<Bytes>>,
    connect_error: impl Fn(String) -> TransportError,
) -> Result<Answer, TransportError>
where
    S: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(io).await.map_err(|err| connect_error(err.to_string()))?;
    // The connection is driven until the answer is read; dropping the sender then ends it (and closes the socket).
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let result = async {
        let response = sender.send_request(request).await.map_err(|err| connect_error(err.to_string()))?;
        let status = response.status().as_u16();
        let retry_after_ms = response
            .headers()
            .get(hyper::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|secs| secs.saturating_mul(1000));
        let body = Limited::new(response.into_body(), MAX_HTTP_RESPONSE)
            .collect()
            .await
            .map_err(|err| connect_error(format!("reading the answer failed: {err}")))?
            .to_bytes();
        Ok(Answer { status, retry_after_ms, body })
    }
    .await;
    drop(sender);
    driver.abort();
    result
}

/// The typed error of a grid's refusal by HTTP status, if the status is one.
pub(crate) fn refusal(endpoint: &Endpoint, status: u16, retry_after_ms: Option<u64>) -> Option<TransportError> {
    match status {
        401 | 403 => Some(TransportError::NotAuthorised {
            endpoint: endpoint.redacted(),
            status,
            message: "check the token in remote_cdp (for example `?token=…`) or the Authorization header \
                      (BROWSERD_REMOTE_AUTHORIZATION)"
                .to_owned(),
        }),
        429 => Some(TransportError::Busy {
            endpoint: endpoint.redacted(),
            retry_after_ms: Some(retry_after_ms.unwrap_or(DEFAULT_RETRY_AFTER_MS)),
        }),
        503 => Some(TransportError::Busy {
            endpoint: endpoint.redacted(),
            retry_after_ms: retry_after_ms.or(Some(DEFAULT_RETRY_AFTER_MS)),
        }),
        _ => None,
    }
}

/// The retry hint given when a grid's "queue full" answer names none.
pub const DEFAULT_RETRY_AFTER_MS: u64 = 5_000;

/// Resolves an `http://`/`https://` endpoint to its browser WebSocket URL through `/json/version`; an endpoint that
/// has none (404, not JSON, no `webSocketDebuggerUrl`) is reached at its own path as a WebSocket. The discovered URL
/// keeps the user's query when it has none of its own.
pub(crate) async fn resolve(
    endpoint: &Endpoint,
    authorization: Option<&str>,
    tls: &Arc<rustls::ClientConfig>,
    timeout: Duration,
) -> Result<String, TransportError> {
    if !endpoint.discovers() {
        return Ok(endpoint.ws_url());
    }
    let answer = tokio::time::timeout(timeout, get(endpoint, &endpoint.version_target(), authorization, tls))
        .await
        .map_err(|_| TransportError::Connect {
        endpoint: endpoint.redacted(),
        message: format!("/json/version did not answer within {timeout:?}"),
    })??;
    if let Some(err) = refusal(endpoint, answer.status, answer.retry_after_ms) {
        return Err(err);
    }
    let discovered = (answer.status == 200)
        .then(|| serde_json::from_slice::<Value>(&answer.body).ok())
        .flatten()
        .and_then(|v| v.get("webSocketDebuggerUrl").and_then(Value::as_str).map(str::to_owned))
        .and_then(|url| endpoint.complete_discovered(&url));
    match discovered {
        Some(url) => Ok(url),
        None if matches!(answer.status, 200 | 404 | 405) => {
            tracing::debug!(endpoint = %endpoint, status = answer.status, "no /json/version: using the endpoint as a WebSocket");
            Ok(endpoint.ws_url())
        }
        None => Err(TransportError::Connect {
            endpoint: endpoint.redacted(),
            message: format!("/json/version answered HTTP {}; is this a Chromium DevTools endpoint?", answer.status),
        }),
    }
}
