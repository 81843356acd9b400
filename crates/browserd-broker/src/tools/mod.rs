//! The model tools (`tool.call`), one file per tool (or per small family), each with one entry
//! `pub(crate) async fn call(ctx: &mut ToolCtx<'_>, params) -> Result<Value, ErrorData>`, and the [`ToolCtx`] they
//! share: the calling session, the admission to the page-operation gate and the call's de-duplication ticket.
//!
//! # Adding a tool
//! 1. Declare it in the protocol registry (the `tools!` table in `browserd_protocol::tools`: name, tier, params,
//!    result, description); that is the protocol crate's one line.
//! 2. Here: one new file `tools/<name>.rs` with its `call` (it starts with a `//!` line), declared below with
//!    `pub(crate) mod <name>;`.
//! 3. One line in the tool table, `run_tool` in [`crate::dispatch`]: `ToolCall::<Variant>(params) =>
//!    tools::<name>::call(ctx, params).await`. The table is an exhaustive match, so the build fails until the line is
//!    there. A tool that only reads is also named in `dispatch::reads_only` (else its `callId` is de-duplicated like
//!    every write, the safe default).
//!
//! A tool that touches a page waits for its slot with [`ToolCtx::admit`] (a read) or [`ToolCtx::admit_write`] (a
//! write: reads of the tab see it running), which also marks a de-duplicated call dispatched; a tool that needs no
//! slot calls [`ToolCtx::mark_dispatched`] before it changes anything. Work runs in a `tokio::select!` against the
//! admission's stop token, so Stop answers `USER_STOPPED`.

use std::sync::atomic::Ordering;

use browserd_core::provider::{SessionKey, TabHandle};
use browserd_core::runtime::Runtime;
use browserd_protocol::tools::ToolCallParams;
use browserd_protocol::{ErrorData, SessionId, TabId};
use serde_json::json;

use crate::dedup::CallRecord;
use crate::limits::{Admission, RunningWrite, user_stopped};
use crate::server::Broker;

pub(crate) mod act;
pub(crate) mod batch;
pub(crate) mod cdp;
pub(crate) mod claim;
pub(crate) mod cleanup;
pub(crate) mod close;
pub(crate) mod console;
pub(crate) mod evaluate;
pub(crate) mod handoff;
pub(crate) mod list;
pub(crate) mod marks;
pub(crate) mod network;
pub(crate) mod observe;
pub(crate) mod open;
pub(crate) mod reset;
pub(crate) mod status;

/// What a tool call runs with.
pub(crate) struct ToolCtx<'a> {
    /// The broker.
    pub(crate) broker: &'a Broker,
    /// The calling session.
    pub(crate) session: &'a SessionId,
    /// The calling session's core key.
    pub(crate) key: &'a SessionKey,
    /// The tool's name as called.
    pub(crate) name: &'a str,
    /// The host's id of this call, when it sent one.
    pub(crate) call_id: Option<&'a str>,
    /// The de-duplication record of a journaled call; [`Self::mark_dispatched`] moves it to dispatched. Dropped with
    /// the call (cancelled), it resolves the record.
    pub(crate) record: CallRecord,
}

impl<'a> ToolCtx<'a> {
    /// The context of the call `p` by the session `key`.
    pub(crate) fn new(broker: &'a Broker, p: &'a ToolCallParams, key: &'a SessionKey, record: CallRecord) -> Self {
        Self { broker, session: &p.session, key, name: &p.name, call_id: p.call_id.as_deref(), record }
    }

    /// The core runtime.
    pub(crate) fn runtime(&self) -> &'a Runtime {
        &self.broker.runtime
    }

    /// Waits for the page-operation slot, then marks a de-duplicated call dispatched (nothing is sent before).
    pub(crate) async fn admit(&mut self, tab: Option<TabHandle>) -> Result<Admission, ErrorData> {
        let admission = self.broker.gate.admit(tab).await?;
        self.mark_dispatched()?;
        Ok(admission)
    }

    /// [`Self::admit`] for a write on `tab`: reads of the tab see it running (named by the caller's `callId`, else a
    /// broker trace id) until it ends.
    pub(crate) async fn admit_write(&mut self, tab: TabHandle) -> Result<Admission, ErrorData> {
        self.broker.check_not_stopped(tab)?;
        let trace = match self.call_id {
            Some(id) => id.to_owned(),
            None => format!("w{}", self.broker.next_write.fetch_add(1, Ordering::Relaxed) + 1),
        };
        let admission = self.broker.gate.admit_write(tab, RunningWrite { trace, tool: self.name.to_owned() }).await?;
        self.mark_dispatched()?;
        Ok(admission)
    }

    /// Marks a de-duplicated call dispatched: from now on a repeat of its `callId` answers `unknown`.
    pub(crate) fn mark_dispatched(&mut self) -> Result<(), ErrorData> {
        if let (Some(t), Some(log)) = (self.record.slot().take(), self.broker.dedup()) {
            *self.record.slot() = Some(log.dispatch(t)?);
        }
        Ok(())
    }

    /// The tab a page tool names, which becomes the current tab; else the current tab.
    pub(crate) fn tab_for(&self, named: Option<TabId>) -> Result<TabHandle, ErrorData> {
        self.broker.tab_for(self.session, named)
    }

    /// The session's current tab.
    pub(crate) fn current_tab(&self) -> Result<TabHandle, ErrorData> {
        self.broker.current_tab(self.session)
    }

    /// Sets (or clears) the session's current tab.
    pub(crate) fn set_current_tab(&self, tab: Option<TabHandle>) {
        self.broker.set_current_tab(self.session, tab);
    }

    /// The advanced tier's gate: refused unless the session activated the tier under the policy; a raw protocol
    /// command also needs `raw_cdp`.
    pub(crate) fn require_advanced(&self, raw: bool) -> Result<(), ErrorData> {
        let policy = &self.broker.config.advanced;
        if !self.broker.advanced_on(self.session) || (raw && !policy.raw_cdp) {
            return Err(crate::advanced::not_activated(self.name, policy));
        }
        Ok(())
    }
}

/// The answer of a write that Stop cut short after it was sent.
pub(crate) fn stopped_unknown(what: &str) -> ErrorData {
    user_stopped(&format!("{what} was stopped; it may or may not have taken effect"))
        .with_details(json!({"outcome": "unknown"}))
}
