//! The session registry: host session → broker session, the clients attached to each, re-attachment and the
//! disconnect grace period, the current tab, and the session methods (`session.open`, `session.close`,
//! `turn.begin`, `turn.end`, `broker.selectTab`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, MutexGuard};

use browserd_core::lifecycle::CloseReason as CoreClose;
use browserd_core::provider::{SessionKey, TabHandle};
use browserd_protocol::lifecycle::{
    CleanupResult, CloseReason, HostKind, SessionCloseParams, SessionOpenParams, SessionOpenResult, ToolActivation,
    ToolSet, TurnBeginParams, TurnBeginResult, TurnEndParams, TurnEndResult,
};
use browserd_protocol::{ErrorCode, ErrorData, SessionId};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::dispatch::err;
use crate::server::{Broker, SelectTabParams};
use crate::to_proto;

tokio::task_local! {
    /// Set while a call must not start the browser (turn end or close before the browser ever started).
    static NO_LAUNCH: bool;
    /// The connection the current request came on (read by `context.reset {disconnectClient}`).
    pub(crate) static REQUEST_CONN: u64;
}

/// How many ended host turns each session remembers, so a late repeat of any of them stays a no-op.
const ENDED_TURNS_KEPT: usize = 64;

/// Whether the current task must not start the browser.
pub(crate) fn launch_forbidden() -> bool {
    NO_LAUNCH.try_with(|v| *v).unwrap_or(false)
}

/// One broker session: its host session, the connections attached to it and what it remembers between calls.
#[derive(Debug)]
pub(crate) struct SessionInfo {
    pub(crate) key: SessionKey,
    pub(crate) host: HostKind,
    pub(crate) host_session_id: String,
    pub(crate) label: Option<String>,
    pub(crate) attached: BTreeSet<u64>,
    pub(crate) grace: Option<CancellationToken>,
    pub(crate) current_tab: Option<TabHandle>,
    pub(crate) host_turn: Option<String>,
    /// The host turns already ended (host turn id or hook payload identity) and what their end answered, newest
    /// last; a repeated delivery of one of them answers the same and ends nothing.
    pub(crate) ended_turns: std::collections::VecDeque<(String, TurnEndResult)>,
    /// The session activated the advanced tier (policy allowed it); cleared when its tools are hidden.
    pub(crate) advanced: bool,
    /// Where its screenshots may go (`session.vision`).
    pub(crate) vision: browserd_protocol::VisionStatus,
    /// The browser settings the session asked for at `session.open` (`browser_status` shows them).
    pub(crate) browser: Option<browserd_protocol::browser_settings::BrowserSettings>,
}

/// The registry: sessions by id and by host session, and each connection's writer (for notifications).
#[derive(Debug, Default)]
pub(crate) struct Tables {
    pub(crate) by_host: HashMap<(HostKind, String), SessionId>,
    pub(crate) sessions: BTreeMap<SessionId, SessionInfo>,
    pub(crate) connections: HashMap<u64, mpsc::Sender<Value>>,
    /// Cancelling one closes that connection (after its current reply).
    pub(crate) closers: HashMap<u64, CancellationToken>,
    /// Connections to close once the reply being sent has gone out (`disconnectClient`).
    pub(crate) disconnect_after_reply: BTreeSet<u64>,
    pub(crate) next_session: u64,
}

/// The core close reason of a `session.close` reason.
fn core_close_reason(reason: CloseReason) -> CoreClose {
    match reason {
        CloseReason::HostExit => CoreClose::HostExit,
        CloseReason::SessionSwitch => CoreClose::SessionSwitch,
        CloseReason::Fork => CoreClose::Fork,
        CloseReason::PluginUnload => CoreClose::PluginUnload,
        CloseReason::AgentDisposed | CloseReason::ClientGone => CoreClose::AgentDisposed,
        CloseReason::User => CoreClose::SessionEnd,
    }
}

impl Broker {
    /// The registry (never held across an `.await`).
    pub(crate) fn tables(&self) -> MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The core key of the open session `id`.
    pub(crate) fn key_of(&self, id: &SessionId) -> Result<SessionKey, ErrorData> {
        let tables = self.tables();
        match tables.sessions.get(id) {
            Some(info) => Ok(info.key.clone()),
            None => Err(ErrorData::new(ErrorCode::UnknownSession, format!("no open session `{id}` in this broker"))),
        }
    }

