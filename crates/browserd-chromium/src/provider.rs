//! `ChromiumProvider`: tabs over the Target domain, flat sessions per tab (recursive auto-attach for OOPIFs), the
//! event pump that keeps the records current, and the `Provider` implementation.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use browserd_cdp::{AutoAttach, Cdp, CdpError, CdpEvent, LaunchError, LaunchOptions, ManagedBrowser, SessionId};
use browserd_core::provider::{
    BrowserInfo, Capability, CapabilityMatrix, CapabilityState, CreateTab, DetachCause, HandleAllocator, OpContext,
    Provider, ProviderError, ProviderErrorKind, ProviderEvent, ProviderKind, TabHandle, TabInfo, UnsupportedReason,
};
use browserd_protocol::tools::{
    ConsoleParams, ConsoleResult, EvaluateParams, EvaluateResult, NetworkParams, NetworkResult, RawProtocolParams,
    RawProtocolResult,
};
use browserd_protocol::{
    ActParams, ActionResult, DialogInfo, DownloadInfo, LoadState, Observation, ObserveParams, Screenshot,
    ScreenshotOptions,
};
use serde_json::{Value, json};
use tokio::sync::{Notify, broadcast};

use crate::state::{LogEvent, State, Tab};

static EPOCHS: AtomicU64 = AtomicU64::new(0);

/// Configuration of a Chromium provider.
#[derive(Debug, Clone, Default)]
pub struct ChromiumConfig {
    /// Directories whose files may be uploaded. Empty: uploads are refused.
    pub upload_roots: Vec<PathBuf>,
    /// Where downloads land. `None`: downloads are denied.
    pub download_dir: Option<PathBuf>,
}

/// A per-request id record for de-duplication.
#[derive(Debug, Clone)]
pub(crate) enum Dedup {
    Running,
    Done(u64, Box<ActionResult>),
}

/// The Chromium provider (managed pipe or remote endpoint).
pub struct ChromiumProvider {
    pub(crate) cdp: Cdp,
    kind: ProviderKind,
    alloc: HandleAllocator,
    pub(crate) epoch: u64,
    pub(crate) state: Arc<Mutex<State>>,
    events_tx: broadcast::Sender<ProviderEvent>,
    pub(crate) config: ChromiumConfig,
    product: Mutex<String>,
    pub(crate) dialog_notify: Arc<Notify>,
    pub(crate) dedup: Mutex<HashMap<String, Dedup>>,
    pub(crate) tab_locks: Mutex<HashMap<TabHandle, Arc<tokio::sync::Mutex<()>>>>,
    pump: tokio::task::JoinHandle<()>,
    discovered: tokio::sync::OnceCell<()>,
    /// Advanced-tier records (console/network rings); empty until the first advanced call.
    pub(crate) advanced: crate::advanced::Advanced,
    /// How observations got their accessibility trees.
    pub(crate) ax_stats: crate::ax::AxCounters,
}

impl std::fmt::Debug for ChromiumProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChromiumProvider").field("kind", &self.kind).field("epoch", &self.epoch).finish_non_exhaustive()
    }
}

impl Drop for ChromiumProvider {
    fn drop(&mut self) {
        self.pump.abort();
    }
}

pub(crate) fn cdp_err(e: &CdpError, what: &str) -> ProviderError {
    if let CdpError::Protocol { message, .. } = e {
        // The extension relay's answer when chrome.debugger found another debugger on the tab (the connection puts
        // the method first: `Target.attachToTarget: DEBUGGER_BUSY: …`).
        if let Some(at) = message.find("DEBUGGER_BUSY: ") {
            let why = &message[at + "DEBUGGER_BUSY: ".len()..];
            return ProviderError::new(
                ProviderErrorKind::DebuggerInUse,
                format!(
                    "{what}: {why}. Close the other debugger (developer tools or another extension) and retry, or use \
                     another tab"
                ),
            );
        }
    }
    let kind = match e {
        CdpError::Protocol { .. } => ProviderErrorKind::Refused,
        CdpError::Timeout { .. } => ProviderErrorKind::Timeout,
        CdpError::Cancelled => ProviderErrorKind::Cancelled,
        CdpError::TargetClosed { .. } => ProviderErrorKind::TabGone,
        CdpError::ConnectionClosed { .. } | CdpError::Transport(_) => ProviderErrorKind::ConnectionLost,
        _ => ProviderErrorKind::Internal,
    };
    ProviderError::new(kind, format!("{what}: {e}"))
}

