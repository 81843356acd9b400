//! A page-level test double over the fake provider, for handoff waits and popups: the user navigates a tab or
//! changes its text, a page opens a popup (during an agent action, or on its own), and the events say so.
//!
//! Calls go to the wrapped [`FakeProvider`] (its ownership checks and violation log stay in force); this wrapper
//! overrides URLs and observation content, and sends the events on its own channel.

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use browserd_core::provider::{
    BrowserInfo, CapabilityMatrix, CreateTab, OpContext, Provider, ProviderError, ProviderEvent, ProviderKind,
    SessionKey, TabHandle, TabInfo,
};
use browserd_protocol::{ActParams, ActionResult, Observation, ObserveParams};
use browserd_test_support::fake_provider::FakeProvider;
use tokio::sync::broadcast;

#[derive(Debug, Default, Clone)]
struct Page {
    url: Option<String>,
    content: Option<String>,
    opener: Option<TabHandle>,
}

/// See the module docs.
pub struct PageFake {
    pub fake: Arc<FakeProvider>,
    events: broadcast::Sender<ProviderEvent>,
    pages: Mutex<BTreeMap<TabHandle, Page>>,
    /// The next action opens a popup at this URL.
    popup_on_act: Mutex<Option<String>>,
    kind: ProviderKind,
}

impl PageFake {
    pub fn new() -> Self {
        Self::with_kind(ProviderKind::Fake)
    }

    /// A double that reports another provider kind (e.g. the extension relay).
    pub fn with_kind(kind: ProviderKind) -> Self {
        let (events, _) = broadcast::channel(1024);
        Self {
            fake: Arc::new(FakeProvider::new()),
            events,
            pages: Mutex::new(BTreeMap::new()),
            popup_on_act: Mutex::new(None),
            kind,
        }
    }

    fn page(&self, tab: TabHandle) -> Page {
        self.pages.lock().unwrap().get(&tab).cloned().unwrap_or_default()
    }

    fn info(&self, mut info: TabInfo) -> TabInfo {
        let page = self.page(info.tab);
        if let Some(url) = page.url {
            info.url = url;
        }
        if page.opener.is_some() {
            info.opener = page.opener;
        }
        info
    }

    fn current(&self, tab: TabHandle) -> TabInfo {
        self.info(self.fake.tab(tab).expect("a tab of the fake").info)
    }

    /// The user navigates `tab` (emits `TabUpdated`).
    pub fn navigate(&self, tab: TabHandle, url: &str) {
        self.pages.lock().unwrap().entry(tab).or_default().url = Some(url.to_owned());
        let _ = self.events.send(ProviderEvent::TabUpdated(self.current(tab)));
    }

    /// The page's observation content changes (no event, as with a DOM change).
    pub fn set_content(&self, tab: TabHandle, content: &str) {
        self.pages.lock().unwrap().entry(tab).or_default().content = Some(content.to_owned());
    }

    /// The user closes `tab` (emits `TabClosed { by_user: true }`).
    pub fn user_close(&self, tab: TabHandle) {
        self.fake.user_close_tab(tab);
        let _ = self.events.send(ProviderEvent::TabClosed { tab, by_user: true });
    }

    /// The next action opens a popup (window.open, `target=_blank`) at `url`.
    pub fn popup_on_next_act(&self, url: &str) {
        *self.popup_on_act.lock().unwrap() = Some(url.to_owned());
    }

    /// The user opens a tab (emits `TabCreated`, no opener).
    pub fn user_open(&self, url: &str) -> TabHandle {
        let tab = self.fake.seed_user_tab(url, None);
        let _ = self.events.send(ProviderEvent::TabCreated(self.current(tab)));
        tab
    }

    /// `opener`'s page opens a popup on its own (a timer, the user clicking): a user tab with an opener.
    pub fn page_opens_popup(&self, opener: TabHandle, url: &str) -> TabHandle {
        let tab = self.fake.seed_user_tab(url, None);
        self.pages.lock().unwrap().entry(tab).or_default().opener = Some(opener);
        let _ = self.events.send(ProviderEvent::TabCreated(self.current(tab)));
        tab
    }
}

#[async_trait]
impl Provider for PageFake {
    fn kind(&self) -> ProviderKind {
        self.kind
    }

    fn capabilities(&self) -> CapabilityMatrix {
        self.fake.capabilities()
    }

    fn events(&self) -> broadcast::Receiver<ProviderEvent> {
        self.events.subscribe()
    }

    async fn connect(&self, ctx: &OpContext) -> Result<BrowserInfo, ProviderError> {
        self.fake.connect(ctx).await
    }

    async fn list_tabs(&self, ctx: &OpContext) -> Result<Vec<TabInfo>, ProviderError> {
        Ok(self.fake.list_tabs(ctx).await?.into_iter().map(|i| self.info(i)).collect())
    }

    async fn create_tab(&self, ctx: &OpContext, req: CreateTab) -> Result<TabInfo, ProviderError> {
        self.fake.create_tab(ctx, req).await
    }

    async fn close_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.fake.close_tab(ctx, tab).await
    }

    async fn activate_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.fake.activate_tab(ctx, tab).await
    }

    async fn claim_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.fake.claim_tab(ctx, tab).await
    }

    async fn release_tab(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.fake.release_tab(ctx, tab).await
    }

    async fn attach_debugger(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.fake.attach_debugger(ctx, tab).await
    }

    async fn detach_debugger(&self, ctx: &OpContext, tab: TabHandle) -> Result<(), ProviderError> {
        self.fake.detach_debugger(ctx, tab).await
    }

    async fn observe(
        &self,
        ctx: &OpContext,
        tab: TabHandle,
        params: &ObserveParams,
    ) -> Result<Observation, ProviderError> {
        let mut o = self.fake.observe(ctx, tab, params).await?;
        let page = self.page(tab);
        if let Some(url) = page.url {
            o.url = url;
        }
        if let Some(content) = page.content {
            o.untrusted_content = content;
        }
        Ok(o)
    }

    async fn act(&self, ctx: &OpContext, tab: TabHandle, params: &ActParams) -> Result<ActionResult, ProviderError> {
        let mut result = self.fake.act(ctx, tab, params).await?;
        let popup_url = self.popup_on_act.lock().unwrap().take();
        if let Some(url) = popup_url {
            // The page opened it: a tab that is no one's in the browser's records (created and released by a stand-in
            // session, so the fake does not count it as a tab the user opened).
            let page = OpContext::new(SessionKey("page".into()), ctx.timeout, "page-popup");
            let req = CreateTab { url, background: true, group_for: None };
            let popup = self.fake.create_tab(&page, req).await?.tab;
            self.fake.release_tab(&page, popup).await?;
            self.pages.lock().unwrap().entry(popup).or_default().opener = Some(tab);
            let _ = self.events.send(ProviderEvent::TabCreated(self.current(popup)));
            result.effects.tabs_opened.push(browserd_protocol::TabId(popup.0));
        }
        Ok(result)
    }
}
