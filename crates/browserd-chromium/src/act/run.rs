//! The state of one action, shared by its phases (each an `impl Run` block in its own file), and the helpers every
//! phase uses: the tab's dialog, the link to the page, and calls into browserd's isolated world.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use browserd_cdp::SessionId;
use browserd_core::provider::{OpContext, ProviderError, TabHandle};
use browserd_protocol::{ActionResult, codes};
use serde_json::{Value, json};

use super::fail::{Fail, TARGET_CLOSED, cdp_fail, world_fail};
use super::resolve::Prefetched;
use crate::observe::Built;
use crate::provider::{ChromiumProvider, gone, remaining};
use crate::state::Revision;
use crate::world;

/// One action under way, shared by its phases: where it acts (`p`, `tab`, `session`: the tab's page session) and until
/// when (`deadline`); what effects are compared against (`seq0`: the tab log's position at the start, `baseline`: the
/// latest observation); what it gathered on the way (`announced`, `last_built`, `unverified`, `sessions_used`: whose
/// objects are released at the end); and the result being built (`res`).
pub(super) struct Run<'a> {
    pub(super) p: &'a ChromiumProvider,
    pub(super) tab: TabHandle,
    pub(super) deadline: Instant,
    pub(super) session: SessionId,
    pub(super) res: ActionResult,
    pub(super) seq0: u64,
    pub(super) baseline: Option<Revision>,
    pub(super) announced: Vec<String>,
    pub(super) sessions_used: Vec<SessionId>,
    pub(super) last_built: Option<Built>,
    /// The expectations (indices) whose latest completed check could not be made out of the page's reach. A check cut
    /// short by the deadline leaves the entry as it was; a definite answer removes it.
    pub(super) unverified: Vec<u32>,
    /// Set as soon as a command that changes the page (input, navigation, selection, files, dialog) is handed to the
    /// browser; read by the caller when the action is cancelled midway.
    pub(super) sent: &'a AtomicBool,
    /// Nodes of the target resolved into browserd's world ahead of the first check (see [`Run::prefetch`]), each used
    /// once.
    pub(super) prefetched: std::sync::Mutex<Vec<Prefetched>>,
    /// What the effect tracker said since the input: `None` before any read, else whether the DOM changed.
    pub(super) dom_changed: Option<bool>,
    /// The node a screenshot point hit (its session, frame and backend node), once hit-tested.
    pub(super) hit_node: Option<(SessionId, String, i64)>,
    /// The sessions this action enabled `Network` on to watch the requests it starts (`requests.rs`); it disables it
    /// there at the end.
    pub(super) network_enabled: Vec<SessionId>,
    /// When the first input of this action was handed to the browser: requests begun since are its answer.
    pub(super) input_at: Option<Instant>,
    /// The field typed into offers suggestions and showed none yet: the settle gives them time to come
    /// ([`Run::await_suggestions`]).
    pub(super) suggests: bool,
    /// What the input set on its way out was waited for (`Run::await_exits`).
    pub(super) exits_awaited: bool,
}

pub(super) fn index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

pub(super) fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0 * 100.0).round() / 100.0
}

impl<'a> Run<'a> {
    /// Attaches to the tab and remembers what the effect summary compares against (the log position and the latest
    /// observation).
    pub(super) async fn start(
        p: &'a ChromiumProvider,
        ctx: &OpContext,
        tab: TabHandle,
        deadline: Instant,
        sent: &'a AtomicBool,
    ) -> Result<Self, ProviderError> {
        let session = p.ensure_attached(tab, deadline).await?;
        let (seq0, baseline) = {
            let st = p.st();
            let t = st.tabs.get(&tab).ok_or_else(|| gone(tab))?;
            (st.seq, t.history.back().map(|(_, rev)| rev.clone()))
        };
        Ok(Run {
            p,
            tab,
            deadline,
            session: session.clone(),
            res: ActionResult { trace_id: ctx.trace_id.clone(), ..Default::default() },
            seq0,
            baseline,
            announced: Vec::new(),
            sessions_used: vec![session],
            last_built: None,
            unverified: Vec::new(),
            sent,
            prefetched: std::sync::Mutex::new(Vec::new()),
            dom_changed: None,
            hit_node: None,
            network_enabled: Vec::new(),
            input_at: None,
            suggests: false,
            exits_awaited: false,
        })
    }
}

