//! The managed Chromium: executable discovery, profile, flags, the process watcher, and clean shutdown.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use command_fds::{CommandFdExt, FdMapping};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr, Command};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::connection::{Cdp, ConnectionOptions};
use crate::error::LaunchError;
use crate::pipe::PipeTransport;

/// The environment variable that names the Chromium executable when no explicit one is given.
pub const CHROMIUM_ENV: &str = "BROWSERD_CHROMIUM";

/// Debian's real Chromium binary (the `/usr/bin/chromium` wrapper script adds flags and noise).
const DEBIAN_CHROMIUM: &str = "/usr/lib/chromium/chromium";

/// Executable names looked up on `PATH`, in order.
const PATH_NAMES: &[&str] =
    &["chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "microsoft-edge"];

/// Flags that keep a browser off the network and quiet: no background traffic, updates, sync or first-run UI.
const QUIET_FLAGS: &[&str] = &[
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-sync",
    "--disable-gpu",
    "--disable-quic",
    "--password-store=basic",
];

/// How long `Browser.close` may take before the process is killed.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Stderr lines kept for error reports.
const STDERR_TAIL: usize = 20;

/// How to start a managed browser.
#[derive(Clone, Debug)]
pub struct LaunchOptions {
    /// The browser binary; when `None`, see [`find_executable`].
    pub executable: Option<PathBuf>,
    /// `--headless=new` when true (the default); a visible window otherwise (needs a display).
    pub headless: bool,
    /// The profile directory; when `None` a temporary one is made and removed on shutdown.
    pub user_data_dir: Option<PathBuf>,
    /// Extra command-line flags, appended after browserd's own.
    pub extra_args: Vec<String>,
    /// Extra environment variables for the browser process.
    pub env: Vec<(String, String)>,
    /// Unpacked extensions to load (`--load-extension`, `--disable-extensions-except`).
    pub extensions: Vec<PathBuf>,
    /// The window size in CSS pixels (`--window-size`); Chromium's default when `None`.
    pub window_size: Option<(u32, u32)>,
    /// How long the browser may take to answer its first CDP call.
    pub startup_timeout: Duration,
    /// Queue sizes of the connection.
    pub connection: ConnectionOptions,
}

impl Default for LaunchOptions {
    fn default() -> Self {
        LaunchOptions {
            executable: None,
            headless: true,
            user_data_dir: None,
            extra_args: Vec::new(),
            env: Vec::new(),
            extensions: Vec::new(),
            window_size: None,
            startup_timeout: Duration::from_secs(30),
            connection: ConnectionOptions::default(),
        }
    }
}

/// Finds the browser executable: `explicit`, then `$BROWSERD_CHROMIUM`, then `/usr/lib/chromium/chromium`, then
/// `chromium`, `chromium-browser`, `google-chrome`, `google-chrome-stable` and `microsoft-edge` on `PATH`.
///
/// An explicit path or `$BROWSERD_CHROMIUM` that does not name an executable is an error, not a reason to fall back.
pub fn find_executable(explicit: Option<&Path>) -> Result<PathBuf, LaunchError> {
    find_executable_in(explicit, std::env::var_os(CHROMIUM_ENV), std::env::var_os("PATH"))
}

/// [`find_executable`] with the environment passed in.
pub fn find_executable_in(
    explicit: Option<&Path>,
    env_value: Option<OsString>,
    path_var: Option<OsString>,
) -> Result<PathBuf, LaunchError> {
    find_executable_among(explicit, env_value, path_var, &[Path::new(DEBIAN_CHROMIUM)])
}

/// [`find_executable_in`] with the fixed locations (tried before `PATH`) passed in.
fn find_executable_among(
    explicit: Option<&Path>,
    env_value: Option<OsString>,
    path_var: Option<OsString>,
    fixed: &[&Path],
) -> Result<PathBuf, LaunchError> {
    if let Some(explicit) = explicit {
        return if is_executable(explicit) {
            Ok(explicit.to_owned())
        } else {
            Err(LaunchError::ExecutableNotFound {
                tried: vec![format!("{} (the configured executable)", explicit.display())],
            })
        };
    }
    if let Some(value) = env_value.filter(|v| !v.is_empty()) {
        let path = PathBuf::from(value);
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(LaunchError::ExecutableNotFound { tried: vec![format!("{} (from ${CHROMIUM_ENV})", path.display())] })
        };
    }
    let mut tried = Vec::new();
    for path in fixed {
        tried.push(path.display().to_string());
        if is_executable(path) {
            return Ok(path.to_path_buf());
        }
    }
    let dirs: Vec<PathBuf> = path_var.map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    for name in PATH_NAMES {
        tried.push(format!("{name} on PATH"));
        if let Some(found) = dirs.iter().map(|dir| dir.join(name)).find(|candidate| is_executable(candidate)) {
            return Ok(found);
        }
    }
    Err(LaunchError::ExecutableNotFound { tried })
}

