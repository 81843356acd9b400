//! `browser_close`: close tabs this session opened (never another's).

use browserd_core::provider::TabHandle;
use browserd_protocol::ErrorData;
use browserd_protocol::tools::CloseParams;
use serde_json::Value;

use crate::dispatch::{err, to_value};
use crate::to_proto;
use crate::tools::ToolCtx;

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, params: CloseParams) -> Result<Value, ErrorData> {
    let key = ctx.key;
    let rt = ctx.runtime();
    ctx.mark_dispatched()?;
    let tabs: Vec<TabHandle> = params.tabs.iter().copied().map(to_proto::tab_handle).collect();
    let groups: Vec<_> = params.group.into_iter().map(to_proto::group_handle).collect();
    let report = rt.close_tabs(key, &tabs, &groups).await.map_err(|e| err(&e))?;
    for tab in &report.closed {
        ctx.broker.gate.forget_tab(*tab);
    }
    if let Ok(current) = ctx.current_tab()
        && report.closed.contains(&current)
    {
        ctx.set_current_tab(None);
    }
    to_value(&to_proto::close_result(&report))
}
