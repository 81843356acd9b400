//! Where the site policy is enforced: the broker's [`Policy`] holds the `[policy]` lists, each session's own lists
//! and which session uses which tab; it answers the checks of the tools (before a navigation or an open, after every
//! action and observation) and hands the provider the same decision ([`Policy::origin_check`]) for the documents only
//! the provider sees (frames, the page an action or observation finds).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use browserd_core::provider::TabHandle;
use browserd_protocol::{ErrorCode, ErrorData, SessionId};
use serde_json::json;

use super::sites::{Denied, OriginPattern, SessionSites, SitePolicy};

/// The site policy in force and who uses which tab.
#[derive(Debug, Default)]
pub struct Policy {
    /// `[policy]`.
    pub sites: SitePolicy,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    sessions: HashMap<SessionId, Arc<SessionSites>>,
    tabs: HashMap<TabHandle, SessionId>,
    /// Bumped whenever a session's lists change (the extension's gate gets them again).
    generation: u64,
}

/// The sessions' own lists for the extension's last-hop gate (`policy.set`'s `sessions`), with the generation they are
/// of: a newer generation is handed to the extension before the next browser call.
pub type GateSessions = Arc<dyn Fn() -> (u64, serde_json::Value) + Send + Sync>;

impl Policy {
    /// The policy of `[policy]`.
    #[must_use]
    pub fn new(sites: SitePolicy) -> Arc<Self> {
        Arc::new(Policy { sites, state: Mutex::default() })
    }

    /// The policy of a `[policy]` section (its patterns were checked when the config was read; one that does not
    /// parse here is left out of an allow list and kept out of nothing: a bad deny pattern denies every web origin).
    #[must_use]
    pub fn from_config(config: &crate::config::PolicyConfig) -> Arc<Self> {
        let parse = |items: &[String], fallback: &str| -> Vec<OriginPattern> {
            items
                .iter()
                .filter_map(|i| match OriginPattern::parse(i) {
                    Ok(p) => Some(p),
                    Err(e) => {
                        tracing::warn!(error = %e, "ignoring a bad [policy] pattern");
                        OriginPattern::parse(fallback).ok()
                    }
                })
                .collect()
        };
        let allow = parse(&config.allow, "0.0.0.0:1");
        let deny = parse(&config.deny, "*");
        Policy::new(SitePolicy::new(allow, deny, config.real_profile_defaults))
    }

    /// The Chromium provider's configuration with this policy's origin check.
    #[must_use]
    pub fn chromium_config(self: &Arc<Self>) -> browserd_chromium::ChromiumConfig {
        browserd_chromium::ChromiumConfig { origin_check: Some(self.origin_check()), ..Default::default() }
    }