/// Whether `path` is a file this process could run (any execute bit set).
#[must_use]
pub fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// Whether this process runs as root (Chromium then needs `--no-sandbox`). `/proc/self` is owned by the effective uid.
fn running_as_root() -> bool {
    std::fs::metadata("/proc/self").map(|meta| meta.uid() == 0).unwrap_or(false)
}

/// How the browser process ended.
#[derive(Clone, Debug)]
pub struct BrowserExit {
    /// The exit status, when the process was reaped.
    pub status: Option<ExitStatus>,
    /// A sentence naming the pid and the status or signal, with the last stderr lines when it did not exit cleanly.
    pub description: String,
    /// Whether browserd had to kill the process because `Browser.close` did not end it in time.
    pub killed: bool,
}

/// The profile directory: either a temporary one owned by browserd or the caller's.
#[derive(Debug)]
enum Profile {
    Temporary(tempfile::TempDir),
    Given(PathBuf),
}

impl Profile {
    fn path(&self) -> &Path {
        match self {
            Profile::Temporary(dir) => dir.path(),
            Profile::Given(path) => path,
        }
    }
}

/// A Chromium process started and owned by browserd, connected over `--remote-debugging-pipe`.
///
/// Dropping it kills the whole process group; prefer [`ManagedBrowser::shutdown`], which closes the browser cleanly.
#[derive(Debug)]
pub struct ManagedBrowser {
    cdp: Cdp,
    pid: Option<u32>,
    executable: PathBuf,
    version: Value,
    profile: Option<Profile>,
    /// Cancelled to make the watcher kill the browser.
    kill: CancellationToken,
    /// The watcher's report, set once the process has been reaped.
    exit: watch::Receiver<Option<BrowserExit>>,
    watcher: Option<JoinHandle<()>>,
}

