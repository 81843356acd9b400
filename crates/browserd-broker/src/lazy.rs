//! The broker's browser: a provider that picks the browser on the first browser use — a paired extension (the user's
//! browser), the remote endpoint or a managed Chromium, per the `browser` setting — forwards its events, brings a lost
//! browser back, and shuts the managed browser down with the broker. One browser per broker: the choice holds until
//! the broker exits.
//!
//! **Coming back.** When the connection to a managed Chromium or a remote endpoint is lost (the browser was killed or
//! quit, the grid restarted or ended the session), the loss is forwarded at once (the bridge reads `reconnecting`)
//! and the supervisor ([`LazyChromium::supervise`]) starts a new attempt right away: a managed Chromium is relaunched,
//! a remote endpoint reconnected, retried with backoff (`reconnect_backoff_ms` doubling to
//! `reconnect_backoff_max_ms`). An operation that arrives meanwhile waits for the attempt in flight or makes one when
//! the backoff has passed; one arriving during the backoff is told when the next attempt is. A reconnected remote
//! browser's surviving tabs keep their handles (so their owners); a fresh browser's tabs are all new, and the old
//! ones are gone. The extension relay has its own pairing and is not brought back here.
//!
//! This is the broker's default browser (`b1`, the configuration's settings); the managed browsers sessions ask for
//! with other browser-wide settings are `browsers.rs`'s, which routes every provider call to the right one.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use browserd_cdp::{ConnectOptions, Endpoint, LaunchOptions, ManagedBrowser};
use browserd_chromium::{ChromiumConfig, ChromiumProvider};
use browserd_core::provider::{
    BrowserInfo, Capability, CapabilityMatrix, CapabilityState, CreateTab, HandleAllocator, OpContext, Provider,
    ProviderError, ProviderErrorKind, ProviderEvent, ProviderKind, TabHandle, TabInfo, UnsupportedReason,
};
use browserd_protocol::{ActParams, ActionResult, Observation, ObserveParams};
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

use browserd_native::link::ExtensionLink;

use crate::config::{BrokerConfig, BrowserChoice};
use crate::extension::ExtensionProvider;

/// How long `browser = "extension"` waits at the first browser use for an extension to pair.
const EXTENSION_WAIT: Duration = Duration::from_secs(10);

/// How the browser is reached.
#[derive(Clone)]
pub enum BrowserTarget {
    /// Launch a managed Chromium with these options.
    Managed(Box<LaunchOptions>),
    /// Connect to this remote DevTools endpoint (its query may hold a token: never logged; see [`Endpoint`]).
    Remote(String),
}

impl std::fmt::Debug for BrowserTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BrowserTarget::Managed(opts) => f.debug_tuple("Managed").field(opts).finish(),
            BrowserTarget::Remote(url) => f.debug_tuple("Remote").field(&browserd_cdp::redact_url(url)).finish(),
        }
    }
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

/// How the broker connects and comes back: the remote endpoint's credentials and timeout, and the reconnect backoff.
#[derive(Clone)]
pub struct LazyOptions {
    /// The `Authorization` header for the remote endpoint (`remote_authorization`). Never logged.
    pub authorization: Option<String>,
    /// How long a remote connect may take.
    pub connect_timeout: Duration,
    /// The first wait after a failed reconnect attempt.
    pub backoff: Duration,
    /// The longest wait between attempts.
    pub backoff_max: Duration,
    /// The scheme policy's copy for the extension's last-hop gate (`schemes.set`: `fileRoots`, `extra`).
    pub gate_schemes: serde_json::Value,
    /// The site policy handed to the extension's last-hop gate (`policy.set`) on every pairing.
    pub gate_policy: serde_json::Value,
    /// The sessions' own lists, added to `gate_policy` whenever they change.
    pub gate_sessions: Option<crate::policy::enforce::GateSessions>,
}

impl std::fmt::Debug for LazyOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyOptions")
            .field("authorization", &self.authorization.as_ref().map(|_| "…"))
            .field("connect_timeout", &self.connect_timeout)
            .field("backoff", &self.backoff)
            .field("backoff_max", &self.backoff_max)
            .finish()
    }
}

impl Default for LazyOptions {
    fn default() -> Self {
        Self::from_config(&BrokerConfig::default())
    }
}

