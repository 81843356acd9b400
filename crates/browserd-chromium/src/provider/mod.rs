//! `ChromiumProvider`: the provider over one browser connection — its records, its CDP calls and the serialisation
//! of each tab's operations. Tabs are attached in [`sessions`], the records kept current from CDP events in
//! [`events`], and the `Provider` implementation is in [`api`].

mod api;
mod events;
mod intercept;
mod profiles;
mod sessions;

pub use profiles::{SessionTabs, TabSettings};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use browserd_cdp::{
    Cdp, CdpError, ConnectOptions, LaunchError, LaunchOptions, ManagedBrowser, SessionId, TransportError,
};
use browserd_core::provider::{
    HandleAllocator, OpContext, Provider, ProviderError, ProviderErrorKind, ProviderEvent, ProviderKind, TabHandle,
    TabInfo,
};
use browserd_protocol::{ActionResult, Screenshot, ScreenshotOptions};
use serde_json::Value;
use tokio::sync::{Notify, broadcast};

use crate::state::{State, Tab};

use events::pump;

static EPOCHS: AtomicU64 = AtomicU64::new(0);

/// Configuration of a Chromium provider.
#[derive(Debug, Clone, Default)]
pub struct ChromiumConfig {
    /// Directories whose files may be uploaded. Empty: uploads are refused.
    pub upload_roots: Vec<PathBuf>,
    /// Where downloads land. `None`: downloads are denied.
    pub download_dir: Option<PathBuf>,
    /// The site policy's check of a tab's and its frames' origins (`None`: every origin is allowed).
    pub origin_check: Option<crate::OriginCheck>,
    /// What each session asked for its tabs (page viewport, own browser context), registered by the broker.
    pub session_tabs: Arc<SessionTabs>,
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
    pub(crate) ax_stats: Arc<crate::ax::AxCounters>,
    /// When a tree that must be read whole is built from the DOM snapshot instead ([`crate::ax::DomFirst`]).
    dom_first: std::sync::atomic::AtomicU8,
    /// Isolated sessions' browser contexts on this connection.
    pub(crate) contexts: profiles::Contexts,
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
        CdpError::Transport(TransportError::NotAuthorised { .. }) => ProviderErrorKind::NotAuthorised,
        CdpError::Transport(TransportError::Busy { retry_after_ms, .. }) => {
            ProviderErrorKind::Busy { retry_after_ms: retry_after_ms.unwrap_or(browserd_cdp::DEFAULT_RETRY_AFTER_MS) }
        }
        CdpError::Transport(TransportError::Unsupported { .. }) => {
            ProviderErrorKind::Unsupported(browserd_core::provider::UnsupportedReason::ByImplementation)
        }
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
        let relay_downloads = kind == ProviderKind::Extension;
        let state = Arc::new(Mutex::new(State { relay_downloads, ..State::default() }));
        let (events_tx, _) = broadcast::channel(1024);
        let dialog_notify = Arc::new(Notify::new());
        let check = config.origin_check.clone().map(|c| (c, kind == ProviderKind::Extension));
        let pump = tokio::spawn(pump(
            cdp.clone(),
            state.clone(),
            events_tx.clone(),
            dialog_notify.clone(),
            alloc.clone(),
            check,
        ));
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
            ax_stats: Arc::default(),
            dom_first: std::sync::atomic::AtomicU8::new(crate::ax::DomFirst::Auto as u8),
            contexts: profiles::Contexts::default(),
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

    /// Connects to a remote DevTools endpoint (`ws://`, `wss://`, `http://` or `https://`, path and query kept).
    pub async fn connect_remote(
        url: &str,
        alloc: HandleAllocator,
        config: ChromiumConfig,
    ) -> Result<Arc<Self>, ProviderError> {
        Self::connect_remote_with(url, ConnectOptions::default(), &[], alloc, config).await
    }

    /// [`Self::connect_remote`] with connect options (timeout, extra CAs, an `Authorization` header), giving the
    /// targets listed in `adopt` (from an earlier connection to the same browser) their old handles when they are still
    /// there. A connection that opens but does not answer in time is closed at once (a grid frees its slot).
    pub async fn connect_remote_with(
        url: &str,
        options: ConnectOptions,
        adopt: &[(String, TabHandle)],
        alloc: HandleAllocator,
        config: ChromiumConfig,
    ) -> Result<Arc<Self>, ProviderError> {
        let timeout = options.connect_timeout;
        let cdp = browserd_cdp::connect_ws_with(url, options)
            .await
            .map_err(|e| cdp_err(&e, "connecting to the remote endpoint"))?;
        let provider = Self::new(cdp.clone(), ProviderKind::Remote, alloc, config);
        provider.adopt_handles(adopt);
        let ctx = OpContext::new(browserd_core::provider::SessionKey("connect".into()), timeout, "connect");
        if let Err(e) = provider.connect(&ctx).await {
            cdp.close("the connection did not answer in time and was closed").await;
            return Err(e);
        }
        Ok(provider)
    }

