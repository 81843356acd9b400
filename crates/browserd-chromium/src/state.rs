//! The provider's records: tabs, frames, documents, refs, observation history and the event log the effect summary reads.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use browserd_cdp::SessionId;
use browserd_core::provider::{SessionKey, TabHandle};
use browserd_protocol::{DialogInfo, DownloadInfo, LoadState};

/// How many observation revisions per tab are kept for diffs.
pub(crate) const HISTORY_WINDOW: usize = 16;
/// How many log records are kept.
const LOG_CAP: usize = 1024;

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
    /// The document (loader id, epoch) the frame held before its child session attached again (an idle detach, a
    /// re-attach): when the new session reports the same loader id, the frame keeps that epoch and its refs.
    pub(crate) before_attach: Option<(String, u64)>,
}

/// The suffix that binds a ref to its browser connection: nothing on the first connection (so refs stay short),
/// then `b`, `c`, … `z`, `aa`, `ab`, … (bijective base 26 of the connection epoch).
pub(crate) fn epoch_tag(epoch: u64) -> String {
    if epoch <= 1 {
        return String::new();
    }
    let mut n = epoch;
    let mut out = Vec::new();
    while n > 0 {
        let d = (n - 1) % 26;
        out.push(b'a' + u8::try_from(d).unwrap_or(0));
        n = (n - 1) / 26;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// The connection epoch a tag names (`""` → 1, `b` → 2, …); `None` for anything but ≤ 8 lowercase letters.
fn tag_epoch(tag: &str) -> Option<u64> {
    if !tag.bytes().all(|b| b.is_ascii_lowercase()) || tag.len() > 8 {
        return None;
    }
    if tag.is_empty() {
        return Some(1);
    }
    Some(tag.bytes().fold(0u64, |acc, b| acc.saturating_mul(26).saturating_add(u64::from(b - b'a') + 1)))
}

/// An observation cursor: the provider-wide revision number, then the connection tag refs carry (`7`, `7b`). One
/// number names one revision of one tab on this connection, so a cursor needs neither the tab nor the connection
/// spelled out.
pub(crate) fn cursor_string(epoch: u64, revision: u64) -> String {
    format!("{revision}{}", epoch_tag(epoch))
}

/// A cursor's parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CursorParts {
    /// The provider-wide revision number.
    pub(crate) revision: u64,
    /// Connection epoch the cursor was issued on.
    pub(crate) epoch: u64,
}

/// Parses `7`, `7b`; `None` for anything else (an old `connection.tab.revision` cursor, a ref, junk).
pub(crate) fn parse_cursor(s: &str) -> Option<CursorParts> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 || (end > 1 && s.starts_with('0')) {
        return None;
    }
    Some(CursorParts { revision: s[..end].parse().ok()?, epoch: tag_epoch(&s[end..])? })
}

/// A ref's parts: `f<frame>` (optional), `e<number>`, then the connection tag (optional).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RefParts {
    /// Frame key (`0`: the main frame).
    pub(crate) frame: u32,
    /// Connection epoch the ref was issued on.
    pub(crate) epoch: u64,
}

/// Parses `e12`, `f2e7`, `e12b`; `None` for anything else (e.g. a `role "name"` target).
pub(crate) fn parse_ref(s: &str) -> Option<RefParts> {
    let digits_end = |t: &str| t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (frame, rest) = match s.strip_prefix('f') {
        Some(r) => {
            let end = digits_end(r);
            (r[..end].parse::<u32>().ok()?, &r[end..])
        }
        None => (0, s),
    };
    let rest = rest.strip_prefix('e')?;
    let end = digits_end(rest);
    if end == 0 {
        return None;
    }
    Some(RefParts { frame, epoch: tag_epoch(&rest[end..])? })
}

