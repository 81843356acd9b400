//! Test helpers for browserd: the fake provider with fault injection, a fake clock, the scripted CDP peer and the loopback fixture site.

pub mod fake_clock;
pub mod fake_provider;
pub mod fixtures;
pub mod scripted_cdp;
