//! Approvals: an action whose class the policy puts under approval runs only with the user's approval of exactly it.
//! An approval binds the browser instance, the origin, the action class, a digest of the target (its role and name,
//! and which node of which document of which frame it is, as the browser found it before the action) and a hash of
//! the action's parameters, and expires after [`APPROVAL_TTL`]; it is used once. A changed target or parameter is
//! another action, which needs its own approval: two same-named buttons are two targets, and the same button after
//! the page loaded a new document is another one.
//!
//! The broker asks by answering `APPROVAL_REQUIRED` with what the user must confirm and the approval's id; the host's
//! UI grants it with the `approval.grant` method (`browserd approve <id>` on a terminal), and the same call again then
//! runs. The hosts ask for the user: `browserd mcp` through MCP elicitation, the Pi and DSH adapters through their
//! confirm and approval UIs; each then calls `approval.grant` with the answer's id. A file outside the upload roots is
//! approved the same way, bound to that exact file (`approved_files`).
//!
//! Approvals are kept in memory only, on purpose: they live five minutes and are used once, and they bind the browser
//! instance (`browser_instance`: this broker's run of its browser), which a restarted broker no longer has — a
//! persisted approval could never match again, and a file of granted approvals would only be something to replay.
//! After a restart the same call answers `APPROVAL_REQUIRED` with a new id.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use browserd_protocol::policy::ActionClass;
use browserd_protocol::{ActParams, ErrorCode, ErrorData, SessionId};
use serde_json::json;

/// How long an approval (asked or granted) stays valid.
pub const APPROVAL_TTL: Duration = Duration::from_secs(300);

/// At most this many approvals are kept (oldest dropped first).
const MAX_KEPT: usize = 256;

/// What an approval is for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Binding {
    /// The session asking.
    pub session: SessionId,
    /// The browser instance (which browser, this broker's run of it).
    pub browser: String,
    /// The page's origin.
    pub origin: String,
    /// The action class.
    pub class: ActionClass,
    /// Digest of the target: its role and name, and its frame, document and node when the browser found it.
    pub target: u64,
    /// Hash of the action's parameters (action, value and the rest; not `requestId`, `timeoutMs`, `tab`, `target`).
    pub params: u64,
}

impl Binding {
    /// The binding of `step` on `origin`, whose target is `target` (its role and name, with its frame, document and
    /// node when known).
    #[must_use]
    pub fn of(
        session: &SessionId,
        browser: &str,
        origin: &str,
        class: ActionClass,
        target_line: Option<&str>,
        step: &ActParams,
    ) -> Binding {
        let mut v = serde_json::to_value(step).unwrap_or_default();
        if let Some(map) = v.as_object_mut() {
            // The target is bound by its digest (role, name and node), not by its ref, which a new observation renames.
            for k in ["requestId", "timeoutMs", "tab", "target"] {
                map.remove(k);
            }
        }
        // No ref in `target`: the same node under a new ref is the same target.
        let target = target_line.map(str::to_owned);
        Binding {
            session: session.clone(),
            browser: browser.to_owned(),
            origin: origin.to_owned(),
            class,
            target: digest(&target),
            params: digest(&v.to_string()),
        }
    }
}

fn digest<T: Hash>(value: &T) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

#[derive(Debug)]
struct Entry {
    binding: Binding,
    granted: bool,
    expires: Instant,
    summary: String,
}

/// The approvals asked for and granted.
#[derive(Debug, Default)]
pub struct Approvals {
    inner: Mutex<(u64, HashMap<String, Entry>)>,
}

/// What `approval.grant` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Granted {
    /// Granted: what the user approved.
    Granted(String),
    /// No such approval (never asked, used, or expired).
    Unknown,
}

impl Approvals {
    fn lock(&self) -> MutexGuard<'_, (u64, HashMap<String, Entry>)> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Uses a granted approval of exactly `binding` (once), or asks for one: `Err` with its id.
    ///
    /// # Errors
    /// The id of the approval to grant, new or already asked.
    pub fn take_or_ask(&self, binding: &Binding, summary: &str, now: Instant) -> Result<(), String> {
        let mut g = self.lock();
        let (next, map) = &mut *g;
        map.retain(|_, e| e.expires > now);
        if let Some(id) = map.iter().find(|(_, e)| e.binding == *binding && e.granted).map(|(id, _)| id.clone()) {
            map.remove(&id);
            return Ok(());
        }
        if let Some((id, _)) = map.iter().find(|(_, e)| e.binding == *binding) {
            return Err(id.clone());
        }
        if map.len() >= MAX_KEPT
            && let Some(oldest) = map.iter().min_by_key(|(_, e)| e.expires).map(|(id, _)| id.clone())
        {
            map.remove(&oldest);
        }
        *next += 1;
        // Not guessable from the outside: the counter and a digest of the binding and the time.
        let id = format!("a{}-{:08x}", *next, digest(&(binding, now.elapsed().as_nanos(), *next)) as u32);
        map.insert(
            id.clone(),
            Entry {
                binding: binding.clone(),
                granted: false,
                expires: now + APPROVAL_TTL,
                summary: summary.to_owned(),
            },
        );
        Err(id)
    }

