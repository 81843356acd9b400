//! The WebSocket transport for remote CDP endpoints, and resolution of `http://host:port` to the browser's ws URL.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::{SinkExt, StreamExt};
use rustls::pki_types::CertificateDer;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};

use crate::connection::{Cdp, ConnectionOptions};
use crate::error::{CdpError, TransportError};
use crate::transport::Transport;

/// The largest message accepted from a remote endpoint.
const MAX_WS_MESSAGE: usize = 512 * 1024 * 1024;
/// The largest `/json/version` answer read.
const MAX_HTTP_RESPONSE: usize = 1024 * 1024;
/// How long `/json/version` may take.
const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// How to connect to a remote endpoint.
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    /// How long resolving and the WebSocket handshake may take together.
    pub connect_timeout: Duration,
    /// Queue sizes of the connection.
    pub connection: ConnectionOptions,
    /// Certificate authorities (DER) trusted for `wss://` in addition to the Mozilla roots, e.g. a private grid's CA.
    pub extra_root_certificates: Vec<Vec<u8>>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            connect_timeout: Duration::from_secs(30),
            connection: ConnectionOptions::default(),
            extra_root_certificates: Vec::new(),
        }
    }
}

/// Connects to a remote CDP endpoint: a `ws://` or `wss://` browser (or page) URL, or `http://host:port`, which is resolved to the
/// browser's ws URL through `/json/version`.
pub async fn connect_ws(url: &str) -> Result<Cdp, CdpError> {
    connect_ws_with(url, ConnectOptions::default()).await
}

/// [`connect_ws`] with explicit options.
pub async fn connect_ws_with(url: &str, options: ConnectOptions) -> Result<Cdp, CdpError> {
    let connect = async {
        let ws_url = resolve_ws_url(url).await?;
        WsTransport::connect_with_roots(&ws_url, &options.extra_root_certificates).await
    };
    let transport =
        tokio::time::timeout(options.connect_timeout, connect).await.map_err(|_| TransportError::Connect {
            endpoint: url.to_owned(),
            message: format!("no answer within {:?}; check that the browser is running there", options.connect_timeout),
        })??;
    Ok(Cdp::spawn(transport, options.connection))
}

/// Turns an endpoint into a WebSocket URL: `ws://` and `wss://` URLs are returned unchanged, `http://host:port` is
/// asked for its `webSocketDebuggerUrl` at `/json/version`.
pub async fn resolve_ws_url(endpoint: &str) -> Result<String, TransportError> {
    let lower = endpoint.to_ascii_lowercase();
    if lower.starts_with("ws://") || lower.starts_with("wss://") {
        return Ok(endpoint.to_owned());
    }
    let Some(rest) = lower.strip_prefix("http://").map(|_| &endpoint["http://".len()..]) else {
        let message = if lower.starts_with("https://") {
            "https:// discovery is unsupported; pass the wss:// browser URL instead".to_owned()
        } else {
            "expected a ws://, wss:// or http://host:port URL".to_owned()
        };
        return Err(TransportError::Unsupported { endpoint: endpoint.to_owned(), message });
    };
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty() {
        return Err(TransportError::Connect { endpoint: endpoint.to_owned(), message: "the URL has no host".into() });
    }
    let has_port = match authority.rfind(']') {
        Some(bracket) => authority[bracket..].contains(':'),
        None => authority.contains(':'),
    };
    let address = if has_port { authority.to_owned() } else { format!("{authority}:80") };
    let connect_error = |message: String| TransportError::Connect { endpoint: endpoint.to_owned(), message };

    let fetch = async {
        let mut stream = TcpStream::connect(&address).await.map_err(|err| connect_error(err.to_string()))?;
        let request = format!("GET /json/version HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.map_err(|err| connect_error(err.to_string()))?;
        read_http_response(&mut stream).await.map_err(connect_error)
    };
    let (status_line, body) = tokio::time::timeout(HTTP_TIMEOUT, fetch)
        .await
        .map_err(|_| connect_error(format!("/json/version did not answer within {HTTP_TIMEOUT:?}")))??;
    if status_line.split_whitespace().nth(1) != Some("200") {
        return Err(connect_error(format!(
            "/json/version answered `{status_line}`; is this a Chromium DevTools endpoint?"
        )));
    }
    let version: Value = serde_json::from_slice(&body).map_err(|err| TransportError::Malformed {
        detail: format!("/json/version of {endpoint} is not JSON: {err}"),
    })?;
    version.get("webSocketDebuggerUrl").and_then(Value::as_str).map(str::to_owned).ok_or_else(|| {
        TransportError::Malformed { detail: format!("/json/version of {endpoint} has no webSocketDebuggerUrl") }
    })
}

/// A rustls client configuration with the ring provider chosen explicitly (no process-wide default needed), trusting
/// the Mozilla roots plus `extra_roots`.
fn tls_connector(url: &str, extra_roots: &[Vec<u8>]) -> Result<Connector, TransportError> {
    let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    for der in extra_roots {
        roots.add(CertificateDer::from(der.clone())).map_err(|err| TransportError::Connect {
            endpoint: url.to_owned(),
            message: format!("an extra root certificate is invalid: {err}"),
        })?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|err| TransportError::Connect { endpoint: url.to_owned(), message: err.to_string() })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Connector::Rustls(Arc::new(config)))
}

