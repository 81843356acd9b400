//! The `Provider` implementation: capabilities, connecting, the tab operations, debugger attach and detach, and
//! observe, act and the advanced tier handed to their modules.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use browserd_cdp::{CdpError, SessionId};
use browserd_core::provider::{
    BrowserInfo, Capability, CapabilityMatrix, CapabilityState, CreateTab, OpContext, Provider, ProviderError,
    ProviderErrorKind, ProviderEvent, ProviderKind, TabHandle, TabInfo, UnsupportedReason,
};
use browserd_protocol::tools::{
    ConsoleParams, ConsoleResult, EvaluateParams, EvaluateResult, NetworkParams, NetworkResult, RawProtocolParams,
    RawProtocolResult,
};
use browserd_protocol::{ActParams, ActionResult, Observation, ObserveParams};
use serde_json::json;
use tokio::sync::broadcast;

use super::events::register_page;
use super::{ChromiumProvider, cdp_err, gone, remaining};

fn unsupported(detail: &str) -> CapabilityState {
    CapabilityState::Unsupported { reason: UnsupportedReason::ByImplementation, detail: detail.to_owned() }
}

#[async_trait]
impl Provider for ChromiumProvider {
    fn kind(&self) -> ProviderKind {
        self.kind
    }

    fn void_refs(&self, tab: TabHandle) {
        if let Some(t) = self.st().tabs.get_mut(&tab) {
            t.refs.void_all();
        }
    }

    fn capabilities(&self) -> CapabilityMatrix {
        let mut m = BTreeMap::new();
        // Turn cleanup is safe: the provider keeps its own ownership records for this browser.
        for c in [
            Capability::TurnCleanup,
            Capability::TurnScopedMarks,
            Capability::RetainedCleanup,
            Capability::DebuggerLeaseRecovery,
            Capability::ClaimUserTabs,
            Capability::Screenshots,
            Capability::CrossOriginFrames,
        ] {
            m.insert(c, CapabilityState::Supported);
        }
        m.insert(
            Capability::TabGroups,
            unsupported("tab groups are unsupported by implementation on Chromium over CDP (no tab-group API); the extension provider has them"),
        );
        m.insert(
            Capability::Upload,
            if self.config.upload_roots.is_empty() {
                CapabilityState::Unsupported {
                    reason: UnsupportedReason::Unauthorised,
                    detail: "no upload directory is authorised; configure upload roots".into(),
                }
            } else {
                CapabilityState::Supported
            },
        );
        m.insert(
            Capability::Downloads,
            if self.kind == ProviderKind::Extension {
                CapabilityState::Unsupported {
                    reason: UnsupportedReason::ByImplementation,
                    detail: "downloads are not confined over the extension relay: the user's browser saves them \
                             where its own settings say; an action that starts one reports it in `effects.downloads` \
                             with no receipt"
                        .into(),
                }
            } else if self.config.download_dir.is_some() {
                CapabilityState::Supported
            } else {
                CapabilityState::Unsupported {
                    reason: UnsupportedReason::Unauthorised,
                    detail: "no download directory is configured; downloads are denied".into(),
                }
            },
        );
        // Offered by the provider; the broker's `[advanced]` policy decides whether a session may use them.
        m.insert(Capability::Evaluate, CapabilityState::Supported);
        m.insert(Capability::RawProtocol, CapabilityState::Supported);
        if self.cdp.is_closed() {
            for v in m.values_mut() {
                *v = CapabilityState::Unsupported {
                    reason: UnsupportedReason::Offline,
                    detail: "the browser connection is closed; relaunch or reconnect".into(),
                };
            }
        }
        CapabilityMatrix(m)
    }

    fn events(&self) -> broadcast::Receiver<ProviderEvent> {
        self.events_tx.subscribe()
    }

