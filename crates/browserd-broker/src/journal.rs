//! The broker's use of the durable journal ([`crate::dedup`]): opened at start (settling a previous broker's
//! records), each call's metadata into the audit ring, the recovery records and owned tabs mirrored after each call,
//! and the `callId` de-duplication around a tool call.

use std::sync::Arc;

use browserd_core::provider::{ProviderKind, TabHandle};
use browserd_protocol::ErrorData;
use browserd_protocol::jsonrpc::Request;
use browserd_protocol::tools::ToolCallParams;
use serde_json::Value;

use crate::dedup::{Admit, DedupLog, Ticket};
use crate::server::Broker;

/// The prefix of a durable tab key made of the browser's target id.
pub(crate) const TARGET_KEY_PREFIX: &str = "target:";

impl Broker {
    /// The open journal, if any.
    pub(crate) fn dedup(&self) -> Option<Arc<DedupLog>> {
        self.journal.log()
    }

    /// Opens the journal set by [`Broker::set_journal_path`] (after the single-instance lock is taken) and settles
    /// what a previous broker left in it. When it cannot be opened the broker still serves; what must be recorded is
    /// refused until it can ([`Self::journal_admit`]).
    pub(crate) fn open_journal(self: &Arc<Self>) {
        if let Some(log) = self.journal.open() {
            self.settle_journal(&log);
        }
    }

    /// Settles what a previous broker left in the journal just opened (at start, or when it could be opened again).
    fn settle_journal(self: &Arc<Self>, log: &Arc<DedupLog>) {
        let previous = log.settle_previous(self.lazy.is_some() && self.provider.kind() == ProviderKind::Managed);
        if previous.resolved_gone > 0 {
            tracing::info!(
                count = previous.resolved_gone,
                "recovery records of a previous broker resolved: its managed browser exited with it"
            );
        }
        if previous.left_pending > 0 {
            tracing::warn!(
                count = previous.left_pending,
                "recovery records of a previous broker stay pending: their browser is not this one's; \
                 check that browser by hand"
            );
        }
        let reconciling = self.spawn_remote_reconciliation(log.clone());
        if previous.remote_pending > reconciling {
            tracing::warn!(
                count = previous.remote_pending - reconciling,
                "recovery records of a previous broker on another remote endpoint stay pending; set \
                 remote_cdp to that endpoint to have them retried, or check that browser by hand"
            );
        }
    }

    /// Before an operation that must be recorded (input, a new or claimed tab): the journal must work now. A journal
    /// that could not be opened is opened again, a degraded one probed; what the runtime holds is mirrored into it.
    ///
    /// # Errors
    /// `JOURNAL_UNAVAILABLE`, naming the file, the failure and what to free or fix.
    pub(crate) fn journal_admit(self: &Arc<Self>) -> Result<(), ErrorData> {
        match self.journal.admit()? {
            crate::journal_gate::Admitted::Reopened(log) => {
                self.settle_journal(&log);
                self.sync_recovery(&log);
            }
            crate::journal_gate::Admitted::Open(log) => self.sync_recovery(&log),
            crate::journal_gate::Admitted::Off => {}
        }
        match self.dedup().and_then(|log| log.degraded().map(|why| (log, why))) {
            Some((log, why)) => Err(crate::dedup::journal_unavailable(log.path(), &why)),
            None => Ok(()),
        }
    }

    /// [`Self::dispatch`], then the call's metadata into the journal's audit ring (when a journal is open).
    pub(crate) async fn dispatch_audited(
        self: &Arc<Self>,
        conn_id: u64,
        version: u32,
        request: Request,
    ) -> Result<Value, ErrorData> {
        let Some(log) = self.dedup() else { return self.dispatch(conn_id, version, request).await };
        let result = self.dispatch_journaled(&log, conn_id, version, request).await;
        self.sync_recovery(&log);
        result
    }

    /// Mirrors the runtime's recovery records into the journal.
    pub(crate) fn sync_recovery(&self, log: &DedupLog) {
        use browserd_journal::recovery::CleanupOp;
        let browser = self.durable_browser_key(log);
        let mut current: Vec<crate::dedup::RecoveryMirror> = self.runtime.inspect(|engine| {
            engine
                .recovery()
                .iter()
                .map(|r| crate::dedup::RecoveryMirror {
                    session: r.session.0.clone(),
                    tab: r.tab.0,
                    browser: browser.clone(),
                    tab_key: String::new(),
                    op: cleanup_op(r.action),
                    attempts: r.attempts,
                    outcome_unknown: r.outcome_unknown,
                    code: r.last_kind.code().to_owned(),
                    message: r.last_error.clone(),
                })
                .collect()
        });
        // Outside the engine's lock: the target ids come from the provider's own state.
        for r in &mut current {
            r.tab_key = self.durable_tab_key(TabHandle(r.tab));
        }
        // Records the runtime dropped because their tab was gone resolve `alreadyGone`.
        let gone: Vec<(u64, CleanupOp)> = self.runtime.inspect(|engine| {
            engine.recovery().resolved_gone().map(|(tab, action)| (tab.0, cleanup_op(action))).collect()
        });
        log.sync_recovery(&self.recovery_journal, &current, |tab, op| gone.contains(&(tab, op)));
        self.sync_owned(log, &browser);
    }

