//! The open-source Browserless grid as a test component: the pinned npm package in `bench/browserless` (installed with
//! `npm ci` when `node_modules` is not current, under a lock shared by parallel test processes), started on 127.0.0.1
//! with Debian's Chromium, a token, and the session limits a test asks for. Browserless is SSPL-licensed: it is only
//! ever a test component here, never bundled or shipped.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

/// The pinned version (also in `bench/browserless/package.json`).
pub const VERSION: &str = "2.42.0";

/// The npm project directory (`bench/browserless` of the workspace).
#[must_use]
pub fn package_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/browserless")
}

/// Whether the installed package is the pinned one.
fn installed(dir: &Path) -> bool {
    let manifest = dir.join("node_modules/@browserless.io/browserless/package.json");
    let Ok(text) = std::fs::read_to_string(manifest) else { return false };
    let version =
        serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| v["version"].as_str().map(str::to_owned));
    version.as_deref() == Some(VERSION) && dir.join("node_modules/playwright-core/browsers.json").is_file()
}

/// Installs the pinned package with `npm ci` (no browser downloads) unless it is current. Progress goes to stderr.
///
/// # Panics
/// When npm is missing or the install fails (a test that needs the grid cannot run without it).
pub fn ensure_installed() -> PathBuf {
    let dir = package_dir();
    if installed(&dir) {
        return dir;
    }
    let lock = std::fs::File::create(std::env::temp_dir().join("browserd-browserless-install.lock"))
        .expect("create the install lock file");
    lock.lock().expect("take the install lock");
    if !installed(&dir) {
        eprintln!("browserless: installing @browserless.io/browserless {VERSION} with `npm ci` in {} …", dir.display());
        let status = std::process::Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .env("PUPPETEER_SKIP_DOWNLOAD", "1")
            .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
            .stdin(Stdio::null())
            .stdout(std::io::stderr())
            .stderr(std::io::stderr())
            .status()
            .expect("run npm (install Node.js 20+ and npm: scripts/setup.sh)");
        assert!(status.success(), "`npm ci` in {} failed ({status}); see its output above", dir.display());
        eprintln!("browserless: installed");
    }
    drop(lock);
    dir
}

/// How to start the grid.
#[derive(Debug, Clone)]
pub struct Options {
    /// Browsers at once (`CONCURRENT`).
    pub concurrent: u32,
    /// Connections waiting for a browser (`QUEUED`).
    pub queued: u32,
    /// The session timeout in ms (`TIMEOUT`; 0: none).
    pub timeout_ms: u64,
    /// The token every client must present.
    pub token: String,
}

impl Default for Options {
    fn default() -> Self {
        Options { concurrent: 4, queued: 4, timeout_ms: 0, token: "grid-token-S3CRET-4242".into() }
    }
}

/// A running Browserless on 127.0.0.1.
#[derive(Debug)]
pub struct Browserless {
    /// The port it listens on.
    pub port: u16,
    /// Its token.
    pub token: String,
    options: Options,
    child: Option<Child>,
    dir: tempfile::TempDir,
    package: PathBuf,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind a port").local_addr().expect("its address").port()
}

impl Browserless {
    /// Installs (if needed) and starts Browserless; returns once it answers `/json/version` with the token.
    ///
    /// # Panics
    /// When it cannot be installed or started.
    pub async fn start(options: Options) -> Browserless {
        let package = tokio::task::spawn_blocking(ensure_installed).await.expect("the install task");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut grid =
            Browserless { port: free_port(), token: options.token.clone(), options, child: None, dir, package };
        grid.spawn().await;
        grid
    }