impl ManagedBrowser {
    /// Starts a browser and waits until it answers `Browser.getVersion`.
    pub async fn launch(options: LaunchOptions) -> Result<ManagedBrowser, LaunchError> {
        let executable = find_executable(options.executable.as_deref())?;
        if !options.headless && !display_available(&options.env, |name| std::env::var_os(name)) {
            return Err(LaunchError::NoDisplay);
        }
        let profile = match &options.user_data_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .map_err(|err| LaunchError::Profile { path: dir.clone(), message: err.to_string() })?;
                Profile::Given(dir.clone())
            }
            None => Profile::Temporary(
                tempfile::Builder::new()
                    .prefix("browserd-chromium-")
                    .tempdir()
                    .map_err(|err| LaunchError::Profile { path: std::env::temp_dir(), message: err.to_string() })?,
            ),
        };
        // Chromium's crash handler writes to $XDG_CONFIG_HOME; keep it, and the cache, inside the profile.
        let xdg_config = profile.path().join(".browserd-xdg-config");
        let xdg_cache = profile.path().join(".browserd-xdg-cache");
        for dir in [&xdg_config, &xdg_cache] {
            std::fs::create_dir_all(dir)
                .map_err(|err| LaunchError::Profile { path: dir.clone(), message: err.to_string() })?;
        }

        let spawn_error = |message: String| LaunchError::Spawn { path: executable.clone(), message };
        let (browser_reads, parent_writes) =
            std::io::pipe().map_err(|err| spawn_error(format!("creating the DevTools pipes failed: {err}")))?;
        let (parent_reads, browser_writes) =
            std::io::pipe().map_err(|err| spawn_error(format!("creating the DevTools pipes failed: {err}")))?;

        let mut command = Command::new(&executable);
        command
            .args(browser_args(&options, profile.path()))
            .env("XDG_CONFIG_HOME", &xdg_config)
            .env("XDG_CACHE_HOME", &xdg_cache)
            .envs(options.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        // command-fds dup2()s these onto fds 3 and 4 in the child, clearing close-on-exec only there; the parent's
        // ends stay close-on-exec, so the browser sees EOF when we go away and we see EOF when it does.
        command
            .fd_mappings(vec![
                FdMapping { parent_fd: OwnedFd::from(browser_reads), child_fd: 3 },
                FdMapping { parent_fd: OwnedFd::from(browser_writes), child_fd: 4 },
            ])
            .map_err(|err| spawn_error(format!("mapping the DevTools pipes failed: {err}")))?;
        let mut child = command.spawn().map_err(|err| spawn_error(err.to_string()))?;
        // The child holds its copies now; drop ours of the browser's ends (they live in `command`).
        drop(command);
        let pid = child.id();

        let stderr_tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL)));
        let stderr_task = child.stderr.take().map(|stderr| tokio::spawn(collect_stderr(stderr, stderr_tail.clone())));
        let kill = CancellationToken::new();
        let (exit_tx, exit_rx) = watch::channel(None);
        let (reason_tx, reason_rx) = watch::channel(None);
        let watcher =
            tokio::spawn(watch_process(child, pid, kill.clone(), exit_tx, reason_tx, stderr_task, stderr_tail));

        let writer = tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(parent_writes))
            .map_err(|err| spawn_error(format!("opening the DevTools pipe failed: {err}")))?;
        let reader = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(parent_reads))
            .map_err(|err| spawn_error(format!("opening the DevTools pipe failed: {err}")))?;
        let cdp = Cdp::spawn(PipeTransport::new(writer, reader, Some(reason_rx)), options.connection.clone());

        let mut browser = ManagedBrowser {
            cdp,
            pid,
            executable: executable.clone(),
            version: Value::Null,
            profile: Some(profile),
            kill,
            exit: exit_rx,
            watcher: Some(watcher),
        };
        match browser.cdp.call(None, "Browser.getVersion", json!({}), options.startup_timeout).await {
            Ok(version) => {
                browser.version = version;
                tracing::debug!(pid, product = %browser.product(), "managed browser started");
                Ok(browser)
            }
            Err(source) => {
                let _ = browser.kill_and_reap().await;
                Err(LaunchError::Handshake { path: executable, source })
            }
        }
    }

    /// The connection to this browser.
    pub fn cdp(&self) -> &Cdp {
        &self.cdp
    }

    /// The browser's process id, while it is known.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The executable that was started.
    pub fn executable(&self) -> &Path {
        &self.executable
    }

    /// The profile directory in use.
    pub fn user_data_dir(&self) -> Option<&Path> {
        self.profile.as_ref().map(Profile::path)
    }

    /// The answer to `Browser.getVersion` at startup (`product`, `protocolVersion`, `userAgent`, …).
    pub fn version(&self) -> &Value {
        &self.version
    }

    /// The browser product, for example `Chrome/156.0.8078.108`.
    pub fn product(&self) -> &str {
        self.version.get("product").and_then(Value::as_str).unwrap_or("unknown")
    }

    /// How the process ended, once it has.
    pub fn exit(&self) -> Option<BrowserExit> {
        self.exit.borrow().clone()
    }

    /// Closes the browser: `Browser.close`, a short wait, then a kill of the whole process group if it is still
    /// running; reaps it, and removes the temporary profile.
    pub async fn shutdown(mut self) -> Result<BrowserExit, ShutdownError> {
        let exit = if self.exit.borrow().is_some() {
            self.wait_exit().await
        } else {
            // The answer may never come: the browser can exit before it replies.
            let _ = self.cdp.call(None, "Browser.close", json!({}), CLOSE_GRACE).await;
            match tokio::time::timeout(CLOSE_GRACE, self.wait_exit()).await {
                Ok(exit) => exit,
                Err(_) => self.kill_and_reap().await,
            }
        };
        self.cdp.close("the managed browser was shut down").await;
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.await;
        }
        match self.profile.take() {
            Some(Profile::Temporary(dir)) => {
                let path = dir.path().to_owned();
                dir.close().map_err(|err| ShutdownError::RemoveProfile {
                    path,
                    message: err.to_string(),
                    exit: exit.clone(),
                })?;
            }
            Some(Profile::Given(_)) | None => {}
        }
        Ok(exit)
    }

    async fn wait_exit(&mut self) -> BrowserExit {
        match self.exit.wait_for(Option::is_some).await {
            Ok(exit) => exit.clone().unwrap_or_else(unknown_exit),
            Err(_) => unknown_exit(),
        }
    }

    async fn kill_and_reap(&mut self) -> BrowserExit {
        self.kill.cancel();
        let mut exit = self.wait_exit().await;
        exit.killed = true;
        exit
    }
}

