//! browserd's MCP server: `browserd mcp` over stdio, for Codex, Claude Code and every other MCP host.
//!
//! A thin translator. Browser state lives in the broker; this process holds one broker session and
//! maps MCP onto it:
//!
//! | MCP | broker |
//! | --- | --- |
//! | `tools/list` | the core tier of [`browserd_protocol::tools::tool_catalog`] (advanced with `--advanced`), narrowed to what `tools.list` says the session sees |
//! | `tools/call` | `tool.call`; arguments checked against the tool's schema first |
//! | first `tools/call` | `session.open` (host and host session id from Codex `_meta`, the environment, or generated) |
//! | a new `_meta["x-codex-turn-metadata"].turn_id` | `turn.end {reason: newTurnDetected}` for the old turn, then `turn.begin`, before the call |
//! | `notifications/cancelled` | the backend call's cancellation token |
//! | `_meta.progressToken` | `notifications/progress` from backend updates, plus a heartbeat while the call runs |
//! | a stdin line over 16 MiB | a JSON-RPC `INVALID_REQUEST` error naming the limit, under the line's id ([`stdin_limit`]) |
//! | stdin EOF | `session.close {reason: clientGone}` (SIGTERM/SIGINT: `hostExit`); a session named with `--host-session-id` is left to the broker's disconnect grace instead, for the next server with that id |
//! | `APPROVAL_REQUIRED` (an action, or the step a batch stopped before) and the client declared `elicitation` | `elicitation/create` naming the action; accept: `approval.grant`, then the call once more; decline: `APPROVAL_DECLINED` ([`approval`]) |
//! | the broker's `tools.changed` (activation, the advanced tier, a reset) | `notifications/tools/list_changed` (`tools.listChanged` is advertised) |
//!
//! Results are compact JSON text plus `structuredContent`; screenshots become image content plus a file path
//! ([`render`]). `isError` is true exactly when the call did not fully succeed: a typed error (text
//! `{"error": {code, message, nextStep, ...}}`), or a result with `ok: false`, an `outcome` other than `succeeded`, a
//! failed postcondition, a batch step that fell short or a handoff that ended without completion (the rule of
//! [`browserd_protocol::verdict`], shared with the CLI's exit status and the adapters); the structured result stays
//! in the content so the model sees what happened. See `README.md`.
//!
//! # Protocol versions
//! rmcp 3.11 negotiates `2025-11-25` (and older) through `initialize`, and serves `2026-07-28` without a
//! handshake (per-request `_meta` with the protocol version and client capabilities, `server/discover`).
//! Both are covered by this crate's tests.
//!
//! # Size of the tool list
//! Output schemas are opt-in (`--output-schemas`): results carry `structuredContent` either way, and Claude Code
//! shows the model only names, descriptions and input schemas. Measured with the real binary (compact JSON of the
//! `tools/list` result, 13 core tools): 81 245 bytes before 0.1.0 (output schemas on, 3 tools annotated); now
//! 21 680 bytes by default, every tool with a `title` and the four annotation hints (81 592 bytes with
//! `--output-schemas`). `tests/mcp.rs` keeps the default under 22 KB and prints the o200k token counts. For
//! comparison, Playwright MCP 0.0.83: 25 tools in 20 296 bytes; chrome-devtools-mcp 1.11.0: 32 in 28 628.
//!
//! # Layout
//! - [`approval`]: asking the user through MCP elicitation when the broker answers `APPROVAL_REQUIRED`.
//! - [`backend`]: the [`ToolBackend`] trait; [`broker::BrokerBackend`] implements it over the broker client,
//!   tests use an in-process fake.
//! - [`host`]: Codex turn metadata and host identity from the environment.
//! - [`render`]: results, errors and screenshots.
//! - [`server`]: the rmcp handler and the session/turn bookkeeping.
//! - [`stdin_limit`]: the 16 MiB stdin line limit, answered with a JSON-RPC error naming it (rmcp drops such lines).
//! - this file: [`McpArgs`] (the `browserd mcp` flags), [`serve`] and [`serve_stdio`].
//! - this file: [`McpArgs`] (the `browserd mcp` flags, the per-entry browser flags in [`BrowserFlags`]), [`serve`]
//!   and [`serve_stdio`].

pub mod approval;
pub mod backend;
pub mod broker;
pub mod host;
pub mod render;
pub mod server;
pub mod stdin_limit;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use browserd_protocol::browser_settings::{BrowserSettings, Viewport};
use browserd_protocol::lifecycle::{CloseReason, HostKind};
use browserd_protocol::policy::SessionPolicy;
use rmcp::service::{QuitReason, RoleServer, ServiceExt};
use rmcp::transport::IntoTransport;
use tokio_util::sync::CancellationToken;

