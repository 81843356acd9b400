//! The broker-wide `status` method (browsers, sessions, tabs, leases, recovery records) and the limits and browser
//! status that `browser_status` shares.

use std::collections::{BTreeMap, BTreeSet};

use browserd_core::provider::{Capability, Provider, ProviderKind, SessionKey};
use browserd_protocol::lifecycle::{
    BrowserKind, BrowserStatus, DebuggerLeaseState, DebuggerLeaseStatus, HostKind, Limits, SessionStatus, StatusParams,
    StatusResult, TabStatus, ToolActivation, Usage, WriteLeaseStatus,
};
use browserd_protocol::{ErrorData, FencingToken, SessionId};

use crate::dispatch::err;
use crate::server::{Broker, components};
use crate::to_proto;

impl Broker {
    /// The limits and their use, for one session (`Some`) or the busiest one.
    pub(crate) fn limits(&self, session: Option<&SessionKey>) -> Limits {
        let tabs_used = self.runtime.inspect(|engine| {
            let mut counts: BTreeMap<&SessionKey, u32> = BTreeMap::new();
            for r in engine.tabs().iter().filter(|r| r.alive) {
                if let Some(owner) = r.owner() {
                    *counts.entry(owner).or_default() += 1;
                }
            }
            match session {
                Some(key) => counts.get(key).copied().unwrap_or(0),
                None => counts.values().copied().max().unwrap_or(0),
            }
        });
        Limits {
            tabs_per_task: Usage { used: tabs_used, max: self.config.max_tabs_per_task },
            running_actions_per_tab: self.gate.running_per_tab(),
            queued_requests: self.gate.queued(),
            concurrent_page_ops: self.gate.concurrent(),
        }
    }

    /// Every browser: the default one, then the managed browsers of their own (each with its settings and sessions).
    pub(crate) fn browser_statuses(&self) -> Vec<BrowserStatus> {
        let mut all = vec![self.browser_status()];
        let Some(browsers) = &self.browsers else { return all };
        for extra in browsers.extras() {
            let caps = extra.capabilities.unwrap_or_default();
            let missing = caps.missing_for_turn_cleanup();
            let (auto_turn_cleanup, missing_capabilities) = if !extra.running {
                (browserd_protocol::lifecycle::AutoTurnCleanup::Pending, Vec::new())
            } else if missing.is_empty() {
                (browserd_protocol::lifecycle::AutoTurnCleanup::Enabled, Vec::new())
            } else {
                (browserd_protocol::lifecycle::AutoTurnCleanup::Refused, to_proto::capability_names(&missing))
            };
            let headed = if extra.settings.headless == Some(false) { "headed" } else { "headless" };
            all.push(BrowserStatus {
                browser: extra.browser,
                kind: BrowserKind::Managed,
                product: Some(format!("managed Chromium ({headed}), for the sessions that asked for its settings")),
                browser_start: if extra.running {
                    browserd_protocol::lifecycle::BrowserStart::Started
                } else {
                    browserd_protocol::lifecycle::BrowserStart::NotStarted
                },
                bridge: if extra.running {
                    browserd_protocol::lifecycle::BridgeState::Connected
                } else {
                    browserd_protocol::lifecycle::BridgeState::Reconnecting
                },
                capabilities: to_proto::capabilities(&caps),
                auto_turn_cleanup,
                missing_capabilities,
                endpoint: None,
                reconnect: None,
                settings: Some(extra.settings),
                pid: extra.pid,
                sessions: extra.sessions.iter().map(to_proto::session_id).collect(),
            });
        }
        all
    }

