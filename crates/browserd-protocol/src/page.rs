//! Page-level payloads: what an observation contains, how actions are described and what they report.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An opaque, frame-qualified reference to an operable node, e.g. `e12` or `f2e7`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct NodeRef(pub String);

/// Parameters of `browser_observe`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObserveParams {
    /// Also capture a screenshot.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub screenshot: bool,
}

/// What `browser_observe` returns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    /// Page URL.
    pub url: String,
    /// Page title.
    pub title: String,
    /// The compact line rendering of the page, framed as untrusted content.
    pub content: String,
}

/// Parameters of `browser_act`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActParams {
    /// The ref to act on.
    pub target: Option<NodeRef>,
}

/// What an action reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionResult {
    /// Trace id of this action.
    pub trace_id: String,
}
