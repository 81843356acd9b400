//! Resolving what an action acts on: a ref or `role "name"` to a node of browserd's world (prefetched before the first
//! check where that costs nothing), or a screenshot point re-validated against the page as it is now.

use std::time::{Duration, Instant};

use browserd_cdp::SessionId;
use browserd_protocol::{ActParams, ActionKind, ImagePoint, NodeRef, codes};
use serde_json::json;

use super::GROUP;
use super::fail::{Fail, world_fail};
use super::run::Run;
use crate::observe::{RefError, Resolved, resolve_ref};
use crate::point::{IMAGE_WINDOW, current_viewport, map_point};
use crate::world;

/// A node resolved into browserd's world ahead of its first use: where it lives, the context it was resolved in, and
/// its object id.
pub(super) struct Prefetched {
    pub(super) session: SessionId,
    pub(super) frame: String,
    pub(super) backend: i64,
    pub(super) context: i64,
    pub(super) object: String,
}

impl Run<'_> {
    /// Resolves a target (a ref, or `role "name"` matched against the latest observation).
    pub(super) fn resolve(&mut self, target: Option<&NodeRef>) -> Result<Resolved, Fail> {
        let Some(target) = target else {
            return Err(Fail::new(codes::INVALID_PARAMS, "this action needs a `target` ref from an observation"));
        };
        let s = target.as_str().trim();
        let is_ref = crate::state::parse_ref(s).is_some();
        let r = if is_ref {
            s.to_owned()
        } else {
            let (role, name) = match s.find('"') {
                Some(i) => (s[..i].trim().to_owned(), s[i..].trim().trim_matches('"').to_owned()),
                None => (String::new(), s.to_owned()),
            };
            let st = self.p.st();
            let t = st.tabs.get(&self.tab).ok_or_else(|| Fail::new(codes::STALE_TARGET, "the tab is gone"))?;
            let latest = t.latest_lines();
            let matches: Vec<(String, String)> = latest
                .iter()
                .filter_map(|l| {
                    let r = l.node_ref.as_ref()?;
                    let e = t.refs.by_ref.get(r)?;
                    let ok = (role.is_empty() || e.role == role) && e.name.eq_ignore_ascii_case(&name);
                    ok.then(|| (r.clone(), l.text.clone()))
                })
                .collect();
            match matches.len() {
                0 => {
                    return Err(Fail::new(
                        codes::TARGET_NOT_FOUND,
                        format!("nothing in the latest observation matches {s}; observe and use a ref"),
                    ));
                }
                1 => matches[0].0.clone(),
                n => {
                    let mut f = Fail::new(
                        codes::AMBIGUOUS_TARGET,
                        format!("{s} matches {n} nodes; pick one of the candidate refs"),
                    );
                    f.candidates = matches.into_iter().map(|(_, line)| line).collect();
                    return Err(f);
                }
            }
        };
        match resolve_ref(self.p, self.tab, &r) {
            Ok(res) if self.frame_refusal(&res.frame_id).is_some() => {
                let why = self.frame_refusal(&res.frame_id).unwrap_or_default();
                Err(Fail::new(
                    codes::ORIGIN_NOT_AUTHORISED,
                    format!("ref {r} is in a frame that shows {why}; nothing was sent"),
                ))
            }
            Ok(res) => {
                if !self.sessions_used.contains(&res.session) {
                    self.sessions_used.push(res.session.clone());
                }
                Ok(res)
            }
            Err(RefError::TabGone) => {
                self.res.stale_reason = Some(browserd_protocol::StaleReason::TabClosed);
                Err(Fail::new(codes::STALE_TARGET, "the tab is gone"))
            }
            Err(RefError::Unknown) => Err(Fail::new(
                codes::TARGET_NOT_FOUND,
                format!("ref {r} was never issued for this tab (refs are per tab); observe and use a ref from it"),
            )),
            Err(RefError::Stale(why)) => {
                self.res.stale_reason = Some(why.reason);
                Err(Fail::new(
                    codes::STALE_TARGET,
                    format!("ref {r} is stale: {why}; observe again and use the new ref"),
                ))
            }
        }
    }

    /// The site policy before any input: a tab showing an origin that is not authorised takes no action but going
    /// somewhere else (`navigate`, whose destination the broker checks, and `back`).
    pub(super) fn tab_refusal(&self, params: &ActParams) -> Option<Fail> {
        if matches!(params.action, ActionKind::Navigate | ActionKind::Back) {
            return None;
        }
        let url = {
            let st = self.p.st();
            let t = st.tabs.get(&self.tab)?;
            t.policy_url(&t.url)
        };
        let why = self.p.origin_refusal(self.tab, &url)?;
        Some(Fail::new(codes::ORIGIN_NOT_AUTHORISED, format!("the tab shows {why}; nothing was sent")))
    }

    /// Why the site policy refuses the frame `frame_id` of the tab (its document's origin), or `None`.
    pub(super) fn frame_refusal(&self, frame_id: &str) -> Option<String> {
        let url = {
            let st = self.p.st();
            let t = st.tabs.get(&self.tab)?;
            t.frames.get(frame_id).map_or_else(|| t.policy_url(&t.url), |f| t.policy_url(&f.url))
        };
        self.p.origin_refusal(self.tab, &url)
    }

    /// The ref's node as an object of browserd's isolated world in its frame (see [`crate::world`]): every script
    /// browserd runs on a node runs there, never in the page's own world.
    pub(super) async fn object(&self, res: &Resolved) -> Result<String, Fail> {
        self.node(&res.session, &res.frame_id, res.backend).await
    }

    /// The target's nodes (the node, and the node the mouse points at when another) resolved into browserd's world
    /// ahead of the first check, so that doing so costs no round trip of its own: only with a world context already
    /// remembered for the node's document (one is never made here, so every object of the action belongs to the one
    /// context), and nothing on failure (the first check then resolves the node itself and reports what fails).
    pub(super) async fn prefetch(&self, params: &ActParams) -> Vec<Prefetched> {
        // A node cannot be resolved while a dialog blocks the page (the answer waits for the dialog): given up as soon
        // as one is open.
        tokio::select! {
            () = self.dialog_opened() => Vec::new(),
            nodes = self.prefetch_nodes(params) => nodes,
        }
    }

    async fn prefetch_nodes(&self, params: &ActParams) -> Vec<Prefetched> {
        let Some(target) = params.target.as_ref().map(|t| t.as_str().trim()) else { return Vec::new() };
        if params.at.is_some()
            || crate::state::parse_ref(target).is_none()
            || matches!(params.action, ActionKind::Wait | ActionKind::Dialog | ActionKind::Navigate)
        {
            return Vec::new();
        }
        let Ok(res) = resolve_ref(self.p, self.tab, target) else { return Vec::new() };
        if self.frame_refusal(&res.frame_id).is_some() {
            return Vec::new();
        }
        let Some(context) = world::remembered(self.p, self.tab, &res.session, &res.frame_id) else { return Vec::new() };
        let mut backends = vec![res.backend];
        if res.point_backend != res.backend {
            backends.push(res.point_backend);
        }
        let resolved = futures_util::future::join_all(
            backends.iter().map(|b| world::resolve_in(self.p, &res.session, *b, context, GROUP, self.deadline)),
        )
        .await;
        backends
            .into_iter()
            .zip(resolved)
            .filter_map(|(backend, r)| {
                let object = r.ok()??;
                Some(Prefetched { session: res.session.clone(), frame: res.frame_id.clone(), backend, context, object })
            })
            .collect()
    }

    /// A node of `frame` (rendered by `session`) as an object of browserd's isolated world there.
    pub(super) async fn node(&self, session: &SessionId, frame: &str, backend: i64) -> Result<String, Fail> {
        let early = {
            let mut pre = self.prefetched.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let at = pre.iter().position(|n| n.session == *session && n.frame == frame && n.backend == backend);
            at.map(|i| pre.swap_remove(i))
        };
        // Used only while its context is still the remembered one of the node's document.
        if let Some(n) = early
            && world::remembered(self.p, self.tab, session, frame) == Some(n.context)
        {
            return Ok(n.object);
        }
        match world::node(self.p, self.tab, session, frame, backend, GROUP, self.deadline).await {
            Ok(Some(id)) => Ok(id),
            Ok(None) => Err(Fail::new(
                codes::STALE_TARGET,
                "the node was removed from the document; observe again and use the new ref",
            )),
            Err(e) => Err(world_fail(e, "resolving the node")),
        }
    }

    /// Re-validates a screenshot point against the current page (document, viewport size, zoom, scroll) and hit-tests
    /// it. Returns the point in top-level viewport coordinates; the receiving element goes to `res.hit`.
    pub(super) async fn at_point(&mut self, pt: &ImagePoint, report_hit: bool) -> Result<(f64, f64), Fail> {
        let (geom, epoch, elsewhere) = {
            let st = self.p.st();
            let t = st.tabs.get(&self.tab).ok_or_else(|| Fail::new(codes::STALE_TARGET, "the tab is gone"))?;
            let g = t.images.get(&pt.image_id).cloned();
            let elsewhere = g.is_none() && st.tabs.values().any(|o| o.images.get(&pt.image_id).is_some());
            (g, t.main_epoch(), elsewhere)
        };
        let Some(geom) = geom else {
            let why = if elsewhere {
                "belongs to another tab".to_owned()
            } else {
                format!("is unknown for this tab (only its last {IMAGE_WINDOW} screenshots are kept)")
            };
            return Err(Fail::new(
                codes::TARGET_NOT_FOUND,
                format!("image {} {why}; take a screenshot of this tab and use its imageId", pt.image_id),
            ));
        };
        let session = self.session.clone();
        let now = current_viewport(self.p, self.tab, &session, self.deadline)
            .await
            .map_err(|e| world_fail(e, "reading the viewport"))?;
        let m = map_point(&geom, pt, epoch, &now).map_err(|r| Fail::new(r.code, r.message))?;
        if let Some((dx, dy)) = m.scrolled {
            self.res.message = Some(format!(
                "the page scrolled by ({dx:.0}, {dy:.0}) CSS px since screenshot {}; the point was moved with the page",
                geom.image_id
            ));
        }
        // Always hit-tested: the site policy checks the frame whose document would receive the input (a point may
        // land in a cross-origin frame the policy does not authorise; `node_at` refuses it, nothing is sent).
        let hit = Some(self.node_at(m.hit_x, m.hit_y).await?);
        // The node this point hit when the action was described for an approval: the page changed in between when
        // it now hits another one, and the approval was not for that one.
        let described = {
            let mut st = self.p.st();
            st.tabs.get_mut(&self.tab).and_then(|t| t.described.take_if(|d| d.is_for(pt)))
        };
        let mut moved = false;
        if let (Some(d), Some((hs, frame, backend))) = (&described, &hit)
            && (d.frame != *frame || d.backend != *backend)
        {
            // Another node of the same meaningful one (the text inside the described button re-rendered) is the
            // same target.
            moved = d.frame != *frame || self.role_and_name(hs, frame, *backend).await.2 != d.chosen;
        }
        if moved && let Some((hs, frame, backend)) = &hit {
            let el = self.describe_element(hs, frame, *backend).await;
            return Err(Fail::new(
                codes::STALE_TARGET,
                format!(
                    "the point ({:.0}, {:.0}) of image {} now lands on {} {:?} [{}], not on what was checked before \
                     the action; nothing was sent: take a new screenshot",
                    pt.x, pt.y, geom.image_id, el.role, el.name, el.node
                ),
            ));
        }
        self.hit_node.clone_from(&hit);
        if let Some((_, frame, _)) = &hit
            && let Some(why) = self.frame_refusal(frame)
        {
            return Err(Fail::new(
                codes::ORIGIN_NOT_AUTHORISED,
                format!(
                    "the point ({:.0}, {:.0}) of image {} is in a frame that shows {why}; nothing was sent",
                    pt.x, pt.y, geom.image_id
                ),
            ));
        }
        if let (Some((dx, dy)), Some((hs, frame, backend))) = (m.scrolled, &hit) {
            // Moving the point with the page is wrong for content that does not scroll with it.
            let (ox, oy) = (m.x + dx, m.y + dy);
            let (hx, hy) = (m.hit_x + dx, m.hit_y + dy);
            let mut pinned = None;
            if self.pinned(hs, frame, *backend).await? {
                pinned = Some(("now lands on", hs.clone(), frame.clone(), *backend));
            } else if ox >= 0.0 && oy >= 0.0 && ox < now.width && oy < now.height {
                let (os, of, ob) = self.node_at(hx, hy).await?;
                if self.pinned(&os, &of, ob).await? {
                    pinned = Some(("was on", os, of, ob));
                }
            }
            if let Some((verb, ps, pf, pb)) = pinned {
                let el = self.describe_element(&ps, &pf, pb).await;
                return Err(Fail::new(
                    codes::STALE_TARGET,
                    format!(
                        "the page scrolled by ({dx:.0}, {dy:.0}) CSS px since screenshot {} and the point {verb} \
                         fixed-position {} {:?} [{}], which does not move with the page; take a new screenshot",
                        geom.image_id, el.role, el.name, el.node
                    ),
                ));
            }
        }
        if let Some((hs, frame, backend)) = hit {
            if hs != self.session {
                // The browser routes input to out-of-process frames by the last composited frame's hit-test data:
                // let both renderers present a frame so a recent scroll is reflected before the input is sent.
                let main = self.session.clone();
                let until = self.deadline.min(Instant::now() + Duration::from_millis(500));
                for s in [&main, &hs] {
                    let frames = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))";
                    let _ = world::eval(self.p, self.tab, s, frames, until).await;
                }
            }
            if report_hit {
                let el = self.describe_element(&hs, &frame, backend).await;
                self.res.hit = Some(el);
            }
        }
        Ok((m.x, m.y))
    }

    /// Whether a node is inside fixed- or sticky-positioned content (which does not scroll with the page).
    async fn pinned(&self, session: &SessionId, frame: &str, backend: i64) -> Result<bool, Fail> {
        const PINNED: &str = r"function() {
          for (let e = this.nodeType === 1 ? this : this.parentElement; e; e = e.parentElement || (e.getRootNode() && e.getRootNode().host)) {
            const p = getComputedStyle(e).position;
            if (p === 'fixed' || p === 'sticky') return true;
          }
          return false;
        }";
        let obj = world::node(self.p, self.tab, session, frame, backend, GROUP, self.deadline)
            .await
            .map_err(|e| world_fail(e, "checking whether the point is on fixed content"))?;
        let Some(obj) = obj else { return Ok(false) };
        Ok(self.call_on(session, &obj, PINNED, json!([])).await? == json!(true))
    }
}
