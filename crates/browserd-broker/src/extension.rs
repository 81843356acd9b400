//! The extension browser: a [`Provider`] of kind `Extension` over a paired [`ExtensionLink`]. CDP goes through the
//! link's relay transport to a [`ChromiumProvider`]; tab creation, claim, release and close run for the calling agent
//! session so the extension's ownership records (`chrome.storage.session`) gate them; every write lease the runtime
//! issues is granted to the extension before the action, so its last-hop gate checks the same fencing token; the
//! capabilities that gate automatic turn cleanup come from the extension's `hello`.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use browserd_cdp::{Cdp, ConnectionOptions, Transport, TransportError};
use browserd_chromium::{ChromiumConfig, ChromiumProvider};
use browserd_core::provider::{
    BrowserInfo, Capability, CapabilityMatrix, CapabilityState, CreateTab, HandleAllocator, OpContext, Provider,
    ProviderError, ProviderErrorKind, ProviderEvent, ProviderKind, SessionKey, TabHandle, TabInfo, UnsupportedReason,
};
use browserd_native::RelayTransport;
use browserd_native::link::{
    ActionEvidence, ExtensionError, ExtensionLink, LinkEvent, ObservationEvidence, StopEvidence,
};
use browserd_protocol::hello::capability;
use browserd_protocol::{ActParams, ActionResult, Observation, ObserveParams};
use serde_json::{Value, json};
use tokio::sync::{broadcast, watch};

/// The session name the relay transport falls back to; every tab command names its real owner.
const RELAY_SESSION: &str = "browserd";

/// The link in use, replaced when the extension pairs again.
type CurrentLink = Arc<Mutex<ExtensionLink>>;

fn current(link: &CurrentLink) -> ExtensionLink {
    link.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
}

/// A CDP transport over whichever link is current: when the link closes (host killed, service worker restarted,
/// browser extension reloaded) every debugger session of it ends (`Target.detachedFromTarget`), commands are answered
/// with a connection-lost error, and the next pairing takes over — tabs, targets and ownership come from the
/// extension's records, so the provider's tab handles stay valid.
struct SwitchingTransport {
    link: CurrentLink,
    relay: RelayTransport,
    next: watch::Receiver<Option<ExtensionLink>>,
    ready: VecDeque<String>,
    down: Option<String>,
    /// The client's `Target.setDiscoverTargets`, carried over to each new link.
    discover: bool,
}

impl std::fmt::Debug for SwitchingTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwitchingTransport").field("down", &self.down).finish_non_exhaustive()
    }
}

#[async_trait]
impl Transport for SwitchingTransport {
    async fn send(&mut self, message: String) -> Result<(), TransportError> {
        if let Some(reason) = &self.down {
            let id = serde_json::from_str::<Value>(&message).ok().and_then(|v| v["id"].as_u64());
            if let Some(id) = id {
                let text = format!(
                    "CONNECTION_LOST: the extension link is down ({reason}); the extension reconnects by itself, retry \
                     shortly"
                );
                self.ready.push_back(json!({"id": id, "error": {"code": -32000, "message": text}}).to_string());
            }
            return Ok(());
        }
        if message.contains("\"Target.setDiscoverTargets\"")
            && let Ok(v) = serde_json::from_str::<Value>(&message)
            && v["method"] == "Target.setDiscoverTargets"
            && v.get("sessionId").is_none()
        {
            self.discover = v["params"]["discover"].as_bool().unwrap_or(false);
        }
        self.relay.send(message).await
    }

    fn gates_actions(&self) -> bool {
        true
    }

