//! A tool subcommand run against the broker: its arguments become one tool call of the CLI session, its result the
//! text [`super::render`] makes of it (or the JSON).

use std::io::Read;

use browserd_protocol::hello::ComponentRole;
use browserd_protocol::lifecycle::StatusParams;
use browserd_protocol::tools::{
    BROWSER_BATCH, BROWSER_CDP, BROWSER_CLAIM, BROWSER_CLEANUP, BROWSER_CLOSE, BROWSER_CONSOLE, BROWSER_CONTEXT_RESET,
    BROWSER_EVALUATE, BROWSER_HANDOFF, BROWSER_LIST, BROWSER_MARK_DELIVERABLE, BROWSER_MARK_HANDOFF, BROWSER_NETWORK,
    BROWSER_OBSERVE, BROWSER_OPEN,
};
use browserd_protocol::{ErrorData, TabId};
use serde_json::{Value, json};

use super::args::{Command, Common, MarkArg};
use super::render::{status_text, to_json, tool_text};
use super::report_error;
use super::session::{cli_session_with, session_name};
use crate::client::{Client, ClientError, ConnectOptions};
use crate::server::SelectTabParams;

fn common_of(cmd: &Command) -> Common {
    match cmd {
        Command::Open { common, .. }
        | Command::Observe { common, .. }
        | Command::Act { common, .. }
        | Command::Batch { common, .. }
        | Command::Close { common, .. }
        | Command::Mark { common, .. }
        | Command::Cleanup { common, .. }
        | Command::List { common }
        | Command::Claim { common, .. }
        | Command::Handoff { common, .. }
        | Command::Reset { common }
        | Command::Status { common }
        | Command::Stop { common }
        | Command::Activate { common, .. }
        | Command::Eval { common, .. }
        | Command::Console { common, .. }
        | Command::Network { common, .. }
        | Command::Cdp { common, .. } => common.clone(),
        _ => Common { session: None, json: false },
    }
}

pub(super) async fn run_tool_command(cmd: Command) -> i32 {
    let common = common_of(&cmd);
    let options = ConnectOptions {
        timeout: Some(call_deadline(&cmd, std::env::var(DEADLINE_ENV).ok())),
        ..ConnectOptions::new(ComponentRole::Cli)
    };
    let client = match Client::connect(&options).await {
        Ok(c) => c,
        Err(e) => {
            report_error(&e.into_error_data());
            return 1;
        }
    };
    match execute(&client, cmd, &common).await {
        Ok(out) => {
            if !out.text.is_empty() {
                println!("{}", out.text);
            }
            i32::from(!out.ok)
        }
        Err(e) => {
            if common.json {
                println!("{}", json!({"error": e}));
            }
            report_error(&e);
            1
        }
    }
}

/// Overrides the CLI's per-call deadline (milliseconds).
pub(super) const DEADLINE_ENV: &str = "BROWSERD_CLI_TIMEOUT_MS";

/// The CLI's default per-call deadline: well past any call's own deadline (an action's, a batch's).
const DEFAULT_DEADLINE_MS: u64 = 120_000;

/// How long the CLI waits for the broker's answer to `cmd`: `BROWSERD_CLI_TIMEOUT_MS` when set, else two minutes or
/// the command's own wait (`--timeout-ms`, a handoff's five minutes) plus half a minute, whichever is longer. A
/// broker that never answers then ends the command with a typed error instead of a hang.
pub(super) fn call_deadline(cmd: &Command, env: Option<String>) -> std::time::Duration {
    if let Some(ms) = env.and_then(|v| v.trim().parse::<u64>().ok()).filter(|ms| *ms > 0) {
        return std::time::Duration::from_millis(ms);
    }
    let own = match cmd {
        Command::Handoff { until: Some(_), timeout_ms, .. } => Some(timeout_ms.unwrap_or(300_000)),
        Command::Act { timeout_ms, .. } => *timeout_ms,
        _ => None,
    };
    let ms = own.map_or(DEFAULT_DEADLINE_MS, |own| DEFAULT_DEADLINE_MS.max(own.saturating_add(30_000)));
    std::time::Duration::from_millis(ms)
}

fn read_stdin(what: &str) -> Result<String, ErrorData> {
    let mut buf = String::new();
    std::io::stdin()
        .read_to_string(&mut buf)
        .map_err(|e| ErrorData::invalid_params(format!("cannot read {what} from stdin: {e}")))?;
    Ok(buf)
}

fn parse_json(text: &str, what: &str) -> Result<Value, ErrorData> {
    let text = if text == "-" { read_stdin(what)? } else { text.to_owned() };
    serde_json::from_str(&text).map_err(|e| ErrorData::invalid_params(format!("{what} is not valid JSON: {e}")))
}