    fn prepare(&self) -> (PathBuf, PathBuf) {
        let root = self.dir.path();
        let browsers: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(self.package.join("node_modules/playwright-core/browsers.json"))
                .expect("read playwright-core's browsers.json"),
        )
        .expect("browsers.json is JSON");
        let revision = browsers["browsers"]
            .as_array()
            .and_then(|b| b.iter().find(|b| b["name"] == "chromium"))
            .and_then(|b| b["revision"].as_str())
            .expect("a chromium revision in browsers.json")
            .to_owned();
        let chrome_dir = root.join(format!("pw/chromium-{revision}/chrome-linux64"));
        std::fs::create_dir_all(&chrome_dir).expect("create the browsers dir");
        let chromium = std::env::var("BROWSERD_CHROMIUM").unwrap_or_else(|_| "/usr/lib/chromium/chromium".into());
        let link = chrome_dir.join("chrome");
        if !link.exists() {
            std::os::unix::fs::symlink(&chromium, &link).expect("link Debian's Chromium");
        }
        let routes = root.join("routes");
        std::fs::create_dir_all(&routes).expect("create the routes dir");
        let build = self.package.join("node_modules/@browserless.io/browserless/build/routes");
        for route in ["chromium", "management"] {
            let link = routes.join(route);
            if !link.exists() {
                std::os::unix::fs::symlink(build.join(route), &link).expect("link a route");
            }
        }
        for sub in ["data", "downloads"] {
            std::fs::create_dir_all(root.join(sub)).expect("create a data dir");
        }
        (root.join("pw"), routes)
    }

    async fn spawn(&mut self) {
        let (browsers, routes) = self.prepare();
        let root = self.dir.path();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(root.join("browserless.log"))
            .expect("open the grid's log");
        let child = Command::new("node")
            .arg("node_modules/@browserless.io/browserless/build/index.js")
            .current_dir(&self.package)
            .env("PLAYWRIGHT_BROWSERS_PATH", browsers)
            .env("ROUTES", routes)
            .env("HOST", "127.0.0.1")
            .env("PORT", self.port.to_string())
            .env("TOKEN", &self.token)
            .env("DATA_DIR", root.join("data"))
            .env("DOWNLOAD_DIR", root.join("downloads"))
            .env("CONCURRENT", self.options.concurrent.to_string())
            .env("QUEUED", self.options.queued.to_string())
            .env("TIMEOUT", self.options.timeout_ms.to_string())
            .env("DEBUG", "-*")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log handle"))
            .stderr(log)
            .kill_on_drop(true)
            .process_group(0)
            .spawn()
            .expect("start node (install Node.js 20+)");
        self.child = Some(child);
        for _ in 0..600 {
            if self.answers().await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("Browserless did not answer on port {}; its log: {}", self.port, self.log());
    }

    async fn answers(&self) -> bool {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let Ok(mut tcp) = tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await else { return false };
        let request =
            format!("GET /json/version?token={} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", self.token);
        if tcp.write_all(request.as_bytes()).await.is_err() {
            return false;
        }
        let mut head = [0u8; 12];
        matches!(tokio::time::timeout(Duration::from_secs(2), tcp.read_exact(&mut head)).await, Ok(Ok(_)))
            && head.starts_with(b"HTTP/1.1 200")
    }

    /// `ws://127.0.0.1:PORT/?token=T` plus `extra` query parameters (e.g. `&timeout=5000`).
    #[must_use]
    pub fn ws_url(&self, extra: &str) -> String {
        format!("ws://127.0.0.1:{}/?token={}{extra}", self.port, self.token)
    }

    /// `ws://127.0.0.1:PORT?token=T` (no path: the form a user pastes from Browserless's docs).
    #[must_use]
    pub fn ws_url_without_path(&self) -> String {
        format!("ws://127.0.0.1:{}?token={}", self.port, self.token)
    }

    /// `http://127.0.0.1:PORT/?token=T` (discovery through `/json/version`).
    #[must_use]
    pub fn http_url(&self) -> String {
        format!("http://127.0.0.1:{}/?token={}", self.port, self.token)
    }

    /// The grid's own log so far.
    #[must_use]
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("browserless.log")).unwrap_or_default()
    }

    /// Kills the grid with every browser it started (SIGKILL to its process group).
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Some(pid) = child.id() {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX)),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            let _ = child.kill().await;
            let _ = child.wait().await;
        }
    }

    /// Restarts the grid on the same port (every session it had is gone).
    pub async fn restart(&mut self) {
        self.kill().await;
        self.spawn().await;
    }
}

impl Drop for Browserless {
    fn drop(&mut self) {
        if let Some(child) = &self.child
            && let Some(pid) = child.id()
        {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX)),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}