impl Run<'_> {
    pub(super) fn dialog_open(&self) -> Option<browserd_protocol::DialogInfo> {
        self.p.st().tabs.get(&self.tab).and_then(|t| t.dialog.clone())
    }

    /// Resolves once a dialog is open on the tab (at once if one is).
    pub(super) async fn dialog_opened(&self) {
        loop {
            let notified = self.p.dialog_notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.dialog_open().is_some() {
                return;
            }
            notified.await;
        }
    }

    /// Whether the link to the page is gone: the connection closed, the tab closed, or its session detached.
    pub(super) fn link_lost(&self) -> Option<Fail> {
        if let Some(reason) = self.p.cdp.close_reason() {
            return Some(Fail {
                link: true,
                ..Fail::new(codes::CONNECTION_LOST, format!("the connection to the browser closed ({reason})"))
            });
        }
        let st = self.p.st();
        let why = match st.tabs.get(&self.tab) {
            None => "the tab closed",
            Some(t) if t.session.as_ref() != Some(&self.session) => "the debugger was detached from the tab",
            Some(_) => return None,
        };
        Some(Fail { link: true, ..Fail::new(TARGET_CLOSED, why) })
    }

    /// Calls browserd's function `f` on `object` (an object of browserd's world, from [`Run::node`]): it runs in that
    /// world, with the browser's built-ins.
    pub(super) async fn call_on(&self, session: &SessionId, object: &str, f: &str, args: Value) -> Result<Value, Fail> {
        self.call_on_marked(session, object, f, args, false).await
    }

    /// Like [`Run::call_on`], for browserd's function that changes the page as the action's input (picks an option,
    /// selects text, scrolls): the extension relay's last-hop gate checks it as a write (lease, fencing token, Stop),
    /// like any `Input.*` command.
    pub(super) async fn act_on(&self, session: &SessionId, object: &str, f: &str, args: Value) -> Result<Value, Fail> {
        self.call_on_marked(session, object, f, args, true).await
    }

    async fn call_on_marked(
        &self,
        session: &SessionId,
        object: &str,
        f: &str,
        args: Value,
        for_action: bool,
    ) -> Result<Value, Fail> {
        let params = json!({"objectId": object, "functionDeclaration": f, "arguments": args, "returnByValue": true, "awaitPromise": true});
        let r = self
            .p
            .call_marked(Some(session), "Runtime.callFunctionOn", params, remaining(self.deadline), for_action)
            .await;
        let v = r.map_err(|e| {
            cdp_fail(&e, if for_action { "running the action's script" } else { "reading the node" }, false)
        })?;
        if let Some(ex) = v.get("exceptionDetails") {
            return Err(Fail::new(
                codes::ACTION_FAILED,
                format!(
                    "browserd's script failed in its isolated world ({}); observe the page and try another way",
                    ex["exception"]["description"].as_str().or(ex["text"].as_str()).unwrap_or("an exception")
                ),
            ));
        }
        Ok(v["result"]["value"].clone())
    }

    /// Evaluates `expr` in browserd's world of the tab's main frame (never in the page's own world); `what` names the
    /// step in a failure.
    pub(super) async fn eval(&self, expr: &str, what: &str) -> Result<Value, Fail> {
        world::eval(self.p, self.tab, &self.session, expr, self.deadline).await.map_err(|e| world_fail(e, what))
    }

    /// Like [`Run::eval`], for a script that changes the page as the action's input: checked as a write by the
    /// extension relay's last-hop gate (see [`Run::act_on`]).
    pub(super) async fn eval_for_action(&self, expr: &str, what: &str) -> Result<Value, Fail> {
        world::eval_for_action(self.p, self.tab, &self.session, expr, self.deadline)
            .await
            .map_err(|e| world_fail(e, what))
    }
}
