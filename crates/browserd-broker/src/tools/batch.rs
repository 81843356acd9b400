//! `browser_batch`: up to 8 actions in order under one write slot; stops at the first failure, at the batch
//! deadline, or where a step leaves the site (the rules in [`crate::batch`]).

use browserd_protocol::tools::{BatchParams, BatchResult, BatchStop, BatchStopReason};
use browserd_protocol::{ActionKind, ErrorData, Outcome};
use serde_json::{Value, json};

use crate::dispatch::{err, to_value};
use crate::limits::user_stopped;
use crate::tools::ToolCtx;

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, params: BatchParams) -> Result<Value, ErrorData> {
    let key = ctx.key;
    let rt = ctx.runtime();
    let tab = ctx.tab_for(params.tab)?;
    let admission = ctx.admit_write(tab).await?;
    let work = async {
        let mut steps = Vec::new();
        let mut stopped = None;
        let deadline = tokio::time::Instant::now() + crate::batch::BATCH_DEADLINE;
        let start_url = if params.stop_on_cross_site {
            let tabs = rt.list_tabs(key).await.map_err(|e| err(&e))?;
            tabs.into_iter().find(|v| v.tab == tab).map(|v| v.url)
        } else {
            None
        };
        let stop_at = |index: usize, reason| BatchStop { step: u32::try_from(index).unwrap_or(u32::MAX), reason };
        for (index, step) in params.steps.iter().enumerate() {
            // A navigate step that would leave the site is not dispatched.
            if let (Some(start), ActionKind::Navigate, Some(to)) = (&start_url, step.action, &step.value)
                && crate::batch::leaves_site(start, to)
            {
                stopped = Some(stop_at(index, BatchStopReason::CrossSite));
                break;
            }
            let Ok(result) = tokio::time::timeout_at(deadline, rt.act(key, tab, step, None)).await else {
                stopped = Some(stop_at(index, BatchStopReason::Deadline));
                break;
            };
            let result = result.map_err(|e| err(&e))?;
            let failed = result.outcome != Outcome::Succeeded;
            let left_site = match (&start_url, &result.effects.navigated) {
                (Some(start), Some(now)) => crate::batch::leaves_site(start, now),
                _ => false,
            };
            steps.push(result);
            if failed {
                stopped = Some(stop_at(index, BatchStopReason::Failed));
                break;
            }
            // The page is now on another site: the next step would act on a page the model has not seen.
            if left_site && index + 1 < params.steps.len() {
                stopped = Some(stop_at(index + 1, BatchStopReason::CrossSite));
                break;
            }
        }
        to_value(&BatchResult { ok: stopped.is_none(), steps, stopped })
    };
    tokio::select! {
        r = work => r,
        () = admission.stop.cancelled() => Err(user_stopped("the batch was stopped; completed steps are \
            not rolled back").with_details(json!({"outcome": "unknown"}))),
    }
}
