//! The broker's managed browsers: the default one (`b1`, [`LazyChromium`], the configuration's settings) and one more
//! for each distinct set of browser-wide settings sessions ask for (`browserd mcp --headed`, `--executable-path`,
//! `--user-data-dir`), shared by the sessions asking the same; the one owner of which session runs on which browser.
//!
//! - **Choosing** ([`Browsers::join`], at `session.open`): settings the default browser has (or none) are the default
//!   browser's; others get the browser already running them or a new one, launched there and then (a launch that
//!   fails is refused with `OFFLINE` and leaves nothing behind). At most `max_browsers` at once, the default one
//!   included: one more is `TOO_MANY_BROWSERS` naming the key. A profile directory (`--user-data-dir`) is one
//!   browser's: asked with other settings than the browser that has it, or locked by a process outside the broker, it
//!   is `PROFILE_IN_USE`. An executable path that is not an executable file is `INVALID_PARAMS`.
//! - **Routing** (the [`Provider`] implementation the runtime drives): a new tab opens in its session's browser, every
//!   call on a tab goes to the browser that has it, the tab list is every browser's. Handles come from one allocator,
//!   so a tab handle names one tab of one browser, and every connection has its own ref tag.
//! - **Ending** ([`Browsers::end_session`]): an isolated session's browser context goes with it; the last session of a
//!   browser other than the default one closes that browser (its process and windows). The default browser stays as
//!   it is (it goes with the broker).
//!
//! A browser other than the default one that is lost (killed, crashed) is not brought back by a supervisor: its tabs
//! leave the tab list at once (`ResyncRequired`), and the next tab its sessions open relaunches it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use browserd_cdp::{LaunchOptions, ManagedBrowser};
use browserd_chromium::ChromiumProvider;
use browserd_core::provider::{
    BrowserInfo, CapabilityMatrix, CreateTab, OpContext, Provider, ProviderError, ProviderErrorKind, ProviderEvent,
    ProviderKind, SessionKey, TabHandle, TabInfo, UnsupportedReason,
};
use browserd_protocol::browser_settings::{BrowserSettings, BrowserSettingsStatus, Viewport};
use browserd_protocol::{ActParams, ActionResult, ErrorCode, ErrorData, Observation, ObserveParams};
use tokio::sync::broadcast;

use crate::lazy::LazyChromium;

/// The id `status` gives the default browser.
pub const DEFAULT_BROWSER: &str = "b1";

/// The browser-wide settings of one managed browser (`None` profile: a throwaway one).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Wide {
    headless: bool,
    executable: Option<String>,
    user_data_dir: Option<String>,
}

impl Wide {
    fn of(opts: &LaunchOptions) -> Wide {
        let e = crate::browser_settings::effective(opts);
        Wide { headless: opts.headless, executable: e.executable_path, user_data_dir: e.user_data_dir }
    }

    fn wire(&self) -> BrowserSettings {
        BrowserSettings {
            headless: Some(self.headless),
            executable_path: self.executable.clone(),
            user_data_dir: self.user_data_dir.clone(),
            ..BrowserSettings::default()
        }
    }

    /// The flags that ask for these settings, for messages (`--headed --user-data-dir /p`).
    fn flags(&self) -> String {
        let mut out = vec![if self.headless { "--headless".to_owned() } else { "--headed".to_owned() }];
        if let Some(exe) = &self.executable {
            out.push(format!("--executable-path {exe}"));
        }
        out.push(match &self.user_data_dir {
            Some(dir) => format!("--user-data-dir {dir}"),
            None => "a throwaway profile".to_owned(),
        });
        out.join(" ")
    }
}

/// A running managed browser other than the default one.
struct Running {
    provider: Arc<ChromiumProvider>,
    browser: Mutex<Option<ManagedBrowser>>,
    pid: Option<u32>,
    forward: tokio::task::JoinHandle<()>,
}

impl Running {
    fn lost(&self) -> bool {
        self.provider.connection_closed().is_some()
    }

