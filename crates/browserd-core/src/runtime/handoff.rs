//! `browser_handoff` and its wait for the user (`until`): the wait's options, progress and end.

use std::time::Duration;

use browserd_protocol::{Expectation, ExpectationResult, ObserveParams};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::error::{CoreError, ErrorKind};
use crate::handoff;
use crate::lifecycle::{CleanupReport, HandoffCheck};
use crate::provider::{FencingToken, ProviderEvent, SessionKey, TabHandle};

use super::guards::AwaitingUser;
use super::{Runtime, lock, millis};

/// How `browser_handoff` waits for the user to finish (`until`).
#[derive(Debug, Clone, PartialEq)]
pub struct HandoffWait {
    /// Every one of these must hold (see [`crate::handoff`] for the kinds that can be checked).
    pub until: Vec<Expectation>,
    /// Wait at most this long; `None` is [`RuntimeConfig::handoff_default_wait`](super::RuntimeConfig::handoff_default_wait).
    pub timeout: Option<Duration>,
}

/// How a handoff wait ended, when it was not an error.
#[derive(Debug, Clone, PartialEq)]
pub enum HandoffEnd {
    /// Every criterion held; the session holds the tab's write lease again.
    Completed {
        /// One result per criterion.
        evidence: Vec<ExpectationResult>,
        /// The tab's URL.
        url: String,
        /// The re-acquired write lease.
        token: FencingToken,
        /// How long the wait took (on the runtime's clock).
        waited_ms: u64,
    },
    /// The deadline passed first. The tab stays handed off (no lease; the mark holds through this turn).
    TimedOut {
        /// One result per criterion, as last checked.
        evidence: Vec<ExpectationResult>,
        /// The tab's URL.
        url: String,
        /// How long the wait took.
        waited_ms: u64,
    },
    /// The user closed the tab.
    TabClosed {
        /// One result per criterion, as last checked (empty when the tab was gone at the first look).
        evidence: Vec<ExpectationResult>,
        /// How long the wait took.
        waited_ms: u64,
    },
}

/// A waiting handoff's progress, reported after each look at the tab.
#[derive(Debug, Clone, PartialEq)]
pub struct HandoffProgress {
    /// Looks so far.
    pub checks: u32,
    /// Time waited.
    pub waited_ms: u64,
    /// The deadline, from the start of the wait.
    pub timeout_ms: u64,
    /// The criteria as last checked.
    pub evidence: Vec<ExpectationResult>,
}

/// The next event about `tab` (or one that may hide one: lost events, a reconnect). Pends forever when the
/// provider's event channel is closed, so the caller's other wake-ups decide.
async fn next_event_about(events: &mut broadcast::Receiver<ProviderEvent>, tab: TabHandle) {
    loop {
        match events.recv().await {
            Ok(ProviderEvent::TabUpdated(info) | ProviderEvent::TabCreated(info)) if info.tab == tab => return,
            Ok(ProviderEvent::TabClosed { tab: t, .. }) if t == tab => return,
            Ok(ProviderEvent::ResyncRequired | ProviderEvent::ConnectionRestored { .. })
            | Err(broadcast::error::RecvError::Lagged(_)) => return,
            Ok(_) => {}
            Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
        }
    }
}

impl Runtime {
    /// `browser_handoff`: mark handoff, detach the tab's debugger, drop the write lease; the
    /// page and its ownership stay (retained through this turn's end).
    pub async fn handoff(&self, session: &SessionKey, tab: TabHandle) -> Result<CleanupReport, CoreError> {
        let _op = self.serialized(session).await?;
        self.drain_events(session).await;
        let now = self.now();
        let plan = self.engine().plan_handoff(session, tab, now)?;
        Ok(self.execute(plan).await)
    }

