//! A real broker driving the user's browser through the extension, for `broker.rs` and the test files beside it: the
//! broker (its own socket and `extension.sock`, a config the test chooses), headless Chromium with the real extension, the real
//! native host installed with `install`, a real client and one agent session with its tools activated; plus the
//! harness's own DevTools pipe to read the page and the extension's service worker without going through browserd.
#![allow(dead_code, unreachable_pub)]

#[path = "../common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::time::Duration;

use browserd_broker::client::{Client, ConnectOptions};
use browserd_broker::config::{BrokerConfig, BrowserChoice};
use browserd_broker::server::Broker;
use browserd_cdp::ManagedBrowser;
use browserd_ipc::RuntimeDir;
use browserd_protocol::SessionId;
use browserd_protocol::hello::ComponentRole;
use browserd_protocol::lifecycle::{HostKind, SessionOpenParams, ToolsActivateParams};
use browserd_test_support::fixtures::FixtureSite;
use serde_json::{Value, json};

pub struct Setup {
    pub browser: ManagedBrowser,
    pub client: Client,
    pub session: SessionId,
    pub site: FixtureSite,
    /// The broker's extension endpoint (`extension.sock` in its runtime directory).
    pub socket: PathBuf,
    task: tokio::task::JoinHandle<Result<browserd_broker::server::RunSummary, browserd_broker::server::BrokerError>>,
    _root: tempfile::TempDir,
}

pub const EXT_ID: &str = browserd_native::install::DEV_EXTENSION_ID;

/// The ref (`e12`, `f1e2`) on the first line of an observation that contains `needle`.
pub fn ref_of(content: &str, needle: &str) -> String {
    let line = content.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle} in\n{content}"));
    browserd_protocol::line_ref(line).expect("a ref line").to_owned()
}

/// Starts the broker with `config` (its browser is always the extension, its idle exit off), installs the host,
/// launches Chromium with the extension, connects a client and opens one session with its tools activated
/// (`advanced` asks for the advanced tier too).
pub async fn start(config: BrokerConfig, advanced: bool) -> Setup {
    start_with_env(config, advanced, Vec::new()).await
}

/// [`start`] with more environment for the browser (e.g. `HOME`, so the user's own downloads land in a temp dir).
pub async fn start_with_env(config: BrokerConfig, advanced: bool, more_env: Vec<(String, String)>) -> Setup {
    start_full(config, advanced, more_env, Vec::new()).await
}

/// [`start`] with more unpacked extensions loaded beside browserd's (e.g. a second debugger client for the drills).
pub async fn start_with_extensions(config: BrokerConfig, more_extensions: Vec<PathBuf>) -> Setup {
    start_full(config, false, Vec::new(), more_extensions).await
}