pub(crate) fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1))
}

impl ChromiumProvider {
    /// A provider over an existing connection. Call [`Provider::connect`] before use.
    pub fn new(cdp: Cdp, kind: ProviderKind, alloc: HandleAllocator, config: ChromiumConfig) -> Arc<Self> {
        let state = Arc::new(Mutex::new(State::default()));
        let (events_tx, _) = broadcast::channel(1024);
        let dialog_notify = Arc::new(Notify::new());
        let pump =
            tokio::spawn(pump(cdp.clone(), state.clone(), events_tx.clone(), dialog_notify.clone(), alloc.clone()));
        Arc::new(Self {
            cdp,
            kind,
            alloc,
            epoch: EPOCHS.fetch_add(1, Ordering::Relaxed) + 1,
            state,
            events_tx,
            config,
            product: Mutex::new(String::new()),
            dialog_notify,
            dedup: Mutex::new(HashMap::new()),
            tab_locks: Mutex::new(HashMap::new()),
            pump,
            discovered: tokio::sync::OnceCell::new(),
            advanced: crate::advanced::Advanced::default(),
            ax_stats: crate::ax::AxCounters::default(),
        })
    }

    /// Launches a managed Chromium and connects a provider to it (already connected).
    pub async fn launch_managed(
        opts: LaunchOptions,
        alloc: HandleAllocator,
        config: ChromiumConfig,
    ) -> Result<(Arc<Self>, ManagedBrowser), LaunchError> {
        let browser = ManagedBrowser::launch(opts).await?;
        let provider = Self::new(browser.cdp().clone(), ProviderKind::Managed, alloc, config);
        let ctx =
            OpContext::new(browserd_core::provider::SessionKey("launch".into()), Duration::from_secs(10), "launch");
        if let Err(e) = provider.connect(&ctx).await {
            return Err(LaunchError::Handshake {
                path: browser.executable().to_path_buf(),
                source: CdpError::InvalidResponse { detail: e.to_string() },
            });
        }
        Ok((provider, browser))
    }

    /// Connects to a remote DevTools endpoint (`ws://…` or `http://host:port`).
    pub async fn connect_remote(
        url: &str,
        alloc: HandleAllocator,
        config: ChromiumConfig,
    ) -> Result<Arc<Self>, ProviderError> {
        let cdp = browserd_cdp::connect_ws(url).await.map_err(|e| cdp_err(&e, "connecting to the remote endpoint"))?;
        let provider = Self::new(cdp, ProviderKind::Remote, alloc, config);
        let ctx =
            OpContext::new(browserd_core::provider::SessionKey("connect".into()), Duration::from_secs(10), "connect");
        provider.connect(&ctx).await?;
        Ok(provider)
    }

    /// How observations on this connection got their accessibility trees so far (frame reads by kind): for
    /// benchmarks and diagnostics.
    pub fn ax_stats(&self) -> crate::ax::AxStats {
        self.ax_stats.snapshot()
    }

    /// Drops every cached accessibility tree, so that each tab's next observation reads its trees whole (the
    /// reference an incremental refresh is checked against; also a diagnostic when a page looks wrong).
    pub fn clear_ax_cache(&self) {
        for t in self.st().tabs.values_mut() {
            t.ax_cache = crate::ax::AxCache::default();
        }
    }

