//! `browser_claim`: take control of a user's tab (released, not closed, at cleanup).

use browserd_protocol::ErrorData;
use browserd_protocol::tools::ClaimParams;
use serde_json::Value;

use crate::dispatch::{err, to_value};
use crate::limits::user_stopped;
use crate::to_proto;
use crate::tools::ToolCtx;

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, params: ClaimParams) -> Result<Value, ErrorData> {
    let key = ctx.key;
    let rt = ctx.runtime();
    let tab = to_proto::tab_handle(params.tab);
    let admission = ctx.admit(Some(tab)).await?;
    let work = async {
        let view = rt.claim_tab(key, tab).await.map_err(|e| err(&e))?;
        ctx.set_current_tab(Some(tab));
        let mut result = to_proto::tab_result(&view);
        if params.observe {
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
