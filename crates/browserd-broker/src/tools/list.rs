//! `browser_list`: the tabs with ids and who owns them.

use browserd_protocol::ErrorData;
use browserd_protocol::tools::{ListParams, ListResult};
use serde_json::Value;

use crate::dispatch::{err, to_value};
use crate::to_proto;
use crate::tools::ToolCtx;

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, _params: ListParams) -> Result<Value, ErrorData> {
    let key = ctx.key;
    let rt = ctx.runtime();
    let tabs = rt.list_tabs(key).await.map_err(|e| err(&e))?;
    to_value(&ListResult { tabs: tabs.iter().map(to_proto::listed_tab).collect() })
}
