//! Back-pressure (BRIEF §7): one running page operation per tab, a bounded queue of waiting requests, a global cap
//! on concurrent page operations, and the stop gate that cancels queued and running page work.
//!
//! Beyond a limit a request gets a typed error with `retryAfterMs` (`QUEUE_FULL`, `TOO_MANY_CONCURRENT_OPS`); nothing
//! is queued without bound. The tab limit (3 controlled tabs per task) is enforced by the core engine.
//!
//! Reads during a write: the gate knows which write runs on each tab ([`RunningWrite`]) and keeps the tab's latest
//! observation, so a read asked for while a write runs either waits for it (`consistent`, the default, bounded by
//! [`CONSISTENT_READ_WAIT`]) or answers at once with the page as last seen, marked `stale` and naming the write.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use browserd_core::provider::TabHandle;
use browserd_protocol::lifecycle::Usage;
use browserd_protocol::{ErrorCode, ErrorData};
use tokio::sync::{OwnedMutexGuard, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// Retry hint when the queue is full.
pub const QUEUE_RETRY_AFTER_MS: u64 = 250;
/// Retry hint when every page-operation slot is busy.
pub const CONCURRENCY_RETRY_AFTER_MS: u64 = 500;
/// How long a `consistent` read waits for a write running on its tab before it answers `stale` instead (when an
/// earlier observation of the tab exists; otherwise it keeps waiting).
pub const CONSISTENT_READ_WAIT: Duration = Duration::from_secs(2);

/// Tabs whose latest observation is kept for `stale` reads (handles grow, so the lowest is the oldest tab).
pub const MAX_REMEMBERED: usize = 32;

/// A write running on a tab, as a concurrent read names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningWrite {
    /// The write's trace id: the caller's `callId`, else one the broker made up.
    pub trace: String,
    /// The tool, e.g. `browser_act`.
    pub tool: String,
}

/// The configured limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitConfig {
    /// Requests that may wait at once.
    pub max_queued: u32,
    /// Page operations running at once.
    pub max_concurrent: u32,
    /// How long a request waits for a free page-operation slot.
    pub concurrency_wait: Duration,
}

#[derive(Debug, Default)]
struct Shared {
    running_tabs: BTreeSet<TabHandle>,
    tab_locks: BTreeMap<TabHandle, Arc<tokio::sync::Mutex<()>>>,
    writes: BTreeMap<TabHandle, RunningWrite>,
    /// The latest observation of each tab (JSON, at most one per tab; forgotten with the tab).
    seen: BTreeMap<TabHandle, Arc<serde_json::Value>>,
}

/// The admission gate for page operations. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Gate {
    config: LimitConfig,
    global: Arc<Semaphore>,
    queued: Arc<AtomicU32>,
    running: Arc<AtomicU32>,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<Mutex<CancellationToken>>,
}

/// A running page operation's slot; dropping it frees the tab and the global slot.
#[derive(Debug)]
pub struct Admission {
    _tab: Option<OwnedMutexGuard<()>>,
    _global: OwnedSemaphorePermit,
    tab: Option<TabHandle>,
    write: bool,
    gate: Gate,
    /// Fired by the stop gate: the operation must stop and report `USER_STOPPED`.
    pub stop: CancellationToken,
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.gate.running.fetch_sub(1, Ordering::SeqCst);
        if let Some(tab) = self.tab {
            let mut shared = self.gate.lock();
            shared.running_tabs.remove(&tab);
            if self.write {
                shared.writes.remove(&tab);
            }
        }
    }
}

struct Queued(Arc<AtomicU32>);