/// What a tool subcommand printed and whether it did what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// Text (or JSON) to print.
    pub text: String,
    /// False when the result says it did not (an action that failed, a cleanup with failures): exit status 1.
    pub ok: bool,
}

impl Output {
    fn done(text: String) -> Self {
        Self { text, ok: true }
    }
}

/// The one rule of every front end (MCP `isError`, this exit status, the adapters): [`browserd_protocol::verdict`].
fn result_ok(v: &Value) -> bool {
    browserd_protocol::verdict::shortfall(v).is_none()
}

/// Runs one tool subcommand on `client`; returns the text (or JSON) to print.
///
/// # Errors
/// The broker's error.
pub async fn execute(client: &Client, cmd: Command, common: &Common) -> Result<Output, ErrorData> {
    let json_out = common.json;
    if let Command::Status { .. } = cmd {
        let params = StatusParams::default();
        let status = client.call(&params).await.map_err(ClientError::into_error_data)?;
        return Ok(Output::done(if json_out { to_json(&status) } else { status_text(&status) }));
    }
    if let Command::Stop { .. } = cmd {
        let r = client.stop_gate().await.map_err(ClientError::into_error_data)?;
        return Ok(Output::done(if json_out {
            to_json(&r)
        } else {
            format!(
                "stopped ({}): {} queued and {} running request(s) cancelled, {} write lease(s) released; observe \
                 again before acting",
                r.code, r.queued_cancelled, r.running_cancelled, r.leases_released
            )
        }));
    }
    let name = session_name(common.session.as_deref());
    let advanced = match &cmd {
        Command::Activate { advanced, .. } => *advanced,
        Command::Eval { .. } | Command::Console { .. } | Command::Network { .. } | Command::Cdp { .. } => true,
        _ => false,
    };
    let session = cli_session_with(client, &name, advanced).await.map_err(ClientError::into_error_data)?;
    if let Command::Activate { .. } = cmd {
        let text = if advanced { "browser tools active, advanced tier on" } else { "browser tools active" };
        return Ok(Output::done(if json_out {
            json!({"session": session, "advanced": advanced}).to_string()
        } else {
            text.to_owned()
        }));
    }
    let select = |tab: Option<u64>| {
        let session = session.clone();
        async move {
            if let Some(tab) = tab {
                client
                    .select_tab(&SelectTabParams { session, tab: TabId(tab) })
                    .await
                    .map_err(ClientError::into_error_data)?;
            }
            Ok::<(), ErrorData>(())
        }
    };
    let (tool, args) = match cmd {
        Command::Open { url, background, observe, .. } => {
            (BROWSER_OPEN, json!({"url": url, "background": background, "observe": observe}))
        }
        Command::Observe { tab, screenshot, within, since, max_nodes, offset, limit, allow_stale, .. } => {
            select(tab).await?;
            let read = ObserveRead { within, since, max_nodes, offset, limit, allow_stale };
            (BROWSER_OBSERVE, observe_args(screenshot, read))
        }
        Command::Act { action, target, value, tab, args, timeout_ms, observe, .. } => {
            select(tab).await?;
            let args = match args {
                Some(raw) => parse_json(&raw, "--args")?,
                None => act_args(&action, target, value, timeout_ms, observe),
            };
            ("browser_act", args)
        }
        Command::Batch { steps, tab, .. } => {
            select(tab).await?;
            (BROWSER_BATCH, json!({"steps": parse_json(&steps, "the steps")?}))
        }
        Command::Close { tabs, group, .. } => {
            let mut args = json!({"tabs": tabs});
            if let Some(g) = group {
                args["group"] = json!(g);
            }
            (BROWSER_CLOSE, args)
        }
        Command::Mark { tab, kind, note, .. } => {
            let tool = if kind == MarkArg::Deliverable { BROWSER_MARK_DELIVERABLE } else { BROWSER_MARK_HANDOFF };
            let mut args = json!({"tab": tab});
            if let Some(n) = note {
                args["note"] = json!(n);
            }
            (tool, args)
        }
        Command::Cleanup { keep, close, release, .. } => {
            (BROWSER_CLEANUP, json!({"keep": keep, "close": close, "release": release}))
        }
        Command::List { .. } => (BROWSER_LIST, json!({})),
        Command::Claim { tab, observe, resume, .. } => {
            (BROWSER_CLAIM, json!({"tab": tab, "observe": observe, "resume": resume}))
        }
        Command::Handoff { tab, message, until, timeout_ms, .. } => {
            if until.is_some() {
                let secs = timeout_ms.unwrap_or(300_000) / 1000;
                eprintln!(
                    "browserd: tab {tab} is the user's now; waiting up to {secs} s for the --until criteria (Ctrl-C stops waiting, the page stays)"
                );
            }
            (BROWSER_HANDOFF, handoff_args(tab, &message, until.as_deref(), timeout_ms)?)
        }
        Command::Reset { .. } => (BROWSER_CONTEXT_RESET, json!({})),
        Command::Eval { expression, tab, no_await, .. } => {
            let expression = if expression == "-" { read_stdin("the expression")? } else { expression };
            (BROWSER_EVALUATE, json!({"tab": tab, "expression": expression, "awaitPromise": !no_await}))
        }
        Command::Console { tab, since, level, limit, .. } => {
            let mut args = json!({"tab": tab});
            if let Some(s) = since {
                args["since"] = json!(s);
            }
            if let Some(l) = level {
                args["level"] = json!(l);
            }
            if let Some(n) = limit {
                args["limit"] = json!(n);
            }
            (BROWSER_CONSOLE, args)
        }
        Command::Network { tab, since, url_contains, failed_only, include_query, limit, .. } => {
            let mut args = json!({"tab": tab, "failedOnly": failed_only, "includeQuery": include_query});
            if let Some(s) = since {
                args["since"] = json!(s);
            }
            if let Some(u) = url_contains {
                args["urlContains"] = json!(u);
            }
            if let Some(n) = limit {
                args["limit"] = json!(n);
            }
            (BROWSER_NETWORK, args)
        }
        Command::Cdp { method, params, tab, .. } => {
            let mut args = json!({"tab": tab, "method": method});
            if let Some(p) = params {
                args["params"] = parse_json(&p, "the params")?;
            }
            (BROWSER_CDP, args)
        }
        _ => return Err(ErrorData::invalid_params("not a tool subcommand")),
    };
    let mut result = client.tool(&session, tool, args).await.map_err(ClientError::into_error_data)?;
    let ok = result_ok(&result);
    if json_out {
        return Ok(Output { text: to_json(&result), ok });
    }
    // Text cannot carry an image: each one goes to a private file, and the text names it.
    super::screenshot::save_all(&mut result, &crate::retention::screenshot_dir(&|name| std::env::var(name).ok()));
    Ok(Output { text: tool_text(tool, &result), ok })
}

