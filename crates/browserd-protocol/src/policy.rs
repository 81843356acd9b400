//! The site and action policy on the wire: a session's origin overrides (`session.open`), the policy in force as
//! `browser_status` shows it, and the action classes approvals are asked for.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A session's own origin lists (`browserd mcp --allowed-origins/--blocked-origins`, the adapters' options). They only
/// narrow the broker's `[policy]`: the config's deny list always wins.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionPolicy {
    /// When not empty, only these origin patterns may be shown or acted on in this session.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_origins: Vec<String>,
    /// Origin patterns this session never shows or acts on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_origins: Vec<String>,
}

impl SessionPolicy {
    /// No override.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.allowed_origins.is_empty() && self.blocked_origins.is_empty()
    }
}

/// What an action does, for approvals: `read` (observe, scroll, wait, hover), `navigate` (navigate, back, forward,
/// reload, a plain link), `input` (fill, type, select, check, press other than Enter, upload, drag), `submit` (a
/// submit button, Enter in a form field), `highRisk` (pay, send, delete, publish, a permission change).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ActionClass {
    /// Reads only.
    Read,
    /// Goes to another page.
    Navigate,
    /// Changes a field or control.
    Input,
    /// Submits a form.
    Submit,
    /// Pays, sends, deletes, publishes or changes permissions.
    HighRisk,
}

impl ActionClass {
    /// Every class, in order.
    pub const ALL: [ActionClass; 5] =
        [ActionClass::Read, ActionClass::Navigate, ActionClass::Input, ActionClass::Submit, ActionClass::HighRisk];

    /// The wire (and config) spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ActionClass::Read => "read",
            ActionClass::Navigate => "navigate",
            ActionClass::Input => "input",
            ActionClass::Submit => "submit",
            ActionClass::HighRisk => "highRisk",
        }
    }

    /// The class a config or wire spelling names (`high-risk` and `high_risk` too).
    #[must_use]
    pub fn parse(text: &str) -> Option<ActionClass> {
        let t = text.trim().to_ascii_lowercase().replace(['-', '_'], "");
        ActionClass::ALL.into_iter().find(|c| c.as_str().to_ascii_lowercase() == t)
    }
}

/// The site and action policy in force for the calling session (`browser_status`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyStatus {
    /// `[policy] allow` (empty: every origin not denied).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// `[policy] deny`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// This session's own lists.
    #[serde(default, skip_serializing_if = "SessionPolicy::is_empty")]
    pub session: SessionPolicy,
    /// The built-in deny list for the user's real profile (password managers, banking logins, SSO admin), when it
    /// applies: the browser is the user's own and `[policy] real_profile_defaults` is on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub real_profile_deny: Vec<String>,
    /// The action classes that need the user's approval (`[policy] require_approval`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub require_approval: Vec<ActionClass>,
}

/// Params of `approval.grant`: the user approves the action an `APPROVAL_REQUIRED` answer named (the host's approval
/// UI, `browserd approve <id>`). Never a model tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalGrantParams {
    /// The approval's id (`details.approval` of the `APPROVAL_REQUIRED` answer).
    pub approval: String,
}

impl crate::jsonrpc::Validate for ApprovalGrantParams {
    fn validate(&self) -> Result<(), String> {
        if self.approval.trim().is_empty() { Err("approval must not be empty".to_owned()) } else { Ok(()) }
    }
}

/// Result of `approval.grant`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalGrantResult {
    /// What was approved (the same call may now run once, until it expires).
    pub approved: String,
    /// Milliseconds until the approval expires.
    pub expires_in_ms: u64,
}
