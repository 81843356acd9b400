//! A broker over a real managed Chromium and the loopback fixture site, plus "the user": a second, independent
//! DevTools connection to the same browser (`--remote-debugging-port` next to browserd's pipe) that does what a
//! person would — navigate, change the page, open or close tabs — without going through browserd.

#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;
use std::time::Duration;

use browserd_broker::ClientError;
use browserd_broker::client::{Client, ConnectOptions};
use browserd_broker::config::{BrokerConfig, PolicyConfig};
use browserd_broker::lazy::BrowserTarget;
use browserd_broker::server::Broker;
use browserd_cdp::{Cdp, LaunchOptions, ManagedBrowser, SessionId as CdpSession, connect_ws};
use browserd_ipc::RuntimeDir;
use browserd_protocol::hello::ComponentRole;
use browserd_protocol::lifecycle::{
    DebuggerLeaseState, HostKind, SessionOpenParams, StatusParams, ToolsActivateParams,
};
use browserd_protocol::{ErrorData, SessionId};
use browserd_test_support::fixtures::FixtureSite;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::task::JoinHandle;

const CALL: Duration = Duration::from_secs(20);

pub struct Real {
    pub site: FixtureSite,
    pub c: Client,
    pub s: SessionId,
    /// The broker's runtime directory (for more clients).
    pub runtime_dir: PathBuf,
    profile: PathBuf,
    /// The journal file, when the broker opened one.
    journal: Option<PathBuf>,
    task: JoinHandle<Result<browserd_broker::server::RunSummary, browserd_broker::server::BrokerError>>,
    /// A Chromium the test started itself, reached by the broker as a plain remote DevTools endpoint.
    remote: Option<ManagedBrowser>,
    _tmp: TempDir,
}

impl Real {
    /// A broker (managed Chromium launched on first use), a client, and an open session with tools active.
    pub async fn start(host_session: &str) -> Real {
        Self::start_with(host_session, false).await
    }

    /// [`Real::start`] with the durable journal the product broker opens (call-id de-duplication, recovery records).
    pub async fn start_journaled(host_session: &str) -> Real {
        Self::start_with(host_session, true).await
    }

    /// [`Real::start`] with a broker configuration of the test's own (`idle_exit_secs` is set to 0).
    pub async fn start_config(host_session: &str, config: BrokerConfig) -> Real {
        Self::start_full(host_session, false, config, false).await
    }

    async fn start_with(host_session: &str, journal: bool) -> Real {
        Self::start_full(host_session, journal, BrokerConfig::default(), false).await
    }

    /// [`Real::start_journaled`] with a configuration of the test's own, its idle exit kept, and the managed browser
    /// launched through `executable` (a wrapper the test controls).
    pub async fn start_drill(host_session: &str, config: BrokerConfig, executable: PathBuf) -> Real {
        Self::start_opts(host_session, true, config, false, Some(executable)).await
    }

    /// [`Real::start`] against a plain remote DevTools endpoint: a Chromium the test starts itself with
    /// `--remote-debugging-port`, which the broker reaches by its `http://127.0.0.1:PORT` URL (the remote/grid path).
    pub async fn start_remote(host_session: &str) -> Real {
        Self::start_full(host_session, false, BrokerConfig::default(), true).await
    }

    async fn start_full(host_session: &str, journal: bool, config: BrokerConfig, remote: bool) -> Real {
        Self::start_opts(host_session, journal, BrokerConfig { idle_exit_secs: 0, ..config }, remote, None).await
    }