pub use crate::backend::{ProgressReporter, ProgressUpdate, ToolBackend, ToolRequest};
pub use crate::broker::BrokerBackend;
pub use crate::host::{CodexTurnMetadata, HostIdentity};
pub use crate::server::{McpServer, ServerOptions, ShutdownOutcome};

/// The host kinds `--host` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HostArg {
    /// Codex.
    Codex,
    /// Claude Code.
    ClaudeCode,
    /// Any other MCP host.
    Mcp,
}

impl From<HostArg> for HostKind {
    fn from(host: HostArg) -> Self {
        match host {
            HostArg::Codex => HostKind::Codex,
            HostArg::ClaudeCode => HostKind::ClaudeCode,
            HostArg::Mcp => HostKind::Mcp,
        }
    }
}

/// The vision modes `--vision` accepts (MCP says nothing about the model's input types, so the user does).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum VisionArg {
    /// The host's model takes images: screenshots come back as image content (vision mode `native-multimodal`).
    #[default]
    Native,
    /// No image route: a screenshot answers `VISION_UNAVAILABLE` with the text observation (`semantic-only`).
    Semantic,
}

impl From<VisionArg> for browserd_protocol::VisionMode {
    fn from(v: VisionArg) -> Self {
        match v {
            VisionArg::Native => browserd_protocol::VisionMode::NativeMultimodal,
            VisionArg::Semantic => browserd_protocol::VisionMode::SemanticOnly,
        }
    }
}

/// Flags of `browserd mcp`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct McpArgs {
    /// Also serve the advanced tools (JavaScript evaluation, console, network, raw CDP); the broker's
    /// policy still decides whether they run.
    #[arg(long, env = "BROWSERD_MCP_ADVANCED")]
    pub advanced: bool,
    /// The host, when it cannot be detected (Codex and Claude Code are detected).
    #[arg(long, value_enum)]
    pub host: Option<HostArg>,
    /// The host's session id, so `browserd hook` commands find this session (default: from the host's
    /// environment or Codex's per-call metadata, else generated). A session named here outlives this server by the
    /// broker's disconnect grace (`disconnect_grace_secs`): the next `browserd mcp` with the same id takes it back,
    /// tabs included; `browserd hook session-end` ends it at once.
    #[arg(long, env = "BROWSERD_HOST_SESSION_ID")]
    pub host_session_id: Option<String>,
    /// Directory for screenshot files (default: `$XDG_CACHE_HOME/browserd/screenshots`).
    #[arg(long, env = "BROWSERD_MCP_SCREENSHOT_DIR")]
    pub screenshot_dir: Option<PathBuf>,
    /// Return screenshots only as image content, without writing files.
    #[arg(long)]
    pub no_screenshot_files: bool,
    /// Include each tool's output schema in `tools/list` (about four times the list's size; for hosts whose code
    /// mode reads them). Off by default: results carry `structuredContent` either way.
    #[arg(long, env = "BROWSERD_MCP_OUTPUT_SCHEMAS")]
    pub output_schemas: bool,
    /// The default since 0.1.0; accepted so older host configs keep working.
    #[arg(long, hide = true, conflicts_with = "output_schemas")]
    pub no_output_schemas: bool,
    /// Where screenshots go: `native` (the host's model takes images) or `semantic` (no image route: screenshots are
    /// refused with `VISION_UNAVAILABLE` and the text observation).
    #[arg(long, value_enum, default_value_t = VisionArg::Native, env = "BROWSERD_MCP_VISION")]
    pub vision: VisionArg,
    /// The longest side, in pixels, of an image the host's model takes: every screenshot is scaled to fit, its
    /// geometry kept exact (default: 1280 unless a call asks for more).
    #[arg(long, env = "BROWSERD_MCP_MAX_IMAGE_EDGE", value_parser = clap::value_parser!(u32).range(16..))]
    pub max_image_edge: Option<u32>,
    /// The largest encoded image, in bytes, the host's model takes: a larger screenshot is encoded again at a lower
    /// quality or a smaller scale (default: 3750000, which is 5 MB as base64).
    #[arg(long, env = "BROWSERD_MCP_MAX_IMAGE_BYTES", value_parser = clap::value_parser!(u32).range(4096..))]
    pub max_image_bytes: Option<u32>,
    /// Milliseconds between progress heartbeats of a running call that asked for progress.
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(100..))]
    pub progress_interval_ms: u64,
    /// Only these origin patterns may be shown or acted on in this server's sessions (`;` or `,` separated, or the
    /// flag repeated; e.g. `https://example.com;*.example.org`). Narrows the broker's `[policy]`, never widens it.
    #[arg(long, value_delimiter = ';', env = "BROWSERD_MCP_ALLOWED_ORIGINS")]
    pub allowed_origins: Vec<String>,
    /// Origin patterns never shown or acted on in this server's sessions (`;` or `,` separated, or repeated).
    #[arg(long, value_delimiter = ';', env = "BROWSERD_MCP_BLOCKED_ORIGINS")]
    pub blocked_origins: Vec<String>,
    /// Browser settings this entry asks the broker for (see [`BrowserFlags`]).
    #[command(flatten)]
    pub browser: BrowserFlags,
}