    async fn recv(&mut self) -> Result<String, TransportError> {
        loop {
            if let Some(m) = self.ready.pop_front() {
                return Ok(m);
            }
            if self.down.is_some() {
                // Cancel-safe: nothing is awaited after a new link is taken.
                if self.next.changed().await.is_err() {
                    let reason = self.down.clone().unwrap_or_default();
                    return Err(TransportError::Closed { reason });
                }
                let link = self.next.borrow_and_update().clone();
                if let Some(link) = link.filter(|l| l.closed_reason().is_none()) {
                    tracing::info!(instance = %link.info().instance, "the extension paired again; the relay moves to it");
                    self.relay = link.relay_transport(RELAY_SESSION);
                    link.set_target_discovery(self.discover);
                    link.set_evidence(current(&self.link).evidence());
                    *self.link.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = link;
                    self.down = None;
                }
                continue;
            }
            match self.relay.recv().await {
                Ok(m) => return Ok(m),
                Err(TransportError::Closed { reason }) => {
                    tracing::warn!(%reason, "the extension link closed; waiting for the extension to pair again");
                    let old = current(&self.link);
                    self.ready.extend(old.take_detached_messages("the extension link closed"));
                    self.down = Some(reason);
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// A provider over the user's browser through the extension.
pub struct ExtensionProvider {
    link: CurrentLink,
    inner: Arc<ChromiumProvider>,
    tabs: Mutex<HashMap<TabHandle, i64>>,
    /// The control epoch at each tab's last full observation: after a Stop (a newer epoch) old refs are void and an
    /// action needs a new observation first.
    observed: Mutex<HashMap<TabHandle, u64>>,
    /// The control epoch when this provider was made (tabs never observed count from here).
    base_epoch: u64,
    /// Serialises tab creation (the relay's one-shot "create for this session" state).
    create_lock: tokio::sync::Mutex<()>,
    events: broadcast::Sender<ProviderEvent>,
    forward: Vec<tokio::task::JoinHandle<()>>,
    /// The scheme policy sent to the extension's gate at every connect (`schemes.set`).
    gate_schemes: Mutex<serde_json::Value>,
    /// The site policy for the extension's last-hop gate, and the service-worker instance and sessions' generation it
    /// was last handed to.
    gate_policy: Mutex<GatePolicy>,
    /// The sessions' own lists (`browserd mcp --allowed-origins/--blocked-origins`), added to the policy handed over.
    gate_sessions: Mutex<Option<crate::policy::enforce::GateSessions>>,
}

/// The site policy for the extension's gate, and the (service-worker instance, sessions' generation) it was last
/// handed to.
type GatePolicy = (Option<Value>, Option<(String, u64)>);

impl std::fmt::Debug for ExtensionProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtensionProvider").field("extension", &self.link().info().extension_id).finish_non_exhaustive()
    }
}

impl Drop for ExtensionProvider {
    fn drop(&mut self) {
        for t in &self.forward {
            t.abort();
        }
    }
}

fn ext_err(e: &ExtensionError, what: &str) -> ProviderError {
    let kind = match e {
        ExtensionError::Refused { code, .. } => match code.as_str() {
            "TAB_GONE" => ProviderErrorKind::TabGone,
            "UNSUPPORTED" => ProviderErrorKind::Unsupported(UnsupportedReason::ByImplementation),
            "LEASE_REVOKED" => ProviderErrorKind::StaleFencing,
            "USER_STOPPED" => ProviderErrorKind::Cancelled,
            "DEBUGGER_BUSY" => ProviderErrorKind::DebuggerInUse,
            _ => ProviderErrorKind::Refused,
        },
        ExtensionError::Timeout { .. } => ProviderErrorKind::OutcomeUnknown,
        ExtensionError::Closed { .. } => ProviderErrorKind::ConnectionLost,
        _ => ProviderErrorKind::Internal,
    };
    ProviderError::new(kind, format!("{what}: {e}"))
}

impl ExtensionProvider {
    /// `session` resumed `tab` after Stop with a new write lease (`token`): the extension's gate gets the lease at
    /// once, which reopens it and lets its debugger attach to the tab again (it refuses to while the tab is
    /// stopped).
    pub async fn resume(&self, session: &SessionKey, tab: TabHandle, token: u64) -> Result<(), ProviderError> {
        let ctx = OpContext::new(session.clone(), STOP_TIMEOUT, "resume");
        let id = self.tab_id(&ctx, tab).await?;
        self.link().grant_lease(&session.0, id, token).await.map_err(|e| ext_err(&e, "resuming the tab"))?;
        Ok(())
    }

    /// Sets the scheme policy the extension's last-hop gate gets at every connect (`schemes.set`).
    pub fn set_gate_schemes(&self, policy: serde_json::Value) {
        *self.gate_schemes.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = policy;
    }

    /// A provider over `link` (connect it with [`Provider::connect`] before use). Handles come from `alloc`.
    #[must_use]
    pub fn new(link: ExtensionLink, alloc: HandleAllocator, config: ChromiumConfig) -> Arc<Self> {
        let (_, next) = watch::channel(None);
        Self::with_pairings(link, next, alloc, config)
    }

    /// Like [`ExtensionProvider::new`], moving to each open link `pairings` yields after the current one closes.
    #[must_use]
    pub fn with_pairings(
        link: ExtensionLink,
        pairings: watch::Receiver<Option<ExtensionLink>>,
        alloc: HandleAllocator,
        config: ChromiumConfig,
    ) -> Arc<Self> {
        let mut next = pairings;
        next.mark_unchanged();
        let current_link: CurrentLink = Arc::new(Mutex::new(link.clone()));
        let transport = SwitchingTransport {
            link: current_link.clone(),
            relay: link.relay_transport(RELAY_SESSION),
            next,
            ready: VecDeque::new(),
            down: None,
            discover: false,
        };
        let cdp = Cdp::spawn(transport, ConnectionOptions::default());
        let inner = ChromiumProvider::new(cdp, ProviderKind::Extension, alloc, config);
        let (events, _) = broadcast::channel(1024);
        let mut rx = inner.subscribe();
        let tx = events.clone();
        let provider_events = tokio::spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(ev) => {
                        let _ = tx.send(ev);
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let _ = tx.send(ProviderEvent::ResyncRequired);
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                }
            }
        });
        let tx = events.clone();
        let watched = current_link.clone();
        let link_events = tokio::spawn(async move {
            let mut lrx = current(&watched).events();
            let mut instance = current(&watched).info().instance.clone();
            loop {
                match lrx.recv().await {
                    Ok(LinkEvent::Stopped(report)) => {
                        let _ = tx.send(ProviderEvent::UserStopped { tab: None, control_epoch: report.control_epoch });
                    }
                    Ok(LinkEvent::Resynced { .. }) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        let _ = tx.send(ProviderEvent::ResyncRequired);
                    }
                    Ok(LinkEvent::Closed { .. }) | Err(broadcast::error::RecvError::Closed) => {
                        // Follow the next link the transport moves to (an open current link is a new one).
                        loop {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            let link = current(&watched);
                            if link.closed_reason().is_none() {
                                lrx = link.events();
                                if link.info().instance != instance {
                                    // A new service-worker instance holds no lease (its gate starts empty under a new
                                    // control epoch): void the runtime's write leases too, so resuming takes a new
                                    // lease (a higher fencing token) and a full observation. `UserStopped` is the
                                    // provider event that revokes every write lease; nothing is reported to agents.
                                    tracing::info!(old = %instance, new = %link.info().instance,
                                        "the extension's service worker restarted: write leases are void");
                                    instance = link.info().instance.clone();
                                    let _ = tx.send(ProviderEvent::UserStopped {
                                        tab: None,
                                        control_epoch: link.control_epoch(),
                                    });
                                }
                                break;
                            }
                        }
                    }
                    Ok(_) => {}
                }
            }
        });
        Arc::new(Self {
            base_epoch: link.control_epoch(),
            link: current_link,
            inner,
            tabs: Mutex::new(HashMap::new()),
            observed: Mutex::new(HashMap::new()),
            create_lock: tokio::sync::Mutex::new(()),
            events,
            forward: vec![provider_events, link_events],
            gate_schemes: Mutex::new(serde_json::json!({})),
            gate_policy: Mutex::new((None, None)),
            gate_sessions: Mutex::new(None),
        })
    }

    /// The site policy the extension's last-hop gate checks with (handed over before the next browser call).
    pub fn set_gate_policy(&self, policy: Value) {
        *self.gate_policy.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = (Some(policy), None);
    }

    /// The sessions' own lists the extension's gate gets with the site policy (and again whenever they change).
    pub fn set_gate_sessions(&self, sessions: crate::policy::enforce::GateSessions) {
        *self.gate_sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(sessions);
    }

    /// Hands the site policy, with the sessions' own lists, to the current service worker unless it has them (a new
    /// pairing or worker has not; a session's lists changed). Fails closed: an extension that does not take it gets
    /// no page work.
    async fn push_gate_policy(&self) -> Result<(), ProviderError> {
        let link = self.link();
        let instance = link.info().instance.clone();
        let sessions = self.gate_sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let (generation, lists) = sessions.map_or((0, Value::Object(serde_json::Map::new())), |f| f());
        let policy = {
            let held = self.gate_policy.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match &*held {
                (Some(_), Some((sent, g))) if *sent == instance && *g == generation => return Ok(()),
                (Some(policy), _) => {
                    let mut policy = policy.clone();
                    if let Some(map) = policy.as_object_mut() {
                        map.insert("sessions".to_owned(), lists);
                    }
                    policy
                }
                (None, _) => return Ok(()),
            }
        };
        link.call("policy.set", policy).await.map_err(|e| ext_err(&e, "handing the site policy to the extension"))?;
        self.gate_policy.lock().unwrap_or_else(std::sync::PoisonError::into_inner).1 = Some((instance, generation));
        Ok(())
    }

    /// The link this provider runs over now.
    #[must_use]
    pub fn link(&self) -> ExtensionLink {
        current(&self.link)
    }

    /// What a Stop now would report as the last evidence (the latest observation and action through the extension).
    #[must_use]
    pub fn last_evidence(&self) -> StopEvidence {
        self.link().evidence()
    }

    /// The underlying Chromium provider (screenshots).
    #[must_use]
    pub fn chromium(&self) -> &Arc<ChromiumProvider> {
        &self.inner
    }

    fn known(&self, tab: TabHandle) -> Option<i64> {
        self.tabs.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&tab).copied()
    }

    /// The extension's tab id of a provider handle, through the CDP target id the provider keeps for it.
    async fn tab_id(&self, _ctx: &OpContext, tab: TabHandle) -> Result<i64, ProviderError> {
        if let Some(id) = self.known(tab) {
            return Ok(id);
        }
        let target = self.inner.target_id(tab).ok_or_else(|| {
            ProviderError::new(
                ProviderErrorKind::TabGone,
                format!("tab {tab} is not (or no longer) in the browser; list tabs again"),
            )
        })?;
        let mut id = self.link().tab_of_target(&target);
        if id.is_none() {
            // Not seen through this link yet (a user's tab): the extension knows every tab's target.
            let tabs = self.link().list_tabs().await.map_err(|e| ext_err(&e, "listing the browser's tabs"))?;
            id = tabs.iter().find(|t| t.target_id.as_deref() == Some(target.as_str())).map(|t| t.tab_id);
        }
        let id = id.ok_or_else(|| {
            ProviderError::new(ProviderErrorKind::TabGone, format!("tab {tab} is no longer in the browser; list tabs"))
        })?;
        self.tabs.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(tab, id);
        Ok(id)
    }

    fn forget(&self, tab: TabHandle) {
        self.tabs.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&tab);
        self.observed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&tab);
    }
}

