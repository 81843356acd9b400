//! The broker-side half of the extension path: [`ExtensionEndpoint`] listens on a private Unix socket for native hosts,
//! pairs each one (same uid, allowed extension id, `hello` negotiation) and hands out an [`ExtensionLink`]: typed
//! commands for tabs, ownership, leases and Stop, the event stream (numbered, gaps trigger a resync), and the
//! [`RelayTransport`](crate::relay::RelayTransport) that carries CDP for the Chromium provider.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use browserd_ipc::{FramedConnection, FramedWriter, PeerCred, check_peer};
use browserd_protocol::hello::{VersionRange, missing_for_auto_turn_cleanup, negotiate};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::net::unix::OwnedWriteHalf;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::host::LINK_MAX_LINE;
use crate::relay::{self, Inbound, RelayState};

/// How the endpoint pairs and how long link calls may take.
#[derive(Debug, Clone)]
pub struct EndpointOptions {
    /// Extension ids allowed to pair (exact). Defaults to the development id.
    pub allowed_extension_ids: Vec<String>,
    /// Deadline of one extension command.
    pub call_timeout: Duration,
    /// How long a connecting host has to introduce itself and relay the extension's `hello`.
    pub handshake_timeout: Duration,
    /// Reported to the extension in `welcome`.
    pub broker_version: String,
}

impl Default for EndpointOptions {
    fn default() -> Self {
        EndpointOptions {
            allowed_extension_ids: vec![crate::install::DEV_EXTENSION_ID.to_owned()],
            call_timeout: Duration::from_secs(15),
            handshake_timeout: Duration::from_secs(10),
            broker_version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

/// The endpoint could not start, or a pairing failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    #[error("cannot listen for native hosts at {}: {message}; check the runtime directory and that no other broker owns it", path.display())]
    Bind { path: PathBuf, message: String },
    #[error("pairing refused: {0}")]
    Refused(String),
}

/// A command to the extension failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ExtensionError {
    /// The extension refused or the browser API failed; `code` is browserd's code (`NOT_OWNER`, `USER_STOPPED`,
    /// `LEASE_REVOKED`, `UNSUPPORTED`, `TAB_GONE`, `DEBUGGER_BUSY`, `BROWSER_ERROR`, …).
    #[error("the extension refused {cmd}: {code}: {message}")]
    Refused { cmd: String, code: String, message: String },
    /// No answer in time; the command may still have run.
    #[error("the extension did not answer {cmd} in time; the outcome is unknown — check status before retrying")]
    Timeout { cmd: String },
    /// The link is gone.
    #[error("the extension link is closed ({reason}); the extension reconnects by itself, wait for a new pairing")]
    Closed { reason: String },
}

impl ExtensionError {
    /// browserd's error code for this failure.
    pub fn code(&self) -> &str {
        match self {
            ExtensionError::Refused { code, .. } => code,
            ExtensionError::Timeout { .. } => "DEADLINE_EXCEEDED",
            ExtensionError::Closed { .. } => "CONNECTION_LOST",
        }
    }
}

/// What the paired extension announced.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionInfo {
    pub extension_id: String,
    /// Changes on every service-worker start.
    pub instance: String,
    pub protocol_version: u32,
    pub components: BTreeMap<String, String>,
    pub capabilities: BTreeSet<String>,
    /// Capabilities required for automatic turn cleanup that the extension lacks (empty when all are there).
    pub missing_for_auto_turn_cleanup: Vec<String>,
    pub user_agent: String,
    /// The extension's control epoch at pairing (bumped by every Stop and service-worker start).
    pub control_epoch: u64,
    pub host_pid: u32,
    pub host_version: String,
}

/// A tab as the extension describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtTab {
    pub tab_id: i64,
    #[serde(default)]
    pub target_id: Option<String>,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub group_id: i64,
    #[serde(default)]
    pub owner: Option<OwnerRecord>,
}

/// An ownership record kept by the extension in `chrome.storage.session`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerRecord {
    pub tab_id: i64,
    pub session: String,
    /// `created` (the agent opened it; it may close it) or `claimed` (the user's tab; it is only ever released).
    pub kind: String,
}

/// The fence the extension checks before any input: lease token plus control epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fence {
    pub token: u64,
    pub epoch: u64,
}