    async fn connect(&self, ctx: &OpContext) -> Result<BrowserInfo, ProviderError> {
        let deadline = Instant::now() + ctx.timeout;
        let v = self
            .call(None, "Browser.getVersion", json!({}), deadline)
            .await
            .map_err(|e| cdp_err(&e, "reading the browser version"))?;
        let product = v["product"].as_str().unwrap_or_default().to_owned();
        product.clone_into(&mut self.product.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        self.discovered
            .get_or_try_init(|| async {
                self.call(None, "Target.setDiscoverTargets", json!({"discover": true}), deadline)
                    .await
                    .map_err(|e| cdp_err(&e, "discovering targets"))?;
                // A managed browser without a download directory denies downloads; a remote browser's own
                // download settings are left alone unless a directory is configured.
                // Over the extension relay there is no browser session to confine downloads with: the user's own
                // download settings stay, and the capability says so.
                let dl = match (&self.config.download_dir, self.kind) {
                    (_, ProviderKind::Extension) => None,
                    (Some(d), _) => Some(json!({"behavior": "allowAndName", "downloadPath": d, "eventsEnabled": true})),
                    (None, ProviderKind::Managed) => Some(json!({"behavior": "deny", "eventsEnabled": true})),
                    (None, _) => None,
                };
                if let Some(dl) = dl {
                    self.call(None, "Browser.setDownloadBehavior", dl, deadline)
                        .await
                        .map_err(|e| cdp_err(&e, "configuring downloads"))?;
                }
                self.intercept_browser(deadline).await?;
                Ok::<(), ProviderError>(())
            })
            .await?;
        self.list_tabs(ctx).await?;
        Ok(BrowserInfo { kind: self.kind, product, connection_epoch: self.epoch })
    }

    async fn list_tabs(&self, ctx: &OpContext) -> Result<Vec<TabInfo>, ProviderError> {
        let deadline = Instant::now() + ctx.timeout;
        let r = self
            .call(None, "Target.getTargets", json!({}), deadline)
            .await
            .map_err(|e| cdp_err(&e, "listing targets"))?;
        let mut st = self.st();
        let mut out = Vec::new();
        for info in r["targetInfos"].as_array().into_iter().flatten() {
            if let Some((h, new)) = register_page(&mut st, &self.alloc, info)
                && let Some(t) = st.tabs.get_mut(&h)
            {
                info["url"].as_str().unwrap_or_default().clone_into(&mut t.url);
                info["title"].as_str().unwrap_or_default().clone_into(&mut t.title);
                let info = Self::tab_info(t, false);
                // A tab the list meets before the browser's own news of it (the pump then finds it known and says
                // nothing): told here, while the records hold, as the pump would have.
                if new {
                    let _ = self.events_tx.send(ProviderEvent::TabCreated(info.clone()));
                }
                out.push(info);
            }
        }
        out.sort_by_key(|t| t.tab);
        Ok(out)
    }

    async fn create_tab(&self, ctx: &OpContext, req: CreateTab) -> Result<TabInfo, ProviderError> {
        let deadline = Instant::now() + ctx.timeout;
        let url = if req.url.is_empty() { "about:blank".to_owned() } else { req.url.clone() };
        // On a managed browser each tab gets its own window, so every tab stays visible, `background` or not (it
        // only keeps focus where it was): a hidden tab gets no frames, so its page never runs the rendering steps
        // (no `requestAnimationFrame`, no scroll or IntersectionObserver callbacks: a virtualised list stays at its
        // first rows, lazy content never loads) and the browser holds input to it for seconds. A remote (user's)
        // browser keeps its tab strip.
        let new_window = self.kind == ProviderKind::Managed;
        let mut create = json!({"url": url, "background": req.background, "newWindow": new_window});
        // An isolated session's tabs open in its own browser context; a session's viewport is held by its tabs.
        if let Some(context) = self.context_for(&ctx.session, deadline).await? {
            create["browserContextId"] = json!(context);
            // A context's tabs need a window of the context (Chromium opens none for it otherwise), each its own
            // and in front in it, so the tab draws frames.
            create["newWindow"] = json!(true);
            create["background"] = json!(false);
        }
        let viewport = self.config.session_tabs.get(&ctx.session).viewport;
        let r = self
            .call(None, "Target.createTarget", create, deadline)
            .await
            .map_err(|e| cdp_err(&e, "creating a tab"))?;
        let target = r["targetId"].as_str().unwrap_or_default().to_owned();
        let info = json!({"type": "page", "targetId": target, "url": url, "title": ""});
        let mut st = self.st();
        let (h, _) = register_page(&mut st, &self.alloc, &info)
            .ok_or_else(|| ProviderError::new(ProviderErrorKind::Internal, "the browser returned no target id"))?;
        if let Some(t) = st.tabs.get_mut(&h) {
            t.opened_here = true;
            t.viewport = viewport;
        }
        if let Some(t) = st.tabs.get_mut(&h)
            && url != "about:blank"
        {
            t.awaiting_url = Some(url.clone());
            // The target may already have been registered from its creation event, with the initial blank URL.
            if t.url.is_empty() || t.url == "about:blank" {
                t.url.clone_from(&url);
            }
        }
        Ok(Self::tab_info(&st.tabs[&h], !req.background))
    }

    async fn close_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        let deadline = Instant::now() + ctx.timeout;
        let target = {
            let mut st = self.st();
            let Some(t) = st.tabs.get_mut(&tab) else { return Ok(()) };
            t.closing = true;
            t.target_id.clone()
        };
        let mut rx = self.cdp.events();
        match self.call(None, "Target.closeTarget", json!({"targetId": target}), deadline).await {
            Ok(_) => {}
            Err(CdpError::Protocol { .. }) if !self.st().tabs.contains_key(&tab) => return Ok(()),
            // The browser no longer knows the target: an earlier close finished late, or the user closed it.
            Err(CdpError::Protocol { message, .. }) if message.contains("No target with given id") => {
                return Err(ProviderError::new(
                    ProviderErrorKind::TabGone,
                    format!("tab {tab} is already gone (the browser no longer knows it)"),
                ));
            }
            Err(e) => return Err(cdp_err(&e, "closing the tab")),
        }
        loop {
            if !self.st().tabs.contains_key(&tab) {
                return Ok(());
            }
            match tokio::time::timeout(remaining(deadline), rx.recv()).await {
                Err(_) => {
                    return Err(ProviderError::new(
                        ProviderErrorKind::OutcomeUnknown,
                        format!(
                            "tab {tab} was asked to close but the browser did not confirm it in time; list tabs to check"
                        ),
                    ));
                }
                Ok(Ok(ev))
                    if ev.method == "Target.targetDestroyed" && ev.params["targetId"].as_str() == Some(&target) =>
                {
                    // The pump removes the record; give it a moment to do so.
                    for _ in 0..50 {
                        if !self.st().tabs.contains_key(&tab) {
                            return Ok(());
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                    return Ok(());
                }
                Ok(Err(broadcast::error::RecvError::Closed)) => {
                    return Err(ProviderError::new(
                        ProviderErrorKind::ConnectionLost,
                        "the browser connection closed while closing the tab",
                    ));
                }
                Ok(_) => {}
            }
        }
    }

    async fn activate_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        let deadline = Instant::now() + ctx.timeout;
        let target = self.target_of(tab)?;
        self.call(None, "Target.activateTarget", json!({"targetId": target}), deadline)
            .await
            .map_err(|e| cdp_err(&e, "activating the tab"))?;
        Ok(())
    }

    async fn claim_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        {
            let mut st = self.st();
            let t = st.tabs.get_mut(&tab).ok_or_else(|| gone(tab))?;
            match &t.claimed_by {
                Some(s) if *s != ctx.session => {
                    return Err(ProviderError::new(
                        ProviderErrorKind::Refused,
                        format!("tab {tab} is claimed by session {s}; ask it to release the tab first"),
                    ));
                }
                _ => t.claimed_by = Some(ctx.session.clone()),
            }
        }
        // A claimed tab shows the claiming session's viewport while it is the session's.
        match self.config.session_tabs.get(&ctx.session).viewport {
            Some(v) => self.pin_viewport(tab, Some(v), Instant::now() + ctx.timeout).await,
            None => Ok(()),
        }
    }

