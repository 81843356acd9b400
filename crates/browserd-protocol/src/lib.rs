//! browserd's wire protocol: every message a client, the broker, the native host or the extension exchanges.
//!
//! Everything here is plain data with `serde` and `schemars` derives. Nothing here knows about
//! Chromium, CDP or `chrome.*`; those live in the provider crates.
//!
//! # Layout
//! - [`page`]: observation, refs, actions, expectations and action results (the page-level payloads).

pub mod page;

pub use page::*;