    /// `browser_handoff` with `until`, after [`Self::handoff`]: wait for the user to finish. The tab is only looked
    /// at, never acted on: no write lease (nobody may write to it meanwhile), no input; its URL comes from browser
    /// events, and criteria that need the page read it with an observation (a debugger lease for the read). It looks
    /// again on every event about the tab and at least every [`RuntimeConfig::handoff_poll`](super::RuntimeConfig::handoff_poll); the session's lock is
    /// held only for each look, so turn end and close are never blocked by the wait, and they cancel it.
    ///
    /// Ends with [`HandoffEnd::Completed`] (the write lease re-acquired), [`HandoffEnd::TimedOut`] or
    /// [`HandoffEnd::TabClosed`]; `progress` hears about each look.
    ///
    /// # Errors
    /// `INVALID_PARAMS` (no criteria, a timeout above [`RuntimeConfig::handoff_max_wait`](super::RuntimeConfig::handoff_max_wait), a tab not handed off),
    /// `CANCELLED` (turn end, finalize, reset, close, or the tab's handoff ended), `SHUTTING_DOWN`, and the usual
    /// session and ownership refusals. The tab stays handed off in every case.
    pub async fn await_handoff(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        wait: &HandoffWait,
        progress: &(dyn Fn(&HandoffProgress) + Send + Sync),
    ) -> Result<HandoffEnd, CoreError> {
        let config = &self.inner.config;
        let timeout = wait.timeout.unwrap_or(config.handoff_default_wait);
        if wait.until.is_empty() {
            return Err(CoreError::new(
                ErrorKind::InvalidRequest,
                "a handoff wait needs at least one `until` criterion; without one, hand off and ask the user",
            ));
        }
        if timeout > config.handoff_max_wait {
            return Err(CoreError::new(
                ErrorKind::InvalidRequest,
                format!(
                    "a handoff may wait at most {} ms (asked: {} ms); ask for less, or hand off and check back later",
                    millis(config.handoff_max_wait),
                    millis(timeout)
                ),
            ));
        }
        // Subscribed before the first look, so no event between the look and the wait is missed.
        let mut events = self.inner.provider.events();
        let cancel = self.wait_token(session);
        let start = self.now();
        let deadline = start.plus(millis(timeout));
        let start_url = {
            let _op = self.serialized(session).await?;
            self.drain_events(session).await;
            self.engine().begin_handoff_wait(session, tab)?
        };
        let _awaiting = AwaitingUser { inner: self.inner.clone(), tab };
        let mut checks = 0u32;
        loop {
            let (state, evidence) = tokio::select! {
                r = self.look_at_handoff(session, tab, &wait.until, &start_url) => r?,
                () = cancel.cancelled() => return Err(Self::wait_cancelled(tab)),
            };
            checks += 1;
            let now = self.now();
            let waited_ms = now.0.saturating_sub(start.0);
            match state {
                HandoffCheck::Closed => return Ok(HandoffEnd::TabClosed { evidence, waited_ms }),
                HandoffCheck::NoLongerHandedOff => {
                    return Err(CoreError::new(
                        ErrorKind::Cancelled,
                        format!(
                            "stopped waiting: tab {tab} is no longer handed off by this session (cleanup ran or \
                             control changed); list tabs to see where it stands"
                        ),
                    ));
                }
                HandoffCheck::Waiting { url } if handoff::all_passed(&evidence) => {
                    let token = {
                        let mut engine = self.engine();
                        engine.end_handoff_wait(tab);
                        engine.acquire_write_lease(session, tab, now)?
                    };
                    return Ok(HandoffEnd::Completed { evidence, url, token, waited_ms });
                }
                HandoffCheck::Waiting { url } => {
                    if now >= deadline {
                        return Ok(HandoffEnd::TimedOut { evidence, url, waited_ms });
                    }
                    progress(&HandoffProgress { checks, waited_ms, timeout_ms: millis(timeout), evidence });
                }
            }
            tokio::select! {
                () = cancel.cancelled() => return Err(Self::wait_cancelled(tab)),
                () = tokio::time::sleep(config.handoff_poll) => {}
                () = next_event_about(&mut events, tab) => {}
            }
        }
    }

    /// One read-only look at a waited-on handoff, under the session's lock.
    pub(super) async fn look_at_handoff(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        until: &[Expectation],
        start_url: &str,
    ) -> Result<(HandoffCheck, Vec<ExpectationResult>), CoreError> {
        let _op = self.serialized(session).await?;
        self.drain_events(session).await;
        let HandoffCheck::Waiting { mut url } = self.engine().check_handoff_wait(session, tab) else {
            return Ok((self.engine().check_handoff_wait(session, tab), Vec::new()));
        };
        let mut content = None;
        if handoff::needs_page(until) && self.ensure_connected(session).await.is_ok() {
            let provider = self.inner.provider.clone();
            let params = ObserveParams::default();
            let observed =
                self.with_debugger(session, tab, move |ctx| async move { provider.observe(&ctx, tab, &params).await });
            match observed.await {
                Ok(o) => {
                    url = o.url;
                    content = Some(o.untrusted_content);
                }
                // Gone (the provider error already recorded it) or any other failure: look again later.
                Err(_) => {
                    if self.engine().check_handoff_wait(session, tab) == HandoffCheck::Closed {
                        return Ok((HandoffCheck::Closed, Vec::new()));
                    }
                }
            }
        }
        let evidence = handoff::check(until, handoff::Seen { start_url, url: &url, content: content.as_deref() });
        Ok((HandoffCheck::Waiting { url }, evidence))
    }

    pub(super) fn wait_cancelled(tab: TabHandle) -> CoreError {
        CoreError::new(
            ErrorKind::Cancelled,
            format!(
                "stopped waiting for the user on tab {tab} (turn end, cleanup or shutdown); the tab stays handed off \
                 for this turn — ask the user whether they finished"
            ),
        )
    }

    /// A token that cancels one handoff wait of `session`; [`Self::cancel_handoff_waits`] fires it.
    pub(super) fn wait_token(&self, session: &SessionKey) -> CancellationToken {
        lock(&self.inner.waits)
            .entry(session.clone())
            .or_insert_with(|| self.inner.shutdown.child_token())
            .child_token()
    }

    /// Cancel `session`'s handoff waits (turn end, finalize, context reset, close). Waits started later get a
    /// fresh token.
    pub(super) fn cancel_handoff_waits(&self, session: &SessionKey) {
        if let Some(token) = lock(&self.inner.waits).remove(session) {
            token.cancel();
        }
    }
}
