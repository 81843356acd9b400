//! `browserd doctor`'s default-path checks: what a user needs without any extension — a browser that launches
//! headless and loads a page, the sandbox note, the managed profile free, the journal's directory writable, the
//! runtime directory and socket, and which broker a host that strips the environment (Codex, the MCP SDK) reaches.
//! Every failure carries the exact command that fixes it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use browserd_ipc::paths::{self, Platform};
use browserd_ipc::{RuntimeDir, RuntimeDirError, default_runtime_dir, is_ours};

use crate::install::{Check, CheckStatus};

fn check(name: &str, status: CheckStatus, detail: String, fix: Option<String>) -> Check {
    Check { name: name.to_owned(), status, detail, fix }
}

fn uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// `$XDG_STATE_HOME/browserd`, else `$HOME/.local/state/browserd` (the broker's rule).
fn state_dir() -> Option<PathBuf> {
    let absolute = |name: &str| std::env::var_os(name).map(PathBuf::from).filter(|p| p.is_absolute());
    absolute("XDG_STATE_HOME")
        .map(|d| d.join("browserd"))
        .or_else(|| absolute("HOME").map(|h| h.join(".local/state/browserd")))
}

/// Runs every default-path check.
pub async fn default_path() -> Vec<Check> {
    let mut checks = Vec::new();
    let root = uid() == 0;
    match browserd_cdp::find_executable(None) {
        Ok(exe) => {
            checks.push(check("browser", CheckStatus::Pass, exe.display().to_string(), None));
            checks.push(launch(&exe, root).await);
        }
        Err(e) => checks.push(check(
            "browser",
            CheckStatus::Fail,
            e.to_string(),
            Some("apt-get install chromium   (or: export BROWSERD_CHROMIUM=/path/to/chromium)".to_owned()),
        )),
    }
    checks.push(check(
        "sandbox",
        CheckStatus::Pass,
        if root {
            "running as root: browserd starts Chromium with --no-sandbox (run as a normal user to keep the sandbox)"
                .to_owned()
        } else {
            "Chromium keeps its sandbox (not root)".to_owned()
        },
        None,
    ));
    let (dir_path, source) = default_runtime_dir();
    let broker_running = match RuntimeDir::ensure(&dir_path) {
        Ok(dir) => {
            checks.push(check(
                "runtime dir",
                CheckStatus::Pass,
                format!("{} ({})", dir.path().display(), source.describe()),
                None,
            ));
            let running = browserd_ipc::connect(&dir).await.is_ok();
            checks.push(check(
                "broker socket",
                CheckStatus::Pass,
                if running {
                    format!("a broker answers at {}", dir.socket_path().display())
                } else {
                    format!("no broker at {} yet; any client starts it on demand", dir.socket_path().display())
                },
                None,
            ));
            running
        }
        Err(e) => {
            checks.push(check("runtime dir", CheckStatus::Fail, e.to_string(), Some(runtime_dir_fix(&e))));
            false
        }
    };
    // A host that passes only HOME LANG PATH SHELL TERM (Codex, the MCP SDK's default).
    let stripped = |name: &str| if name == "XDG_RUNTIME_DIR" { None } else { std::env::var_os(name) };
    let (host_dir, host_source) = paths::unix_runtime_dir(Platform::current(), stripped, uid(), |p| is_ours(p, uid()));
    if host_dir == dir_path {
        checks.push(check(
            "stripped-environment host",
            CheckStatus::Pass,
            format!("Codex and MCP SDK hosts reach the same broker ({})", host_dir.display()),
            None,
        ));
    } else {
        let xdg = dir_path.parent().map(Path::display).map(|d| d.to_string()).unwrap_or_default();
        checks.push(check(
            "stripped-environment host",
            CheckStatus::Fail,
            format!(
                "a host without XDG_RUNTIME_DIR reaches {} ({}), this shell {}: two brokers",
                host_dir.display(),
                host_source.describe(),
                dir_path.display()
            ),
            Some(format!(
                "pass it on: add `env = {{ XDG_RUNTIME_DIR = \"{xdg}\" }}` to the host's browserd entry (Codex: \
                 [mcp_servers.browserd]), or unset XDG_RUNTIME_DIR here"
            )),
        ));
    }
    match state_dir() {
        Some(state) => {
            checks.push(journal(&state));
            checks.push(profile(&state.join("profile"), broker_running));
        }
        None => checks.push(check(
            "journal",
            CheckStatus::Fail,
            "neither XDG_STATE_HOME nor HOME is an absolute path".to_owned(),
            Some("export HOME=/home/$USER".to_owned()),
        )),
    }
    checks
}

