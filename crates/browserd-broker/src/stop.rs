//! Stop: `broker.stopGate` (and a Stop from the extension) cancels queued and running page work and releases every
//! write lease; what the Stop reported goes into the `details.stop` of the `USER_STOPPED` answers it caused.
//!
//! Stop is a state, not an event: every controlled tab stays stopped under the new control epoch, and every write on
//! it (`browser_act`, `browser_batch`, `browser_evaluate`, `browser_cdp`) is refused with `USER_STOPPED` before
//! anything is sent, until a session resumes it with `browser_claim` `resume: true` (a new lease with a higher
//! fencing token and a full observation). Refs read before the Stop are void for good: the resume's observation gives
//! the same nodes new refs, and an old one reads `STALE_TARGET` / `controlEpochChanged`.

use std::collections::BTreeMap;

use browserd_core::provider::{SessionKey, TabHandle};
use browserd_protocol::{ErrorCode, ErrorData};
use serde_json::{Value, json};

use crate::server::{Broker, StopGateResult};
use crate::to_proto;

/// The Stop state: the control epoch (bumped by every Stop) and the tabs stopped under it.
#[derive(Debug, Default)]
pub(crate) struct Stopped {
    epoch: u64,
    tabs: BTreeMap<TabHandle, u64>,
}

impl Broker {
    /// Refuses a write on a tab under Stop with `USER_STOPPED` (nothing was sent), naming the resume call.
    pub(crate) fn check_not_stopped(&self, tab: TabHandle) -> Result<(), ErrorData> {
        let stopped = self.stopped.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(&epoch) = stopped.tabs.get(&tab) else {
            return Ok(());
        };
        let id = to_proto::tab_id(tab).0;
        Err(ErrorData::new(
            ErrorCode::UserStopped,
            format!(
                "the user stopped browser control of tab {id}; nothing was sent and refs read before the Stop are \
                 void. Ask the user whether to go on; only then call browser_claim with {{\"tab\": {id}, \"resume\": \
                 true}} (CLI: browserd claim {id} --resume), which takes a new lease and returns a full observation"
            ),
        )
        .with_details(json!({
            "tab": id,
            "controlEpoch": epoch,
            "staleReason": "controlEpochChanged",
            "dispatch": "notSent",
            "resume": {"tool": "browser_claim", "arguments": {"tab": id, "resume": true}},
        })))
    }

    /// Ends the Stop of `tab` (a session resumes it); returns the current control epoch.
    pub(crate) fn resume_tab(&self, tab: TabHandle) -> u64 {
        let mut stopped = self.stopped.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        stopped.tabs.remove(&tab);
        stopped.epoch
    }

    /// `broker.stopGate`: stops the broker's page work, then asks the extension in use to stop too.
    pub(crate) async fn stop_gate(&self) -> StopGateResult {
        let mut evidence = json!({"via": "broker", "reason": "browserd stop"});
        evidence["lastEvidence"] = match self.lazy.as_ref().and_then(|l| l.extension_in_use()) {
            Some(ext) => serde_json::to_value(ext.last_evidence()).unwrap_or(Value::Null),
            None => self.page_evidence(),
        };
        let result = self.stop_page_work(Some(evidence)).await;
        // The extension closes its own gate too (no input passes it after this), detaches and keeps the pages.
        if let Some(ext) = self.lazy.as_ref().and_then(|l| l.extension_in_use()) {
            match tokio::time::timeout(crate::extension::STOP_TIMEOUT, ext.link().stop("browserd stop")).await {
                Ok(Ok(report)) => {
                    tracing::info!(dropped = report.dropped_inputs, "the extension stopped");
                    *self.last_stop.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
                        serde_json::to_value(&report).ok();
                }
                Ok(Err(e)) => tracing::warn!(%e, "the extension did not confirm Stop"),
                Err(_) => tracing::warn!("the extension did not confirm Stop in time"),
            }
        }
        result
    }

    /// Where the work stood on each tab that was being controlled when Stop came: the write running there (its
    /// trace id and tool) and the tab's latest observation (URL, title, revision; no page text).
    pub(crate) fn page_evidence(&self) -> Value {
        let tabs: Vec<TabHandle> = self.runtime.inspect(|engine| {
            engine
                .tabs()
                .iter()
                .filter(|r| engine.write_leases().get(r.tab).is_some() || self.gate.is_running(r.tab))
                .map(|r| r.tab)
                .collect()
        });
        let entries: Vec<Value> = tabs
            .into_iter()
            .map(|tab| {
                let mut entry = json!({"tab": to_proto::tab_id(tab)});
                if let Some(write) = self.gate.running_write(tab) {
                    entry["runningWrite"] = json!({"trace": write.trace, "tool": write.tool});
                }
                if let Some(obs) = self.gate.last_observation(tab) {
                    let mut last = serde_json::Map::new();
                    for field in ["url", "title", "revision", "cursor"] {
                        if let Some(v) = obs.get(field) {
                            last.insert(field.to_owned(), v.clone());
                        }
                    }
                    entry["lastObservation"] = Value::Object(last);
                }
                entry
            })
            .collect();
        json!({"tabs": entries})
    }

    /// Cancels queued and running page work (they report `USER_STOPPED`) and releases every write lease: resuming
    /// needs a new lease.
    pub(crate) async fn stop_page_work(&self, evidence: Option<Value>) -> StopGateResult {
        *self.last_stop.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = evidence;
        // Every controlled tab stays stopped under the new control epoch until a session resumes it.
        let controlled: Vec<TabHandle> = self
            .runtime
            .inspect(|engine| engine.tabs().iter().filter(|r| r.alive && r.owner().is_some()).map(|r| r.tab).collect());
        {
            let mut stopped = self.stopped.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            stopped.epoch += 1;
            let epoch = stopped.epoch;
            for &tab in &controlled {
                stopped.tabs.insert(tab, epoch);
            }
        }
        // Refs read before the Stop stay void after the resume: the resume's observation gives new ones.
        for &tab in &controlled {
            self.provider.void_refs(tab);
        }
        let (queued, running) = self.gate.stop_all();
        let leases: Vec<(SessionKey, TabHandle)> = self.runtime.inspect(|engine| {
            engine
                .tabs()
                .iter()
                .filter_map(|r| engine.write_leases().get(r.tab))
                .map(|l| (l.holder.clone(), l.tab))
                .collect()
        });
        let mut released = 0;
        for (session, tab) in leases {
            if matches!(self.runtime.release_write_lease(&session, tab).await, Ok(true)) {
                released += 1;
            }
        }
        tracing::info!(queued, running, released, "stop gate: browser control stopped");
        StopGateResult {
            code: ErrorCode::UserStopped,
            queued_cancelled: queued,
            running_cancelled: running,
            leases_released: released,
        }
    }

    /// Adds what the latest Stop reported to a `USER_STOPPED` answer, as `details.stop`.
    pub(crate) fn with_stop_details(&self, result: &mut Result<Value, ErrorData>) {
        if let Err(e) = result
            && e.code == ErrorCode::UserStopped
            && let Some(stop) = self.last_stop.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
        {
            match e.details.as_deref_mut() {
                Some(Value::Object(map)) => {
                    map.entry("stop").or_insert(stop);
                }
                Some(_) => {}
                None => *e = e.clone().with_details(json!({"stop": stop})),
            }
        }
    }
}
