//! The method table: every JSON-RPC method the broker answers, one line each, routed to its handler; and the tool
//! table: every `tool.call` tool, one line each, routed to its file's `call` in [`crate::tools`].

use std::sync::Arc;
use std::time::Duration;

use browserd_core::error::CoreError;
use browserd_protocol::jsonrpc::Request;
use browserd_protocol::methods::{BrokerShutdownResult, MethodCall};
use browserd_protocol::tools::{ToolCall, ToolCallParams};
use browserd_protocol::{ErrorCode, ErrorData};
use serde::Serialize;
use serde_json::Value;

use crate::dedup::CallRecord;
use crate::server::Broker;
use crate::tools::{self, ToolCtx};

/// A core error as the wire's error.
pub(crate) fn err(e: &CoreError) -> ErrorData {
    crate::to_proto::error_data(e)
}

/// A result as the wire's JSON.
pub(crate) fn to_value<T: Serialize>(value: &T) -> Result<Value, ErrorData> {
    serde_json::to_value(value)
        .map_err(|e| ErrorData::new(ErrorCode::InternalError, format!("cannot encode the result: {e}")))
}

impl Broker {
    /// The method table.
    pub(crate) async fn dispatch(
        self: &Arc<Self>,
        conn_id: u64,
        version: u32,
        request: Request,
    ) -> Result<Value, ErrorData> {
        match MethodCall::from_request(&request)? {
            MethodCall::Hello(_) | MethodCall::ClientDisconnect(_) | MethodCall::BrokerCancel(_) => {
                Err(ErrorData::new(ErrorCode::InternalError, "handled by the connection loop"))
            }
            MethodCall::BrokerShutdown(_) => to_value(&self.request_shutdown()),
            MethodCall::BrokerStopGate(_) => to_value(&self.stop_gate().await),
            MethodCall::BrokerSelectTab(p) => to_value(&self.select_tab(&p).await?),
            MethodCall::SessionOpen(p) => to_value(&self.session_open(conn_id, p).await?),
            MethodCall::SessionVision(p) => to_value(&self.session_vision(&p)?),
            MethodCall::SessionClose(p) => to_value(&self.session_close(p).await?),
            MethodCall::TurnBegin(p) => to_value(&self.turn_begin(p).await?),
            MethodCall::TurnEnd(p) => to_value(&self.turn_end(p).await?),
            MethodCall::ToolsActivate(p) => to_value(&self.tools_activate(p).await?),
            MethodCall::ToolsList(p) => to_value(&self.tools_list(&p)?),
            MethodCall::ContextReset(p) => to_value(&self.context_reset(p).await?),
            MethodCall::Status(p) => to_value(&self.status(version, &p).await?),
            MethodCall::ToolCall(p) => self.tool_call(p).await,
            MethodCall::ApprovalGrant(p) => to_value(&self.approval_grant(&p)?),
            MethodCall::ToolsChanged(_) => Err(ErrorData::new(
                ErrorCode::InvalidRequest,
                "tools.changed is a notification the broker sends; clients do not call it",
            )),
        }
    }

