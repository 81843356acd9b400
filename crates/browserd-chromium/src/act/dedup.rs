//! De-duplication by `requestId`: a repeated request gets the first one's result, a reused id with another payload or
//! one still running is refused, and an id whose action sent nothing may be used again.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use browserd_core::provider::{OpContext, ProviderError};
use browserd_protocol::{ActParams, ActionResult, Dispatch, Outcome, codes};

use crate::provider::{ChromiumProvider, Dedup};

fn payload_hash(params: &ActParams) -> u64 {
    let mut p = params.clone();
    p.request_id = None;
    let mut h = DefaultHasher::new();
    serde_json::to_string(&p).unwrap_or_default().hash(&mut h);
    h.finish()
}

/// Claims the request's id (if it has one) for this call and returns the payload's hash; `Err` is the answer when the
/// id was seen before (the earlier result, or a refusal).
pub(super) fn claim(p: &ChromiumProvider, ctx: &OpContext, params: &ActParams) -> Result<u64, ActionResult> {
    let hash = payload_hash(params);
    if let Some(id) = &params.request_id {
        let mut d = p.dedup.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match d.get(id) {
            Some(Dedup::Done(h, r)) if *h == hash => {
                let mut r = (**r).clone();
                r.deduplicated = true;
                return Err(r);
            }
            Some(Dedup::Done(..)) => {
                return Err(refused(
                    ctx,
                    codes::PAYLOAD_MISMATCH,
                    format!("requestId {id} was already used with another payload; use a new requestId"),
                ));
            }
            Some(Dedup::Running) => {
                return Err(refused(
                    ctx,
                    codes::DUPLICATE_REQUEST,
                    format!("requestId {id} is still running; wait for its result instead of resending"),
                ));
            }
            None => {
                d.insert(id.clone(), Dedup::Running);
                if d.len() > 4096 {
                    d.retain(|_, v| matches!(v, Dedup::Running));
                }
            }
        }
    }
    Ok(hash)
}

/// Records the result under the request's id: kept when anything reached the page (or it succeeded), else released.
pub(super) fn record(p: &ChromiumProvider, params: &ActParams, hash: u64, out: &Result<ActionResult, ProviderError>) {
    if let Some(id) = &params.request_id {
        let mut d = p.dedup.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match out {
            Ok(r) if r.dispatch != Dispatch::NotDispatched || r.outcome == Outcome::Succeeded => {
                d.insert(id.clone(), Dedup::Done(hash, Box::new(r.clone())));
            }
            _ => {
                // Nothing reached the page: the same id may be retried.
                d.remove(id);
            }
        }
    }
}

fn refused(ctx: &OpContext, code: &str, message: String) -> ActionResult {
    ActionResult {
        trace_id: ctx.trace_id.clone(),
        outcome: Outcome::Failed,
        dispatch: Dispatch::NotDispatched,
        code: Some(code.into()),
        message: Some(message),
        ..Default::default()
    }
}