    async fn start_opts(
        host_session: &str,
        journal: bool,
        config: BrokerConfig,
        remote: bool,
        executable: Option<PathBuf>,
    ) -> Real {
        let site = FixtureSite::start().await.unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("rt");
        let rdir = RuntimeDir::ensure(&dir).unwrap();
        let profile = tmp.path().join("profile");
        let launch = LaunchOptions {
            user_data_dir: Some(profile.clone()),
            env: vec![("XDG_CONFIG_HOME".into(), tmp.path().join("xdg").display().to_string())],
            extra_args: vec!["--remote-debugging-port=0".into()],
            window_size: Some((1000, 800)),
            executable,
            ..LaunchOptions::default()
        };
        let (target, remote) = if remote {
            let browser = ManagedBrowser::launch(launch).await.expect("chromium launches");
            let port = devtools_port(&profile).await;
            (BrowserTarget::Remote(format!("http://127.0.0.1:{port}")), Some(browser))
        } else {
            (BrowserTarget::Managed(Box::new(launch)), None)
        };
        let broker = Broker::with_target(target, config);
        let journal = journal.then(|| tmp.path().join(browserd_journal::FILE_NAME));
        if let Some(path) = &journal {
            broker.set_journal_path(path.clone());
        }
        let task = tokio::spawn({
            let broker = broker.clone();
            async move { broker.run(&rdir).await }
        });
        let options = ConnectOptions {
            role: ComponentRole::Cli,
            runtime_dir: Some(dir.clone()),
            spawn: false,
            timeout: Some(Duration::from_secs(120)),
            broker_exe: None,
        };
        let mut client = None;
        for _ in 0..500 {
            if let Ok(c) = Client::connect(&options).await {
                client = Some(c);
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let c = client.expect("the broker listens");
        let opened = c
            .call(&SessionOpenParams {
                host: HostKind::Codex,
                host_session_id: host_session.into(),
                label: None,
                policy: None,
                browser: None,
            })
            .await
            .unwrap();
        let s = opened.session;
        c.call(&ToolsActivateParams { session: s.clone(), advanced: false }).await.unwrap();
        Real { site, c, s, runtime_dir: dir, profile, journal, task, remote, _tmp: tmp }
    }

    /// A tool call that must succeed.
    pub async fn tool(&self, name: &str, args: Value) -> Value {
        self.c.tool(&self.s, name, args).await.unwrap_or_else(|e| panic!("{name} failed: {e}"))
    }

    /// The text of the page in `tab`, as `browser_observe` shows it.
    pub async fn read(&self, tab: &Value) -> String {
        let obs = self.tool("browser_observe", json!({"tab": tab})).await;
        obs["untrustedContent"].as_str().unwrap().to_owned()
    }

    /// Opens `path` of the fixture site in a new tab and observes it: (the tab, its page's text).
    pub async fn open_and_read(&self, path: &str) -> (Value, String) {
        let tab = self.tool("browser_open", json!({"url": self.site.url(path)})).await["tab"].clone();
        let content = self.read(&tab).await;
        (tab, content)
    }

    /// Opens the iframes fixture and reads the refs of the "Inner button" in its two frames, in document order (the
    /// same-origin frame's, then the out-of-process one's): (the tab, the refs).
    pub async fn open_iframes(&self) -> (Value, Vec<String>) {
        let (tab, content) = self.open_and_read("/iframes.html").await;
        let inner: Vec<String> = content
            .lines()
            .filter(|l| l.contains("button \"Inner button\""))
            .map(|l| browserd_protocol::line_ref(l).expect("a ref line").to_owned())
            .collect();
        assert_eq!(inner.len(), 2, "a same-origin and an out-of-process frame: {content}");
        (tab, inner)
    }

    /// Returns once browserd's debugger has let go of `tab` (the idle detach after the idle window).
    pub async fn until_detached(&self, tab: &Value) {
        let id = tab.as_u64().unwrap();
        let mut detached = false;
        for _ in 0..400 {
            let st = self.c.call(&StatusParams::default()).await.unwrap();
            if st.debugger_leases.iter().all(|l| l.tab.0 != id || l.state == DebuggerLeaseState::Detached) {
                detached = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert!(detached, "browserd's debugger detached from the idle tab");
    }

    /// Returns once the session no longer holds `tab`'s write lease: the handoff has let go of the tab and its wait
    /// is about to begin (it holds the lease before: every tab here was opened and navigated by an action).
    pub async fn until_let_go(&self, tab: &Value) {
        let id = tab.as_u64().unwrap();
        for _ in 0..3000 {
            let status = self.c.call(&StatusParams::default()).await.unwrap();
            if status.write_leases.iter().all(|l| l.tab.0 != id) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the handoff never released the write lease of tab {id}");
    }

    /// The user's own DevTools connection (the browser must be running: call a tool first).
    pub async fn user(&self) -> User {
        let port = devtools_port(&self.profile).await;
        User { cdp: connect_ws(&format!("http://127.0.0.1:{port}")).await.unwrap() }
    }

    /// Another session on the same client, tools active.
    pub async fn session(&self, host_session: &str) -> SessionId {
        let opened = self
            .c
            .call(&SessionOpenParams {
                host: HostKind::Codex,
                host_session_id: host_session.into(),
                label: None,
                policy: None,
                browser: None,
            })
            .await
            .unwrap();
        self.c.call(&ToolsActivateParams { session: opened.session.clone(), advanced: false }).await.unwrap();
        opened.session
    }

    /// The managed Chromium's process id, from its profile's `SingletonLock` (`host-PID`).
    pub fn browser_pid(&self) -> i32 {
        let link = std::fs::read_link(self.profile.join("SingletonLock")).expect("the browser holds its profile lock");
        let text = link.to_string_lossy();
        text.rsplit('-').next().and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("no pid in {text}"))
    }

    /// The journal file (a broker started journaled).
    pub fn journal_path(&self) -> PathBuf {
        self.journal.clone().expect("the broker was started with a journal")
    }

    /// Disconnects the client and waits (up to `within`) for the broker to exit on its own (idle exit); returns what
    /// its run reported, and the test's directory (the journal is in it) for the caller to keep while it reads.
    pub async fn until_idle_exit(self, within: Duration) -> (browserd_broker::server::RunSummary, TempDir) {
        drop(self.c);
        let summary = tokio::time::timeout(within, self.task)
            .await
            .unwrap_or_else(|_| panic!("the broker did not idle-exit within {within:?}"))
            .unwrap()
            .unwrap();
        self.site.shutdown().await;
        (summary, self._tmp)
    }

    pub async fn finish(self) {
        self.c.shutdown_broker().await.unwrap();
        drop(self.c);
        tokio::time::timeout(Duration::from_secs(60), self.task).await.unwrap().unwrap().unwrap();
        if let Some(browser) = self.remote {
            let _ = browser.shutdown().await;
        }
        self.site.shutdown().await;
    }
}

/// The DevTools port a Chromium with `--remote-debugging-port=0` wrote into its profile.
async fn devtools_port(profile: &std::path::Path) -> u16 {
    let file = profile.join("DevToolsActivePort");
    for _ in 0..1000 {
        if let Ok(text) = std::fs::read_to_string(&file)
            && let Some(p) = text.lines().next().and_then(|l| l.trim().parse::<u16>().ok())
        {
            return p;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the browser wrote no DevToolsActivePort in {}", profile.display());
}

/// The person at the browser, through a DevTools connection browserd does not know about.
pub struct User {
    cdp: Cdp,
}

impl User {
    async fn target_with(&self, url_part: &str) -> String {
        let targets = self.cdp.call(None, "Target.getTargets", json!({}), CALL).await.unwrap();
        let found = targets["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == "page" && t["url"].as_str().unwrap_or_default().contains(url_part))
            .unwrap_or_else(|| panic!("no page with {url_part}: {targets}"));
        found["targetId"].as_str().unwrap().to_owned()
    }

    /// Run a script in the page whose URL contains `url_part` (as the user's own clicks and typing would).
    pub async fn run_in(&self, url_part: &str, script: &str) {
        let target = self.target_with(url_part).await;
        let attached =
            self.cdp.call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}), CALL).await;
        let session = CdpSession(attached.unwrap()["sessionId"].as_str().unwrap().to_owned());
        self.cdp
            .call(Some(&session), "Runtime.evaluate", json!({"expression": script, "userGesture": true}), CALL)
            .await
            .unwrap();
        let _ = self.cdp.call(None, "Target.detachFromTarget", json!({"sessionId": session.as_str()}), CALL).await;
    }

    /// The JSON value of a script run in the page whose URL contains `url_part` (to check what reached the page).
    pub async fn eval_in(&self, url_part: &str, script: &str) -> Value {
        let target = self.target_with(url_part).await;
        let attached =
            self.cdp.call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}), CALL).await;
        let session = CdpSession(attached.unwrap()["sessionId"].as_str().unwrap().to_owned());
        let r = self
            .cdp
            .call(Some(&session), "Runtime.evaluate", json!({"expression": script, "returnByValue": true}), CALL)
            .await
            .unwrap();
        let _ = self.cdp.call(None, "Target.detachFromTarget", json!({"sessionId": session.as_str()}), CALL).await;
        r["result"]["value"].clone()
    }

    /// Close the tab whose URL contains `url_part`.
    pub async fn close(&self, url_part: &str) {
        let target = self.target_with(url_part).await;
        self.cdp.call(None, "Target.closeTarget", json!({"targetId": target}), CALL).await.unwrap();
    }

    /// Quit the whole browser cleanly (`Browser.close`), as the person closing its last window would.
    pub async fn quit_browser(&self) {
        let _ = self.cdp.call(None, "Browser.close", json!({}), CALL).await;
    }

    /// Open a tab of the user's own.
    pub async fn open(&self, url: &str) {
        self.cdp.call(None, "Target.createTarget", json!({"url": url}), CALL).await.unwrap();
    }
}

/// The ref of the first line of an observation that contains `needle`.
pub fn ref_of(content: &str, needle: &str) -> String {
    let line = content.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle} in\n{content}"));
    browserd_protocol::line_ref(line).expect("a ref line").to_owned()
}

/// The typed error a tool call must answer with (it panics on any other answer).
pub async fn refused(r: &Real, name: &str, args: Value) -> ErrorData {
    match r.c.tool(&r.s, name, args).await {
        Err(ClientError::Rpc(e)) => *e,
        other => panic!("{name} should be refused, got {other:?}"),
    }
}

/// A broker config whose site policy denies `localhost` (the fixture site's second origin).
pub fn deny_localhost() -> BrokerConfig {
    BrokerConfig {
        policy: PolicyConfig { deny: vec!["localhost".into()], ..PolicyConfig::default() },
        ..BrokerConfig::default()
    }
}