pub(super) fn act_args(
    action: &str,
    target: Option<String>,
    value: Option<String>,
    timeout: Option<u64>,
    observe: bool,
) -> Value {
    let mut args = json!({"action": action});
    // Actions whose one argument is a value, not a target.
    let value_only = matches!(action, "navigate" | "press" | "wait") && value.is_none();
    match (target, value) {
        (Some(t), _) if value_only => args["value"] = json!(t),
        (Some(t), v) => {
            args["target"] = json!(t);
            if let Some(v) = v {
                args["value"] = json!(v);
            }
        }
        (None, Some(v)) => args["value"] = json!(v),
        (None, None) => {}
    }
    if let Some(ms) = timeout {
        args["timeoutMs"] = json!(ms);
    }
    if observe {
        args["observe"] = json!(true);
    }
    args
}

/// What `browserd observe` asks for beyond the screenshot.
#[derive(Debug, Default)]
pub(super) struct ObserveRead {
    pub(super) within: Option<String>,
    pub(super) since: Option<String>,
    pub(super) max_nodes: Option<u32>,
    pub(super) offset: Option<u32>,
    pub(super) limit: Option<u32>,
    pub(super) allow_stale: bool,
}

/// The `browser_observe` arguments of `browserd observe`.
pub(super) fn observe_args(screenshot: bool, read: ObserveRead) -> Value {
    let mut args = json!({"screenshot": screenshot});
    if let Some(w) = read.within {
        args["within"] = json!(w);
    }
    if let Some(s) = read.since {
        args["since"] = json!(s);
    }
    if let Some(n) = read.max_nodes {
        args["maxNodes"] = json!(n);
    }
    if read.offset.is_some() || read.limit.is_some() {
        let mut window = json!({"offset": read.offset.unwrap_or(0)});
        if let Some(l) = read.limit {
            window["limit"] = json!(l);
        }
        args["window"] = window;
    }
    if read.allow_stale {
        args["read"] = json!("allowStale");
    }
    args
}

/// The `browser_handoff` arguments of `browserd handoff`; `until` is a JSON list of expectations.
pub(super) fn handoff_args(
    tab: u64,
    message: &str,
    until: Option<&str>,
    timeout_ms: Option<u64>,
) -> Result<Value, ErrorData> {
    let mut args = json!({"tab": tab, "message": message});
    if let Some(raw) = until {
        args["until"] = parse_json(raw, "--until")?;
    }
    if let Some(ms) = timeout_ms {
        args["timeoutMs"] = json!(ms);
    }
    Ok(args)
}