async fn start_full(
    config: BrokerConfig,
    advanced: bool,
    more_env: Vec<(String, String)>,
    more_extensions: Vec<PathBuf>,
) -> Setup {
    let root = tempfile::tempdir().unwrap();
    let run = common::run_dir(root.path());
    let rdir = RuntimeDir::ensure(&run).unwrap();
    let config = BrokerConfig { idle_exit_secs: 0, browser: BrowserChoice::Extension, ..config };
    let broker = Broker::from_config(config, Some(&root.path().join("state")));
    let task = tokio::spawn({
        let broker = broker.clone();
        async move { broker.run(&rdir).await }
    });
    let options = ConnectOptions {
        role: ComponentRole::Cli,
        runtime_dir: Some(run.clone()),
        spawn: false,
        timeout: Some(Duration::from_secs(60)),
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
    let client = client.expect("the broker listens");
    let socket = run.join("extension.sock");
    let browser = common::launch(root.path(), &run, &socket, more_extensions, more_env).await;
    let mut paired = None;
    for _ in 0..300 {
        if let Ok(Some(p)) = browserd_native::link::probe(&socket).await {
            paired = Some(p);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    paired.expect("the extension pairs with the broker within 30 s");
    let opened = client
        .call(&SessionOpenParams {
            host: HostKind::Codex,
            host_session_id: "thread-ext".into(),
            label: None,
            policy: None,
            browser: None,
        })
        .await
        .unwrap();
    let session = opened.session;
    client.call(&ToolsActivateParams { session: session.clone(), advanced }).await.unwrap();
    let site = FixtureSite::start().await.unwrap();
    Setup { browser, client, session, site, socket, task, _root: root }
}

impl Setup {
    pub async fn stop(self) {
        self.client.shutdown_broker().await.unwrap();
        drop(self.client);
        let _ = tokio::time::timeout(Duration::from_secs(60), self.task).await;
        let _ = self.browser.shutdown().await;
        self.site.shutdown().await;
    }

    /// Opens the form fixture in `session` and reads its "Full name" field: (page URL, tab id, the field's ref).
    pub async fn open_form(&self, session: &SessionId) -> (String, u64, String) {
        let form_url = self.site.url("/form.html");
        let opened = self.client.tool(session, "browser_open", json!({"url": form_url})).await.unwrap();
        let tab = opened["tab"].as_u64().unwrap();
        let obs = self.client.tool(session, "browser_observe", json!({})).await.unwrap();
        (form_url, tab, ref_of(obs["untrustedContent"].as_str().unwrap(), "textbox \"Full name\""))
    }

    /// Opens the iframes fixture in the session and reads the refs of the "Inner button" in its two frames, in
    /// document order (the same-origin frame's, then the out-of-process one's): (page URL, the refs).
    pub async fn open_iframes(&self) -> (String, Vec<String>) {
        let (c, s) = (&self.client, &self.session);
        let url = self.site.url("/iframes.html");
        c.tool(s, "browser_open", json!({"url": url})).await.unwrap();
        let obs = c.tool(s, "browser_observe", json!({})).await.unwrap();
        let content = obs["untrustedContent"].as_str().unwrap().to_owned();
        let inner: Vec<String> = content
            .lines()
            .filter(|l| l.contains("button \"Inner button\""))
            .map(|l| browserd_protocol::line_ref(l).expect("a ref line").to_owned())
            .collect();
        assert_eq!(inner.len(), 2, "a same-origin and an out-of-process frame: {content}");
        (url, inner)
    }

    /// Evaluates `expr` in the page at `url` over the harness's own DevTools pipe (not through browserd) and returns
    /// its value.
    pub async fn page_eval(&self, url: &str, expr: &str) -> Value {
        let cdp = self.browser.cdp();
        let t = Duration::from_secs(10);
        let target = self.user_tabs().await.into_iter().find(|x| x["url"] == url).expect("the page is open");
        let att = cdp
            .call(None, "Target.attachToTarget", json!({"targetId": target["targetId"], "flatten": true}), t)
            .await
            .unwrap();
        let session = browserd_cdp::SessionId(att["sessionId"].as_str().unwrap().to_owned());
        let r = cdp
            .call(Some(&session), "Runtime.evaluate", json!({"expression": expr, "returnByValue": true}), t)
            .await
            .unwrap();
        let _ = cdp.call(None, "Target.detachFromTarget", json!({"sessionId": session.0}), t).await;
        r["result"]["value"].clone()
    }

    /// Like [`Setup::page_eval`] for a string expression (`""` for anything else).
    pub async fn page_text(&self, url: &str, expr: &str) -> String {
        self.page_eval(url, expr).await.as_str().unwrap_or_default().to_owned()
    }

    /// Like [`Setup::page_text`] for a numeric expression.
    pub async fn page_text_number(&self, url: &str, expr: &str) -> u64 {
        self.page_text(url, &format!("String({expr})")).await.parse().unwrap_or(0)
    }

    /// Runs `expr` (awaited) in browserd's extension service worker over the harness's own DevTools pipe and returns
    /// its value. `globalThis.browserd` there exposes `status()`, `cdpSend`, `command` (the broker's commands) and the
    /// keyboard command's listener.
    pub async fn sw_eval(&self, expr: &str) -> Value {
        self.worker_eval(true, expr).await
    }

    /// The DevTools target id of browserd's extension service worker (`ours`) or of the other extension's.
    pub async fn worker_target(&self, ours: bool) -> Value {
        let t = Duration::from_secs(10);
        let targets = self.browser.cdp().call(None, "Target.getTargets", json!({}), t).await.unwrap();
        targets["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| {
                let url = x["url"].as_str().unwrap_or_default();
                x["type"] == "service_worker" && url.starts_with("chrome-extension://") && url.contains(EXT_ID) == ours
            })
            .expect("the extension's service worker is running")["targetId"]
            .clone()
    }

    /// Like [`Setup::sw_eval`] in browserd's service worker (`ours`) or in the other extension's.
    pub async fn worker_eval(&self, ours: bool, expr: &str) -> Value {
        let cdp = self.browser.cdp();
        let t = Duration::from_secs(10);
        let sw = self.worker_target(ours).await;
        let att = cdp.call(None, "Target.attachToTarget", json!({"targetId": sw, "flatten": true}), t).await.unwrap();
        let session = browserd_cdp::SessionId(att["sessionId"].as_str().unwrap().to_owned());
        let r = cdp
            .call(
                Some(&session),
                "Runtime.evaluate",
                json!({"expression": expr, "awaitPromise": true, "returnByValue": true}),
                t,
            )
            .await
            .unwrap();
        let _ = cdp.call(None, "Target.detachFromTarget", json!({"sessionId": session.0}), t).await;
        assert!(r.get("exceptionDetails").is_none(), "{expr} threw in the service worker: {r}");
        r["result"]["value"].clone()
    }

    /// The tabs the user sees (page targets), over the harness's own DevTools pipe.
    pub async fn user_tabs(&self) -> Vec<Value> {
        let r = self.browser.cdp().call(None, "Target.getTargets", json!({}), Duration::from_secs(10)).await.unwrap();
        r["targetInfos"].as_array().unwrap().iter().filter(|t| t["type"] == "page").cloned().collect()
    }

    /// Waits until browserd's extension holds no debugger attachment (the idle detach after the last operation).
    pub async fn until_browserd_detached(&self) {
        for _ in 0..300 {
            if self.sw_eval("browserd.status().then(s => s.attached.length)").await == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("browserd's debugger never detached from the idle tab");
    }
}