    async fn shutdown(&self) {
        self.forward.abort();
        let browser = lock(&self.browser).take();
        if let Some(browser) = browser {
            match tokio::time::timeout(Duration::from_secs(10), browser.shutdown()).await {
                Ok(Ok(_)) => tracing::info!(pid = ?self.pid, "a managed browser of its own shut down"),
                Ok(Err(e)) => tracing::warn!(%e, "a managed browser's shutdown reported an error"),
                Err(_) => tracing::warn!("a managed browser did not shut down within 10 s"),
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.forward.abort();
    }
}

/// A managed browser other than the default one.
struct Extra {
    wide: Wide,
    opts: LaunchOptions,
    set_by: String,
    sessions: BTreeSet<SessionKey>,
    running: Option<Arc<Running>>,
}

#[derive(Default)]
struct State {
    extras: BTreeMap<u32, Extra>,
    next: u32,
    /// The sessions on a browser other than the default one.
    sessions: HashMap<SessionKey, u32>,
}

/// What `status` shows of a managed browser other than the default one.
#[derive(Debug, Clone)]
pub struct ExtraStatus {
    /// `b2`, `b3`, …
    pub browser: String,
    /// Its browser-wide settings.
    pub settings: BrowserSettings,
    /// Its process id, while it runs.
    pub pid: Option<u32>,
    /// The sessions on it.
    pub sessions: Vec<SessionKey>,
    /// Whether it runs (not lost).
    pub running: bool,
    /// Its capabilities, while it runs.
    pub capabilities: Option<CapabilityMatrix>,
}

/// The broker's managed browsers (see the module doc). It is the provider the runtime drives.
pub struct Browsers {
    default: Arc<LazyChromium>,
    max: usize,
    state: Mutex<State>,
    /// Held while a browser is chosen and launched, so two sessions asking the same settings share one browser.
    launching: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Browsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Browsers").field("default", &self.default).field("max", &self.max).finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn id_name(id: u32) -> String {
    format!("b{id}")
}

fn profile_in_use(message: String) -> ErrorData {
    ErrorData::new(ErrorCode::ProfileInUse, message).with_next_step(
        "give this MCP entry another --user-data-dir (or none: a throwaway profile), or the same browser flags as the \
         browser that has the directory, or end that browser first",
    )
}

impl Browsers {
    /// The broker's browsers: `default` and at most `max_browsers - 1` more.
    #[must_use]
    pub fn new(default: Arc<LazyChromium>, max_browsers: u32) -> Self {
        Self {
            default,
            max: usize::try_from(max_browsers.max(1)).unwrap_or(usize::MAX),
            state: Mutex::new(State { next: 2, ..State::default() }),
            launching: tokio::sync::Mutex::new(()),
        }
    }

    /// The default browser.
    #[must_use]
    pub fn default_browser(&self) -> &Arc<LazyChromium> {
        &self.default
    }

    /// The browser-wide settings `asked` means, when they are not the default browser's (`None`: the default one).
    fn wanted(&self, asked: &BrowserSettings) -> Result<Option<(Wide, LaunchOptions)>, ErrorData> {
        if asked.headless.is_none() && asked.executable_path.is_none() && asked.user_data_dir.is_none() {
            return Ok(None);
        }
        let Some(base) = self.default.managed_options() else { return Ok(None) };
        let base_wide = Wide::of(base);
        let headless = asked.headless.unwrap_or(base.headless);
        let executable = asked.executable_path.clone().or_else(|| base_wide.executable.clone());
        let same_browser = headless == base_wide.headless && executable == base_wide.executable;
        if same_browser && (asked.user_data_dir.is_none() || asked.user_data_dir == base_wide.user_data_dir) {
            return Ok(None);
        }
        let mut opts = base.clone();
        opts.headless = headless;
        opts.executable = executable.as_ref().map(PathBuf::from);
        // A browser of its own never takes the default browser's profile: the one asked for, or a throwaway one.
        opts.user_data_dir = asked.user_data_dir.as_ref().map(PathBuf::from);
        let wide = Wide { headless, executable, user_data_dir: asked.user_data_dir.clone() };
        Ok(Some((wide, opts)))
    }

    /// Chooses the browser for a session (`name` in messages) asking for `asked`, launching a new one when no browser
    /// runs its settings: `Ok(None)` the default browser, `Ok(Some(id))` a browser of its own. A refusal changes
    /// nothing.
    ///
    /// # Errors
    /// `UNSUPPORTED_BY_IMPLEMENTATION` (a remote or extension browser), `INVALID_PARAMS` (an executable that is not
    /// one), `PROFILE_IN_USE`, `TOO_MANY_BROWSERS`, `OFFLINE` (the launch failed).
    pub async fn join(&self, name: &str, asked: &BrowserSettings) -> Result<Option<u32>, ErrorData> {
        self.default.refuse_unmanaged(asked)?;
        let Some((wide, opts)) = self.wanted(asked)? else {
            return Ok(None);
        };
        let _launching = self.launching.lock().await;
        {
            let state = lock(&self.state);
            if let Some((id, _)) = state.extras.iter().find(|(_, e)| e.wide == wide) {
                return Ok(Some(*id));
            }
        }
        self.check_new(&wide)?;
        let running = self.launch(&opts).await.map_err(|e| {
            ErrorData::new(
                ErrorCode::Offline,
                format!("the browser this session asks for ({}) did not start: {e}; nothing was changed", wide.flags()),
            )
            .with_next_step(
                "fix the browser flags of this MCP entry (--executable-path must name a Chromium, Chrome or Edge; \
                 --headed needs a display: DISPLAY), or drop them to use the broker's default browser",
            )
        })?;
        let mut state = lock(&self.state);
        let id = state.next;
        state.next += 1;
        tracing::info!(browser = %id_name(id), settings = %wide.flags(), by = name, "a managed browser of its own started");
        state.extras.insert(
            id,
            Extra { wide, opts, set_by: format!("session {name}"), sessions: BTreeSet::new(), running: Some(running) },
        );
        Ok(Some(id))
    }

    /// Refuses a new browser with `wide` when its executable is not one, its profile is another browser's, or the cap
    /// is reached.
    fn check_new(&self, wide: &Wide) -> Result<(), ErrorData> {
        if let Some(exe) = &wide.executable
            && !browserd_cdp::is_executable(Path::new(exe))
        {
            return Err(ErrorData::new(
                ErrorCode::InvalidParams,
                format!("--executable-path {exe}: no such executable file; nothing was changed"),
            )
            .with_next_step("give --executable-path the absolute path of a Chromium, Chrome or Edge executable"));
        }
        if let Some(dir) = &wide.user_data_dir {
            if let Some(base) = self.default.managed_options()
                && Wide::of(base).user_data_dir.as_deref() == Some(dir.as_str())
            {
                return Err(profile_in_use(format!(
                    "--user-data-dir {dir} is the profile of the broker's default browser {DEFAULT_BROWSER} ({}); a \
                     profile is one browser's, so it cannot also run {}",
                    Wide::of(base).flags(),
                    wide.flags()
                )));
            }
            let state = lock(&self.state);
            if let Some((id, other)) =
                state.extras.iter().find(|(_, e)| e.wide.user_data_dir.as_deref() == Some(dir.as_str()))
            {
                return Err(profile_in_use(format!(
                    "--user-data-dir {dir} is the profile of browser {} ({}, asked by {}); a profile is one \
                     browser's, so it cannot also run {}",
                    id_name(*id),
                    other.wide.flags(),
                    other.set_by,
                    wide.flags()
                )));
            }
            drop(state);
            if let Some(pid) = crate::claim::profile_holder(Path::new(dir)) {
                return Err(profile_in_use(format!(
                    "--user-data-dir {dir} is locked by another browser (process {pid}, its SingletonLock); nothing \
                     was changed"
                )));
            }
        }
        let running = 1 + lock(&self.state).extras.len();
        if running >= self.max {
            return Err(ErrorData::new(
                ErrorCode::TooManyBrowsers,
                format!(
                    "this session asks for {}, which no running browser has, and the broker already runs {running} \
                     managed browsers (max_browsers = {}); nothing was changed",
                    wide.flags(),
                    self.max
                ),
            )
            .with_next_step(
                "end a session that runs on another browser, drop the browser flags from this MCP entry, or raise \
                 max_browsers in the browserd config (`browserd config`)",
            ));
        }
        Ok(())
    }

    async fn launch(&self, opts: &LaunchOptions) -> Result<Arc<Running>, String> {
        let (provider, browser) =
            ChromiumProvider::launch_managed(opts.clone(), self.default.alloc(), self.default.chromium_config())
                .await
                .map_err(|e| e.to_string())?;
        let pid = browser.pid();
        let mut rx = provider.events();
        let tx = self.default.events_sender();
        // Its events join the default browser's; a loss only re-reads the tab list (its tabs are gone), the bridge
        // is the default browser's.
        let forward = tokio::spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(ProviderEvent::ConnectionLost { .. }) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        let _ = tx.send(ProviderEvent::ResyncRequired);
                    }
                    Ok(ProviderEvent::ConnectionRestored { .. }) => {}
                    Ok(ev) => {
                        let _ = tx.send(ev);
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                }
            }
        });
        Ok(Arc::new(Running { provider, browser: Mutex::new(Some(browser)), pid, forward }))
    }

    /// Records that `session` runs on `browser` (from [`Self::join`]); `None` is the default browser.
    pub fn bind(&self, session: &SessionKey, browser: Option<u32>) {
        let mut state = lock(&self.state);
        if let Some(old) = state.sessions.remove(session)
            && let Some(e) = state.extras.get_mut(&old)
        {
            e.sessions.remove(session);
        }
        if let Some(id) = browser
            && let Some(e) = state.extras.get_mut(&id)
        {
            e.sessions.insert(session.clone());
            state.sessions.insert(session.clone(), id);
        }
    }

    /// The browser `session` runs on (`None`: the default one).
    #[must_use]
    pub fn browser_of(&self, session: &SessionKey) -> Option<u32> {
        lock(&self.state).sessions.get(session).copied()
    }

    /// Closes `browser` when no session runs on it (a session whose open failed after [`Self::join`]).
    pub async fn discard_unused(&self, browser: Option<u32>) {
        let Some(id) = browser else { return };
        let gone = {
            let mut state = lock(&self.state);
            match state.extras.get(&id) {
                Some(e) if e.sessions.is_empty() => state.extras.remove(&id),
                _ => None,
            }
        };
        if let Some(running) = gone.and_then(|e| e.running) {
            running.shutdown().await;
        }
    }

    /// The session ended: its own settings are forgotten, its isolated browser context (if it had one) is disposed
    /// with everything in it, and a browser other than the default one whose last session this was is closed.
    pub async fn end_session(&self, session: &SessionKey) {
        let had = self.default.session_tabs().remove(session);
        let (chromium, closing) = {
            let mut state = lock(&self.state);
            match state.sessions.remove(session) {
                Some(id) => {
                    let extra = state.extras.get_mut(&id);
                    let chromium = extra.as_ref().and_then(|e| e.running.as_ref()).map(|r| r.provider.clone());
                    let last = extra.is_some_and(|e| {
                        e.sessions.remove(session);
                        e.sessions.is_empty()
                    });
                    let closing = if last { state.extras.remove(&id).map(|e| (id, e)) } else { None };
                    (chromium, closing)
                }
                None => (self.default.chromium(), None),
            }
        };
        if had.isolated
            && closing.is_none()
            && let Some(chromium) = chromium
        {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            match chromium.end_session(session, deadline).await {
                Ok(disposed) => tracing::debug!(session = %session.0, disposed, "the isolated session's context ended"),
                Err(e) => {
                    tracing::warn!(session = %session.0, error = %e.message, "disposing a browser context failed")
                }
            }
        }
        if let Some((id, extra)) = closing {
            tracing::info!(browser = %id_name(id), "the last session of a browser of its own ended; closing it");
            if let Some(running) = extra.running {
                running.shutdown().await;
            }
            // Whatever else it showed (a tab the user opened in its window) is gone with it.
            let _ = self.default.events_sender().send(ProviderEvent::ResyncRequired);
        }
    }

    /// Shuts every browser down (the broker exits).
    pub async fn shutdown(&self) {
        let extras: Vec<Arc<Running>> =
            std::mem::take(&mut lock(&self.state).extras).into_values().filter_map(|e| e.running).collect();
        for running in extras {
            running.shutdown().await;
        }
        self.default.shutdown().await;
    }

    /// Whether any browser has started.
    #[must_use]
    pub fn is_started(&self) -> bool {
        self.default.is_started() || lock(&self.state).extras.values().any(|e| e.running.is_some())
    }

    /// The browsers other than the default one, for `status`.
    #[must_use]
    pub fn extras(&self) -> Vec<ExtraStatus> {
        let state = lock(&self.state);
        state
            .extras
            .iter()
            .map(|(id, e)| {
                let live = e.running.as_ref().filter(|r| !r.lost());
                ExtraStatus {
                    browser: id_name(*id),
                    settings: e.wide.wire(),
                    pid: live.and_then(|r| r.pid),
                    sessions: e.sessions.iter().cloned().collect(),
                    running: live.is_some(),
                    capabilities: live.map(|r| r.provider.capabilities()),
                }
            })
            .collect()
    }

    /// What `browser_status` shows: `requested` by the session, the settings in force on the browser it runs on, who
    /// chose them, and which browser that is.
    #[must_use]
    pub fn settings_status(&self, session: &SessionKey, requested: Option<BrowserSettings>) -> BrowserSettingsStatus {
        let own = {
            let state = lock(&self.state);
            state
                .sessions
                .get(session)
                .and_then(|id| state.extras.get(id).map(|e| (*id, e.wide.wire(), e.set_by.clone())))
        };
        let (browser, effective, set_by) = match own {
            Some((id, wide, set_by)) => (id_name(id), Some(wide), set_by),
            None => {
                let (effective, set_by) = match self.default.managed_options() {
                    Some(opts) => (Some(Wide::of(opts).wire()), "config".to_owned()),
                    None if self.default.extension_in_use().is_some() => (None, "extension".to_owned()),
                    None => (None, "remote endpoint".to_owned()),
                };
                (DEFAULT_BROWSER.to_owned(), effective, set_by)
            }
        };
        let tabs = self.default.session_tabs().get(session);
        let effective = effective.map(|mut e| {
            e.isolated = Some(tabs.isolated);
            e.viewport = tabs.viewport.map(|(width, height)| Viewport { width, height });
            e
        });
        BrowserSettingsStatus { requested, effective, set_by, browser: Some(browser) }
    }

    /// The browser's own target id of `tab`, whichever browser has it.
    #[must_use]
    pub fn target_id(&self, tab: TabHandle) -> Option<String> {
        self.extra_of_tab(tab).and_then(|c| c.target_id(tab)).or_else(|| self.default.target_id(tab))
    }

    fn running_extras(&self) -> Vec<Arc<Running>> {
        lock(&self.state).extras.values().filter_map(|e| e.running.clone()).filter(|r| !r.lost()).collect()
    }

    fn extra_of_tab(&self, tab: TabHandle) -> Option<Arc<ChromiumProvider>> {
        self.running_extras().into_iter().map(|r| r.provider.clone()).find(|c| c.target_id(tab).is_some())
    }

    /// The provider that has `tab`.
    fn for_tab(&self, tab: TabHandle) -> Arc<dyn Provider> {
        match self.extra_of_tab(tab) {
            Some(c) => c,
            None => self.default.clone(),
        }
    }

    /// The running browser of its own `id`, relaunched when it was lost.
    async fn ensure(&self, id: u32) -> Result<Arc<ChromiumProvider>, ProviderError> {
        let live = |me: &Self| {
            let state = lock(&me.state);
            let e = state.extras.get(&id)?;
            Some((e.running.clone().filter(|r| !r.lost()), e.opts.clone()))
        };
        let gone = || ProviderError::new(ProviderErrorKind::ConnectionLost, "this session's browser has closed");
        let (running, _) = live(self).ok_or_else(gone)?;
        if let Some(r) = running {
            return Ok(r.provider.clone());
        }
        let _launching = self.launching.lock().await;
        let (running, opts) = live(self).ok_or_else(gone)?;
        if let Some(r) = running {
            return Ok(r.provider.clone());
        }
        if crate::sessions::launch_forbidden() {
            return Err(ProviderError::new(ProviderErrorKind::ConnectionLost, "this session's browser is not running"));
        }
        let old = lock(&self.state).extras.get_mut(&id).and_then(|e| e.running.take());
        if let Some(old) = old {
            old.shutdown().await;
        }
        let running = self.launch(&opts).await.map_err(|e| {
            ProviderError::new(
                ProviderErrorKind::Unsupported(UnsupportedReason::Offline),
                format!("this session's browser was lost and did not start again: {e}"),
            )
        })?;
        let provider = running.provider.clone();
        match lock(&self.state).extras.get_mut(&id) {
            Some(e) => e.running = Some(running),
            None => return Err(gone()),
        }
        Ok(provider)
    }

    /// The provider new tabs of `session` open in (its browser, started if need be).
    async fn for_session(&self, ctx: &OpContext) -> Result<Arc<dyn Provider>, ProviderError> {
        match self.browser_of(&ctx.session) {
            Some(id) => Ok(self.ensure(id).await?),
            None => {
                if !self.default.is_started() {
                    // The bridge came up on another browser: the default one starts now, and its tabs join the list.
                    self.default.connect(ctx).await?;
                    let _ = self.default.events_sender().send(ProviderEvent::ResyncRequired);
                }
                Ok(self.default.clone())
            }
        }
    }
}