/// The per-entry browser flags of `browserd mcp`. `--isolated` and `--viewport` are this session's own (any number of
/// sessions with different values share a browser). The others are the browser's: settings the broker's default
/// managed browser does not have get a managed browser of their own, shared by every entry asking the same and closed
/// with the last of them (up to `max_browsers`; see `browserd_broker::browsers`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct BrowserFlags {
    /// Run the managed browser without a window.
    #[arg(long, conflicts_with = "headed")]
    pub headless: bool,
    /// Run the managed browser with a visible window (needs a display).
    #[arg(long)]
    pub headed: bool,
    /// The Chromium/Chrome/Edge executable to launch.
    #[arg(long, value_name = "PATH")]
    pub executable_path: Option<PathBuf>,
    /// A throwaway profile for this session: its tabs open in a browser context of their own (cookies, storage and
    /// cache apart from every other session), disposed when the session ends.
    #[arg(long, conflicts_with = "user_data_dir")]
    pub isolated: bool,
    /// A persistent profile directory for the managed browser.
    #[arg(long, value_name = "DIR")]
    pub user_data_dir: Option<PathBuf>,
    /// The page viewport of this session's tabs, WIDTHxHEIGHT in CSS pixels (e.g. 1280x800): `innerWidth` and
    /// `innerHeight` in every tab it opens or claims.
    #[arg(long, value_name = "WxH", value_parser = parse_viewport)]
    pub viewport: Option<Viewport>,
}

fn parse_viewport(text: &str) -> Result<Viewport, String> {
    Viewport::parse(text)
}

impl BrowserFlags {
    /// The settings these flags ask for, paths made absolute against `cwd` (the broker runs elsewhere); `None` when
    /// no flag is given.
    ///
    /// # Errors
    /// When `--executable-path` names no file.
    pub fn settings(&self, cwd: &std::path::Path) -> anyhow::Result<Option<BrowserSettings>> {
        let absolute = |p: &PathBuf| if p.is_absolute() { p.clone() } else { cwd.join(p) };
        let executable_path = self.executable_path.as_ref().map(absolute);
        if let Some(path) = &executable_path
            && !path.is_file()
        {
            anyhow::bail!(
                "--executable-path {}: no such file; give the path of a Chromium, Chrome or Edge binary",
                path.display()
            );
        }
        let settings = BrowserSettings {
            headless: if self.headed { Some(false) } else { self.headless.then_some(true) },
            executable_path: executable_path.map(|p| p.display().to_string()),
            isolated: self.isolated.then_some(true),
            user_data_dir: self.user_data_dir.as_ref().map(|p| absolute(p).display().to_string()),
            viewport: self.viewport,
        };
        Ok((!settings.is_empty()).then_some(settings))
    }
}

impl McpArgs {
    /// The image limits of `--max-image-edge/--max-image-bytes` (`None` without either).
    #[must_use]
    pub fn image_limits(&self) -> Option<browserd_protocol::ImageLimits> {
        (self.max_image_edge.is_some() || self.max_image_bytes.is_some()).then_some(browserd_protocol::ImageLimits {
            max_edge: self.max_image_edge,
            max_bytes: self.max_image_bytes,
            source: None,
        })
    }