impl LazyOptions {
    /// The options the configuration asks for (`remote_authorization`, `remote_connect_timeout_ms`,
    /// `reconnect_backoff_ms`, `reconnect_backoff_max_ms`).
    #[must_use]
    pub fn from_config(config: &BrokerConfig) -> Self {
        let backoff = Duration::from_millis(config.reconnect_backoff_ms.max(1));
        LazyOptions {
            authorization: config.remote_authorization.clone(),
            connect_timeout: Duration::from_millis(config.remote_connect_timeout_ms.max(1)),
            backoff,
            backoff_max: Duration::from_millis(config.reconnect_backoff_max_ms).max(backoff),
            gate_schemes: crate::policy::schemes::gate_copy(config),
            gate_policy: crate::policy::enforce::gate_policy(&config.policy),
            gate_sessions: None,
        }
    }

    fn delay_after(&self, failures: u32) -> Duration {
        let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(16));
        self.backoff.saturating_mul(factor).min(self.backoff_max)
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

impl Launched {
    /// Why its connection ended, if it has (the extension relay is never counted as lost here).
    fn lost(&self) -> Option<String> {
        self.chromium.as_ref().and_then(|c| c.connection_closed())
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        self.forward.abort();
    }
}

/// Where the connection stands after a loss, for `status`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReconnectStatus {
    /// Why the last connection was lost, while it is not back.
    pub lost: Option<String>,
    /// Why the connection was lost the last time (kept once it is back).
    pub last_lost: Option<String>,
    /// Attempts made since the loss (0 once back).
    pub attempts: u32,
    /// Whether an attempt is running now.
    pub in_progress: bool,
    /// The last failed attempt's error.
    pub last_error: Option<String>,
    /// Milliseconds until the next attempt, while waiting out the backoff.
    pub next_attempt_in_ms: Option<u64>,
    /// How many times the browser came back.
    pub reconnects: u64,
    /// How long the last comeback took, from the loss to the new connection.
    pub last_reconnect_ms: Option<u64>,
}

#[derive(Debug, Default)]
struct Reconnect {
    lost_at: Option<Instant>,
    lost: Option<String>,
    last_lost: Option<String>,
    attempts: u32,
    in_progress: bool,
    last_error: Option<String>,
    next_attempt: Option<Instant>,
    reconnects: u64,
    last_reconnect_ms: Option<u64>,
}

/// A Chromium provider started on first use. Until then it reports itself offline.
pub struct LazyChromium {
    target: BrowserTarget,
    alloc: HandleAllocator,
    config: ChromiumConfig,
    options: LazyOptions,
    current: Mutex<Option<Arc<Launched>>>,
    /// Held while a browser is being launched or connected.
    launching: tokio::sync::Mutex<()>,
    reconnect: Mutex<Reconnect>,
    /// Woken when the connection is lost.
    lost: Arc<Notify>,
    events: broadcast::Sender<ProviderEvent>,
    choice: BrowserChoice,
    /// The latest paired extension (replaced on every pairing, cleared when its link closes).
    paired: tokio::sync::watch::Sender<Option<ExtensionLink>>,
}

