//! The broker's browser: a provider that launches the managed Chromium (or connects the remote endpoint) on the
//! first browser use, forwards its events, and shuts the managed browser down with the broker.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use browserd_cdp::{LaunchOptions, ManagedBrowser};
use browserd_chromium::{ChromiumConfig, ChromiumProvider};
use browserd_core::provider::{
    BrowserInfo, Capability, CapabilityMatrix, CapabilityState, CreateTab, HandleAllocator, OpContext, Provider,
    ProviderError, ProviderErrorKind, ProviderEvent, ProviderKind, TabHandle, TabInfo, UnsupportedReason,
};
use browserd_protocol::{ActParams, ActionResult, Observation, ObserveParams};
use tokio::sync::{OnceCell, broadcast};

use crate::config::BrokerConfig;

/// How the browser is reached.
#[derive(Debug, Clone)]
pub enum BrowserTarget {
    /// Launch a managed Chromium with these options.
    Managed(Box<LaunchOptions>),
    /// Connect to this remote DevTools endpoint.
    Remote(String),
}

impl BrowserTarget {
    /// The target the configuration asks for; the managed profile lives under `state_dir` unless configured.
    #[must_use]
    pub fn from_config(config: &BrokerConfig, state_dir: Option<&std::path::Path>) -> Self {
        if let Some(url) = &config.remote_cdp {
            return BrowserTarget::Remote(url.clone());
        }
        let user_data_dir = config.profile_dir.clone().or_else(|| state_dir.map(|d| d.join("profile")));
        // The launcher adds the quiet flags and, when running as root, --no-sandbox.
        let extra_args = config.chromium_args.clone();
        BrowserTarget::Managed(Box::new(LaunchOptions {
            executable: config.chromium_path.clone(),
            headless: config.headless,
            user_data_dir,
            extra_args,
            ..LaunchOptions::default()
        }))
    }

    fn kind(&self) -> ProviderKind {
        match self {
            BrowserTarget::Managed(_) => ProviderKind::Managed,
            BrowserTarget::Remote(_) => ProviderKind::Remote,
        }
    }
}

struct Launched {
    provider: Arc<ChromiumProvider>,
    browser: Mutex<Option<ManagedBrowser>>,
    forward: tokio::task::JoinHandle<()>,
}

/// A Chromium provider started on first use. Until then it reports itself offline.
pub struct LazyChromium {
    target: BrowserTarget,
    alloc: HandleAllocator,
    config: ChromiumConfig,
    launched: OnceCell<Launched>,
    events: broadcast::Sender<ProviderEvent>,
}

impl std::fmt::Debug for LazyChromium {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyChromium")
            .field("target", &self.target)
            .field("launched", &self.launched.initialized())
            .finish_non_exhaustive()
    }
}

impl LazyChromium {
    /// A provider that launches or connects on the first `connect`.
    #[must_use]
    pub fn new(target: BrowserTarget, config: ChromiumConfig) -> Self {
        let (events, _) = broadcast::channel(1024);
        Self { target, alloc: HandleAllocator::new(), config, launched: OnceCell::new(), events }
    }

    /// Whether the browser has been started.
    #[must_use]
    pub fn is_started(&self) -> bool {
        self.launched.initialized()
    }