    /// The session policy of `--allowed-origins/--blocked-origins` (`None` without either); the broker checks the
    /// patterns when the session opens.
    #[must_use]
    pub fn session_policy(&self) -> Option<SessionPolicy> {
        let split = |items: &[String]| -> Vec<String> {
            items
                .iter()
                .flat_map(|i| i.split([',', ';']))
                .map(str::trim)
                .filter(|i| !i.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let policy = SessionPolicy {
            allowed_origins: split(&self.allowed_origins),
            blocked_origins: split(&self.blocked_origins),
        };
        (!policy.is_empty()).then_some(policy)
    }

    /// The server options these flags mean, reading the host's environment through `var`.
    pub fn options(&self, var: impl Fn(&str) -> Option<String>) -> ServerOptions {
        let mut identity = host::identity_from_env(&var);
        let named = self.host_session_id.as_deref().map(str::trim).filter(|id| !id.is_empty());
        if let Some(id) = named {
            identity.host_session_id = id.to_owned();
            identity.from_host = true;
        }
        if let Some(host) = self.host {
            identity.host = host.into();
        }
        let screenshot_dir = if self.no_screenshot_files {
            None
        } else {
            self.screenshot_dir.clone().or_else(|| default_screenshot_dir(&var))
        };
        ServerOptions {
            advanced: self.advanced,
            output_schemas: self.output_schemas && !self.no_output_schemas,
            identity,
            screenshot_dir,
            heartbeat: Duration::from_millis(self.progress_interval_ms.max(100)),
            keep_named_session: named.is_some(),
        }
    }
}

/// `$XDG_CACHE_HOME/browserd/screenshots`, else `$HOME/.cache/browserd/screenshots`.
fn default_screenshot_dir(var: &impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let absolute = |name: &str| var(name).map(PathBuf::from).filter(|path| path.is_absolute());
    absolute("XDG_CACHE_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".cache")))
        .map(|cache| cache.join("browserd").join("screenshots"))
}

/// Serves MCP on `transport` until it closes or `stop` completes, then closes the browser session
/// (`clientGone` when the client went away, `hostExit` when stopped).
///
/// # Errors
/// Only when the transport fails before the session starts for a reason other than the client
/// leaving (which is a normal end).
pub async fn serve<T, E, A>(
    backend: Arc<dyn ToolBackend>,
    options: ServerOptions,
    transport: T,
    stop: impl Future<Output = ()>,
) -> anyhow::Result<ShutdownOutcome>
where
    T: IntoTransport<RoleServer, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let server = McpServer::new(backend, options);
    let cancel = CancellationToken::new();
    let stopped = CancellationToken::new();
    let run = async {
        let running = match server.clone().serve_with_ct(transport, cancel.clone()).await {
            Ok(running) => running,
            Err(
                rmcp::service::ServerInitializeError::ConnectionClosed(_)
                | rmcp::service::ServerInitializeError::Cancelled,
            ) => {
                return Ok(None);
            }
            Err(error) => return Err(anyhow::Error::new(error).context("MCP handshake failed")),
        };
        Ok(Some(running.waiting().await))
    };
    tokio::pin!(run);
    tokio::pin!(stop);
    let quit = tokio::select! {
        quit = &mut run => quit,
        () = &mut stop => {
            stopped.cancel();
            cancel.cancel();
            run.await
        }
    };
    let reason = if stopped.is_cancelled() { CloseReason::HostExit } else { CloseReason::ClientGone };
    match &quit {
        Ok(Some(Ok(QuitReason::JoinError(error)))) | Ok(Some(Err(error))) => {
            tracing::error!(%error, "MCP service task failed");
        }
        Ok(_) => {}
        Err(error) => tracing::error!(%error, "MCP server ended"),
    }
    let outcome = server.shutdown(reason).await;
    match &outcome {
        ShutdownOutcome::NoSession => tracing::info!(?reason, "MCP client gone; no browser session was open"),
        ShutdownOutcome::Closed(result) => {
            tracing::info!(
                ?reason,
                ok = result.ok,
                closed = result.closed.len(),
                kept = result.kept.len(),
                "browser session closed"
            )
        }
        ShutdownOutcome::Left(session) => {
            tracing::info!(?reason, %session, "the named session stays for the broker's disconnect grace")
        }
        ShutdownOutcome::Failed(error) => {
            tracing::warn!(?reason, code = %error.code, message = %error.message, "closing the browser session failed; the broker's grace period cleans up")
        }
    }
    quit.map(|_| outcome)
}

/// `browserd mcp`: serves MCP on stdin/stdout until stdin closes (or SIGTERM/SIGINT), then closes the
/// browser session. Logs go to stderr; stdout carries only MCP messages.
///
/// # Errors
/// As [`serve`].
pub async fn serve_stdio<B: ToolBackend>(backend: B, options: ServerOptions) -> anyhow::Result<()> {
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    let transport = stdin_limit::LimitedTransport::new(stdin, stdout, stdin_limit::MAX_LINE);
    serve(Arc::new(backend), options, transport, termination()).await.map(|_| ())
}

/// `browserd mcp` as the binary runs it: the user's broker (started on demand), options from `args` and the
/// process environment, MCP on stdio.
///
/// # Errors
/// As [`serve`].
pub async fn run(args: &McpArgs) -> anyhow::Result<()> {
    let options = args.options(|name| std::env::var(name).ok());
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let browser = args.browser.settings(&cwd)?;
    tracing::info!(
        host = ?options.identity.host,
        host_session_id = %options.identity.host_session_id,
        advanced = options.advanced,
        vision = ?args.vision,
        "browserd mcp serving on stdio"
    );
    let backend = BrokerBackend::from_env(options.advanced)
        .with_policy(args.session_policy())
        .with_vision(args.vision.into())
        .with_image_limits(args.image_limits())
        .with_browser(browser);
    serve_stdio(backend, options).await
}

/// Resolves on SIGTERM or SIGINT (on other platforms: Ctrl-C).
async fn termination() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => std::future::pending().await,
        }
    }
    #[cfg(not(unix))]
    {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        mcp: McpArgs,
    }

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn defaults_serve_the_core_tier_without_output_schemas_and_with_files() {
        let args = Cli::try_parse_from(["x"]).unwrap().mcp;
        let options = args.options(env(&[("HOME", "/home/u"), ("CLAUDE_CODE_SESSION_ID", "cc-1")]));
        assert!(!options.advanced && !options.output_schemas);
        let opted = Cli::try_parse_from(["x", "--output-schemas"]).unwrap().mcp.options(env(&[]));
        assert!(opted.output_schemas);
        assert!(Cli::try_parse_from(["x", "--output-schemas", "--no-output-schemas"]).is_err());
        assert_eq!(options.screenshot_dir, Some(PathBuf::from("/home/u/.cache/browserd/screenshots")));
        assert_eq!((options.identity.host, options.identity.host_session_id.as_str()), (HostKind::ClaudeCode, "cc-1"));
        assert_eq!(options.heartbeat, Duration::from_secs(5));
    }

    #[test]
    fn browser_flags_become_session_settings() {
        let none = Cli::try_parse_from(["x"]).unwrap().mcp.browser.settings(std::path::Path::new("/w")).unwrap();
        assert_eq!(none, None, "no flag asks for nothing");
        let args = Cli::try_parse_from(["x", "--headed", "--isolated", "--viewport", "800x600"]).unwrap().mcp;
        let s = args.browser.settings(std::path::Path::new("/w")).unwrap().unwrap();
        assert_eq!(
            (s.headless, s.isolated, s.viewport.map(|v| v.to_string())),
            (Some(false), Some(true), Some("800x600".into()))
        );
        let dir = Cli::try_parse_from(["x", "--user-data-dir", "prof"]).unwrap().mcp.browser;
        assert_eq!(
            dir.settings(std::path::Path::new("/w")).unwrap().unwrap().user_data_dir.as_deref(),
            Some("/w/prof")
        );
        assert!(Cli::try_parse_from(["x", "--headed", "--headless"]).is_err());
        assert!(Cli::try_parse_from(["x", "--isolated", "--user-data-dir", "/p"]).is_err());
        assert!(Cli::try_parse_from(["x", "--viewport", "big"]).is_err());
        let missing = Cli::try_parse_from(["x", "--executable-path", "/no/such/chromium"]).unwrap().mcp.browser;
        assert!(missing.settings(std::path::Path::new("/")).unwrap_err().to_string().contains("no such file"));
    }

    #[test]
    fn flags_override_detection() {
        let args = Cli::try_parse_from([
            "x",
            "--advanced",
            "--host",
            "codex",
            "--host-session-id",
            "th-7",
            "--no-screenshot-files",
            "--no-output-schemas",
            "--progress-interval-ms",
            "250",
        ])
        .unwrap()
        .mcp;
        let options = args.options(env(&[("XDG_CACHE_HOME", "/c")]));
        assert!(options.advanced && !options.output_schemas);
        assert_eq!(options.screenshot_dir, None);
        assert_eq!(
            options.identity,
            HostIdentity { host: HostKind::Codex, host_session_id: "th-7".into(), from_host: true }
        );
        assert_eq!(options.heartbeat, Duration::from_millis(250));
        assert!(Cli::try_parse_from(["x", "--progress-interval-ms", "5"]).is_err(), "too small an interval is refused");
    }
}
