//! The `hello` handshake: protocol version ranges, component versions, roles, capabilities, and
//! version selection.
//!
//! Every connection starts with `hello`. The client sends the range of protocol versions it
//! speaks; the broker answers with the one both use ([`negotiate`]: the highest common version)
//! or refuses with `UNSUPPORTED_BY_VERSION` saying which side to upgrade.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::errors::{ErrorCode, ErrorData};
use crate::jsonrpc::Validate;

/// The newest protocol version this build speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// The oldest protocol version this build still speaks.
pub const MIN_PROTOCOL_VERSION: u32 = 1;

/// Capability names announced in `hello` (an open set: unknown names are kept, not refused).
pub mod capability {
    /// Automatic cleanup at turn end is safe: ownership records are kept by the browser side.
    pub const TURN_CLEANUP: &str = "turnCleanup";
    /// Deliverable/handoff marks last one turn unless renewed.
    pub const TURN_SCOPED_MARKS: &str = "turnScopedMarks";
    /// Retained tabs survive cleanup with their old ownership metadata dropped.
    pub const RETAINED_CLEANUP: &str = "retainedCleanup";
    /// A failed debugger detach is recorded and retried.
    pub const DEBUGGER_LEASE_RECOVERY: &str = "debuggerLeaseRecovery";

    /// What a browser must announce before the broker runs automatic turn cleanup on it.
    pub const REQUIRED_FOR_AUTO_TURN_CLEANUP: [&str; 4] =
        [TURN_CLEANUP, TURN_SCOPED_MARKS, RETAINED_CLEANUP, DEBUGGER_LEASE_RECOVERY];
}

/// The capabilities required for automatic turn cleanup that `announced` lacks, in a stable order.
#[must_use]
pub fn missing_for_auto_turn_cleanup(announced: &BTreeSet<String>) -> Vec<String> {
    capability::REQUIRED_FOR_AUTO_TURN_CLEANUP
        .iter()
        .filter(|name| !announced.contains(**name))
        .map(|name| (*name).to_owned())
        .collect()
}

/// An inclusive range of protocol versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VersionRange {
    /// Oldest version spoken.
    pub min: u32,
    /// Newest version spoken.
    pub max: u32,
}

impl VersionRange {
    /// What this build speaks: [`MIN_PROTOCOL_VERSION`]..=[`PROTOCOL_VERSION`].
    pub const CURRENT: VersionRange = VersionRange { min: MIN_PROTOCOL_VERSION, max: PROTOCOL_VERSION };

    /// A range; `min` may not exceed `max` (checked by [`negotiate`] and by validation).
    #[must_use]
    pub const fn new(min: u32, max: u32) -> Self {
        Self { min, max }
    }

    /// Whether `version` is in the range.
    #[must_use]
    pub const fn contains(self, version: u32) -> bool {
        self.min <= version && version <= self.max
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.min == self.max { write!(f, "v{}", self.min) } else { write!(f, "v{}..v{}", self.min, self.max) }
    }
}

/// What kind of component is on the other end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ComponentRole {
    /// The `browserd` command line.
    Cli,
    /// The MCP server (`browserd mcp`).
    Mcp,
    /// The Pi extension.
    PiAdapter,
    /// The DeepSeek Harness plugin.
    DshAdapter,
    /// The Native Messaging host.
    NativeHost,
    /// The browser extension (through the native host).
    Extension,
    /// The broker.
    Broker,
}

impl ComponentRole {
    /// The wire name, e.g. `piAdapter`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            ComponentRole::Cli => "cli",
            ComponentRole::Mcp => "mcp",
            ComponentRole::PiAdapter => "piAdapter",
            ComponentRole::DshAdapter => "dshAdapter",
            ComponentRole::NativeHost => "nativeHost",
            ComponentRole::Extension => "extension",
            ComponentRole::Broker => "broker",
        }
    }
}

impl fmt::Display for ComponentRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Params of `hello`, the first message on every connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HelloParams {
    /// What the sender is.
    pub role: ComponentRole,
    /// Protocol versions the sender speaks.
    pub protocol: VersionRange,
    /// Component name → version, e.g. `{"browserd": "0.1.0", "extension": "0.1.0"}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub components: BTreeMap<String, String>,
    /// Capabilities the sender has (see [`capability`]).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub capabilities: BTreeSet<String>,
}

impl HelloParams {
    /// A hello for `role` speaking this build's versions, with no components or capabilities yet.
    #[must_use]
    pub fn new(role: ComponentRole) -> Self {
        Self { role, protocol: VersionRange::CURRENT, components: BTreeMap::new(), capabilities: BTreeSet::new() }
    }

    /// Adds a component version.
    #[must_use]
    pub fn component(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.components.insert(name.into(), version.into());
        self
    }

    /// Adds a capability.
    #[must_use]
    pub fn capability(mut self, name: impl Into<String>) -> Self {
        self.capabilities.insert(name.into());
        self
    }
}

impl Validate for HelloParams {
    fn validate(&self) -> Result<(), String> {
        check_range(self.protocol)
    }
}

/// Result of `hello`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelloResult {
    /// The protocol version both sides now use.
    pub protocol_version: u32,
    /// What the answering side is (normally `broker`).
    pub role: ComponentRole,
    /// The answering side's component versions.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub components: BTreeMap<String, String>,
    /// The answering side's capabilities.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub capabilities: BTreeSet<String>,
}

