//! browserd's broker daemon, its client library, the CLI subcommands and the host hooks.
//!
//! # Layout
//! - [`server`]: the broker ([`server::Broker`]): socket, `hello`, sessions and re-attachment, disconnect grace,
//!   dispatch of every JSON-RPC method to the core runtime, status, graceful and idle shutdown.
//! - [`limits`]: back-pressure (one running operation per tab, bounded queue, global cap) and the stop gate.
//! - [`to_proto`]: the one place core types become wire types.
//! - [`lazy`]: the browser chosen at first use: a paired extension, the remote endpoint or a managed Chromium.
//! - [`extension`]: the extension browser ([`extension::ExtensionProvider`]) over a paired `ExtensionLink`.
//! - [`client`]: [`client::Client`], used by the CLI, the MCP server and the hooks.
//! - [`cli`]: the clap subcommands ([`cli::Command`]) and [`cli::run`].
//! - [`hooks`]: Codex / Claude Code hook input parsing and the hook runner.
//! - [`config`]: defaults, TOML file, environment overrides, with sources.
//! - [`dedup`]: the durable journal (`browserd-journal`): `tool.call` de-duplication by `callId`, the recovery-record
//!   mirror (settled at the next start), and the audit metadata ring.
//! - [`journal_gate`]: whether the journal works; what must be recorded is refused (`JOURNAL_UNAVAILABLE`) when not.
//! - [`request_ids`]: `browser_act`'s `requestId`, per host session, bounded (LRU + TTL).

pub mod advanced;
pub mod batch;
pub mod cli;
pub mod client;
pub mod config;
pub mod dedup;
pub mod extension;
pub mod hooks;
pub mod journal_gate;
pub mod lazy;
pub mod limits;
pub mod request_ids;
pub mod server;
pub mod to_proto;

pub use client::{Client, ClientError};
pub use server::Broker;
