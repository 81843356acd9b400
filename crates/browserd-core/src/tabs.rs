//! Tab records: provenance (who the tab belongs to) and task-resource state.
//!
//! **Owner:** [`crate::lifecycle::Lifecycle`] (one [`TabTable`] for all sessions; ownership is
//! global so that a session can be refused another session's tab).
//!
//! Resource states: `noResources → owned → retained / finalizing → released`, and
//! `owned → cleanupUnknown → (retry / disposal) → released`. Only a provider-confirmed close or
//! release (or the browser reporting the tab closed) reaches [`ResourceState::Released`]; every
//! transition is written to the record's bounded history with its cause.

use std::collections::BTreeMap;

use crate::Millis;
use crate::provider::{GroupHandle, SessionKey, TabHandle, TabInfo};

/// How many transitions a record keeps.
pub const HISTORY_LEN: usize = 16;
/// How many records of closed tabs are kept for idempotent answers and status.
pub const MAX_TOMBSTONES: usize = 512;

/// How a session came to own a tab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// The session's agent created it (scratch tab): closed at cleanup unless marked.
    AgentCreated,
    /// The user's tab, claimed by the session: released (never closed) at cleanup.
    Claimed,
}

/// A turn-scoped retention mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MarkKind {
    /// A result for the user (`browser_mark_deliverable`).
    Deliverable,
    /// Waiting for the user: login, approval, payment, CAPTCHA (`browser_mark_handoff`).
    Handoff,
}

/// A mark and the turn it was made in. It holds through the end of that turn only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mark {
    /// Which mark.
    pub kind: MarkKind,
    /// The session turn it was made in.
    pub turn: u64,
}

/// A session's ownership record of a tab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ownership {
    /// The owning session.
    pub session: SessionKey,
    /// Created or claimed.
    pub origin: Origin,
    /// The latest mark, if any.
    pub mark: Option<Mark>,
}

/// The task-resource state of a tab record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceState {
    /// No session holds resources in it (a user tab).
    NoResources,
    /// A session owns it (created or claimed).
    Owned,
    /// Marked and kept through a turn end, with its ownership record.
    Retained,
    /// A close or release is in flight.
    Finalizing,
    /// The browser confirmed the close or release.
    Released,
    /// A close or release failed or its outcome is unknown; a recovery record retries it.
    CleanupUnknown,
}

/// How the ownership of a tab ended, remembered so a repeated request is answered the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ended {
    /// Closed (confirmed).
    Closed,
    /// The claim was released; the page stays with the user.
    Released,
    /// The page was kept (marked or asked to keep) and its ownership metadata dropped.
    Kept,
}

/// The previous owner of a tab whose ownership ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Former {
    /// The session that owned it.
    pub session: SessionKey,
    /// How it ended.
    pub ended: Ended,
    /// The mark it carried when kept.
    pub mark: Option<MarkKind>,
}

/// A tab's provenance as seen by one session.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Provenance {
    /// The user's tab (or a kept page whose ownership was handed over).
    User,
    /// Created by this session's agent.
    AgentCreated,
    /// The user's tab, claimed by this session.
    Claimed,
    /// This session's tab, marked for handoff.
    Handoff,
    /// This session's tab, marked deliverable.
    Deliverable,
    /// Held by another session.
    OtherSession {
        /// The holding session.
        holder: SessionKey,
    },
}

/// One state transition of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// When.
    pub at: Millis,
    /// From.
    pub from: ResourceState,
    /// To.
    pub to: ResourceState,
    /// Why (e.g. "close confirmed by the browser", "provider said the tab was already gone:
    /// counted as confirmed closed").
    pub cause: String,
}

/// One tab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TabRecord {
    /// Handle.
    pub tab: TabHandle,
    /// Last known URL.
    pub url: String,
    /// Last known title.
    pub title: String,
    /// Tab group.
    pub group: Option<GroupHandle>,
    /// Opener tab.
    pub opener: Option<TabHandle>,
    /// Whether the tab still exists in the browser.
    pub alive: bool,
    /// The owning session's record, if any. Kept on failure; dropped only on confirmation.
    pub ownership: Option<Ownership>,
    /// Resource state.
    pub state: ResourceState,
    /// The previous owner, once ownership ended.
    pub former: Option<Former>,
    /// Recent transitions, oldest first.
    pub history: Vec<Transition>,
}