    /// `files` (the `[files]` section's upload roots and download directory) with this policy's origin check.
    #[must_use]
    pub fn with_files(self: &Arc<Self>, files: browserd_chromium::ChromiumConfig) -> browserd_chromium::ChromiumConfig {
        browserd_chromium::ChromiumConfig { origin_check: Some(self.origin_check()), ..files }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets (or clears, with an empty policy) a session's own lists.
    pub fn set_session(&self, session: &SessionId, sites: SessionSites) {
        let mut st = self.state();
        let changed = if sites == SessionSites::default() {
            st.sessions.remove(session).is_some()
        } else {
            st.sessions.insert(session.clone(), Arc::new(sites.clone())).is_none_or(|old| *old != sites)
        };
        if changed {
            st.generation += 1;
        }
    }

    /// Forgets a closed session.
    pub fn forget_session(&self, session: &SessionId) {
        let mut st = self.state();
        if st.sessions.remove(session).is_some() {
            st.generation += 1;
        }
        st.tabs.retain(|_, s| s != session);
    }

    /// The sessions' own lists as the extension's gate takes them (`{"<session>": {allowed, blocked}}`), read when
    /// the broker next talks to the extension.
    #[must_use]
    pub fn gate_sessions(self: &Arc<Self>) -> GateSessions {
        let policy = Arc::downgrade(self);
        Arc::new(move || {
            let Some(policy) = policy.upgrade() else { return (0, json!({})) };
            let st = policy.state();
            let texts = |v: &[OriginPattern]| v.iter().map(|p| p.as_str().to_owned()).collect::<Vec<_>>();
            let sessions: serde_json::Map<String, serde_json::Value> = st
                .sessions
                .iter()
                .map(|(id, l)| {
                    (id.as_str().to_owned(), json!({"allowed": texts(&l.allowed), "blocked": texts(&l.blocked)}))
                })
                .collect();
            (st.generation, serde_json::Value::Object(sessions))
        })
    }

    /// `tab` is used by `session` from now on (its lists apply to what the provider finds there).
    pub fn bind_tab(&self, tab: TabHandle, session: &SessionId) {
        let mut st = self.state();
        if st.tabs.len() > 4096 {
            st.tabs.clear();
        }
        st.tabs.insert(tab, session.clone());
    }

    /// The session's own lists.
    #[must_use]
    pub fn session(&self, session: &SessionId) -> Option<Arc<SessionSites>> {
        self.state().sessions.get(session).cloned()
    }

    /// Whether `url` may be shown and acted on by `session`.
    ///
    /// # Errors
    /// Why not.
    pub fn decide(&self, session: Option<&SessionId>, url: &str, real_profile: bool) -> Result<(), Denied> {
        let own = session.and_then(|s| self.session(s));
        self.sites.decide(url, own.as_deref(), real_profile)
    }

    /// The check the provider asks for `tab`'s documents: the lists of the session using the tab; for a request it
    /// cannot place in a tab, the lists that apply whatever the session (`[policy]`, and the real-profile list on the
    /// user's browser).
    #[must_use]
    pub fn origin_check(self: &Arc<Self>) -> browserd_chromium::OriginCheck {
        let policy = Arc::downgrade(self);
        browserd_chromium::OriginCheck(Arc::new(move |tab, url, real_profile| {
            let policy = policy.upgrade()?;
            let session = tab.and_then(|t| policy.state().tabs.get(&t).cloned());
            policy.decide(session.as_ref(), url, real_profile).err().map(|d| d.sentence())
        }))
    }
}

/// The `ORIGIN_NOT_AUTHORISED` answer: what was refused, the origin and what the user can change.
#[must_use]
pub fn not_authorised(what: &str, denied: &Denied) -> ErrorData {
    ErrorData::new(ErrorCode::OriginNotAuthorised, format!("{what}: {}", denied.sentence()))
        .with_next_step(format!(
            "Ask the user to allow it ({}), or work on another site; browser_status shows the policy.",
            denied.change
        ))
        .with_details(json!({"origin": denied.origin}))
}

/// What a tab list (`browser_list`, `browser_status`, `browserd status`) shows for a tab at `url` the policy refuses:
/// `<origin> (not authorised)` for an origin the site policy does not authorise for `session`, `<scheme>: (not
/// authorised)` for a refused scheme; `None` when the URL (and the title) may be shown.
#[must_use]
pub fn withheld_url(broker: &crate::server::Broker, session: Option<&SessionId>, url: &str) -> Option<String> {
    if url.is_empty() {
        return None;
    }
    let rules = super::schemes::Rules::of(&broker.config);
    if super::schemes::shown_refusal(url, rules).is_some() {
        return Some(match super::schemes::scheme_of(url) {
            Some(scheme) => format!("{scheme}: (not authorised)"),
            None => "(not authorised)".to_owned(),
        });
    }
    match broker.policy.decide(session, url, broker.real_profile()) {
        Err(d) => Some(format!("{} (not authorised)", d.origin)),
        Ok(()) => None,
    }
}

impl crate::server::Broker {
    /// Whether the browser is the user's own (the extension): the real-profile defaults apply.
    pub(crate) fn real_profile(&self) -> bool {
        self.provider.kind() == browserd_core::provider::ProviderKind::Extension
    }
}

impl crate::tools::ToolCtx<'_> {
    /// Refuses `url` unless the site policy authorises its origin for this session; `what` names the refused step
    /// ("opening the tab").
    pub(crate) fn check_site(&self, what: &str, url: &str) -> Result<(), ErrorData> {
        let real = self.broker.real_profile();
        self.broker.policy.decide(Some(self.session), url, real).map_err(|d| not_authorised(what, &d))
    }

    /// Refuses a tab whose last known page is of an origin the policy does not authorise.
    pub(crate) fn check_tab_site(&self, tab: TabHandle) -> Result<(), ErrorData> {
        let url = self.broker.runtime.inspect(|e| e.tabs().get(tab).map(|r| r.url.clone()));
        match url {
            Some(url) => self.check_site(&format!("tab {} was not used", tab.0), &url),
            None => Ok(()),
        }
    }

