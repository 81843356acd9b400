//! Stop: `broker.stopGate` (and a Stop from the extension) cancels queued and running page work and releases every
//! write lease; what the Stop reported goes into the `details.stop` of the `USER_STOPPED` answers it caused.

use browserd_core::provider::{SessionKey, TabHandle};
use browserd_protocol::{ErrorCode, ErrorData};
use serde_json::{Value, json};

use crate::server::{Broker, StopGateResult};
use crate::to_proto;

impl Broker {
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