    /// `session.open`: a new broker session for the host session, or re-attachment to its existing one.
    pub(crate) async fn session_open(
        &self,
        conn_id: u64,
        p: SessionOpenParams,
    ) -> Result<SessionOpenResult, ErrorData> {
        // The session's own origin lists are checked before anything changes.
        let sites = match &p.policy {
            Some(policy) => Some(crate::policy::sites::SessionSites::parse(policy).map_err(|e| {
                ErrorData::new(ErrorCode::InvalidParams, format!("the session's origin lists are invalid: {e}"))
                    .with_next_step("Fix the origin pattern in the browserd mcp flags (or the adapter's options).")
            })?),
            None => None,
        };
        let host_key = (p.host, p.host_session_id.clone());
        let asked = p.browser.clone().filter(|b| !b.is_empty());
        // The browser the session runs on: the default one, or one of its own for browser-wide settings the default
        // one does not have (launched here; a refusal changes nothing).
        let mut joined = None;
        if let Some(asked) = &asked {
            let known = self.tables().by_host.get(&host_key).cloned();
            let name = known
                .as_ref()
                .map_or_else(|| format!("{}:{}", p.host.as_str(), p.host_session_id), ToString::to_string);
            let Some(browsers) = &self.browsers else {
                return Err(ErrorData::new(
                    ErrorCode::UnsupportedByImplementation,
                    "this broker runs over a fixed browser connection: browser settings do not apply to it",
                ));
            };
            joined = browsers.join(&name, asked).await?;
            if let Some(id) = &known {
                let now = browsers.browser_of(&to_proto::session_key(id));
                if now != joined {
                    browsers.discard_unused(joined).await;
                    return Err(ErrorData::new(
                        ErrorCode::UnsupportedByImplementation,
                        format!(
                            "session {id} already runs on another browser than these settings ask for; a session keeps \
                             its browser"
                        ),
                    )
                    .with_next_step("end the session (restart this MCP server), then start it with the new flags"));
                }
            }
        }
        let existing = {
            let mut tables = self.tables();
            let found = tables.by_host.get(&host_key).cloned();
            if let Some(id) = &found
                && let Some(info) = tables.sessions.get_mut(id)
            {
                info.attached.insert(conn_id);
                if let Some(grace) = info.grace.take() {
                    grace.cancel();
                }
                if p.label.is_some() {
                    info.label.clone_from(&p.label);
                }
                if asked.is_some() {
                    info.browser.clone_from(&asked);
                }
            }
            found
        };
        let (id, reattached) = match existing {
            Some(id) => (id, true),
            None => {
                let id = {
                    let mut tables = self.tables();
                    tables.next_session += 1;
                    SessionId::new(format!("s{}", tables.next_session))
                };
                let key = to_proto::session_key(&id);
                if let Err(e) = self.runtime.open_session(&key).await {
                    if let Some(browsers) = &self.browsers {
                        browsers.discard_unused(joined).await;
                    }
                    return Err(err(&e));
                }
                let mut tables = self.tables();
                tables.by_host.insert(host_key, id.clone());
                tables.sessions.insert(
                    id.clone(),
                    SessionInfo {
                        key,
                        host: p.host,
                        host_session_id: p.host_session_id.clone(),
                        label: p.label.clone(),
                        attached: BTreeSet::from([conn_id]),
                        grace: None,
                        current_tab: None,
                        host_turn: None,
                        ended_turns: std::collections::VecDeque::new(),
                        advanced: false,
                        vision: browserd_protocol::VisionStatus::default_native(),
                        browser: asked.clone(),
                    },
                );
                (id, false)
            }
        };
        if let Some(sites) = sites {
            self.policy.set_session(&id, sites);
        }
        let key = to_proto::session_key(&id);
        // The session's own settings (--isolated, --viewport) apply to the tabs it opens or claims from now on, in
        // the browser chosen above.
        if let (Some(browsers), Some(asked)) = (&self.browsers, &asked) {
            browsers.bind(&key, joined);
            browsers.default_browser().set_session_tabs(&key, asked);
        }
        let status = self.runtime.status(&key).await.map_err(|e| err(&e))?;
        Ok(SessionOpenResult {
            session: id,
            reattached,
            tools: if status.tools_active { ToolActivation::ActiveSticky } else { ToolActivation::Inactive },
            turn: status.turn,
        })
    }

    /// Whether the browser has started (a broker over a given provider always has).
    pub(crate) fn browser_started(&self) -> bool {
        self.browsers.as_ref().is_none_or(|b| b.is_started())
    }