#[async_trait]
impl Provider for Browsers {
    fn kind(&self) -> ProviderKind {
        self.default.kind()
    }

    fn capabilities(&self) -> CapabilityMatrix {
        if !self.default.is_started()
            && let Some(r) = self.running_extras().first()
        {
            return r.provider.capabilities();
        }
        self.default.capabilities()
    }

    fn events(&self) -> broadcast::Receiver<ProviderEvent> {
        self.default.events()
    }

    fn void_refs(&self, tab: TabHandle) {
        self.for_tab(tab).void_refs(tab);
    }

    async fn connect(&self, ctx: &OpContext) -> Result<BrowserInfo, ProviderError> {
        match self.browser_of(&ctx.session) {
            Some(id) => self.ensure(id).await?.connect(ctx).await,
            None => self.default.connect(ctx).await,
        }
    }

    async fn list_tabs(&self, ctx: &OpContext) -> Result<Vec<TabInfo>, ProviderError> {
        let extras = self.running_extras();
        let mut tabs = if self.default.is_started() || extras.is_empty() {
            self.default.list_tabs(ctx).await?
        } else {
            Vec::new()
        };
        for r in extras {
            match r.provider.list_tabs(ctx).await {
                Ok(more) => tabs.extend(more),
                Err(e) => tracing::warn!(error = %e.message, "listing a browser's tabs failed"),
            }
        }
        Ok(tabs)
    }

