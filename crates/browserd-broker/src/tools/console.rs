//! `browser_console` (advanced tier): a tab's console messages since a cursor; a read, bounded.

use browserd_protocol::ErrorData;
use browserd_protocol::tools::ConsoleParams;
use serde_json::Value;

use crate::advanced;
use crate::dispatch::{err, to_value};
use crate::limits::user_stopped;
use crate::tools::ToolCtx;

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, params: ConsoleParams) -> Result<Value, ErrorData> {
    ctx.require_advanced(false)?;
    let key = ctx.key;
    let rt = ctx.runtime();
    let tab = ctx.tab_for(Some(params.tab))?;
    let admission = ctx.admit(Some(tab)).await?;
    let mut result = tokio::select! {
        r = rt.console(key, tab, &params) => r.map_err(|e| err(&e))?,
        () = admission.stop.cancelled() => return Err(user_stopped("reading the console was stopped")),
    };
    let entries = to_value(&std::mem::take(&mut result.entries))?;
    let (entries, spill) = advanced::bound(entries, "the console entries", &advanced::spill_dir())?;
    result.entries = serde_json::from_value(entries).unwrap_or_default();
    result.truncated |= spill.is_some();
    result.spill = spill;
    to_value(&result)
}
