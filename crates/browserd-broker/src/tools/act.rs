//! `browser_act`: one action on a tab, under the tab's write slot.

use browserd_protocol::{ActParams, ErrorData};
use serde_json::{Value, json};

use crate::dispatch::{err, to_value};
use crate::limits::user_stopped;
use crate::tools::ToolCtx;

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, mut params: ActParams) -> Result<Value, ErrorData> {
    let key = ctx.key;
    let rt = ctx.runtime();
    crate::vision::refuse_points(ctx.broker.vision_of(ctx.session).mode, [&params])?;
    let tab = ctx.tab_for(params.tab)?;
    ctx.check_step_site(&params)?;
    // Stop wins over asking the user: a stopped tab is refused before any approval is asked for.
    ctx.broker.check_not_stopped(tab)?;
    ctx.check_approval(tab, &params).await?;
    // An upload from outside the upload roots: the user's approval of exactly that file (then its staged copy).
    ctx.check_upload(tab, &mut params)?;
    let admission = ctx.admit_write(tab).await?;
    tokio::select! {
        r = rt.act(key, tab, &params, None) => {
            let result = r.map_err(|e| err(&e))?;
            ctx.check_result_site(tab, &result)?;
            to_value(&result)
        }
        () = admission.stop.cancelled() => Err(user_stopped("the action was stopped; it may or may not have \
            taken effect").with_details(json!({"outcome": "unknown"}))),
    }
}
