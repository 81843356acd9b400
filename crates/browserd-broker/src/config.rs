//! The broker's configuration: defaults, the TOML file at `$XDG_CONFIG_HOME/browserd/config.toml`, and
//! `BROWSERD_*` environment overrides, with where each effective value came from (for `browserd config`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind", content = "name")]
pub enum Source {
    /// Built-in default.
    Default,
    /// The config file (its path).
    File(PathBuf),
    /// An environment variable (its name).
    Env(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(path) => write!(f, "file {}", path.display()),
            Source::Env(name) => write!(f, "env {name}"),
        }
    }
}

/// Why the configuration could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("cannot read the config file {path}: {source}; fix its permissions or remove it")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has a value of the wrong type.
    #[error("the config file {path} is invalid: {message}; fix it (see `browserd config` for the keys)")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// An environment variable holds an unusable value.
    #[error("the environment variable {name}={value:?} is invalid: {message}")]
    Env {
        /// Variable name.
        name: String,
        /// Its value.
        value: String,
        /// What is wrong.
        message: String,
    },
}

/// Which browser the broker uses (one per broker, chosen at the first browser use).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum BrowserChoice {
    /// A paired extension if there is one, else the remote endpoint if configured, else the managed Chromium.
    #[default]
    Auto,
    /// Always the managed Chromium.
    Managed,
    /// Always the remote endpoint (`remote_cdp` must be set).
    Remote,
    /// Always the user's browser through the extension (waits briefly for a pairing at first use).
    Extension,
}

impl BrowserChoice {
    /// The config spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            BrowserChoice::Auto => "auto",
            BrowserChoice::Managed => "managed",
            BrowserChoice::Remote => "remote",
            BrowserChoice::Extension => "extension",
        }
    }
}

/// The broker's effective configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerConfig {
    /// Exit after this long with no client connected and nothing owned (0: never).
    pub idle_exit_secs: u64,
    /// After a client disconnects, how long its sessions wait for a re-attach before disposal.
    pub disconnect_grace_secs: u64,
    /// Which browser to use: `auto`, `managed`, `remote` or `extension`.
    pub browser: BrowserChoice,
    /// Listen for the browserd extension's native host at `<runtime dir>/extension.sock`.
    pub extension_endpoint: bool,
    /// A remote DevTools endpoint or browser grid (`ws://`, `wss://`, `http://` or `https://`, path and query kept,
    /// e.g. `ws://grid:3000/chromium?token=…`) instead of a managed Chromium. Shown redacted (no query, no userinfo).
    #[serde(serialize_with = "serialize_redacted_url")]
    pub remote_cdp: Option<String>,
    /// The `Authorization` header sent to the remote endpoint (e.g. `Bearer …`). Never shown.
    #[serde(serialize_with = "serialize_secret")]
    pub remote_authorization: Option<String>,
    /// How long connecting to the remote endpoint may take (discovery + WebSocket + first answer).
    pub remote_connect_timeout_ms: u64,
    /// The first wait before retrying a lost browser connection (managed: relaunch; remote: reconnect); doubled
    /// after each failed attempt up to `reconnect_backoff_max_ms`.
    pub reconnect_backoff_ms: u64,
    /// The longest wait between reconnect attempts.
    pub reconnect_backoff_max_ms: u64,
    /// The browser executable of the managed Chromium (default: auto-detected).
    pub chromium_path: Option<PathBuf>,
    /// Run the managed Chromium headless.
    pub headless: bool,
    /// The managed Chromium's profile directory (default `$XDG_STATE_HOME/browserd/profile`).
    pub profile_dir: Option<PathBuf>,
    /// Extra Chromium command-line flags, space separated.
    pub chromium_args: Vec<String>,
    /// How many managed browsers the broker runs at once, its default one included (default 4): a session whose
    /// browser-wide settings (`browserd mcp --headed`, `--executable-path`, `--user-data-dir`) the default browser does
    /// not have gets a browser of its own; one more than this is refused with `TOO_MANY_BROWSERS`.
    pub max_browsers: u32,
    /// Controlled tabs per task/session (BRIEF §7: 3).
    pub max_tabs_per_task: u32,
    /// Running actions per tab (BRIEF §7: 1).
    pub max_running_actions_per_tab: u32,
    /// Requests waiting for a tab or a page-operation slot (BRIEF §7: 16).
    pub max_queued_requests: u32,
    /// Page operations running at once, all sessions (BRIEF §7: 4).
    pub max_concurrent_page_ops: u32,
    /// How long a request waits for a free page-operation slot before `TOO_MANY_CONCURRENT_OPS`.
    pub concurrency_wait_ms: u64,
    /// Deadline of ordinary browser calls.
    pub op_timeout_ms: u64,
    /// A connection that sends no `hello` within this long is closed (it would hold one of the broker's connection
    /// slots forever).
    pub hello_timeout_ms: u64,
    /// The time budget of one `browser_batch` (BRIEF §6: 30 s): the step running at the deadline is cut short and
    /// the rest are not started.
    pub batch_deadline_ms: u64,
    /// The advanced tool tier (`[advanced]`): off by default.
    pub advanced: AdvancedConfig,
    /// Local files (`[files]`): `file:` roots, upload roots, the download directory.
    pub files: crate::policy::files::FilesConfig,
    /// Extra URL schemes (`[schemes]`): none by default (http, https and about:blank only).
    pub schemes: crate::policy::schemes::SchemesConfig,
    /// How long and how much of the screenshot and spill files is kept (`[retention]`: 15 min, 100 MB).
    pub retention: crate::retention::RetentionConfig,
    /// The site and action policy (`[policy]`).
    pub policy: PolicyConfig,
}

