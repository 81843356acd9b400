//! The provider's records: tabs, frames, documents, refs, observation history and the event log the effect summary reads.

use std::collections::{HashMap, VecDeque};

use browserd_cdp::SessionId;
use browserd_core::provider::{SessionKey, TabHandle};
use browserd_protocol::{DialogInfo, DownloadInfo, LoadState};

/// How many observation revisions per tab are kept for diffs.
pub(crate) const HISTORY_WINDOW: usize = 16;
/// How many log records are kept.
const LOG_CAP: usize = 4096;

/// One frame of a tab.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    /// Frame number in refs (`0` is the main frame, shown without prefix).
    pub(crate) key: u32,
    pub(crate) parent: Option<String>,
    /// The session whose renderer hosts this frame's document.
    pub(crate) session: SessionId,
    pub(crate) loader_id: String,
    pub(crate) doc_epoch: u64,
    pub(crate) url: String,
    /// Hosted by a child (OOPIF) session.
    pub(crate) oop: bool,
}

/// What a ref points at.
#[derive(Debug, Clone)]
pub(crate) struct RefEntry {
    pub(crate) frame_id: String,
    pub(crate) doc_epoch: u64,
    pub(crate) backend: i64,
    pub(crate) role: String,
    pub(crate) name: String,
    pub(crate) states: Vec<String>,
    /// The descendant that actually takes clicks (a custom widget's inner label with the listener).
    pub(crate) click_backend: Option<i64>,
}

/// Refs of one tab: stable per (frame, document, backend node).
#[derive(Debug, Default)]
pub(crate) struct RefTable {
    pub(crate) by_ref: HashMap<String, RefEntry>,
    by_node: HashMap<(String, u64, i64), String>,
    next: u64,
}

impl RefTable {
    /// The ref of a node, made on first sight.
    pub(crate) fn assign(&mut self, frame_id: &str, frame_key: u32, doc_epoch: u64, backend: i64) -> String {
        let key = (frame_id.to_owned(), doc_epoch, backend);
        if let Some(r) = self.by_node.get(&key) {
            return r.clone();
        }
        self.next += 1;
        let r = if frame_key == 0 { format!("e{}", self.next) } else { format!("f{frame_key}e{}", self.next) };
        self.by_node.insert(key, r.clone());
        self.by_ref.insert(
            r.clone(),
            RefEntry {
                frame_id: frame_id.to_owned(),
                doc_epoch,
                backend,
                role: String::new(),
                name: String::new(),
                states: Vec::new(),
                click_backend: None,
            },
        );
        r
    }

    /// Records the descendant that takes clicks for this ref.
    pub(crate) fn set_click_backend(&mut self, r: &str, backend: Option<i64>) {
        if let Some(e) = self.by_ref.get_mut(r) {
            e.click_backend = backend;
        }
    }

    /// Records what the node looked like when last observed.
    pub(crate) fn describe(&mut self, r: &str, role: &str, name: &str, states: &[String]) {
        if let Some(e) = self.by_ref.get_mut(r) {
            role.clone_into(&mut e.role);
            name.clone_into(&mut e.name);
            e.states = states.to_vec();
        }
    }
}

/// One rendered line of an observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    pub(crate) indent: u16,
    pub(crate) node_ref: Option<String>,
    pub(crate) text: String,
}

/// Something that happened in or around a tab, kept for effect summaries.
#[derive(Debug, Clone)]
pub(crate) enum LogEvent {
    /// Main frame committed a new document.
    Navigated(String),
    /// Main frame changed URL within the document.
    SameDocument(String),
    /// Main frame fired `load`.
    Loaded,
    /// A dialog opened.
    Dialog(DialogInfo),
    /// The dialog closed.
    DialogClosed,
    /// A tab opened by this tab.
    Popup(TabHandle),
    /// This tab or one it opened closed.
    TabClosed(TabHandle),
    /// A download started or progressed.
    Download { guid: String, info: DownloadInfo },
    /// A console error or uncaught exception.
    Console(String),
}

/// One tab.
#[derive(Debug)]
pub(crate) struct Tab {
    pub(crate) handle: TabHandle,
    pub(crate) target_id: String,
    pub(crate) url: String,
    pub(crate) title: String,
    pub(crate) opener: Option<TabHandle>,
    pub(crate) session: Option<SessionId>,
    /// OOPIF child sessions: session → frame id.
    pub(crate) children: HashMap<SessionId, String>,
    pub(crate) frames: HashMap<String, Frame>,
    pub(crate) next_frame_key: u32,
    pub(crate) next_doc_epoch: u64,
    pub(crate) refs: RefTable,
    pub(crate) history: VecDeque<(u64, Vec<Line>)>,
    pub(crate) revision: u64,
    pub(crate) dialog: Option<DialogInfo>,
    pub(crate) claimed_by: Option<SessionKey>,
    pub(crate) closing: bool,
    pub(crate) detaching: bool,
    /// Why the browser said it detaches us (from `Inspector.detached`).
    pub(crate) detach_reason: Option<String>,
    pub(crate) load_state: LoadState,
    /// Geometry of recent screenshots, for coordinate actions.
    pub(crate) images: crate::point::ImageLog,
}

