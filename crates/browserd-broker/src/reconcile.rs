//! Finishing a previous broker's cleanup on a remote endpoint: its recovery records' tabs found again by target id
//! over a fresh DevTools connection, retried with backoff.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use browserd_protocol::ErrorCode;
use serde_json::json;

use crate::dedup::DedupLog;
use crate::journal::TARGET_KEY_PREFIX;
use crate::server::Broker;

impl Broker {
    /// Finishes the cleanup a previous broker left for the remote endpoint: each recovery record's tab is found again
    /// by its target id over a fresh DevTools connection — closed (confirmed) when it is still open, resolved
    /// `alreadyGone` when it is not. A claim or a debugger session lived only in the dead broker and its connection,
    /// so a release or detach is already done. Retried with backoff (500 ms doubling to 60 s) while the endpoint
    /// cannot be reached, until every such record is resolved or the broker stops.
    /// Returns how many records it took on.
    pub(crate) fn spawn_remote_reconciliation(self: &Arc<Self>, log: Arc<DedupLog>) -> usize {
        let Some(url) = self.remote_endpoint() else { return 0 };
        let key = format!("{}{url}", crate::dedup::REMOTE_KEY_PREFIX);
        let ids: BTreeSet<_> = log.pending_for_browser(&key).into_iter().map(|r| r.id).collect();
        if ids.is_empty() {
            return 0;
        }
        let count = ids.len();
        tracing::info!(count = ids.len(), endpoint = %url, "reconciling a previous broker's recovery records");
        let shutdown = self.shutdown.clone();
        let task = async move {
            let mut delay = Duration::from_millis(500);
            loop {
                let left: Vec<_> = log.pending_for_browser(&key).into_iter().filter(|r| ids.contains(&r.id)).collect();
                if left.is_empty() {
                    tracing::info!("the previous broker's recovery records are resolved");
                    return;
                }
                if let Err(e) = reconcile_remote(&url, &log, &left).await {
                    tracing::warn!(%e, endpoint = %url, retry_in_ms = delay.as_millis(), "recovery retry failed");
                    for r in &left {
                        log.attempt_failed(r.id, ErrorCode::ConnectionLost.as_str(), &e);
                    }
                }
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = shutdown.cancelled() => return,
                }
                delay = (delay * 2).min(Duration::from_secs(60));
            }
        };
        tokio::spawn(task);
        count
    }
}

/// One reconciliation pass over `records` against the remote endpoint at `url`.
async fn reconcile_remote(
    url: &str,
    log: &DedupLog,
    records: &[browserd_journal::recovery::RecoveryRecord],
) -> Result<(), String> {
    use browserd_journal::recovery::{CleanupOp, Resolution};
    const CALL: Duration = Duration::from_secs(5);
    let cdp = match tokio::time::timeout(CALL, browserd_cdp::connect_ws(url)).await {
        Ok(connected) => connected.map_err(|e| format!("connecting to {url}: {e}"))?,
        Err(_) => return Err(format!("connecting to {url}: no answer within {} s", CALL.as_secs())),
    };
    let targets = cdp
        .call(None, "Target.getTargets", json!({}), CALL)
        .await
        .map_err(|e| format!("listing the targets of {url}: {e}"))?;
    let open: BTreeSet<String> = targets["targetInfos"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["targetId"].as_str().map(str::to_owned))
        .collect();
    for record in records {
        let Some(target) = record.tab.strip_prefix(TARGET_KEY_PREFIX) else {
            // A handle-keyed record cannot be found again; it stays pending for `browserd status` and the user.
            continue;
        };
        if !open.contains(target) {
            log.resolve(record.id, Resolution::AlreadyGone);
            continue;
        }
        match record.op {
            CleanupOp::Close => match cdp.call(None, "Target.closeTarget", json!({"targetId": target}), CALL).await {
                Ok(_) => {
                    tracing::info!(id = %record.id, "a previous broker's tab was closed");
                    log.resolve(record.id, Resolution::Confirmed);
                }
                Err(e) => log.attempt_failed(record.id, ErrorCode::CleanupFailed.as_str(), &e.to_string()),
            },
            // The claim was the dead broker's metadata and its debugger sessions ended with its connection.
            CleanupOp::Release | CleanupOp::DetachDebugger => log.resolve(record.id, Resolution::Confirmed),
        }
    }
    Ok(())
}
