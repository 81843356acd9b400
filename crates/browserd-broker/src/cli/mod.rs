//! The `browserd` subcommands this crate provides: `broker run|stop|status`, every model tool (`open`, `observe`,
//! `act`, `batch`, `close`, `mark`, `cleanup`, `list`, `claim`, `handoff`, `reset`), the advanced tier (`eval`,
//! `console`, `network`, `cdp`; `activate --advanced`), `status`, `stop`, `config`, `diagnose` and
//! `hook turn-end|session-end`.
//! The binary flattens [`Command`] into its own clap enum and calls [`run`].
//!
//! Output is one line per item, or the protocol's JSON with `--json`. Errors go to stderr as `error: CODE: message`
//! plus the next step, with exit status 1. Every call has a deadline (`BROWSERD_CLI_TIMEOUT_MS`, else two minutes or
//! the command's own wait plus half a minute; `hello` at most 10 s): a broker that never answers ends the command
//! with a typed error.
//!
//! # Layout
//! - `args`: the clap types ([`Command`], [`Common`], …); parsing only.
//! - `execute`: a tool subcommand → its tool call on the broker ([`execute`]); `session`: the CLI session.
//! - `render`: the text of each tool's result, one small table ([`tool_text`]) over per-family files, and
//!   [`status_text`]; `screenshot`: the images of a text result, written to private files the text names.
//! - `broker`, `config`, `hook`: `browserd broker …`, `browserd config`, `browserd hook …`.

use std::io::IsTerminal;

use browserd_protocol::ErrorData;

mod approve;
mod args;
mod broker;
mod config;
mod diagnose;
mod execute;
mod hook;
mod render;
mod screenshot;
mod session;
#[cfg(test)]
mod tests;

pub use args::{BrokerAction, Command, Common, HookArg, HostArg, MarkArg};
pub use execute::{Output, execute};
pub use render::{status_text, tool_text};
pub use session::{cli_session, cli_session_with, session_name};

/// Runs a subcommand; returns the process exit status.
///
/// # Errors
/// Only for failures outside the command's own reporting (e.g. the tokio runtime); command errors are printed and
/// turned into exit status 1.
pub async fn run(cmd: Command) -> anyhow::Result<i32> {
    match cmd {
        Command::Broker { action } => broker::run(action).await,
        Command::Config { json } => Ok(config::print(json)),
        Command::Diagnose { write, json } => Ok(diagnose::run(write.as_deref(), json).await),
        Command::Approve { approval } => Ok(approve::run(approval).await),
        Command::Hook { event, notify, host, timeout_ms } => Ok(hook::run(event, notify, host, timeout_ms).await),
        other => Ok(execute::run_tool_command(other).await),
    }
}

/// A broker error on stderr: the code, the message, the next step and the hints it carries, in the CLI's words.
pub(crate) fn report_error(e: &ErrorData) {
    eprintln!("error: {}: {}", e.code, cli_words(&e.message));
    eprintln!("  next: {}", cli_words(&e.next_step));
    if let Some(holder) = &e.holder_session {
        eprintln!("  held by session: {holder}");
    }
    if let Some(ms) = e.retry_after_ms {
        eprintln!("  retry after: {ms} ms");
    }
}

/// The CLI command for each model tool, as hints name them.
const CLI_FOR_TOOL: &[(&str, &str)] = &[
    ("browser_mark_deliverable", "browserd mark <tab> deliverable"),
    ("browser_mark_handoff", "browserd mark <tab> handoff"),
    ("browser_context_reset", "browserd reset"),
    ("browser_evaluate", "browserd eval"),
    ("browser_observe", "browserd observe"),
    ("browser_cleanup", "browserd cleanup"),
    ("browser_console", "browserd console"),
    ("browser_network", "browserd network"),
    ("browser_handoff", "browserd handoff"),
    ("browser_status", "browserd status"),
    ("browser_claim", "browserd claim"),
    ("browser_batch", "browserd batch"),
    ("browser_close", "browserd close"),
    ("browser_list", "browserd list"),
    ("browser_open", "browserd open"),
    ("browser_act", "browserd act"),
    ("browser_cdp", "browserd cdp"),
];

/// A hint written for a model (tool names: "Call browser_list") in the words of the CLI ("Run `browserd list`").
pub(crate) fn cli_words(text: &str) -> String {
    let mut out = text.to_owned();
    for (call, run) in [("Call ", "Run "), ("call ", "run ")] {
        for tick in ["", "`"] {
            out = out.replace(&format!("{call}{tick}browser_"), &format!("{run}{tick}browser_"));
        }
    }
    // Longest names first, so `browser_mark_handoff` is not read as `browser_handoff`'s prefix.
    for (tool, command) in CLI_FOR_TOOL {
        out = out.replace(&format!("`{tool}`"), &format!("`{command}`")).replace(tool, &format!("`{command}`"));
    }
    out
}

/// Logs to stderr, filtered by `BROWSERD_LOG` (else `to_stderr_default`).
pub(crate) fn init_logging(to_stderr_default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("BROWSERD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(to_stderr_default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}