    /// The default browser's kind, bridge and capabilities.
    pub(crate) fn browser_status(&self) -> BrowserStatus {
        let caps = match &self.lazy {
            Some(lazy) => lazy.capabilities(),
            None => self.provider.capabilities(),
        };
        let bridge = self.runtime.inspect(|engine| engine.bridge().state());
        let bridge_reconnecting = matches!(bridge, browserd_core::bridge::BridgeState::Reconnecting { .. });
        let missing: Vec<Capability> = caps.missing_for_turn_cleanup();
        let kind = match self.provider.kind() {
            ProviderKind::Managed => BrowserKind::Managed,
            ProviderKind::Remote => BrowserKind::Remote,
            ProviderKind::Extension => BrowserKind::Extension,
            ProviderKind::Fake => BrowserKind::Fake,
        };
        let started = self.lazy.as_ref().is_none_or(|l| l.is_started());
        let (auto_turn_cleanup, missing_capabilities) = if !started {
            // No browser yet: its capabilities are checked when it starts; nothing is missing now.
            (browserd_protocol::lifecycle::AutoTurnCleanup::Pending, Vec::new())
        } else if missing.is_empty() {
            (browserd_protocol::lifecycle::AutoTurnCleanup::Enabled, Vec::new())
        } else {
            (browserd_protocol::lifecycle::AutoTurnCleanup::Refused, to_proto::capability_names(&missing))
        };
        BrowserStatus {
            browser: "b1".to_owned(),
            kind,
            product: self.lazy.as_ref().map(|l| l.selection()),
            browser_start: if started {
                browserd_protocol::lifecycle::BrowserStart::Started
            } else {
                browserd_protocol::lifecycle::BrowserStart::NotStarted
            },
            bridge: to_proto::bridge(bridge),
            capabilities: if started { to_proto::capabilities(&caps) } else { Vec::new() },
            auto_turn_cleanup,
            missing_capabilities,
            endpoint: self.remote_identity(),
            reconnect: self
                .lazy
                .as_ref()
                .map(|l| reconnect_status(l, bridge_reconnecting))
                .filter(|r| r.last_lost.is_some())
                .map(|r| browserd_protocol::lifecycle::ReconnectInfo {
                    lost: r.lost,
                    last_lost: r.last_lost,
                    attempts: r.attempts,
                    in_progress: r.in_progress,
                    last_error: r.last_error,
                    next_attempt_in_ms: r.next_attempt_in_ms,
                    reconnects: r.reconnects,
                    last_reconnect_ms: r.last_reconnect_ms,
                }),
            settings: self.lazy.as_ref().and_then(|l| l.managed_options()).map(crate::browser_settings::effective),
            pid: self.lazy.as_ref().and_then(|l| l.pid()),
            sessions: Vec::new(),
        }
    }

