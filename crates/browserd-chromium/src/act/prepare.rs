//! Before any input: the tab brought to the front if hidden, the effect tracker in place, the target's
//! `nodeVersion` checked and its nodes resolved into browserd's world, done together.

use std::time::Duration;

use browserd_protocol::{ActParams, ActionKind, codes};
use serde_json::json;

use super::fail::{Fail, blocked_by};
use super::run::Run;

impl Run<'_> {
    /// The steps before any input, independent of each other and so done together: the page is brought forward if
    /// hidden and the effect tracker is in place (so effects of this action are seen); the nodes must still be what
    /// the caller saw (`nodeVersion`); and the target is resolved into browserd's world for its first check. The time
    /// counts as resolving the target.
    pub(super) async fn prepare(&mut self, params: &ActParams) -> Result<(), Fail> {
        let (p, tab, deadline) = (self.p, self.tab, self.deadline);
        let foreground = params.action.acts_on_a_node();
        let targets = [params.target.as_ref(), params.to.as_ref()];
        // A ref into an out-of-process frame whose session is being attached again is judged once it is back.
        crate::observe::await_reattached_frames(p, tab, &targets, deadline).await;
        let run = &*self;
        let page = async {
            if foreground {
                run.ensure_visible().await;
            }
            if run.dialog_open().is_none() {
                let _ = run.tracker_context(false).await;
            }
        };
        // The browser answers the version check only once a dialog that blocks the page is closed: it is not waited
        // for while one is open.
        let versions = async {
            if run.dialog_open().is_some() {
                return None;
            }
            tokio::select! {
                r = crate::observe::check_node_versions(p, tab, &targets, deadline) => Some(r),
                () = run.dialog_opened() => None,
            }
        };
        // The requests the input will start are watched from before it is sent (`requests.rs`); not for a navigation
        // (its load is waited for) nor while a dialog blocks the page, which no input reaches.
        let navigation = params.action.navigates();
        let watch =
            async { if !navigation && run.dialog_open().is_none() { run.watch_requests().await } else { Vec::new() } };
        let (versions, (), prefetched, network) = tokio::join!(versions, page, run.prefetch(params), watch);
        self.network_enabled = network;
        *self.prefetched.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner) = prefetched;
        let versions = match versions {
            Some(v) => v,
            // Checked now if the dialog is gone; otherwise the action stops at the dialog, before any input.
            None if self.dialog_open().is_none() => {
                crate::observe::check_node_versions(p, tab, &targets, deadline).await
            }
            None if params.action == ActionKind::Dialog => Ok(()),
            None => {
                return Err(self.dialog_open().map_or_else(
                    || {
                        Fail::new(
                            codes::DIALOG_BLOCKING,
                            "a dialog blocked the page; handle it with the dialog action first",
                        )
                    },
                    |d| blocked_by(&d),
                ));
            }
        };
        versions.map_err(|(reason, message)| {
            self.res.stale_reason = Some(reason);
            Fail::new(codes::STALE_TARGET, message)
        })
    }

    /// A hidden (background) tab gets no frames, so the browser holds input to it for seconds: bring it to the
    /// front first. Only done when the page reports itself hidden.
    async fn ensure_visible(&self) {
        if self.dialog_open().is_some() {
            return;
        }
        let s = self.session.clone();
        // A page that cannot be read is not brought to the front on a guess (that would take the user's focus).
        if self.eval("document.visibilityState", "reading the page's visibility").await.ok() != Some(json!("hidden")) {
            return;
        }
        let _ = self.p.call(Some(&s), "Page.bringToFront", json!({}), self.deadline).await;
        for _ in 0..20 {
            let seen = self.eval("document.visibilityState", "reading the page's visibility").await.ok();
            if seen != Some(json!("hidden")) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
