//! The WebSocket transport for remote CDP endpoints (browsers and grids), and how an endpoint becomes the WebSocket
//! browserd opens.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::{SinkExt, StreamExt};
use rustls::pki_types::CertificateDer;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};

use crate::connection::{Cdp, ConnectionOptions};
use crate::discovery;
use crate::endpoint::Endpoint;
use crate::error::{CdpError, TransportError};
use crate::transport::Transport;

/// The largest message accepted from a remote endpoint.
const MAX_WS_MESSAGE: usize = 512 * 1024 * 1024;
/// How long `/json/version` may take.
const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// How to connect to a remote endpoint.
#[derive(Clone)]
pub struct ConnectOptions {
    /// How long resolving and the WebSocket handshake may take together. When it passes, the attempt's socket is
    /// closed at once, so a grid that queued it frees the slot.
    pub connect_timeout: Duration,
    /// Queue sizes of the connection.
    pub connection: ConnectionOptions,
    /// Certificate authorities (DER) trusted for `wss://` and `https://` in addition to the Mozilla roots, e.g. a
    /// private grid's CA.
    pub extra_root_certificates: Vec<Vec<u8>>,
    /// The `Authorization` header value sent with discovery and the WebSocket upgrade (a grid's bearer token). Never
    /// logged; userinfo in the URL is sent as HTTP Basic when this is unset.
    pub authorization: Option<String>,
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("connect_timeout", &self.connect_timeout)
            .field("connection", &self.connection)
            .field("extra_root_certificates", &self.extra_root_certificates.len())
            .field("authorization", &self.authorization.as_ref().map(|_| "…"))
            .finish()
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            connect_timeout: Duration::from_secs(30),
            connection: ConnectionOptions::default(),
            extra_root_certificates: Vec::new(),
            authorization: None,
        }
    }
}

/// Connects to a remote CDP endpoint: a `ws://` or `wss://` browser (or page) URL used as given, or an `http://` or
/// `https://` endpoint, asked for its browser WebSocket through `/json/version` (falling back to the same place as a
/// WebSocket when it has none). Paths and queries are kept.
pub async fn connect_ws(url: &str) -> Result<Cdp, CdpError> {
    connect_ws_with(url, ConnectOptions::default()).await
}

/// [`connect_ws`] with explicit options.
pub async fn connect_ws_with(url: &str, options: ConnectOptions) -> Result<Cdp, CdpError> {
    let endpoint = Endpoint::parse(url)?;
    let tls = tls_config(&endpoint, &options.extra_root_certificates)?;
    let authorization = options.authorization.clone().or_else(|| endpoint.basic_authorization());
    let connect = async {
        let ws_url = discovery::resolve(&endpoint, authorization.as_deref(), &tls, HTTP_TIMEOUT).await?;
        WsTransport::open(&endpoint, &ws_url, authorization.as_deref(), tls.clone()).await
    };
    // On timeout the attempt's future is dropped here, which closes its socket (a queued grid request included).
    let transport =
        tokio::time::timeout(options.connect_timeout, connect).await.map_err(|_| TransportError::Connect {
            endpoint: endpoint.redacted(),
            message: format!(
                "no answer within {:?} (the attempt was closed); check that the browser or grid is running there and \
                 has a free slot",
                options.connect_timeout
            ),
        })??;
    Ok(Cdp::spawn(transport, options.connection))
}

/// Turns an endpoint into the WebSocket URL browserd opens: `ws://` and `wss://` URLs as given (an empty path
/// becomes `/`), `http://` and `https://` through `/json/version`. The result may carry the endpoint's query (a
/// token): never log it.
pub async fn resolve_ws_url(endpoint: &str) -> Result<String, TransportError> {
    let parsed = Endpoint::parse(endpoint)?;
    let tls = tls_config(&parsed, &[])?;
    discovery::resolve(&parsed, parsed.basic_authorization().as_deref(), &tls, HTTP_TIMEOUT).await
}