/// The command that makes the runtime directory usable again, for the way [`RuntimeDir::ensure`] refused it; it names
/// the directory this environment uses (whichever rule chose it), never a variable that may be unset.
pub(crate) fn runtime_dir_fix(error: &RuntimeDirError) -> String {
    match error {
        RuntimeDirError::TooOpen { path, .. } => format!("chmod 700 {}", path.display()),
        RuntimeDirError::Symlink { path } | RuntimeDirError::NotADirectory { path } => {
            format!("rm {0} && mkdir -m 700 {0}", path.display())
        }
        RuntimeDirError::ForeignOwner { path, .. } => {
            format!("sudo rm -rf {0} && mkdir -m 700 {0}   (it belongs to another user)", path.display())
        }
        RuntimeDirError::Io { path, .. } => format!("mkdir -p {0} && chmod 700 {0}", path.display()),
        RuntimeDirError::Changed { path } => {
            format!("ls -ld {}   (something replaced it: find out what, then retry)", path.display())
        }
        // (non-exhaustive) a refusal this doctor does not know yet: the directory in use, made private.
        _ => {
            let dir = default_runtime_dir().0;
            format!("ls -ld {0}   (it must be a directory of yours, mode 0700: chmod 700 {0})", dir.display())
        }
    }
}

/// A real headless launch that loads a page and prints its DOM.
async fn launch(exe: &Path, root: bool) -> Check {
    let profile = match tempfile_dir() {
        Ok(profile) => profile,
        Err(e) => {
            let tmp = std::env::temp_dir();
            let fix = if std::env::var_os("TMPDIR").is_some() {
                "export TMPDIR=/tmp".to_owned()
            } else if root {
                format!("mkdir -p {0} && chmod 1777 {0}", tmp.display())
            } else {
                // The system's temporary directory is root's to repair.
                format!("sudo mkdir -p {0} && sudo chmod 1777 {0}", tmp.display())
            };
            return check(
                "browser launch",
                CheckStatus::Fail,
                format!("cannot make a temporary profile under {}: {e}", tmp.display()),
                Some(fix),
            );
        }
    };
    let mut command = tokio::process::Command::new(exe);
    command
        .args(["--headless", "--disable-gpu", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.display()));
    if root {
        command.arg("--no-sandbox");
    }
    command.arg("--dump-dom").arg("data:text/html,<title>browserd-doctor</title><p>page loaded</p>");
    command.kill_on_drop(true).stdin(std::process::Stdio::null());
    // How long the page may take (`BROWSERD_DOCTOR_LAUNCH_TIMEOUT_MS`, default 60 s).
    let wait = std::env::var("BROWSERD_DOCTOR_LAUNCH_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(60), Duration::from_millis);
    let out = tokio::time::timeout(wait, command.output()).await;
    let _ = std::fs::remove_dir_all(&profile);
    let sandbox = if root { " --no-sandbox" } else { "" };
    let fix = format!("{} --headless{sandbox} --dump-dom about:blank   (shows Chromium's own error)", exe.display());
    match out {
        Ok(Ok(o)) if String::from_utf8_lossy(&o.stdout).contains("page loaded") => {
            check("browser launch", CheckStatus::Pass, "headless launch and a page load".into(), None)
        }
        Ok(Ok(o)) => {
            let err = String::from_utf8_lossy(&o.stderr);
            let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output").to_owned();
            check(
                "browser launch",
                CheckStatus::Fail,
                format!("{} did not load a page ({}): {last}", exe.display(), o.status),
                Some(fix),
            )
        }
        Ok(Err(e)) => {
            check("browser launch", CheckStatus::Fail, format!("cannot start {}: {e}", exe.display()), Some(fix))
        }
        Err(_) => check(
            "browser launch",
            CheckStatus::Fail,
            format!("{} loaded no page within {} ms", exe.display(), wait.as_millis()),
            Some(fix),
        ),
    }
}

fn tempfile_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("browserd-doctor-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The journal's directory exists (or can be made) and takes a file.
fn journal(state: &Path) -> Check {
    let probe = state.join(".doctor-probe");
    let result = std::fs::create_dir_all(state)
        .and_then(|()| std::fs::write(&probe, b""))
        .and_then(|()| std::fs::remove_file(&probe));
    match result {
        Ok(()) => check("journal", CheckStatus::Pass, format!("{} is writable", state.display()), None),
        Err(e) => check(
            "journal",
            CheckStatus::Fail,
            format!("{} is not writable: {e}", state.display()),
            Some(format!("rm -f {0} && mkdir -p {0} && chmod 700 {0}", state.display())),
        ),
    }
}

/// The managed profile is free, or held by the running broker's own browser.
fn profile(profile: &Path, broker_running: bool) -> Check {
    let holder = std::fs::read_link(profile.join("SingletonLock")).ok().and_then(|t| {
        let t = t.to_str()?.to_owned();
        let (host, pid) = t.rsplit_once('-')?;
        let pid: i32 = pid.parse().ok()?;
        let ours = nix::unistd::gethostname().ok()?.into_string().ok()?;
        let alive = match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
            Ok(()) => true,
            Err(e) => e == nix::errno::Errno::EPERM,
        };
        (host == ours && alive).then_some(pid)
    });
    match holder {
        None => check("profile lock", CheckStatus::Pass, format!("{} is free", profile.display()), None),
        Some(pid) if broker_running => check(
            "profile lock",
            CheckStatus::Pass,
            format!("{} is in use by the running broker's browser (pid {pid})", profile.display()),
            None,
        ),
        Some(pid) => check(
            "profile lock",
            CheckStatus::Fail,
            format!("{} is held by a Chromium (pid {pid}) that no broker of this runtime dir runs", profile.display()),
            Some(format!("kill {pid}")),
        ),
    }
}
