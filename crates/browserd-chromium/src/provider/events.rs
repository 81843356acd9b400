//! The event pump: CDP events kept in the records as they come — targets (tabs and popups), frames and documents,
//! loads and navigations, dialogs, downloads, console errors — and passed on as provider events.

use std::sync::{Arc, Mutex};

use browserd_cdp::{Cdp, CdpEvent, SessionId};
use browserd_core::provider::{DetachCause, HandleAllocator, ProviderEvent, TabHandle};
use browserd_protocol::{DialogInfo, DownloadInfo, LoadState};
use serde_json::Value;
use tokio::sync::{Notify, broadcast};

use crate::state::{LogEvent, State, Tab};

use super::intercept::{self, Paused};
use super::sessions::setup_child;
use super::{ChromiumProvider, truncate};

/// Registers a page target; returns its handle and whether it is new.
pub(super) fn register_page(st: &mut State, alloc: &HandleAllocator, info: &Value) -> Option<(TabHandle, bool)> {
    if info["type"].as_str() != Some("page") {
        return None;
    }
    let target = info["targetId"].as_str()?.to_owned();
    if let Some(h) = st.by_target.get(&target) {
        return Some((*h, false));
    }
    if st.closed_targets.contains(&target) {
        return None;
    }
    let opener = info["openerId"].as_str().and_then(|o| st.by_target.get(o).copied());
    let h = st.preferred.remove(&target).unwrap_or_else(|| alloc.tab());
    let mut tab = Tab::new(
        h,
        target.clone(),
        info["url"].as_str().unwrap_or_default().to_owned(),
        info["title"].as_str().unwrap_or_default().to_owned(),
        opener,
        st.revisions.clone(),
    );
    // A popup of a tab holding a session's viewport holds it too (it becomes that session's tab).
    tab.viewport = opener.and_then(|o| st.tabs.get(&o)).and_then(|o| o.viewport);
    st.tabs.insert(h, tab);
    st.by_target.insert(target, h);
    if let Some(o) = opener {
        st.log(o, LogEvent::Popup(h));
    }
    Some((h, true))
}

