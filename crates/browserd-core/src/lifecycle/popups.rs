//! Popups: a tab opened by a session's action on its own tab becomes that session's scratch tab.

use super::{Lifecycle, TabView};
use crate::Millis;
use crate::provider::{SessionKey, TabHandle, TabInfo};

impl Lifecycle {
    /// An agent action on `tab` is about to run: tabs it opens until [`Self::end_action`] are the session's.
    pub fn begin_action(&mut self, key: &SessionKey, tab: TabHandle) {
        self.acting.insert(tab, key.clone());
    }

    /// The action on `tab` finished (or was dropped).
    pub fn end_action(&mut self, tab: TabHandle) {
        self.acting.remove(&tab);
    }

    /// A tab new to the table: when its opener is a live tab its owning session is acting on, it is that session's
    /// popup (adopted once the browser records the session's control). Anything else stays the user's.
    pub(super) fn note_popup(&mut self, info: &TabInfo) {
        let Some(opener) = info.opener else { return };
        let Some(session) = self.acting.get(&opener) else { return };
        let owned = self.tabs.get(opener).is_some_and(|r| r.alive && r.owned_by(session));
        if owned && !self.popups.iter().any(|(_, p, _)| *p == info.tab) {
            self.popups.push((session.clone(), info.tab, opener));
        }
    }

    /// Popups `key`'s actions opened that are waiting for adoption: (popup, opener). The driver records control
    /// in the browser (`claim_tab`), then calls [`Self::handle_popup_adopted`].
    pub fn take_popups(&mut self, key: &SessionKey) -> Vec<(TabHandle, TabHandle)> {
        let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.popups).into_iter().partition(|(s, ..)| s == key);
        self.popups = rest;
        mine.into_iter()
            .filter(|(_, popup, _)| self.tabs.get(*popup).is_some_and(|r| r.alive && r.ownership.is_none()))
            .map(|(_, popup, opener)| (popup, opener))
            .collect()
    }

    /// The browser recorded `key`'s control of a popup its action opened: it becomes the session's scratch tab
    /// (closed at cleanup unless marked), like a tab the agent created.
    pub fn handle_popup_adopted(
        &mut self,
        key: &SessionKey,
        popup: TabHandle,
        opener: TabHandle,
        now: Millis,
    ) -> Option<TabView> {
        if self.tabs.get(popup).is_some_and(|r| r.alive && r.ownership.is_none()) {
            self.tabs.handle_adopted(key, popup, opener, now);
        }
        self.view(key, popup)
    }
}
