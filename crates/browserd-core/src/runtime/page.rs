//! Write leases, observe and act: the page operations, each under a debugger lease, and popup adoption.

use browserd_protocol::{ActParams, ActionResult, Observation, ObserveParams};

use crate::debugger::DebuggerAcquire;
use crate::error::CoreError;
use crate::provider::{FencingToken, OpContext, ProviderError, ProviderKind, SessionKey, TabHandle, TargetDescription};

use super::guards::{Acting, DebuggerUse, UsePhase};
use super::{Runtime, refuse_locally};

impl Runtime {
    // ----- leases, observe, act -----

    /// Acquire the tab's write lease; returns its fencing token.
    pub async fn acquire_write_lease(&self, session: &SessionKey, tab: TabHandle) -> Result<FencingToken, CoreError> {
        let _op = self.serialized(session).await?;
        self.drain_events(session).await;
        let now = self.now();
        self.engine().acquire_write_lease(session, tab, now)
    }

    /// Release the tab's write lease. Idempotent.
    pub async fn release_write_lease(&self, session: &SessionKey, tab: TabHandle) -> Result<bool, CoreError> {
        let _op = self.serialized(session).await?;
        self.engine().release_write_lease(session, tab)
    }

    pub(super) async fn with_debugger<T, F, Fut>(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        op: F,
    ) -> Result<T, CoreError>
    where
        F: FnOnce(OpContext) -> Fut,
        Fut: Future<Output = Result<T, ProviderError>>,
    {
        let acquire = self.engine().debugger_acquire(session, tab);
        let mut usage = DebuggerUse { inner: self.inner.clone(), tab, phase: UsePhase::InUse };
        if acquire == DebuggerAcquire::NeedsAttach {
            usage.phase = UsePhase::Attaching;
            let ctx = self.ctx(session, self.inner.config.op_timeout);
            let res = self.inner.provider.attach_debugger(&ctx, tab).await;
            let now = self.now();
            self.engine().handle_attach_result(tab, &res, now);
            if let Err(e) = res {
                usage.phase = UsePhase::Done; // the engine already dropped the reference
                return Err(self.provider_err(e, Some(tab)));
            }
            usage.phase = UsePhase::InUse;
        }
        let ctx = self.ctx(session, self.inner.config.op_timeout);
        let res = op(ctx).await.map_err(|e| self.provider_err(e, Some(tab)));
        drop(usage);
        res
    }

    /// `browser_observe`: checks activation and ownership, takes a debugger lease for the
    /// operation and releases it after (idle detach follows).
    pub async fn observe(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        params: &ObserveParams,
    ) -> Result<Observation, CoreError> {
        // Local refusals (another session's tab, a user tab) come before any browser round trip.
        let _op = self.enter_read(session, tab).await?;
        let provider = self.inner.provider.clone();
        self.with_debugger(session, tab, move |ctx| async move { provider.observe(&ctx, tab, params).await }).await
    }

    /// What an action's target is, before the action (read only; see [`crate::provider::Provider::describe_target`]):
    /// checks activation and the tab's ownership as `observe` does, under a debugger lease.
    pub async fn describe_target(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        params: &ActParams,
    ) -> Result<Option<TargetDescription>, CoreError> {
        let _op = self.enter_read(session, tab).await?;
        let provider = self.inner.provider.clone();
        self.with_debugger(session, tab, move |ctx| async move { provider.describe_target(&ctx, tab, params).await })
            .await
    }

    /// `browser_act`: checks activation, ownership and the write lease (with `token`, or taking
    /// the session's lease when `None`), takes a debugger lease for the operation and releases
    /// it after. The provider call carries the fencing token for the last-hop check.
    pub async fn act(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        params: &ActParams,
        token: Option<FencingToken>,
    ) -> Result<ActionResult, CoreError> {
        let _op = self.serialized(session).await?;
        self.engine().check_active(session)?;
        self.drain_events(session).await;
        self.tell_restart(session)?;
        refuse_locally(self.engine().check_tab_access(session, tab))?;
        self.prelude(session).await;
        self.ensure_connected(session).await?;
        let now = self.now();
        let token = self.engine().check_write(session, tab, token, now)?;
        let provider = self.inner.provider.clone();
        self.engine().begin_action(session, tab);
        let acting = Acting { inner: self.inner.clone(), tab };
        let res = self
            .with_debugger(session, tab, move |mut ctx| async move {
                ctx.fencing = Some(token);
                provider.act(&ctx, tab, params).await
            })
            .await;
        if let Ok(result) = &res {
            self.adopt_popups(session, &result.effects.tabs_opened).await;
        }
        drop(acting);
        res
    }

    /// After an action, while it still counts as running: tabs it opened (popups, `target=_blank`) become the
    /// session's scratch tabs once the browser records the session's control of them (`claim_tab`). The action's
    /// effect summary already lists them in `tabs_opened`. A tab whose claim fails stays the user's.
    ///
    /// Unsupported over the extension relay: its ownership records let a session close only tabs it created
    /// itself, so an adopted popup could never be closed; popups there stay the user's until claimed.
    pub(super) async fn adopt_popups(&self, session: &SessionKey, reported: &[browserd_protocol::TabId]) {
        if self.inner.provider.kind() == ProviderKind::Extension {
            return;
        }
        self.drain_events(session).await;
        let unknown = reported.iter().map(|t| TabHandle(t.0)).any(|t| self.engine().tabs().get(t).is_none());
        if unknown {
            // The action saw a tab whose creation event has not arrived yet: read the tab list instead.
            let ctx = self.ctx(session, self.inner.config.op_timeout);
            if let Ok(tabs) = self.inner.provider.list_tabs(&ctx).await {
                let now = self.now();
                self.engine().handle_tab_snapshot(&tabs, now);
            }
        }
        let popups = self.engine().take_popups(session);
        for (popup, opener) in popups {
            let ctx = self.ctx(session, self.inner.config.op_timeout);
            if self.inner.provider.claim_tab(&ctx, popup).await.is_ok() {
                let now = self.now();
                self.engine().handle_popup_adopted(session, popup, opener, now);
            }
        }
    }
}
