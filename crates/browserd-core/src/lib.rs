//! browserd's sans-I/O core: the provider contract, the lifecycle engine, leases and fencing.
//!
//! **Architecture invariant:** nothing in this crate names CDP, `chrome.*` or any browser id.
//! Browsers are reached only through the [`provider::Provider`] trait, in browserd's own words.
//!
//! **Architecture invariant:** the state machines read no clock and do no I/O; time comes in as
//! an argument ([`Millis`]).
//!
//! # Layout
//! - [`provider`]: the provider contract (tabs, claim/release, debugger, observe, act, events,
//!   capabilities) and the opaque handles.

pub mod provider;

/// A point in time, in milliseconds since an arbitrary epoch chosen by the caller.
///
/// The core never reads a clock: callers pass `now` into every state transition, so tests can use
/// a fake clock and production code uses a monotonic one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Millis(pub u64);

impl Millis {
    /// `self + ms`, saturating.
    #[must_use]
    pub fn plus(self, ms: u64) -> Millis {
        Millis(self.0.saturating_add(ms))
    }
}
