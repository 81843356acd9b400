//! The advanced tier (`browser_evaluate`, raw protocol, console, network) and its read/write prologues.

use browserd_protocol::tools::{
    ConsoleParams, ConsoleResult, EvaluateParams, EvaluateResult, NetworkParams, NetworkResult, RawProtocolParams,
    RawProtocolResult,
};

use crate::error::CoreError;
use crate::provider::{FencingToken, SessionKey, TabHandle};

use super::{Runtime, SessionOp, refuse_locally};

impl Runtime {
    // ----- advanced tier -----

    /// `browser_evaluate`: like [`Self::act`] (activation, ownership, the session's write lease, a debugger lease
    /// for the call) since a script may change the page. Whether the tier is enabled is the caller's policy.
    pub async fn evaluate(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        params: &EvaluateParams,
    ) -> Result<EvaluateResult, CoreError> {
        let (token, _op) = self.enter_write(session, tab).await?;
        let provider = self.inner.provider.clone();
        self.with_debugger(session, tab, move |mut ctx| async move {
            ctx.fencing = Some(token);
            provider.evaluate(&ctx, tab, params).await
        })
        .await
    }

    /// `browser_cdp`: a raw protocol command, checked like [`Self::evaluate`] (it may change the page). The method
    /// policy is the caller's.
    pub async fn raw_protocol(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        params: &RawProtocolParams,
    ) -> Result<RawProtocolResult, CoreError> {
        let (token, _op) = self.enter_write(session, tab).await?;
        let provider = self.inner.provider.clone();
        self.with_debugger(session, tab, move |mut ctx| async move {
            ctx.fencing = Some(token);
            provider.raw_protocol(&ctx, tab, params).await
        })
        .await
    }

    /// `browser_console`: a read, checked like [`Self::observe`].
    pub async fn console(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        params: &ConsoleParams,
    ) -> Result<ConsoleResult, CoreError> {
        let _op = self.enter_read(session, tab).await?;
        let provider = self.inner.provider.clone();
        self.with_debugger(session, tab, move |ctx| async move { provider.console(&ctx, tab, params).await }).await
    }

    /// `browser_network`: a read, checked like [`Self::observe`].
    pub async fn network(
        &self,
        session: &SessionKey,
        tab: TabHandle,
        params: &NetworkParams,
    ) -> Result<NetworkResult, CoreError> {
        let _op = self.enter_read(session, tab).await?;
        let provider = self.inner.provider.clone();
        self.with_debugger(session, tab, move |ctx| async move { provider.network(&ctx, tab, params).await }).await
    }

    /// The prologue of a read of a tab (`observe`, `describe_target`, the advanced reads): the session's serial guard,
    /// activation, ownership (local refusals before any browser round trip), recovery retries and the connection, then
    /// ownership again.
    pub(super) async fn enter_read(&self, session: &SessionKey, tab: TabHandle) -> Result<SessionOp, CoreError> {
        let op = self.enter_tab(session, tab).await?;
        self.engine().check_tab_access(session, tab)?;
        Ok(op)
    }

    /// The prologue of an advanced write: as [`Self::enter_read`], then the session's write lease on the tab.
    pub(super) async fn enter_write(
        &self,
        session: &SessionKey,
        tab: TabHandle,
    ) -> Result<(FencingToken, SessionOp), CoreError> {
        let op = self.enter_tab(session, tab).await?;
        let now = self.now();
        let token = self.engine().check_write(session, tab, None, now)?;
        Ok((token, op))
    }

    /// What every tab operation does first: the session's serial guard, activation, the tab's ownership checked
    /// locally (before any browser round trip), pending events, recovery retries and the connection.
    async fn enter_tab(&self, session: &SessionKey, tab: TabHandle) -> Result<SessionOp, CoreError> {
        let op = self.serialized(session).await?;
        self.engine().check_active(session)?;
        self.drain_events(session).await;
        self.tell_restart(session)?;
        refuse_locally(self.engine().check_tab_access(session, tab))?;
        self.prelude(session).await;
        self.ensure_connected(session).await?;
        Ok(op)
    }
}
