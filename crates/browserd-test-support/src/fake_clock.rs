//! A fake clock for deterministic tests: time moves only when a test calls [`FakeClock::advance`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use browserd_core::Millis;
use browserd_core::clock::Clock;

/// A manually advanced clock. Clones share the same time.
#[derive(Debug, Clone, Default)]
pub struct FakeClock(Arc<AtomicU64>);

impl FakeClock {
    /// A clock at 0 ms.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Move time forward by `ms`.
    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    /// Set the time (never backwards: a smaller value is ignored).
    pub fn set(&self, at: Millis) {
        self.0.fetch_max(at.0, Ordering::SeqCst);
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Millis {
        Millis(self.0.load(Ordering::SeqCst))
    }
}