/// The `[policy]` section: origin patterns allowed and denied (syntax: `crate::policy::sites`), whether the
/// real-profile default deny list applies, and which action classes need the user's approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyConfig {
    /// When not empty, the only origins any session may use.
    pub allow: Vec<String>,
    /// Origins no session may use (wins over every allow list).
    pub deny: Vec<String>,
    /// On the user's own browser (the extension), deny password managers, banking logins and SSO admin consoles
    /// unless allowed by name.
    pub real_profile_defaults: bool,
    /// Action classes that need the user's approval (`read`, `navigate`, `input`, `submit`, `highRisk`); empty: the
    /// default (`highRisk` on the user's own browser, none on a managed one).
    pub require_approval: Vec<String>,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        Self { allow: Vec::new(), deny: Vec::new(), real_profile_defaults: true, require_approval: Vec::new() }
    }
}

/// The `[advanced]` section: whether `browser_evaluate`, `browser_console`, `browser_network` and `browser_cdp` may be
/// activated, and which raw protocol methods `browser_cdp` may send (BRIEF §8: arbitrary JS, raw CDP and cookie export
/// are off by default).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdvancedConfig {
    /// `tools.activate {advanced: true}` may enable the tier (also `BROWSERD_ADVANCED=1`).
    pub enabled: bool,
    /// `browser_cdp` (raw protocol commands) is part of the tier; needs `enabled` too.
    pub raw_cdp: bool,
    /// When not empty, the only raw methods allowed (`Domain.method`, `Domain.*` or `*`); the denied list still wins.
    pub allowed_cdp_methods: Vec<String>,
    /// Raw methods always refused (`Domain.method` or `Domain.*`).
    pub denied_cdp_methods: Vec<String>,
}

/// The raw methods denied by default: the browser and target domains (other tabs, the whole browser), storage and
/// cookie export, and request interception (browserd's own stops navigations to refused origins with it).
pub const DEFAULT_DENIED_CDP_METHODS: &[&str] = &[
    "Browser.*",
    "Target.*",
    "Fetch.*",
    "Storage.*",
    "SystemInfo.*",
    "Network.getAllCookies",
    "Network.getCookies",
    "Network.setCookie",
    "Network.setCookies",
    "Network.deleteCookies",
    "Network.clearBrowserCookies",
    "Page.setDownloadBehavior",
];

impl Default for AdvancedConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            raw_cdp: false,
            allowed_cdp_methods: Vec::new(),
            denied_cdp_methods: DEFAULT_DENIED_CDP_METHODS.iter().map(|m| (*m).to_owned()).collect(),
        }
    }
}

/// Whether a `Domain.method` matches a pattern: `*`, `Domain.*` or the exact name.
fn method_matches(pattern: &str, method: &str) -> bool {
    match pattern.strip_suffix(".*") {
        _ if pattern == "*" => true,
        Some(domain) => method.split_once('.').is_some_and(|(d, _)| d == domain),
        None => pattern == method,
    }
}