impl std::fmt::Debug for LazyChromium {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyChromium")
            .field("target", &self.target)
            .field("launched", &self.is_started())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
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
        Self::with_options(target, config, choice, LazyOptions::default())
    }

    /// A provider that picks per `choice` at the first `connect`, connecting and coming back per `options`.
    #[must_use]
    pub fn with_options(
        target: BrowserTarget,
        config: ChromiumConfig,
        choice: BrowserChoice,
        options: LazyOptions,
    ) -> Self {
        let (events, _) = broadcast::channel(1024);
        let (paired, _) = tokio::sync::watch::channel(None);
        Self {
            target,
            alloc: HandleAllocator::new(),
            config,
            options,
            current: Mutex::new(None),
            launching: tokio::sync::Mutex::new(()),
            reconnect: Mutex::new(Reconnect::default()),
            lost: Arc::new(Notify::new()),
            events,
            choice,
            paired,
        }
    }

    /// How the browser is reached, as configured.
    pub(crate) fn target(&self) -> &BrowserTarget {
        &self.target
    }

    /// The handle allocator every browser of the broker shares (a tab handle names one tab of one browser).
    pub(crate) fn alloc(&self) -> HandleAllocator {
        self.alloc.clone()
    }

    /// The Chromium configuration every managed browser of the broker gets (site policy, files, session tabs).
    pub(crate) fn chromium_config(&self) -> ChromiumConfig {
        self.config.clone()
    }

    /// Where the broker's provider events go: the other managed browsers forward theirs here too.
    pub(crate) fn events_sender(&self) -> broadcast::Sender<ProviderEvent> {
        self.events.clone()
    }

    /// The managed Chromium's process id, while it runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.current().and_then(|l| lock(&l.browser).as_ref().and_then(ManagedBrowser::pid))
    }

    fn current(&self) -> Option<Arc<Launched>> {
        lock(&self.current).clone()
    }

    /// The sessions' own tab settings, shared with every Chromium provider this broker starts.
    pub(crate) fn session_tabs(&self) -> &browserd_chromium::SessionTabs {
        &self.config.session_tabs
    }

    /// The Chromium provider in use (a managed Chromium or a remote endpoint), if started.
    pub(crate) fn chromium(&self) -> Option<Arc<ChromiumProvider>> {
        self.current().and_then(|l| l.chromium.clone())
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
        self.current().and_then(|l| l.extension.clone())
    }

    /// The configured choice.
    #[must_use]
    pub fn choice(&self) -> BrowserChoice {
        self.choice
    }

    /// What the browser selection is, in words, for `status` (a remote endpoint redacted: no query, no userinfo).
    #[must_use]
    pub fn selection(&self) -> String {
        let which = match self.current() {
            Some(l) => match l.extension.as_ref() {
                Some(e) => format!("extension {} (the user's browser)", e.link().info().extension_id),
                None => match (l.provider.kind(), self.remote_endpoint()) {
                    (ProviderKind::Remote, Some(url)) => format!("remote endpoint {}", browserd_cdp::redact_url(url)),
                    (kind, _) => kind_name(kind).to_owned(),
                },
            },
            None => "none yet (chosen at the first browser use)".to_owned(),
        };
        let paired = match self.paired_extension() {
            Some(l) => format!("extension {} paired", l.info().extension_id),
            None => "no extension paired".to_owned(),
        };
        format!("browser = {}; in use: {which}; {paired}", self.choice.as_str())
    }

    /// Where a lost connection stands.
    #[must_use]
    pub fn reconnect_status(&self) -> ReconnectStatus {
        let r = lock(&self.reconnect);
        let now = Instant::now();
        ReconnectStatus {
            lost: r.lost.clone(),
            last_lost: r.last_lost.clone(),
            attempts: r.attempts,
            in_progress: r.in_progress,
            last_error: r.last_error.clone(),
            next_attempt_in_ms: r.next_attempt.filter(|at| *at > now).map(|at| millis(at - now)),
            reconnects: r.reconnects,
            last_reconnect_ms: r.last_reconnect_ms,
        }
    }

    /// Why the browser's connection is lost, as soon as its link knows (before the supervisor records the loss).
    #[must_use]
    pub fn link_lost(&self) -> Option<String> {
        self.current().and_then(|l| l.lost())
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
        ext.set_gate_schemes(self.options.gate_schemes.clone());
        ext.set_gate_policy(self.options.gate_policy.clone());
        if let Some(sessions) = &self.options.gate_sessions {
            ext.set_gate_sessions(sessions.clone());
        }
        (ext.clone(), Some(ext))
    }

    /// The remote DevTools endpoint this broker is configured for, if the browser is (or will be) a remote one. It
    /// may hold a token: use [`Self::remote_identity`] for keys and `browserd_cdp::redact_url` for messages.
    #[must_use]
    pub fn remote_endpoint(&self) -> Option<&str> {
        match (&self.target, self.choice) {
            (BrowserTarget::Remote(url), BrowserChoice::Auto | BrowserChoice::Remote) => Some(url),
            _ => None,
        }
    }

    /// The secret-free identity of the remote endpoint (scheme, host, port, path), if the browser is a remote one.
    #[must_use]
    pub fn remote_identity(&self) -> Option<String> {
        let url = self.remote_endpoint()?;
        Some(Endpoint::parse(url).map_or_else(|_| browserd_cdp::redact_url(url), |e| e.identity()))
    }

    /// The connect options of the remote endpoint (timeout, `Authorization`).
    #[must_use]
    pub fn connect_options(&self) -> ConnectOptions {
        ConnectOptions {
            connect_timeout: self.options.connect_timeout,
            authorization: self.options.authorization.clone(),
            ..ConnectOptions::default()
        }
    }

    /// The browser's own target id of `tab` (managed Chromium or remote endpoint, once started).
    #[must_use]
    pub fn target_id(&self, tab: TabHandle) -> Option<String> {
        self.current().and_then(|l| l.chromium.as_ref().and_then(|c| c.target_id(tab)))
    }

    /// Whether the browser has been started.
    #[must_use]
    pub fn is_started(&self) -> bool {
        lock(&self.current).is_some()
    }

    /// The provider in use, starting (or bringing back) the browser when there is none or its connection is lost.
    async fn inner(&self) -> Result<Arc<dyn Provider>, ProviderError> {
        if let Some(l) = self.current()
            && l.lost().is_none()
        {
            return Ok(l.provider.clone());
        }
        let _launching = self.launching.lock().await;
        let previous = self.current();
        if let Some(l) = &previous
            && l.lost().is_none()
        {
            return Ok(l.provider.clone());
        }
        if let Some(old) = &previous {
            let reason = old.lost().unwrap_or_default();
            let mut r = lock(&self.reconnect);
            if r.lost.is_none() {
                tracing::warn!(reason = %reason, "the browser connection was lost; bringing it back");
                r.last_lost = Some(reason.clone());
                r.lost = Some(reason);
                r.lost_at = Some(Instant::now());
            }
            if let Some(at) = r.next_attempt
                && at > Instant::now()
            {
                return Err(ProviderError::new(
                    ProviderErrorKind::ConnectionLost,
                    format!(
                        "the browser connection was lost ({}); reconnect attempt {} failed ({}); the next attempt is \
                         in {} ms: call browser_status, then retry",
                        r.lost.clone().unwrap_or_default(),
                        r.attempts,
                        r.last_error.clone().unwrap_or_default(),
                        millis(at - Instant::now())
                    ),
                ));
            }
            r.in_progress = true;
        }
        if let Some(old) = &previous {
            // A managed Chromium's remains (its process group, its profile lock) go before the relaunch.
            let browser = lock(&old.browser).take();
            if let Some(browser) = browser {
                let _ = tokio::time::timeout(Duration::from_secs(10), browser.shutdown()).await;
            }
        }
        let result = self.launch(previous.as_deref()).await;
        let mut r = lock(&self.reconnect);
        r.in_progress = false;
        match result {
            Ok(launched) => {
                let provider = launched.provider.clone();
                let epoch = launched.chromium.as_ref().map(|c| c.connection_epoch());
                *lock(&self.current) = Some(Arc::new(launched));
                if previous.is_some() {
                    r.reconnects += 1;
                    r.last_reconnect_ms = r.lost_at.map(|at| millis(at.elapsed()));
                    tracing::info!(
                        attempts = r.attempts + 1,
                        took_ms = r.last_reconnect_ms.unwrap_or_default(),
                        "the browser connection is back"
                    );
                    r.lost = None;
                    r.lost_at = None;
                    r.attempts = 0;
                    r.last_error = None;
                    r.next_attempt = None;
                    if let Some(epoch) = epoch {
                        let _ = self.events.send(ProviderEvent::ConnectionRestored { connection_epoch: epoch });
                    }
                }
                drop(r);
                // What is left of the lost browser (its event forwarding) ends with it; its managed process went
                // before the relaunch.
                drop(previous);
                Ok(provider)
            }
            Err(e) => {
                if previous.is_some() {
                    r.attempts += 1;
                    r.last_error = Some(e.message.clone());
                    r.next_attempt = Some(Instant::now() + self.options.delay_after(r.attempts));
                    tracing::warn!(attempt = r.attempts, error = %e.message, "reconnecting the browser failed");
                }
                Err(e)
            }
        }
    }

    /// Starts the browser: the first time per the choice; after a loss, the same kind again (a managed Chromium is
    /// relaunched, a remote endpoint reconnected with the handles of the tabs it had).
    async fn launch(&self, previous: Option<&Launched>) -> Result<Launched, ProviderError> {
        let extension = match (self.choice, previous) {
            (_, Some(_)) => None,
            (BrowserChoice::Auto, None) => self.paired_extension(),
            (BrowserChoice::Extension, None) => Some(self.wait_for_extension().await.ok_or_else(|| {
                ProviderError::new(
                    ProviderErrorKind::Unsupported(UnsupportedReason::Offline),
                    "browser = \"extension\" but no browserd extension paired; open the browser with the \
                     extension, run `browserd install` and `browserd doctor`",
                )
            })?),
            (BrowserChoice::Managed, None) => None,
            (BrowserChoice::Remote, None) => {
                if !matches!(self.target, BrowserTarget::Remote(_)) {
                    return Err(ProviderError::new(
                        ProviderErrorKind::InvalidRequest,
                        "browser = \"remote\" but remote_cdp is not set; set remote_cdp in the browserd config",
                    ));
                }
                None
            }
        };
        let (provider, extension, browser, chromium): (Arc<dyn Provider>, _, _, _) = if let Some(link) = extension {
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
                BrowserTarget::Managed(configured) => {
                    let opts = (**configured).clone();
                    let (provider, browser) =
                        ChromiumProvider::launch_managed(opts, self.alloc.clone(), self.config.clone()).await.map_err(
                            |e| {
                                ProviderError::new(
                                    ProviderErrorKind::Unsupported(UnsupportedReason::Offline),
                                    format!(
                                        "the managed Chromium did not start: {e}; install Chromium or set \
                                         chromium_path (or remote_cdp) in the browserd config"
                                    ),
                                )
                            },
                        )?;
                    (provider, Some(browser))
                }
                BrowserTarget::Remote(url) => {
                    let adopt =
                        previous.and_then(|p| p.chromium.as_ref()).map(|c| c.known_targets()).unwrap_or_default();
                    let provider = ChromiumProvider::connect_remote_with(
                        url,
                        self.connect_options(),
                        &adopt,
                        self.alloc.clone(),
                        self.config.clone(),
                    )
                    .await?;
                    (provider, None)
                }
            };
            let chromium = Some(provider.clone());
            let provider: Arc<dyn Provider> = provider;
            (provider, None, browser, chromium)
        };
        let mut rx = provider.events();
        let tx = self.events.clone();
        let lost = self.lost.clone();
        let forward = tokio::spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(ev) => {
                        let is_loss = matches!(ev, ProviderEvent::ConnectionLost { .. });
                        let _ = tx.send(ev);
                        if is_loss {
                            lost.notify_one();
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let _ = tx.send(ProviderEvent::ResyncRequired);
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                }
            }
        });
        Ok(Launched { provider, chromium, extension, browser: Mutex::new(browser), forward })
    }

    /// Brings a lost browser back as soon as the loss is known, with backoff between failed attempts, until it is back
    /// or `cancel` fires. The broker runs one for its lifetime.
    pub async fn supervise(self: Arc<Self>, cancel: CancellationToken) {
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = self.lost.notified() => {}
            }
            loop {
                let Some(current) = self.current() else { break };
                if current.lost().is_none() {
                    break;
                }
                drop(current);
                let wait = lock(&self.reconnect).next_attempt.map(|at| at.saturating_duration_since(Instant::now()));
                if let Some(wait) = wait.filter(|w| !w.is_zero()) {
                    tokio::select! {
                        () = cancel.cancelled() => return,
                        () = tokio::time::sleep(wait) => {}
                    }
                }
                let _ = self.inner().await;
            }
        }
    }

    fn started(&self) -> Result<Arc<dyn Provider>, ProviderError> {
        self.current().map(|l| l.provider.clone()).ok_or_else(|| {
            ProviderError::new(ProviderErrorKind::ConnectionLost, "the browser is not started yet; connect first")
        })
    }

    /// Shuts the managed browser down (a remote endpoint is only disconnected). Idempotent.
    pub async fn shutdown(&self) {
        let Some(launched) = self.current() else { return };
        launched.forward.abort();
        let browser = lock(&launched.browser).take();
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
        if let Some(l) = self.current() {
            return l.provider.kind();
        }
        match self.choice {
            BrowserChoice::Extension => ProviderKind::Extension,
            BrowserChoice::Auto if self.paired_extension().is_some() => ProviderKind::Extension,
            _ => self.target.kind(),
        }
    }

    fn capabilities(&self) -> CapabilityMatrix {
        match self.current() {
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

    fn void_refs(&self, tab: TabHandle) {
        if let Some(l) = self.current() {
            l.provider.void_refs(tab);
        }
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

    async fn describe_target(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &ActParams,
    ) -> Result<Option<browserd_core::provider::TargetDescription>, ProviderError> {
        self.started()?.describe_target(ctx, tab, params).await
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
