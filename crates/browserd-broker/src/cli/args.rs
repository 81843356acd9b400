//! The clap types of this crate's subcommands: what each accepts, nothing about running it.

use clap::{Args, Subcommand, ValueEnum};

/// Options every tool subcommand takes.
#[derive(Debug, Clone, Args)]
pub struct Common {
    /// Browser session name (default: `$BROWSERD_SESSION`, else one per parent shell).
    #[arg(long, global = true)]
    pub session: Option<String>,
    /// Print the protocol's JSON result instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

/// `browserd broker …`.
#[derive(Debug, Clone, Subcommand)]
pub enum BrokerAction {
    /// Run the broker in the foreground (clients start it on demand with `--daemon`).
    Run {
        /// Started on demand by a client: exit quietly if another broker already runs.
        #[arg(long)]
        daemon: bool,
    },
    /// Ask the running broker to shut down gracefully (sessions are disposed, the managed browser closed).
    Stop,
    /// Show the broker's status.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Which mark `browserd mark` sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MarkArg {
    /// A result for the user.
    Deliverable,
    /// Waiting for the user to continue.
    Handoff,
}

/// Which hook ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HookArg {
    /// The host's turn ended (`Stop`, Codex `notify`).
    TurnEnd,
    /// The host session ended (`SessionEnd`).
    SessionEnd,
}

/// The host a hook runs for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HostArg {
    /// Codex.
    Codex,
    /// Claude Code.
    ClaudeCode,
    /// Another MCP host.
    Mcp,
}

