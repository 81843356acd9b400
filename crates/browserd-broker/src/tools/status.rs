//! `browser_status`: the calling session's browser state: tools, whether the browser has started, bridge, its tabs,
//! pending cleanup, limits, the journal.

use browserd_protocol::ErrorData;
use browserd_protocol::lifecycle::{AutoTurnCleanup, BrowserStart};
use browserd_protocol::tools::{BrowserStatusParams, BrowserStatusResult};
use serde_json::Value;

use crate::dispatch::{err, to_value};
use crate::to_proto;
use crate::tools::ToolCtx;

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, _params: BrowserStatusParams) -> Result<Value, ErrorData> {
    let key = ctx.key;
    let rt = ctx.runtime();
    let s = rt.status(key).await.map_err(|e| err(&e))?;
    let started = ctx.broker.browser_started();
    let (auto_turn_cleanup, missing_capabilities, unsupported) = if started {
        let (auto, missing) = to_proto::auto_cleanup(&s.auto_cleanup);
        let unsupported = to_proto::capabilities(&ctx.broker.provider.capabilities())
            .into_iter()
            .filter(|c| c.unsupported.is_some())
            .collect();
        (auto, missing, unsupported)
    } else {
        // No browser yet (it starts at the first browser operation): nothing is missing.
        (AutoTurnCleanup::Pending, Vec::new(), Vec::new())
    };
    to_value(&BrowserStatusResult {
        tools_active: s.tools_active,
        advanced: s.tools_active && ctx.broker.advanced_on(ctx.session),
        browser: if started { BrowserStart::Started } else { BrowserStart::NotStarted },
        journal: ctx.broker.journal.status(),
        bridge: to_proto::bridge(s.bridge),
        tabs: s.tabs.iter().map(|view| super::list::listed_tab(ctx, view)).collect(),
        recovery: s.recovery.iter().map(to_proto::recovery_record).collect(),
        limits: ctx.broker.limits(Some(key)),
        auto_turn_cleanup,
        missing_capabilities,
        unsupported,
        policy: ctx.broker.policy_status(ctx.session),
        vision: ctx.broker.vision_of(ctx.session),
        browser_settings: ctx.broker.browsers.as_ref().map(|browsers| {
            let requested = ctx.broker.tables().sessions.get(ctx.session).and_then(|info| info.browser.clone());
            browsers.settings_status(key, requested)
        }),
    })
}
