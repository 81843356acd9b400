//! `browser_cleanup`: finish the browser task: close, release or keep tabs; the tools stay available.

use browserd_core::lifecycle::FinalizeInputs;
use browserd_protocol::ErrorData;
use browserd_protocol::tools::CleanupParams;
use serde_json::Value;

use crate::dispatch::{err, to_value};
use crate::to_proto;
use crate::tools::ToolCtx;

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, params: CleanupParams) -> Result<Value, ErrorData> {
    let key = ctx.key;
    let rt = ctx.runtime();
    ctx.mark_dispatched()?;
    let inputs = FinalizeInputs {
        keep: params.keep.iter().copied().map(to_proto::tab_handle).collect(),
        close: params.close.iter().copied().map(to_proto::tab_handle).collect(),
        release: params.release.iter().copied().map(to_proto::tab_handle).collect(),
        mark: params.mark.iter().map(|m| (to_proto::tab_handle(m.tab), to_proto::core_mark_kind(m.kind))).collect(),
        release_debugger: params.detach_debugger,
    };
    let report = rt.finalize(key, &inputs).await.map_err(|e| err(&e))?;
    if let Ok(current) = ctx.current_tab()
        && (report.closed.contains(&current) || report.released.contains(&current))
    {
        ctx.set_current_tab(None);
    }
    to_value(&to_proto::cleanup_result(&report))
}
