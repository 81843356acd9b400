//! Test helpers for browserd: the fake provider with fault injection, a fake clock, the scripted CDP peer, the loopback fixture site and the text pages of observation tests.

pub mod fake_clock;
pub mod fake_provider;
pub mod fixtures;
pub mod scripted_cdp;
pub mod text_pages;
