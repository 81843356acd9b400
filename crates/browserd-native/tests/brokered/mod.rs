//! A real broker driving the user's browser through the extension, for test files beside `broker.rs`: the broker (its
//! own socket and `extension.sock`, a config the test chooses), headless Chromium with the real extension, the real
//! native host installed with `install`, a real client and one agent session with its tools activated; plus the
//! harness's own DevTools pipe to read the page and the extension's service worker without going through browserd.
#![allow(dead_code, unreachable_pub)]

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use browserd_broker::client::{Client, ConnectOptions};
use browserd_broker::config::{BrokerConfig, BrowserChoice};
use browserd_broker::server::Broker;
use browserd_cdp::{LaunchOptions, ManagedBrowser};
use browserd_ipc::RuntimeDir;
use browserd_native::install::{Brand, InstallOptions, Locations, install};
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
    task: tokio::task::JoinHandle<Result<browserd_broker::server::RunSummary, browserd_broker::server::BrokerError>>,
    _root: tempfile::TempDir,
}

const EXT_ID: &str = browserd_native::install::DEV_EXTENSION_ID;

fn extension_dir() -> PathBuf {
    std::fs::canonicalize(concat!(env!("CARGO_MANIFEST_DIR"), "/../../extension")).unwrap()
}

/// The ref (`e12`, `f1e2`) on the first line of an observation that contains `needle`.
pub fn ref_of(content: &str, needle: &str) -> String {
    let line = content.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle} in\n{content}"));
    let start = line.find('[').unwrap() + 1;
    line[start..start + line[start..].find(']').unwrap()].to_owned()
}

/// Starts the broker with `config` (its browser is always the extension, its idle exit off), installs the host,
/// launches Chromium with the extension, connects a client and opens one session with its tools activated
/// (`advanced` asks for the advanced tier too).
pub async fn start(config: BrokerConfig, advanced: bool) -> Setup {
    start_with_env(config, advanced, Vec::new()).await
}

/// [`start`] with more environment for the browser (e.g. `HOME`, so the user's own downloads land in a temp dir).
pub async fn start_with_env(config: BrokerConfig, advanced: bool, more_env: Vec<(String, String)>) -> Setup {
    let root = tempfile::tempdir().unwrap();
    let run = root.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
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
    let profile = root.path().join("profile");
    let loc = Locations {
        home: root.path().join("home"),
        config_home: root.path().join("config"),
        data_dir: root.path().join("data/browserd"),
    };
    install(
        &loc,
        &InstallOptions {
            brands: vec![Brand::Chromium],
            user_data_dir: Some(profile.clone()),
            extension_ids: vec![],
            exe: PathBuf::from(env!("CARGO_BIN_EXE_browserd-native")),
        },
    )
    .unwrap();
    let browser = ManagedBrowser::launch(LaunchOptions {
        user_data_dir: Some(profile),
        extensions: vec![extension_dir()],
        env: vec![
            ("BROWSERD_EXTENSION_SOCKET".into(), socket.display().to_string()),
            ("XDG_RUNTIME_DIR".into(), run.display().to_string()),
            ("XDG_CONFIG_HOME".into(), root.path().join("xdg").display().to_string()),
        ]
        .into_iter()
        .chain(more_env)
        .collect(),
        window_size: Some((1000, 800)),
        ..LaunchOptions::default()
    })
    .await
    .expect("chromium launches");
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
    Setup { browser, client, session, site, task, _root: root }
}

impl Setup {
    pub async fn stop(self) {
        self.client.shutdown_broker().await.unwrap();
        drop(self.client);
        let _ = tokio::time::timeout(Duration::from_secs(60), self.task).await;
        let _ = self.browser.shutdown().await;
        self.site.shutdown().await;
    }

    /// Evaluates `expr` in the page at `url` over the harness's own DevTools pipe (not through browserd) and returns
    /// its value.
    pub async fn page_eval(&self, url: &str, expr: &str) -> Value {
        let cdp = self.browser.cdp();
        let t = Duration::from_secs(10);
        let r = cdp.call(None, "Target.getTargets", json!({}), t).await.unwrap();
        let target = r["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["type"] == "page" && x["url"] == url)
            .cloned()
            .expect("the page is open");
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

    /// Runs `expr` (awaited) in browserd's extension service worker over the harness's own DevTools pipe and returns
    /// its value. `globalThis.browserd` there exposes `status()`, `cdpSend` and `command` (the broker's commands).
    pub async fn sw_eval(&self, expr: &str) -> Value {
        let cdp = self.browser.cdp();
        let t = Duration::from_secs(10);
        let targets = cdp.call(None, "Target.getTargets", json!({}), t).await.unwrap();
        let sw = targets["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| {
                let url = x["url"].as_str().unwrap_or_default();
                x["type"] == "service_worker" && url.starts_with("chrome-extension://") && url.contains(EXT_ID)
            })
            .expect("the extension's service worker is running")["targetId"]
            .clone();
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