/// The facts about a node that decide what an action on it does: its `nodeVersion` is their digest.
///
/// The rule: a ref stays valid while its node keeps the **role** and the **accessible name** the caller last saw
/// (whitespace-normalised). Changing either means an action would now do something else (`Save` became `Delete`, a
/// button became a link), so the action is refused with `STALE_TARGET` / `nodeChanged` naming the change, until the
/// caller observes again. Not counted, because acting changes them or because the action re-checks them anyway:
/// the value of a field (typing changes it), checked / pressed / selected / expanded (toggling changes them),
/// focus, required / invalid (validation while typing), disabled (actionability refuses a disabled node with
/// `NOT_ACTIONABLE`; a control that became enabled is what a form flow waits for), and geometry (layout shifts
/// from unrelated changes; actionability re-validates the box and hit test before input). A node replaced by
/// another (a new backend node) is never the same ref: it reads `nodeRemoved`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct NodeFacts {
    pub(crate) role: String,
    pub(crate) name: String,
}

impl NodeFacts {
    /// Facts from the accessibility tree's role and name.
    pub(crate) fn new(role: &str, name: &str) -> Self {
        Self { role: role.to_owned(), name: name.split_whitespace().collect::<Vec<_>>().join(" ") }
    }

    /// The `nodeVersion`: a digest of the facts.
    pub(crate) fn version(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }

    /// How `self` (now) differs from `seen`, in words; `None` when the version is the same.
    pub(crate) fn change_from(&self, seen: &NodeFacts) -> Option<String> {
        if self.version() == seen.version() {
            return None;
        }
        let q = |s: &str| format!("\"{}\"", crate::provider::truncate(s, 60));
        let mut parts = Vec::new();
        if self.role != seen.role {
            parts.push(format!("its role was {} and is now {}", seen.role, self.role));
        }
        if self.name != seen.name {
            parts.push(format!("its name was {} and is now {}", q(&seen.name), q(&self.name)));
        }
        Some(parts.join(" and "))
    }
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
    /// Role and name at the latest observation (internal ones included).
    pub(crate) facts: NodeFacts,
    /// Role and name the caller was last shown (its `nodeVersion`); actions compare the node against these.
    pub(crate) seen: Option<NodeFacts>,
}

/// Refs of one tab: stable per (frame, document, backend node).
#[derive(Debug, Default)]
pub(crate) struct RefTable {
    pub(crate) by_ref: HashMap<String, RefEntry>,
    by_node: HashMap<(String, u64, i64), String>,
    next: u64,
    /// Connection epoch of the provider (its tag ends every ref).
    epoch: u64,
    /// Refs issued before the user's Stop: void for good (`controlEpochChanged`); the same nodes get new refs.
    pub(crate) voided: HashSet<String>,
}

impl RefTable {
    /// Binds new refs to this connection epoch (the provider's, set before any ref is made).
    pub(crate) fn bind(&mut self, epoch: u64) {
        self.epoch = epoch;
    }

    /// Voids every ref issued so far (the user pressed Stop): each reads `controlEpochChanged` from now on, and the
    /// next observation gives the same nodes new refs.
    pub(crate) fn void_all(&mut self) {
        self.voided.extend(self.by_ref.drain().map(|(r, _)| r));
        self.by_node.clear();
    }

