//! `browser_open`: a new tab of the session, opened blank and then navigated as an action, so the answer comes once
//! the page has loaded (or with the navigation's own error).

use browserd_protocol::tools::OpenParams;
use browserd_protocol::{ActParams, ActionKind, ErrorCode, ErrorData, Outcome};
use serde_json::{Value, json};

use crate::dispatch::{err, to_value};
use crate::limits::user_stopped;
use crate::to_proto;
use crate::tools::ToolCtx;

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, params: OpenParams) -> Result<Value, ErrorData> {
    let key = ctx.key;
    let rt = ctx.runtime();
    let admission = ctx.admit(None).await?;
    let work = async {
        // Open blank, then navigate as an action: the answer comes once the page has loaded (or with
        // the navigation's own error), so an observation right after sees the page.
        let view = rt.open_tab(key, "about:blank").await.map_err(|e| err(&e))?;
        ctx.set_current_tab(Some(view.tab));
        let navigate = ActParams::new(ActionKind::Navigate).value(params.url.clone());
        let loaded = rt
            .act(key, view.tab, &navigate, None)
            .await
            .map_err(|e| err(&e).with_details(json!({"tab": to_proto::tab_id(view.tab), "opened": true})))?;
        if loaded.outcome == Outcome::Failed {
            let code = match loaded.code.as_deref().and_then(ErrorCode::from_name) {
                None | Some(ErrorCode::ActionFailed) => ErrorCode::NavigationFailed,
                Some(code) => code,
            };
            let message = loaded.message.clone().unwrap_or_else(|| "the page did not load".to_owned());
            return Err(ErrorData::new(
                code,
                format!("tab {} was opened but loading {} failed: {message}", view.tab.0, params.url),
            )
            .with_details(json!({"tab": to_proto::tab_id(view.tab), "opened": true})));
        }
        let mut result = to_proto::tab_result(&view);
        result.url = loaded.effects.navigated.clone().unwrap_or_else(|| params.url.clone());
        result.title = String::new();
        if let Ok(now) = rt.status(key).await
            && let Some(seen) = now.tabs.iter().find(|v| v.tab == view.tab && v.url != "about:blank")
        {
            result.url.clone_from(&seen.url);
            result.title.clone_from(&seen.title);
        }
        if params.observe {
            let obs =
                rt.observe(key, view.tab, &browserd_protocol::ObserveParams::default()).await.map_err(|e| err(&e))?;
            result.url.clone_from(&obs.url);
            result.title.clone_from(&obs.title);
            result.observation = Some(Box::new(obs));
        }
        to_value(&result)
    };
    tokio::select! {
        r = work => r,
        () = admission.stop.cancelled() => Err(user_stopped("opening the tab was stopped")),
    }
}
