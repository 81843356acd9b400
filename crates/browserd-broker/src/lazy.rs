//! The broker's browser: a provider that picks the browser on the first browser use — a paired extension (the user's
//! browser), the remote endpoint or a managed Chromium, per the `browser` setting — forwards its events, and shuts the
//! managed browser down with the broker. One browser per broker: the choice holds until the broker exits.

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

use browserd_native::link::ExtensionLink;

use crate::config::{BrokerConfig, BrowserChoice};
use crate::extension::ExtensionProvider;

/// How long `browser = "extension"` waits at the first browser use for an extension to pair.
const EXTENSION_WAIT: Duration = Duration::from_secs(10);

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
        if let Some(url) = &config.remote_cdp
            && config.browser != BrowserChoice::Managed
        {
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
    provider: Arc<dyn Provider>,
    /// The Chromium provider itself, when the browser is a managed Chromium or a remote endpoint.
    chromium: Option<Arc<ChromiumProvider>>,
    /// Set when the extension browser was chosen.
    extension: Option<Arc<ExtensionProvider>>,
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
    choice: BrowserChoice,
    /// The latest paired extension (replaced on every pairing, cleared when its link closes).
    paired: tokio::sync::watch::Sender<Option<ExtensionLink>>,
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
        Self::with_choice(target, config, BrowserChoice::Auto)
    }

    /// A provider that picks per `choice` at the first `connect`.
    #[must_use]
    pub fn with_choice(target: BrowserTarget, config: ChromiumConfig, choice: BrowserChoice) -> Self {
        let (events, _) = broadcast::channel(1024);
        let (paired, _) = tokio::sync::watch::channel(None);
        Self { target, alloc: HandleAllocator::new(), config, launched: OnceCell::new(), events, choice, paired }
    }

    /// Records a newly paired extension (the broker's endpoint calls this for every pairing).
    pub fn extension_paired(&self, link: ExtensionLink) {
        self.paired.send_replace(Some(link));
    }

    /// The paired extension whose link is still open, if any.
    #[must_use]
    pub fn paired_extension(&self) -> Option<ExtensionLink> {
        self.paired.borrow().clone().filter(|l| l.closed_reason().is_none())
    }

    /// The extension browser, when it is the one in use.
    #[must_use]
    pub fn extension_in_use(&self) -> Option<Arc<ExtensionProvider>> {
        self.launched.get().and_then(|l| l.extension.clone())
    }

    /// The configured choice.
    #[must_use]
    pub fn choice(&self) -> BrowserChoice {
        self.choice
    }

    /// What the browser selection is, in words, for `status`.
    #[must_use]
    pub fn selection(&self) -> String {
        let which = match self.launched.get() {
            Some(l) => match l.extension.as_ref() {
                Some(e) => format!("extension {} (the user's browser)", e.link().info().extension_id),
                None => kind_name(l.provider.kind()).to_owned(),
            },
            None => "none yet (chosen at the first browser use)".to_owned(),
        };
        let paired = match self.paired_extension() {
            Some(l) => format!("extension {} paired", l.info().extension_id),
            None => "no extension paired".to_owned(),
        };
        format!("browser = {}; in use: {which}; {paired}; one browser per broker", self.choice.as_str())
    }

    async fn wait_for_extension(&self) -> Option<ExtensionLink> {
        let mut rx = self.paired.subscribe();
        let wait = rx.wait_for(|l| l.as_ref().is_some_and(|l| l.closed_reason().is_none()));
        match tokio::time::timeout(EXTENSION_WAIT, wait).await {
            Ok(Ok(l)) => l.clone(),
            _ => None,
        }
    }

    fn use_extension(&self, link: ExtensionLink) -> (Arc<dyn Provider>, Option<Arc<ExtensionProvider>>) {
        let ext =
            ExtensionProvider::with_pairings(link, self.paired.subscribe(), self.alloc.clone(), self.config.clone());
        (ext.clone(), Some(ext))
    }

    /// The remote DevTools endpoint this broker is configured for, if the browser is (or will be) a remote one.
    #[must_use]
    pub fn remote_endpoint(&self) -> Option<&str> {
        match (&self.target, self.choice) {
            (BrowserTarget::Remote(url), BrowserChoice::Auto | BrowserChoice::Remote) => Some(url),
            _ => None,
        }
    }

    /// The browser's own target id of `tab` (managed Chromium or remote endpoint, once started).
    #[must_use]
    pub fn target_id(&self, tab: TabHandle) -> Option<String> {
        self.launched.get().and_then(|l| l.chromium.as_ref()).and_then(|c| c.target_id(tab))
    }

    /// Whether the browser has been started.
    #[must_use]
    pub fn is_started(&self) -> bool {
        self.launched.initialized()
    }

    async fn inner(&self) -> Result<&Arc<dyn Provider>, ProviderError> {
        let launched = self
            .launched
            .get_or_try_init(|| async {
                let extension = match self.choice {
                    BrowserChoice::Auto => self.paired_extension(),
                    BrowserChoice::Extension => Some(self.wait_for_extension().await.ok_or_else(|| {
                        ProviderError::new(
                            ProviderErrorKind::Unsupported(UnsupportedReason::Offline),
                            "browser = \"extension\" but no browserd extension paired; open the browser with the \
                             extension, run `browserd install` and `browserd doctor`",
                        )
                    })?),
                    BrowserChoice::Managed => None,
                    BrowserChoice::Remote => {
                        if !matches!(self.target, BrowserTarget::Remote(_)) {
                            return Err(ProviderError::new(
                                ProviderErrorKind::InvalidRequest,
                                "browser = \"remote\" but remote_cdp is not set; set remote_cdp in the browserd config",
                            ));
                        }
                        None
                    }
                };
                let (provider, extension, browser, chromium): (Arc<dyn Provider>, _, _, _) = if let Some(link) =
                    extension
                {
                    tracing::info!(extension = %link.info().extension_id, "browser: the paired extension");
                    let (p, e) = self.use_extension(link);
                    let ctx = OpContext::new(
                        browserd_core::provider::SessionKey("connect".into()),
                        Duration::from_secs(10),
                        "connect",
                    );
                    p.connect(&ctx).await?;
                    (p, e, None, None)
                } else {
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
                    let chromium = Some(provider.clone());
                    let provider: Arc<dyn Provider> = provider;
                    (provider, None, browser, chromium)
                };
                let mut rx = provider.events();
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
                Ok::<_, ProviderError>(Launched {
                    provider,
                    chromium,
                    extension,
                    browser: Mutex::new(browser),
                    forward,
                })
            })
            .await?;
        Ok(&launched.provider)
    }

    fn started(&self) -> Result<&Arc<dyn Provider>, ProviderError> {
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
        if let Some(l) = self.launched.get() {
            return l.provider.kind();
        }
        match self.choice {
            BrowserChoice::Extension => ProviderKind::Extension,
            BrowserChoice::Auto if self.paired_extension().is_some() => ProviderKind::Extension,
            _ => self.target.kind(),
        }
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
        if !self.is_started() && crate::sessions::launch_forbidden() {
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

    async fn evaluate(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &browserd_protocol::tools::EvaluateParams,
    ) -> Result<browserd_protocol::tools::EvaluateResult, ProviderError> {
        self.started()?.evaluate(ctx, tab, params).await
    }

    async fn console(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &browserd_protocol::tools::ConsoleParams,
    ) -> Result<browserd_protocol::tools::ConsoleResult, ProviderError> {
        self.started()?.console(ctx, tab, params).await
    }

    async fn network(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &browserd_protocol::tools::NetworkParams,
    ) -> Result<browserd_protocol::tools::NetworkResult, ProviderError> {
        self.started()?.network(ctx, tab, params).await
    }

    async fn raw_protocol(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &browserd_protocol::tools::RawProtocolParams,
    ) -> Result<browserd_protocol::tools::RawProtocolResult, ProviderError> {
        self.started()?.raw_protocol(ctx, tab, params).await
    }
}

fn kind_name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Managed => "managed Chromium",
        ProviderKind::Remote => "remote endpoint",
        ProviderKind::Extension => "extension",
        ProviderKind::Fake => "fake",
    }
}