impl TabRecord {
    /// The tab's provenance from `viewer`'s point of view.
    #[must_use]
    pub fn provenance(&self, viewer: &SessionKey) -> Provenance {
        match &self.ownership {
            None => Provenance::User,
            Some(o) if &o.session != viewer => Provenance::OtherSession { holder: o.session.clone() },
            Some(o) => match (o.mark.map(|m| m.kind), o.origin) {
                (Some(MarkKind::Deliverable), _) => Provenance::Deliverable,
                (Some(MarkKind::Handoff), _) => Provenance::Handoff,
                (None, Origin::AgentCreated) => Provenance::AgentCreated,
                (None, Origin::Claimed) => Provenance::Claimed,
            },
        }
    }

    /// The owning session, if any.
    #[must_use]
    pub fn owner(&self) -> Option<&SessionKey> {
        self.ownership.as_ref().map(|o| &o.session)
    }

    /// Whether `session` owns this live tab.
    #[must_use]
    pub fn owned_by(&self, session: &SessionKey) -> bool {
        self.owner() == Some(session)
    }

    fn transition(&mut self, to: ResourceState, now: Millis, cause: impl Into<String>) {
        if self.history.len() == HISTORY_LEN {
            self.history.remove(0);
        }
        self.history.push(Transition { at: now, from: self.state, to, cause: cause.into() });
        self.state = to;
    }
}

/// Every tab the runtime knows, with ownership.
#[derive(Debug, Clone, Default)]
pub struct TabTable {
    tabs: BTreeMap<TabHandle, TabRecord>,
}

impl TabTable {
    /// An empty table.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The record of `tab`.
    #[must_use]
    pub fn get(&self, tab: TabHandle) -> Option<&TabRecord> {
        self.tabs.get(&tab)
    }

    /// Every record.
    pub fn iter(&self) -> impl Iterator<Item = &TabRecord> {
        self.tabs.values()
    }

    /// Live tabs owned by `session`.
    #[must_use]
    pub fn owned_by(&self, session: &SessionKey) -> Vec<TabHandle> {
        self.tabs.values().filter(|r| r.alive && r.owned_by(session)).map(|r| r.tab).collect()
    }

    /// The browser told us about a tab (list, created, updated): record it as a user tab if it
    /// is new; refresh URL, title and group otherwise. Closed tabs are not resurrected.
    pub fn handle_seen(&mut self, info: &TabInfo, now: Millis) {
        match self.tabs.get_mut(&info.tab) {
            Some(rec) => {
                if rec.alive {
                    rec.url.clone_from(&info.url);
                    rec.title.clone_from(&info.title);
                    rec.group = info.group;
                }
            }
            None => {
                let mut rec = new_record(info);
                rec.history.push(Transition {
                    at: now,
                    from: ResourceState::NoResources,
                    to: ResourceState::NoResources,
                    cause: "seen in the browser (user tab)".into(),
                });
                self.tabs.insert(info.tab, rec);
            }
        }
    }

    /// A known open tab's URL and title as the browser reports them now.
    pub fn refresh_info(&mut self, info: &TabInfo) {
        if let Some(rec) = self.tabs.get_mut(&info.tab).filter(|r| r.alive) {
            rec.url.clone_from(&info.url);
            rec.title.clone_from(&info.title);
        }
    }

    /// `session` created this tab (the provider confirmed it).
    pub fn handle_created(&mut self, session: &SessionKey, info: &TabInfo, now: Millis) {
        let rec = self.tabs.entry(info.tab).or_insert_with(|| new_record(info));
        rec.url.clone_from(&info.url);
        rec.title.clone_from(&info.title);
        rec.group = info.group;
        rec.alive = true;
        rec.former = None;
        rec.ownership = Some(Ownership { session: session.clone(), origin: Origin::AgentCreated, mark: None });
        rec.transition(ResourceState::Owned, now, format!("created by session {session}"));
    }

    /// A tab `opener` opened during an action of `session` (a popup, `target=_blank`), whose control the browser
    /// recorded for `session`: owned like a tab the agent created (closed at cleanup unless marked).
    pub fn handle_adopted(&mut self, session: &SessionKey, tab: TabHandle, opener: TabHandle, now: Millis) {
        if let Some(rec) = self.tabs.get_mut(&tab) {
            rec.ownership = Some(Ownership { session: session.clone(), origin: Origin::AgentCreated, mark: None });
            rec.former = None;
            rec.transition(
                ResourceState::Owned,
                now,
                format!("opened by {opener} during an action of session {session}: a scratch tab of the session"),
            );
        }
    }

