//! `browser_open`: a new tab of the session, opened blank and then navigated as an action, so the answer comes once
//! the page has loaded (or with the navigation's own error). A tab whose page fails to load is closed again (it never
//! counts against the tab limit afterwards); if closing fails too, its recovery record retries it and the error says
//! so. A tab the owned-tab ledger could not record (the journal failed) is not handed out either.

use browserd_core::provider::{SessionKey, TabHandle};
use browserd_protocol::tools::OpenParams;
use browserd_protocol::{ActParams, ActionKind, ErrorCode, ErrorData, Outcome};
use serde_json::{Value, json};

use crate::dedup::DedupLog;
use crate::dispatch::{err, to_value};
use crate::limits::user_stopped;
use crate::server::Broker;
use crate::to_proto;
use crate::tools::ToolCtx;

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, params: OpenParams) -> Result<Value, ErrorData> {
    let key = ctx.key;
    let rt = ctx.runtime();
    ctx.check_site("no tab was opened", &params.url)?;
    let admission = ctx.admit(None).await?;
    let work = async {
        let view = rt.open_tab(key, "about:blank").await.map_err(|e| err(&e))?;
        ctx.set_current_tab(Some(view.tab));
        match load(ctx.broker, key, &view, &params).await {
            Ok(value) => Ok(value),
            Err(e) => Err(discard(ctx, view.tab, e).await),
        }
    };
    tokio::select! {
        r = work => r,
        () = admission.stop.cancelled() => Err(user_stopped("opening the tab was stopped")),
    }
}

/// Navigates the new tab as an action, so the answer comes once the page has loaded and an observation right after
/// sees the page; then checks that the owned-tab ledger recorded the tab.
async fn load(
    broker: &Broker,
    key: &SessionKey,
    view: &browserd_core::lifecycle::TabView,
    params: &OpenParams,
) -> Result<Value, ErrorData> {
    let rt = &broker.runtime;
    let navigate = ActParams::new(ActionKind::Navigate).value(params.url.clone());
    let loaded = rt.act(key, view.tab, &navigate, None).await.map_err(|e| err(&e))?;
    // A redirect to an origin the policy does not authorise: the tab is closed again (by the caller) unseen.
    crate::policy::enforce::check_landed(broker, &to_proto::session_id(key), view.tab, &loaded)?;
    if loaded.outcome == Outcome::Failed {
        let code = match loaded.code.as_deref().and_then(ErrorCode::from_name) {
            None | Some(ErrorCode::ActionFailed) => ErrorCode::NavigationFailed,
            Some(code) => code,
        };
        let message = loaded.message.clone().unwrap_or_else(|| "the page did not load".to_owned());
        return Err(ErrorData::new(
            code,
            format!("tab {} was opened but loading {} failed: {message}", view.tab.0, params.url),
        ));
    }
    let mut result = to_proto::tab_result(view);
    result.url = loaded.effects.navigated.clone().unwrap_or_else(|| params.url.clone());
    result.title = String::new();
    // The browser's tab list, read now: the title the page set while loading (the event may still be on its way).
    if let Some(seen) = rt.tab_info_now(key, view.tab).await.filter(|t| t.url != "about:blank") {
        result.url = seen.url;
        result.title = seen.title;
    }
    if params.observe {
        let obs = rt.observe(key, view.tab, &browserd_protocol::ObserveParams::default()).await.map_err(|e| err(&e))?;
        result.url.clone_from(&obs.url);
        result.title.clone_from(&obs.title);
        result.observation = Some(Box::new(obs));
    }
    // A tab a broker crash could leak unrecorded is not handed out: the journal must have it.
    if let Some(log) = broker.dedup() {
        broker.sync_recovery(&log);
        if !DedupLog::owned_recorded(&broker.owned_journal, view.tab.0) {
            let why = log.degraded().unwrap_or_else(|| "the owned-tab ledger did not record the tab".to_owned());
            return Err(crate::dedup::journal_unavailable(log.path(), &why));
        }
    }
    to_value(&result)
}

/// Closes the tab of a failed open and says so in the error (`details.closed`); if closing fails too, the recovery
/// record it leaves retries it, and the error says that instead.
async fn discard(ctx: &ToolCtx<'_>, tab: TabHandle, error: ErrorData) -> ErrorData {
    let closed = match ctx.runtime().close_tabs(ctx.key, &[tab], &[]).await {
        Ok(report) => report.closed.contains(&tab) || report.failures.iter().all(|f| f.tab != tab),
        Err(e) => {
            tracing::warn!(%tab, code = %err(&e).code, "closing the tab of a failed open failed");
            false
        }
    };
    ctx.broker.gate.forget_tab(tab);
    if ctx.current_tab().ok() == Some(tab) {
        ctx.set_current_tab(None);
    }
    let mut details = match error.details.as_deref() {
        Some(Value::Object(map)) => map.clone(),
        _ => serde_json::Map::new(),
    };
    details.insert("tab".to_owned(), json!(to_proto::tab_id(tab)));
    details.insert("opened".to_owned(), json!(true));
    details.insert("closed".to_owned(), json!(closed));
    let mut error = error;
    if closed {
        error.message.push_str("; the tab was closed again");
    } else {
        error.message.push_str(&format!(
            "; closing tab {} failed too: a recovery record retries it (see browser_status)",
            tab.0
        ));
    }
    error.details = Some(Box::new(Value::Object(details)));
    error
}