    /// Mirrors the tabs the sessions hold (and a crash would leak) into the journal's owned-tab ledger: agent-created
    /// tabs (closed at disposal) and claimed user tabs (released), not the ones marked deliverable or handoff.
    pub(crate) fn sync_owned(&self, log: &DedupLog, browser: &str) {
        use browserd_core::tabs::{MarkKind, Origin};
        use browserd_journal::recovery::CleanupOp;
        let held: Vec<(TabHandle, String, CleanupOp)> = self.runtime.inspect(|engine| {
            engine
                .tabs()
                .iter()
                .filter(|r| r.alive)
                .filter_map(|r| {
                    let o = r.ownership.as_ref()?;
                    if o.mark.is_some_and(|m| matches!(m.kind, MarkKind::Deliverable | MarkKind::Handoff)) {
                        return None;
                    }
                    let op = match o.origin {
                        Origin::AgentCreated => CleanupOp::Close,
                        Origin::Claimed => CleanupOp::Release,
                    };
                    Some((r.tab, o.session.0.clone(), op))
                })
                .collect()
        });
        let current: Vec<crate::dedup::OwnedMirror> = held
            .into_iter()
            .map(|(tab, session, op)| {
                let row = browserd_journal::owned::OwnedTab {
                    browser: browser.to_owned(),
                    tab: self.durable_tab_key(tab),
                    session,
                    op,
                };
                (tab.0, row)
            })
            .collect();
        log.sync_owned(&self.owned_journal, &current);
    }

    /// The durable key of this broker's browser: `remote:<endpoint>` for a remote endpoint (it outlives the broker),
    /// else one per broker process (a managed browser exits with its broker).
    pub(crate) fn durable_browser_key(&self, log: &DedupLog) -> String {
        match self.remote_identity() {
            Some(identity) => format!("{}{identity}", crate::dedup::REMOTE_KEY_PREFIX),
            None => log.browser_key(),
        }
    }

    /// The remote endpoint in use (or to be used), when the browser is a remote one. It may hold a token: never log
    /// it (see [`Self::remote_identity`]).
    pub(crate) fn remote_endpoint(&self) -> Option<String> {
        let lazy = self.lazy.as_ref()?;
        if lazy.is_started() && self.provider.kind() != ProviderKind::Remote {
            return None;
        }
        lazy.remote_endpoint().map(str::to_owned)
    }

    /// The secret-free identity of the remote endpoint in use (scheme, host, port, path): the ledger's browser key.
    pub(crate) fn remote_identity(&self) -> Option<String> {
        self.remote_endpoint()?;
        self.lazy.as_ref()?.remote_identity()
    }

    /// The durable key of `tab`: the browser's target id when known, else the handle (one process only).
    pub(crate) fn durable_tab_key(&self, tab: TabHandle) -> String {
        match self.browsers.as_ref().and_then(|b| b.target_id(tab)) {
            Some(target) => format!("{TARGET_KEY_PREFIX}{target}"),
            None => format!("t{}", tab.0),
        }
    }

    /// [`Self::dispatch`] with the call's metadata noted in the journal's audit ring.
    pub(crate) async fn dispatch_journaled(
        self: &Arc<Self>,
        log: &DedupLog,
        conn_id: u64,
        version: u32,
        request: Request,
    ) -> Result<Value, ErrorData> {
        let started = std::time::Instant::now();
        let params = request.params.clone().unwrap_or(Value::Null);
        let method = request.method.clone();
        let result = self.dispatch(conn_id, version, request).await;
        let (name, arguments, call_id) = if method == browserd_protocol::methods::TOOL_CALL {
            (
                params.get("name").and_then(Value::as_str).unwrap_or_default().to_owned(),
                params.get("arguments"),
                params.get("callId").and_then(Value::as_str),
            )
        } else {
            (method.clone(), None, None)
        };
        let session =
            params.get("session").and_then(Value::as_str).map(str::to_owned).or_else(|| {
                result.as_ref().ok().and_then(|v| v.get("session")).and_then(Value::as_str).map(str::to_owned)
            });
        let note = crate::dedup::AuditNote {
            name: &name,
            session: session.as_deref(),
            arguments,
            call_id,
            elapsed: started.elapsed(),
        };
        log.audit(&note, &result);
        result
    }

    /// The host and host session id of broker session `id` (what call ids and request ids are scoped by).
    pub(crate) fn host_of(&self, id: &browserd_protocol::SessionId) -> (String, String) {
        let tables = self.tables();
        let info = tables.sessions.get(id);
        (
            info.map(|i| format!("{:?}", i.host)).unwrap_or_default(),
            info.map(|i| i.host_session_id.clone()).unwrap_or_default(),
        )
    }

    /// Starts the de-duplication of a tool call that changes a page and names a `callId` (when a journal is open):
    /// `Err` carries the first answer of a call already seen.
    pub(crate) fn begin_call(
        &self,
        log: &DedupLog,
        p: &ToolCallParams,
        call_id: &str,
    ) -> Result<Ticket, Result<Value, ErrorData>> {
        let (host, host_session_id) = self.host_of(&p.session);
        let hash = crate::dedup::payload_hash(&host, &host_session_id, &p.name, &p.arguments);
        // Call ids are chosen by each host; they only identify a call within one host session.
        let scoped = format!("{host}/{host_session_id}/{call_id}");
        match log.begin(&scoped, hash) {
            Admit::New(t) => Ok(t),
            Admit::Answer(answer) => Err(answer),
        }
    }
}

/// The journal's name of a runtime cleanup.
fn cleanup_op(action: browserd_core::recovery::RecoveryAction) -> browserd_journal::recovery::CleanupOp {
    use browserd_core::recovery::RecoveryAction as A;
    use browserd_journal::recovery::CleanupOp;
    match action {
        A::Close => CleanupOp::Close,
        A::Release => CleanupOp::Release,
        A::Detach => CleanupOp::DetachDebugger,
    }
}