/// Keeps the records current from CDP events.
pub(super) async fn pump(
    cdp: Cdp,
    state: Arc<Mutex<State>>,
    tx: broadcast::Sender<ProviderEvent>,
    dialog_notify: Arc<Notify>,
    alloc: HandleAllocator,
    check: Option<(crate::OriginCheck, bool)>,
) {
    let mut rx = cdp.events();
    loop {
        let ev = match rx.recv().await {
            Ok(ev) => ev,
            Err(broadcast::error::RecvError::Lagged(_)) => {
                let _ = tx.send(ProviderEvent::ResyncRequired);
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => {
                let detail = cdp.close_reason().unwrap_or_else(|| "the browser connection closed".into());
                let _ = tx.send(ProviderEvent::ConnectionLost { detail });
                return;
            }
        };
        let out = {
            let mut st = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut out = handle_event(&mut st, &ev, &alloc);
            let mut updated = None;
            for e in &mut out {
                if let Pumped::Paused(paused, refused) = e
                    && let Some((c, real)) = &check
                {
                    *refused = intercept::judge(&mut st, c, *real, paused, &mut updated).is_some();
                }
            }
            out.extend(updated.map(Pumped::Provider));
            // Told while the records still hold: whoever reads them (an action's result saying the tab closed) and
            // then asks the runtime (`browser_list`) finds the runtime's news already sent, never a tab listed that
            // the result just said was closed.
            for e in &out {
                if let Pumped::Provider(pe) = e {
                    let _ = tx.send(pe.clone());
                }
            }
            out
        };
        for e in out {
            if let Pumped::DialogOpened = e {
                dialog_notify.notify_waiters();
            }
            if let Pumped::Paused(paused, refused) = e {
                intercept::answer(&cdp, paused, refused);
                continue;
            }
            if let Pumped::SetupChild { session, tab } = e {
                let cdp = cdp.clone();
                let state = state.clone();
                tokio::spawn(async move { setup_child(cdp, state, session, tab).await });
            }
        }
    }
}

enum Pumped {
    Provider(ProviderEvent),
    DialogOpened,
    SetupChild {
        session: SessionId,
        tab: TabHandle,
    },
    /// A document request paused before it was sent, and whether the site policy refuses it.
    Paused(Paused, bool),
}

fn handle_event(st: &mut State, ev: &CdpEvent, alloc: &HandleAllocator) -> Vec<Pumped> {
    let p = &ev.params;
    let mut out = Vec::new();
    let session_tab = ev.session.as_ref().and_then(|s| st.by_session.get(s).copied());
    match ev.method.as_str() {
        "Target.targetCreated" => {
            if let Some((h, true)) = register_page(st, alloc, &p["targetInfo"]) {
                let t = &st.tabs[&h];
                out.push(Pumped::Provider(ProviderEvent::TabCreated(ChromiumProvider::tab_info(t, false))));
            }
        }
        "Target.targetInfoChanged" => {
            let info = &p["targetInfo"];
            if let Some(h) = info["targetId"].as_str().and_then(|id| st.by_target.get(id).copied())
                && let Some(t) = st.tabs.get_mut(&h)
            {
                let mut url = info["url"].as_str().unwrap_or_default();
                // A new target reports an empty URL (or the initial about:blank) before its first document commits;
                // that must not replace the URL browserd created it with or the one the page already reported.
                if url.is_empty() || (url == "about:blank" && t.awaiting_url.is_some()) {
                    url = t.url.as_str();
                }
                let url = url.to_owned();
                let title = info["title"].as_str().unwrap_or_default();
                if t.url != url || t.title != title {
                    url.clone_into(&mut t.url);
                    title.clone_into(&mut t.title);
                    out.push(Pumped::Provider(ProviderEvent::TabUpdated(ChromiumProvider::tab_info(t, false))));
                }
            }
        }
        // A crashed page is still an open tab (it shows the crash page): it stays until it is closed.
        "Target.targetCrashed" => {
            if let Some(h) = p["targetId"].as_str().and_then(|id| st.by_target.get(id).copied())
                && let Some(t) = st.tabs.get_mut(&h)
            {
                t.crashed = true;
            }
        }
        "Target.targetDestroyed" => {
            let id = p["targetId"].as_str().unwrap_or_default();
            if !id.is_empty() {
                st.closed_targets.insert_value(id.to_owned(), ());
            }
            if let Some(h) = st.by_target.remove(id)
                && let Some(t) = st.tabs.remove(&h)
            {
                {
                    if let Some(s) = &t.session {
                        st.by_session.remove(s);
                    }
                    for s in t.children.keys() {
                        st.by_session.remove(s);
                    }
                    if let Some(o) = t.opener {
                        st.log(o, LogEvent::TabClosed(h));
                    }
                    st.log(h, LogEvent::TabClosed(h));
                    // Nothing can act on the tab any more, so nothing reads what its downloads would still log.
                    st.downloads.retain(|_, (t, _)| *t != h);
                    out.push(Pumped::Provider(ProviderEvent::TabClosed { tab: h, by_user: !t.closing }));
                }
            }
        }
        "Target.attachedToTarget" => {
            // Only OOPIF children of a page session arrive here (the filter excludes the rest).
            if let Some(tab) = session_tab
                && p["targetInfo"]["type"].as_str() == Some("iframe")
            {
                let child = SessionId(p["sessionId"].as_str().unwrap_or_default().to_owned());
                let frame_id = p["targetInfo"]["targetId"].as_str().unwrap_or_default().to_owned();
                let url = p["targetInfo"]["url"].as_str().unwrap_or_default().to_owned();
                st.by_session.insert(child.clone(), tab);
                if let Some(t) = st.tabs.get_mut(&tab) {
                    t.children.insert(child.clone(), frame_id.clone());
                    let parent = t.frames.get(&frame_id).and_then(|f| f.parent.clone());
                    t.upsert_frame(&frame_id, parent, "", &url, &child, true);
                    // A frame that moved into its own process holds a new document whose loader id is not known yet
                    // (the child's frame tree tells it): a new epoch now, and the loader id learned later is adopted
                    // without another one, so refs observed in between stay valid.
                    t.new_document_of_unknown_loader(&frame_id);
                }
                out.push(Pumped::SetupChild { session: child, tab });
            }
        }
        "Target.detachedFromTarget" => {
            if let Some(s) = p["sessionId"].as_str().map(|s| SessionId(s.to_owned()))
                && let Some(h) = st.by_session.remove(&s)
                && let Some(t) = st.tabs.get_mut(&h)
            {
                if t.session.as_ref() == Some(&s) {
                    t.session = None;
                    let children: Vec<SessionId> = t.children.drain().map(|(k, _)| k).collect();
                    let asked = std::mem::take(&mut t.detaching);
                    let reason = t.detach_reason.take();
                    let closing = t.closing;
                    for c in children {
                        st.by_session.remove(&c);
                    }
                    if !asked && !closing {
                        let cause = match reason.as_deref() {
                            Some("replaced_with_devtools") => DetachCause::ReplacedByOtherClient,
                            Some(r) if r.contains("canceled_by_user") => DetachCause::UserCancelled,
                            _ => DetachCause::TargetClosed,
                        };
                        out.push(Pumped::Provider(ProviderEvent::DebuggerDetached { tab: h, cause }));
                    }
                } else if let Some(frame) = t.children.remove(&s)
                    && !t.detaching
                {
                    // The frame's own session ended while the page's stays: the frame was removed (or left its
                    // process, and its parent's events tell the rest). While browserd itself detaches the whole tab
                    // (an idle detach), its frames' sessions end first and the frames are still there: they keep
                    // their records, and attaching again restores their documents (`before_attach`).
                    t.remove_frame(&frame);
                }
            }
        }
        "Inspector.detached" => {
            if let Some(tab) = session_tab
                && let Some(t) = st.tabs.get_mut(&tab)
                && t.session.as_ref() == ev.session.as_ref()
            {
                t.detach_reason = p["reason"].as_str().map(str::to_owned);
            }
        }
        "Page.frameAttached" => {
            if let Some(tab) = session_tab
                && let Some(t) = st.tabs.get_mut(&tab)
                && let Some(id) = p["frameId"].as_str()
            {
                // Bounded by `RecentFrames` itself (the oldest entry goes first).
                t.attached_frames.insert(id.to_owned());
            }
        }
        "Page.frameNavigated" => {
            if let (Some(tab), Some(session)) = (session_tab, ev.session.as_ref()) {
                let f = &p["frame"];
                let id = f["id"].as_str().unwrap_or_default().to_owned();
                let mut url =
                    format!("{}{}", f["url"].as_str().unwrap_or_default(), f["urlFragment"].as_str().unwrap_or(""));
                let mut main = false;
                if let Some(t) = st.tabs.get_mut(&tab) {
                    t.attached_frames.remove(&id);
                    // A frame whose request the site policy stopped shows the browser's error page: it stands for the
                    // stopped URL (so the frame is one line of that origin, never read).
                    match t.blocked_frames.get(&id) {
                        Some(stopped) if url.starts_with("chrome-error:") => url.clone_from(stopped),
                        Some(_) => drop(t.blocked_frames.remove(&id)),
                        None => {}
                    }
                    let oop = t.children.get(session) == Some(&id);
                    let hosted_elsewhere = t.frames.get(&id).is_some_and(|fr| fr.oop && fr.session != *session);
                    if !hosted_elsewhere {
                        t.upsert_frame(
                            &id,
                            f["parentId"].as_str().map(str::to_owned),
                            f["loaderId"].as_str().unwrap_or_default(),
                            &url,
                            session,
                            oop,
                        );
                    }
                    main = id == t.target_id;
                    if main {
                        t.dialog = None;
                        t.crashed = false;
                        if !url.starts_with("chrome-error:") {
                            t.blocked = None;
                        }
                    }
                }
                if main {
                    st.log(tab, LogEvent::Navigated(url));
                    if p["type"].as_str() == Some("BackForwardCacheRestore") {
                        // Restored from the back/forward cache: no load event follows.
                        st.log(tab, LogEvent::Loaded);
                    }
                }
            }
        }
        "Page.navigatedWithinDocument" => {
            if let Some(tab) = session_tab
                && let Some(t) = st.tabs.get_mut(&tab)
            {
                let id = p["frameId"].as_str().unwrap_or_default();
                let url = p["url"].as_str().unwrap_or_default().to_owned();
                if let Some(f) = t.frames.get_mut(id) {
                    f.url.clone_from(&url);
                }
                if id == t.target_id {
                    t.url.clone_from(&url);
                    st.log(tab, LogEvent::SameDocument(url));
                }
            }
        }
        "Page.frameDetached" => {
            if let Some(tab) = session_tab
                && p["reason"].as_str() != Some("swap")
                && let Some(t) = st.tabs.get_mut(&tab)
            {
                let id = p["frameId"].as_str().unwrap_or_default().to_owned();
                if !t.frames.get(&id).is_some_and(|f| f.oop && Some(&f.session) != ev.session.as_ref()) {
                    t.remove_frame(&id);
                    t.attached_frames.remove(&id);
                    t.blocked_frames.remove(&id);
                }
            }
        }
        "Page.frameStartedLoading" => {
            if let Some(tab) = session_tab
                && let Some(t) = st.tabs.get_mut(&tab)
                && p["frameId"].as_str() == Some(t.target_id.as_str())
            {
                t.load_state = LoadState::Loading;
            }
        }
        "Page.domContentEventFired" => {
            if let Some(tab) = session_tab
                && let Some(t) = st.tabs.get_mut(&tab)
                && t.session.as_ref() == ev.session.as_ref()
                && t.load_state == LoadState::Loading
            {
                t.load_state = LoadState::Interactive;
            }
        }
        "Page.loadEventFired" => {
            if let Some(tab) = session_tab
                && let Some(t) = st.tabs.get_mut(&tab)
                && t.session.as_ref() == ev.session.as_ref()
            {
                t.load_state = LoadState::Complete;
                st.log(tab, LogEvent::Loaded);
            }
        }
        "Page.javascriptDialogOpening" => {
            if let Some(tab) = session_tab {
                let info = DialogInfo {
                    kind: p["type"].as_str().unwrap_or("alert").to_owned(),
                    message: p["message"].as_str().unwrap_or_default().to_owned(),
                    default_prompt: p["defaultPrompt"].as_str().filter(|s| !s.is_empty()).map(str::to_owned),
                };
                if let Some(t) = st.tabs.get_mut(&tab) {
                    t.dialog = Some(info.clone());
                }
                st.log(tab, LogEvent::Dialog(info));
                out.push(Pumped::DialogOpened);
            }
        }
        "Page.javascriptDialogClosed" => {
            if let Some(tab) = session_tab {
                if let Some(t) = st.tabs.get_mut(&tab) {
                    t.dialog = None;
                }
                st.log(tab, LogEvent::DialogClosed);
                out.push(Pumped::DialogOpened);
            }
        }
        "Runtime.consoleAPICalled" => {
            if let Some(tab) = session_tab
                && matches!(p["type"].as_str(), Some("error" | "assert"))
            {
                let text: Vec<String> = p["args"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|v| {
                                v["value"]
                                    .as_str()
                                    .map(str::to_owned)
                                    .or_else(|| v["description"].as_str().map(str::to_owned))
                                    .unwrap_or_else(|| v["value"].to_string())
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                st.log(tab, LogEvent::Console(truncate(&text.join(" "), 200)));
            }
        }
        "Runtime.exceptionThrown" => {
            if let Some(tab) = session_tab {
                let d = &p["exceptionDetails"];
                let text = d["exception"]["description"].as_str().or_else(|| d["text"].as_str()).unwrap_or("exception");
                st.log(tab, LogEvent::Console(truncate(text.lines().next().unwrap_or(text), 200)));
            }
        }
        "Fetch.requestPaused" => {
            if let Some(paused) = Paused::of(ev.session.as_ref(), p) {
                out.push(Pumped::Paused(paused, false));
            }
        }
        "Browser.downloadWillBegin" => {
            let frame = p["frameId"].as_str().unwrap_or_default();
            if let Some(tab) = st.tab_of_frame(frame) {
                let guid = p["guid"].as_str().unwrap_or_default().to_owned();
                let name = p["suggestedFilename"].as_str().unwrap_or_default().to_owned();
                st.downloads.insert(guid.clone(), (tab, name.clone()));
                let info = DownloadInfo {
                    file_name: name,
                    state: "inProgress".into(),
                    path: None,
                    size: None,
                    sha256: None,
                    mime: None,
                    error: None,
                };
                st.log(tab, LogEvent::Download { guid, info });
            }
        }
        // Over the extension relay the tab's own session tells of its downloads (`Browser.*` is out of reach):
        // reported in the action's effects, saying plainly that they are neither confined nor receipted.
        "Page.downloadWillBegin" if st.relay_downloads => {
            let tab = session_tab.or_else(|| st.tab_of_frame(p["frameId"].as_str().unwrap_or_default()));
            if let Some(tab) = tab {
                let guid = p["guid"].as_str().unwrap_or_default().to_owned();
                let name = p["suggestedFilename"].as_str().unwrap_or_default().to_owned();
                st.downloads.insert(guid.clone(), (tab, name.clone()));
                st.log(tab, LogEvent::Download { guid, info: unconfined(name, "inProgress".into()) });
            }
        }
        "Page.downloadProgress" if st.relay_downloads => {
            let guid = p["guid"].as_str().unwrap_or_default().to_owned();
            let state = p["state"].as_str().unwrap_or_default().to_owned();
            // The terminal state is the download's last news: its entry goes once that is logged for the receipt.
            if state != "inProgress"
                && let Some((tab, name)) = st.downloads.remove(&guid)
            {
                st.log(tab, LogEvent::Download { guid, info: unconfined(name, state) });
            }
        }
        "Browser.downloadProgress" => {
            let guid = p["guid"].as_str().unwrap_or_default().to_owned();
            let state = p["state"].as_str().unwrap_or_default().to_owned();
            // The terminal state is the download's last news: its entry goes once that is logged for the receipt.
            if state != "inProgress"
                && let Some((tab, name)) = st.downloads.remove(&guid)
            {
                let path = p["filePath"].as_str().map(str::to_owned);
                st.log(
                    tab,
                    LogEvent::Download {
                        guid,
                        info: DownloadInfo {
                            file_name: name,
                            state,
                            path,
                            size: None,
                            sha256: None,
                            mime: None,
                            error: None,
                        },
                    },
                );
            }
        }
        m if m.starts_with("Network.") => {
            // `session_tab` is the tab of its page session or of one of its out-of-process frames' sessions.
            if let Some(tab) = session_tab
                && let Some(t) = st.tabs.get_mut(&tab)
            {
                crate::act::apply_request_event(&mut t.requests, m, p);
            }
        }
        _ => {}
    }
    out
}

/// What the user's browser saves over the extension relay: no path, no receipt, and why.
pub(crate) const UNCONFINED: &str = "not confined: over the extension relay the user's browser saves downloads where \
     its own settings say (usually the Downloads folder), not in browserd's download directory, and browserd does not \
     read the file, so there is no receipt (size, sha256); do not download it again, ask the user to check the file";

fn unconfined(file_name: String, state: String) -> DownloadInfo {
    DownloadInfo {
        file_name,
        state,
        error: Some(UNCONFINED.to_owned()),
        path: None,
        size: None,
        sha256: None,
        mime: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A tab with a page session and one out-of-process frame on its own session, whose document is known.
    fn tab_with_oopif() -> (State, TabHandle, SessionId) {
        let mut st = State::default();
        let (page, child) = (SessionId("page".into()), SessionId("child".into()));
        let h = TabHandle(1);
        let mut tab = Tab::new(h, "main".into(), String::new(), String::new(), None, st.revisions.clone());
        tab.session = Some(page.clone());
        tab.upsert_frame("main", None, "L1", "http://a/", &page, false);
        tab.upsert_frame("oop", Some("main".into()), "C1", "http://b/", &child, true);
        tab.children.insert(child.clone(), "oop".into());
        st.tabs.insert(h, tab);
        st.by_session.insert(page, h);
        st.by_session.insert(child.clone(), h);
        (st, h, child)
    }

    fn detached(child: &SessionId) -> CdpEvent {
        CdpEvent {
            session: Some(SessionId("page".into())),
            method: "Target.detachedFromTarget".into(),
            params: json!({"sessionId": child.as_str()}),
        }
    }

    #[test]
    fn a_frame_session_ending_while_the_page_stays_removes_the_frame() {
        let (mut st, h, child) = tab_with_oopif();
        handle_event(&mut st, &detached(&child), &HandleAllocator::new());
        assert!(!st.tabs[&h].frames.contains_key("oop"), "the frame went with its session");
    }

    #[test]
    fn frame_sessions_ending_during_browserds_own_detach_keep_their_frames() {
        let (mut st, h, child) = tab_with_oopif();
        let epoch = st.tabs[&h].frames["oop"].doc_epoch;
        st.tabs.get_mut(&h).unwrap().detaching = true;
        // Over the extension relay the frame's session may end before the page's (the idle detach).
        handle_event(&mut st, &detached(&child), &HandleAllocator::new());
        let t = &st.tabs[&h];
        assert_eq!(t.frames["oop"].doc_epoch, epoch, "the frame and its document are kept for the re-attach");
        assert!(t.children.is_empty(), "its session is gone");
    }

    #[test]
    fn a_closed_tab_listed_again_by_a_stale_target_list_stays_closed() {
        let (mut st, alloc) = (State::default(), HandleAllocator::new());
        let info = json!({"type": "page", "targetId": "T1", "url": "http://a/", "title": "A"});
        let (h, new) = register_page(&mut st, &alloc, &info).expect("a page");
        assert!(new);
        let destroyed =
            CdpEvent { session: None, method: "Target.targetDestroyed".into(), params: json!({"targetId": "T1"}) };
        handle_event(&mut st, &destroyed, &alloc);
        assert!(!st.tabs.contains_key(&h), "the tab is gone");
        // `chrome.debugger.getTargets` answered a moment later still lists it.
        assert_eq!(register_page(&mut st, &alloc, &info), None, "a destroyed target is not a new tab");
        assert!(st.tabs.is_empty() && st.by_target.is_empty());
    }

    fn event(method: &str, params: serde_json::Value) -> CdpEvent {
        CdpEvent { session: Some(SessionId("page".into())), method: method.into(), params }
    }

    /// The terminal download news the tab's log holds, as (name, state).
    fn finished(st: &State, h: TabHandle) -> Vec<(String, String)> {
        st.log_since(h, 0)
            .into_iter()
            .filter_map(|e| match e {
                LogEvent::Download { info, .. } if info.state != "inProgress" => Some((info.file_name, info.state)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_download_is_forgotten_once_its_terminal_state_is_logged() {
        for relay in [false, true] {
            let (mut st, h, _) = tab_with_oopif();
            st.relay_downloads = relay;
            let ns = if relay { "Page" } else { "Browser" };
            let alloc = HandleAllocator::new();
            for i in 0..500 {
                let (guid, name) = (format!("g{i}"), format!("file{i}.csv"));
                let begin = json!({"frameId": "main", "guid": guid, "suggestedFilename": name});
                handle_event(&mut st, &event(&format!("{ns}.downloadWillBegin"), begin), &alloc);
                assert_eq!(st.downloads.len(), 1, "the download is known while it runs");
                let progress = json!({"guid": guid, "state": "inProgress"});
                handle_event(&mut st, &event(&format!("{ns}.downloadProgress"), progress), &alloc);
                let state = if i % 2 == 0 { "completed" } else { "canceled" };
                let done = json!({"guid": guid, "state": state, "filePath": format!("/d/{name}")});
                handle_event(&mut st, &event(&format!("{ns}.downloadProgress"), done), &alloc);
                assert!(st.downloads.is_empty(), "a finished download is not kept ({ns}): {:?}", st.downloads);
            }
            let news = finished(&st, h);
            assert_eq!(news.len(), 500, "every download's end reached the tab's log ({ns})");
            assert_eq!(news[1], ("file1.csv".to_owned(), "canceled".to_owned()), "{ns}");
        }
    }

    #[test]
    fn the_downloads_of_a_closed_tab_are_forgotten() {
        let (mut st, h, _) = tab_with_oopif();
        st.by_target.insert("main".into(), h);
        let alloc = HandleAllocator::new();
        for i in 0..3 {
            let begin = json!({"frameId": "main", "guid": format!("g{i}"), "suggestedFilename": "big.iso"});
            handle_event(&mut st, &event("Browser.downloadWillBegin", begin), &alloc);
        }
        assert_eq!(st.downloads.len(), 3);
        handle_event(&mut st, &event("Target.targetDestroyed", json!({"targetId": "main"})), &alloc);
        assert!(!st.tabs.contains_key(&h), "the tab is gone");
        assert!(st.downloads.is_empty(), "its unfinished downloads went with it: {:?}", st.downloads);
    }
}