fn check_range(range: VersionRange) -> Result<(), String> {
    if range.min > range.max {
        Err(format!("protocol range min {} is above max {}", range.min, range.max))
    } else if range.min == 0 {
        Err("protocol versions start at 1".to_owned())
    } else {
        Ok(())
    }
}

/// Picks the protocol version for a connection: the highest version both ranges contain.
///
/// # Errors
/// `UNSUPPORTED_BY_VERSION` when the ranges do not overlap, saying which side is older and must
/// be upgraded; `INVALID_PARAMS` for a malformed range.
pub fn negotiate(ours: VersionRange, theirs: VersionRange) -> Result<u32, ErrorData> {
    negotiate_named("this side", ours, "the peer", theirs)
}

/// [`negotiate`] with both sides named in the error (e.g. `"broker"` and `"extension"`), so the
/// message reads correctly whoever shows it.
///
/// # Errors
/// As [`negotiate`].
pub fn negotiate_named(
    our_name: &str,
    ours: VersionRange,
    their_name: &str,
    theirs: VersionRange,
) -> Result<u32, ErrorData> {
    for (name, range) in [(our_name, ours), (their_name, theirs)] {
        check_range(range).map_err(|why| ErrorData::invalid_params(format!("{name}: {why}")))?;
    }
    let highest = ours.max.min(theirs.max);
    if highest >= ours.min.max(theirs.min) {
        return Ok(highest);
    }
    let (older, older_range, newer, newer_range) =
        if theirs.max < ours.min { (their_name, theirs, our_name, ours) } else { (our_name, ours, their_name, theirs) };
    Err(ErrorData::new(
        ErrorCode::UnsupportedByVersion,
        format!("no common protocol version: {older} speaks {older_range}, {newer} speaks {newer_range}"),
    )
    .with_next_step(format!(
        "Upgrade {older} to a browserd release that speaks protocol v{} or newer.",
        newer_range.min
    ))
    .with_details(json!({
        "upgrade": older,
        "olderRange": older_range,
        "newerRange": newer_range,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_picks_the_highest_common_version() {
        assert_eq!(negotiate(VersionRange::new(1, 3), VersionRange::new(2, 5)), Ok(3));
        assert_eq!(negotiate(VersionRange::new(2, 5), VersionRange::new(1, 3)), Ok(3));
        assert_eq!(negotiate(VersionRange::new(1, 1), VersionRange::new(1, 1)), Ok(1));
        assert_eq!(negotiate(VersionRange::new(1, 4), VersionRange::new(2, 2)), Ok(2));
        assert_eq!(negotiate(VersionRange::CURRENT, VersionRange::CURRENT), Ok(PROTOCOL_VERSION));
    }

    #[test]
    fn disjoint_ranges_say_which_side_to_upgrade() {
        let err = negotiate_named("broker", VersionRange::new(3, 4), "extension", VersionRange::new(1, 2)).unwrap_err();
        assert_eq!(err.code, ErrorCode::UnsupportedByVersion);
        assert!(err.next_step.contains("Upgrade extension") && err.next_step.contains("v3"), "{}", err.next_step);
        assert_eq!(err.details.as_ref().unwrap()["upgrade"], "extension");

        let err = negotiate_named("broker", VersionRange::new(1, 2), "cli", VersionRange::new(5, 6)).unwrap_err();
        assert!(err.next_step.contains("Upgrade broker") && err.next_step.contains("v5"), "{}", err.next_step);
        assert!(err.message.contains("v1..v2") && err.message.contains("v5..v6"), "{}", err.message);
    }

    #[test]
    fn malformed_ranges_are_invalid_params() {
        let err = negotiate(VersionRange::new(1, 1), VersionRange::new(4, 2)).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParams);
        assert!(err.message.contains("the peer"), "{}", err.message);
        assert_eq!(
            negotiate(VersionRange::new(0, 1), VersionRange::new(1, 1)).unwrap_err().code,
            ErrorCode::InvalidParams
        );
        let hello = HelloParams { protocol: VersionRange::new(3, 1), ..HelloParams::new(ComponentRole::Cli) };
        assert!(hello.validate().is_err());
    }

    #[test]
    fn hello_round_trips_in_camel_case() {
        let hello = HelloParams::new(ComponentRole::PiAdapter)
            .component("browserd-pi", "0.1.0")
            .capability(capability::TURN_CLEANUP);
        let v = serde_json::to_value(&hello).unwrap();
        assert_eq!(v["role"], "piAdapter");
        assert_eq!(v["protocol"]["max"], PROTOCOL_VERSION);
        assert_eq!(v["capabilities"][0], "turnCleanup");
        assert_eq!(serde_json::from_value::<HelloParams>(v).unwrap(), hello);
    }

    #[test]
    fn missing_capabilities_are_listed_in_order() {
        let announced: BTreeSet<String> =
            [capability::TURN_SCOPED_MARKS, "tabGroups"].into_iter().map(str::to_owned).collect();
        assert_eq!(
            missing_for_auto_turn_cleanup(&announced),
            vec!["turnCleanup", "retainedCleanup", "debuggerLeaseRecovery"]
        );
        let all: BTreeSet<String> =
            capability::REQUIRED_FOR_AUTO_TURN_CLEANUP.iter().map(|s| (*s).to_owned()).collect();
        assert!(missing_for_auto_turn_cleanup(&all).is_empty());
    }
}