    /// The user grants the approval `id` (valid until it expires, for one use).
    pub fn grant(&self, id: &str, now: Instant) -> Granted {
        let mut g = self.lock();
        match g.1.get_mut(id).filter(|e| e.expires > now) {
            Some(e) => {
                e.granted = true;
                e.expires = now + APPROVAL_TTL;
                Granted::Granted(e.summary.clone())
            }
            None => Granted::Unknown,
        }
    }
}

/// What an `APPROVAL_REQUIRED` answer asks the user to confirm.
#[derive(Debug, Clone)]
pub struct Asked<'a> {
    /// The approval's id.
    pub id: &'a str,
    /// The action, in a sentence (action, target, value, tab, why).
    pub summary: &'a str,
    /// The action's class.
    pub class: ActionClass,
    /// The page's origin.
    pub origin: &'a str,
    /// The step (its action and value are named in the details).
    pub step: &'a ActParams,
    /// The target's role and name as the caller was shown them (`None`: the page itself).
    pub target: Option<&'a str>,
}

/// The `APPROVAL_REQUIRED` answer: what the user must confirm, and how. The details name the action, its class,
/// target, value and origin, so a host's approval UI (MCP elicitation, Pi's confirm, DSH's pre-execute approval) can
/// show exactly what will be done.
#[must_use]
pub fn approval_required(asked: &Asked<'_>) -> ErrorData {
    let Asked { id, summary, class, origin, step, target } = asked;
    let action = serde_json::to_value(step.action).unwrap_or_default();
    ErrorData::new(
        ErrorCode::ApprovalRequired,
        format!("{summary} needs the user's approval ({} on {origin}); nothing was sent", class.as_str()),
    )
    .with_next_step(format!(
        "Ask the user to confirm exactly this; their approval (the host's approval UI, or `browserd approve {id}` in a \
         terminal) lets the same call run once within {} minutes. A changed target or value needs a new approval.",
        APPROVAL_TTL.as_secs() / 60
    ))
    .with_details(json!({
        "approval": id,
        "class": class,
        "origin": origin,
        "action": action,
        "target": target,
        "value": step.value,
        "confirm": summary,
        "expiresInMs": APPROVAL_TTL.as_millis() as u64,
    }))
}

/// The refusal of an action with a target (a screenshot point, a ref) that could not be described (`described`:
/// the browser found it; `observed`: the latest observation has its line), while approvals are in force: its class
/// is unknown, so it is refused with nothing sent, and the caller retries on a fresh screenshot or observation (the
/// page was changing, e.g. navigating). `None`: the action may be classed.
#[must_use]
pub fn undescribed(step: &ActParams, described: bool, observed: bool) -> Option<ErrorData> {
    if described || !step.action.acts_on_a_node() {
        return None;
    }
    if let Some(pt) = &step.at {
        return Some(
            ErrorData::new(
                ErrorCode::StaleTarget,
                format!(
                    "the point ({:.0}, {:.0}) of screenshot {} could not be checked against the page (it may be \
                     changing), so the action's approval class is unknown; nothing was sent",
                    pt.x, pt.y, pt.image_id
                ),
            )
            .with_next_step(
                "Take a new screenshot (browser_observe with screenshot) and act at the point on it; the user's \
                 approval is asked when the action needs it.",
            ),
        );
    }
    let target = step.target.as_ref().filter(|_| !observed)?;
    Some(
        ErrorData::new(
            ErrorCode::StaleTarget,
            format!(
                "the target {} could not be found on the page nor in the latest observation, so the action's \
                 approval class is unknown; nothing was sent",
                target.as_str()
            ),
        )
        .with_next_step("Observe again (browser_observe) and use a ref from the new observation."),
    )
}