    /// Before an action: a navigation's destination.
    pub(crate) fn check_step_site(&self, step: &browserd_protocol::ActParams) -> Result<(), ErrorData> {
        match (step.action, step.value.as_deref()) {
            (browserd_protocol::ActionKind::Navigate, Some(url)) => self.check_site("nothing was sent", url),
            _ => Ok(()),
        }
    }

    /// After an action: the page it led to (see [`check_landed`]).
    pub(crate) fn check_result_site(
        &self,
        tab: TabHandle,
        result: &browserd_protocol::ActionResult,
    ) -> Result<(), ErrorData> {
        check_landed(self.broker, self.session, tab, result)
    }
}

/// After an action: the page it led to (a navigation, a link, a redirect, a popup). A top-level page the browser
/// stopped before requesting it (`effects.blocked`) or a page of an origin the policy does not authorise for
/// `session` is not shown: the answer is `ORIGIN_NOT_AUTHORISED` with what the action did.
pub(crate) fn check_landed(
    broker: &crate::server::Broker,
    session: &SessionId,
    tab: TabHandle,
    result: &browserd_protocol::ActionResult,
) -> Result<(), ErrorData> {
    for origin in &result.effects.blocked {
        if let Err(d) = broker.policy.decide(Some(session), origin, broker.real_profile()) {
            return Err(stopped_before_request(tab, result, &d));
        }
    }
    // The page the action ended on: the one it navigated to, else the one the tab's record shows (which may lag
    // behind a navigation the browser has not reported yet).
    let now = match &result.effects.navigated {
        Some(url) => Some(url.clone()),
        None => broker.runtime.inspect(|e| e.tabs().get(tab).map(|r| r.url.clone())),
    };
    for url in now.iter() {
        if let Err(d) = broker.policy.decide(Some(session), url, broker.real_profile()) {
            let outcome = serde_json::to_value(result.outcome).ok();
            let mut e = not_authorised(
                &format!(
                    "the action ran (outcome {}) and tab {} went to a page that is not shown",
                    outcome.as_ref().and_then(|v| v.as_str()).unwrap_or("unknown"),
                    tab.0
                ),
                &d,
            );
            e.next_step = format!(
                "{} Then go elsewhere (browser_act navigate or back) or close the tab (browser_close).",
                e.next_step
            );
            e.details = Some(Box::new(json!({
                "origin": d.origin,
                "outcome": result.outcome,
                "dispatch": result.dispatch,
                "tab": tab.0,
            })));
            return Err(e);
        }
    }
    Ok(())
}

/// The answer to an action whose navigation (or popup) the browser stopped before anything was requested from the
/// refused origin.
fn stopped_before_request(tab: TabHandle, result: &browserd_protocol::ActionResult, d: &Denied) -> ErrorData {
    let outcome = serde_json::to_value(result.outcome).ok();
    let mut e = not_authorised(
        &format!(
            "the action ran (outcome {}) and led tab {} toward a page the browser stopped before requesting it",
            outcome.as_ref().and_then(|v| v.as_str()).unwrap_or("unknown"),
            tab.0
        ),
        d,
    );
    e.next_step = format!(
        "{} Nothing was sent to {}; go elsewhere (browser_act navigate or back) or close the tab (browser_close).",
        e.next_step, d.origin
    );
    e.details = Some(Box::new(json!({
        "origin": d.origin,
        "stoppedBeforeRequest": true,
        "outcome": result.outcome,
        "dispatch": result.dispatch,
        "tab": tab.0,
        "tabsOpened": result.effects.tabs_opened,
    })));
    e
}

impl crate::server::Broker {
    /// The policy in force for `session` as `browser_status` shows it.
    pub(crate) fn policy_status(&self, session: &SessionId) -> browserd_protocol::policy::PolicyStatus {
        let own = self.policy.session(session);
        let mut status = self.policy.sites.status(own.as_deref(), self.real_profile());
        status.require_approval = self.approval_classes();
        status
    }
}

/// The policy the extension's last-hop gate checks with (`policy.set`): `[policy]`'s lists and the real-profile
/// default deny list when it applies; the sessions' own lists are added when it is handed over ([`GateSessions`]).
#[must_use]
pub fn gate_policy(config: &crate::config::PolicyConfig) -> serde_json::Value {
    let defaults: Vec<&str> =
        if config.real_profile_defaults { super::sites::REAL_PROFILE_DENY.to_vec() } else { Vec::new() };
    json!({"allow": config.allow, "deny": config.deny, "realProfileDeny": defaults})
}
