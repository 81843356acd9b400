//! The broker's claim on what it cannot share: its state directory (journal, managed profile) and the managed
//! Chromium profile. A second broker of the same user — one started where the runtime directory resolved
//! differently — refuses to start and names the first one, instead of running without a browser or a journal.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The claim file inside the state directory; holds `pid <pid>` and `socket <path>` of its holder.
pub const CLAIM_FILE_NAME: &str = "broker.owner";

/// Why this broker may not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClaimError {
    /// Another broker holds the state directory.
    #[error(
        "another browserd broker ({}, socket {}) already uses the state directory {} (its journal and browser \
         profile); this broker would listen at {mine} instead, so clients would reach two brokers. Use that \
         broker (every client reaches it when it finds the same runtime directory: XDG_RUNTIME_DIR, else \
         /run/user/<uid>), or stop it (`kill {}`) and retry",
        holder.pid_text(), holder.socket_text(), dir.display(), holder.pid_text_bare()
    )]
    HeldBy {
        /// The state directory.
        dir: PathBuf,
        /// What the holder wrote into the claim file.
        holder: Holder,
        /// This broker's socket.
        mine: PathBuf,
    },
    /// A running Chromium holds the managed profile.
    #[error(
        "the managed browser profile {} is in use by another Chromium (pid {pid}{}); a second browserd broker or a \
         browser started by hand has it open. Close that browser (`kill {pid}`) or point browserd at another \
         profile (`profile_dir` in the config, BROWSERD_PROFILE_DIR), then retry",
        profile.display(), broker.as_ref().map(|b| format!(", started by the broker {}", b.describe())).unwrap_or_default()
    )]
    ProfileInUse {
        /// The profile directory.
        profile: PathBuf,
        /// The browser's pid from `SingletonLock`.
        pid: u32,
        /// The broker holding the state directory, when one does.
        broker: Option<Holder>,
    },
    /// The claim file could not be used.
    #[error("cannot use {path}: {source}; check that the state directory is yours and writable")]
    Io {
        /// The claim file.
        path: PathBuf,
        /// The failing call's error.
        source: io::Error,
    },
}

/// Who holds a claim, as written into the claim file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holder {
    /// The holder's pid.
    pub pid: Option<u32>,
    /// The holder's socket path.
    pub socket: Option<PathBuf>,
}

impl Holder {
    fn pid_text(&self) -> String {
        self.pid.map_or_else(|| "pid unknown".to_owned(), |p| format!("pid {p}"))
    }
    fn pid_text_bare(&self) -> String {
        self.pid.map_or_else(|| "<its pid>".to_owned(), |p| p.to_string())
    }
    fn socket_text(&self) -> String {
        self.socket.as_ref().map_or_else(|| "unknown".to_owned(), |s| s.display().to_string())
    }
    /// `pid N, socket S`.
    #[must_use]
    pub fn describe(&self) -> String {
        format!("{}, socket {}", self.pid_text(), self.socket_text())
    }

    fn parse(text: &str) -> Self {
        let mut holder = Holder::default();
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("pid", v)) => holder.pid = v.trim().parse().ok(),
                Some(("socket", v)) => holder.socket = Some(PathBuf::from(v.trim())),
                _ => {}
            }
        }
        holder
    }
}

/// The held claim on a state directory; dropping it releases the claim (the kernel does so when the process dies).
///
/// The claim is a lock on the directory itself, which needs no disk space: a broker whose state disk is full still
/// starts (its journal then reports degraded and every input is refused until space is freed). The claim file only
/// tells a second broker who holds it; it is written when it can be.
#[derive(Debug)]
pub struct StateClaim {
    _dir: File,
    _file: Option<File>,
    path: PathBuf,
}

impl StateClaim {
    /// Takes the claim on `state_dir` (created 0700 when missing) for the broker listening at `socket`, without
    /// waiting.
    ///
    /// # Errors
    /// [`ClaimError::HeldBy`] naming the other broker, or [`ClaimError::Io`].
    pub fn acquire(state_dir: &Path, socket: &Path) -> Result<Self, ClaimError> {
        let path = state_dir.join(CLAIM_FILE_NAME);
        let io_err = |source| ClaimError::Io { path: path.clone(), source };
        let mut builder = std::fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(builder.recursive(true), 0o700);
        builder.create(state_dir).map_err(io_err)?;
        let dir = File::open(state_dir).map_err(io_err)?;
        match dir.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder = open_claim_file(&path, false).map(|mut f| read_holder(&mut f)).unwrap_or_default();
                return Err(ClaimError::HeldBy { dir: state_dir.to_path_buf(), holder, mine: socket.to_path_buf() });
            }
            Err(std::fs::TryLockError::Error(source)) => return Err(io_err(source)),
        }
        // Who holds it, for a second broker's message; on a full disk the file may stay empty (holder unknown).
        let file = open_claim_file(&path, true).ok().map(|mut file| {
            let written = file
                .set_len(0)
                .and_then(|()| file.seek(SeekFrom::Start(0)))
                .and_then(|_| write!(file, "pid {}\nsocket {}\n", std::process::id(), socket.display()));
            if let Err(e) = written {
                tracing::warn!(path = %path.display(), error = %e, "the broker claim file could not be written");
            }
            file
        });
        Ok(StateClaim { _dir: dir, _file: file, path })
    }

    /// The claim file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn open_claim_file(path: &Path, create: bool) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
}