    /// Closes the session `id` through the core's disposal path, hides its tools and forgets it.
    pub(crate) async fn close_session_inner(
        &self,
        id: &SessionId,
        key: &SessionKey,
        reason: CoreClose,
    ) -> Result<CleanupResult, ErrorData> {
        let close = self.runtime.close_session(key, reason);
        let report = if self.browser_started() { close.await } else { NO_LAUNCH.scope(true, close).await };
        let report = report.map_err(|e| err(&e))?;
        let set = ToolSet {
            session: id.clone(),
            tools: ToolActivation::Inactive,
            advanced: false,
            advanced_refused: None,
            advanced_next_step: None,
            names: Vec::new(),
        };
        self.notify(id, &set);
        {
            let mut tables = self.tables();
            if let Some(info) = tables.sessions.remove(id) {
                tables.by_host.remove(&(info.host, info.host_session_id));
            }
        }
        self.policy.forget_session(id);
        // An isolated session's browser context (and whatever its tabs left in it) goes with the session, and so
        // does a browser of its own whose last session it was.
        if let Some(browsers) = &self.browsers {
            browsers.end_session(key).await;
        }
        for tab in report.closed.iter().chain(&report.released).chain(&report.kept) {
            self.gate.forget_tab(*tab);
        }
        Ok(to_proto::cleanup_result(&report))
    }

    /// `session.close`.
    pub(crate) async fn session_close(&self, p: SessionCloseParams) -> Result<CleanupResult, ErrorData> {
        let key = self.key_of(&p.session)?;
        self.close_session_inner(&p.session, &key, core_close_reason(p.reason)).await
    }

    /// `turn.begin`.
    pub(crate) async fn turn_begin(&self, p: TurnBeginParams) -> Result<TurnBeginResult, ErrorData> {
        let key = self.key_of(&p.session)?;
        let turn = self.runtime.begin_turn(&key).await.map_err(|e| err(&e))?;
        if let Some(info) = self.tables().sessions.get_mut(&p.session) {
            info.host_turn.clone_from(&p.host_turn_id);
        }
        Ok(TurnBeginResult { turn })
    }

    /// `turn.end`: every host turn end closes the current turn, whether or not a tab was touched in it; the next call
    /// opens a new one. A repeated delivery of the same host turn end (the same `hostTurnId`) answers what the first
    /// did and ends nothing.
    pub(crate) async fn turn_end(&self, p: TurnEndParams) -> Result<TurnEndResult, ErrorData> {
        let key = self.key_of(&p.session)?;
        if let Some(host_turn) = &p.host_turn_id {
            let tables = self.tables();
            if let Some((_, result)) =
                tables.sessions.get(&p.session).and_then(|i| i.ended_turns.iter().find(|(ended, _)| ended == host_turn))
            {
                // A repeated end of the same host turn is a no-op: the first answer stands.
                return Ok(result.clone());
            }
        }
        let started = self.browser_started();
        let end = async {
            // A turn with no browser call is still a turn: open it (a no-op when a call already did) and end it.
            self.runtime.begin_turn(&key).await?;
            self.runtime.end_turn(&key).await
        };
        let report = if started { end.await } else { NO_LAUNCH.scope(true, end).await };
        let report = report.map_err(|e| err(&e))?;
        let turn = self.runtime.status(&key).await.map(|s| s.turn).unwrap_or_default();
        let mut result = to_proto::turn_end_result(&report, turn);
        if !started {
            // No browser yet: nothing can be owned, so there is nothing to clean up and nothing is missing.
            result.auto_turn_cleanup = browserd_protocol::lifecycle::AutoTurnCleanup::Pending;
            result.missing_capabilities.clear();
            result.ok = result.failed.is_empty();
        }
        for tab in &report.closed {
            self.gate.forget_tab(*tab);
        }
        let mut tables = self.tables();
        if let Some(info) = tables.sessions.get_mut(&p.session) {
            if let Some(host_turn) = p.host_turn_id.clone() {
                if info.ended_turns.len() == ENDED_TURNS_KEPT {
                    info.ended_turns.pop_front();
                }
                info.ended_turns.push_back((host_turn, result.clone()));
            }
            if info.current_tab.is_some_and(|t| report.closed.contains(&t) || report.released.contains(&t)) {
                info.current_tab = None;
            }
        }
        Ok(result)
    }

