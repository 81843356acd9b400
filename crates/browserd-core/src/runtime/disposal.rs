//! Plugin disposal: refuse new work, wait for active requests, final cleanup of every open session.

use std::sync::atomic::Ordering;

use crate::bridge::{BridgeState, StopCause};
use crate::lifecycle::{CleanupReport, CloseReason};
use crate::provider::SessionKey;

use super::{Runtime, lock};

/// What plugin disposal did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisposalReport {
    /// Whether every active request finished within [`RuntimeConfig::dispose_wait`](super::RuntimeConfig::dispose_wait) (otherwise
    /// the rest were cancelled).
    pub waited_for_active: bool,
    /// The final cleanup of every session that was still open.
    pub sessions: Vec<(SessionKey, CleanupReport)>,
    /// Recovery records left (kept for a later retry; never dropped silently).
    pub pending_recovery: usize,
    /// The bridge after disposal (stopped).
    pub bridge: BridgeState,
}

impl Runtime {
    // ----- disposal -----

    /// Plugin disposal: refuse new work, wait for active requests (up to
    /// [`RuntimeConfig::dispose_wait`](super::RuntimeConfig::dispose_wait), then cancel them), run the final cleanup of every open
    /// session, retry recovery once more, stop the bridge. Never blocks host exit for longer
    /// than the waits and the cleanup deadlines.
    pub async fn dispose_plugin(&self) -> DisposalReport {
        self.inner.closing.store(true, Ordering::SeqCst);
        for (_, token) in std::mem::take(&mut *lock(&self.inner.waits)) {
            token.cancel();
        }
        let waited = tokio::time::timeout(self.inner.config.dispose_wait, self.wait_idle()).await.is_ok();
        if !waited {
            self.inner.shutdown.cancel();
            let _ = tokio::time::timeout(self.inner.config.cleanup_timeout, self.wait_idle()).await;
        }
        let open: Vec<SessionKey> =
            self.engine().sessions().filter(|s| s.closed().is_none()).map(|s| s.key().clone()).collect();
        let mut sessions = Vec::new();
        for key in open {
            let Ok(slot) = self.slot(&key) else { continue };
            let _serial = slot.lock().await;
            if let Ok(report) = self.close_locked(&key, CloseReason::PluginUnload).await {
                sessions.push((key, report));
            }
        }
        let now = self.now();
        let mut engine = self.engine();
        engine.handle_bridge_stopped(StopCause::PluginDisposal, now);
        DisposalReport {
            waited_for_active: waited,
            sessions,
            pending_recovery: engine.recovery().len(),
            bridge: engine.bridge().state(),
        }
    }

    pub(super) async fn wait_idle(&self) {
        loop {
            let notified = self.inner.idle.notified();
            if self.inner.active.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Number of requests in progress.
    #[must_use]
    pub fn active_requests(&self) -> usize {
        self.inner.active.load(Ordering::SeqCst)
    }
}