/// The broker that holds `state_dir` now, if one does (a non-blocking probe; the claim is not kept).
#[must_use]
pub fn holder_of(state_dir: &Path) -> Option<Holder> {
    let dir = File::open(state_dir).ok()?;
    match dir.try_lock() {
        Ok(()) => None,
        Err(std::fs::TryLockError::WouldBlock) => Some(
            open_claim_file(&state_dir.join(CLAIM_FILE_NAME), false)
                .map(|mut f| read_holder(&mut f))
                .unwrap_or_default(),
        ),
        Err(std::fs::TryLockError::Error(_)) => None,
    }
}

fn read_holder(file: &mut File) -> Holder {
    let mut text = String::new();
    if file.seek(SeekFrom::Start(0)).is_ok() {
        // A few dozen bytes; a larger file is not ours to trust.
        let _ = file.take(4096).read_to_string(&mut text);
    }
    Holder::parse(&text)
}

/// The Chromium holding `profile`, read from its `SingletonLock` (a symlink to `<hostname>-<pid>`): `Some(pid)` when
/// that process runs on this host. A lock of a dead process or of another host is stale; Chromium clears it itself.
#[must_use]
pub fn profile_holder(profile: &Path) -> Option<u32> {
    let target = std::fs::read_link(profile.join("SingletonLock")).ok()?;
    let target = target.to_str()?;
    let (host, pid) = target.rsplit_once('-')?;
    let pid: u32 = pid.parse().ok()?;
    let ours = nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok());
    if ours.as_deref() != Some(host) {
        return None;
    }
    let alive = match nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(pid).ok()?), None) {
        Ok(()) => true,
        Err(e) => e == nix::errno::Errno::EPERM,
    };
    alive.then_some(pid)
}

/// Refuses a managed profile a running Chromium holds, naming the broker that holds `state_dir` when one does.
///
/// # Errors
/// [`ClaimError::ProfileInUse`].
pub fn check_profile(profile: &Path, state_dir: Option<&Path>) -> Result<(), ClaimError> {
    match profile_holder(profile) {
        Some(pid) => {
            Err(ClaimError::ProfileInUse { profile: profile.to_path_buf(), pid, broker: state_dir.and_then(holder_of) })
        }
        None => Ok(()),
    }
}

/// What `browserd broker run` checks before it serves: unless a broker already serves this runtime directory (then
/// the run ends as before, `AlreadyRunning`), it takes the claim on the state directory and refuses a managed
/// profile a running Chromium holds. The returned claim must live as long as the broker.
///
/// # Errors
/// The refusal, naming the other broker or browser and what to do.
pub fn before_broker_run() -> Result<Option<StateClaim>, ClaimError> {
    let Ok(dir) = browserd_ipc::RuntimeDir::from_env() else { return Ok(None) };
    if browserd_ipc::InstanceLock::is_held(&dir).unwrap_or(false) {
        return Ok(None);
    }
    let env = |name: &str| std::env::var(name).ok();
    let Some(state_dir) = crate::config::state_dir(&env) else { return Ok(None) };
    let claim = StateClaim::acquire(&state_dir, &dir.socket_path())?;
    if let Ok(effective) = crate::config::load()
        && let crate::lazy::BrowserTarget::Managed(options) =
            crate::lazy::BrowserTarget::from_config(&effective.config, Some(&state_dir))
        && effective.config.browser != crate::config::BrowserChoice::Extension
        && let Some(profile) = &options.user_data_dir
    {
        check_profile(profile, None)?;
    }
    Ok(Some(claim))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_claim_names_the_first_holder_and_the_claim_dies_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let first = StateClaim::acquire(&state, Path::new("/tmp/browserd-0/broker.sock")).unwrap();
        let err = StateClaim::acquire(&state, Path::new("/run/user/0/browserd/broker.sock")).unwrap_err();
        let text = err.to_string();
        assert!(matches!(&err, ClaimError::HeldBy { holder, .. } if holder.pid == Some(std::process::id())), "{text}");
        assert!(text.contains("/tmp/browserd-0/broker.sock"), "{text}");
        assert!(text.contains("/run/user/0/browserd/broker.sock"), "{text}");
        assert!(text.contains(&format!("kill {}", std::process::id())), "{text}");
        assert_eq!(holder_of(&state).and_then(|h| h.socket), Some(PathBuf::from("/tmp/browserd-0/broker.sock")));
        drop(first);
        assert_eq!(holder_of(&state), None);
        StateClaim::acquire(&state, Path::new("/run/user/0/browserd/broker.sock")).unwrap();
    }

    #[test]
    fn a_live_singleton_lock_of_this_host_is_in_use_and_a_dead_or_foreign_one_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let host = nix::unistd::gethostname().unwrap().into_string().unwrap();
        let lock = dir.path().join("SingletonLock");
        assert_eq!(profile_holder(dir.path()), None);
        std::os::unix::fs::symlink(format!("{host}-{}", std::process::id()), &lock).unwrap();
        assert_eq!(profile_holder(dir.path()), Some(std::process::id()));
        let err = check_profile(dir.path(), None).unwrap_err().to_string();
        assert!(err.contains(&format!("kill {}", std::process::id())) && err.contains("profile_dir"), "{err}");
        std::fs::remove_file(&lock).unwrap();
        // A pid that cannot be running (above the kernel's pid_max limit).
        std::os::unix::fs::symlink(format!("{host}-99999999"), &lock).unwrap();
        assert_eq!(profile_holder(dir.path()), None);
        std::fs::remove_file(&lock).unwrap();
        std::os::unix::fs::symlink(format!("another-host-{}", std::process::id()), &lock).unwrap();
        assert_eq!(profile_holder(dir.path()), None);
    }
}