    /// Gives targets this provider registers later the handles an earlier connection gave them (a reconnect to the
    /// same browser: surviving tabs keep their handle, hence their owner).
    pub fn adopt_handles(&self, adopt: &[(String, TabHandle)]) {
        let mut st = self.st();
        st.preferred.extend(adopt.iter().cloned());
    }

    /// Every tab this provider knows, with the browser's target id (for a reconnect's [`Self::adopt_handles`]).
    #[must_use]
    pub fn known_targets(&self) -> Vec<(String, TabHandle)> {
        self.st().tabs.values().map(|t| (t.target_id.clone(), t.handle)).collect()
    }

    /// This connection's epoch (what [`Provider::connect`] reports).
    #[must_use]
    pub fn connection_epoch(&self) -> u64 {
        self.epoch
    }

    /// Why the connection to the browser ended, once it has.
    #[must_use]
    pub fn connection_closed(&self) -> Option<String> {
        if self.cdp.is_closed() {
            return Some(self.cdp.close_reason().unwrap_or_else(|| "the browser connection closed".to_owned()));
        }
        None
    }

    /// How observations on this connection got their accessibility trees so far (frame reads by kind): for
    /// benchmarks and diagnostics.
    pub fn ax_stats(&self) -> crate::ax::AxStats {
        self.ax_stats.snapshot()
    }

    /// When observations build a frame's tree from its DOM snapshot instead of reading it whole ([`DomFirst`]).
    pub fn set_dom_first(&self, mode: crate::ax::DomFirst) {
        self.dom_first.store(mode as u8, std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn dom_first(&self) -> crate::ax::DomFirst {
        crate::ax::DomFirst::from_u8(self.dom_first.load(std::sync::atomic::Ordering::Relaxed))
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

    /// A call within `timeout`; with `for_action`, one the extension relay's last-hop gate checks as a write (see
    /// [`Cdp::call_for_action`]), else an ordinary one.
    pub(crate) async fn call_marked(
        &self,
        session: Option<&SessionId>,
        method: &str,
        params: Value,
        timeout: Duration,
        for_action: bool,
    ) -> Result<Value, CdpError> {
        if for_action {
            self.cdp.call_for_action(session, method, params, timeout, None).await
        } else {
            self.cdp.call(session, method, params, timeout).await
        }
    }

    fn tab_info(t: &Tab, active: bool) -> TabInfo {
        TabInfo { tab: t.handle, url: t.url.clone(), title: t.title.clone(), group: None, opener: t.opener, active }
    }

    pub(crate) fn target_of(&self, tab: TabHandle) -> Result<String, ProviderError> {
        self.st().tabs.get(&tab).map(|t| t.target_id.clone()).ok_or_else(|| gone(tab))
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
        crate::screenshot::capture(self, tab, opts, deadline).await.map_err(|e| self.live_tab_error(tab, e))
    }

    /// An operation's "target gone" error about a tab the browser has not destroyed (no target-destroyed event: its
    /// debugging session ended, or its renderer crashed) is not a closed tab: the tab stays, and the caller is told to
    /// retry (a new session is attached) or to reload or close it.
    pub(crate) fn live_tab_error(&self, tab: TabHandle, e: ProviderError) -> ProviderError {
        if e.kind != ProviderErrorKind::TabGone {
            return e;
        }
        let crashed = {
            let st = self.st();
            match st.tabs.get(&tab) {
                None => return e,
                Some(t) => t.crashed,
            }
        };
        let what = if crashed {
            "its page crashed; reload it (browser_act navigate) or close it (browser_close)"
        } else {
            "its debugging session ended; retry (a new one is attached)"
        };
        ProviderError::new(ProviderErrorKind::Refused, format!("tab {tab} is still open but {what} ({})", e.message))
    }

    /// The serialisation lock of a tab's page operations.
    /// Locks of closed tabs are dropped when no operation holds them, so the map stays as large as the open tabs.
    pub(crate) fn tab_lock(&self, tab: TabHandle) -> Arc<tokio::sync::Mutex<()>> {
        let open: std::collections::HashSet<TabHandle> = self.st().tabs.keys().copied().collect();
        let mut locks = self.tab_locks.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        locks.retain(|t, lock| *t == tab || open.contains(t) || Arc::strong_count(lock) > 1);
        locks.entry(tab).or_default().clone()
    }

    /// Takes `tab`'s operation lock, waiting no later than `deadline` (an action and the description of its target
    /// have the tab to themselves).
    pub(crate) async fn lock_tab_until(
        &self,
        tab: TabHandle,
        deadline: Instant,
    ) -> Result<tokio::sync::OwnedMutexGuard<()>, ProviderError> {
        tokio::time::timeout(remaining(deadline), self.tab_lock(tab).lock_owned()).await.map_err(|_| {
            ProviderError::new(
                ProviderErrorKind::Timeout,
                format!("tab {tab} stayed busy with another operation until the deadline; retry later"),
            )
        })
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

pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}