    async fn release_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        let unpinned = {
            let mut st = self.st();
            let Some(t) = st.tabs.get_mut(&tab) else { return Ok(()) };
            if t.claimed_by.as_ref() != Some(&ctx.session) {
                return Ok(());
            }
            t.claimed_by = None;
            t.viewport.is_some()
        };
        if unpinned {
            // The user's tab gets its own size back, and the page session kept for the viewport goes.
            let deadline = Instant::now() + ctx.timeout;
            self.pin_viewport(tab, None, deadline).await?;
            self.detach_now(tab, deadline).await?;
        }
        Ok(())
    }

    async fn attach_debugger(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.ensure_attached(tab, Instant::now() + ctx.timeout)
            .await
            .map(|_| ())
            .map_err(|e| self.live_tab_error(tab, e))
    }

    async fn detach_debugger(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        // A tab holding its session's viewport keeps its page session: the override lives only as long as the
        // session, and the page would otherwise change size between operations. It goes with the tab or its release.
        if self.pinned_viewport(tab).is_some() {
            return Ok(());
        }
        self.detach_now(tab, Instant::now() + ctx.timeout).await
    }

    async fn observe(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &ObserveParams,
    ) -> Result<Observation, ProviderError> {
        let deadline = Instant::now() + ctx.timeout;
        let lock = self.tab_lock(tab);
        let _g = lock.lock().await;
        match crate::observe::observe(self, tab, params, deadline).await {
            // A read is safe to repeat: when the tab's session ended under it (a navigation's process swap) but the
            // tab is still open and did not crash, it is read once more on a new session.
            Err(e)
                if e.kind == ProviderErrorKind::TabGone
                    && self.st().tabs.get(&tab).is_some_and(|t| !t.crashed)
                    && Instant::now() < deadline =>
            {
                tracing::debug!(%tab, error = %e.message, "the tab's session ended during an observation; reading again");
                // Let the event pump record the detach first, so the new read attaches a new session.
                tokio::time::sleep(Duration::from_millis(50)).await;
                crate::observe::observe(self, tab, params, deadline).await.map_err(|e| self.live_tab_error(tab, e))
            }
            other => other.map_err(|e| self.live_tab_error(tab, e)),
        }
    }

    async fn describe_target(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &ActParams,
    ) -> Result<Option<browserd_core::provider::TargetDescription>, ProviderError> {
        crate::act::describe_target(self, ctx, tab, params).await.map_err(|e| self.live_tab_error(tab, e))
    }

    async fn act(&self, ctx: &OpContext, tab: TabHandle, params: &ActParams) -> Result<ActionResult, ProviderError> {
        if self.kind == ProviderKind::Remote {
            // A remote browser keeps its tabs in one window; a background tab draws no frames and its input is held,
            // so the tab acted on is brought to the front of its window first (as the managed browser's own windows
            // keep every tab visible).
            if let Ok(target) = self.target_of(tab) {
                let deadline = Instant::now() + ctx.timeout.min(Duration::from_secs(2));
                let _ = self.call(None, "Target.activateTarget", json!({"targetId": target}), deadline).await;
            }
        }
        crate::act::act(self, ctx, tab, params).await.map_err(|e| self.live_tab_error(tab, e))
    }

    async fn evaluate(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &EvaluateParams,
    ) -> Result<EvaluateResult, ProviderError> {
        crate::advanced::evaluate(self, ctx, tab, params).await.map_err(|e| self.live_tab_error(tab, e))
    }

    async fn console(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &ConsoleParams,
    ) -> Result<ConsoleResult, ProviderError> {
        crate::advanced::console(self, ctx, tab, params).await.map_err(|e| self.live_tab_error(tab, e))
    }

    async fn network(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &NetworkParams,
    ) -> Result<NetworkResult, ProviderError> {
        crate::advanced::network(self, ctx, tab, params).await.map_err(|e| self.live_tab_error(tab, e))
    }

    async fn raw_protocol(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &RawProtocolParams,
    ) -> Result<RawProtocolResult, ProviderError> {
        crate::advanced::raw_protocol(self, ctx, tab, params).await.map_err(|e| self.live_tab_error(tab, e))
    }
}

impl ChromiumProvider {
    /// Ends `tab`'s page session (and its frames' sessions), if it has one.
    pub(crate) async fn detach_now(&self, tab: TabHandle, deadline: Instant) -> Result<(), ProviderError> {
        let session = {
            let mut st = self.st();
            let Some(t) = st.tabs.get_mut(&tab) else { return Ok(()) };
            let Some(s) = t.session.clone() else { return Ok(()) };
            t.detaching = true;
            s
        };
        match self.call(None, "Target.detachFromTarget", json!({"sessionId": session.as_str()}), deadline).await {
            Ok(_) | Err(CdpError::Protocol { .. }) => {}
            Err(e) => return Err(cdp_err(&e, "detaching from the tab")),
        }
        let mut st = self.st();
        st.by_session.remove(&session);
        if let Some(t) = st.tabs.get_mut(&tab) {
            t.session = None;
            let kids: Vec<SessionId> = t.children.drain().map(|(k, _)| k).collect();
            for k in kids {
                st.by_session.remove(&k);
            }
        }
        Ok(())
    }
}
