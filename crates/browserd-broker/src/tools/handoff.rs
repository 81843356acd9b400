//! `browser_handoff`: give a tab to the user; with `until`, wait (outside the page-operation slot, still under the
//! stop gate) until the user's work shows.

use std::time::Duration;

use browserd_core::error::CoreError;
use browserd_core::runtime::{HandoffEnd, HandoffProgress, HandoffWait};
use browserd_protocol::tools::{HandoffParams, HandoffResult, HandoffStatus};
use browserd_protocol::{ErrorCode, ErrorData};
use serde_json::Value;

use crate::dispatch::{err, to_value};
use crate::limits::user_stopped;
use crate::to_proto;
use crate::tools::ToolCtx;

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, params: HandoffParams) -> Result<Value, ErrorData> {
    let key = ctx.key;
    let rt = ctx.runtime();
    let tab = to_proto::tab_handle(params.tab);
    let admission = ctx.admit(Some(tab)).await?;
    let report = tokio::select! {
        r = rt.handoff(key, tab) => r.map_err(|e| err(&e))?,
        () = admission.stop.cancelled() => return Err(user_stopped("the handoff was stopped")),
    };
    if !report.ok {
        return Err(err(&report
            .into_result()
            .err()
            .unwrap_or_else(|| CoreError::new(browserd_core::error::ErrorKind::Internal, "handoff failed"))));
    }
    if params.until.is_empty() {
        return to_value(&HandoffResult {
            tab: params.tab,
            status: HandoffStatus::WaitingForUser,
            evidence: Vec::new(),
            url: None,
            waited_ms: None,
        });
    }
    // Waiting for the user is no page operation: free the tab's and the global slot, keep the stop gate.
    let stop = admission.stop.clone();
    drop(admission);
    let wait = HandoffWait { until: params.until.clone(), timeout: params.timeout_ms.map(Duration::from_millis) };
    let progress = |p: &HandoffProgress| {
        tracing::debug!(tab = %tab, checks = p.checks, waited_ms = p.waited_ms, "waiting for the user");
    };
    let end = tokio::select! {
        r = rt.await_handoff(key, tab, &wait, &progress) => r.map_err(|e| err(&e))?,
        () = stop.cancelled() => return Err(user_stopped("stopped waiting for the user; the tab stays \
            handed off")),
    };
    let result = |status, evidence, url, waited_ms| HandoffResult {
        tab: params.tab,
        status,
        evidence,
        url,
        waited_ms: Some(waited_ms),
    };
    match end {
        HandoffEnd::Completed { evidence, url, waited_ms, .. } => {
            to_value(&result(HandoffStatus::Completed, evidence, Some(url), waited_ms))
        }
        HandoffEnd::TabClosed { evidence, waited_ms } => {
            ctx.broker.gate.forget_tab(tab);
            to_value(&result(HandoffStatus::TabClosed, evidence, None, waited_ms))
        }
        HandoffEnd::TimedOut { evidence, url, waited_ms } => {
            let details = to_value(&result(HandoffStatus::TimedOut, evidence, Some(url), waited_ms))?;
            Err(ErrorData::new(
                ErrorCode::DeadlineExceeded,
                format!("the user did not finish within {waited_ms} ms; the tab stays handed off"),
            )
            .with_next_step("Ask the user where they are, or call browser_handoff again to wait longer.")
            .with_details(details))
        }
    }
}