    async fn inner(&self) -> Result<&Arc<ChromiumProvider>, ProviderError> {
        let launched = self
            .launched
            .get_or_try_init(|| async {
                let (provider, browser) = match &self.target {
                    BrowserTarget::Managed(opts) => {
                        let (provider, browser) = ChromiumProvider::launch_managed(
                            (**opts).clone(),
                            self.alloc.clone(),
                            self.config.clone(),
                        )
                        .await
                        .map_err(|e| {
                            ProviderError::new(
                                ProviderErrorKind::Unsupported(UnsupportedReason::Offline),
                                format!(
                                    "the managed Chromium did not start: {e}; install Chromium or set chromium_path \
                                     (or remote_cdp) in the browserd config"
                                ),
                            )
                        })?;
                        (provider, Some(browser))
                    }
                    BrowserTarget::Remote(url) => {
                        let provider =
                            ChromiumProvider::connect_remote(url, self.alloc.clone(), self.config.clone()).await?;
                        (provider, None)
                    }
                };
                let mut rx = provider.subscribe();
                let tx = self.events.clone();
                let forward = tokio::spawn(async move {
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
                Ok::<_, ProviderError>(Launched { provider, browser: Mutex::new(browser), forward })
            })
            .await?;
        Ok(&launched.provider)
    }

    fn started(&self) -> Result<&Arc<ChromiumProvider>, ProviderError> {
        self.launched.get().map(|l| &l.provider).ok_or_else(|| {
            ProviderError::new(ProviderErrorKind::ConnectionLost, "the browser is not started yet; connect first")
        })
    }

    /// Shuts the managed browser down (a remote endpoint is only disconnected). Idempotent.
    pub async fn shutdown(&self) {
        let Some(launched) = self.launched.get() else { return };
        launched.forward.abort();
        let browser = launched.browser.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(browser) = browser {
            match tokio::time::timeout(Duration::from_secs(10), browser.shutdown()).await {
                Ok(Ok(_)) => tracing::info!("managed Chromium shut down"),
                Ok(Err(e)) => tracing::warn!(%e, "managed Chromium shutdown reported an error"),
                Err(_) => tracing::warn!("managed Chromium did not shut down within 10 s"),
            }
        }
    }
}

#[async_trait]
impl Provider for LazyChromium {
    fn kind(&self) -> ProviderKind {
        self.target.kind()
    }

    fn capabilities(&self) -> CapabilityMatrix {
        match self.launched.get() {
            Some(l) => l.provider.capabilities(),
            None => {
                // Not started yet: nothing can be used until the first browser operation starts it.
                let offline = || CapabilityState::Unsupported {
                    reason: UnsupportedReason::Offline,
                    detail: "the browser starts on first use".to_owned(),
                };
                CapabilityMatrix(
                    [
                        Capability::TurnCleanup,
                        Capability::TurnScopedMarks,
                        Capability::RetainedCleanup,
                        Capability::DebuggerLeaseRecovery,
                    ]
                    .into_iter()
                    .map(|c| (c, offline()))
                    .collect(),
                )
            }
        }
    }

    fn events(&self) -> broadcast::Receiver<ProviderEvent> {
        self.events.subscribe()
    }

    async fn connect(&self, ctx: &OpContext) -> Result<BrowserInfo, ProviderError> {
        if !self.is_started() && crate::server::launch_forbidden() {
            return Err(ProviderError::new(
                ProviderErrorKind::ConnectionLost,
                "the browser has not been started; nothing of this session is open in it",
            ));
        }
        self.inner().await?.connect(ctx).await
    }

    async fn list_tabs(&self, ctx: &OpContext) -> Result<Vec<TabInfo>, ProviderError> {
        self.started()?.list_tabs(ctx).await
    }

    async fn create_tab(&self, ctx: &OpContext, req: CreateTab) -> Result<TabInfo, ProviderError> {
        self.started()?.create_tab(ctx, req).await
    }

    async fn close_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.started()?.close_tab(ctx, tab).await
    }

    async fn activate_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.started()?.activate_tab(ctx, tab).await
    }

    async fn claim_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.started()?.claim_tab(ctx, tab).await
    }

    async fn release_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.started()?.release_tab(ctx, tab).await
    }

    async fn attach_debugger(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.started()?.attach_debugger(ctx, tab).await
    }

    async fn detach_debugger(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.started()?.detach_debugger(ctx, tab).await
    }

    async fn observe(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &ObserveParams,
    ) -> Result<Observation, ProviderError> {
        self.started()?.observe(ctx, tab, params).await
    }

    async fn act(&self, ctx: &OpContext, tab: TabHandle, params: &ActParams) -> Result<ActionResult, ProviderError> {
        self.started()?.act(ctx, tab, params).await
    }
}
