//! The real-browser harness: plays the broker (binds the extension endpoint on a temp socket), installs the native
//! host into a fresh profile with `install`, launches headless Chromium with the real extension, and waits for the
//! pairing.
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use browserd_cdp::{LaunchOptions, ManagedBrowser};
use browserd_native::install::{Brand, InstallOptions, Locations, install};
use browserd_native::link::{EndpointOptions, ExtensionEndpoint, ExtensionLink};
use browserd_test_support::fixtures::FixtureSite;
use std::os::unix::fs::PermissionsExt;

pub struct Harness {
    pub browser: ManagedBrowser,
    pub link: ExtensionLink,
    pub endpoint: ExtensionEndpoint,
    pub links: tokio::sync::mpsc::Receiver<ExtensionLink>,
    pub site: FixtureSite,
    pub socket: PathBuf,
    pub root: tempfile::TempDir,
}

pub fn extension_dir() -> PathBuf {
    std::fs::canonicalize(concat!(env!("CARGO_MANIFEST_DIR"), "/../../extension")).unwrap()
}

pub async fn start() -> Harness {
    let root = tempfile::tempdir().unwrap();
    let run = run_dir(root.path());
    let socket = run.join("extension.sock");
    let (endpoint, mut links) = ExtensionEndpoint::bind(&socket, EndpointOptions::default()).await.unwrap();
    let log = vec![("BROWSERD_LOG".into(), "info".into())];
    let browser = launch(root.path(), &run, &socket, Vec::new(), log).await;
    let link = tokio::time::timeout(Duration::from_secs(30), links.recv())
        .await
        .expect("the extension pairs within 30 s")
        .expect("the endpoint is running");
    let site = FixtureSite::start().await.unwrap();
    Harness { browser, link, endpoint, links, site, socket, root }
}

/// A private runtime directory `root/run` (mode 0700), as the broker and the native host want it.
pub fn run_dir(root: &Path) -> PathBuf {
    let run = root.join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
    run
}

/// Installs the native host into a fresh profile under `root` with `install`, and launches headless Chromium on it
/// with browserd's extension (and `more_extensions`), whose native host reaches the extension endpoint at `socket`
/// with `run` as its runtime directory (and `more_env` in its environment).
pub async fn launch(
    root: &Path,
    run: &Path,
    socket: &Path,
    more_extensions: Vec<PathBuf>,
    more_env: Vec<(String, String)>,
) -> ManagedBrowser {
    let profile = root.join("profile");
    let loc =
        Locations { home: root.join("home"), config_home: root.join("config"), data_dir: root.join("data/browserd") };
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
    ManagedBrowser::launch(LaunchOptions {
        user_data_dir: Some(profile),
        extensions: std::iter::once(extension_dir()).chain(more_extensions).collect(),
        env: vec![
            ("BROWSERD_EXTENSION_SOCKET".into(), socket.display().to_string()),
            ("XDG_RUNTIME_DIR".into(), run.display().to_string()),
            ("XDG_CONFIG_HOME".into(), root.join("xdg").display().to_string()),
        ]
        .into_iter()
        .chain(more_env)
        .collect(),
        window_size: Some((1000, 800)),
        ..LaunchOptions::default()
    })
    .await
    .expect("chromium launches")
}

impl Harness {
    pub async fn stop(self) {
        let _ = self.browser.shutdown().await;
    }
}
