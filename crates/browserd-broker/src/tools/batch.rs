//! `browser_batch`: up to 8 actions in order under one write slot; stops at the first failure or typed error, at the
//! batch deadline, at Stop, before a high-risk step ([`crate::risk`]) or where a step leaves the site (the rules in
//! [`crate::batch`]). However it ends, `results` answers every step: the ones that ran, the one cut short (`unknown`
//! when its input may have been sent) and the ones not started.

use browserd_protocol::tools::{
    BatchParams, BatchResult, BatchStepReport, BatchStepStatus, BatchStop, BatchStopReason,
};
use browserd_protocol::{ActionKind, ActionResult, Dispatch, ErrorCode, ErrorData, Outcome};
use serde_json::{Value, json};

use crate::dispatch::{err, to_value};
use crate::limits::user_stopped;
use crate::tools::ToolCtx;

/// How the step in flight ended when it did not run to the end.
enum Cut {
    Error(ErrorData),
    Deadline,
    Stopped,
}

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, params: BatchParams) -> Result<Value, ErrorData> {
    let key = ctx.key;
    let rt = ctx.runtime();
    crate::vision::refuse_points(ctx.broker.vision_of(ctx.session).mode, &params.steps)?;
    let tab = ctx.tab_for(params.tab)?;
    let admission = ctx.admit_write(tab).await?;
    let broker = ctx.broker;
    let mut steps: Vec<ActionResult> = Vec::new();
    let mut results: Vec<BatchStepReport> = Vec::new();
    let mut stopped = None;
    let deadline =
        tokio::time::Instant::now() + std::time::Duration::from_millis(broker.config.batch_deadline_ms.max(1));
    let start_url = if params.stop_on_cross_site {
        let tabs = rt.list_tabs(key).await.map_err(|e| err(&e))?;
        tabs.into_iter().find(|v| v.tab == tab).map(|v| v.url)
    } else {
        None
    };
    let index_of = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
    let stop_at = |index: usize, reason| BatchStop { step: index_of(index), reason };
    for (index, step) in params.steps.iter().enumerate() {
        // A navigate step that would leave the site is not dispatched.
        if let (Some(start), ActionKind::Navigate, Some(to)) = (&start_url, step.action, &step.value)
            && crate::batch::leaves_site(start, to)
        {
            stopped = Some(stop_at(index, BatchStopReason::CrossSite));
            break;
        }
        // A navigation to an origin the policy does not authorise is not dispatched.
        if let Err(e) = ctx.check_step_site(step) {
            stopped = Some(stop_at(index, BatchStopReason::Error));
            results.push(
                report(index_of(index), BatchStepStatus::NotStarted, Outcome::Cancelled)
                    .with_code(e.code.as_str(), e.message),
            );
            break;
        }
        // A high-risk step is never part of a batch: the model does it alone, after observing.
        let content = broker.gate.last_observation(tab);
        let content = content.as_deref().and_then(|o| o["untrustedContent"].as_str());
        if let Some(why) = crate::risk::high_risk(step, content) {
            stopped = Some(stop_at(index, BatchStopReason::HighRisk));
            results.push(
                report(index_of(index), BatchStepStatus::NotStarted, Outcome::Cancelled).with_code(
                    "HIGH_RISK",
                    format!("not started: {why}; do it alone with browser_act after observing"),
                ),
            );
            break;
        }
        // A step that needs the user's approval: the batch stops before it (the answer names the approval). The check
        // reads the target in the browser, so it runs under the batch deadline and Stop like the step itself.
        let mut step = step.clone();
        let checked = tokio::select! {
            r = tokio::time::timeout_at(deadline, ctx.check_approval(tab, &step)) => match r {
                Ok(Err(e)) if e.code == ErrorCode::UserStopped => Err(Cut::Stopped),
                Ok(r) => Ok(r),
                Err(_) => Err(Cut::Deadline),
            },
            () = admission.stop.cancelled() => Err(Cut::Stopped),
        };
        let checked = match checked {
            Ok(r) => r.and_then(|()| ctx.check_upload(tab, &mut step)),
            Err(cut) => {
                let (reason, rep) = unchecked_report(index_of(index), &cut);
                stopped = Some(stop_at(index, reason));
                results.push(rep);
                break;
            }
        };
        if let Err(e) = checked {
            // Only a step that needs the user's approval stops the batch as high risk; a failed check (the tab gone, a
            // timeout, a restarted browser, a target that could not be read) is an error.
            let reason =
                if e.code == ErrorCode::ApprovalRequired { BatchStopReason::HighRisk } else { BatchStopReason::Error };
            stopped = Some(stop_at(index, reason));
            let mut rep = report(index_of(index), BatchStepStatus::NotStarted, Outcome::Cancelled)
                .with_code(e.code.as_str(), format!("not started: {} {}", e.message, e.next_step));
            if e.code == ErrorCode::ApprovalRequired {
                rep.approval = e.details.map(|d| *d);
            }
            results.push(rep);
            break;
        }
        let run = tokio::select! {
            r = tokio::time::timeout_at(deadline, rt.act(key, tab, &step, None)) => match r {
                Ok(Ok(result)) => Ok(result),
                // A Stop the step itself ran into (refused at the last hop) is the same Stop as the one below.
                Ok(Err(e)) => match err(&e) {
                    e if e.code == ErrorCode::UserStopped => Err(Cut::Stopped),
                    e => Err(Cut::Error(e)),
                },
                Err(_) => Err(Cut::Deadline),
            },
            () = admission.stop.cancelled() => Err(Cut::Stopped),
        };
        let result = match run {
            Ok(result) => result,
            Err(cut) => {
                let (reason, rep) = cut_report(index_of(index), cut);
                stopped = Some(stop_at(index, reason));
                results.push(rep);
                break;
            }
        };
        // A step that led to a page of an origin the policy does not authorise: the batch ends there, and nothing of
        // that page (the step's effects) is shown.
        if let Err(e) = ctx.check_result_site(tab, &result) {
            let mut rep = report(index_of(index), BatchStepStatus::Ran, result.outcome);
            rep.dispatch = Some(result.dispatch);
            results.push(rep.with_code(e.code.as_str(), e.message));
            stopped = Some(stop_at(index, BatchStopReason::Error));
            break;
        }
        let failed = result.outcome != Outcome::Succeeded;
        let left_site = match (&start_url, &result.effects.navigated) {
            (Some(start), Some(now)) => crate::batch::leaves_site(start, now),
            _ => false,
        };
        let mut rep = report(index_of(index), BatchStepStatus::Ran, result.outcome);
        rep.dispatch = Some(result.dispatch);
        rep.code.clone_from(&result.code);
        rep.message.clone_from(&result.message);
        results.push(rep);
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
    for index in results.len()..params.steps.len() {
        results.push(report(index_of(index), BatchStepStatus::NotStarted, Outcome::Cancelled));
    }
    let batch = BatchResult { ok: stopped.is_none(), steps, stopped, results };
    if batch.stopped.is_some_and(|s| s.reason == BatchStopReason::UserStopped) {
        // Stop stays an error to the host, with every step's answer in its details.
        return Err(user_stopped(
            "the batch was stopped; completed steps are not rolled back, and the step in \
            flight may or may not have taken effect",
        )
        .with_details(json!({"outcome": "unknown", "batch": batch})));
    }
    to_value(&batch)
}

fn report(step: u32, status: BatchStepStatus, outcome: Outcome) -> BatchStepReport {
    let dispatch = (status == BatchStepStatus::NotStarted).then_some(Dispatch::NotDispatched);
    BatchStepReport { step, status, outcome, dispatch, code: None, message: None, approval: None }
}

trait WithCode {
    fn with_code(self, code: &str, message: String) -> Self;
}

impl WithCode for BatchStepReport {
    fn with_code(mut self, code: &str, message: String) -> Self {
        self.code = Some(code.to_owned());
        self.message = Some(message);
        self
    }
}

/// The report of a step whose approval check Stop or the deadline cut short: nothing of it was sent.
fn unchecked_report(step: u32, cut: &Cut) -> (BatchStopReason, BatchStepReport) {
    let not_started = report(step, BatchStepStatus::NotStarted, Outcome::Cancelled);
    let (reason, code, why) = match cut {
        Cut::Stopped => (BatchStopReason::UserStopped, ErrorCode::UserStopped, "the user pressed Stop"),
        _ => (BatchStopReason::Deadline, ErrorCode::DeadlineExceeded, "the batch deadline passed"),
    };
    let message = format!("not started: {why} while its target was checked for approval; nothing of it was sent");
    (reason, not_started.with_code(code.as_str(), message))
}

/// The report of the step in flight when Stop, a typed error or the deadline cut it short.
fn cut_report(step: u32, cut: Cut) -> (BatchStopReason, BatchStepReport) {
    let unknown = report(step, BatchStepStatus::CutShort, Outcome::Unknown);
    match cut {
        Cut::Stopped => (
            BatchStopReason::UserStopped,
            unknown.with_code(
                ErrorCode::UserStopped.as_str(),
                "the user pressed Stop while it ran; its input may \
                have been sent"
                    .to_owned(),
            ),
        ),
        Cut::Deadline => (
            BatchStopReason::Deadline,
            unknown.with_code(
                ErrorCode::DeadlineExceeded.as_str(),
                "the batch deadline passed while it ran; its \
                input may have been sent; observe before retrying"
                    .to_owned(),
            ),
        ),
        Cut::Error(e) => {
            // Refusals answer before anything is sent; a lost connection or an unknown outcome may follow input.
            let maybe_sent = matches!(
                e.code,
                ErrorCode::OutcomeUnknown
                    | ErrorCode::ConnectionLost
                    | ErrorCode::DeadlineExceeded
                    | ErrorCode::Cancelled
            );
            let mut rep =
                report(step, BatchStepStatus::CutShort, if maybe_sent { Outcome::Unknown } else { Outcome::Failed });
            if !maybe_sent {
                rep.dispatch = Some(Dispatch::NotDispatched);
            }
            (BatchStopReason::Error, rep.with_code(e.code.as_str(), e.message))
        }
    }
}