impl Drop for Queued {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The error a stopped request reports.
#[must_use]
pub fn user_stopped(what: &str) -> ErrorData {
    ErrorData::new(ErrorCode::UserStopped, format!("browser control was stopped by the user; {what}"))
}

impl Gate {
    /// A gate with these limits.
    #[must_use]
    pub fn new(config: LimitConfig) -> Self {
        Self {
            config,
            global: Arc::new(Semaphore::new(config.max_concurrent.max(1) as usize)),
            queued: Arc::new(AtomicU32::new(0)),
            running: Arc::new(AtomicU32::new(0)),
            shared: Arc::new(Mutex::new(Shared::default())),
            stop: Arc::new(Mutex::new(CancellationToken::new())),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn stop_token(&self) -> CancellationToken {
        self.stop.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    fn enqueue(&self) -> Result<Queued, ErrorData> {
        let max = self.config.max_queued;
        let mut current = self.queued.load(Ordering::SeqCst);
        loop {
            if current >= max {
                return Err(ErrorData::new(
                    ErrorCode::QueueFull,
                    format!("{current} requests are already waiting (the limit is {max}); nothing was done"),
                )
                .with_retry_after_ms(QUEUE_RETRY_AFTER_MS)
                .with_details(serde_json::json!({"queued": current, "max": max})));
            }
            match self.queued.compare_exchange(current, current + 1, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return Ok(Queued(self.queued.clone())),
                Err(now) => current = now,
            }
        }
    }

    /// Waits for the tab's running slot (if `tab`) and a global page-operation slot.
    ///
    /// # Errors
    /// `QUEUE_FULL` when the request would have to wait and the queue is full, `TOO_MANY_CONCURRENT_OPS` when no
    /// global slot frees up within the configured wait, `USER_STOPPED` when the stop gate fires while waiting.
    pub async fn admit(&self, tab: Option<TabHandle>) -> Result<Admission, ErrorData> {
        self.admit_as(tab, None).await
    }

    /// [`Gate::admit`] for a write: while it runs, reads of `tab` see it as [`Gate::running_write`].
    ///
    /// # Errors
    /// As [`Gate::admit`].
    pub async fn admit_write(&self, tab: TabHandle, write: RunningWrite) -> Result<Admission, ErrorData> {
        self.admit_as(Some(tab), Some(write)).await
    }

    async fn admit_as(&self, tab: Option<TabHandle>, write: Option<RunningWrite>) -> Result<Admission, ErrorData> {
        let stop = self.stop_token();
        let tab_guard = match tab {
            None => None,
            Some(tab) => {
                let lock = self.lock().tab_locks.entry(tab).or_default().clone();
                match lock.clone().try_lock_owned() {
                    Ok(guard) => Some(guard),
                    Err(_) => {
                        let _queued = self.enqueue()?;
                        tokio::select! {
                            guard = lock.lock_owned() => Some(guard),
                            () = stop.cancelled() => return Err(user_stopped("this queued request was cancelled")),
                        }
                    }
                }
            }
        };
        let global = match self.global.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                let busy = || {
                    let max = self.config.max_concurrent;
                    ErrorData::new(
                        ErrorCode::TooManyConcurrentOps,
                        format!("{max} page operations are already running (the limit is {max}); nothing was done"),
                    )
                    .with_retry_after_ms(CONCURRENCY_RETRY_AFTER_MS)
                    .with_details(serde_json::json!({"running": max, "max": max}))
                };
                if self.config.concurrency_wait.is_zero() {
                    return Err(busy());
                }
                let _queued = self.enqueue()?;
                tokio::select! {
                    permit = tokio::time::timeout(self.config.concurrency_wait, self.global.clone().acquire_owned()) => {
                        match permit {
                            Ok(Ok(permit)) => permit,
                            _ => return Err(busy()),
                        }
                    }
                    () = stop.cancelled() => return Err(user_stopped("this queued request was cancelled")),
                }
            }
        };
        self.running.fetch_add(1, Ordering::SeqCst);
        let is_write = write.is_some();
        if let Some(tab) = tab {
            let mut shared = self.lock();
            shared.running_tabs.insert(tab);
            if let Some(write) = write {
                shared.writes.insert(tab, write);
            }
        }
        Ok(Admission { _tab: tab_guard, _global: global, tab, write: is_write, gate: self.clone(), stop })
    }

    /// The stop gate: cancels every queued and running page operation (they report `USER_STOPPED`); later requests
    /// are admitted again. Returns (queued, running) at the moment of the stop.
    pub fn stop_all(&self) -> (u32, u32) {
        let queued = self.queued.load(Ordering::SeqCst);
        let running = self.running.load(Ordering::SeqCst);
        let old = std::mem::replace(&mut *self.stop.lock().unwrap_or_else(std::sync::PoisonError::into_inner), {
            CancellationToken::new()
        });
        old.cancel();
        (queued, running)
    }

    /// The write running on `tab`, if one is.
    #[must_use]
    pub fn running_write(&self, tab: TabHandle) -> Option<RunningWrite> {
        self.lock().writes.get(&tab).cloned()
    }

    /// Keeps `observation` as the tab's latest (what a `stale` read answers while a write runs). At most
    /// [`MAX_REMEMBERED`] tabs are remembered; beyond that the oldest tab's is dropped.
    pub fn remember_observation(&self, tab: TabHandle, observation: serde_json::Value) {
        let mut shared = self.lock();
        shared.seen.insert(tab, Arc::new(observation));
        while shared.seen.len() > MAX_REMEMBERED {
            shared.seen.pop_first();
        }
    }

    /// The tab's latest observation, if one was made.
    #[must_use]
    pub fn last_observation(&self, tab: TabHandle) -> Option<Arc<serde_json::Value>> {
        self.lock().seen.get(&tab).cloned()
    }

    /// Forgets a closed tab's slot and its latest observation.
    pub fn forget_tab(&self, tab: TabHandle) {
        let mut shared = self.lock();
        shared.seen.remove(&tab);
        if let Some(lock) = shared.tab_locks.get(&tab)
            && Arc::strong_count(lock) == 1
        {
            shared.tab_locks.remove(&tab);
        }
    }

    /// Requests waiting now.
    #[must_use]
    pub fn queued(&self) -> Usage {
        Usage { used: self.queued.load(Ordering::SeqCst), max: self.config.max_queued }
    }

    /// Page operations running now.
    #[must_use]
    pub fn concurrent(&self) -> Usage {
        Usage { used: self.running.load(Ordering::SeqCst), max: self.config.max_concurrent }
    }

    /// Running actions on the busiest tab (0 or 1).
    #[must_use]
    pub fn running_per_tab(&self) -> Usage {
        Usage { used: u32::from(!self.lock().running_tabs.is_empty()), max: 1 }
    }

    /// Whether `tab` has a running page operation.
    #[must_use]
    pub fn is_running(&self, tab: TabHandle) -> bool {
        self.lock().running_tabs.contains(&tab)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(max_queued: u32, max_concurrent: u32, wait_ms: u64) -> Gate {
        Gate::new(LimitConfig { max_queued, max_concurrent, concurrency_wait: Duration::from_millis(wait_ms) })
    }

    #[tokio::test]
    async fn a_second_request_on_a_tab_waits_and_the_queue_is_bounded() {
        let g = gate(1, 4, 1000);
        let first = g.admit(Some(TabHandle(1))).await.unwrap();
        assert!(g.is_running(TabHandle(1)));
        let g2 = g.clone();
        let waiting = tokio::spawn(async move { g2.admit(Some(TabHandle(1))).await.map(|_| ()) });
        while g.queued().used == 0 {
            tokio::task::yield_now().await;
        }
        let err = g.admit(Some(TabHandle(1))).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::QueueFull);
        assert_eq!(err.retry_after_ms, Some(QUEUE_RETRY_AFTER_MS));
        drop(first);
        waiting.await.unwrap().unwrap();
        assert_eq!(g.queued().used, 0);
        assert_eq!(g.concurrent().used, 0);
    }

    #[tokio::test]
    async fn the_global_cap_refuses_with_a_retry_hint() {
        let g = gate(16, 1, 0);
        let _a = g.admit(Some(TabHandle(1))).await.unwrap();
        let err = g.admit(Some(TabHandle(2))).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::TooManyConcurrentOps);
        assert_eq!(err.retry_after_ms, Some(CONCURRENCY_RETRY_AFTER_MS));
        assert_eq!(g.concurrent(), Usage { used: 1, max: 1 });
    }

