//! browserd's broker daemon, its client library, the CLI subcommands and the host hooks.
//!
//! # Layout
//! - [`server`]: the broker ([`server::Broker`]): socket, accept loop, connections (`hello`, `client.disconnect`,
//!   `broker.cancel`), graceful and idle shutdown.
//! - `dispatch`: the method table (one line per JSON-RPC method) and the tool table (one line per tool).
//! - `sessions`: the session registry: re-attachment, disconnect grace, current tab, the session and turn methods.
//! - `toolset`: tool activation, the advanced tier's activation and the `tools.changed` notification.
//! - `tools`: one file per model tool (or small family), each with one `call`; its module doc says how to add one.
//! - `status`, `stop`: the `status` method; Stop (`broker.stopGate`).
//! - `answer_limit`: the typed error sent in place of an answer over the 16 MiB frame limit.
//! - `journal`, `reconcile`: the broker's use of the durable journal (audit, mirrors, `callId` de-duplication); a
//!   previous broker's cleanup finished on a remote endpoint.
//! - [`claim`]: one broker per state directory and managed profile; a second one refuses to start, naming the
//!   first.
//! - [`limits`]: back-pressure (one running operation per tab, bounded queue, global cap) and the stop gate.
//! - [`to_proto`]: the one place core types become wire types.
//! - [`browser_settings`]: a session's browser settings (`browserd mcp --headed …`): what they mean for a launch.
//! - [`browsers`]: the managed browsers, one per distinct set of browser-wide settings; routes provider calls.
//! - [`lazy`]: the browser chosen at first use: a paired extension, the remote endpoint or a managed Chromium.
//! - [`extension`]: the extension browser ([`extension::ExtensionProvider`]) over a paired `ExtensionLink`.
//! - [`client`]: [`client::Client`], used by the CLI, the MCP server and the hooks.
//! - [`cli`]: the clap subcommands ([`cli::Command`]) and [`cli::run`].
//! - [`hooks`]: Codex / Claude Code hook input parsing and the hook runner.
//! - [`config`]: defaults, TOML file, environment overrides, with sources.
//! - [`dedup`]: the durable journal (`browserd-journal`): `tool.call` de-duplication by `callId`, the recovery-record
//!   mirror (settled at the next start), and the audit metadata ring.
//! - [`journal_gate`]: whether the journal works; what must be recorded is refused (`JOURNAL_UNAVAILABLE`) when not.
//! - [`policy`]: the policy checks: URL schemes (`policy::schemes`), the `[files]` section (`policy::files`), the site
//!   policy (origin patterns, `[policy]`, a session's lists) and where it is enforced, action classes and approvals.
//! - [`retention`]: the screenshot and spill files' retention (15 min / 100 MB) and the broker's sweeper.
//! - [`screenshot_files`]: which objects of a result are screenshots, and writing one to a private file (the MCP
//!   server's and the CLI's).
//! - [`redact`]: what `browserd diagnose` (`cli::diagnose`) takes out: URL queries, page titles, every log line but
//!   the broker's own events.
//! - [`request_ids`]: `browser_act`'s `requestId`, per host session, bounded (LRU + TTL).

pub mod advanced;
mod answer_limit;
pub mod batch;
pub mod browser_settings;
pub mod browsers;
pub mod claim;
pub mod cli;
pub mod client;
pub mod config;
pub mod dedup;
mod dispatch;
pub mod extension;
pub mod hooks;
mod journal;
pub mod journal_gate;
pub mod lazy;
pub mod limits;
pub mod policy;
mod reconcile;
pub mod redact;
pub mod request_ids;
pub mod retention;
pub mod risk;
pub mod screenshot_files;
pub mod server;
mod sessions;
mod status;
mod stop;
pub mod to_proto;
mod tools;
mod toolset;
mod vision;

pub use client::{Client, ClientError};
pub use server::Broker;