/// What a Stop did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StopReport {
    /// `popup`, `keyboard` or `broker`.
    pub via: String,
    pub control_epoch: u64,
    pub dropped_inputs: u64,
    /// How many inputs the gate had dispatched when it closed (inputs dispatched after Stop = the gate's count later
    /// minus this; it must stay 0).
    #[serde(default)]
    pub dispatched_before_stop: u64,
    #[serde(default)]
    pub detached: Vec<i64>,
    #[serde(default)]
    pub reason: Option<String>,
    /// Measured inside the service worker from the start of Stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timings: Option<StopTimings>,
    /// What browserd last saw and did through this link when Stop arrived (filled in by the link, not the extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_evidence: Option<Box<StopEvidence>>,
}

/// Times inside the service worker, in milliseconds from the start of Stop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StopTimings {
    /// The gate was closed (no input passes after this).
    pub gate_closed_ms: f64,
    /// The debugger was detached from every tab.
    pub detached_ms: f64,
}

/// The last observation and action browserd made through the extension: `USER_STOPPED` carries it, so the agent (and
/// the user) see where the work stood when Stop was pressed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StopEvidence {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_observation: Option<ObservationEvidence>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_action: Option<ActionEvidence>,
}

/// A compact record of one observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObservationEvidence {
    /// The agent session that observed.
    pub session: String,
    /// browserd's tab id (as on the wire).
    pub tab: u64,
    /// The observation revision of the tab.
    pub revision: u64,
    /// The observation's cursor (as returned to the agent).
    pub cursor: String,
    pub url: String,
    pub title: String,
}

/// A compact record of one action: in flight until it returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionEvidence {
    /// The agent session that acted.
    pub session: String,
    /// browserd's tab id (as on the wire).
    pub tab: u64,
    /// The action's trace id (as in its `ActionResult`).
    pub trace_id: String,
    /// The action kind (`click`, `type`, …).
    pub action: String,
    /// `inFlight` while it runs, then its outcome (`succeeded`, `failed`, …) or `error`.
    pub state: String,
    /// The error code when it did not succeed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// Something the broker should know about.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum LinkEvent {
    /// The user (or the broker) pressed Stop: cancel queued work and report `USER_STOPPED`.
    Stopped(StopReport),
    /// Events were lost (sequence gap); the broker's view was refreshed from `snapshot`.
    Resynced { expected: u64, got: u64, snapshot: Value },
    /// chrome.debugger detached from a tab (user cancelled the infobar, tab closed, another client…).
    DebuggerDetached { tab_id: i64, reason: String },
    /// A tab was closed; `owner` is the ownership record it had.
    TabRemoved { tab_id: i64, owner: Option<OwnerRecord> },
    /// The link is gone.
    Closed { reason: String },
}

enum Pending {
    Waiter(oneshot::Sender<Result<Value, ExtensionError>>),
    Cdp { cdp_id: u64, sink: mpsc::Sender<Inbound> },
}

pub(crate) struct LinkInner {
    info: ExtensionInfo,
    out: mpsc::Sender<Value>,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, (String, Pending)>>,
    pub(crate) relay: Mutex<RelayState>,
    events: broadcast::Sender<LinkEvent>,
    closed: watch::Sender<Option<String>>,
    epoch: AtomicU64,
    call_timeout: Duration,
    evidence: Mutex<StopEvidence>,
}

/// A paired extension. Cheap to clone.
#[derive(Clone)]
pub struct ExtensionLink {
    pub(crate) inner: Arc<LinkInner>,
}

