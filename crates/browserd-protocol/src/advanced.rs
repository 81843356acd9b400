//! Params and results of the advanced-tier tools (`browser_evaluate`, `browser_console`, `browser_network`,
//! `browser_cdp`) and the spill file they share; re-exported from [`crate::tools`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ids::TabId;
use crate::jsonrpc::Validate;
use crate::tools::yes;

/// Content too large for a result, written to a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Spill {
    /// File path.
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// What it contains.
    pub summary: String,
}

/// Params of `browser_evaluate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EvaluateParams {
    /// Tab id.
    pub tab: TabId,
    /// JavaScript expression.
    pub expression: String,
    /// Await a returned promise.
    #[serde(default = "yes")]
    pub await_promise: bool,
}

/// What `browser_evaluate` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvaluateResult {
    /// JSON value (null when spilled or thrown).
    pub value: Value,
    /// Thrown exception.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exception: Option<String>,
    /// Large value written to a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spill: Option<Spill>,
}

/// Console message level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ConsoleLevel {
    /// Debug.
    Debug,
    /// Log.
    Log,
    /// Info.
    Info,
    /// Warning.
    Warning,
    /// Error.
    Error,
}

/// Params of `browser_console`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConsoleParams {
    /// Tab id.
    pub tab: TabId,
    /// Cursor from the last call; from the start when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
    /// Lowest level to return.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<ConsoleLevel>,
    /// Most entries to return (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// One console message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsoleEntry {
    /// Level.
    pub level: ConsoleLevel,
    /// Text (untrusted page content).
    pub text: String,
    /// Source URL and line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// What `browser_console` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsoleResult {
    /// Messages, oldest first.
    pub entries: Vec<ConsoleEntry>,
    /// Pass as `since` next time.
    pub cursor: u64,
    /// More were available than returned or kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Large output written to a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spill: Option<Spill>,
}

/// Params of `browser_network`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkParams {
    /// Tab id.
    pub tab: TabId,
    /// Cursor from the last call; from the start when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
    /// Only URLs containing this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_contains: Option<String>,
    /// Only failed requests (network error or status ≥ 400).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed_only: bool,
    /// Show URLs with their query string (left out by default: it often holds tokens).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_query: bool,
    /// Most entries to return (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// One network request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkEntry {
    /// HTTP method.
    pub method: String,
    /// URL.
    pub url: String,
    /// Resource type, e.g. `document`, `fetch`, `script`.
    pub kind: String,
    /// HTTP status, once answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Network error, if it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Duration in ms, once finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// What `browser_network` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkResult {
    /// Requests, oldest first.
    pub requests: Vec<NetworkEntry>,
    /// Pass as `since` next time.
    pub cursor: u64,
    /// More were available than returned or kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Large output written to a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spill: Option<Spill>,
}

/// Params of `browser_cdp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RawProtocolParams {
    /// Tab id.
    pub tab: TabId,
    /// Protocol method name.
    pub method: String,
    /// Method params.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Map<String, Value>>,
}

/// What `browser_cdp` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RawProtocolResult {
    /// The method's result.
    pub result: Value,
    /// Large result written to a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spill: Option<Spill>,
}

impl Validate for EvaluateParams {
    fn validate(&self) -> Result<(), String> {
        if self.expression.trim().is_empty() { Err("expression must not be empty".to_owned()) } else { Ok(()) }
    }
}

impl Validate for ConsoleParams {}
impl Validate for NetworkParams {}

impl Validate for RawProtocolParams {}