/// Reads one HTTP/1.1 answer: the status line and the body, delimited by `Content-Length` or by the end of the
/// stream (the DevTools server may keep the connection open after the body).
async fn read_http_response(stream: &mut TcpStream) -> Result<(String, Vec<u8>), String> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let mut head_end = None;
    loop {
        if head_end.is_none() {
            head_end = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|pos| pos + 4);
        }
        if let Some(end) = head_end {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let length = head.lines().find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.trim().eq_ignore_ascii_case("content-length").then(|| value.trim().parse::<usize>().ok())?
            });
            if length.is_some_and(|length| buf.len() >= end + length) {
                let length = length.unwrap_or_default();
                let status = head.lines().next().unwrap_or_default().to_owned();
                return Ok((status, buf[end..end + length].to_vec()));
            }
        }
        if buf.len() > MAX_HTTP_RESPONSE {
            return Err(format!("the answer exceeds {MAX_HTTP_RESPONSE} bytes"));
        }
        let n = stream.read(&mut chunk).await.map_err(|err| err.to_string())?;
        if n == 0 {
            let Some(end) = head_end else { return Err("the connection closed before an HTTP answer".into()) };
            let status = String::from_utf8_lossy(&buf[..end]).lines().next().unwrap_or_default().to_owned();
            return Ok((status, buf[end..].to_vec()));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// CDP over one WebSocket, one text frame per message.
#[derive(Debug)]
pub struct WsTransport {
    stream: WebSocketStream<MaybeTlsStream<TcpStream>>,
    url: String,
}

impl WsTransport {
    /// Opens the WebSocket at `url` (`ws://`, or `wss://` verified against the Mozilla root certificates).
    pub async fn connect(url: &str) -> Result<WsTransport, TransportError> {
        WsTransport::connect_with_roots(url, &[]).await
    }

    /// Like [`WsTransport::connect`], also trusting the given certificate authorities (DER) for `wss://`.
    pub async fn connect_with_roots(url: &str, extra_roots: &[Vec<u8>]) -> Result<WsTransport, TransportError> {
        let config =
            WebSocketConfig::default().max_message_size(Some(MAX_WS_MESSAGE)).max_frame_size(Some(MAX_WS_MESSAGE));
        let connector = tls_connector(url, extra_roots)?;
        let (stream, _response) =
            tokio_tungstenite::connect_async_tls_with_config(url, Some(config), true, Some(connector)).await.map_err(
                |err| match err {
                    tokio_tungstenite::tungstenite::Error::Url(url_err) => {
                        TransportError::Unsupported { endpoint: url.to_owned(), message: url_err.to_string() }
                    }
                    other => TransportError::Connect { endpoint: url.to_owned(), message: other.to_string() },
                },
            )?;
        Ok(WsTransport { stream, url: url.to_owned() })
    }
}

#[async_trait]
impl Transport for WsTransport {
    async fn send(&mut self, message: String) -> Result<(), TransportError> {
        self.stream.send(Message::text(message)).await.map_err(|err| ws_error(&self.url, err, "sending"))
    }

    async fn recv(&mut self) -> Result<String, TransportError> {
        loop {
            match self.stream.next().await {
                Some(Ok(Message::Text(text))) => return Ok(text.as_str().to_owned()),
                Some(Ok(Message::Binary(bytes))) => {
                    return String::from_utf8(bytes.to_vec()).map_err(|err| TransportError::Malformed {
                        detail: format!("binary frame is not UTF-8: {err}"),
                    });
                }
                Some(Ok(Message::Close(frame))) => {
                    let detail = frame
                        .map(|frame| format!(" (code {}, {:?})", u16::from(frame.code), frame.reason.as_str()))
                        .unwrap_or_default();
                    return Err(TransportError::Closed {
                        reason: format!("the endpoint {} closed the WebSocket{detail}", self.url),
                    });
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
                Some(Err(err)) => return Err(ws_error(&self.url, err, "receiving")),
                None => {
                    return Err(TransportError::Closed { reason: format!("the WebSocket to {} closed", self.url) });
                }
            }
        }
    }
}

fn ws_error(url: &str, err: tokio_tungstenite::tungstenite::Error, action: &'static str) -> TransportError {
    use tokio_tungstenite::tungstenite::Error;
    match err {
        Error::ConnectionClosed | Error::AlreadyClosed => {
            TransportError::Closed { reason: format!("the WebSocket to {url} closed") }
        }
        Error::Protocol(err) => TransportError::Closed { reason: format!("the WebSocket to {url} broke: {err}") },
        Error::Io(err) => {
            TransportError::Closed { reason: format!("the WebSocket to {url} failed while {action}: {err}") }
        }
        Error::Capacity(err) => {
            TransportError::Malformed { detail: format!("a message exceeds the WebSocket size limit: {err}") }
        }
        other => TransportError::Io { action, message: other.to_string() },
    }
}
