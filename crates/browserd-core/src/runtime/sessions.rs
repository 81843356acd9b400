//! Sessions, turns, activation, tabs and marks: the operations that open or read state, with no cleanup plan.

use crate::error::CoreError;
use crate::lifecycle::{SessionStatus, TabView};
use crate::provider::{CreateTab, SessionKey, TabHandle, TabInfo};
use crate::tabs::{Mark, MarkKind};

use super::{Runtime, lock, refuse_locally};

impl Runtime {
    // ----- sessions, turns, activation -----

    /// `session.open`. Idempotent for an open session.
    pub async fn open_session(&self, session: &SessionKey) -> Result<(), CoreError> {
        let _active = self.enter()?;
        let now = self.now();
        self.engine().open_session(session, now)?;
        lock(&self.inner.slots).entry(session.clone()).or_default();
        let reconnects = self.engine().bridge().reconnects();
        lock(&self.inner.told).entry(session.clone()).or_insert(reconnects);
        Ok(())
    }

    /// `turn.begin`. Idempotent while a turn is open.
    pub async fn begin_turn(&self, session: &SessionKey) -> Result<u64, CoreError> {
        let _op = self.serialized(session).await?;
        self.engine().begin_turn(session)
    }

    /// Opens a turn if none is open, without waiting for the session's running operation: every tool call does this
    /// (turns come from the host's turn ends, not from tab activity), and a read must not queue behind a write.
    /// Idempotent while a turn is open.
    pub fn open_turn(&self, session: &SessionKey) -> Result<u64, CoreError> {
        self.engine().begin_turn(session)
    }

    /// `tools.activate`. Idempotent; returns whether the state changed.
    pub async fn activate_tools(&self, session: &SessionKey) -> Result<bool, CoreError> {
        let _op = self.serialized(session).await?;
        let now = self.now();
        self.engine().activate_tools(session, now)
    }

    // ----- tabs -----

    /// `browser_open`: create a scratch tab owned by the session.
    pub async fn open_tab(&self, session: &SessionKey, url: &str) -> Result<TabView, CoreError> {
        let _op = self.serialized(session).await?;
        self.engine().check_active(session)?;
        self.prelude(session).await;
        self.ensure_connected(session).await?;
        self.engine().check_open_tab(session)?;
        let ctx = self.ctx(session, self.inner.config.op_timeout);
        let req = CreateTab { url: url.to_owned(), background: true, group_for: Some(session.clone()) };
        let info = self.inner.provider.create_tab(&ctx, req).await.map_err(|e| self.provider_err(e, None))?;
        let now = self.now();
        Ok(self.engine().handle_tab_created(session, &info, now))
    }

    /// The browser's own record of `tab` right now (its tab list read again): the title a page set while it loaded,
    /// which the event saying so may not have delivered yet. `None` when the list cannot be read or lacks the tab.
    pub async fn tab_info_now(&self, session: &SessionKey, tab: TabHandle) -> Option<TabInfo> {
        let ctx = self.ctx(session, self.inner.config.op_timeout);
        let tabs = self.inner.provider.list_tabs(&ctx).await.ok()?;
        tabs.into_iter().find(|info| info.tab == tab)
    }

    /// `browser_claim`: take control of a user tab (released, never closed, at cleanup).
    pub async fn claim_tab(&self, session: &SessionKey, tab: TabHandle) -> Result<TabView, CoreError> {
        let _op = self.serialized(session).await?;
        self.engine().check_active(session)?;
        self.drain_events(session).await;
        self.tell_restart(session)?;
        refuse_locally(self.engine().check_claim(session, tab))?;
        self.prelude(session).await;
        self.ensure_connected(session).await?;
        if self.engine().begin_claim(session, tab)? {
            // Held for this session until the provider answers; given up if this call is dropped midway.
            // The hold ends when `_held` goes out of scope, after the owner is recorded: no claim passes in between.
            let _held = HeldClaim { rt: self, session, tab };
            let ctx = self.ctx(session, self.inner.config.op_timeout);
            self.inner.provider.claim_tab(&ctx, tab).await.map_err(|e| self.provider_err(e, Some(tab)))?;
            let now = self.now();
            self.engine().handle_claimed(session, tab, now);
        }
        self.engine().view(session, tab).ok_or_else(|| CoreError::unknown_tab(tab))
    }

    /// `browser_list`: every live tab with its provenance as seen by the session.
    pub async fn list_tabs(&self, session: &SessionKey) -> Result<Vec<TabView>, CoreError> {
        let _op = self.serialized(session).await?;
        self.engine().check_active(session)?;
        self.prelude(session).await;
        self.ensure_connected(session).await?;
        // Titles and URLs are read from the browser: a page's title from its `<title>` reaches no provider event (the
        // browser tells a tab's title when the page commits, as its URL, and when a script changes it), so the
        // records would list `127.0.0.1:8000/toast.html` where the tab shows "Toast". The list decides nothing else:
        // a tab it meets before the browser's own news of it is announced by the provider (`TabCreated`), taken in
        // here, so a tab the user just opened is listed at once.
        let ctx = self.ctx(session, self.inner.config.op_timeout);
        if let Ok(tabs) = self.inner.provider.list_tabs(&ctx).await {
            self.drain_events(session).await;
            self.engine().refresh_tab_info(&tabs);
        }
        Ok(self.engine().list_tabs(session))
    }

    /// Refuse a tool call from a stale tool snapshot (see [`Lifecycle::check_tool_snapshot`](crate::lifecycle::Lifecycle::check_tool_snapshot)).
    pub fn check_tool_snapshot(&self, session: &SessionKey, generation: u64) -> Result<(), CoreError> {
        self.engine().check_tool_snapshot(session, generation)
    }

    /// `browser_status` (works for closed sessions too; no tools needed).
    pub async fn status(&self, session: &SessionKey) -> Result<SessionStatus, CoreError> {
        self.drain_events(session).await;
        self.engine().status(session)
    }

    /// `browser_mark_deliverable` (turn-scoped; latest mark wins).
    pub async fn mark_deliverable(&self, session: &SessionKey, tab: TabHandle) -> Result<Mark, CoreError> {
        self.mark(session, tab, MarkKind::Deliverable).await
    }

    /// `browser_mark_handoff` (turn-scoped; latest mark wins).
    pub async fn mark_handoff(&self, session: &SessionKey, tab: TabHandle) -> Result<Mark, CoreError> {
        self.mark(session, tab, MarkKind::Handoff).await
    }

    pub(super) async fn mark(&self, session: &SessionKey, tab: TabHandle, kind: MarkKind) -> Result<Mark, CoreError> {
        let _op = self.serialized(session).await?;
        self.drain_events(session).await;
        self.engine().mark(session, tab, kind)
    }
}

/// A claim of `tab` handed to the provider for `session`: released in the engine when dropped (the answer came, or
/// the call was dropped midway), so a claim that never finishes cannot keep the tab from other sessions.
struct HeldClaim<'a> {
    rt: &'a Runtime,
    session: &'a SessionKey,
    tab: TabHandle,
}

impl Drop for HeldClaim<'_> {
    fn drop(&mut self) {
        self.rt.engine().abort_claim(self.session, self.tab);
    }
}
