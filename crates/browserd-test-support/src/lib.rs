//! Test helpers for browserd: the fake provider with fault injection, a fake clock, the scripted CDP peer, the loopback fixture site and the fuzz targets' strategies.

pub mod fake_clock;
pub mod fake_provider;
pub mod fixtures;
pub mod fuzz;
pub mod scripted_cdp;
