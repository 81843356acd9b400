//! `browser_observe`. A screenshot is fitted to the host's image limits (`browser_status.vision.limits`). Without
//! an image route (vision mode `semantic-only`) a screenshot is not taken: the answer is `VISION_UNAVAILABLE` with
//! the text observation read instead, and a page that draws in a canvas says it needs vision. With no write running on the tab it is a plain read. While a write runs, a `consistent` read
//! (the default) waits for it — up to [`CONSISTENT_READ_WAIT`], then the page as last seen if there is one — and an
//! `allowStale` read answers at once with the page as last seen; either way the answer's `consistency` names the
//! write and says which it is. With no earlier observation a read always waits.

use browserd_protocol::{ConsistencyState, ErrorCode, ErrorData, ObserveParams, ReadConsistency, ReadMode};
use serde_json::Value;

use crate::dispatch::{err, to_value};
use crate::limits::{CONSISTENT_READ_WAIT, RunningWrite, user_stopped};
use crate::to_proto;
use crate::tools::ToolCtx;

pub(crate) async fn call(ctx: &mut ToolCtx<'_>, mut params: ObserveParams) -> Result<Value, ErrorData> {
    let vision = ctx.broker.vision_of(ctx.session);
    let mode = vision.mode;
    let wants_image = params.screenshot || params.screenshot_options.is_some();
    if wants_image && !mode.has_image_route() {
        params.screenshot = false;
        params.screenshot_options = None;
    } else if wants_image {
        // Sized and encoded to what the host takes (its limits, else the defaults); the geometry is of that image.
        let asked = params.screenshot_options.take().unwrap_or_default();
        params.screenshot_options = Some(vision.limits.fit(&asked));
    }
    let mut value = read(ctx, &params).await?;
    crate::vision::mark_pixel_content(&mut value, mode);
    if wants_image && !mode.has_image_route() {
        return Err(crate::vision::unavailable(value));
    }
    Ok(value)
}

async fn read(ctx: &mut ToolCtx<'_>, params: &ObserveParams) -> Result<Value, ErrorData> {
    let broker = ctx.broker;
    let key = ctx.key;
    let tab = ctx.tab_for(params.tab)?;
    // On the user's own browser a stopped tab is not read either: the extension's debugger does not attach to it
    // again until the session resumes it, so the answer is the Stop's, naming the resume call.
    if broker.provider.kind() == browserd_core::provider::ProviderKind::Extension {
        broker.check_not_stopped(tab)?;
    }
    let write = broker.gate.running_write(tab);
    let mark = |mut value: Value, state: ConsistencyState, w: &RunningWrite| {
        let c = ReadConsistency { state, write_trace: w.trace.clone(), write_tool: w.tool.clone() };
        if let (Value::Object(map), Ok(c)) = (&mut value, serde_json::to_value(&c)) {
            map.insert("consistency".to_owned(), c);
        }
        value
    };
    // The page as last seen, only for the session's own tab (never another session's content).
    let stale = |w: &RunningWrite| {
        let own = broker.runtime.inspect(|e| {
            e.session(key).is_some_and(|s| s.closed().is_none() && s.activation().is_active())
                && e.tabs().get(tab).is_some_and(|r| r.alive && r.owned_by(key))
        });
        let seen = broker.gate.last_observation(tab).filter(|_| own && params.since.is_none())?;
        Some(mark((*seen).clone(), ConsistencyState::Stale, w))
    };
    let admission = match &write {
        None => ctx.admit(Some(tab)).await?,
        Some(w) => {
            // A write needs ownership, so a reader that does not own the tab reads another session's tab: refused
            // now rather than after waiting for that session's write.
            let holder = broker.runtime.inspect(|e| e.tabs().get(tab).and_then(|r| r.owner().cloned()));
            if let Some(holder) = holder.filter(|h| h != key) {
                return Err(ErrorData::new(
                    ErrorCode::OtherSessionTab,
                    format!("tab {} belongs to another session; nothing was read", tab.0),
                )
                .with_holder_session(to_proto::session_id(&holder)));
            }
            if params.read == ReadMode::AllowStale
                && let Some(answer) = stale(w)
            {
                return Ok(answer);
            }
            match tokio::time::timeout(CONSISTENT_READ_WAIT, ctx.admit(Some(tab))).await {
                Ok(admission) => admission?,
                Err(_) => match stale(w) {
                    Some(answer) => return Ok(answer),
                    None => ctx.admit(Some(tab)).await?,
                },
            }
        }
    };
    let observed = tokio::select! {
        r = broker.runtime.observe(key, tab, params) => to_value(&r.map_err(|e| err(&e))?)?,
        () = admission.stop.cancelled() => return Err(user_stopped("the observation was stopped")),
    };
    drop(admission);
    if params.since.is_none() && params.within.is_none() {
        let mut kept = observed.clone();
        if let Value::Object(map) = &mut kept {
            // A stale answer carries no image: screenshots are large and this one would be out of date.
            map.remove("screenshot");
        }
        broker.gate.remember_observation(tab, kept);
    }
    Ok(match &write {
        Some(w) => mark(observed, ConsistencyState::Consistent, w),
        None => observed,
    })
}