/// The subcommands provided by this crate.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// The broker daemon: `run`, `stop`, `status`.
    Broker {
        /// What to do.
        #[command(subcommand)]
        action: BrokerAction,
    },
    /// Open a URL in a new tab of this session (it becomes the current tab).
    Open {
        /// URL to load.
        url: String,
        /// Do not focus it.
        #[arg(long)]
        background: bool,
        /// Also print an observation.
        #[arg(long)]
        observe: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Read the current tab (or `--tab`): URL, title, operable elements with refs, text.
    Observe {
        /// Make this tab current first.
        #[arg(long)]
        tab: Option<u64>,
        /// Also capture a screenshot: saved to a private file; its path, format and size are printed (--json: the
        /// image as base64).
        #[arg(long)]
        screenshot: bool,
        /// Only inside this ref.
        #[arg(long)]
        within: Option<String>,
        /// Only changes since this cursor.
        #[arg(long)]
        since: Option<String>,
        /// Most operable nodes listed.
        #[arg(long)]
        max_nodes: Option<u32>,
        /// Read a window of the table or list named by `--within`: skip this many items.
        #[arg(long, requires = "within")]
        offset: Option<u32>,
        /// Read a window of the table or list named by `--within`: at most this many items (default 50).
        #[arg(long, requires = "within")]
        limit: Option<u32>,
        /// Do not wait for a write running on the tab: answer at once from the last observation, marked stale.
        #[arg(long)]
        allow_stale: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Do one action on the current tab (or `--tab`): `act click e12`, `act fill e3 "text"`, `act press Enter`.
    Act {
        /// click, dblclick, hover, fill, type, press, select, check, uncheck, scroll, navigate, back, forward,
        /// reload, upload, wait, drag, dialog.
        action: String,
        /// Target ref (for press/navigate without a target, give the value here).
        target: Option<String>,
        /// Text, key chord, option, URL or path.
        value: Option<String>,
        /// Make this tab current first.
        #[arg(long)]
        tab: Option<u64>,
        /// Full `browser_act` arguments as JSON (overrides the positional arguments).
        #[arg(long)]
        args: Option<String>,
        /// Deadline in milliseconds.
        #[arg(long)]
        timeout_ms: Option<u64>,
        /// Also print a fresh observation.
        #[arg(long)]
        observe: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Run up to 8 actions on the current tab: a JSON array of `browser_act` arguments (or `-` for stdin).
    Batch {
        /// The steps as JSON.
        steps: String,
        /// Make this tab current first.
        #[arg(long)]
        tab: Option<u64>,
        #[command(flatten)]
        common: Common,
    },
    /// Close tabs this session opened.
    Close {
        /// Tab ids.
        tabs: Vec<u64>,
        /// A tab group (only this session's tabs in it are closed).
        #[arg(long)]
        group: Option<u64>,
        #[command(flatten)]
        common: Common,
    },
    /// Keep a tab past this turn: `mark 4 deliverable` or `mark 4 handoff`.
    Mark {
        /// Tab id.
        tab: u64,
        /// Which mark.
        kind: MarkArg,
        /// Note for the user.
        #[arg(long)]
        note: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Finish the browser task: close scratch tabs, release claimed ones, keep marked ones.
    Cleanup {
        /// Keep these open.
        #[arg(long, value_delimiter = ',')]
        keep: Vec<u64>,
        /// Close these.
        #[arg(long, value_delimiter = ',')]
        close: Vec<u64>,
        /// Release these claimed tabs.
        #[arg(long, value_delimiter = ',')]
        release: Vec<u64>,
        #[command(flatten)]
        common: Common,
    },
    /// List tabs with ids and who owns them.
    List {
        #[command(flatten)]
        common: Common,
    },
    /// Take control of a user's tab (released, not closed, at cleanup).
    Claim {
        /// Tab id from `browserd list`.
        tab: u64,
        /// Also print an observation.
        #[arg(long)]
        observe: bool,
        /// Resume the tab after `browserd stop` (a new lease and a full observation; refs from before are void).
        #[arg(long)]
        resume: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Give a tab to the user with what they must do.
    Handoff {
        /// Tab id.
        tab: u64,
        /// What the user must do.
        message: String,
        /// Wait until these hold, as a JSON list of expectations, e.g. `[{"kind":"url","contains":"/done"}]`
        /// (kinds url, navigated, textPresent, appears, disappears).
        #[arg(long)]
        until: Option<String>,
        /// With `--until`: wait at most this long (default 300000, i.e. 5 minutes).
        #[arg(long, requires = "until")]
        timeout_ms: Option<u64>,
        #[command(flatten)]
        common: Common,
    },
    /// Reset the browser context: clean up, then hide the browser tools of this session.
    Reset {
        #[command(flatten)]
        common: Common,
    },
    /// Broker status: browsers, sessions, tabs, leases, recovery records, limits.
    Status {
        #[command(flatten)]
        common: Common,
    },
    /// The stop gate: cancel queued and running browser work on every controlled tab.
    Stop {
        #[command(flatten)]
        common: Common,
    },
    /// Activate this session's browser tools; with `--advanced` also the advanced tier (when the broker's
    /// `[advanced]` policy allows it).
    Activate {
        /// Also the advanced tier (evaluate, console, network, raw CDP).
        #[arg(long)]
        advanced: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Advanced tier: evaluate a JavaScript expression in a tab and print its JSON value (`-` reads it from stdin).
    Eval {
        /// The expression.
        expression: String,
        /// Tab id.
        #[arg(long)]
        tab: u64,
        /// Do not await a returned promise.
        #[arg(long)]
        no_await: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Advanced tier: a tab's console messages and uncaught exceptions since the tier was first used on it.
    Console {
        /// Tab id.
        #[arg(long)]
        tab: u64,
        /// Only entries after this cursor (printed by the previous call).
        #[arg(long)]
        since: Option<u64>,
        /// Lowest level: debug, log, info, warning, error.
        #[arg(long)]
        level: Option<String>,
        /// Most entries.
        #[arg(long)]
        limit: Option<u32>,
        #[command(flatten)]
        common: Common,
    },
    /// Advanced tier: a tab's network requests since the tier was first used on it (URLs without query strings).
    Network {
        /// Tab id.
        #[arg(long)]
        tab: u64,
        /// Only entries after this cursor (printed by the previous call).
        #[arg(long)]
        since: Option<u64>,
        /// Only URLs containing this.
        #[arg(long)]
        url_contains: Option<String>,
        /// Only failed requests (network error or status >= 400).
        #[arg(long)]
        failed_only: bool,
        /// Show query strings.
        #[arg(long)]
        include_query: bool,
        /// Most entries.
        #[arg(long)]
        limit: Option<u32>,
        #[command(flatten)]
        common: Common,
    },
    /// Advanced tier: send one raw DevTools protocol command to a tab (needs `raw_cdp = true` in `[advanced]`).
    Cdp {
        /// `Domain.method`, e.g. `Page.reload`.
        method: String,
        /// Params as a JSON object (`-` reads them from stdin).
        params: Option<String>,
        /// Tab id.
        #[arg(long)]
        tab: u64,
        #[command(flatten)]
        common: Common,
    },
    /// Approve the one action an APPROVAL_REQUIRED answer named (its `approval` id); the same call then runs once.
    Approve {
        /// The approval id (`details.approval`).
        approval: String,
    },
    /// Build a redacted diagnostics bundle (config with secrets hidden, status, recent audit metadata, versions,
    /// broker logs without URL queries, form values or page text); prints what it would hold and writes it only with
    /// `--write`.
    Diagnose {
        /// Write the bundle (one JSON file, mode 0600) to this path; a directory gets `browserd-diagnostics-<time>.json`.
        #[arg(long, visible_alias = "output", value_name = "PATH")]
        write: Option<std::path::PathBuf>,
        /// Print the whole bundle as JSON on stdout instead of the preview (still writes nothing without `--write`).
        #[arg(long)]
        json: bool,
    },
    /// Print the effective configuration and where each value came from.
    Config {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Host hooks (Codex / Claude Code); always exit 0 and print nothing on stdout.
    Hook {
        /// `turn-end` or `session-end`.
        event: HookArg,
        /// Codex `notify` JSON (Codex passes it as the last argument).
        notify: Option<String>,
        /// The host, when it cannot be told from the payload.
        #[arg(long)]
        host: Option<HostArg>,
        /// Give up after this many milliseconds.
        #[arg(long, default_value_t = 3000)]
        timeout_ms: u64,
    },
}
