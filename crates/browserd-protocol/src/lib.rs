//! browserd's wire protocol: every message a client, the broker, the native host or the extension exchanges.
//!
//! Everything here is plain data with `serde` (camelCase on the wire) and `schemars` derives.
//! Params refuse unknown fields. Nothing here knows about Chromium, CDP or `chrome.*`; those
//! live in the provider crates.
//!
//! # Layout
//! - [`jsonrpc`]: JSON-RPC 2.0 requests, notifications, responses, the error object, params decoding.
//! - [`hello`]: the handshake: protocol version ranges and [`hello::negotiate`], roles, capabilities.
//! - [`browser_settings`]: the browser settings a session asks for and what `browser_status` shows of them.
//! - [`lifecycle`]: `session.open/close`, `turn.begin/end`, `tools.activate`, `context.reset`,
//!   `client.disconnect`, `status`, and the lifecycle state vocabulary.
//! - [`tools`]: params and results of every model-visible tool and [`tools::tool_catalog`].
//! - [`page`]: observation, refs, actions, expectations and action results (the page-level payloads).
//! - [`policy`]: a session's origin overrides, the policy in force (`browser_status`), action classes.
//! - [`errors`]: the error taxonomy ([`ErrorCode`]) and the structured error ([`ErrorData`]).
//! - [`ids`]: tab, group and session ids and fencing tokens.
//! - [`methods`]: method names and the registry mapping each to its params and result types.
//! - [`schema`]: JSON Schema generation and the whole-protocol document pinned by the snapshot test.
//! - [`vision`]: vision modes (`session.vision`), the pixel-only content note.
//! - [`verdict`]: the one rule for whether a tool result is a full success (MCP `isError`, CLI exit status).

pub mod advanced;
pub mod browser_settings;
pub mod errors;
pub mod hello;
pub mod ids;
pub mod jsonrpc;
pub mod lifecycle;
pub mod methods;
pub mod page;
pub mod policy;
pub mod schema;
pub mod tools;
pub mod verdict;
pub mod vision;

pub use errors::{ErrorCategory, ErrorCode, ErrorData};
pub use ids::{FencingToken, GroupId, SessionId, TabId};
pub use page::*;
pub use vision::{ImageBounds, ImageLimits, PixelContent, VisionMode, VisionStatus};