fn unknown_exit() -> BrowserExit {
    BrowserExit { status: None, description: "the browser process watcher stopped".to_owned(), killed: false }
}

impl Drop for ManagedBrowser {
    fn drop(&mut self) {
        if self.exit.borrow().is_none() {
            // Synchronous, so it works even while the runtime shuts down; the watcher (or kill_on_drop) reaps it.
            if let Some(pid) = self.pid {
                kill_group(pid);
            }
            self.kill.cancel();
        }
    }
}

/// Shutting a managed browser down did not fully succeed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShutdownError {
    /// The browser stopped, but its temporary profile could not be removed.
    #[error("the browser stopped ({}) but its profile {} could not be removed: {message}; delete it by hand", exit.description, path.display())]
    RemoveProfile { path: PathBuf, message: String, exit: BrowserExit },
}

/// Whether a headed browser has a display: `DISPLAY` or `WAYLAND_DISPLAY`, from the launch options or the process.
fn display_available(env: &[(String, String)], process_env: impl Fn(&str) -> Option<OsString>) -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"].iter().any(|name| match env.iter().rev().find(|(key, _)| key == name) {
        Some((_, value)) => !value.is_empty(),
        None => process_env(name).is_some_and(|value| !value.is_empty()),
    })
}

fn browser_args(options: &LaunchOptions, profile: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["--remote-debugging-pipe".into()];
    let mut dir_arg = OsString::from("--user-data-dir=");
    dir_arg.push(profile.as_os_str());
    args.push(dir_arg);
    if options.headless {
        args.push("--headless=new".into());
    }
    if running_as_root() {
        args.push("--no-sandbox".into());
    }
    args.extend(QUIET_FLAGS.iter().map(OsString::from));
    if let Some((width, height)) = options.window_size {
        args.push(format!("--window-size={width},{height}").into());
    }
    if !options.extensions.is_empty() {
        let mut list = OsString::new();
        for (idx, extension) in options.extensions.iter().enumerate() {
            if idx > 0 {
                list.push(",");
            }
            list.push(extension.as_os_str());
        }
        let mut load = OsString::from("--load-extension=");
        load.push(&list);
        let mut only = OsString::from("--disable-extensions-except=");
        only.push(&list);
        args.push(load);
        args.push(only);
    }
    args.extend(options.extra_args.iter().map(OsString::from));
    args.push("about:blank".into());
    args
}