impl std::fmt::Debug for ExtensionLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtensionLink").field("info", &self.inner.info).finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ExtensionLink {
    /// What the extension announced at pairing.
    pub fn info(&self) -> &ExtensionInfo {
        &self.inner.info
    }

    /// The extension's control epoch as last seen (pairing or the latest Stop).
    pub fn control_epoch(&self) -> u64 {
        self.inner.epoch.load(Ordering::SeqCst)
    }

    /// Subscribes to link events.
    pub fn events(&self) -> broadcast::Receiver<LinkEvent> {
        self.inner.events.subscribe()
    }

    /// Why the link closed, once it has.
    pub fn closed_reason(&self) -> Option<String> {
        self.inner.closed.borrow().clone()
    }

    /// Waits until the link closes and returns why.
    pub async fn wait_closed(&self) -> String {
        let mut rx = self.inner.closed.subscribe();
        match rx.wait_for(Option::is_some).await {
            Ok(r) => r.clone().unwrap_or_default(),
            Err(_) => "the link task ended".to_owned(),
        }
    }

    fn register(&self, cmd: &str, pending: Pending) -> Result<u64, ExtensionError> {
        if let Some(reason) = self.closed_reason() {
            return Err(ExtensionError::Closed { reason });
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        lock(&self.inner.pending).insert(id, (cmd.to_owned(), pending));
        Ok(id)
    }

    async fn post(&self, id: u64, cmd: &str, args: Value, priority: bool) -> Result<(), ExtensionError> {
        let mut msg = json!({"type": "call", "id": id, "cmd": cmd, "args": args});
        if priority {
            msg["lane"] = json!("priority");
        }
        if self.inner.out.send(msg).await.is_err() {
            lock(&self.inner.pending).remove(&id);
            return Err(ExtensionError::Closed {
                reason: self.closed_reason().unwrap_or_else(|| "writer gone".into()),
            });
        }
        Ok(())
    }

    /// Sends one command and waits for its answer (within the call timeout).
    pub async fn call(&self, cmd: &str, args: Value) -> Result<Value, ExtensionError> {
        self.call_lane(cmd, args, false).await
    }

    async fn call_lane(&self, cmd: &str, args: Value, priority: bool) -> Result<Value, ExtensionError> {
        let (tx, rx) = oneshot::channel();
        let id = self.register(cmd, Pending::Waiter(tx))?;
        self.post(id, cmd, args, priority).await?;
        match tokio::time::timeout(self.inner.call_timeout, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(ExtensionError::Closed { reason: self.closed_reason().unwrap_or_default() }),
            Err(_) => {
                lock(&self.inner.pending).remove(&id);
                Err(ExtensionError::Timeout { cmd: cmd.to_owned() })
            }
        }
    }

    /// Sends a CDP command whose answer goes straight to a relay sink as a CDP response (keeps event order).
    pub(crate) async fn post_cdp(
        &self,
        cdp_id: u64,
        sink: mpsc::Sender<Inbound>,
        args: Value,
    ) -> Result<(), ExtensionError> {
        let id = self.register("cdp.send", Pending::Cdp { cdp_id, sink })?;
        self.post(id, "cdp.send", args, false).await
    }

    /// A CDP transport over this link for the Chromium provider; tabs it creates are owned by `session`. A new
    /// transport replaces the previous one (whose `recv` then reports the connection closed).
    pub fn relay_transport(&self, session: impl Into<String>) -> relay::RelayTransport {
        relay::RelayTransport::new(self.clone(), session.into())
    }

    /// Opens a tab owned by `session`, in the session's tab group.
    pub async fn create_tab(&self, session: &str, url: &str, active: bool) -> Result<ExtTab, ExtensionError> {
        let v = self.call("tabs.create", json!({"session": session, "url": url, "active": active})).await?;
        let tab: ExtTab = parse(v, "tabs.create")?;
        let mut st = lock(&self.inner.relay);
        if let Some(t) = &tab.target_id {
            st.remember(tab.tab_id, t);
        }
        st.owner_session.insert(tab.tab_id, session.to_owned());
        drop(st);
        Ok(tab)
    }

    /// Closes a tab `session` created; refused (`NOT_OWNER`) for the user's tabs, claimed tabs and other sessions'.
    pub async fn close_tab(&self, session: &str, tab_id: i64) -> Result<(), ExtensionError> {
        self.call("tabs.remove", json!({"session": session, "tabId": tab_id})).await?;
        lock(&self.inner.relay).owner_session.remove(&tab_id);
        Ok(())
    }

    /// Claims a user's tab for `session` (refused if another session owns it).
    pub async fn claim_tab(&self, session: &str, tab_id: i64) -> Result<OwnerRecord, ExtensionError> {
        let rec: OwnerRecord =
            parse(self.call("own.claim", json!({"session": session, "tabId": tab_id})).await?, "own.claim")?;
        lock(&self.inner.relay).owner_session.insert(tab_id, rec.session.clone());
        Ok(rec)
    }

    /// Releases a tab (the page stays open): detaches, ungroups and drops the ownership record.
    pub async fn release_tab(&self, session: &str, tab_id: i64) -> Result<(), ExtensionError> {
        self.call("own.release", json!({"session": session, "tabId": tab_id})).await?;
        {
            let mut st = lock(&self.inner.relay);
            st.owner_session.remove(&tab_id);
            st.fences.remove(&tab_id);
        }
        // The extension detached quietly (no chrome.debugger.onDetach for its own detach): tell the relay's client.
        self.relay_detached(&[tab_id], "released").await;
        Ok(())
    }

    /// Tells the relay's client that the extension detached from `tabs` by itself (Stop, release): chrome.debugger
    /// reports no event for an extension's own detach, so without this the provider would keep dead sessions.
    async fn relay_detached(&self, tabs: &[i64], reason: &str) {
        let (out, sink) = {
            let mut st = lock(&self.inner.relay);
            let out: Vec<String> = tabs.iter().flat_map(|t| st.detached_messages(*t, reason)).collect();
            (out, st.sink.clone())
        };
        if let Some(sink) = sink {
            for m in out {
                if sink.send(Inbound::Message(m)).await.is_err() {
                    break;
                }
            }
        }
    }

    /// Makes the relay's `Target.createTarget` open tabs for `session` (`None`: the transport's own session). Callers
    /// that create tabs for several sessions over one relay serialise their creations around this.
    pub fn set_create_session(&self, session: Option<&str>) {
        lock(&self.inner.relay).create_session = session.map(str::to_owned);
    }

    /// Turns the relay's target discovery (`Target.targetCreated/infoChanged/destroyed` from tab events) on or off, as
    /// `Target.setDiscoverTargets` does; a client moving to a new link carries its setting over.
    pub fn set_target_discovery(&self, on: bool) {
        lock(&self.inner.relay).discover = on;
    }

    /// The tab id of a CDP target id, as the relay knows it (tabs listed, created or attached through this link).
    pub fn tab_of_target(&self, target_id: &str) -> Option<i64> {
        lock(&self.inner.relay).tab_by_target.get(target_id).copied()
    }

    /// The agent session the relay runs `tab_id`'s commands for (its creator or claimer), if known.
    pub fn owner_session(&self, tab_id: i64) -> Option<String> {
        lock(&self.inner.relay).owner_session.get(&tab_id).cloned()
    }

    /// Learns every tab's target id and owner session from the extension (`tabs.query` with the ownership records) and
    /// the leases its gate holds, so a relay on a new link can address tabs another link opened or claimed.
    pub async fn sync_relay(&self) -> Result<(), ExtensionError> {
        let tabs = self.list_tabs().await?;
        let status = self.status().await?;
        let mut st = lock(&self.inner.relay);
        // Leases the extension still holds (the same service worker behind a new host) keep their fences.
        if let Some(epoch) = status["gate"]["epoch"].as_u64() {
            self.inner.epoch.fetch_max(epoch, Ordering::SeqCst);
            for l in status["gate"]["leases"].as_array().into_iter().flatten() {
                if let (Some(tab), Some(token)) = (l["tabId"].as_i64(), l["token"].as_u64()) {
                    st.fences.entry(tab).or_insert(Fence { token, epoch });
                }
            }
        }
        for t in tabs {
            if let Some(target) = &t.target_id {
                st.remember(t.tab_id, target);
            }
            if let Some(owner) = &t.owner {
                st.owner_session.insert(t.tab_id, owner.session.clone());
            }
        }
        Ok(())
    }

    /// The CDP messages that end every attachment of this link's relay (`Inspector.detached` and
    /// `Target.detachedFromTarget` per attached tab), clearing them. For a client that moves to a new link.
    pub fn take_detached_messages(&self, reason: &str) -> Vec<String> {
        let mut st = lock(&self.inner.relay);
        let tabs: Vec<i64> = st.attached_tabs.iter().copied().collect();
        tabs.into_iter().flat_map(|t| st.detached_messages(t, reason)).collect()
    }

    /// The fence the relay attaches to `tab_id`'s input, if a lease is granted.
    pub fn fence(&self, tab_id: i64) -> Option<Fence> {
        lock(&self.inner.relay).fences.get(&tab_id).copied()
    }

    /// Every tab of the browser with its ownership record.
    pub async fn list_tabs(&self) -> Result<Vec<ExtTab>, ExtensionError> {
        parse(self.call("tabs.query", json!({})).await?, "tabs.query")
    }

    /// The ownership records the extension holds.
    pub async fn owners(&self) -> Result<Vec<OwnerRecord>, ExtensionError> {
        parse(self.call("own.list", json!({})).await?, "own.list")
    }

    /// Grants `session` the write lease on `tab_id` with fencing token `token` under the current control epoch; input
    /// sent through the relay for that tab carries this fence from now on.
    pub async fn grant_lease(&self, session: &str, tab_id: i64, token: u64) -> Result<Fence, ExtensionError> {
        let epoch = self.control_epoch();
        self.call("lease.grant", json!({"session": session, "tabId": tab_id, "token": token, "epoch": epoch})).await?;
        let fence = Fence { token, epoch };
        lock(&self.inner.relay).fences.insert(tab_id, fence);
        Ok(fence)
    }

    /// Revokes the write lease on `tab_id`.
    pub async fn revoke_lease(&self, tab_id: i64) -> Result<(), ExtensionError> {
        lock(&self.inner.relay).fences.remove(&tab_id);
        self.call("lease.revoke", json!({"tabId": tab_id})).await.map(|_| ())
    }

    /// Stop from the broker side: the extension closes its gate, bumps the control epoch, drops undispatched input and
    /// detaches (pages stay). Sent on the priority lane.
    pub async fn stop(&self, reason: &str) -> Result<StopReport, ExtensionError> {
        let v = self.call_lane("stop", json!({"reason": reason}), true).await?;
        let report = self.with_evidence(parse(v, "stop")?);
        self.note_stop(report.control_epoch);
        self.relay_detached(&report.detached, "stopped").await;
        Ok(report)
    }

    /// Drops the undispatched input of `tab_id` (or of every tab); leases and the gate stay. Sent on the priority
    /// lane. Returns how many inputs were dropped.
    pub async fn cancel_inputs(&self, tab_id: Option<i64>) -> Result<u64, ExtensionError> {
        let v = self.call_lane("cancel", json!({"tabId": tab_id}), true).await?;
        Ok(v["droppedInputs"].as_u64().unwrap_or(0))
    }

    /// Records the latest observation made through this link (Stop reports carry it).
    pub fn note_observation(&self, observation: ObservationEvidence) {
        lock(&self.inner.evidence).last_observation = Some(observation);
    }

    /// Records the latest action made through this link, in flight or finished (Stop reports carry it).
    pub fn note_action(&self, action: ActionEvidence) {
        lock(&self.inner.evidence).last_action = Some(action);
    }

    /// The evidence a Stop now would report.
    pub fn evidence(&self) -> StopEvidence {
        lock(&self.inner.evidence).clone()
    }

    /// Carries evidence over from an earlier link (the extension paired again).
    pub fn set_evidence(&self, evidence: StopEvidence) {
        *lock(&self.inner.evidence) = evidence;
    }

    fn with_evidence(&self, mut report: StopReport) -> StopReport {
        let evidence = self.evidence();
        if evidence != StopEvidence::default() {
            report.last_evidence = Some(Box::new(evidence));
        }
        report
    }

    fn note_stop(&self, epoch: u64) {
        self.inner.epoch.fetch_max(epoch, Ordering::SeqCst);
        lock(&self.inner.relay).fences.clear();
    }

    /// The extension's full status (connection, gate, leases, owners, last Stop).
    pub async fn status(&self) -> Result<Value, ExtensionError> {
        self.call("status", json!({})).await
    }
}