    /// `broker.shutdown`: answers first; the accept loop then stops and running connections get their grace period.
    fn request_shutdown(&self) -> BrokerShutdownResult {
        tracing::info!("shutdown requested by a client");
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            shutdown.cancel();
        });
        BrokerShutdownResult { ok: true }
    }

    /// `tool.call`: decodes the call, opens the turn it belongs to, refuses what must be recorded while the journal
    /// cannot be written, de-duplicates a write by its `callId` (when a journal is open) and an action by its
    /// `requestId`, runs the tool through the tool table and records how it ended. A call dropped before it ends
    /// (cancelled, its client gone) resolves its records at once (`unknown` once dispatched, else `cancelled`).
    async fn tool_call(self: &Arc<Self>, p: ToolCallParams) -> Result<Value, ErrorData> {
        let mut call = p.decode()?;
        let key = self.key_of(&p.session)?;
        // Turns come from the host: any call belongs to the turn the host's next turn end closes.
        self.runtime.open_turn(&key).map_err(|e| err(&e))?;
        // The scheme policy: refused before anything is sent (and before a callId is recorded).
        crate::policy::schemes::before(self, &key, &p.session, &call).await?;
        crate::policy::transfer::before(&self.config, &call)?;
        let page_answer = crate::policy::schemes::answers_with_page(&call);
        if must_be_recorded(&call) {
            self.journal_admit()?;
        }
        let dedup = self.dedup();
        let mut record = CallRecord::none();
        if let (Some(call_id), Some(log), false) = (&p.call_id, &dedup, reads_only(&call)) {
            match self.begin_call(log, &p, call_id) {
                Ok(t) => record = CallRecord::new(log.clone(), t),
                Err(answer) => return answer,
            }
        }
        // `browser_act`'s requestId: the broker answers repeats per host session; the provider never sees the id.
        let mut request = None;
        if let ToolCall::Act(params) = &mut call
            && let Some(request_id) = params.request_id.take()
        {
            let (host, host_session_id) = self.host_of(&p.session);
            let hash = crate::request_ids::payload_digest(params);
            let trace = p.call_id.clone().unwrap_or_else(|| format!("r-{request_id}"));
            match self.request_ids.begin((host, host_session_id, request_id), hash, &trace) {
                crate::request_ids::Begun::Answer(answer) => {
                    let answer = to_value(&*answer);
                    record.finish(&answer);
                    return answer;
                }
                crate::request_ids::Begun::Run(running) => request = Some(running),
            }
        }
        let mut ctx = ToolCtx::new(self, &p, &key, record);
        let mut result = run_tool(&mut ctx, call).await;
        if page_answer {
            crate::policy::schemes::after(self, &mut result);
            crate::policy::transfer::after(&self.config, &mut result);
        }
        self.with_stop_details(&mut result);
        if let Some(running) = request {
            crate::request_ids::finish(running, &result);
        }
        std::mem::replace(&mut ctx.record, CallRecord::none()).finish(&result);
        result
    }
}

/// What must be recorded in the journal before it runs: input, and opening or claiming a tab (refused with
/// `JOURNAL_UNAVAILABLE` while the journal cannot be written).
fn must_be_recorded(call: &ToolCall) -> bool {
    matches!(
        call,
        ToolCall::Open(_)
            | ToolCall::Claim(_)
            | ToolCall::Act(_)
            | ToolCall::Batch(_)
            | ToolCall::Evaluate(_)
            | ToolCall::RawProtocol(_)
    )
}

/// Tools that only read: their `callId` is not de-duplicated (every other tool's is, a new one's too).
fn reads_only(call: &ToolCall) -> bool {
    matches!(
        call,
        ToolCall::Status(_) | ToolCall::List(_) | ToolCall::Observe(_) | ToolCall::Console(_) | ToolCall::Network(_)
    )
}

/// The tool table (exhaustive: a tool added to the protocol registry does not build until it has its line here).
async fn run_tool(ctx: &mut ToolCtx<'_>, call: ToolCall) -> Result<Value, ErrorData> {
    match call {
        ToolCall::Status(params) => tools::status::call(ctx, params).await,
        ToolCall::List(params) => tools::list::call(ctx, params).await,
        ToolCall::Open(params) => tools::open::call(ctx, params).await,
        ToolCall::Claim(params) => tools::claim::call(ctx, params).await,
        ToolCall::Observe(params) => tools::observe::call(ctx, params).await,
        ToolCall::Act(params) => tools::act::call(ctx, params).await,
        ToolCall::Batch(params) => tools::batch::call(ctx, params).await,
        ToolCall::MarkDeliverable(params) | ToolCall::MarkHandoff(params) => tools::marks::call(ctx, params).await,
        ToolCall::Handoff(params) => tools::handoff::call(ctx, params).await,
        ToolCall::Close(params) => tools::close::call(ctx, params).await,
        ToolCall::Cleanup(params) => tools::cleanup::call(ctx, params).await,
        ToolCall::ContextReset(params) => tools::reset::call(ctx, params).await,
        ToolCall::Evaluate(params) => tools::evaluate::call(ctx, params).await,
        ToolCall::RawProtocol(params) => tools::cdp::call(ctx, params).await,
        ToolCall::Console(params) => tools::console::call(ctx, params).await,
        ToolCall::Network(params) => tools::network::call(ctx, params).await,
    }
}
