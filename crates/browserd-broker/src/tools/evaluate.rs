//! `browser_evaluate` (advanced tier): a JavaScript expression in a tab; a write, its value bounded (spilled to a file).

use browserd_protocol::ErrorData;
use browserd_protocol::tools::EvaluateParams;
use serde_json::Value;

use crate::advanced;
use crate::dispatch::{err, to_value};
use crate::tools::{ToolCtx, stopped_unknown};

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, params: EvaluateParams) -> Result<Value, ErrorData> {
    ctx.require_advanced(false)?;
    let key = ctx.key;
    let rt = ctx.runtime();
    let tab = ctx.tab_for(Some(params.tab))?;
    ctx.broker.check_not_stopped(tab)?;
    let admission = ctx.admit(Some(tab)).await?;
    let mut result = tokio::select! {
        r = rt.evaluate(key, tab, &params) => r.map_err(|e| err(&e))?,
        () = admission.stop.cancelled() => return Err(stopped_unknown("the evaluation")),
    };
    let value = std::mem::take(&mut result.value);
    (result.value, result.spill) = advanced::bound(value, "the expression's value", &advanced::spill_dir())?;
    to_value(&result)
}