fn parse<T: for<'de> Deserialize<'de>>(v: Value, cmd: &str) -> Result<T, ExtensionError> {
    serde_json::from_value(v).map_err(|e| ExtensionError::Refused {
        cmd: cmd.to_owned(),
        code: "INTERNAL".into(),
        message: format!("unexpected answer shape ({e}); update the extension and browserd together"),
    })
}

/// Listens for native hosts. Paired links arrive on the receiver returned by [`ExtensionEndpoint::bind`].
#[derive(Debug)]
pub struct ExtensionEndpoint {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ExtensionEndpoint {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What `probe` answers (for `doctor`).
#[derive(Debug, Clone, Default)]
struct ProbeState {
    current: Option<ExtensionInfo>,
}

impl ExtensionEndpoint {
    /// Binds `path` (mode 0600; put it in browserd's 0700 runtime directory) and starts accepting hosts. A stale socket
    /// file nobody answers on is replaced.
    pub async fn bind(
        path: impl AsRef<Path>,
        options: EndpointOptions,
    ) -> Result<(ExtensionEndpoint, mpsc::Receiver<ExtensionLink>), LinkError> {
        let path = path.as_ref().to_path_buf();
        let bind_err = |e: std::io::Error| LinkError::Bind { path: path.clone(), message: e.to_string() };
        if path.exists() {
            if UnixStream::connect(&path).await.is_ok() {
                return Err(LinkError::Bind { path, message: "another process is already listening there".into() });
            }
            std::fs::remove_file(&path).map_err(bind_err)?;
        }
        let listener = UnixListener::bind(&path).map_err(bind_err)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(bind_err)?;
        let (tx, rx) = mpsc::channel(4);
        let probe = Arc::new(Mutex::new(ProbeState::default()));
        let uid = nix::unistd::getuid().as_raw();
        let task = tokio::spawn(accept_loop(listener, uid, options, tx, probe));
        Ok((ExtensionEndpoint { path, task }, rx))
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

async fn accept_loop(
    listener: UnixListener,
    uid: u32,
    options: EndpointOptions,
    tx: mpsc::Sender<ExtensionLink>,
    probe: Arc<Mutex<ProbeState>>,
) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let Ok(peer) = PeerCred::of(&stream) else { continue };
        if check_peer(uid, &peer).is_err() {
            tracing::warn!(peer_uid = peer.uid, "refused a native-host connection from another user");
            continue;
        }
        let options = options.clone();
        let tx = tx.clone();
        let probe = probe.clone();
        tokio::spawn(async move {
            let conn = FramedConnection::new(stream, peer, LINK_MAX_LINE);
            match tokio::time::timeout(options.handshake_timeout, handshake(conn, &options, &probe)).await {
                Ok(Ok(Some(link))) => {
                    lock(&probe).current = Some(link.info().clone());
                    let watch_probe = probe.clone();
                    let watched = link.clone();
                    tokio::spawn(async move {
                        watched.wait_closed().await;
                        let mut p = lock(&watch_probe);
                        if p.current.as_ref().map(|i| &i.instance) == Some(&watched.info().instance) {
                            p.current = None;
                        }
                    });
                    let _ = tx.send(link).await;
                }
                Ok(Ok(None)) => {}
                Ok(Err(e)) => tracing::warn!("native host pairing failed: {e}"),
                Err(_) => tracing::warn!("a native host connected but did not complete the handshake in time"),
            }
        });
    }
}

async fn refuse(w: &mut FramedWriter<OwnedWriteHalf>, message: String) -> LinkError {
    let _ = w.send(&json!({"type": "refused", "message": message})).await;
    LinkError::Refused(message)
}

async fn handshake(
    conn: FramedConnection,
    options: &EndpointOptions,
    probe: &Mutex<ProbeState>,
) -> Result<Option<ExtensionLink>, LinkError> {
    let (mut r, mut w) = conn.into_split();
    let first = r.recv().await.map_err(|e| LinkError::Refused(e.to_string()))?.unwrap_or(Value::Null);
    if first["type"] == "probe" {
        let current = lock(probe).current.clone();
        let _ = w.send(&json!({"type": "probeResult", "paired": current.is_some(), "extension": current})).await;
        return Ok(None);
    }
    if first["type"] != "host" {
        return Err(refuse(&mut w, "the first message must introduce the native host".into()).await);
    }
    let ext_id = first["extensionId"].as_str().unwrap_or_default().to_owned();
    if !options.allowed_extension_ids.contains(&ext_id) {
        return Err(refuse(
            &mut w,
            format!(
                "extension {ext_id} is not allowed to pair; add its id with `browserd install --extension-id {ext_id}`"
            ),
        )
        .await);
    }
    let hello = r.recv().await.map_err(|e| LinkError::Refused(e.to_string()))?.unwrap_or(Value::Null);
    if hello["type"] != "hello" {
        return Err(refuse(&mut w, "the extension did not start with hello".into()).await);
    }
    let p = &hello["params"];
    let theirs = VersionRange::new(
        u32::try_from(p["protocol"]["min"].as_u64().unwrap_or(0)).unwrap_or(0),
        u32::try_from(p["protocol"]["max"].as_u64().unwrap_or(0)).unwrap_or(0),
    );
    let version = match negotiate(VersionRange::CURRENT, theirs) {
        Ok(v) => v,
        Err(e) => return Err(refuse(&mut w, e.message.clone()).await),
    };
    let capabilities: BTreeSet<String> =
        p["capabilities"].as_array().into_iter().flatten().filter_map(|c| c.as_str().map(str::to_owned)).collect();
    let components: BTreeMap<String, String> = p["components"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())))
        .collect();
    let info = ExtensionInfo {
        extension_id: ext_id,
        instance: hello["instance"].as_str().unwrap_or_default().to_owned(),
        protocol_version: version,
        missing_for_auto_turn_cleanup: missing_for_auto_turn_cleanup(&capabilities),
        capabilities,
        components,
        user_agent: hello["userAgent"].as_str().unwrap_or_default().to_owned(),
        control_epoch: hello["controlEpoch"].as_u64().unwrap_or(0),
        host_pid: u32::try_from(first["pid"].as_u64().unwrap_or(0)).unwrap_or(0),
        host_version: first["hostVersion"].as_str().unwrap_or_default().to_owned(),
    };
    let welcome = json!({
        "type": "welcome",
        "protocolVersion": version,
        "broker": {"version": options.broker_version},
        "missingForAutoTurnCleanup": info.missing_for_auto_turn_cleanup,
    });
    w.send(&welcome).await.map_err(|e| LinkError::Refused(e.to_string()))?;

