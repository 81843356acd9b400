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
//! - [`lifecycle`]: the lifecycle engine ([`lifecycle::Lifecycle`]): sessions, turns, turn-scoped
//!   marks and every boundary (turn end, finalize, context reset, close), as plans of provider
//!   steps. It owns the machines below; nothing else mutates them.
//! - [`activation`]: tool activation per session (`inactive → activeSticky → inactive`).
//! - [`tabs`]: tab records with provenance and resource state.
//! - [`debugger`]: reference-counted debugger leases with idle detach.
//! - [`write_lease`]: per-tab write leases and fencing tokens (checked in one function).
//! - [`recovery`]: recovery records for failed or unknown cleanup.
//! - [`bridge`]: the bridge machine per browser connection.
//! - [`handoff`]: handoff completion criteria, checked read-only from the tab's URL and an observation.
//! - [`error`]: [`error::CoreError`] and its stable [`error::ErrorKind`].
//! - [`clock`] and [`runtime`]: the async driver ([`runtime::Runtime`]) that executes plans
//!   against a provider, serialized per session. The only module that reads a clock.

pub mod activation;
pub mod bridge;
pub mod clock;
pub mod debugger;
pub mod error;
pub mod handoff;
pub mod lifecycle;
pub mod provider;
pub mod recovery;
pub mod runtime;
pub mod tabs;
pub mod write_lease;

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