    pub(crate) fn st(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// One CDP call bounded by `deadline`.
    pub(crate) async fn call(
        &self,
        session: Option<&SessionId>,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Value, CdpError> {
        self.cdp.call(session, method, params, remaining(deadline)).await
    }

    fn tab_info(t: &Tab, active: bool) -> TabInfo {
        TabInfo { tab: t.handle, url: t.url.clone(), title: t.title.clone(), group: None, opener: t.opener, active }
    }

    pub(crate) fn target_of(&self, tab: TabHandle) -> Result<String, ProviderError> {
        self.st().tabs.get(&tab).map(|t| t.target_id.clone()).ok_or_else(|| gone(tab))
    }

    /// The tab's page session, attaching first when needed.
    pub(crate) async fn ensure_attached(&self, tab: TabHandle, deadline: Instant) -> Result<SessionId, ProviderError> {
        let target = {
            let st = self.st();
            let t = st.tabs.get(&tab).ok_or_else(|| gone(tab))?;
            if let Some(s) = &t.session {
                return Ok(s.clone());
            }
            t.target_id.clone()
        };
        // browserd holds no attachment of this tab now, so an attached target means another client holds it
        // (developer tools, another extension, a second protocol client): refuse before attaching. Over the extension
        // relay the extension makes this check itself (`DEBUGGER_BUSY`).
        if self.kind != ProviderKind::Extension {
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
        let (a, b, c, _) = tokio::join!(
            self.call(s, "Page.enable", json!({}), deadline),
            self.call(s, "Runtime.enable", json!({}), deadline),
            crate::act::install_tracker(&self.cdp, session, remaining(deadline)),
            self.call(s, "Inspector.enable", json!({}), deadline),
        );
        for r in [a.map(drop), b.map(drop), c] {
            r.map_err(|e| cdp_err(&e, "preparing the tab session"))?;
        }
        if self.advanced.collecting(tab) {
            crate::advanced::on_session_setup(self, session, tab, deadline).await?;
        }
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
            if !hosted_elsewhere {
                t.upsert_frame(
                    id,
                    parent,
                    f["loaderId"].as_str().unwrap_or_default(),
                    &format!("{}{}", f["url"].as_str().unwrap_or_default(), f["urlFragment"].as_str().unwrap_or("")),
                    session,
                    oop,
                );
            }
            if let Some(kids) = node["childFrames"].as_array() {
                stack.extend(kids.iter().map(|k| (k, false)));
            }
        }
        Ok(())
    }

    /// The browser's CDP target id of `tab`, while the provider knows the tab (a transport that addresses tabs by its
    /// own ids, like the extension relay, maps it).
    #[must_use]
    pub fn target_id(&self, tab: TabHandle) -> Option<String> {
        self.st().tabs.get(&tab).map(|t| t.target_id.clone())
    }

    /// Subscribes to provider events.
    pub fn subscribe(&self) -> broadcast::Receiver<ProviderEvent> {
        self.events_tx.subscribe()
    }

    /// Captures a screenshot of a tab: viewport, element or full page, downscaled to `max_size`, with its geometry;
    /// its `imageId` can then be the `at` point of click, dblclick, hover and drag.
    pub async fn screenshot(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        opts: &ScreenshotOptions,
    ) -> Result<Screenshot, ProviderError> {
        let deadline = Instant::now() + ctx.timeout;
        crate::screenshot::capture(self, tab, opts, deadline).await
    }

    /// The serialisation lock of a tab's page operations.
    /// Locks of closed tabs are dropped when no operation holds them, so the map stays as large as the open tabs.
    pub(crate) fn tab_lock(&self, tab: TabHandle) -> Arc<tokio::sync::Mutex<()>> {
        let open: std::collections::HashSet<TabHandle> = self.st().tabs.keys().copied().collect();
        let mut locks = self.tab_locks.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        locks.retain(|t, lock| *t == tab || open.contains(t) || Arc::strong_count(lock) > 1);
        locks.entry(tab).or_default().clone()
    }
}

/// Another debugging client holds `tab`; nothing was sent to it.
pub(crate) fn debugger_in_use(tab: TabHandle, why: &str) -> ProviderError {
    ProviderError::new(
        ProviderErrorKind::DebuggerInUse,
        format!(
            "tab {tab}: {why} (developer tools, another extension or another protocol client); browserd did not \
             attach and sent nothing. Close the other debugger and retry, or use another tab"
        ),
    )
}

pub(crate) fn gone(tab: TabHandle) -> ProviderError {
    ProviderError::new(
        ProviderErrorKind::TabGone,
        format!("tab {tab} does not exist (closed?); list tabs and pick another"),
    )
}

/// Registers a page target; returns its handle and whether it is new.
fn register_page(st: &mut State, alloc: &HandleAllocator, info: &Value) -> Option<(TabHandle, bool)> {
    if info["type"].as_str() != Some("page") {
        return None;
    }
    let target = info["targetId"].as_str()?.to_owned();
    if let Some(h) = st.by_target.get(&target) {
        return Some((*h, false));
    }
    let opener = info["openerId"].as_str().and_then(|o| st.by_target.get(o).copied());
    let h = alloc.tab();
    let tab = Tab::new(
        h,
        target.clone(),
        info["url"].as_str().unwrap_or_default().to_owned(),
        info["title"].as_str().unwrap_or_default().to_owned(),
        opener,
        st.revisions.clone(),
    );
    st.tabs.insert(h, tab);
    st.by_target.insert(target, h);
    if let Some(o) = opener {
        st.log(o, LogEvent::Popup(h));
    }
    Some((h, true))
}

/// Keeps the records current from CDP events.
async fn pump(
    cdp: Cdp,
    state: Arc<Mutex<State>>,
    tx: broadcast::Sender<ProviderEvent>,
    dialog_notify: Arc<Notify>,
    alloc: HandleAllocator,
) {
    let mut rx = cdp.events();
    loop {
        let ev = match rx.recv().await {
            Ok(ev) => ev,
            Err(broadcast::error::RecvError::Lagged(_)) => {
                let _ = tx.send(ProviderEvent::ResyncRequired);
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => {
                let detail = cdp.close_reason().unwrap_or_else(|| "the browser connection closed".into());
                let _ = tx.send(ProviderEvent::ConnectionLost { detail });
                return;
            }
        };
        let out = {
            let mut st = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            handle_event(&mut st, &ev, &alloc)
        };
        for e in out {
            if let Pumped::Provider(pe) = &e {
                let _ = tx.send(pe.clone());
            }
            if let Pumped::DialogOpened = e {
                dialog_notify.notify_waiters();
            }
            if let Pumped::SetupChild { session, tab } = e {
                let cdp = cdp.clone();
                let state = state.clone();
                tokio::spawn(async move { setup_child(cdp, state, session, tab).await });
            }
        }
    }
}

enum Pumped {
    Provider(ProviderEvent),
    DialogOpened,
    SetupChild { session: SessionId, tab: TabHandle },
}

fn handle_event(st: &mut State, ev: &CdpEvent, alloc: &HandleAllocator) -> Vec<Pumped> {
    let p = &ev.params;
    let mut out = Vec::new();
    let session_tab = ev.session.as_ref().and_then(|s| st.by_session.get(s).copied());
    match ev.method.as_str() {
        "Target.targetCreated" => {
            if let Some((h, true)) = register_page(st, alloc, &p["targetInfo"]) {
                let t = &st.tabs[&h];
                out.push(Pumped::Provider(ProviderEvent::TabCreated(ChromiumProvider::tab_info(t, false))));
            }
        }
        "Target.targetInfoChanged" => {
            let info = &p["targetInfo"];
            if let Some(h) = info["targetId"].as_str().and_then(|id| st.by_target.get(id).copied())
                && let Some(t) = st.tabs.get_mut(&h)
            {
                let mut url = info["url"].as_str().unwrap_or_default();
                // A new target reports an empty URL (or the initial about:blank) before its first document commits;
                // that must not replace the URL browserd created it with or the one the page already reported.
                if url.is_empty() || (url == "about:blank" && t.awaiting_url.is_some()) {
                    url = t.url.as_str();
                }
                let url = url.to_owned();
                let title = info["title"].as_str().unwrap_or_default();
                if t.url != url || t.title != title {
                    url.clone_into(&mut t.url);
                    title.clone_into(&mut t.title);
                    out.push(Pumped::Provider(ProviderEvent::TabUpdated(ChromiumProvider::tab_info(t, false))));
                }
            }
        }
        "Target.targetDestroyed" | "Target.targetCrashed" => {
            if let Some(h) = p["targetId"].as_str().and_then(|id| st.by_target.remove(id))
                && let Some(t) = st.tabs.remove(&h)
            {
                {
                    if let Some(s) = &t.session {
                        st.by_session.remove(s);
                    }
                    for s in t.children.keys() {
                        st.by_session.remove(s);
                    }
                    if let Some(o) = t.opener {
                        st.log(o, LogEvent::TabClosed(h));
                    }
                    st.log(h, LogEvent::TabClosed(h));
                    out.push(Pumped::Provider(ProviderEvent::TabClosed { tab: h, by_user: !t.closing }));
                }
            }
        }
        "Target.attachedToTarget" => {
            // Only OOPIF children of a page session arrive here (the filter excludes the rest).
            if let Some(tab) = session_tab
                && p["targetInfo"]["type"].as_str() == Some("iframe")
            {
                let child = SessionId(p["sessionId"].as_str().unwrap_or_default().to_owned());
                let frame_id = p["targetInfo"]["targetId"].as_str().unwrap_or_default().to_owned();
                let url = p["targetInfo"]["url"].as_str().unwrap_or_default().to_owned();
                st.by_session.insert(child.clone(), tab);
                if let Some(t) = st.tabs.get_mut(&tab) {
                    t.children.insert(child.clone(), frame_id.clone());
                    let parent = t.frames.get(&frame_id).and_then(|f| f.parent.clone());
                    t.upsert_frame(&frame_id, parent, "", &url, &child, true);
                    // A frame that moved into its own process holds a new document whose loader id is not known yet
                    // (the child's frame tree tells it): a new epoch now, and the loader id learned later is adopted
                    // without another one, so refs observed in between stay valid.
                    t.new_document_of_unknown_loader(&frame_id);
                }
                out.push(Pumped::SetupChild { session: child, tab });
            }
        }
        "Target.detachedFromTarget" => {
            if let Some(s) = p["sessionId"].as_str().map(|s| SessionId(s.to_owned()))
                && let Some(h) = st.by_session.remove(&s)
                && let Some(t) = st.tabs.get_mut(&h)
            {
                if t.session.as_ref() == Some(&s) {
                    t.session = None;
                    let children: Vec<SessionId> = t.children.drain().map(|(k, _)| k).collect();
                    let asked = std::mem::take(&mut t.detaching);
                    let reason = t.detach_reason.take();
                    let closing = t.closing;
                    for c in children {
                        st.by_session.remove(&c);
                    }
                    if !asked && !closing {
                        let cause = match reason.as_deref() {
                            Some("replaced_with_devtools") => DetachCause::ReplacedByOtherClient,
                            Some(r) if r.contains("canceled_by_user") => DetachCause::UserCancelled,
                            _ => DetachCause::TargetClosed,
                        };
                        out.push(Pumped::Provider(ProviderEvent::DebuggerDetached { tab: h, cause }));
                    }
                } else if let Some(frame) = t.children.remove(&s) {
                    t.remove_frame(&frame);
                }
            }
        }
        "Inspector.detached" => {
            if let Some(tab) = session_tab
                && let Some(t) = st.tabs.get_mut(&tab)
                && t.session.as_ref() == ev.session.as_ref()
            {
                t.detach_reason = p["reason"].as_str().map(str::to_owned);
            }
        }
        "Page.frameNavigated" => {
            if let (Some(tab), Some(session)) = (session_tab, ev.session.as_ref()) {
                let f = &p["frame"];
                let id = f["id"].as_str().unwrap_or_default().to_owned();
                let url =
                    format!("{}{}", f["url"].as_str().unwrap_or_default(), f["urlFragment"].as_str().unwrap_or(""));
                let mut main = false;
                if let Some(t) = st.tabs.get_mut(&tab) {
                    let oop = t.children.get(session) == Some(&id);
                    let hosted_elsewhere = t.frames.get(&id).is_some_and(|fr| fr.oop && fr.session != *session);
                    if !hosted_elsewhere {
                        t.upsert_frame(
                            &id,
                            f["parentId"].as_str().map(str::to_owned),
                            f["loaderId"].as_str().unwrap_or_default(),
                            &url,
                            session,
                            oop,
                        );
                    }
                    main = id == t.target_id;
                    if main {
                        t.dialog = None;
                    }
                }
                if main {
                    st.log(tab, LogEvent::Navigated(url));
                    if p["type"].as_str() == Some("BackForwardCacheRestore") {
                        // Restored from the back/forward cache: no load event follows.
                        st.log(tab, LogEvent::Loaded);
                    }
                }
            }
        }
        "Page.navigatedWithinDocument" => {
            if let Some(tab) = session_tab
                && let Some(t) = st.tabs.get_mut(&tab)
            {
                let id = p["frameId"].as_str().unwrap_or_default();
                let url = p["url"].as_str().unwrap_or_default().to_owned();
                if let Some(f) = t.frames.get_mut(id) {
                    f.url.clone_from(&url);
                }
                if id == t.target_id {
                    t.url.clone_from(&url);
                    st.log(tab, LogEvent::SameDocument(url));
                }
            }
        }
        "Page.frameDetached" => {
            if let Some(tab) = session_tab
                && p["reason"].as_str() != Some("swap")
                && let Some(t) = st.tabs.get_mut(&tab)
            {
                let id = p["frameId"].as_str().unwrap_or_default().to_owned();
                if !t.frames.get(&id).is_some_and(|f| f.oop && Some(&f.session) != ev.session.as_ref()) {
                    t.remove_frame(&id);
                }
            }
        }
        "Page.frameStartedLoading" => {
            if let Some(tab) = session_tab
                && let Some(t) = st.tabs.get_mut(&tab)
                && p["frameId"].as_str() == Some(t.target_id.as_str())
            {
                t.load_state = LoadState::Loading;
            }
        }
        "Page.domContentEventFired" => {
            if let Some(tab) = session_tab
                && let Some(t) = st.tabs.get_mut(&tab)
                && t.session.as_ref() == ev.session.as_ref()
                && t.load_state == LoadState::Loading
            {
                t.load_state = LoadState::Interactive;
            }
        }
        "Page.loadEventFired" => {
            if let Some(tab) = session_tab
                && let Some(t) = st.tabs.get_mut(&tab)
                && t.session.as_ref() == ev.session.as_ref()
            {
                t.load_state = LoadState::Complete;
                st.log(tab, LogEvent::Loaded);
            }
        }
        "Page.javascriptDialogOpening" => {
            if let Some(tab) = session_tab {
                let info = DialogInfo {
                    kind: p["type"].as_str().unwrap_or("alert").to_owned(),
                    message: p["message"].as_str().unwrap_or_default().to_owned(),
                    default_prompt: p["defaultPrompt"].as_str().filter(|s| !s.is_empty()).map(str::to_owned),
                };
                if let Some(t) = st.tabs.get_mut(&tab) {
                    t.dialog = Some(info.clone());
                }
                st.log(tab, LogEvent::Dialog(info));
                out.push(Pumped::DialogOpened);
            }
        }
        "Page.javascriptDialogClosed" => {
            if let Some(tab) = session_tab {
                if let Some(t) = st.tabs.get_mut(&tab) {
                    t.dialog = None;
                }
                st.log(tab, LogEvent::DialogClosed);
                out.push(Pumped::DialogOpened);
            }
        }
        "Runtime.consoleAPICalled" => {
            if let Some(tab) = session_tab
                && matches!(p["type"].as_str(), Some("error" | "assert"))
            {
                let text: Vec<String> = p["args"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|v| {
                                v["value"]
                                    .as_str()
                                    .map(str::to_owned)
                                    .or_else(|| v["description"].as_str().map(str::to_owned))
                                    .unwrap_or_else(|| v["value"].to_string())
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                st.log(tab, LogEvent::Console(truncate(&text.join(" "), 200)));
            }
        }
        "Runtime.exceptionThrown" => {
            if let Some(tab) = session_tab {
                let d = &p["exceptionDetails"];
                let text = d["exception"]["description"].as_str().or_else(|| d["text"].as_str()).unwrap_or("exception");
                st.log(tab, LogEvent::Console(truncate(text.lines().next().unwrap_or(text), 200)));
            }
        }
        "Browser.downloadWillBegin" => {
            let frame = p["frameId"].as_str().unwrap_or_default();
            if let Some(tab) = st.tab_of_frame(frame) {
                let guid = p["guid"].as_str().unwrap_or_default().to_owned();
                let name = p["suggestedFilename"].as_str().unwrap_or_default().to_owned();
                st.downloads.insert(guid.clone(), (tab, name.clone()));
                let info = DownloadInfo { file_name: name, state: "inProgress".into(), path: None };
                st.log(tab, LogEvent::Download { guid, info });
            }
        }
        "Browser.downloadProgress" => {
            let guid = p["guid"].as_str().unwrap_or_default().to_owned();
            let state = p["state"].as_str().unwrap_or_default().to_owned();
            if state != "inProgress"
                && let Some((tab, name)) = st.downloads.get(&guid).cloned()
            {
                let path = p["filePath"].as_str().map(str::to_owned);
                st.log(tab, LogEvent::Download { guid, info: DownloadInfo { file_name: name, state, path } });
            }
        }
        _ => {}
    }
    out
}

async fn setup_child(cdp: Cdp, state: Arc<Mutex<State>>, session: SessionId, tab: TabHandle) {
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

pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}

fn unsupported(detail: &str) -> CapabilityState {
    CapabilityState::Unsupported { reason: UnsupportedReason::ByImplementation, detail: detail.to_owned() }
}

#[async_trait]
impl Provider for ChromiumProvider {
    fn kind(&self) -> ProviderKind {
        self.kind
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
            if self.config.download_dir.is_some() {
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
                let dl = match (&self.config.download_dir, self.kind) {
                    (Some(d), _) => Some(json!({"behavior": "allowAndName", "downloadPath": d, "eventsEnabled": true})),
                    (None, ProviderKind::Managed) => Some(json!({"behavior": "deny", "eventsEnabled": true})),
                    (None, _) => None,
                };
                if let Some(dl) = dl {
                    self.call(None, "Browser.setDownloadBehavior", dl, deadline)
                        .await
                        .map_err(|e| cdp_err(&e, "configuring downloads"))?;
                }
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
            if let Some((h, _)) = register_page(&mut st, &self.alloc, info)
                && let Some(t) = st.tabs.get_mut(&h)
            {
                info["url"].as_str().unwrap_or_default().clone_into(&mut t.url);
                info["title"].as_str().unwrap_or_default().clone_into(&mut t.title);
                out.push(Self::tab_info(t, false));
            }
        }
        out.sort_by_key(|t| t.tab);
        Ok(out)
    }

    async fn create_tab(&self, ctx: &OpContext, req: CreateTab) -> Result<TabInfo, ProviderError> {
        let deadline = Instant::now() + ctx.timeout;
        let url = if req.url.is_empty() { "about:blank".to_owned() } else { req.url.clone() };
        // On a managed browser each tab gets its own window, so every tab stays visible: a hidden tab gets no
        // frames and the browser holds input to it for seconds. A remote (user's) browser keeps its tab strip.
        let new_window = self.kind == ProviderKind::Managed && !req.background;
        let r = self
            .call(
                None,
                "Target.createTarget",
                json!({"url": url, "background": req.background, "newWindow": new_window}),
                deadline,
            )
            .await
            .map_err(|e| cdp_err(&e, "creating a tab"))?;
        let target = r["targetId"].as_str().unwrap_or_default().to_owned();
        let info = json!({"type": "page", "targetId": target, "url": url, "title": ""});
        let mut st = self.st();
        let (h, _) = register_page(&mut st, &self.alloc, &info)
            .ok_or_else(|| ProviderError::new(ProviderErrorKind::Internal, "the browser returned no target id"))?;
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
        let mut st = self.st();
        let t = st.tabs.get_mut(&tab).ok_or_else(|| gone(tab))?;
        match &t.claimed_by {
            Some(s) if *s != ctx.session => Err(ProviderError::new(
                ProviderErrorKind::Refused,
                format!("tab {tab} is claimed by session {s}; ask it to release the tab first"),
            )),
            _ => {
                t.claimed_by = Some(ctx.session.clone());
                Ok(())
            }
        }
    }

    async fn release_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        let mut st = self.st();
        let Some(t) = st.tabs.get_mut(&tab) else { return Ok(()) };
        if t.claimed_by.as_ref() == Some(&ctx.session) {
            t.claimed_by = None;
        }
        Ok(())
    }

    async fn attach_debugger(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.ensure_attached(tab, Instant::now() + ctx.timeout).await.map(|_| ())
    }

    async fn detach_debugger(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        let deadline = Instant::now() + ctx.timeout;
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

    async fn observe(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &ObserveParams,
    ) -> Result<Observation, ProviderError> {
        let deadline = Instant::now() + ctx.timeout;
        let lock = self.tab_lock(tab);
        let _g = lock.lock().await;
        crate::observe::observe(self, tab, params, deadline).await
    }

    async fn act(&self, ctx: &OpContext, tab: TabHandle, params: &ActParams) -> Result<ActionResult, ProviderError> {
        crate::act::act(self, ctx, tab, params).await
    }

    async fn evaluate(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &EvaluateParams,
    ) -> Result<EvaluateResult, ProviderError> {
        crate::advanced::evaluate(self, ctx, tab, params).await
    }

    async fn console(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &ConsoleParams,
    ) -> Result<ConsoleResult, ProviderError> {
        crate::advanced::console(self, ctx, tab, params).await
    }

    async fn network(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &NetworkParams,
    ) -> Result<NetworkResult, ProviderError> {
        crate::advanced::network(self, ctx, tab, params).await
    }

    async fn raw_protocol(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &RawProtocolParams,
    ) -> Result<RawProtocolResult, ProviderError> {
        crate::advanced::raw_protocol(self, ctx, tab, params).await
    }
}