    let (out_tx, mut out_rx) = mpsc::channel::<Value>(256);
    let (events, _) = broadcast::channel(256);
    let (closed, _) = watch::channel(None);
    let first_seq = hello["seq"].as_u64().unwrap_or(0);
    let inner = Arc::new(LinkInner {
        epoch: AtomicU64::new(info.control_epoch),
        info,
        out: out_tx,
        next_id: AtomicU64::new(1),
        pending: Mutex::new(HashMap::new()),
        relay: Mutex::new(RelayState::default()),
        events,
        closed,
        call_timeout: options.call_timeout,
        evidence: Mutex::new(StopEvidence::default()),
    });
    let link = ExtensionLink { inner };

    // writer: ends when every handle is gone (the sender lives in `LinkInner`) or a write fails
    let wweak = Arc::downgrade(&link.inner);
    tokio::spawn(async move {
        while let Some(m) = out_rx.recv().await {
            if let Err(e) = w.send(&m).await {
                if let Some(inner) = wweak.upgrade() {
                    ExtensionLink { inner }.close(format!("writing to the native host failed: {e}"));
                }
                break;
            }
        }
    });
    // reader: holds only a weak reference, so dropping every handle ends the link
    let weak = Arc::downgrade(&link.inner);
    tokio::spawn(async move {
        let mut last_seq = first_seq;
        let reason = loop {
            let msg = match r.recv().await {
                Ok(Some(m)) => m,
                Ok(None) => {
                    break "the native host disconnected (browser closed, extension reloaded or host killed)"
                        .to_owned();
                }
                Err(e) => break format!("reading from the native host failed: {e}"),
            };
            let Some(inner) = weak.upgrade() else { return };
            let link = ExtensionLink { inner };
            match msg["type"].as_str() {
                Some("reply") => link.on_reply(msg).await,
                Some("event") => {
                    let seq = msg["seq"].as_u64().unwrap_or(0);
                    if seq != last_seq + 1 {
                        let expected = last_seq + 1;
                        let l = link.clone();
                        tokio::spawn(async move { l.resync(expected, seq).await });
                    }
                    last_seq = seq;
                    link.on_event(msg).await;
                }
                _ => tracing::debug!("ignored a message from the native host: {msg}"),
            }
        };
        if let Some(inner) = weak.upgrade() {
            ExtensionLink { inner }.close(reason);
        }
    });
    Ok(Some(link))
}

