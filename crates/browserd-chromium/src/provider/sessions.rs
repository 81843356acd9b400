//! Attaching to tabs and frames: a tab's page session on first use (with auto-attach for out-of-process frames),
//! what each page or frame session needs enabled, and their frame trees read into the records.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use browserd_cdp::{AutoAttach, Cdp, CdpError, SessionId};
use browserd_core::provider::{ProviderError, ProviderKind, TabHandle};
use serde_json::{Value, json};

use crate::state::State;

use super::{ChromiumProvider, cdp_err, debugger_in_use, gone, remaining};

impl ChromiumProvider {
    /// The tab's page session, attaching first when needed.
    pub(crate) async fn ensure_attached(&self, tab: TabHandle, deadline: Instant) -> Result<SessionId, ProviderError> {
        let (target, opened_here) = {
            let st = self.st();
            let t = st.tabs.get(&tab).ok_or_else(|| gone(tab))?;
            if let Some(s) = &t.session {
                return Ok(s.clone());
            }
            (t.target_id.clone(), t.opened_here)
        };
        // browserd holds no attachment of this tab now, so an attached target means another client holds it
        // (developer tools, another extension, a second protocol client): refuse before attaching. Over the extension
        // relay the extension makes this check itself (`DEBUGGER_BUSY`). On a remote endpoint a tab browserd opened
        // is exempt: a grid's own client (Browserless, Selenium) attaches to every page it serves, and that is not
        // a person's developer tools.
        let grid_page = self.kind == ProviderKind::Remote && opened_here;
        if self.kind != ProviderKind::Extension && !grid_page {
            let info = match self.call(None, "Target.getTargetInfo", json!({"targetId": target}), deadline).await {
                Ok(info) => info,
                // An endpoint without the method cannot say; the attach below still reports what it finds.
                Err(CdpError::Protocol { code: -32601, .. }) => Value::Null,
                Err(e) => return Err(cdp_err(&e, "reading the tab's target")),
            };
            if info["targetInfo"]["attached"].as_bool() == Some(true) {
                return Err(debugger_in_use(tab, "another debugging client is attached to it"));
            }
        }
        let r = self
            .call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}), deadline)
            .await
            .map_err(|e| cdp_err(&e, "attaching to the tab"))?;
        let session = SessionId(r["sessionId"].as_str().unwrap_or_default().to_owned());
        {
            let mut st = self.st();
            st.by_session.insert(session.clone(), tab);
            if let Some(t) = st.tabs.get_mut(&tab) {
                t.session = Some(session.clone());
                t.detaching = false;
            }
        }
        self.setup_session(&session, tab, deadline).await?;
        let filter = json!([{"type": "iframe"}, {"exclude": true}]);
        let aa = AutoAttach { wait_for_debugger_on_start: true, resume_children: true, filter: Some(filter) };
        self.cdp
            .set_auto_attach(Some(&session), aa, remaining(deadline))
            .await
            .map_err(|e| cdp_err(&e, "enabling auto-attach for frames"))?;
        Ok(session)
    }

    /// Enables what a page or frame session needs and reads its frame tree.
    pub(crate) async fn setup_session(
        &self,
        session: &SessionId,
        tab: TabHandle,
        deadline: Instant,
    ) -> Result<(), ProviderError> {
        let s = Some(session);
        let (a, b, c, _, d) = tokio::join!(
            self.call(s, "Page.enable", json!({}), deadline),
            self.call(s, "Runtime.enable", json!({}), deadline),
            crate::act::install_tracker(&self.cdp, session, remaining(deadline)),
            self.call(s, "Inspector.enable", json!({}), deadline),
            self.intercept_page(session, deadline),
        );
        for r in [a.map(drop), b.map(drop), c] {
            r.map_err(|e| cdp_err(&e, "preparing the tab session"))?;
        }
        d?;
        if self.advanced.collecting(tab) {
            crate::advanced::on_session_setup(self, session, tab, deadline).await?;
        }
        // A tab holding its session's viewport gets it on every page session, before any operation runs.
        self.apply_viewport(session, tab, deadline).await?;
        self.sync_frames(session, tab, deadline).await
    }

    /// Reads a session's frame tree into the records.
    pub(crate) async fn sync_frames(
        &self,
        session: &SessionId,
        tab: TabHandle,
        deadline: Instant,
    ) -> Result<(), ProviderError> {
        let tree = self
            .call(Some(session), "Page.getFrameTree", json!({}), deadline)
            .await
            .map_err(|e| cdp_err(&e, "reading the frame tree"))?;
        let mut st = self.st();
        let st = &mut *st;
        let Some(t) = st.tabs.get_mut(&tab) else { return Err(gone(tab)) };
        let oop_root = t.children.contains_key(session);
        let mut stack = vec![(&tree["frameTree"], true)];
        while let Some((node, is_root)) = stack.pop() {
            let f = &node["frame"];
            let id = f["id"].as_str().unwrap_or_default();
            let parent = f["parentId"].as_str().map(str::to_owned);
            // A child session's tree starts at the OOPIF; a parent session lists OOPIFs it does not host too.
            let oop = oop_root && is_root;
            let hosted_elsewhere = t.frames.get(id).is_some_and(|fr| fr.oop && fr.session != *session);
            let mut url =
                format!("{}{}", f["url"].as_str().unwrap_or_default(), f["urlFragment"].as_str().unwrap_or(""));
            // A frame the site policy stopped before browserd knew its tab: its error page stands for the stopped
            // URL (one line of that origin, never read), as for a frame stopped in a known tab.
            if let Some(stopped) = st.unplaced_blocked.remove(id)
                && url.starts_with("chrome-error:")
            {
                url.clone_from(&stopped);
                t.blocked_frames.insert_value(id.to_owned(), stopped);
            }
            if !hosted_elsewhere {
                t.upsert_frame(id, parent, f["loaderId"].as_str().unwrap_or_default(), &url, session, oop);
            }
            if let Some(kids) = node["childFrames"].as_array() {
                stack.extend(kids.iter().map(|k| (k, false)));
            }
        }
        Ok(())
    }
}

/// Prepares a frame's own session (an out-of-process frame, attached automatically) and reads its frame tree.
pub(super) async fn setup_child(cdp: Cdp, state: Arc<Mutex<State>>, session: SessionId, tab: TabHandle) {
    let t = Duration::from_secs(5);
    let s = Some(&session);
    let _ = tokio::join!(
        cdp.call(s, "Page.enable", json!({}), t),
        cdp.call(s, "Runtime.enable", json!({}), t),
        crate::act::install_tracker(&cdp, &session, t),
    );
    if let Ok(tree) = cdp.call(s, "Page.getFrameTree", json!({}), t).await {
        let mut st = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(tb) = st.tabs.get_mut(&tab) {
            let mut stack = vec![(&tree["frameTree"], true)];
            while let Some((node, root)) = stack.pop() {
                let f = &node["frame"];
                let id = f["id"].as_str().unwrap_or_default();
                let parent = f["parentId"]
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| tb.frames.get(id).and_then(|x| x.parent.clone()));
                tb.upsert_frame(
                    id,
                    parent,
                    f["loaderId"].as_str().unwrap_or_default(),
                    f["url"].as_str().unwrap_or_default(),
                    &session,
                    root,
                );
                if let Some(kids) = node["childFrames"].as_array() {
                    stack.extend(kids.iter().map(|k| (k, false)));
                }
            }
        }
    }
}
