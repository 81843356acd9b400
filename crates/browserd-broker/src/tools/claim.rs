//! `browser_claim`: take control of a user's tab (released, not closed, at cleanup); with `resume: true`, resume a
//! tab after Stop (a new write lease and a full observation).

use browserd_protocol::ErrorData;
use browserd_protocol::tools::{ClaimParams, Resumed};
use serde_json::Value;

use crate::dispatch::{err, to_value};
use crate::limits::user_stopped;
use crate::to_proto;
use crate::tools::ToolCtx;

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, params: ClaimParams) -> Result<Value, ErrorData> {
    let key = ctx.key;
    let rt = ctx.runtime();
    let tab = to_proto::tab_handle(params.tab);
    ctx.check_tab_site(tab)?;
    let admission = ctx.admit(Some(tab)).await?;
    let work = async {
        let view = rt.claim_tab(key, tab).await.map_err(|e| err(&e))?;
        ctx.set_current_tab(Some(tab));
        let mut result = to_proto::tab_result(&view);
        if params.resume {
            // The Stop ends for this tab only now, with a new lease: its fencing token is higher than any before.
            let epoch = ctx.broker.resume_tab(tab);
            let token = rt.acquire_write_lease(key, tab).await.map_err(|e| err(&e))?;
            // On the user's own browser the extension's gate takes the new lease now: its debugger may attach again.
            if let Some(ext) = ctx.broker.lazy.as_ref().and_then(|l| l.extension_in_use()) {
                ext.resume(key, tab, token.0)
                    .await
                    .map_err(|e| err(&browserd_core::error::CoreError::from_provider(e, Some(tab))))?;
            }
            result.resumed = Some(Resumed { fencing_token: token.0, control_epoch: epoch });
        }
        if params.observe || params.resume {
            let obs = rt.observe(key, tab, &browserd_protocol::ObserveParams::default()).await.map_err(|e| err(&e))?;
            result.observation = Some(Box::new(obs));
        }
        to_value(&result)
    };
    tokio::select! {
        r = work => r,
        () = admission.stop.cancelled() => Err(user_stopped("claiming the tab was stopped")),
    }
}