impl ExtensionLink {
    fn close(&self, reason: String) {
        let first = self.inner.closed.send_if_modified(|c| {
            if c.is_none() {
                *c = Some(reason.clone());
                true
            } else {
                false
            }
        });
        if !first {
            return;
        }
        let pending: Vec<_> = lock(&self.inner.pending).drain().collect();
        for (_, (_, p)) in pending {
            match p {
                Pending::Waiter(tx) => {
                    let _ = tx.send(Err(ExtensionError::Closed { reason: reason.clone() }));
                }
                Pending::Cdp { cdp_id, sink } => {
                    // The command may or may not have run: say so now instead of leaving it to its deadline.
                    let e = ExtensionError::Closed { reason: reason.clone() };
                    let _ = sink.try_send(Inbound::Message(relay::ext_error_reply(cdp_id, &e)));
                }
            }
        }
        if let Some(sink) = lock(&self.inner.relay).sink.take() {
            let _ = sink.try_send(Inbound::Closed(reason.clone()));
        }
        let _ = self.inner.events.send(LinkEvent::Closed { reason });
    }

    async fn on_reply(&self, msg: Value) {
        let Some(id) = msg["id"].as_u64() else { return };
        let Some((cmd, pending)) = lock(&self.inner.pending).remove(&id) else { return };
        let ok = msg["ok"].as_bool().unwrap_or(false);
        match pending {
            Pending::Waiter(tx) => {
                let r = if ok {
                    Ok(msg.get("result").cloned().unwrap_or(Value::Null))
                } else {
                    Err(ExtensionError::Refused {
                        cmd,
                        code: msg["error"]["code"].as_str().unwrap_or("BROWSER_ERROR").to_owned(),
                        message: msg["error"]["message"].as_str().unwrap_or_default().to_owned(),
                    })
                };
                let _ = tx.send(r);
            }
            Pending::Cdp { cdp_id, sink } => {
                let text = if ok {
                    json!({"id": cdp_id, "result": msg.get("result").cloned().unwrap_or(json!({}))}).to_string()
                } else {
                    relay::cdp_error_reply(cdp_id, &msg["error"])
                };
                let _ = sink.send(Inbound::Message(text)).await;
            }
        }
    }

