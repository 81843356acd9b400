//! `browser_context_reset` and the `context.reset` method: clean up the session's tabs, then hide its browser tools
//! (telling its clients with `tools.changed`).

use browserd_core::provider::SessionKey;
use browserd_protocol::lifecycle::{ContextResetParams, ContextResetResult};
use browserd_protocol::tools::BrowserContextResetParams;
use browserd_protocol::{ErrorData, SessionId};
use serde_json::Value;

use crate::dispatch::{err, to_value};
use crate::server::Broker;
use crate::to_proto;
use crate::tools::ToolCtx;

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, params: BrowserContextResetParams) -> Result<Value, ErrorData> {
    ctx.mark_dispatched()?;
    to_value(&ctx.broker.reset_context(ctx.session, ctx.key, params.disconnect_client).await?)
}

impl Broker {
    /// The `context.reset` method.
    pub(crate) async fn context_reset(&self, p: ContextResetParams) -> Result<ContextResetResult, ErrorData> {
        let key = self.key_of(&p.session)?;
        self.reset_context(&p.session, &key, p.disconnect_client).await
    }

    /// Resets the context of the session `id`: the tool and the method alike.
    pub(crate) async fn reset_context(
        &self,
        id: &SessionId,
        key: &SessionKey,
        disconnect_client: bool,
    ) -> Result<ContextResetResult, ErrorData> {
        let report = self.runtime.context_reset(key).await.map_err(|e| err(&e))?;
        if !report.tools_active {
            let set = self.tool_set(id, key, false).await?;
            self.notify(id, &set);
            if let Some(info) = self.tables().sessions.get_mut(id) {
                info.current_tab = None;
            }
        }
        // `disconnectClient`: this client's connection to the broker closes right after this reply (its other
        // sessions wait out their grace period, as on any disconnect); other clients and the shared bridge stay.
        let disconnected = disconnect_client
            && report.ok
            && crate::sessions::REQUEST_CONN
                .try_with(|conn| self.tables().disconnect_after_reply.insert(*conn))
                .is_ok();
        Ok(to_proto::context_reset_result(&report, disconnected))
    }
}