    async fn create_tab(&self, ctx: &OpContext, req: CreateTab) -> Result<TabInfo, ProviderError> {
        self.for_session(ctx).await?.create_tab(ctx, req).await
    }

    async fn close_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.for_tab(tab).close_tab(ctx, tab).await
    }

    async fn activate_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.for_tab(tab).activate_tab(ctx, tab).await
    }

    async fn claim_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.for_tab(tab).claim_tab(ctx, tab).await
    }

    async fn release_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.for_tab(tab).release_tab(ctx, tab).await
    }

    async fn attach_debugger(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.for_tab(tab).attach_debugger(ctx, tab).await
    }

    async fn detach_debugger(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.for_tab(tab).detach_debugger(ctx, tab).await
    }

    async fn observe(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &ObserveParams,
    ) -> Result<Observation, ProviderError> {
        self.for_tab(tab).observe(ctx, tab, params).await
    }

    async fn act(&self, ctx: &OpContext, tab: TabHandle, params: &ActParams) -> Result<ActionResult, ProviderError> {
        self.for_tab(tab).act(ctx, tab, params).await
    }

    async fn describe_target(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &ActParams,
    ) -> Result<Option<browserd_core::provider::TargetDescription>, ProviderError> {
        self.for_tab(tab).describe_target(ctx, tab, params).await
    }

    async fn evaluate(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &browserd_protocol::tools::EvaluateParams,
    ) -> Result<browserd_protocol::tools::EvaluateResult, ProviderError> {
        self.for_tab(tab).evaluate(ctx, tab, params).await
    }

    async fn console(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &browserd_protocol::tools::ConsoleParams,
    ) -> Result<browserd_protocol::tools::ConsoleResult, ProviderError> {
        self.for_tab(tab).console(ctx, tab, params).await
    }

    async fn network(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &browserd_protocol::tools::NetworkParams,
    ) -> Result<browserd_protocol::tools::NetworkResult, ProviderError> {
        self.for_tab(tab).network(ctx, tab, params).await
    }

    async fn raw_protocol(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &browserd_protocol::tools::RawProtocolParams,
    ) -> Result<browserd_protocol::tools::RawProtocolResult, ProviderError> {
        self.for_tab(tab).raw_protocol(ctx, tab, params).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BrowserChoice;
    use crate::lazy::BrowserTarget;

    fn browsers(max: u32) -> Browsers {
        let base = LaunchOptions {
            executable: Some("/bin/sh".into()),
            user_data_dir: Some("/state/profile".into()),
            ..LaunchOptions::default()
        };
        let lazy = LazyChromium::with_choice(
            BrowserTarget::Managed(Box::new(base)),
            browserd_chromium::ChromiumConfig::default(),
            BrowserChoice::Managed,
        );
        Browsers::new(Arc::new(lazy), max)
    }

    #[test]
    fn settings_the_default_browser_has_are_its_and_others_want_a_browser_of_their_own() {
        let b = browsers(4);
        let headless = BrowserSettings { headless: Some(true), ..Default::default() };
        assert!(b.wanted(&headless).unwrap().is_none());
        let own =
            BrowserSettings { isolated: Some(true), viewport: Viewport::parse("800x600").ok(), ..Default::default() };
        assert!(b.wanted(&own).unwrap().is_none(), "the session's own settings never need a browser");
        let same_profile = BrowserSettings { user_data_dir: Some("/state/profile".into()), ..Default::default() };
        assert!(b.wanted(&same_profile).unwrap().is_none());
        let (wide, opts) = b.wanted(&BrowserSettings { headless: Some(false), ..Default::default() }).unwrap().unwrap();
        assert_eq!(wide, Wide { headless: false, executable: Some("/bin/sh".into()), user_data_dir: None });
        assert_eq!(opts.user_data_dir, None, "never the default browser's profile: a throwaway one");
    }

    #[test]
    fn a_new_browser_is_refused_over_the_cap_for_a_taken_profile_or_a_missing_executable() {
        let one = browsers(1);
        let headed = Wide { headless: false, executable: Some("/bin/sh".into()), user_data_dir: None };
        let e = one.check_new(&headed).unwrap_err();
        assert_eq!(e.code, ErrorCode::TooManyBrowsers);
        assert!(e.message.contains("max_browsers = 1") && e.next_step.contains("max_browsers"), "{e:?}");
        let b = browsers(4);
        b.check_new(&headed).unwrap();
        let taken = Wide { user_data_dir: Some("/state/profile".into()), ..headed.clone() };
        let e = b.check_new(&taken).unwrap_err();
        assert_eq!(e.code, ErrorCode::ProfileInUse);
        assert!(e.message.contains("default browser b1"), "{}", e.message);
        let missing = Wide { executable: Some("/no/such/chromium".into()), ..headed };
        let e = b.check_new(&missing).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidParams);
        assert!(e.message.contains("--executable-path /no/such/chromium"), "{}", e.message);
    }
}
