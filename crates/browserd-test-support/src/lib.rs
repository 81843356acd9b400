//! Test helpers for browserd: the fake provider with fault injection, a fake clock, the scripted CDP peer, the fuzz
//! targets' strategies, the text pages of observation tests and the Browserless grid (a test component only). The
//! loopback fixture site lives in its own crate (`browserd-fixtures`, which the product binary's demo uses too) and is
//! re-exported here as [`fixtures`].

pub mod app_refs;
pub mod browserless;
pub mod fake_clock;
pub mod fake_provider;
pub mod fuzz;
pub mod scripted_cdp;
pub mod text_pages;

pub use browserd_fixtures as fixtures;