    async fn on_event(&self, msg: Value) {
        let kind = msg["kind"].as_str().unwrap_or_default();
        match kind {
            "stopped" => {
                if let Ok(report) = serde_json::from_value::<StopReport>(msg.clone()) {
                    let report = self.with_evidence(report);
                    self.note_stop(report.control_epoch);
                    self.relay_detached(&report.detached, "stopped").await;
                    let _ = self.inner.events.send(LinkEvent::Stopped(report));
                }
            }
            "detach" => {
                if let Some(tab_id) = msg["source"]["tabId"].as_i64() {
                    lock(&self.inner.relay).fences.remove(&tab_id);
                    let reason = msg["reason"].as_str().unwrap_or_default().to_owned();
                    let _ = self.inner.events.send(LinkEvent::DebuggerDetached { tab_id, reason });
                }
            }
            "tabRemoved" => {
                if let Some(tab_id) = msg["tabId"].as_i64() {
                    let owner = serde_json::from_value(msg["owner"].clone()).ok();
                    let _ = self.inner.events.send(LinkEvent::TabRemoved { tab_id, owner });
                }
            }
            _ => {}
        }
        let (out, sink) = {
            let mut st = lock(&self.inner.relay);
            let out = st.translate_event(&msg);
            (out, st.sink.clone())
        };
        if let Some(sink) = sink {
            for m in out {
                if sink.send(Inbound::Message(m)).await.is_err() {
                    break;
                }
            }
        }
    }

