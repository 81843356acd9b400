//! The WebSocket transport over TLS (`wss://`), against a local TLS server that answers like a browser endpoint.

use std::sync::Arc;
use std::time::Duration;

use browserd_cdp::{CdpError, ConnectOptions, TransportError, connect_ws, connect_ws_with};
use futures_util::{SinkExt, StreamExt};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

const T: Duration = Duration::from_secs(10);

/// Serves `wss://localhost:PORT/…` with a fresh self-signed certificate; answers every call with its method name.
async fn serve_tls() -> (u16, Vec<u8>, tokio::task::JoinHandle<()>) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert_der = certified.cert.der().to_vec();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der()));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![CertificateDer::from(cert_der.clone())], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            // A client that refuses the certificate makes this handshake fail; wait for the next one.
            let Ok(tls) = acceptor.accept(tcp).await else { continue };
            let Ok(mut ws) = tokio_tungstenite::accept_async(tls).await else { continue };
            while let Some(Ok(message)) = ws.next().await {
                if let Message::Text(text) = message {
                    let call: Value = serde_json::from_str(text.as_str()).unwrap();
                    let answer = json!({"id": call["id"], "result": {"method": call["method"]}});
                    if ws.send(Message::text(answer.to_string())).await.is_err() {
                        break;
                    }
                }
            }
        }
    });
    (port, cert_der, server)
}

#[tokio::test]
async fn wss_verifies_the_certificate_and_carries_calls() {
    let (port, cert_der, server) = serve_tls().await;
    let url = format!("wss://localhost:{port}/devtools/browser/fake");

    let err = tokio::time::timeout(T, connect_ws(&url)).await.unwrap().unwrap_err();
    let CdpError::Transport(TransportError::Connect { message, .. }) = &err else {
        panic!("expected a connect error, got {err:?}")
    };
    assert!(message.to_lowercase().contains("certificate"), "{message}");

    let options = ConnectOptions { extra_root_certificates: vec![cert_der], ..ConnectOptions::default() };
    let cdp = tokio::time::timeout(T, connect_ws_with(&url, options)).await.unwrap().unwrap();
    let answer = cdp.call(None, "Browser.getVersion", json!({}), T).await.unwrap();
    assert_eq!(answer, json!({"method": "Browser.getVersion"}));
    server.abort();
}