    /// `session` claimed this user tab (the provider confirmed it).
    pub fn handle_claimed(&mut self, session: &SessionKey, tab: TabHandle, now: Millis) {
        if let Some(rec) = self.tabs.get_mut(&tab) {
            rec.ownership = Some(Ownership { session: session.clone(), origin: Origin::Claimed, mark: None });
            rec.former = None;
            rec.transition(ResourceState::Owned, now, format!("claimed by session {session}"));
        }
    }

    /// Set the owner's mark (latest wins).
    pub fn set_mark(&mut self, tab: TabHandle, mark: Mark) {
        if let Some(o) = self.tabs.get_mut(&tab).and_then(|r| r.ownership.as_mut()) {
            o.mark = Some(mark);
        }
    }

    /// Drop the mark.
    pub fn clear_mark(&mut self, tab: TabHandle) {
        if let Some(o) = self.tabs.get_mut(&tab).and_then(|r| r.ownership.as_mut()) {
            o.mark = None;
        }
    }

    /// Kept through a turn end with its ownership record.
    pub fn set_retained(&mut self, tab: TabHandle, now: Millis) {
        if let Some(rec) = self.tabs.get_mut(&tab)
            && rec.state != ResourceState::Retained
        {
            rec.transition(ResourceState::Retained, now, "marked: retained through the turn end");
        }
    }

    /// Back to plain owned (a mark expired while automatic cleanup was refused).
    pub fn set_owned(&mut self, tab: TabHandle, now: Millis, cause: &str) {
        if let Some(rec) = self.tabs.get_mut(&tab)
            && rec.state != ResourceState::Owned
        {
            rec.transition(ResourceState::Owned, now, cause);
        }
    }

    /// A close or release is about to be sent.
    pub fn begin_cleanup(&mut self, tab: TabHandle, now: Millis, cause: &str) {
        if let Some(rec) = self.tabs.get_mut(&tab) {
            rec.transition(ResourceState::Finalizing, now, cause);
        }
    }

    /// The browser confirmed the tab is closed (or reported it gone).
    pub fn handle_closed(&mut self, tab: TabHandle, now: Millis, cause: &str) {
        let Some(rec) = self.tabs.get_mut(&tab) else { return };
        if !rec.alive && rec.state == ResourceState::Released {
            return;
        }
        if let Some(o) = rec.ownership.take() {
            rec.former = Some(Former { session: o.session, ended: Ended::Closed, mark: o.mark.map(|m| m.kind) });
        }
        rec.alive = false;
        rec.transition(ResourceState::Released, now, cause);
        // A tombstone answers for a closed tab (its former owner and how it ended); only the last transition is kept,
        // so up to MAX_TOMBSTONES of them stay small.
        let last = rec.history.len().saturating_sub(1);
        rec.history.drain(..last);
        rec.history.shrink_to_fit();
        rec.title.shrink_to_fit();
        rec.url.shrink_to_fit();
        self.prune_tombstones();
    }

    /// The browser confirmed the release (claim dropped, or ownership metadata of a kept page
    /// dropped).
    pub fn handle_released(&mut self, tab: TabHandle, ended: Ended, now: Millis, cause: &str) {
        let Some(rec) = self.tabs.get_mut(&tab) else { return };
        if let Some(o) = rec.ownership.take() {
            rec.former = Some(Former { session: o.session, ended, mark: o.mark.map(|m| m.kind) });
        }
        rec.transition(ResourceState::Released, now, cause);
    }

    /// A close or release failed or has an unknown outcome. Ownership is kept.
    pub fn handle_cleanup_failed(&mut self, tab: TabHandle, now: Millis, cause: &str) {
        if let Some(rec) = self.tabs.get_mut(&tab)
            && rec.alive
        {
            rec.transition(ResourceState::CleanupUnknown, now, cause);
        }
    }

    /// Forget records of closed tabs whose former owner is `session` (context reset).
    pub fn forget_closed_of(&mut self, session: &SessionKey) {
        self.tabs.retain(|_, r| r.alive || r.former.as_ref().is_none_or(|f| &f.session != session));
    }

    fn prune_tombstones(&mut self) {
        let dead: Vec<TabHandle> = self.tabs.values().filter(|r| !r.alive).map(|r| r.tab).collect();
        if dead.len() > MAX_TOMBSTONES {
            for tab in &dead[..dead.len() - MAX_TOMBSTONES] {
                self.tabs.remove(tab);
            }
        }
    }
}

fn new_record(info: &TabInfo) -> TabRecord {
    TabRecord {
        tab: info.tab,
        url: info.url.clone(),
        title: info.title.clone(),
        group: info.group,
        opener: info.opener,
        alive: true,
        ownership: None,
        state: ResourceState::NoResources,
        former: None,
        history: Vec::new(),
    }
}
