//! How an action fails: the failure that ends it ([`Fail`]), made from a CDP error, from browserd's world being
//! unavailable, or from an open dialog, and what a link lost after input means.

use browserd_cdp::{CdpError, SessionId};
use browserd_protocol::{CoveringElement, Outcome, codes};

use crate::provider::truncate;
use crate::world::WorldError;

/// The tab or frame went away (the protocol's `codes` has no constant for it yet).
pub(super) const TARGET_CLOSED: &str = browserd_protocol::ErrorCode::TargetClosed.as_str();
/// The input was sent and whether it took effect could not be established.
pub(super) const OUTCOME_UNKNOWN: &str = browserd_protocol::ErrorCode::OutcomeUnknown.as_str();

/// A failure that ends the action.
#[derive(Debug)]
pub(super) struct Fail {
    pub(super) code: &'static str,
    pub(super) message: String,
    pub(super) outcome: Outcome,
    pub(super) covering: Option<CoveringElement>,
    pub(super) candidates: Vec<String>,
    /// The link to the page failed (connection, target, deadline or cancellation on a CDP call): once input may
    /// have been sent, such a failure makes the outcome unknown.
    pub(super) link: bool,
    /// The node that would receive the input instead of the target (session, frame id, backend id); described as
    /// `covering` only when the failure is final.
    pub(super) cover_at: Option<(SessionId, String, i64)>,
    /// browserd's isolated world could not be used, so a check or read-back could not be made out of the page's
    /// reach (it is never made in the page's world instead).
    pub(super) world: bool,
}

impl Fail {
    /// The extension's last-hop gate refused the command and nothing of the action reached the page.
    pub(super) fn gate_refused_whole(&self) -> bool {
        matches!(self.code, USER_STOPPED | LEASE_REVOKED) && self.outcome != Outcome::Unknown
    }

    pub(super) fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            outcome: Outcome::Failed,
            covering: None,
            candidates: Vec::new(),
            link: false,
            cover_at: None,
            world: false,
        }
    }

    pub(super) fn covered_at(session: &SessionId, frame: &str, backend: i64) -> Self {
        let mut f = Self::new(codes::NOT_ACTIONABLE, "the target is covered by another element");
        f.cover_at = Some((session.clone(), frame.to_owned(), backend));
        f
    }
    pub(super) fn unknown(mut self) -> Self {
        self.outcome = Outcome::Unknown;
        self
    }
}

pub(super) fn cdp_fail(e: &CdpError, what: &str, dispatched: bool) -> Fail {
    // A single command refused by the gate: nothing of the action reached the page (see [`input_fail`] for inputs).
    if let Some(f) = gate_fail(e, what, false) {
        return f;
    }
    let f = match e {
        CdpError::Timeout { .. } => Fail::new(codes::DEADLINE_EXCEEDED, format!("{what}: the deadline passed")),
        CdpError::ConnectionClosed { .. } | CdpError::Transport(_) => {
            Fail::new(codes::CONNECTION_LOST, format!("{what}: {e}"))
        }
        CdpError::TargetClosed { reason } => {
            Fail::new(TARGET_CLOSED, format!("{what}: the tab or frame went away ({reason})"))
        }
        CdpError::Cancelled => {
            Fail { outcome: Outcome::Cancelled, ..Fail::new(codes::CANCELLED, format!("{what}: cancelled")) }
        }
        CdpError::Protocol { message, .. } if target_went_away(message) => {
            Fail::new(TARGET_CLOSED, format!("{what}: the tab or frame went away ({message})"))
        }
        _ => return Fail::new(codes::ACTION_FAILED, format!("{what}: {e}")),
    };
    let f = Fail { link: true, ..f };
    if dispatched { f.unknown() } else { f }
}

/// An input command handed to the browser failed; `earlier` says whether input of this action sent before it reached
/// the page (a fill's earlier chunk, a click's `mousePressed`). A lost link makes the outcome unknown; so does the
/// gate's refusal once earlier input got through, since the page then got the action incomplete.
pub(super) fn input_fail(e: &CdpError, what: &str, earlier: bool) -> Fail {
    gate_fail(e, what, earlier).unwrap_or_else(|| cdp_fail(e, what, true))
}

/// The extension's last-hop gate refused the command (it never reached the page); `earlier` says whether input of
/// this action sent before it did.
fn gate_fail(e: &CdpError, what: &str, earlier: bool) -> Option<Fail> {
    let CdpError::Protocol { message, .. } = e else { return None };
    let code = gate_refusal(message)?;
    let why = if code == USER_STOPPED {
        "the user's Stop holds until the agent resumes the tab (a new lease and a full observation)"
    } else {
        "the write lease on the tab moved on"
    };
    Some(if earlier {
        Fail::new(
            code,
            format!(
                "{what}: refused by the extension's gate ({message}), but earlier input of this action did reach the \
                 page, so the page may have got the action incomplete and the outcome is unknown: it is not retried \
                 automatically — {why}; observe the tab before deciding to act again"
            ),
        )
        .unknown()
    } else {
        let next =
            if code == USER_STOPPED { why.to_owned() } else { format!("{why}; observe the tab again, then act") };
        Fail::new(
            code,
            format!("{what}: refused by the extension's gate ({message}); nothing of it reached the page — {next}"),
        )
    })
}