impl crate::server::Broker {
    /// The action classes that need the user's approval: `[policy] require_approval`, else `highRisk` on the user's
    /// own browser and none on a managed one.
    pub(crate) fn approval_classes(&self) -> Vec<ActionClass> {
        let configured: Vec<ActionClass> =
            self.config.policy.require_approval.iter().filter_map(|c| ActionClass::parse(c)).collect();
        if !configured.is_empty() {
            return configured;
        }
        if self.real_profile() { vec![ActionClass::HighRisk] } else { Vec::new() }
    }

    /// `approval.grant`.
    pub(crate) fn approval_grant(
        &self,
        p: &browserd_protocol::policy::ApprovalGrantParams,
    ) -> Result<browserd_protocol::policy::ApprovalGrantResult, ErrorData> {
        match self.approvals.grant(p.approval.trim(), Instant::now()) {
            Granted::Granted(approved) => {
                tracing::info!(approval = %p.approval, "the user approved an action");
                Ok(browserd_protocol::policy::ApprovalGrantResult {
                    approved,
                    expires_in_ms: APPROVAL_TTL.as_millis() as u64,
                })
            }
            Granted::Unknown => Err(ErrorData::new(
                ErrorCode::InvalidParams,
                format!("no approval `{}` is waiting (never asked, already used, or expired)", p.approval),
            )
            .with_next_step("Run the action again: its APPROVAL_REQUIRED answer names a fresh approval id.")),
        }
    }
}