/// How long the watcher waits for the killed process group to disappear.
const GROUP_EXIT_GRACE: Duration = Duration::from_secs(2);

/// Counts the live (not zombie) processes of process group `pgid`, from `/proc`.
fn live_group_members(pgid: u32) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .filter(|stat| {
            // After the parenthesised command name: state, ppid, pgrp, …
            let Some((_, rest)) = stat.rsplit_once(')') else { return false };
            let mut fields = rest.split_whitespace();
            let state = fields.next();
            let pgrp = fields.nth(1).and_then(|pgrp| pgrp.parse::<u32>().ok());
            pgrp == Some(pgid) && state != Some("Z") && state != Some("X")
        })
        .count()
}

/// Sends SIGKILL to the browser's process group (it is the group leader); a group already gone is fine.
fn kill_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

async fn collect_stderr(stderr: ChildStderr, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::trace!(target: "browserd_cdp::chromium_stderr", "{line}");
        // D-Bus complaints are expected noise on machines without a session bus.
        if line.contains("dbus") || line.trim().is_empty() {
            continue;
        }
        let mut tail = tail.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if tail.len() == STDERR_TAIL {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

/// Owns the child: reaps it when it exits (or kills it when asked), then reports how it ended.
async fn watch_process(
    mut child: Child,
    pid: Option<u32>,
    kill: CancellationToken,
    exit_tx: watch::Sender<Option<BrowserExit>>,
    reason_tx: watch::Sender<Option<String>>,
    stderr_task: Option<JoinHandle<()>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
) {
    let mut killed = false;
    let status = tokio::select! {
        status = child.wait() => status,
        () = kill.cancelled() => {
            killed = true;
            if let Some(pid) = pid {
                kill_group(pid);
            }
            let _ = child.start_kill();
            child.wait().await
        }
    };
    // Renderers and helpers normally follow the browser out; make sure none is left, and wait (briefly) until they
    // are gone so that "shut down" means no process of this browser is running.
    if let Some(pid) = pid {
        kill_group(pid);
        let deadline = tokio::time::Instant::now() + GROUP_EXIT_GRACE;
        while live_group_members(pid) > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    if let Some(mut task) = stderr_task {
        // For an abnormal exit, give the reader a moment to collect the last lines (the pipe closes once every process
        // holding it is gone); then stop it either way.
        if !killed && !status.as_ref().is_ok_and(ExitStatus::success) {
            let _ = tokio::time::timeout(Duration::from_millis(500), &mut task).await;
        }
        task.abort();
    }
    let pid_text = pid.map(|pid| format!(" {pid}")).unwrap_or_default();
    let (status, mut description) = match status {
        Ok(status) => (Some(status), format!("browser process{pid_text} {}", describe_status(status))),
        Err(err) => (None, format!("browser process{pid_text} could not be waited for: {err}")),
    };
    if killed {
        description.push_str(" (killed by browserd)");
    } else if !status.is_some_and(|s| s.success()) {
        let tail = stderr_tail.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if !tail.is_empty() {
            description.push_str("; last stderr lines: ");
            description.push_str(&tail.iter().cloned().collect::<Vec<_>>().join(" | "));
        }
    }
    let _ = reason_tx.send(Some(description.clone()));
    let _ = exit_tx.send(Some(BrowserExit { status, description, killed }));
}

fn describe_status(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        format!("exited with status {code}")
    } else if let Some(signal) = status.signal() {
        let name = Signal::try_from(signal).map(|s| s.as_str().to_owned()).unwrap_or_else(|_| "unknown".to_owned());
        format!("was killed by signal {signal} ({name})")
    } else {
        format!("ended: {status}")
    }
}

#[cfg(test)]
mod tests;