impl AdvancedConfig {
    /// Why the raw method is refused, naming the config key to change; `None` when it may be sent.
    #[must_use]
    pub fn refuse_cdp_method(&self, method: &str) -> Option<String> {
        if !self.raw_cdp {
            return Some(
                "raw protocol access is off; set `raw_cdp = true` in the `[advanced]` section of the config \
                 (or BROWSERD_ADVANCED_RAW_CDP=1)"
                    .to_owned(),
            );
        }
        if let Some(p) = self.denied_cdp_methods.iter().find(|p| method_matches(p, method)) {
            return Some(format!("`{method}` is denied by `advanced.denied_cdp_methods` (pattern `{p}`)"));
        }
        if !self.allowed_cdp_methods.is_empty() && !self.allowed_cdp_methods.iter().any(|p| method_matches(p, method)) {
            return Some(format!("`{method}` is not in `advanced.allowed_cdp_methods`"));
        }
        None
    }
}

impl Default for BrokerConfig {
    fn default() -> Self {
        Self {
            idle_exit_secs: 600,
            disconnect_grace_secs: 30,
            browser: BrowserChoice::Auto,
            extension_endpoint: true,
            remote_cdp: None,
            remote_authorization: None,
            remote_connect_timeout_ms: 30_000,
            reconnect_backoff_ms: 500,
            reconnect_backoff_max_ms: 30_000,
            chromium_path: None,
            headless: true,
            profile_dir: None,
            chromium_args: Vec::new(),
            max_browsers: 4,
            max_tabs_per_task: 3,
            max_running_actions_per_tab: 1,
            max_queued_requests: 16,
            max_concurrent_page_ops: 4,
            concurrency_wait_ms: 1000,
            op_timeout_ms: 10_000,
            hello_timeout_ms: 5_000,
            batch_deadline_ms: 30_000,
            advanced: AdvancedConfig::default(),
            files: crate::policy::files::FilesConfig::default(),
            schemes: crate::policy::schemes::SchemesConfig::default(),
            retention: crate::retention::RetentionConfig::default(),
            policy: PolicyConfig::default(),
        }
    }
}

impl BrokerConfig {
    /// Idle-exit delay (`None`: never).
    #[must_use]
    pub fn idle_exit(&self) -> Option<Duration> {
        (self.idle_exit_secs > 0).then(|| Duration::from_secs(self.idle_exit_secs))
    }

    /// Disconnect grace period.
    #[must_use]
    pub fn disconnect_grace(&self) -> Duration {
        Duration::from_secs(self.disconnect_grace_secs)
    }
}

fn serialize_redacted_url<S: serde::Serializer>(url: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match url {
        Some(url) => s.serialize_some(&browserd_cdp::redact_url(url)),
        None => s.serialize_none(),
    }
}

fn serialize_secret<S: serde::Serializer>(secret: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match secret {
        Some(_) => s.serialize_some("(set, hidden)"),
        None => s.serialize_none(),
    }
}

/// Every key, in display order.
pub const KEYS: &[&str] = &[
    "idle_exit_secs",
    "disconnect_grace_secs",
    "browser",
    "extension_endpoint",
    "remote_cdp",
    "remote_authorization",
    "remote_connect_timeout_ms",
    "reconnect_backoff_ms",
    "reconnect_backoff_max_ms",
    "chromium_path",
    "headless",
    "profile_dir",
    "chromium_args",
    "max_browsers",
    "max_tabs_per_task",
    "max_running_actions_per_tab",
    "max_queued_requests",
    "max_concurrent_page_ops",
    "concurrency_wait_ms",
    "op_timeout_ms",
    "hello_timeout_ms",
    "batch_deadline_ms",
    "advanced.enabled",
    "advanced.raw_cdp",
    "advanced.allowed_cdp_methods",
    "advanced.denied_cdp_methods",
    "files.file_url_roots",
    "files.upload_roots",
    "files.download_dir",
    "schemes.allow",
    "retention.max_age_secs",
    "retention.max_bytes",
    "policy.allow",
    "policy.deny",
    "policy.real_profile_defaults",
    "policy.require_approval",
];

/// The environment variable overriding `key`: `BROWSERD_` + the key in upper case (e.g. `BROWSERD_REMOTE_CDP`), with
/// `.` as `_` for section keys (`BROWSERD_ADVANCED_RAW_CDP`); `advanced.enabled` is `BROWSERD_ADVANCED`.
#[must_use]
pub fn env_name(key: &str) -> String {
    if key == "advanced.enabled" {
        return "BROWSERD_ADVANCED".to_owned();
    }
    format!("BROWSERD_{}", key.to_ascii_uppercase().replace('.', "_"))
}