impl Tab {
    pub(crate) fn new(
        handle: TabHandle,
        target_id: String,
        url: String,
        title: String,
        opener: Option<TabHandle>,
    ) -> Self {
        Self {
            handle,
            target_id,
            url,
            title,
            opener,
            session: None,
            children: HashMap::new(),
            frames: HashMap::new(),
            next_frame_key: 1,
            next_doc_epoch: 1,
            refs: RefTable::default(),
            history: VecDeque::new(),
            revision: 0,
            dialog: None,
            claimed_by: None,
            closing: false,
            detaching: false,
            detach_reason: None,
            load_state: LoadState::Complete,
            images: crate::point::ImageLog::default(),
        }
    }

    /// Records a frame's document; a new loader id is a new document (and a new document epoch).
    pub(crate) fn upsert_frame(
        &mut self,
        frame_id: &str,
        parent: Option<String>,
        loader_id: &str,
        url: &str,
        session: &SessionId,
        oop: bool,
    ) {
        let is_main = frame_id == self.target_id;
        let fresh_epoch = self.next_doc_epoch;
        match self.frames.get_mut(frame_id) {
            Some(f) => {
                if f.loader_id != loader_id && !loader_id.is_empty() {
                    f.loader_id = loader_id.to_owned();
                    f.doc_epoch = fresh_epoch;
                    self.next_doc_epoch += 1;
                }
                url.clone_into(&mut f.url);
                if oop || !f.oop {
                    f.session = session.clone();
                    f.oop = oop;
                }
                if parent.is_some() {
                    f.parent = parent;
                }
            }
            None => {
                let key = if is_main {
                    0
                } else {
                    self.next_frame_key += 1;
                    self.next_frame_key - 1
                };
                self.next_doc_epoch += 1;
                self.frames.insert(
                    frame_id.to_owned(),
                    Frame {
                        key,
                        parent,
                        session: session.clone(),
                        loader_id: loader_id.to_owned(),
                        doc_epoch: fresh_epoch,
                        url: url.to_owned(),
                        oop,
                    },
                );
            }
        }
        if is_main {
            url.clone_into(&mut self.url);
        }
    }

    /// Forgets a frame and its descendants.
    pub(crate) fn remove_frame(&mut self, frame_id: &str) {
        let mut gone = vec![frame_id.to_owned()];
        while let Some(id) = gone.pop() {
            self.frames.remove(&id);
            let kids: Vec<String> =
                self.frames.iter().filter(|(_, f)| f.parent.as_deref() == Some(&id)).map(|(k, _)| k.clone()).collect();
            gone.extend(kids);
        }
    }

    /// The main frame's document epoch.
    pub(crate) fn main_epoch(&self) -> u64 {
        self.frames.get(&self.target_id).map_or(0, |f| f.doc_epoch)
    }

    /// Records an observation's lines as a new revision.
    pub(crate) fn push_revision(&mut self, lines: Vec<Line>) -> u64 {
        self.revision += 1;
        self.history.push_back((self.revision, lines));
        while self.history.len() > HISTORY_WINDOW {
            self.history.pop_front();
        }
        self.revision
    }
}

/// Everything the provider knows.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) tabs: HashMap<TabHandle, Tab>,
    pub(crate) by_target: HashMap<String, TabHandle>,
    pub(crate) by_session: HashMap<SessionId, TabHandle>,
    pub(crate) log: VecDeque<(u64, TabHandle, LogEvent)>,
    pub(crate) seq: u64,
    /// Download guid → tab.
    pub(crate) downloads: HashMap<String, (TabHandle, String)>,
}

impl State {
    pub(crate) fn log(&mut self, tab: TabHandle, ev: LogEvent) {
        self.seq += 1;
        self.log.push_back((self.seq, tab, ev));
        while self.log.len() > LOG_CAP {
            self.log.pop_front();
        }
    }

    /// Events of `tab` after `since`.
    pub(crate) fn log_since(&self, tab: TabHandle, since: u64) -> Vec<LogEvent> {
        self.log.iter().filter(|(s, t, _)| *s > since && *t == tab).map(|(_, _, e)| e.clone()).collect()
    }

    /// The tab hosting a frame id.
    pub(crate) fn tab_of_frame(&self, frame_id: &str) -> Option<TabHandle> {
        if let Some(t) = self.by_target.get(frame_id) {
            return Some(*t);
        }
        self.tabs.values().find(|t| t.frames.contains_key(frame_id)).map(|t| t.handle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_are_stable_per_document_and_frame_qualified() {
        let mut t = RefTable::default();
        let a = t.assign("main", 0, 1, 10);
        assert_eq!(a, "e1");
        assert_eq!(t.assign("main", 0, 1, 10), a, "same node, same document: same ref");
        assert_ne!(t.assign("main", 0, 2, 10), a, "a new document gets new refs");
        assert_eq!(t.assign("child", 3, 1, 10), "f3e3");
    }

    #[test]
    fn a_new_loader_is_a_new_document_epoch() {
        let s = SessionId("s".into());
        let mut tab = Tab::new(TabHandle(1), "main".into(), String::new(), String::new(), None);
        tab.upsert_frame("main", None, "L1", "http://a/", &s, false);
        let e1 = tab.main_epoch();
        tab.upsert_frame("main", None, "L1", "http://a/#x", &s, false);
        assert_eq!(tab.main_epoch(), e1, "same-document navigation keeps refs");
        tab.upsert_frame("main", None, "L2", "http://a/next", &s, false);
        assert!(tab.main_epoch() > e1);
        tab.upsert_frame("child", Some("main".into()), "C1", "http://b/", &s, false);
        assert_eq!(tab.frames["child"].key, 1);
        tab.remove_frame("main");
        assert!(tab.frames.is_empty(), "descendants go with their frame");
    }
}