impl crate::tools::ToolCtx<'_> {
    /// Before an action on `tab`: its class (see `classes`), and when the policy puts that class under approval, a
    /// granted approval of exactly this action (used up here), else `APPROVAL_REQUIRED`. The target is what the
    /// browser finds for the action now (`describe_target`: a ref's node, the node a screenshot point hits), else its
    /// line in the tab's latest observation.
    pub(crate) async fn check_approval(
        &self,
        tab: browserd_core::provider::TabHandle,
        step: &ActParams,
    ) -> Result<(), ErrorData> {
        let needs = self.broker.approval_classes();
        if needs.is_empty() {
            return Ok(());
        }
        let url = self.broker.runtime.inspect(|e| e.tabs().get(tab).map(|r| r.url.clone())).unwrap_or_default();
        let seen = self.broker.gate.last_observation(tab);
        let content = seen.as_deref().and_then(|o| o["untrustedContent"].as_str());
        // A failure to read the target is the failure the action would meet: answered as the action's own error.
        let described =
            self.runtime().describe_target(self.key, tab, step).await.map_err(|e| crate::dispatch::err(&e))?;
        let observed = super::classes::target_line(step, content);
        // Approvals are in force: an action on a target neither the browser nor the observation can name cannot be
        // classed, so it does not run as if it were plain input.
        if let Some(refusal) = undescribed(step, described.is_some(), observed.is_some()) {
            return Err(refusal);
        }
        let (target, line, identity) = match &described {
            Some(d) => {
                let line = format!("{} \"{}\"", d.role, d.name);
                // Bound to this node of this document of this frame: a same-named node elsewhere is another target.
                let identity = format!("{line} frame={} document={} node={}", d.frame, d.document, d.node);
                (Some(super::classes::Target::described(d)), Some(line), Some(identity))
            }
            None => (observed.as_deref().and_then(super::classes::Target::of_line), observed.clone(), observed),
        };
        let (class, why) = super::classes::classify(step, target.as_ref(), &url);
        if !needs.contains(&class) {
            return Ok(());
        }
        let origin = super::sites::Origin::of(&url).map_or_else(|| url.clone(), |o| o.to_string());
        let action = serde_json::to_value(step.action).ok().and_then(|v| v.as_str().map(str::to_owned));
        let mut summary = format!("{} {}", action.unwrap_or_default(), line.as_deref().unwrap_or("the page"));
        if let Some(pt) = &step.at {
            summary.push_str(&format!(" at ({:.0}, {:.0}) of screenshot {}", pt.x, pt.y, pt.image_id));
        }
        if let Some(value) = &step.value {
            summary.push_str(&format!(" with {value:?}"));
        }
        summary.push_str(&format!(" in tab {} ({why})", tab.0));
        let binding = Binding::of(self.session, &self.browser_instance(), &origin, class, identity.as_deref(), step);
        match self.broker.approvals.take_or_ask(&binding, &summary, Instant::now()) {
            Ok(()) => {
                tracing::info!(class = class.as_str(), "an approved action runs");
                Ok(())
            }
            Err(id) => Err(approval_required(&Asked {
                id: &id,
                summary: &summary,
                class,
                origin: &origin,
                step,
                target: line.as_deref(),
            })),
        }
    }

    /// The browser instance an approval binds: which browser, and this broker's run of it.
    pub(crate) fn browser_instance(&self) -> String {
        format!("{:?}@{:?}", self.broker.provider.kind(), self.broker.started)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(v: serde_json::Value) -> ActParams {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_target_that_cannot_be_described_is_refused_not_classed_as_input() {
        let at = step(json!({"action": "click", "at": {"imageId": "img3", "x": 10.0, "y": 20.0}}));
        // The point's node could not be read (e.g. the page was navigating): no observation line names a point.
        let e = undescribed(&at, false, false).expect("refused");
        assert_eq!(e.code, ErrorCode::StaleTarget, "{e:?}");
        assert!(e.message.contains("nothing was sent") && e.message.contains("img3"), "{e:?}");
        assert!(e.next_step.contains("screenshot"), "{e:?}");
        assert!(undescribed(&at, true, false).is_none(), "described: classed by what the browser found");
        // A ref neither the browser nor the latest observation knows.
        let stale = step(json!({"action": "click", "target": "e9"}));
        let e = undescribed(&stale, false, false).expect("refused");
        assert_eq!(e.code, ErrorCode::StaleTarget, "{e:?}");
        assert!(e.next_step.contains("browser_observe"), "{e:?}");
        assert!(undescribed(&stale, false, true).is_none(), "its observation line classes it");
        // Actions without a target are classed by themselves.
        assert!(undescribed(&step(json!({"action": "navigate", "value": "http://a.test"})), false, false).is_none());
        assert!(undescribed(&step(json!({"action": "press", "value": "Enter"})), false, false).is_none());
    }

    #[test]
    fn an_approval_binds_its_action_is_used_once_and_expires() {
        let s = SessionId::new("s1");
        let click = step(json!({"action": "click", "target": "e5", "requestId": "r1"}));
        let b = Binding::of(&s, "managed", "http://a.test", ActionClass::HighRisk, Some("button \"Delete\""), &click);
        let store = Approvals::default();
        let t0 = Instant::now();
        let id = store.take_or_ask(&b, "click button \"Delete\"", t0).unwrap_err();
        assert_eq!(store.take_or_ask(&b, "x", t0).unwrap_err(), id, "asking again names the same approval");
        assert_eq!(store.grant("nope", t0), Granted::Unknown);
        assert!(matches!(store.grant(&id, t0), Granted::Granted(s) if s.contains("Delete")));
        // Another target, value or origin is another action.
        let other =
            Binding::of(&s, "managed", "http://a.test", ActionClass::HighRisk, Some("button \"Delete all\""), &click);
        assert!(store.take_or_ask(&other, "x", t0).is_err());
        let changed = step(json!({"action": "dblclick", "target": "e5"}));
        let b2 =
            Binding::of(&s, "managed", "http://a.test", ActionClass::HighRisk, Some("button \"Delete\""), &changed);
        assert!(store.take_or_ask(&b2, "x", t0).is_err());
        // The same action under a new requestId and a new ref of the same button: approved, once.
        let again = step(json!({"action": "click", "target": "e5", "requestId": "r2"}));
        let b3 = Binding::of(&s, "managed", "http://a.test", ActionClass::HighRisk, Some("button \"Delete\""), &again);
        assert_eq!(store.take_or_ask(&b3, "x", t0), Ok(()));
        assert!(store.take_or_ask(&b3, "x", t0).is_err(), "used once");
        // Another value, session or browser instance (a restarted broker's browser) is another action too.
        let typed = |v: &str| step(json!({"action": "fill", "target": "e2", "value": v}));
        let fill = Binding::of(&s, "managed", "http://a.test", ActionClass::Input, Some("textbox \"To\""), &typed("a"));
        let id = store.take_or_ask(&fill, "fill", t0).unwrap_err();
        assert!(matches!(store.grant(&id, t0), Granted::Granted(_)));
        let other_value =
            Binding::of(&s, "managed", "http://a.test", ActionClass::Input, Some("textbox \"To\""), &typed("b"));
        let other_session = Binding { session: SessionId::new("s2"), ..fill.clone() };
        let restarted = Binding { browser: "managed@later".into(), ..fill.clone() };
        for b in [&other_value, &other_session, &restarted] {
            assert!(store.take_or_ask(b, "x", t0).is_err(), "{b:?} is not the approved action");
        }
        assert_eq!(store.take_or_ask(&fill, "x", t0), Ok(()), "the approved one still runs, once");
        // Expired.
        let id = store.take_or_ask(&b, "x", t0).unwrap_err();
        assert_eq!(store.grant(&id, t0 + APPROVAL_TTL + Duration::from_secs(1)), Granted::Unknown);
    }
}
