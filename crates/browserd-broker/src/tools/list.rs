//! `browser_list`: the tabs with ids and who owns them; a tab on a page the policy refuses shows only
//! `<origin> (not authorised)`, no URL or title.

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
    let listed = tabs.iter().map(|view| listed_tab(ctx, view)).collect();
    to_value(&ListResult { tabs: listed })
}

/// One tab as `browser_list` and `browser_status` show it: a tab on a page the policy refuses is listed by its origin
/// (or scheme) only — no URL, no title.
pub(crate) fn listed_tab(
    ctx: &ToolCtx<'_>,
    view: &browserd_core::lifecycle::TabView,
) -> browserd_protocol::tools::ListedTab {
    let mut tab = to_proto::listed_tab(view);
    if let Some(shown) =
        tab.url.as_deref().and_then(|u| crate::policy::enforce::withheld_url(ctx.broker, Some(ctx.session), u))
    {
        tab.url = Some(shown);
        tab.title = None;
    }
    tab
}