    /// Marks what the caller has now been shown of these refs (their `nodeVersion` moves to the current one).
    pub(crate) fn commit_seen<'a>(&mut self, refs: impl IntoIterator<Item = &'a str>) {
        for r in refs {
            if let Some(e) = self.by_ref.get_mut(r) {
                e.seen = Some(e.facts.clone());
            }
        }
    }

    /// The ref of a node, made on first sight.
    pub(crate) fn assign(&mut self, frame_id: &str, frame_key: u32, doc_epoch: u64, backend: i64) -> String {
        let key = (frame_id.to_owned(), doc_epoch, backend);
        if let Some(r) = self.by_node.get(&key) {
            return r.clone();
        }
        self.next += 1;
        let tag = epoch_tag(self.epoch);
        let r =
            if frame_key == 0 { format!("e{}{tag}", self.next) } else { format!("f{frame_key}e{}{tag}", self.next) };
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
                facts: NodeFacts::default(),
                seen: None,
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

    /// Records the node's accessibility role and name at an observation (its current `nodeVersion`). The first
    /// record is also what the caller is taken to have seen, until an observation handed to it shows the node again.
    pub(crate) fn observed(&mut self, r: &str, facts: NodeFacts) {
        if let Some(e) = self.by_ref.get_mut(r) {
            if e.seen.is_none() {
                e.seen = Some(facts.clone());
            }
            e.facts = facts;
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
    /// A top-level navigation of this tab (or of a popup it opened) to this origin was stopped before its request
    /// was sent (the site policy refuses it).
    Blocked(String),
}

/// One observation kept for diffs: its lines, and the refs it left out because a modal dialog holds the page (their
/// elements still there with a box, out of reach until it closes; not gone).
#[derive(Debug, Clone, Default)]
pub(crate) struct Revision {
    pub(crate) lines: Vec<Line>,
    pub(crate) behind_modal: Vec<String>,
    /// While a modal dialog holds the page: the lines of the last revision before it opened (the page it hides), so
    /// that what comes back when it closes is not new, and what changed there meanwhile is.
    pub(crate) behind_page: Option<Arc<Vec<Line>>>,
}

impl Revision {
    /// The lines of an observation, and the refs it left out behind a modal dialog.
    pub(crate) fn new(lines: Vec<Line>, behind_modal: Vec<String>) -> Self {
        Revision { lines, behind_modal, behind_page: None }
    }

    /// The page a modal dialog hides while it is open ([`Self::behind_page`]; none otherwise).
    pub(crate) fn page_behind(&self) -> &[Line] {
        self.behind_page.as_deref().map_or(&[], Vec::as_slice)
    }
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
    /// The latest observation revisions of this tab (number, revision), at most [`HISTORY_WINDOW`].
    pub(crate) history: VecDeque<(u64, Revision)>,
    /// This tab's latest revision (0: none yet).
    pub(crate) revision: u64,
    /// The provider's revision counter, shared by all its tabs: a revision number names one tab's revision.
    revisions: Arc<AtomicU64>,
    pub(crate) dialog: Option<DialogInfo>,
    pub(crate) claimed_by: Option<SessionKey>,
    pub(crate) closing: bool,
    pub(crate) detaching: bool,
    /// Why the browser said it detaches us (from `Inspector.detached`).
    pub(crate) detach_reason: Option<String>,
    pub(crate) load_state: LoadState,
    /// Geometry of recent screenshots, for coordinate actions.
    pub(crate) images: crate::point::ImageLog,
    /// Accessibility trees reused while the page state is unchanged (observation's hot path).
    pub(crate) ax_cache: crate::observe::AxCache,
    /// The URL browserd created the tab with, until the tab is seen showing a real document: target-info events
    /// report the initial `about:blank` (or an empty URL) first, and an observation must not read that document.
    pub(crate) awaiting_url: Option<String>,
    /// Its renderer crashed (`Target.targetCrashed`) and it has not navigated since: still an open tab.
    pub(crate) crashed: bool,
    /// browserd created this tab (`Target.createTarget`). On a remote endpoint such a tab may show as attached to
    /// another client: a grid (Browserless, Selenium) keeps its own protocol client on every page it serves.
    pub(crate) opened_here: bool,
    /// The page viewport of the session whose tab this is (`profiles.rs`): set on every page session it gets.
    pub(crate) viewport: Option<(u32, u32)>,
    /// The URL of the last top-level navigation the site policy stopped (`provider/intercept.rs`), until the tab
    /// commits another document: the browser's error page the tab then shows stands for that URL.
    pub(crate) blocked: Option<String>,
    /// The node a screenshot point hit when its action was described for the broker's approval check
    /// (`act/describe.rs`): the action on that point must hit the same node.
    pub(crate) described: Option<crate::act::Described>,
    /// Frames the page attached (`Page.frameAttached`) that have not committed a document yet: their first request is
    /// judged by the site policy (`provider/intercept.rs`) before the frame is otherwise known.
    pub(crate) attached_frames: RecentFrames<()>,
    /// The fetch/XHR requests of its page and frame sessions while an action watches them (`act/requests.rs`).
    pub(crate) requests: crate::act::Requests,
    /// Frames whose document request the site policy stopped (`provider/intercept.rs`), with the stopped URL, until
    /// the frame commits another document: the browser's error page the frame then shows stands for that URL.
    pub(crate) blocked_frames: RecentFrames<String>,
}

/// Frame ids with a value each, at most [`RecentFrames::CAP`]: a new one past that evicts the oldest (a page that
/// attaches frames without end must not make browserd forget the frame whose request is paused right now).
#[derive(Debug, Clone)]
pub(crate) struct RecentFrames<V> {
    map: HashMap<String, V>,
    order: VecDeque<String>,
}

impl<V> Default for RecentFrames<V> {
    fn default() -> Self {
        Self { map: HashMap::new(), order: VecDeque::new() }
    }
}

impl<V> RecentFrames<V> {
    pub(crate) const CAP: usize = 512;

    /// Records `id` (its value replaced when known), evicting the oldest past [`Self::CAP`].
    pub(crate) fn insert_value(&mut self, id: String, value: V) {
        if self.map.insert(id.clone(), value).is_none() {
            self.order.push_back(id);
        }
        while self.map.len() > Self::CAP {
            let Some(old) = self.order.pop_front() else { break };
            self.map.remove(&old);
        }
    }

    pub(crate) fn get(&self, id: &str) -> Option<&V> {
        self.map.get(id)
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.map.contains_key(id)
    }

    pub(crate) fn remove(&mut self, id: &str) -> Option<V> {
        let v = self.map.remove(id)?;
        self.order.retain(|o| o != id);
        Some(v)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

impl RecentFrames<()> {
    /// Records `id`, evicting the oldest past [`Self::CAP`].
    pub(crate) fn insert(&mut self, id: String) {
        self.insert_value(id, ());
    }
}

impl Tab {
    /// The URL the site policy judges for a document of this tab showing `url`: the browser's error page after a
    /// navigation the policy stopped (`provider/intercept.rs`) stands for the stopped URL.
    pub(crate) fn policy_url(&self, url: &str) -> String {
        match &self.blocked {
            Some(stopped) if url.starts_with("chrome-error:") => stopped.clone(),
            _ => url.to_owned(),
        }
    }

    pub(crate) fn new(
        handle: TabHandle,
        target_id: String,
        url: String,
        title: String,
        opener: Option<TabHandle>,
        revisions: Arc<AtomicU64>,
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
            revisions,
            dialog: None,
            claimed_by: None,
            closing: false,
            detaching: false,
            detach_reason: None,
            load_state: LoadState::Complete,
            images: crate::point::ImageLog::default(),
            opened_here: false,
            viewport: None,
            ax_cache: crate::observe::AxCache::default(),
            awaiting_url: None,
            crashed: false,
            blocked: None,
            described: None,
            attached_frames: RecentFrames::default(),
            requests: crate::act::Requests::default(),
            blocked_frames: RecentFrames::default(),
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
                    // An unknown loader id (see `new_document_of_unknown_loader`) is the same document learning it.
                    if !f.loader_id.is_empty() {
                        f.doc_epoch = fresh_epoch;
                        self.next_doc_epoch += 1;
                    } else if let Some((before, epoch)) = f.before_attach.take()
                        && before == loader_id
                    {
                        // Re-attached to the document it held before (the loader id, not the session, is its
                        // identity): the refs observed then are valid again.
                        f.doc_epoch = epoch;
                    }
                    f.before_attach = None;
                    f.loader_id = loader_id.to_owned();
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
                        before_attach: None,
                    },
                );
            }
        }
        if is_main {
            url.clone_into(&mut self.url);
        }
    }

    /// Marks `frame_id` as holding a new document whose loader id is not known yet (an OOPIF that just got its own
    /// session): a new document epoch now; the first loader id learned later is adopted without another one.
    pub(crate) fn new_document_of_unknown_loader(&mut self, frame_id: &str) {
        if let Some(f) = self.frames.get_mut(frame_id)
            && !f.loader_id.is_empty()
        {
            f.before_attach = Some((std::mem::take(&mut f.loader_id), f.doc_epoch));
            f.doc_epoch = self.next_doc_epoch;
            self.next_doc_epoch += 1;
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

    /// The revision `since` names, when it is one of this tab's revisions still in the history window, issued on
    /// connection `epoch`. `None` (the caller resyncs with a full observation) for a cursor of another connection or
    /// another tab, one that fell out of the window, and anything that is not a cursor: never another revision.
    pub(crate) fn revision_at(&self, epoch: u64, since: &str) -> Option<&Revision> {
        let c = parse_cursor(since.trim()).filter(|c| c.epoch == epoch)?;
        self.history.iter().find(|(r, _)| *r == c.revision).map(|(_, rev)| rev)
    }

    /// The latest revision's lines (none before the first observation).
    pub(crate) fn latest_lines(&self) -> &[Line] {
        self.history.back().map_or(&[], |(_, rev)| rev.lines.as_slice())
    }

    /// Records an observation as a new revision (the provider's next revision number).
    pub(crate) fn push_revision(&mut self, mut rev: Revision) -> u64 {
        if !rev.behind_modal.is_empty()
            && let Some((_, prev)) = self.history.back()
        {
            rev.behind_page = match &prev.behind_page {
                Some(page) => Some(Arc::clone(page)),
                None if prev.behind_modal.is_empty() => Some(Arc::new(prev.lines.clone())),
                None => None,
            };
        }
        self.revision = self.revisions.fetch_add(1, Ordering::Relaxed) + 1;
        self.history.push_back((self.revision, rev));
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
    /// Download guid → tab, while the download runs: removed once its terminal state is logged or its tab closes.
    pub(crate) downloads: HashMap<String, (TabHandle, String)>,
    /// Downloads are told by the tab's `Page.download*` events (the extension relay, which cannot confine them).
    pub(crate) relay_downloads: bool,
    /// The observation revision counter every tab draws from (see [`cursor_string`]).
    pub(crate) revisions: Arc<AtomicU64>,
    /// Handles an earlier connection to the same browser gave its targets: a target seen again gets its old handle,
    /// so a reconnect keeps the tab's ownership (see `ChromiumProvider::adopt_handles`).
    pub(crate) preferred: HashMap<String, TabHandle>,
    /// Frames whose document request the site policy stopped before browserd could place them in a tab (attached
    /// while the tab was detached), with the stopped URL: when a tab's frame tree later shows one, its error page
    /// stands for that URL (`provider/sessions.rs`).
    pub(crate) unplaced_blocked: RecentFrames<String>,
    /// Targets the browser said were destroyed (a target id is never used again): a target list read a moment later
    /// may still carry one (`chrome.debugger.getTargets` over the extension relay does, right after the user closed
    /// the tab), and it must not come back as an open tab.
    pub(crate) closed_targets: RecentFrames<()>,
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
        self.tabs
            .values()
            .find(|t| t.frames.contains_key(frame_id) || t.attached_frames.contains(frame_id))
            .map(|t| t.handle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_frames_evict_the_oldest_instead_of_forgetting_all() {
        let mut f = RecentFrames::<()>::default();
        for i in 0..RecentFrames::<()>::CAP + 10 {
            f.insert(format!("frame{i}"));
        }
        assert_eq!(f.len(), RecentFrames::<()>::CAP);
        assert!(!f.contains("frame9") && f.contains("frame10"), "the oldest are evicted");
        assert!(f.contains(&format!("frame{}", RecentFrames::<()>::CAP + 9)), "the newest is kept");
        f.remove("frame10");
        f.insert("again".into());
        assert_eq!(f.len(), RecentFrames::<()>::CAP);
        assert!(f.contains("frame11"));
    }

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
    fn refs_carry_the_connection_epoch_only_after_the_first() {
        assert_eq!(epoch_tag(1), "");
        assert_eq!(epoch_tag(2), "b");
        assert_eq!(epoch_tag(26), "z");
        assert_eq!(epoch_tag(27), "aa");
        let mut t = RefTable::default();
        t.bind(3);
        assert_eq!(t.assign("main", 0, 1, 10), "e1c");
        assert_eq!(t.assign("child", 2, 1, 11), "f2e2c");
        for (s, frame, epoch) in [("e1", 0, 1), ("f2e7", 2, 1), ("e12b", 0, 2), ("f3e4z", 3, 26), ("e5aa", 0, 27)] {
            assert_eq!(parse_ref(s), Some(RefParts { frame, epoch }), "{s}");
        }
        for epoch in 1..2000 {
            assert_eq!(parse_ref(&format!("e1{}", epoch_tag(epoch))).map(|p| p.epoch), Some(epoch));
        }
        for bad in ["", "e", "f2", "fe3", "e3B", "e3-b", "button \"Save\"", "x1", "e1e2"] {
            assert_eq!(parse_ref(bad), None, "{bad}");
        }
    }

    #[test]
    fn cursors_are_a_revision_number_and_the_connection_tag() {
        assert_eq!(cursor_string(1, 7), "7");
        assert_eq!(cursor_string(2, 7), "7b");
        assert_eq!(cursor_string(28, 1234), "1234ab");
        for (s, revision, epoch) in [("7", 7, 1), ("7b", 7, 2), ("1234ab", 1234, 28), ("0", 0, 1)] {
            assert_eq!(parse_cursor(s), Some(CursorParts { revision, epoch }), "{s}");
        }
        for epoch in [1, 2, 26, 27, 700] {
            assert_eq!(parse_cursor(&cursor_string(epoch, 42)), Some(CursorParts { revision: 42, epoch }));
        }
        for bad in ["", "b", "1.23.4", "07", "7B", "7-b", "e7", "7 b", "7abcdefghi", "99999999999999999999999"] {
            assert_eq!(parse_cursor(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_cursor_names_one_revision_of_one_tab_on_one_connection() {
        let counter = Arc::new(AtomicU64::new(0));
        let tab = |h: u64| Tab::new(TabHandle(h), format!("t{h}"), String::new(), String::new(), None, counter.clone());
        let (mut a, mut b) = (tab(1), tab(2));
        let line = |t: &str| Revision::new(vec![Line { indent: 0, node_ref: None, text: t.to_owned() }], Vec::new());
        let ra = a.push_revision(line("a"));
        let rb = b.push_revision(line("b"));
        assert_ne!(ra, rb, "revision numbers are shared by the provider's tabs");
        let (ca, cb) = (cursor_string(1, ra), cursor_string(1, rb));
        assert_eq!(a.revision_at(1, &ca).map(|r| r.lines[0].text.as_str()), Some("a"));
        assert_eq!(a.revision_at(1, &format!(" {ca} ")).map(|r| r.lines[0].text.as_str()), Some("a"));
        assert_eq!(b.revision_at(1, &cb).map(|r| r.lines[0].text.as_str()), Some("b"));
        assert!(b.revision_at(1, &ca).is_none(), "tab a's cursor on tab b resyncs");
        assert!(a.revision_at(2, &ca).is_none(), "a cursor of another connection resyncs");
        assert!(a.revision_at(2, &cursor_string(2, ra)).is_some(), "the same number on the new connection's tag");
        assert!(a.revision_at(1, "1.1.1").is_none() && a.revision_at(1, "junk").is_none());
        for i in 0..HISTORY_WINDOW {
            a.push_revision(line(&format!("a{i}")));
        }
        assert!(a.revision_at(1, &ca).is_none(), "a cursor past the window resyncs");
        assert!(a.revision_at(1, &cursor_string(1, a.revision)).is_some());
    }

    #[test]
    fn node_versions_count_role_and_name_only_and_say_what_changed() {
        let seen = NodeFacts::new("button", "Save");
        assert_eq!(NodeFacts::new("button", " Save\n").change_from(&seen), None, "whitespace is not a change");
        let renamed = NodeFacts::new("button", "Delete").change_from(&seen).unwrap();
        assert_eq!(renamed, "its name was \"Save\" and is now \"Delete\"");
        assert!(NodeFacts::new("link", "Save").change_from(&seen).unwrap().contains("role was button and is now link"));
        let mut t = RefTable::default();
        let r = t.assign("main", 0, 1, 5);
        t.observed(&r, seen.clone());
        t.observed(&r, NodeFacts::new("button", "Delete"));
        assert_eq!(t.by_ref[&r].seen.as_ref(), Some(&seen), "an internal observation does not move what was seen");
        t.commit_seen([r.as_str()]);
        assert_eq!(t.by_ref[&r].seen.as_ref().map(|f| f.name.as_str()), Some("Delete"));
    }

    #[test]
    fn a_new_loader_is_a_new_document_epoch() {
        let s = SessionId("s".into());
        let mut tab = Tab::new(TabHandle(1), "main".into(), String::new(), String::new(), None, Arc::default());
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

    #[test]
    fn a_frame_moving_to_its_own_process_is_a_new_document_whose_loader_is_learned_later() {
        let (main, child) = (SessionId("main".into()), SessionId("child".into()));
        let mut tab = Tab::new(TabHandle(1), "main".into(), String::new(), String::new(), None, Arc::default());
        tab.upsert_frame("main", None, "L1", "http://a/", &main, false);
        tab.upsert_frame("oop", Some("main".into()), "P0", "about:blank", &main, false);
        let before = tab.frames["oop"].doc_epoch;
        // Target.attachedToTarget: the frame moves to the child session; its loader id is not known yet.
        tab.upsert_frame("oop", None, "", "http://b/", &child, true);
        tab.new_document_of_unknown_loader("oop");
        let moved = tab.frames["oop"].doc_epoch;
        assert!(moved > before, "the OOPIF holds a new document");
        // An observation here binds refs to `moved`; the child's frame tree then tells the loader id.
        tab.upsert_frame("oop", None, "C1", "http://b/", &child, true);
        assert_eq!(tab.frames["oop"].doc_epoch, moved, "learning the loader id keeps the refs valid");
        tab.upsert_frame("oop", None, "C2", "http://b/next", &child, true);
        assert!(tab.frames["oop"].doc_epoch > moved, "a real navigation afterwards is a new document");
    }

    #[test]
    fn a_child_session_attaching_again_to_the_same_document_keeps_its_epoch() {
        let (main, child, again) = (SessionId("main".into()), SessionId("c1".into()), SessionId("c2".into()));
        let mut tab = Tab::new(TabHandle(1), "main".into(), String::new(), String::new(), None, Arc::default());
        tab.upsert_frame("main", None, "L1", "http://a/", &main, false);
        tab.upsert_frame("oop", None, "", "http://b/", &child, true);
        tab.upsert_frame("oop", None, "C1", "http://b/", &child, true);
        let held = tab.frames["oop"].doc_epoch;
        // The idle detach dropped the child session; attaching again knows no loader id until its frame tree.
        tab.upsert_frame("oop", None, "", "http://b/", &again, true);
        tab.new_document_of_unknown_loader("oop");
        assert!(tab.frames["oop"].doc_epoch > held, "fail closed until the document is known");
        tab.upsert_frame("oop", None, "C1", "http://b/", &again, true);
        assert_eq!(tab.frames["oop"].doc_epoch, held, "the same loader id is the same document: refs stay valid");
        // A different document after a re-attach is a new one.
        tab.upsert_frame("oop", None, "", "http://b/", &child, true);
        tab.new_document_of_unknown_loader("oop");
        tab.upsert_frame("oop", None, "C9", "http://b/other", &child, true);
        assert!(tab.frames["oop"].doc_epoch > held, "documentChanged when it did change");
    }
}