/// A failure to use browserd's isolated world while `what`: a link failure is one like any other call's; otherwise the
/// step fails closed (see [`Fail::world`]), and `act_inner` says whether anything had been sent.
pub(super) fn world_fail(e: WorldError, what: &str) -> Fail {
    match e {
        WorldError::Link(e) => cdp_fail(&e, what, false),
        WorldError::Unavailable(why) => Fail {
            world: true,
            ..Fail::new(
                codes::ACTION_FAILED,
                format!(
                    "{what}: browserd could not use its isolated world in this frame ({why}); it never checks or reads \
                     the page from the page's own world, where the page's scripts could fake the answer"
                ),
            )
        },
        WorldError::Script(why) => Fail::new(
            codes::ACTION_FAILED,
            format!("{what}: browserd's script failed ({why}); observe the page and try another way"),
        ),
    }
}

/// Whether a protocol error says the target or its session went away while the command was handled (Chromium's
/// and `chrome.debugger`'s wordings).
pub(crate) fn target_went_away(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "detached while handling",
        "target closed",
        "session with given id not found",
        "no session with given id",
        "no target with given id",
        "inspected target navigated or closed",
        "debugger is not attached",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// The user pressed Stop (the extension's gate refused the command).
const USER_STOPPED: &str = browserd_protocol::ErrorCode::UserStopped.as_str();
/// The command's fencing token or control epoch is not the tab's current lease (the extension's gate refused it).
const LEASE_REVOKED: &str = browserd_protocol::ErrorCode::LeaseRevoked.as_str();

/// The code of the extension's last-hop gate when a protocol error is its refusal (the relay answers
/// `<CODE>: <why>`): `USER_STOPPED` or `LEASE_REVOKED`. Such a command never reached the page.
pub(crate) fn gate_refusal(message: &str) -> Option<&'static str> {
    [USER_STOPPED, LEASE_REVOKED].into_iter().find(|code| message.contains(&format!("{code}: ")))
}

/// The message of an action whose input may have reached the page when the link failed.
pub(super) fn unknown_message(why: &str) -> String {
    format!(
        "{why}; the input may already have reached the page, so the outcome is unknown: it is not retried \
         automatically — observe the page (reconnecting first if needed) before deciding to act again"
    )
}

/// The failure of an action (other than `dialog`) tried while a dialog is open.
pub(super) fn blocked_by(d: &browserd_protocol::DialogInfo) -> Fail {
    Fail::new(
        codes::DIALOG_BLOCKING,
        format!(
            "a {} dialog is open ({:?}); handle it with the dialog action (accept or dismiss) first",
            d.kind,
            truncate(&d.message, 80)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(code: &str) -> CdpError {
        CdpError::Protocol { code: -32000, message: format!("Input.dispatchMouseEvent: {code}: the gate said no") }
    }

    #[test]
    fn a_gate_refusal_after_earlier_input_of_the_action_reached_the_page_is_unknown() {
        for code in [LEASE_REVOKED, USER_STOPPED] {
            let f = input_fail(&refused(code), "mouseReleased", true);
            assert_eq!((f.outcome, f.code), (Outcome::Unknown, code), "{f:?}");
            assert!(f.message.contains("earlier input of this action did reach the page"), "{}", f.message);
            assert!(f.message.contains("observe the tab"), "{}", f.message);
            assert!(!f.message.contains("nothing of it reached"), "{}", f.message);
        }
    }

    #[test]
    fn a_gate_refusal_of_the_first_input_says_nothing_reached_the_page() {
        for code in [LEASE_REVOKED, USER_STOPPED] {
            for f in [input_fail(&refused(code), "mousePressed", false), cdp_fail(&refused(code), "navigating", true)] {
                assert_eq!((f.outcome, f.code), (Outcome::Failed, code), "{f:?}");
                assert!(f.message.contains("nothing of it reached the page"), "{}", f.message);
                assert!(!f.link, "a refusal is not a lost link: {f:?}");
                assert!(f.gate_refused_whole(), "nothing of the action was sent: {f:?}");
            }
            assert!(!input_fail(&refused(code), "mouseReleased", true).gate_refused_whole());
        }
        let lost = CdpError::ConnectionClosed { reason: "gone".into() };
        assert!(!cdp_fail(&lost, "navigating", true).gate_refused_whole());
    }

    #[test]
    fn a_lost_link_on_an_input_is_unknown_whatever_went_before() {
        for earlier in [false, true] {
            let f = input_fail(&CdpError::TargetClosed { reason: "gone".into() }, "mousePressed", earlier);
            assert_eq!((f.outcome, f.link), (Outcome::Unknown, true), "{f:?}");
        }
    }
}