/// The effective configuration and the source of every key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    /// The values.
    pub config: BrokerConfig,
    /// Key → where its value came from.
    pub sources: BTreeMap<&'static str, Source>,
    /// The config file looked at (present or not).
    pub file: Option<PathBuf>,
    /// Whether that file exists.
    pub file_exists: bool,
}

/// The default config file: `$XDG_CONFIG_HOME/browserd/config.toml`, else `~/.config/browserd/config.toml`.
#[must_use]
pub fn default_file(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(xdg) = env("XDG_CONFIG_HOME").filter(|v| Path::new(v).is_absolute()) {
        return Some(PathBuf::from(xdg).join("browserd").join("config.toml"));
    }
    env("HOME").filter(|v| !v.is_empty()).map(|home| PathBuf::from(home).join(".config/browserd/config.toml"))
}

/// The default state directory: `$XDG_STATE_HOME/browserd`, else `~/.local/state/browserd`.
#[must_use]
pub fn state_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(xdg) = env("XDG_STATE_HOME").filter(|v| Path::new(v).is_absolute()) {
        return Some(PathBuf::from(xdg).join("browserd"));
    }
    env("HOME").filter(|v| !v.is_empty()).map(|home| PathBuf::from(home).join(".local/state/browserd"))
}

/// Reads the configuration from the process environment and the default file.
///
/// # Errors
/// An unreadable or invalid file, or an invalid environment value.
pub fn load() -> Result<Effective, ConfigError> {
    let env = |name: &str| std::env::var(name).ok();
    load_with(&env)
}

/// Reads the configuration with an explicit environment lookup (tests).
///
/// # Errors
/// An unreadable or invalid file, or an invalid environment value.
pub fn load_with(env: &dyn Fn(&str) -> Option<String>) -> Result<Effective, ConfigError> {
    let mut config = BrokerConfig::default();
    config.files.download_dir = crate::policy::files::default_download_dir(env);
    let home = env("HOME");
    let home = home.as_deref();
    let mut sources: BTreeMap<&'static str, Source> = KEYS.iter().map(|k| (*k, Source::Default)).collect();
    let file = default_file(env);
    let mut file_exists = false;
    if let Some(path) = &file {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                file_exists = true;
                let table: toml::Table = text
                    .parse()
                    .map_err(|e: toml::de::Error| ConfigError::Parse { path: path.clone(), message: e.to_string() })?;
                let mut entries: Vec<(String, &toml::Value)> = Vec::new();
                for (key, value) in &table {
                    match value {
                        // A section (`[advanced]`): its keys are `section.key`.
                        toml::Value::Table(section) => {
                            entries.extend(section.iter().map(|(k, v)| (format!("{key}.{k}"), v)));
                        }
                        _ => entries.push((key.clone(), value)),
                    }
                }
                for (key, value) in entries {
                    let Some(known) = KEYS.iter().find(|k| **k == key.as_str()) else {
                        return Err(ConfigError::Parse {
                            path: path.clone(),
                            message: format!("unknown key `{key}` (known keys: {})", KEYS.join(", ")),
                        });
                    };
                    set_from_toml(&mut config, known, value, home)
                        .map_err(|message| ConfigError::Parse { path: path.clone(), message })?;
                    sources.insert(known, Source::File(path.clone()));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(ConfigError::Read { path: path.clone(), source }),
        }
    }
    for key in KEYS {
        let name = env_name(key);
        if let Some(value) = env(&name) {
            set_from_str(&mut config, key, &value, home).map_err(|message| ConfigError::Env {
                name: name.clone(),
                value: value.clone(),
                message,
            })?;
            sources.insert(key, Source::Env(name));
        }
    }
    Ok(Effective { config, sources, file, file_exists })
}

