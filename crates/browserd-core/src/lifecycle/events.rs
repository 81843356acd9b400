//! Browser inputs: capabilities, connection changes, tab lists and provider events fed into the records.

use std::collections::BTreeSet;

use super::Lifecycle;
use crate::Millis;
use crate::bridge::StopCause;
use crate::provider::{CapabilityMatrix, ProviderEvent, TabHandle, TabInfo};
use crate::recovery::RecoveryAction;

impl Lifecycle {
    /// The provider's capability matrix (at connect and whenever it changes).
    pub fn handle_capabilities(&mut self, capabilities: CapabilityMatrix) {
        self.capabilities = capabilities;
    }

    /// The provider connected (first operation or reconnect) with this epoch.
    pub fn handle_connected(&mut self, epoch: u64, now: Millis) {
        self.bridge.handle_connected(epoch, now);
    }

    /// A provider call failed because the connection is down.
    pub fn handle_connection_lost(&mut self, now: Millis) {
        self.bridge.handle_connection_lost(now);
    }

    /// Plugin disposal or an explicit host disconnect stopped the bridge.
    pub fn handle_bridge_stopped(&mut self, cause: StopCause, now: Millis) {
        self.bridge.handle_stop(cause, now);
    }

    /// Titles and URLs read afresh from the browser's tab list (a page's `<title>` reaches no event): only tabs
    /// known and open are updated; nothing else is decided from the list (a tab missing from it is not counted
    /// closed, a new one not added: events and [`Self::handle_tab_snapshot`] do that).
    pub fn refresh_tab_info(&mut self, tabs: &[TabInfo]) {
        for info in tabs {
            self.tabs.refresh_info(info);
        }
    }

    /// A full tab list from the browser: new tabs become user tabs, tabs missing from the list
    /// are gone.
    pub fn handle_tab_snapshot(&mut self, tabs: &[TabInfo], now: Millis) {
        let present: BTreeSet<TabHandle> = tabs.iter().map(|t| t.tab).collect();
        for info in tabs {
            let new = self.tabs.get(info.tab).is_none();
            self.tabs.handle_seen(info, now);
            if new {
                self.note_popup(info);
            }
        }
        let gone: Vec<TabHandle> =
            self.tabs.iter().filter(|r| r.alive && !present.contains(&r.tab)).map(|r| r.tab).collect();
        for tab in gone {
            self.tab_gone(tab, now, "missing from the browser's tab list: counted as closed");
        }
    }

    /// A provider event. Returns `true` when the driver must re-read the tab list (events lost).
    pub fn handle_event(&mut self, event: &ProviderEvent, now: Millis) -> bool {
        match event {
            ProviderEvent::TabCreated(info) | ProviderEvent::TabUpdated(info) => {
                let new = self.tabs.get(info.tab).is_none();
                self.tabs.handle_seen(info, now);
                if new {
                    self.note_popup(info);
                }
            }
            ProviderEvent::TabClosed { tab, by_user } => {
                let cause = if *by_user { "closed in the browser by the user" } else { "closed in the browser" };
                self.tab_gone(*tab, now, cause);
            }
            ProviderEvent::DebuggerDetached { tab, .. } => {
                // Clears only debugger state: no tab, claim or ownership change.
                self.debugger.handle_detached_externally(*tab);
                self.recovery.resolve(*tab, RecoveryAction::Detach);
            }
            ProviderEvent::ConnectionLost { .. } => self.bridge.handle_connection_lost(now),
            ProviderEvent::ConnectionRestored { connection_epoch } => {
                self.bridge.handle_connected(*connection_epoch, now);
            }
            ProviderEvent::UserStopped { tab, .. } => match tab {
                Some(tab) => {
                    self.writes.revoke(*tab);
                }
                None => {
                    let tabs: Vec<TabHandle> = self.tabs.iter().map(|r| r.tab).collect();
                    for tab in tabs {
                        self.writes.revoke(tab);
                    }
                }
            },
            ProviderEvent::ResyncRequired => return true,
        }
        false
    }

    /// A provider call reported the tab gone (the browser's own answer, so it counts as closed).
    pub fn handle_tab_gone(&mut self, tab: TabHandle, now: Millis) {
        self.tab_gone(tab, now, "provider reported the tab gone during an operation: counted as closed");
    }

    pub(super) fn tab_gone(&mut self, tab: TabHandle, now: Millis, cause: &str) {
        self.tabs.handle_closed(tab, now, cause);
        self.popups.retain(|(_, popup, _)| *popup != tab);
        self.recovery.resolve_tab(tab);
        self.debugger.handle_detached_externally(tab);
        self.writes.revoke(tab);
    }
}
