//! Tabs a session opens, claims and uses: the tab limit, ownership and usability checks, marks.

use super::view::unreachable_view;
use super::{Lifecycle, TabView};
use crate::Millis;
use crate::error::{CoreError, ErrorKind};
use crate::provider::{SessionKey, TabHandle, TabInfo};
use crate::recovery::RecoveryAction;
use crate::tabs::{Mark, MarkKind, ResourceState, TabRecord};

impl Lifecycle {
    // ----- tabs -----

    fn live_owned_count(&self, key: &SessionKey) -> usize {
        self.tabs.iter().filter(|r| r.alive && r.owned_by(key)).count()
    }

    pub(super) fn check_tab_limit(&self, key: &SessionKey) -> Result<(), CoreError> {
        let limit = self.config.max_tabs_per_session;
        if self.live_owned_count(key) >= limit {
            return Err(CoreError::new(
                ErrorKind::TooManyTabs { limit },
                format!(
                    "session {key} already controls {limit} tabs; close or release one first (browser_close or browser_cleanup)"
                ),
            ));
        }
        Ok(())
    }

    /// Before `create_tab`: the session must be active and under its tab limit. Opens a turn if
    /// none is open.
    pub fn check_open_tab(&mut self, key: &SessionKey) -> Result<(), CoreError> {
        self.check_active(key)?;
        self.check_tab_limit(key)?;
        self.begin_turn(key)?;
        Ok(())
    }

    /// The provider created a tab for `key`.
    pub fn handle_tab_created(&mut self, key: &SessionKey, info: &TabInfo, now: Millis) -> TabView {
        self.tabs.handle_created(key, info, now);
        self.view(key, info.tab).unwrap_or_else(|| unreachable_view(info.tab))
    }

    /// Before `claim_tab`: returns `false` when the session already owns the tab (idempotent).
    pub fn check_claim(&mut self, key: &SessionKey, tab: TabHandle) -> Result<bool, CoreError> {
        self.check_active(key)?;
        let rec = self.tabs.get(tab).ok_or_else(|| CoreError::unknown_tab(tab))?;
        if !rec.alive {
            return Err(CoreError::tab_gone(tab));
        }
        match rec.owner() {
            Some(owner) if owner == key => {
                if rec.state == ResourceState::CleanupUnknown || rec.state == ResourceState::Finalizing {
                    return Err(CoreError::cleanup_pending(tab));
                }
                Ok(false)
            }
            Some(owner) => Err(CoreError::other_session(tab, owner)),
            None => {
                if let Some(claimer) = self.claiming.get(&tab).filter(|c| *c != key) {
                    return Err(CoreError::other_session(tab, claimer));
                }
                self.check_tab_limit(key)?;
                self.begin_turn(key)?;
                Ok(true)
            }
        }
    }

    /// [`Lifecycle::check_claim`], and when the claim must go to the provider, the tab is held for `key` until
    /// [`Lifecycle::handle_claimed`] or [`Lifecycle::abort_claim`]: a second session checking meanwhile is refused
    /// (checked and held under one lock of the engine, so two claims can never both pass).
    pub fn begin_claim(&mut self, key: &SessionKey, tab: TabHandle) -> Result<bool, CoreError> {
        let needed = self.check_claim(key, tab)?;
        if needed {
            self.claiming.insert(tab, key.clone());
        }
        Ok(needed)
    }

    /// A claim the provider refused, or one given up midway: the tab is free for other sessions again.
    pub fn abort_claim(&mut self, key: &SessionKey, tab: TabHandle) {
        if self.claiming.get(&tab) == Some(key) {
            self.claiming.remove(&tab);
        }
    }

    /// The provider confirmed the claim.
    pub fn handle_claimed(&mut self, key: &SessionKey, tab: TabHandle, now: Millis) -> Option<TabView> {
        self.abort_claim(key, tab);
        if self.tabs.get(tab).is_some_and(|r| r.alive && r.ownership.is_none()) {
            self.tabs.handle_claimed(key, tab, now);
            // A debugger the previous owner failed to detach is now this session's to detach:
            // its calls must never again be made for a session that no longer owns the tab.
            self.debugger.reassign(tab, key);
            self.recovery.reassign(tab, RecoveryAction::Detach, key);
        }
        self.view(key, tab)
    }

    /// Check that `key` may use `tab` (observe, act, debugger): active tools, own live tab, no
    /// cleanup pending. Opens a turn if none is open.
    pub fn check_tab_access(&mut self, key: &SessionKey, tab: TabHandle) -> Result<(), CoreError> {
        self.check_active(key)?;
        self.own_usable(key, tab)?;
        self.begin_turn(key)?;
        Ok(())
    }

    pub(super) fn own_usable(&self, key: &SessionKey, tab: TabHandle) -> Result<&TabRecord, CoreError> {
        let rec = self.tabs.get(tab).ok_or_else(|| CoreError::unknown_tab(tab))?;
        if !rec.alive {
            return Err(CoreError::tab_gone(tab));
        }
        match rec.owner() {
            Some(owner) if owner != key => Err(CoreError::other_session(tab, owner)),
            None => Err(CoreError::not_claimed(tab)),
            Some(_) => match rec.state {
                ResourceState::Owned | ResourceState::Retained => Ok(rec),
                _ => Err(CoreError::cleanup_pending(tab)),
            },
        }
    }

    /// Mark a tab deliverable or handoff for the current turn (latest mark wins).
    pub fn mark(&mut self, key: &SessionKey, tab: TabHandle, kind: MarkKind) -> Result<Mark, CoreError> {
        self.check_active(key)?;
        self.own_usable(key, tab)?;
        let turn = self.begin_turn(key)?;
        let mark = Mark { kind, turn };
        self.tabs.set_mark(tab, mark);
        Ok(mark)
    }
}
