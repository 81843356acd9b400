//! `browser_cdp` (advanced tier, also `raw_cdp`): one raw DevTools protocol command to a tab, refused before anything
//! is sent for a method the policy denies, and for a method that captures the page's pixels in a session without an
//! image route (the provider refuses those on a tab showing an origin the site policy does not authorise); a write,
//! its result bounded.

use browserd_protocol::ErrorData;
use browserd_protocol::tools::RawProtocolParams;
use serde_json::Value;

use crate::advanced;
use crate::dispatch::{err, to_value};
use crate::tools::{ToolCtx, stopped_unknown};

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, params: RawProtocolParams) -> Result<Value, ErrorData> {
    ctx.require_advanced(true)?;
    let policy = &ctx.broker.config.advanced;
    let key = ctx.key;
    let rt = ctx.runtime();
    if let Some(denied) = advanced::method_denied(&params.method, policy) {
        return Err(denied);
    }
    crate::vision::refuse_pixel_method(ctx.broker.vision_of(ctx.session).mode, &params.method)?;
    let tab = ctx.tab_for(Some(params.tab))?;
    ctx.broker.check_not_stopped(tab)?;
    let admission = ctx.admit(Some(tab)).await?;
    let mut result = tokio::select! {
        r = rt.raw_protocol(key, tab, &params) => r.map_err(|e| err(&e))?,
        () = admission.stop.cancelled() => return Err(stopped_unknown("the protocol command")),
    };
    let value = std::mem::take(&mut result.result);
    let what = format!("the result of {}", params.method);
    (result.result, result.spill) = advanced::bound(value, &what, &advanced::spill_dir())?;
    to_value(&result)
}