    /// `broker.selectTab`: makes one of the session's own tabs its current tab.
    pub(crate) async fn select_tab(
        &self,
        p: &SelectTabParams,
    ) -> Result<browserd_protocol::tools::ListedTab, ErrorData> {
        let key = self.key_of(&p.session)?;
        let tab = to_proto::tab_handle(p.tab);
        let status = self.runtime.status(&key).await.map_err(|e| err(&e))?;
        let view = status
            .tabs
            .iter()
            .find(|v| v.tab == tab)
            .ok_or_else(|| ErrorData::new(ErrorCode::TabNotFound, format!("tab {} is not open", p.tab)))?;
        let listed = to_proto::listed_tab(view);
        match listed.provenance {
            browserd_protocol::lifecycle::Provenance::OtherSession => {
                let holder = self.runtime.inspect(|e| e.tabs().get(tab).and_then(|r| r.owner().cloned()));
                let mut e =
                    ErrorData::new(ErrorCode::OtherSessionTab, format!("tab {} belongs to another session", p.tab));
                if let Some(holder) = holder {
                    e = e.with_holder_session(to_proto::session_id(&holder));
                }
                return Err(e);
            }
            browserd_protocol::lifecycle::Provenance::User => {
                return Err(ErrorData::new(
                    ErrorCode::NotOwner,
                    format!("tab {} is the user's; claim it first", p.tab),
                ));
            }
            _ => {}
        }
        if let Some(info) = self.tables().sessions.get_mut(&p.session) {
            info.current_tab = Some(tab);
        }
        Ok(listed)
    }

    /// The session's current tab.
    pub(crate) fn current_tab(&self, id: &SessionId) -> Result<TabHandle, ErrorData> {
        self.tables().sessions.get(id).and_then(|i| i.current_tab).ok_or_else(|| {
            ErrorData::new(ErrorCode::TabNotFound, "this session has no current tab")
                .with_next_step("Open a tab with browser_open or claim one with browser_claim first.")
        })
    }

    /// The tab a page tool names, which becomes the current tab; else the current tab.
    pub(crate) fn tab_for(
        &self,
        id: &SessionId,
        named: Option<browserd_protocol::TabId>,
    ) -> Result<TabHandle, ErrorData> {
        match named {
            Some(tab) => {
                let tab = to_proto::tab_handle(tab);
                self.set_current_tab(id, Some(tab));
                Ok(tab)
            }
            None => self.current_tab(id),
        }
    }

    /// Sets (or clears) the session's current tab.
    pub(crate) fn set_current_tab(&self, id: &SessionId, tab: Option<TabHandle>) {
        // The session's origin lists apply to what the provider finds in the tab it uses.
        if let Some(tab) = tab {
            self.policy.bind_tab(tab, id);
        }
        if let Some(info) = self.tables().sessions.get_mut(id) {
            info.current_tab = tab;
        }
    }

    /// Detaches `conn_id` from its sessions; sessions left with no client start their grace period (CLI sessions
    /// are kept until closed: every CLI command is its own short connection).
    pub(crate) fn detach_connection(self: &Arc<Self>, conn_id: u64) -> Vec<SessionId> {
        let mut detached = Vec::new();
        let mut start_grace = Vec::new();
        {
            let mut tables = self.tables();
            for (id, info) in &mut tables.sessions {
                if info.attached.remove(&conn_id) {
                    detached.push(id.clone());
                    if info.attached.is_empty() && info.host != HostKind::Cli && info.grace.is_none() {
                        let token = CancellationToken::new();
                        info.grace = Some(token.clone());
                        start_grace.push((id.clone(), token));
                    }
                }
            }
        }
        for (id, token) in start_grace {
            let me = self.clone();
            let grace = self.config.disconnect_grace();
            tokio::spawn(async move {
                tokio::select! {
                    () = tokio::time::sleep(grace) => me.dispose_after_grace(&id).await,
                    () = token.cancelled() => {}
                    () = me.shutdown.cancelled() => {}
                }
            });
        }
        detached
    }

    /// Disposes the session `id` once its grace period ended with no client attached again.
    pub(crate) async fn dispose_after_grace(&self, id: &SessionId) {
        let key = {
            let mut tables = self.tables();
            let Some(info) = tables.sessions.get_mut(id) else { return };
            if !info.attached.is_empty() {
                return;
            }
            info.grace = None;
            info.key.clone()
        };
        tracing::info!(session = %id, "no client re-attached within the grace period; disposing the session");
        match self.close_session_inner(id, &key, CoreClose::AgentDisposed).await {
            Ok(result) => tracing::info!(session = %id, ok = result.ok, closed = ?result.closed, "session disposed"),
            Err(e) => tracing::warn!(session = %id, %e, "disposing the session failed"),
        }
        if let Some(log) = self.dedup() {
            self.sync_recovery(&log);
        }
        self.refresh_idle();
    }
}
