//! Describing an action's target without acting on it (`Provider::describe_target`): the broker classes the action by
//! what is found and binds the user's approval to that node of that document. Nothing is sent to the page: a ref (or
//! `role "name"`) resolves as the action would resolve it, a screenshot point is hit-tested as the page is now, and
//! the node's role, name and form are read by the browser (accessibility tree) and in browserd's isolated world.
//!
//! A point's hit is remembered for the tab ([`Described`]), bound to the meaningful node it is part of (the button,
//! not the text inside it): when the action on the same point then hits a node of another one (the page changed in
//! between), it is refused with nothing sent, so an approval of one node never clicks another.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use browserd_core::provider::{OpContext, ProviderError, ProviderErrorKind, TabHandle, TargetDescription};
use browserd_protocol::{ActParams, ImagePoint, codes};
use serde_json::json;

use super::GROUP;
use super::run::Run;
use crate::origin::ORIGIN_NOT_AUTHORISED_PREFIX;
use crate::provider::ChromiumProvider;

/// The node a screenshot point hit when the action was described, checked again when the action hits it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Described {
    pub(crate) image_id: String,
    pub(crate) x: f64,
    pub(crate) y: f64,
    pub(crate) frame: String,
    /// The node hit.
    pub(crate) backend: i64,
    /// The meaningful node it is part of (`role_and_name`: the button around a text node), which the approval binds:
    /// a hit on another node of the same one (the page re-rendered the text inside the button) is the same target.
    pub(crate) chosen: i64,
}

impl Described {
    pub(crate) fn is_for(&self, pt: &ImagePoint) -> bool {
        self.image_id == pt.image_id && self.x == pt.x && self.y == pt.y
    }
}

/// Reads the enclosing form of a node (in browserd's world): whether activating it submits the form, and the texts
/// that name the form.
const FORM: &str = r"function() {
  const e = this.nodeType === 1 ? this : this.parentElement;
  if (!e) return { submits: false, form: [] };
  const t = (s) => (s || '').trim().replace(/\s+/g, ' ').slice(0, 120);
  const ctl = e.closest('button, input, select, textarea');
  const form = (ctl && ctl.form) || e.closest('form');
  if (!form) return { submits: false, form: [] };
  let submits = false;
  if (ctl) {
    const type = (ctl.getAttribute('type') || '').toLowerCase();
    if (ctl.tagName === 'BUTTON') submits = type === '' || type === 'submit';
    else if (ctl.tagName === 'INPUT') submits = !['button', 'reset', 'checkbox', 'radio', 'file', 'hidden', 'range', 'color'].includes(type);
  }
  const texts = [form.getAttribute('name'), form.id, form.getAttribute('aria-label'), form.getAttribute('action')];
  for (const id of (form.getAttribute('aria-labelledby') || '').split(/\s+/)) {
    const l = id && document.getElementById(id);
    if (l) texts.push(l.textContent);
  }
  for (const h of form.querySelectorAll('legend, h1, h2, h3, h4, h5, h6')) texts.push(h.textContent);
  return { submits, form: texts.map(t).filter(Boolean).slice(0, 12) };
}";

/// `Provider::describe_target`.
pub(crate) async fn describe_target(
    p: &ChromiumProvider,
    ctx: &OpContext,
    tab: TabHandle,
    params: &ActParams,
) -> Result<Option<TargetDescription>, ProviderError> {
    if (params.target.is_none() && params.at.is_none()) || !params.action.acts_on_a_node() {
        return Ok(None);
    }
    let deadline = Instant::now() + ctx.timeout.min(Duration::from_secs(10));
    let _guard = p.lock_tab_until(tab, deadline).await?;
    let sent = AtomicBool::new(false);
    let mut run = Run::start(p, ctx, tab, deadline, &sent).await?;
    let described = run.describe(params).await;
    for s in &run.sessions_used {
        let _ = p.call(Some(s), "Runtime.releaseObjectGroup", json!({"objectGroup": GROUP}), deadline).await;
    }
    described
}

impl Run<'_> {
    /// The target of `params` as the action would find it now, or `None` when it does not resolve (the broker then
    /// refuses a point it cannot class while approvals are in force). A point lands in a frame the site policy
    /// refuses: that refusal, as the action would answer it.
    async fn describe(&mut self, params: &ActParams) -> Result<Option<TargetDescription>, ProviderError> {
        let (session, frame, node, role, name) = match (&params.at, &params.target) {
            (Some(pt), _) => {
                // A point described before is described anew (it is not this check's to compare).
                if let Some(t) = self.p.st().tabs.get_mut(&self.tab) {
                    t.described = None;
                }
                if let Err(f) = self.at_point(pt, false).await {
                    if f.code == codes::ORIGIN_NOT_AUTHORISED {
                        return Err(ProviderError::new(
                            ProviderErrorKind::Refused,
                            format!("{ORIGIN_NOT_AUTHORISED_PREFIX}{}", f.message),
                        ));
                    }
                    return Ok(None);
                }
                let Some((session, frame, hit)) = self.hit_node.clone() else { return Ok(None) };
                // Bound to the meaningful node the point is on (the button, not the text node inside it that the
                // page may re-render): the same node the action compares when it hits the point again.
                let (role, name, chosen) = self.role_and_name(&session, &frame, hit).await;
                let mut st = self.p.st();
                let Some(t) = st.tabs.get_mut(&self.tab) else { return Ok(None) };
                t.described = Some(Described {
                    image_id: pt.image_id.clone(),
                    x: pt.x,
                    y: pt.y,
                    frame: frame.clone(),
                    backend: hit,
                    chosen,
                });
                (session, frame, chosen, role, name)
            }
            (None, target) => {
                let Ok(res) = self.resolve(target.as_ref()) else { return Ok(None) };
                let (role, name, _) = self.role_and_name(&res.session, &res.frame_id, res.backend).await;
                (res.session, res.frame_id, res.backend, role, name)
            }
        };
        let (submits, form) = match self.node(&session, &frame, node).await {
            Ok(object) => match self.call_on(&session, &object, FORM, json!([])).await {
                Ok(v) => (
                    v["submits"].as_bool().unwrap_or(false),
                    v["form"]
                        .as_array()
                        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
                        .unwrap_or_default(),
                ),
                Err(_) => (false, Vec::new()),
            },
            Err(_) => (false, Vec::new()),
        };
        let document = {
            let st = self.p.st();
            let f = st.tabs.get(&self.tab).and_then(|t| t.frames.get(&frame));
            f.map(|f| format!("{}#{}", f.loader_id, f.doc_epoch)).unwrap_or_default()
        };
        Ok(Some(TargetDescription { role, name, frame, document, node: node.to_string(), submits, form }))
    }
}