fn set_from_toml(config: &mut BrokerConfig, key: &str, value: &toml::Value, home: Option<&str>) -> Result<(), String> {
    let text = match value {
        toml::Value::Array(items) if key == "schemes.allow" => {
            return config.schemes.set_allow(&strings(key, items)?).map_err(|why| format!("`{key}`: {why}"));
        }
        toml::Value::Array(items) if crate::policy::files::is_list(key) => {
            let items = strings(key, items)?;
            return crate::policy::files::set_list(&mut config.files, key, &items, home)
                .map_err(|why| format!("`{key}`: {why}"));
        }
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Array(items)
            if matches!(
                key,
                "chromium_args"
                    | "advanced.allowed_cdp_methods"
                    | "advanced.denied_cdp_methods"
                    | "policy.allow"
                    | "policy.deny"
                    | "policy.require_approval"
            ) =>
        {
            let args = strings(key, items)?;
            match key {
                "chromium_args" => config.chromium_args = args,
                "advanced.allowed_cdp_methods" => config.advanced.allowed_cdp_methods = args,
                "advanced.denied_cdp_methods" => config.advanced.denied_cdp_methods = args,
                _ => return set_from_str(config, key, &args.join(","), home).map_err(|why| format!("`{key}`: {why}")),
            }
            return Ok(());
        }
        other => return Err(format!("`{key}` has an unsupported value {other}")),
    };
    set_from_str(config, key, &text, home).map_err(|why| format!("`{key}`: {why}"))
}

/// The string items of a TOML array.
fn strings(key: &str, items: &[toml::Value]) -> Result<Vec<String>, String> {
    items
        .iter()
        .map(|item| match item {
            toml::Value::String(s) => Ok(s.clone()),
            other => Err(format!("`{key}` holds a non-string item {other}")),
        })
        .collect()
}

fn parse_u64(value: &str) -> Result<u64, String> {
    value.trim().parse().map_err(|_| format!("expected a non-negative integer, got {value:?}"))
}

fn parse_u32_min1(value: &str) -> Result<u32, String> {
    let n: u32 = value.trim().parse().map_err(|_| format!("expected a positive integer, got {value:?}"))?;
    if n == 0 { Err("must be at least 1".to_owned()) } else { Ok(n) }
}

fn parse_bool(value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("expected true or false, got {value:?}")),
    }
}

fn opt_string(value: &str) -> Option<String> {
    let trimmed = value.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

/// A comma- or space-separated list of raw method patterns.
fn method_list(value: &str) -> Result<Vec<String>, String> {
    let items: Vec<String> =
        value.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()).map(str::to_owned).collect();
    for item in &items {
        let valid = item == "*" || item.split_once('.').is_some_and(|(d, m)| !d.is_empty() && !m.is_empty());
        if !valid {
            return Err(format!("{item:?} is not a method pattern (`Domain.method`, `Domain.*` or `*`)"));
        }
    }
    Ok(items)
}

/// A comma- or space-separated list of origin patterns (syntax: `crate::policy::sites`).
fn origin_list(value: &str) -> Result<Vec<String>, String> {
    let items: Vec<String> =
        value.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()).map(str::to_owned).collect();
    crate::policy::sites::OriginPattern::parse_all(&items)?;
    Ok(items)
}

/// A comma- or space-separated list of action classes.
fn class_list(value: &str) -> Result<Vec<String>, String> {
    let items: Vec<&str> = value.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()).collect();
    items
        .into_iter()
        .map(|i| match browserd_protocol::policy::ActionClass::parse(i) {
            Some(c) => Ok(c.as_str().to_owned()),
            None => Err(format!("{i:?} is not an action class (read, navigate, input, submit, highRisk)")),
        })
        .collect()
}

