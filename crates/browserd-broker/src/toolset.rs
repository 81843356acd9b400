//! Which tools a session sees: `tools.activate`, `tools.list`, the advanced tier's activation under the
//! `[advanced]` policy, and the `tools.changed` notification to the session's clients.

use browserd_core::provider::SessionKey;
use browserd_protocol::jsonrpc::Notification;
use browserd_protocol::lifecycle::{ToolActivation, ToolSet, ToolsActivateParams, UnsupportedReason};
use browserd_protocol::methods::{ToolsListParams, ToolsListResult};
use browserd_protocol::tools::{Tool, ToolTier};
use browserd_protocol::{ErrorData, SessionId};

use crate::dispatch::err;
use crate::server::Broker;

fn core_tool_names() -> Vec<String> {
    Tool::ALL.iter().filter(|t| t.tier() == ToolTier::Core).map(|t| t.name().to_owned()).collect()
}

impl Broker {
    /// The session's tool set. Asking for the advanced tier enables it for the session when the policy allows it
    /// (`[advanced] enabled`); hidden tools take the tier with them.
    pub(crate) async fn tool_set(
        &self,
        id: &SessionId,
        key: &SessionKey,
        advanced_asked: bool,
    ) -> Result<ToolSet, ErrorData> {
        let status = self.runtime.status(key).await.map_err(|e| err(&e))?;
        let policy = &self.config.advanced;
        let refused = advanced_asked && status.tools_active && !policy.enabled;
        let advanced = {
            let mut tables = self.tables();
            let info = tables.sessions.get_mut(id);
            match info {
                Some(info) => {
                    info.advanced = status.tools_active && policy.enabled && (info.advanced || advanced_asked);
                    info.advanced
                }
                None => false,
            }
        };
        let mut names = if status.tools_active { core_tool_names() } else { Vec::new() };
        if advanced {
            names.extend(crate::advanced::tools(policy).iter().map(|t| t.name().to_owned()));
        }
        Ok(ToolSet {
            session: id.clone(),
            tools: if status.tools_active { ToolActivation::ActiveSticky } else { ToolActivation::Inactive },
            advanced,
            advanced_refused: refused.then_some(UnsupportedReason::PolicyBlocked),
            advanced_next_step: refused.then(|| crate::advanced::ENABLE_NEXT_STEP.to_owned()),
            names,
        })
    }

    /// Whether the session has the advanced tier on.
    pub(crate) fn advanced_on(&self, id: &SessionId) -> bool {
        self.config.advanced.enabled && self.tables().sessions.get(id).is_some_and(|i| i.advanced)
    }

    /// `tools.activate`; tells the session's clients when its tool set changed.
    pub(crate) async fn tools_activate(&self, p: ToolsActivateParams) -> Result<ToolSet, ErrorData> {
        let key = self.key_of(&p.session)?;
        let was_advanced = self.advanced_on(&p.session);
        let changed = self.runtime.activate_tools(&key).await.map_err(|e| err(&e))?;
        let set = self.tool_set(&p.session, &key, p.advanced).await?;
        if changed || set.advanced != was_advanced {
            self.notify(&p.session, &set);
        }
        Ok(set)
    }

    /// `tools.list`: the tool specs the session sees now.
    pub(crate) fn tools_list(&self, p: &ToolsListParams) -> Result<ToolsListResult, ErrorData> {
        let key = self.key_of(&p.session)?;
        let active = self
            .runtime
            .inspect(|engine| engine.session(&key).is_some_and(|s| s.closed().is_none() && s.activation().is_active()));
        let advanced = active && self.advanced_on(&p.session);
        let tools = if active {
            let mut tools: Vec<_> = Tool::ALL.iter().filter(|t| t.tier() == ToolTier::Core).map(|t| t.spec()).collect();
            if advanced {
                tools.extend(crate::advanced::tools(&self.config.advanced).iter().map(|t| t.spec()));
            }
            tools
        } else {
            Vec::new()
        };
        Ok(ToolsListResult { tools })
    }

    /// Sends `tools.changed` with `set` to every client attached to `session`.
    pub(crate) fn notify(&self, session: &SessionId, set: &ToolSet) {
        let Ok(note) = Notification::new(browserd_protocol::methods::TOOLS_CHANGED, set) else { return };
        let Ok(value) = serde_json::to_value(&note) else { return };
        let tables = self.tables();
        let Some(info) = tables.sessions.get(session) else { return };
        for conn in &info.attached {
            if let Some(tx) = tables.connections.get(conn) {
                // Bounded: a client that does not read its notifications misses them rather than growing memory.
                if tx.try_send(value.clone()).is_err() {
                    tracing::warn!(conn, "a client's queue is full; dropped a tools.changed notification");
                }
            }
        }
    }
}
