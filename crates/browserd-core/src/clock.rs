//! Time for the async driver: the [`Clock`] trait and the monotonic [`SystemClock`].
//!
//! Only the driver ([`crate::runtime`]) reads a clock; the state machines receive `now`.
//! Tests use the fake clock of `browserd-test-support`.

use std::fmt;
use std::time::Instant;

use crate::Millis;

/// A source of monotonic time in milliseconds.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current time.
    fn now(&self) -> Millis;
}

/// A monotonic clock whose epoch is its creation.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    origin: Instant,
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl SystemClock {
    /// A clock starting at 0 now.
    #[must_use]
    pub fn new() -> Self {
        Self { origin: Instant::now() }
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Millis {
        Millis(u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX))
    }
}
