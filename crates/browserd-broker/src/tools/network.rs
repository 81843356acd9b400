//! `browser_network` (advanced tier): a tab's network requests since a cursor; a read, bounded.

use browserd_protocol::ErrorData;
use browserd_protocol::tools::NetworkParams;
use serde_json::Value;

use crate::advanced;
use crate::dispatch::{err, to_value};
use crate::limits::user_stopped;
use crate::tools::ToolCtx;

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, params: NetworkParams) -> Result<Value, ErrorData> {
    ctx.require_advanced(false)?;
    let key = ctx.key;
    let rt = ctx.runtime();
    let tab = ctx.tab_for(Some(params.tab))?;
    let admission = ctx.admit(Some(tab)).await?;
    let mut result = tokio::select! {
        r = rt.network(key, tab, &params) => r.map_err(|e| err(&e))?,
        () = admission.stop.cancelled() => return Err(user_stopped("reading the network log was stopped")),
    };
    let requests = to_value(&std::mem::take(&mut result.requests))?;
    let (requests, spill) = advanced::bound(requests, "the network entries", &advanced::spill_dir())?;
    result.requests = serde_json::from_value(requests).unwrap_or_default();
    result.truncated |= spill.is_some();
    result.spill = spill;
    to_value(&result)
}
