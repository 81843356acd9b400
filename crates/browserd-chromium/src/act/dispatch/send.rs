//! The last hop: how every family hands its commands to the browser — in order, all queued before any answer is
//! awaited, a dialog opening meanwhile counted as delivered, and a link lost after sending making the outcome unknown.

use std::sync::atomic::Ordering;
use std::time::Duration;

use browserd_protocol::{Dispatch, Outcome};
use serde_json::Value;

use crate::act::fail::{Fail, OUTCOME_UNKNOWN, input_fail};
use crate::act::run::Run;
use crate::provider::remaining;

/// How long the answer to an input is still awaited once a dialog opened while it was pending, to tell whether the
/// page handled it before the dialog (then the dialog came from a later input).
const DIALOG_GRACE: Duration = Duration::from_millis(100);

impl Run<'_> {
    /// Marks that a command changing the page is about to be handed to the browser. Fails (nothing sent) when the
    /// link is already known to be gone.
    pub(super) fn sending(&mut self) -> Result<(), Fail> {
        if let Some(f) = self.link_lost() {
            return Err(f);
        }
        self.sent.store(true, Ordering::SeqCst);
        self.input_at.get_or_insert_with(std::time::Instant::now);
        Ok(())
    }

    /// Sends one input command to the page session (see [`Run::inputs`]).
    pub(super) async fn input(&mut self, method: &str, params: Value) -> Result<(), Fail> {
        self.inputs(vec![(method, params)]).await
    }

    /// Sends input commands to the page session. All of them are handed to the browser, in order, before any answer is
    /// awaited: the browser (and, over the extension relay, the last-hop gate, which checks and dispatches each input in
    /// turn) handles them in that order, and each waits only as long as the page takes to handle the ones before it.
    /// Nothing is sent while a dialog is open once some input of this action went out; a dialog opening while they are
    /// pending counts as delivered. Once a command is handed to the browser a lost connection or target makes the
    /// outcome unknown (the input may have been delivered), never "failed"; so is a command the browser refuses when
    /// one sent after it may have reached the page (the page got the input incomplete).
    pub(super) async fn inputs(&mut self, cmds: Vec<(&str, Value)>) -> Result<(), Fail> {
        if self.dialog_open().is_some() && self.res.dispatch != Dispatch::NotDispatched {
            return Ok(());
        }
        self.sending()?;
        let mut queued = Vec::with_capacity(cmds.len());
        let mut unqueued = None;
        for (method, params) in cmds {
            // Named by the event type in messages (`mousePressed`), else by the method.
            let label = params["type"].as_str().map_or_else(|| method.to_owned(), str::to_owned);
            match self.p.cdp.enqueue(Some(&self.session), method, params, remaining(self.deadline)).await {
                Ok(q) => queued.push((method, label, q)),
                Err(e) => {
                    // Nothing after it is sent: the input stops here.
                    unqueued = Some((method, label, e));
                    break;
                }
            }
        }
        // The answers, in order. A dialog opening while one is awaited counts as that input delivered; the inputs sent
        // after it may reach the page once the dialog is closed (or be dropped by the browser), which is unknown.
        let mut answers = Vec::with_capacity(queued.len());
        let mut queued = queued.into_iter();
        while let Some((method, label, q)) = queued.next() {
            let answer = q.answer();
            tokio::pin!(answer);
            let mut r = loop {
                let notified = self.p.dialog_notify.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.dialog_open().is_some() && self.res.dispatch != Dispatch::NotDispatched {
                    break None;
                }
                tokio::select! {
                    r = &mut answer => break Some(r),
                    () = &mut notified => {
                        if self.dialog_open().is_some() {
                            self.res.dispatch = Dispatch::Dispatched;
                            break None;
                        }
                    }
                }
            };
            if r.is_none() && !queued.as_slice().is_empty() {
                // Which input opened the dialog: one the page has handled is answered even while the dialog is open
                // (though the answer may come just after the dialog's news), one whose handler opened it is not.
                r = tokio::time::timeout(DIALOG_GRACE, &mut answer).await.ok();
            }
            match r {
                Some(r) => {
                    if r.is_ok() {
                        // Seen by the dialog check above while the next answer is awaited.
                        self.res.dispatch = Dispatch::Dispatched;
                    }
                    answers.push((method, label, r));
                }
                None => {
                    let behind: Vec<String> = queued.map(|(_, l, _)| l).collect();
                    if behind.is_empty() {
                        return Ok(());
                    }
                    let kind = self.dialog_open().map_or_else(|| "JavaScript".to_owned(), |d| d.kind);
                    return Err(Fail::new(
                        OUTCOME_UNKNOWN,
                        format!(
                            "a dialog ({kind}) opened before the page had handled {label}; the input sent after it \
                             ({}) may reach the page once the dialog is closed, or be dropped by the browser, so the \
                             outcome is unknown: it is not retried automatically — handle the dialog, then observe the \
                             page before deciding to act again",
                            behind.join(", ")
                        ),
                    )
                    .unknown());
                }
            }
        }
        // The first failure decides, unless an input after it may have reached the page: then the page got the input
        // incomplete.
        let mut failed: Option<(Fail, String)> = None;
        let mut reached_after = false;
        let results =
            answers.into_iter().map(|(m, l, r)| (m, l, r.map(drop))).chain(unqueued.map(|(m, l, e)| (m, l, Err(e))));
        for (method, label, r) in results {
            let e = match r {
                Ok(()) => {
                    self.res.dispatch = Dispatch::Dispatched;
                    reached_after |= failed.is_some();
                    continue;
                }
                Err(e) => e,
            };
            // Earlier input of this action (this call's or an earlier call's, such as a fill's previous chunk) reached
            // the page when any was answered.
            let mut f = input_fail(&e, method, self.res.dispatch != Dispatch::NotDispatched);
            if !f.link
                && let Some(gone) = self.link_lost()
            {
                // Rejected because the link went away meanwhile (the state already knows).
                f = Fail { outcome: Outcome::Unknown, ..gone };
            }
            if f.link {
                self.res.dispatch = Dispatch::Dispatched;
                reached_after |= failed.is_some();
            }
            if failed.is_none() {
                failed = Some((f, format!("{label}: {e}")));
            }
        }
        match failed {
            None => Ok(()),
            Some((f, why)) if reached_after && !f.link => Err(Fail::new(
                OUTCOME_UNKNOWN,
                format!(
                    "the browser refused one input ({why}) but an input sent after it may have reached the page, so \
                     the page may have got it incomplete and the outcome is unknown: it is not retried automatically \
                     — observe the page before deciding to act again"
                ),
            )
            .unknown()),
            Some((f, _)) => Err(f),
        }
    }
}
