//! `browser_mark_deliverable` and `browser_mark_handoff`: keep a tab past this turn (one entry for both: they take
//! the same params and differ only in the mark).

use browserd_protocol::ErrorData;
use browserd_protocol::tools::{MarkParams, MarkResult};
use serde_json::Value;

use crate::dispatch::{err, to_value};
use crate::to_proto;
use crate::tools::ToolCtx;

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, params: MarkParams) -> Result<Value, ErrorData> {
    let key = ctx.key;
    let rt = ctx.runtime();
    ctx.mark_dispatched()?;
    let tab = to_proto::tab_handle(params.tab);
    let mark = if matches!(ctx.name, browserd_protocol::tools::BROWSER_MARK_HANDOFF) {
        rt.mark_handoff(key, tab).await
    } else {
        rt.mark_deliverable(key, tab).await
    }
    .map_err(|e| err(&e))?;
    to_value(&MarkResult { tab: params.tab, mark: to_proto::mark_kind(mark.kind) })
}
