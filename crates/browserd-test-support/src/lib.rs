//! Test helpers for browserd: the fake provider with fault injection, a fake clock, the scripted CDP peer, the loopback
//! fixture site and the Browserless grid (a test component only).

pub mod browserless;
pub mod fake_clock;
pub mod fake_provider;
pub mod fixtures;
pub mod scripted_cdp;