    /// `status`: the whole broker, or one session's view of it.
    pub(crate) async fn status(&self, version: u32, p: &StatusParams) -> Result<StatusResult, ErrorData> {
        let only = match &p.session {
            Some(id) => Some(self.key_of(id)?),
            None => None,
        };
        if let Some(key) = &only {
            // Applies pending browser events first.
            self.runtime.status(key).await.map_err(|e| err(&e))?;
        } else {
            self.runtime.apply_events().await;
        }
        let sessions_info: Vec<(SessionId, HostKind, String, Option<String>)> = {
            let tables = self.tables();
            tables
                .sessions
                .iter()
                .filter(|(_, info)| only.as_ref().is_none_or(|k| k == &info.key))
                .map(|(id, info)| (id.clone(), info.host, info.host_session_id.clone(), info.label.clone()))
                .collect()
        };
        // Read before the engine is locked below (never both locks at once).
        let advanced_ids: BTreeSet<SessionId> =
            sessions_info.iter().filter(|(id, ..)| self.advanced_on(id)).map(|(id, ..)| id.clone()).collect();
        let gate = &self.gate;
        let (sessions, tabs, write_leases, debugger_leases, recovery) = self.runtime.inspect(|engine| {
            let sessions: Vec<SessionStatus> = sessions_info
                .iter()
                .filter_map(|(id, host, host_session_id, label)| {
                    let key = to_proto::session_key(id);
                    let s = engine.session(&key)?;
                    Some(SessionStatus {
                        session: id.clone(),
                        host: *host,
                        host_session_id: host_session_id.clone(),
                        label: label.clone(),
                        tools: if s.activation().is_active() {
                            ToolActivation::ActiveSticky
                        } else {
                            ToolActivation::Inactive
                        },
                        advanced: s.activation().is_active() && advanced_ids.contains(id),
                        turn: s.turn(),
                        busy: engine.tabs().iter().any(|r| r.owned_by(&key) && gate.is_running(r.tab)),
                    })
                })
                .collect();
            let visible = |owner: Option<&SessionKey>| only.as_ref().is_none_or(|k| owner == Some(k));
            let tabs: Vec<TabStatus> = engine
                .tabs()
                .iter()
                .filter(|r| r.alive && visible(r.owner()))
                .map(|r| {
                    let viewer = r.owner().cloned().unwrap_or_else(|| SessionKey(String::new()));
                    // A page the policy refuses (for the tab's owner) is shown by its origin or scheme only.
                    let owner = r.owner().map(to_proto::session_id);
                    let withheld = crate::policy::enforce::withheld_url(self, owner.as_ref(), &r.url);
                    TabStatus {
                        tab: to_proto::tab_id(r.tab),
                        session: r.owner().map(to_proto::session_id),
                        provenance: to_proto::provenance(&r.provenance(&viewer)),
                        state: to_proto::resource_state(r.state),
                        mark: r.ownership.as_ref().and_then(|o| o.mark).map(|m| to_proto::mark_kind(m.kind)),
                        group: r.group.map(to_proto::group_id),
                        title: if withheld.is_some() { None } else { Some(r.title.clone()) },
                        url: Some(withheld.unwrap_or_else(|| r.url.clone())),
                    }
                })
                .collect();
            let write_leases: Vec<WriteLeaseStatus> = engine
                .tabs()
                .iter()
                .filter_map(|r| engine.write_leases().get(r.tab))
                .filter(|l| visible(Some(&l.holder)))
                .map(|l| WriteLeaseStatus {
                    tab: to_proto::tab_id(l.tab),
                    holder: to_proto::session_id(&l.holder),
                    fencing_token: FencingToken(l.token.0),
                    expires_in_ms: None,
                })
                .collect();
            let debugger_leases: Vec<DebuggerLeaseStatus> = engine
                .debugger()
                .iter()
                .filter(|(_, l)| visible(Some(&l.session)))
                .map(|(tab, l)| DebuggerLeaseStatus {
                    tab: to_proto::tab_id(tab),
                    holder: to_proto::session_id(&l.session),
                    state: match l.state {
                        browserd_core::debugger::DebuggerState::DetachFailed => DebuggerLeaseState::DetachFailed,
                        _ if l.refs > 0 => DebuggerLeaseState::Attached,
                        browserd_core::debugger::DebuggerState::Attached => DebuggerLeaseState::Idle,
                        _ => DebuggerLeaseState::Attached,
                    },
                    active_refs: l.refs,
                })
                .collect();
            let recovery = engine
                .recovery()
                .iter()
                .filter(|r| visible(Some(&r.session)))
                .map(to_proto::recovery_record)
                .collect::<Vec<_>>();
            (sessions, tabs, write_leases, debugger_leases, recovery)
        });
        Ok(StatusResult {
            protocol_version: version,
            components: components(),
            sessions,
            tabs,
            browsers: self.browser_statuses(),
            write_leases,
            debugger_leases,
            recovery,
            limits: self.limits(only.as_ref()),
            journal: self.journal.status(),
        })
    }
}

/// The browser's reconnection record. While the bridge says reconnecting, the loss is known to the sessions a moment
/// before the supervisor records it and starts its first attempt: the record then says so, that attempt due now,
/// rather than nothing.
fn reconnect_status(lazy: &crate::lazy::LazyChromium, bridge_reconnecting: bool) -> crate::lazy::ReconnectStatus {
    let mut status = lazy.reconnect_status();
    if bridge_reconnecting
        && status.lost.is_none()
        && let Some(reason) = lazy.link_lost()
    {
        status.last_lost = Some(reason.clone());
        status.lost = Some(reason);
        status.next_attempt_in_ms = Some(0);
    }
    status
}