/// A rustls client configuration with the ring provider chosen explicitly (no process-wide default needed), trusting
/// the Mozilla roots plus `extra_roots`.
fn tls_config(endpoint: &Endpoint, extra_roots: &[Vec<u8>]) -> Result<Arc<rustls::ClientConfig>, TransportError> {
    let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    for der in extra_roots {
        roots.add(CertificateDer::from(der.clone())).map_err(|err| TransportError::Connect {
            endpoint: endpoint.redacted(),
            message: format!("an extra root certificate is invalid: {err}"),
        })?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|err| TransportError::Connect { endpoint: endpoint.redacted(), message: err.to_string() })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// CDP over one WebSocket, one text frame per message.
#[derive(Debug)]
pub struct WsTransport {
    stream: WebSocketStream<MaybeTlsStream<TcpStream>>,
    /// The endpoint, redacted: what every message names.
    url: String,
}

impl WsTransport {
    /// Opens the WebSocket at `url` (`ws://`, or `wss://` verified against the Mozilla root certificates).
    pub async fn connect(url: &str) -> Result<WsTransport, TransportError> {
        WsTransport::connect_with_roots(url, &[]).await
    }

    /// Like [`WsTransport::connect`], also trusting the given certificate authorities (DER) for `wss://`.
    pub async fn connect_with_roots(url: &str, extra_roots: &[Vec<u8>]) -> Result<WsTransport, TransportError> {
        let endpoint = Endpoint::parse(url)?;
        let tls = tls_config(&endpoint, extra_roots)?;
        let authorization = endpoint.basic_authorization();
        WsTransport::open(&endpoint, &endpoint.ws_url(), authorization.as_deref(), tls).await
    }

    async fn open(
        endpoint: &Endpoint,
        ws_url: &str,
        authorization: Option<&str>,
        tls: Arc<rustls::ClientConfig>,
    ) -> Result<WsTransport, TransportError> {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let shown = crate::endpoint::redact_url(ws_url);
        let mut request = ws_url
            .into_client_request()
            .map_err(|err| TransportError::Unsupported { endpoint: shown.clone(), message: redact_error(&err) })?;
        if let Some(value) = authorization {
            let value = value.parse().map_err(|_| TransportError::Unsupported {
                endpoint: shown.clone(),
                message: "the Authorization value is not a valid HTTP header value".into(),
            })?;
            request.headers_mut().insert("Authorization", value);
        }
        let config =
            WebSocketConfig::default().max_message_size(Some(MAX_WS_MESSAGE)).max_frame_size(Some(MAX_WS_MESSAGE));
        let connector = Connector::Rustls(tls);
        let (stream, _response) =
            tokio_tungstenite::connect_async_tls_with_config(request, Some(config), true, Some(connector))
                .await
                .map_err(|err| match err {
                    tokio_tungstenite::tungstenite::Error::Url(url_err) => {
                        TransportError::Unsupported { endpoint: shown.clone(), message: url_err.to_string() }
                    }
                    tokio_tungstenite::tungstenite::Error::Http(response) => {
                        let status = response.status().as_u16();
                        let retry = response
                            .headers()
                            .get("retry-after")
                            .and_then(|v| v.to_str().ok())
                            .and_then(|v| v.trim().parse::<u64>().ok())
                            .map(|s| s.saturating_mul(1000));
                        discovery::refusal(endpoint, status, retry).unwrap_or_else(|| TransportError::Connect {
                            endpoint: shown.clone(),
                            message: format!("the WebSocket upgrade was answered with HTTP {status}"),
                        })
                    }
                    other => TransportError::Connect { endpoint: shown.clone(), message: redact_error(&other) },
                })?;
        Ok(WsTransport { stream, url: endpoint.redacted() })
    }
}

/// A tungstenite error as text, with any URL in it redacted.
fn redact_error(err: &dyn std::fmt::Display) -> String {
    err.to_string()
        .split_whitespace()
        .map(|word| if word.contains("://") { crate::endpoint::redact_url(word) } else { word.to_owned() })
        .collect::<Vec<_>>()
        .join(" ")
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
    use tokio_tungstenite::tungstenite::error::ProtocolError;
    match err {
        Error::ConnectionClosed | Error::AlreadyClosed => {
            TransportError::Closed { reason: format!("the WebSocket to {url} closed") }
        }
        Error::Protocol(ProtocolError::NonZeroReservedBits) => TransportError::Closed {
            reason: format!(
                "the grid at {url} ended the session: it wrote a raw HTTP answer onto the WebSocket (Browserless sends \
                 `408 Request Timeout` when its session timeout passes, 30 s unless configured); raise the grid's \
                 session timeout (Browserless: `timeout=MS` in the remote_cdp query, or its TIMEOUT setting, 0 for none)"
            ),
        },
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