/// The capabilities the extension's `hello` decides, by protocol name.
fn hello_capabilities() -> [(Capability, &'static str); 4] {
    [
        (Capability::TurnCleanup, capability::TURN_CLEANUP),
        (Capability::TurnScopedMarks, capability::TURN_SCOPED_MARKS),
        (Capability::RetainedCleanup, capability::RETAINED_CLEANUP),
        (Capability::DebuggerLeaseRecovery, capability::DEBUGGER_LEASE_RECOVERY),
    ]
}

#[async_trait]
impl Provider for ExtensionProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Extension
    }

    fn capabilities(&self) -> CapabilityMatrix {
        let mut caps = self.inner.capabilities();
        let link = self.link();
        let announced = &link.info().capabilities;
        for (cap, name) in hello_capabilities() {
            let state = if announced.contains(name) {
                CapabilityState::Supported
            } else {
                CapabilityState::Unsupported {
                    reason: UnsupportedReason::ByVersion,
                    detail: format!(
                        "the paired extension does not announce {name}; update the browserd extension (automatic \
                         turn cleanup is refused until then)"
                    ),
                }
            };
            caps.0.insert(cap, state);
        }
        caps.0.insert(Capability::ClaimUserTabs, CapabilityState::Supported);
        caps.0.insert(Capability::TabGroups, CapabilityState::Supported);
        // Script evaluation and raw protocol commands would pass around the extension's last-hop gate (lease,
        // fencing token, Stop), so the relay does not offer them.
        for cap in [Capability::Evaluate, Capability::RawProtocol] {
            caps.0.insert(
                cap,
                CapabilityState::Unsupported {
                    reason: UnsupportedReason::ByImplementation,
                    detail: "unsupported over the extension relay: it would bypass the last-hop gate; use a managed \
                             or remote browser for the advanced tier"
                        .to_owned(),
                },
            );
        }
        if let Some(reason) = self.link().closed_reason() {
            for state in caps.0.values_mut() {
                *state = CapabilityState::Unsupported {
                    reason: UnsupportedReason::Offline,
                    detail: format!("the extension link is closed ({reason}); it reconnects by itself"),
                };
            }
        }
        caps
    }

    fn events(&self) -> broadcast::Receiver<ProviderEvent> {
        self.events.subscribe()
    }

    fn void_refs(&self, tab: TabHandle) {
        self.inner.void_refs(tab);
    }

    async fn connect(&self, ctx: &OpContext) -> Result<BrowserInfo, ProviderError> {
        if let Some(reason) = self.link().closed_reason() {
            return Err(ProviderError::new(
                ProviderErrorKind::ConnectionLost,
                format!("the extension link is closed ({reason}); wait until the extension pairs again"),
            ));
        }
        // The extension's last-hop scheme gate gets the broker's copy of the policy (its file roots and extras); an
        // extension too old to have the gate is still covered by the broker's own check.
        let schemes = self.gate_schemes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        if let Err(e) = self.link().call("schemes.set", schemes).await {
            tracing::warn!(error = %e, "the extension did not take the scheme policy; update the extension");
        }
        let info = self.inner.connect(ctx).await?;
        self.push_gate_policy().await?;
        Ok(info)
    }

    async fn list_tabs(&self, ctx: &OpContext) -> Result<Vec<TabInfo>, ProviderError> {
        self.inner.list_tabs(ctx).await
    }

    async fn create_tab(&self, ctx: &OpContext, req: CreateTab) -> Result<TabInfo, ProviderError> {
        let info = {
            let _serial = self.create_lock.lock().await;
            self.link().set_create_session(Some(&ctx.session.0));
            let r = self.inner.create_tab(ctx, req).await;
            self.link().set_create_session(None);
            r?
        };
        self.tab_id(ctx, info.tab).await?;
        Ok(info)
    }

    async fn close_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        // The relay closes through `tabs.remove` for the tab's owner session: the extension refuses anything but a
        // tab that session created.
        self.tab_id(ctx, tab).await?;
        self.inner.close_tab(ctx, tab).await?;
        self.forget(tab);
        Ok(())
    }

    async fn activate_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.tab_id(ctx, tab).await?;
        self.inner.activate_tab(ctx, tab).await
    }

    async fn claim_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        let id = self.tab_id(ctx, tab).await?;
        self.link().claim_tab(&ctx.session.0, id).await.map_err(|e| ext_err(&e, "claiming the tab"))?;
        self.inner.claim_tab(ctx, tab).await
    }

    async fn release_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        let id = self.tab_id(ctx, tab).await?;
        // Detach through the provider first so its records follow; the extension detaches too if still attached.
        let _ = self.inner.detach_debugger(ctx, tab).await;
        if self.link().owner_session(id).is_some() {
            self.link().release_tab(&ctx.session.0, id).await.map_err(|e| ext_err(&e, "releasing the tab"))?;
        }
        self.inner.release_tab(ctx, tab).await
    }

    async fn attach_debugger(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.tab_id(ctx, tab).await?;
        self.inner.attach_debugger(ctx, tab).await
    }

    async fn detach_debugger(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.inner.detach_debugger(ctx, tab).await
    }

    async fn observe(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &ObserveParams,
    ) -> Result<Observation, ProviderError> {
        self.tab_id(ctx, tab).await?;
        self.push_gate_policy().await?;
        let epoch = self.link().control_epoch();
        let observation = self.inner.observe(ctx, tab, params).await?;
        if params.since.is_none() && params.within.is_none() {
            self.observed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(tab, epoch);
        }
        self.link().note_observation(ObservationEvidence {
            session: ctx.session.0.clone(),
            tab: tab.0,
            revision: observation.revision,
            cursor: observation.cursor.clone(),
            url: observation.url.clone(),
            title: observation.title.clone(),
        });
        Ok(observation)
    }

    /// Read only, like an observation: the extension's gate lets reads through without a write lease.
    async fn describe_target(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &ActParams,
    ) -> Result<Option<browserd_core::provider::TargetDescription>, ProviderError> {
        self.tab_id(ctx, tab).await?;
        self.push_gate_policy().await?;
        self.inner.describe_target(ctx, tab, params).await
    }

    async fn act(&self, ctx: &OpContext, tab: TabHandle, params: &ActParams) -> Result<ActionResult, ProviderError> {
        let id = self.tab_id(ctx, tab).await?;
        self.push_gate_policy().await?;
        let Some(token) = ctx.fencing else {
            return Err(ProviderError::new(
                ProviderErrorKind::StaleFencing,
                "an action needs a write lease; acquire one and observe again",
            ));
        };
        let epoch = self.link().control_epoch();
        let seen = self
            .observed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&tab)
            .copied()
            .unwrap_or(self.base_epoch);
        if seen < epoch {
            return Err(ProviderError::new(
                ProviderErrorKind::StaleFencing,
                format!(
                    "the extension's control epoch moved on after the last observation of tab {tab} (Stop was \
                     pressed in the browser, or its service worker restarted): its refs are void and nothing was \
                     dispatched; observe the tab again (a full observation), then act"
                ),
            ));
        }
        let link = self.link();
        if link.fence(id).is_none() {
            // A new link (re-pairing) may not know the lease the extension still holds.
            link.sync_relay().await.map_err(|e| ext_err(&e, "reading the extension's leases"))?;
        }
        let current = link.fence(id);
        if current.is_none_or(|f| f.token != token.0 || f.epoch != epoch) {
            // The extension's last-hop gate checks this token (and the control epoch) before any input.
            self.link()
                .grant_lease(&ctx.session.0, id, token.0)
                .await
                .map_err(|e| ext_err(&e, "granting the write lease to the extension"))?;
        }
        let action = serde_json::to_value(params.action).ok().and_then(|v| v.as_str().map(str::to_owned));
        let mut evidence = ActionEvidence {
            session: ctx.session.0.clone(),
            tab: tab.0,
            trace_id: ctx.trace_id.clone(),
            action: action.unwrap_or_default(),
            state: "inFlight".into(),
            code: None,
        };
        link.note_action(evidence.clone());
        let result = self.inner.act(ctx, tab, params).await;
        match &result {
            Ok(r) => {
                evidence.state = serde_json::to_value(r.outcome)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                evidence.code.clone_from(&r.code);
            }
            Err(e) => {
                evidence.state = "error".into();
                evidence.code = Some(format!("{:?}", e.kind));
            }
        }
        // Only if no newer action took its place meanwhile.
        if self.link().evidence().last_action.is_some_and(|a| a.trace_id == evidence.trace_id) {
            self.link().note_action(evidence);
        }
        result
    }
}

/// How long the broker waits for `link.stop` when `browserd stop` runs.
pub(crate) const STOP_TIMEOUT: Duration = Duration::from_secs(5);