    async fn resync(&self, expected: u64, got: u64) {
        tracing::warn!(expected, got, "extension events were lost; resyncing");
        match self.call("resync", json!({})).await {
            Ok(snapshot) => {
                {
                    let mut st = lock(&self.inner.relay);
                    for t in snapshot["tabs"].as_array().into_iter().flatten() {
                        if let (Some(tab), Some(target)) = (t["tabId"].as_i64(), t["targetId"].as_str()) {
                            st.remember(tab, target);
                        }
                    }
                    let attached: HashSet<i64> =
                        snapshot["attached"].as_array().into_iter().flatten().filter_map(Value::as_i64).collect();
                    st.attached_tabs.retain(|t| attached.contains(t));
                }
                if let Some(e) = snapshot["gate"]["epoch"].as_u64() {
                    self.inner.epoch.fetch_max(e, Ordering::SeqCst);
                }
                let _ = self.inner.events.send(LinkEvent::Resynced { expected, got, snapshot });
            }
            Err(e) => tracing::warn!("resync failed: {e}"),
        }
    }
}

/// Asks the endpoint at `path` whether an extension is paired (used by `doctor`). `Ok(None)`: listening, nothing
/// paired.
pub async fn probe(path: &Path) -> Result<Option<Value>, String> {
    let stream = tokio::time::timeout(Duration::from_secs(2), UnixStream::connect(path))
        .await
        .map_err(|_| "timed out connecting".to_owned())?
        .map_err(|e| e.to_string())?;
    let peer = PeerCred::of(&stream).map_err(|e| e.to_string())?;
    let mut conn = FramedConnection::new(stream, peer, 1024 * 1024);
    let answer = tokio::time::timeout(Duration::from_secs(2), conn.call(&json!({"type": "probe"})))
        .await
        .map_err(|_| "the endpoint did not answer the probe".to_owned())?
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "the endpoint closed without answering".to_owned())?;
    Ok(if answer["paired"] == true { Some(answer["extension"].clone()) } else { None })
}
