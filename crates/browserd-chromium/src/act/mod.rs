//! Actions: resolve the target, check actionability (attached, visible, stable, enabled/editable, hit test), dispatch
//! real input, settle, gather effects and verify `expected` under one deadline; de-duplication by request id. Every
//! script of an action runs on nodes resolved into browserd's isolated world ([`crate::world`]); when that world
//! cannot be had the step fails closed (nothing sent, or `unknown` once input was sent, or `unverified`).
//!
//! This file is the action loop; each phase is a file of its own:
//! [`prepare`] (before any input: foreground, tracker, `nodeVersion`, prefetch) → [`resolve`] (the target: a ref or
//! a screenshot point) → [`actionable`] (actionability and hit test, the covering element) → [`dispatch`] (one file
//! per action family, all sending through the last hop, `dispatch/send.rs`) → [`settle`] (settle window and effects)
//! → [`expect`] (expectations and the postcondition) → [`result`]. [`run`] holds the state they share, [`fail`] how
//! a step fails, [`dedup`] the `requestId` table.

// `Fail` carries the covering element and candidates by value; it is built once per failed action.
#![allow(clippy::result_large_err)]

mod actionable;
mod dedup;
mod describe;
mod dispatch;
mod expect;
mod fail;
mod prepare;
mod requests;
mod resolve;
mod result;
mod run;
mod settle;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use browserd_core::provider::{OpContext, ProviderError, TabHandle};
use browserd_protocol::{ActParams, ActionKind, ActionResult, Dispatch};

pub(crate) use actionable::quad_center;
pub(crate) use describe::{Described, describe_target};
pub(crate) use fail::{gate_refusal, target_went_away};
pub(crate) use requests::{Requests, apply as apply_request_event};
use run::{Run, ms};
pub(crate) use settle::{TRACKER, install_tracker};

use crate::provider::ChromiumProvider;

/// The object group of every node an action resolves (released when it ends).
const GROUP: &str = "browserd-act";

/// `browser_act`.
pub(crate) async fn act(
    p: &ChromiumProvider,
    ctx: &OpContext,
    tab: TabHandle,
    params: &ActParams,
) -> Result<ActionResult, ProviderError> {
    let hash = match dedup::claim(p, ctx, params) {
        Ok(hash) => hash,
        Err(answer) => return Ok(answer),
    };
    let sent = AtomicBool::new(false);
    let out = tokio::select! {
        r = act_inner(p, ctx, tab, params, &sent) => r,
        () = ctx.cancel.cancelled() => Ok(result::cancelled(ctx, sent.load(Ordering::SeqCst))),
    };
    dedup::record(p, params, hash, &out);
    out
}

/// One action, phase by phase, under one deadline and with the tab to itself.
async fn act_inner(
    p: &ChromiumProvider,
    ctx: &OpContext,
    tab: TabHandle,
    params: &ActParams,
    sent: &AtomicBool,
) -> Result<ActionResult, ProviderError> {
    let t0 = Instant::now();
    let default = if params.action.navigates() { Duration::from_secs(30) } else { Duration::from_secs(10) };
    let budget = params.timeout_ms.map_or(default, Duration::from_millis).min(ctx.timeout);
    let deadline = t0 + budget;
    let _guard = p.lock_tab_until(tab, deadline).await?;
    let queue = t0.elapsed();
    let mut run = Run::start(p, ctx, tab, deadline, sent).await?;
    run.res.timings.queue = ms(queue);
    // Before any input: foreground, tracker, `nodeVersion`, the target prefetched (counted as resolving it).
    let v0 = Instant::now();
    let ready = match run.tab_refusal(params) {
        Some(f) => Err(f),
        None => run.prepare(params).await,
    };
    let versions_ms = ms(v0.elapsed());
    // Resolve → actionability and hit test → last hop → dispatch, as the action's family does them.
    let result = match ready {
        Ok(()) => run.perform(params).await,
        Err(f) => Err(f),
    };
    run.res.timings.resolve += versions_ms;
    run.conclude(result).await;
    // Settle, effects and expectations, once anything reached the page (or for `wait`).
    if run.res.dispatch != Dispatch::NotDispatched || params.action == ActionKind::Wait {
        let w0 = Instant::now();
        run.settle_and_verify(params).await;
        run.res.timings.wait = ms(w0.elapsed()) - run.res.timings.observe;
    }
    run.unwatch_requests().await;
    Ok(run.finish(params).await)
}