fn set_from_str(config: &mut BrokerConfig, key: &str, value: &str, home: Option<&str>) -> Result<(), String> {
    match key {
        files if files.starts_with("files.") => crate::policy::files::set(&mut config.files, files, value, home)?,
        retention if retention.starts_with("retention.") => config.retention.set(retention, value)?,
        "schemes.allow" => config.schemes.set_allow(&value.split([',', ' ']).map(str::to_owned).collect::<Vec<_>>())?,
        "idle_exit_secs" => config.idle_exit_secs = parse_u64(value)?,
        "disconnect_grace_secs" => config.disconnect_grace_secs = parse_u64(value)?,
        "browser" => {
            config.browser = match value.trim().to_ascii_lowercase().as_str() {
                "auto" => BrowserChoice::Auto,
                "managed" => BrowserChoice::Managed,
                "remote" => BrowserChoice::Remote,
                "extension" => BrowserChoice::Extension,
                other => return Err(format!("expected auto, managed, remote or extension, got {other:?}")),
            }
        }
        "extension_endpoint" => config.extension_endpoint = parse_bool(value)?,
        "remote_cdp" => config.remote_cdp = opt_string(value),
        "remote_authorization" => config.remote_authorization = opt_string(value),
        "remote_connect_timeout_ms" => config.remote_connect_timeout_ms = parse_u64(value)?.max(1),
        "reconnect_backoff_ms" => config.reconnect_backoff_ms = parse_u64(value)?.max(1),
        "reconnect_backoff_max_ms" => config.reconnect_backoff_max_ms = parse_u64(value)?.max(1),
        "chromium_path" => config.chromium_path = opt_string(value).map(PathBuf::from),
        "headless" => config.headless = parse_bool(value)?,
        "profile_dir" => config.profile_dir = opt_string(value).map(PathBuf::from),
        "chromium_args" => config.chromium_args = value.split_whitespace().map(str::to_owned).collect(),
        "max_browsers" => config.max_browsers = parse_u32_min1(value)?,
        "max_tabs_per_task" => config.max_tabs_per_task = parse_u32_min1(value)?,
        "max_running_actions_per_tab" => {
            let n = parse_u32_min1(value)?;
            if n != 1 {
                return Err("only 1 is supported: actions on one tab always run one at a time".to_owned());
            }
            config.max_running_actions_per_tab = n;
        }
        "max_queued_requests" => config.max_queued_requests = parse_u32_min1(value)?,
        "max_concurrent_page_ops" => config.max_concurrent_page_ops = parse_u32_min1(value)?,
        "concurrency_wait_ms" => config.concurrency_wait_ms = parse_u64(value)?,
        "op_timeout_ms" => config.op_timeout_ms = parse_u64(value)?.max(1),
        "hello_timeout_ms" => config.hello_timeout_ms = parse_u64(value)?.max(1),
        "batch_deadline_ms" => config.batch_deadline_ms = parse_u64(value)?.max(1),
        "advanced.enabled" => config.advanced.enabled = parse_bool(value)?,
        "advanced.raw_cdp" => config.advanced.raw_cdp = parse_bool(value)?,
        "advanced.allowed_cdp_methods" => config.advanced.allowed_cdp_methods = method_list(value)?,
        "advanced.denied_cdp_methods" => config.advanced.denied_cdp_methods = method_list(value)?,
        "policy.allow" => config.policy.allow = origin_list(value)?,
        "policy.deny" => config.policy.deny = origin_list(value)?,
        "policy.real_profile_defaults" => config.policy.real_profile_defaults = parse_bool(value)?,
        "policy.require_approval" => config.policy.require_approval = class_list(value)?,
        other => return Err(format!("unknown key `{other}`")),
    }
    Ok(())
}

