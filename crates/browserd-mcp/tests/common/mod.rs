//! The shared harness of the broker-backed MCP tests: an in-process broker (on Debian's Chromium or the fake browser)
//! on its Unix socket in a temporary runtime directory, and `browserd_mcp::serve` over an in-memory pipe against it,
//! driven by rmcp's client.
#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use browserd_broker::Broker;
use browserd_broker::client::{Client, ConnectOptions};
use browserd_broker::config::BrokerConfig;
use browserd_broker::server::{BrokerError, RunSummary};
use browserd_core::clock::SystemClock;
use browserd_ipc::RuntimeDir;
use browserd_mcp::{BrokerBackend, HostIdentity, ServerOptions, ShutdownOutcome, ToolBackend};
use browserd_protocol::hello::ComponentRole;
use browserd_protocol::lifecycle::HostKind;
use browserd_test_support::fake_provider::FakeProvider;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, RequestMetaObject};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::DuplexStream;
use tokio::task::JoinHandle;

pub const CHROMIUM: &str = "/usr/lib/chromium/chromium";

/// What `browserd_mcp::serve` ends with.
pub type Server = JoinHandle<anyhow::Result<ShutdownOutcome>>;

/// A broker running on its socket in `temp/rt`, answering by the time a constructor returns.
pub struct TestBroker {
    pub temp: TempDir,
    pub broker: Arc<Broker>,
    pub running: JoinHandle<Result<RunSummary, BrokerError>>,
    /// How the MCP side reaches it (role `mcp`, never spawning a broker of its own).
    pub connect: ConnectOptions,
}

impl TestBroker {
    /// A broker on Debian's Chromium with a fresh profile in `temp/profile` and no idle exit; `tune` sets the rest
    /// of its config.
    pub async fn chromium(tune: impl FnOnce(&mut BrokerConfig)) -> Self {
        assert!(Path::new(CHROMIUM).exists(), "this test needs Debian's chromium at {CHROMIUM}");
        let temp = tempfile::tempdir().unwrap();
        let mut config = BrokerConfig {
            chromium_path: Some(CHROMIUM.into()),
            profile_dir: Some(temp.path().join("profile")),
            idle_exit_secs: 0,
            ..BrokerConfig::default()
        };
        tune(&mut config);
        let broker = Broker::from_config(config, Some(&temp.path().join("state")));
        Self::run(temp, broker, Duration::from_secs(60)).await
    }

    /// A broker on the fake browser.
    pub async fn fake() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let broker =
            Broker::with_provider(Arc::new(FakeProvider::new()), Arc::new(SystemClock::new()), BrokerConfig::default());
        Self::run(temp, broker, Duration::from_secs(30)).await
    }

    async fn run(temp: TempDir, broker: Arc<Broker>, timeout: Duration) -> Self {
        let dir = RuntimeDir::ensure(temp.path().join("rt")).unwrap();
        let running = tokio::spawn({
            let broker = broker.clone();
            let dir = dir.clone();
            async move { broker.run(&dir).await }
        });
        let connect = ConnectOptions {
            role: ComponentRole::Mcp,
            runtime_dir: Some(dir.path().to_path_buf()),
            spawn: false,
            timeout: Some(timeout),
            broker_exe: None,
        };
        let started = Self { temp, broker, running, connect };
        drop(started.client().await);
        started
    }

    /// A client of the broker's own (the user's, for approvals), once the broker answers (readiness, not a timing
    /// assertion).
    pub async fn client(&self) -> Client {
        for _ in 0..500 {
            if let Ok(client) = Client::connect(&self.connect).await {
                return client;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the broker started");
    }

    /// The MCP server over this broker (`BrokerBackend`, advanced tools off), and rmcp's client against it.
    pub async fn mcp(&self, options: ServerOptions) -> (RunningService<RoleClient, ()>, Server) {
        mcp(Arc::new(BrokerBackend::new(self.connect.clone(), false)), options).await
    }

    /// Stops the broker and waits until it has exited cleanly.
    pub async fn stop(self) {
        self.broker.shutdown_token().cancel();
        self.running.await.unwrap().unwrap();
    }
}

/// Server options for an MCP host (not run from a host's own process) named `host_session_id`.
pub fn options(host_session_id: &str) -> ServerOptions {
    ServerOptions::new(HostIdentity { host: HostKind::Mcp, host_session_id: host_session_id.into(), from_host: false })
}

/// `browserd_mcp::serve` on `backend` over an in-memory pipe: the client's end of the pipe, and the server.
pub fn serve(backend: Arc<dyn ToolBackend>, options: ServerOptions) -> (DuplexStream, Server) {
    let (server_io, client_io) = tokio::io::duplex(1 << 22);
    let server = tokio::spawn(browserd_mcp::serve(backend, options, server_io, std::future::pending::<()>()));
    (client_io, server)
}

/// `browserd_mcp::serve` on `backend`, and rmcp's client against it.
pub async fn mcp(backend: Arc<dyn ToolBackend>, options: ServerOptions) -> (RunningService<RoleClient, ()>, Server) {
    let (client_io, server) = serve(backend, options);
    (().serve(client_io).await.unwrap(), server)
}

/// A `tools/call` of `name` with `arguments`.
pub fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_else(JsonObject::new))
}

/// A `tools/call` as Codex sends it: with its turn metadata.
pub fn codex_call(name: &str, arguments: Value, session: &str, turn: &str) -> CallToolRequestParams {
    let mut params = call(name, arguments);
    let mut meta = RequestMetaObject::new();
    meta.insert("x-codex-turn-metadata".into(), json!({"session_id": session, "turn_id": turn}));
    params.meta = Some(meta);
    params
}

/// The text of a successful result's first block.
pub fn text(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(false), "{result:?}");
    result.content[0].as_text().expect("text first").text.clone()
}