    #[tokio::test]
    async fn a_running_write_is_visible_to_reads_until_it_ends() {
        let g = gate(16, 4, 1000);
        let write = RunningWrite { trace: "call-7".into(), tool: "browser_act".into() };
        let running = g.admit_write(TabHandle(1), write.clone()).await.unwrap();
        assert_eq!(g.running_write(TabHandle(1)), Some(write));
        assert_eq!(g.running_write(TabHandle(2)), None);
        let read = g.admit(Some(TabHandle(2))).await.unwrap();
        drop(read);
        assert!(g.running_write(TabHandle(1)).is_some(), "a read on another tab ends nothing");
        drop(running);
        assert_eq!(g.running_write(TabHandle(1)), None);

        g.remember_observation(TabHandle(1), serde_json::json!({"url": "https://a.test/"}));
        assert_eq!(g.last_observation(TabHandle(1)).unwrap()["url"], "https://a.test/");
        g.forget_tab(TabHandle(1));
        assert!(g.last_observation(TabHandle(1)).is_none(), "a closed tab's observation is dropped");
        for n in 0..=MAX_REMEMBERED as u64 {
            g.remember_observation(TabHandle(100 + n), serde_json::json!({}));
        }
        assert!(g.last_observation(TabHandle(100)).is_none(), "bounded: the oldest tab's is dropped");
        assert!(g.last_observation(TabHandle(101)).is_some());
    }

    #[tokio::test]
    async fn the_stop_gate_cancels_queued_and_running_work() {
        let g = gate(16, 4, 1000);
        let running = g.admit(Some(TabHandle(1))).await.unwrap();
        let g2 = g.clone();
        let queued = tokio::spawn(async move { g2.admit(Some(TabHandle(1))).await.map(|_| ()) });
        while g.queued().used == 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(g.stop_all(), (1, 1));
        assert!(running.stop.is_cancelled());
        assert_eq!(queued.await.unwrap().unwrap_err().code, ErrorCode::UserStopped);
        drop(running);
        let after = g.admit(Some(TabHandle(1))).await.unwrap();
        assert!(!after.stop.is_cancelled(), "work after the stop runs normally");
    }
}