/// The effective value of `key` as display text.
#[must_use]
pub fn display_value(config: &BrokerConfig, key: &str) -> String {
    let path = |v: &Option<PathBuf>| v.as_ref().map_or_else(|| "(unset)".to_owned(), |p| p.display().to_string());
    match key {
        "idle_exit_secs" => config.idle_exit_secs.to_string(),
        "disconnect_grace_secs" => config.disconnect_grace_secs.to_string(),
        "browser" => config.browser.as_str().to_owned(),
        "extension_endpoint" => config.extension_endpoint.to_string(),
        "remote_cdp" => config.remote_cdp.as_deref().map_or_else(|| "(unset)".to_owned(), browserd_cdp::redact_url),
        "remote_authorization" => {
            config.remote_authorization.as_ref().map_or("(unset)", |_| "(set, hidden)").to_owned()
        }
        "remote_connect_timeout_ms" => config.remote_connect_timeout_ms.to_string(),
        "reconnect_backoff_ms" => config.reconnect_backoff_ms.to_string(),
        "reconnect_backoff_max_ms" => config.reconnect_backoff_max_ms.to_string(),
        "chromium_path" => path(&config.chromium_path),
        "headless" => config.headless.to_string(),
        "profile_dir" => path(&config.profile_dir),
        "chromium_args" => config.chromium_args.join(" "),
        "max_browsers" => config.max_browsers.to_string(),
        "max_tabs_per_task" => config.max_tabs_per_task.to_string(),
        "max_running_actions_per_tab" => config.max_running_actions_per_tab.to_string(),
        "max_queued_requests" => config.max_queued_requests.to_string(),
        "max_concurrent_page_ops" => config.max_concurrent_page_ops.to_string(),
        "concurrency_wait_ms" => config.concurrency_wait_ms.to_string(),
        "op_timeout_ms" => config.op_timeout_ms.to_string(),
        "hello_timeout_ms" => config.hello_timeout_ms.to_string(),
        "batch_deadline_ms" => config.batch_deadline_ms.to_string(),
        "advanced.enabled" => config.advanced.enabled.to_string(),
        "advanced.raw_cdp" => config.advanced.raw_cdp.to_string(),
        "advanced.allowed_cdp_methods" if config.advanced.allowed_cdp_methods.is_empty() => "(any)".to_owned(),
        "advanced.allowed_cdp_methods" => config.advanced.allowed_cdp_methods.join(", "),
        "advanced.denied_cdp_methods" => config.advanced.denied_cdp_methods.join(", "),
        files if files.starts_with("files.") => crate::policy::files::display(&config.files, files),
        retention if retention.starts_with("retention.") => config.retention.display(retention),
        "schemes.allow" if config.schemes.allow.is_empty() => "(none: http, https and about:blank only)".to_owned(),
        "schemes.allow" => config.schemes.allow.join(", "),
        "policy.allow" if config.policy.allow.is_empty() => "(any)".to_owned(),
        "policy.allow" => config.policy.allow.join(", "),
        "policy.deny" if config.policy.deny.is_empty() => "(none)".to_owned(),
        "policy.deny" => config.policy.deny.join(", "),
        "policy.real_profile_defaults" => config.policy.real_profile_defaults.to_string(),
        "policy.require_approval" if config.policy.require_approval.is_empty() => {
            "(default: highRisk on the user's own browser)".to_owned()
        }
        "policy.require_approval" => config.policy.require_approval.join(", "),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, String)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: BTreeMap<String, String> = pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn defaults_file_and_env_layer_in_that_order() {
        let dir = tempfile::tempdir().unwrap();
        let cfg_dir = dir.path().join("browserd");
        std::fs::create_dir_all(&cfg_dir).unwrap();
        std::fs::write(cfg_dir.join("config.toml"), "max_queued_requests = 8\nremote_cdp = \"ws://file\"\n").unwrap();
        let env = env_of(&[
            ("XDG_CONFIG_HOME", dir.path().display().to_string()),
            ("BROWSERD_REMOTE_CDP", "http://127.0.0.1:9222".to_owned()),
        ]);
        let eff = load_with(&env).unwrap();
        assert!(eff.file_exists);
        assert_eq!(eff.config.max_queued_requests, 8);
        assert_eq!(eff.sources["max_queued_requests"], Source::File(cfg_dir.join("config.toml")));
        assert_eq!(eff.config.remote_cdp.as_deref(), Some("http://127.0.0.1:9222"));
        assert_eq!(eff.sources["remote_cdp"], Source::Env("BROWSERD_REMOTE_CDP".into()));
        assert_eq!(eff.config.max_concurrent_page_ops, 4);
        assert_eq!(eff.sources["max_concurrent_page_ops"], Source::Default);
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let cfg_dir = dir.path().join("browserd");
        std::fs::create_dir_all(&cfg_dir).unwrap();
        std::fs::write(cfg_dir.join("config.toml"), "max_tabs = 2\n").unwrap();
        let env = env_of(&[("XDG_CONFIG_HOME", dir.path().display().to_string())]);
        let err = load_with(&env).unwrap_err().to_string();
        assert!(err.contains("unknown key `max_tabs`"), "{err}");

        let env = env_of(&[("BROWSERD_MAX_QUEUED_REQUESTS", "zero".into())]);
        let err = load_with(&env).unwrap_err().to_string();
        assert!(err.contains("BROWSERD_MAX_QUEUED_REQUESTS") && err.contains("positive integer"), "{err}");

        let env = env_of(&[("BROWSERD_MAX_RUNNING_ACTIONS_PER_TAB", "2".into())]);
        assert!(load_with(&env).unwrap_err().to_string().contains("only 1 is supported"));
    }

    #[test]
    fn the_advanced_section_is_off_by_default_and_read_from_the_file_and_env() {
        let eff = load_with(&env_of(&[])).unwrap();
        assert!(!eff.config.advanced.enabled && !eff.config.advanced.raw_cdp);
        assert!(eff.config.advanced.refuse_cdp_method("Page.reload").unwrap().contains("raw_cdp = true"));

        let dir = tempfile::tempdir().unwrap();
        let cfg_dir = dir.path().join("browserd");
        std::fs::create_dir_all(&cfg_dir).unwrap();
        std::fs::write(
            cfg_dir.join("config.toml"),
            "headless = true\n[advanced]\nraw_cdp = true\nallowed_cdp_methods = [\"Page.*\", \"Runtime.evaluate\"]\n",
        )
        .unwrap();
        let env =
            env_of(&[("XDG_CONFIG_HOME", dir.path().display().to_string()), ("BROWSERD_ADVANCED", "1".to_owned())]);
        let eff = load_with(&env).unwrap();
        let adv = &eff.config.advanced;
        assert!(adv.enabled && adv.raw_cdp);
        assert_eq!(eff.sources["advanced.enabled"], Source::Env("BROWSERD_ADVANCED".into()));
        assert_eq!(eff.sources["advanced.raw_cdp"], Source::File(cfg_dir.join("config.toml")));
        assert_eq!(adv.refuse_cdp_method("Page.reload"), None);
        assert_eq!(adv.refuse_cdp_method("Runtime.evaluate"), None);
        assert!(adv.refuse_cdp_method("DOM.getDocument").unwrap().contains("allowed_cdp_methods"));
        // The default deny list still applies: cookie export and the browser-wide domains.
        let mut open = adv.clone();
        open.allowed_cdp_methods.clear();
        for denied in ["Network.getAllCookies", "Storage.getCookies", "Target.createTarget", "Browser.close"] {
            assert!(open.refuse_cdp_method(denied).unwrap().contains("denied_cdp_methods"), "{denied}");
        }
        assert_eq!(open.refuse_cdp_method("Network.enable"), None);

        std::fs::write(cfg_dir.join("config.toml"), "[advanced]\nturbo = true\n").unwrap();
        let err = load_with(&env_of(&[("XDG_CONFIG_HOME", dir.path().display().to_string())])).unwrap_err();
        assert!(err.to_string().contains("unknown key `advanced.turbo`"), "{err}");
        let err = load_with(&env_of(&[("BROWSERD_ADVANCED_DENIED_CDP_METHODS", "Page".into())])).unwrap_err();
        assert!(err.to_string().contains("not a method pattern"), "{err}");
    }

    #[test]
    fn the_policy_section_reads_origin_lists_and_classes_and_refuses_bad_patterns() {
        let dir = tempfile::tempdir().unwrap();
        let cfg_dir = dir.path().join("browserd");
        std::fs::create_dir_all(&cfg_dir).unwrap();
        let file = cfg_dir.join("config.toml");
        std::fs::write(
            &file,
            "[policy]\nallow = [\"*.example.com\", \"localhost:*\"]\ndeny = [\"https://bad.example.com\"]\n\
             real_profile_defaults = false\nrequire_approval = [\"submit\", \"high-risk\"]\n",
        )
        .unwrap();
        let env = env_of(&[("XDG_CONFIG_HOME", dir.path().display().to_string())]);
        let policy = load_with(&env).unwrap().config.policy;
        assert_eq!(policy.allow, ["*.example.com", "localhost:*"]);
        assert_eq!(policy.deny, ["https://bad.example.com"]);
        assert!(!policy.real_profile_defaults);
        assert_eq!(policy.require_approval, ["submit", "highRisk"]);
        std::fs::write(&file, "[policy]\ndeny = [\"https://example.com/login\"]\n").unwrap();
        let err = load_with(&env).unwrap_err().to_string();
        assert!(err.contains("policy.deny") && err.contains("no path"), "{err}");
        let err = load_with(&env_of(&[("BROWSERD_POLICY_REQUIRE_APPROVAL", "everything".into())])).unwrap_err();
        assert!(err.to_string().contains("not an action class"), "{err}");
        assert_eq!(BrokerConfig::default().policy, PolicyConfig::default());
    }

    #[test]
    fn every_key_has_a_display_and_an_env_name() {
        let config = BrokerConfig::default();
        for key in KEYS {
            assert!(env_name(key).starts_with("BROWSERD_"));
            let shown = display_value(&config, key);
            if !matches!(*key, "chromium_args") {
                assert!(!shown.is_empty(), "{key}");
            }
        }
    }
}
