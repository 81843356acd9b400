//! Where the broker's endpoint lives on each OS, computed as plain data (no I/O) so every platform's rule is unit-tested.
//!
//! Linux is the only platform this crate runs on today. The macOS directory rule and the Windows named-pipe name are
//! designed here and covered by unit tests, but they are **not tested on those operating systems**, and the socket,
//! lock and accept code of this crate is Unix-only (a Windows build has no broker endpoint: unsupported).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Name of the per-user directory created inside the platform's runtime directory.
pub const APP_DIR_NAME: &str = "browserd";
/// File name of the broker's Unix socket inside the runtime directory.
pub const SOCKET_FILE_NAME: &str = "broker.sock";
/// File name of the single-instance lock inside the runtime directory.
pub const LOCK_FILE_NAME: &str = "broker.lock";
/// Prefix of every Windows pipe name (`\\.\pipe\`).
pub const WINDOWS_PIPE_PREFIX: &str = r"\\.\pipe\";
/// Windows limits a pipe name to 256 characters, prefix included.
pub const WINDOWS_PIPE_NAME_MAX: usize = 256;

/// The operating-system family whose path rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    /// Linux and other Unix systems following the XDG base-directory rules. Tested.
    Linux,
    /// macOS: `$TMPDIR` is a per-user, owner-only directory. Designed, not tested on macOS.
    MacOs,
    /// Windows: a named pipe instead of a socket directory. Designed, not tested on Windows.
    Windows,
}

impl Platform {
    /// The platform this binary was built for.
    pub fn current() -> Self {
        if cfg!(windows) {
            Platform::Windows
        } else if cfg!(target_os = "macos") {
            Platform::MacOs
        } else {
            Platform::Linux
        }
    }

    /// Longest socket path, in bytes, that fits `sockaddr_un.sun_path` (its size minus the trailing NUL).
    pub fn max_socket_path_len(self) -> usize {
        match self {
            // Linux: sun_path is 108 bytes.
            Platform::Linux => 107,
            // macOS and the BSDs: sun_path is 104 bytes.
            Platform::MacOs => 103,
            // Pipe names are not socket paths.
            Platform::Windows => WINDOWS_PIPE_NAME_MAX,
        }
    }
}

/// Where a Linux system keeps each user's runtime directory (`/run/user/<uid>`, made by systemd-logind or pam).
pub const RUN_USER_BASE: &str = "/run/user";
/// Replaces [`RUN_USER_BASE`] for tests only: an isolated fake root holding `<uid>` directories, so a test can show
/// that a client without `XDG_RUNTIME_DIR` finds the same broker as one with it, without touching the real
/// `/run/user`. Not a user setting (use `XDG_RUNTIME_DIR` for that); ignored unless absolute.
pub const RUN_USER_BASE_ENV: &str = "BROWSERD_TEST_RUN_USER_BASE";

/// Which rule chose the runtime directory; shown by `browserd status` so a user knows why the socket is where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirSource {
    /// `$XDG_RUNTIME_DIR/browserd` (set, non-empty and absolute).
    XdgRuntimeDir,
    /// `/run/user/<uid>/browserd`: no `XDG_RUNTIME_DIR` (hosts such as Codex strip it), but the user's runtime
    /// directory exists, is a real directory (not a symlink) and is owned by this uid.
    RunUser,
    /// macOS `$TMPDIR/browserd` (per-user on macOS).
    MacTmpDir,
    /// `/tmp/browserd-<uid>`, when no per-user runtime directory is available.
    TmpFallback,
}

impl DirSource {
    /// The rule in words, for `browserd status` and `browserd doctor`.
    pub fn describe(self) -> &'static str {
        match self {
            DirSource::XdgRuntimeDir => "from $XDG_RUNTIME_DIR",
            DirSource::RunUser => "the user's /run/user/<uid> (no $XDG_RUNTIME_DIR in this environment)",
            DirSource::MacTmpDir => "from $TMPDIR (macOS)",
            DirSource::TmpFallback => "the /tmp/browserd-<uid> fallback (no $XDG_RUNTIME_DIR and no /run/user/<uid>)",
        }
    }
}

/// The per-uid runtime directory the system would give this user (`/run/user/<uid>`, or under
/// `$BROWSERD_TEST_RUN_USER_BASE` in tests), whether or not it exists.
pub fn run_user_dir(env: impl Fn(&str) -> Option<OsString>, uid: u32) -> PathBuf {
    let base = env(RUN_USER_BASE_ENV).map(PathBuf::from).filter(|p| p.is_absolute());
    base.unwrap_or_else(|| PathBuf::from(RUN_USER_BASE)).join(uid.to_string())
}

/// Computes the broker's runtime directory for a Unix-like platform from an environment lookup, the user's uid and
/// a probe saying whether a directory exists, is not a symlink and is owned by `uid` (see `rundir::is_ours`).
///
/// Rules, in order — the same for every client, hook, MCP server and native host, whatever environment its host
/// passed: an absolute, non-empty `XDG_RUNTIME_DIR` gives `$XDG_RUNTIME_DIR/browserd` (the XDG spec says a relative
/// value must be ignored); on Linux, `/run/user/<uid>/browserd` when `/run/user/<uid>` passes `is_ours` (what
/// `XDG_RUNTIME_DIR` is set to in a login session, so a host that strips the variable still reaches the same
/// broker); on macOS an absolute `TMPDIR` gives `$TMPDIR/browserd`; otherwise `/tmp/browserd-<uid>`. On
/// [`Platform::Windows`] this still answers the fallback rule, but Windows uses [`windows_pipe_name`] instead.
pub fn unix_runtime_dir(
    platform: Platform,
    env: impl Fn(&str) -> Option<OsString>,
    uid: u32,
    is_ours: impl Fn(&Path) -> bool,
) -> (PathBuf, DirSource) {
    let absolute = |name: &str| env(name).map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(xdg) = absolute("XDG_RUNTIME_DIR") {
        return (xdg.join(APP_DIR_NAME), DirSource::XdgRuntimeDir);
    }
    if platform == Platform::Linux {
        let run_user = run_user_dir(&env, uid);
        if is_ours(&run_user) {
            return (run_user.join(APP_DIR_NAME), DirSource::RunUser);
        }
    }
    if platform == Platform::MacOs
        && let Some(tmp) = absolute("TMPDIR")
    {
        return (tmp.join(APP_DIR_NAME), DirSource::MacTmpDir);
    }
    (Path::new("/tmp").join(format!("{APP_DIR_NAME}-{uid}")), DirSource::TmpFallback)
}

/// The Windows named-pipe name for one user: `\\.\pipe\browserd-<user>`, where `<user>` should be the user's SID
/// (stable across renames) or, failing that, the account name.
///
/// Characters other than ASCII letters, digits, `-`, `_` and `.` become `_` (a backslash would start a new path
/// component), and the name is cut to Windows' 256-character limit. Returns `None` for an empty user.
///
/// Designed, not tested on Windows: the server side must also create the pipe with
/// `FILE_FLAG_FIRST_PIPE_INSTANCE` (so no other process can squat the name first) and a DACL that grants only the
/// user's SID, and check the client's SID with `GetNamedPipeClientProcessId` + the process token. None of that exists
/// yet: Windows support is unsupported in this crate.
pub fn windows_pipe_name(user_sid_or_name: &str) -> Option<String> {
    let user: String = user_sid_or_name
        .trim()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' })
        .collect();
    if user.is_empty() {
        return None;
    }
    let mut name = format!("{WINDOWS_PIPE_PREFIX}{APP_DIR_NAME}-{user}");
    // Every character is ASCII here, so truncating by bytes keeps the string valid.
    name.truncate(WINDOWS_PIPE_NAME_MAX);
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = vars.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        move |name| map.get(name).cloned()
    }

    fn none(_: &Path) -> bool {
        false
    }

    #[test]
    fn linux_uses_xdg_runtime_dir_when_absolute() {
        let (dir, source) =
            unix_runtime_dir(Platform::Linux, env(&[("XDG_RUNTIME_DIR", "/run/user/1000")]), 1000, |_| true);
        assert_eq!(dir, PathBuf::from("/run/user/1000/browserd"));
        assert_eq!(source, DirSource::XdgRuntimeDir);
    }

    #[test]
    fn linux_ignores_empty_or_relative_xdg_runtime_dir() {
        for value in ["", "run/user/1000", "./x"] {
            let (dir, source) = unix_runtime_dir(Platform::Linux, env(&[("XDG_RUNTIME_DIR", value)]), 1000, none);
            assert_eq!(dir, PathBuf::from("/tmp/browserd-1000"), "value {value:?}");
            assert_eq!(source, DirSource::TmpFallback);
        }
    }

    #[test]
    fn linux_without_xdg_falls_back_to_tmp_with_uid_and_ignores_tmpdir() {
        let (dir, source) = unix_runtime_dir(Platform::Linux, env(&[("TMPDIR", "/var/tmp")]), 42, none);
        assert_eq!(dir, PathBuf::from("/tmp/browserd-42"));
        assert_eq!(source, DirSource::TmpFallback);
    }

    #[test]
    fn macos_uses_tmpdir_then_fallback() {
        let tmpdir = "/var/folders/zz/abc123/T/";
        let (dir, source) = unix_runtime_dir(Platform::MacOs, env(&[("TMPDIR", tmpdir)]), 501, |_| true);
        assert_eq!(dir, PathBuf::from("/var/folders/zz/abc123/T/browserd"));
        assert_eq!(source, DirSource::MacTmpDir);
        let (dir, source) = unix_runtime_dir(Platform::MacOs, env(&[]), 501, |_| true);
        assert_eq!(dir, PathBuf::from("/tmp/browserd-501"));
        assert_eq!(source, DirSource::TmpFallback);
    }

    #[test]
    fn macos_prefers_an_explicit_xdg_runtime_dir() {
        let vars = [("XDG_RUNTIME_DIR", "/Users/me/run"), ("TMPDIR", "/var/folders/x/T")];
        let (dir, source) = unix_runtime_dir(Platform::MacOs, env(&vars), 501, none);
        assert_eq!(dir, PathBuf::from("/Users/me/run/browserd"));
        assert_eq!(source, DirSource::XdgRuntimeDir);
    }

    #[test]
    fn linux_without_xdg_uses_run_user_uid_when_it_is_ours() {
        let asked = std::cell::RefCell::new(Vec::new());
        let probe = |p: &Path| {
            asked.borrow_mut().push(p.to_path_buf());
            p == Path::new("/run/user/1000")
        };
        // The stripped environment of Codex and of the MCP SDK: HOME LANG PATH SHELL TERM (PWD, LOGNAME, USER).
        let stripped = env(&[("HOME", "/home/me"), ("PATH", "/usr/bin"), ("SHELL", "/bin/sh"), ("TERM", "xterm")]);
        let (dir, source) = unix_runtime_dir(Platform::Linux, stripped, 1000, probe);
        assert_eq!(dir, PathBuf::from("/run/user/1000/browserd"));
        assert_eq!(source, DirSource::RunUser);
        assert_eq!(asked.borrow().as_slice(), [PathBuf::from("/run/user/1000")]);
        // The same directory a login shell's XDG_RUNTIME_DIR names.
        let (full, _) = unix_runtime_dir(Platform::Linux, env(&[("XDG_RUNTIME_DIR", "/run/user/1000")]), 1000, none);
        assert_eq!(full, dir);
    }

    #[test]
    fn linux_falls_back_to_tmp_when_run_user_is_not_ours() {
        let (dir, source) = unix_runtime_dir(Platform::Linux, env(&[]), 1000, none);
        assert_eq!(dir, PathBuf::from("/tmp/browserd-1000"));
        assert_eq!(source, DirSource::TmpFallback);
    }

    #[test]
    fn the_test_base_replaces_run_user_only_when_absolute() {
        let fake = env(&[(RUN_USER_BASE_ENV, "/tmp/fake/run/user")]);
        assert_eq!(run_user_dir(fake, 7), PathBuf::from("/tmp/fake/run/user/7"));
        assert_eq!(run_user_dir(env(&[(RUN_USER_BASE_ENV, "rel")]), 7), PathBuf::from("/run/user/7"));
        assert_eq!(run_user_dir(env(&[]), 0), PathBuf::from("/run/user/0"));
        let (dir, source) =
            unix_runtime_dir(Platform::Linux, env(&[(RUN_USER_BASE_ENV, "/tmp/fake/run/user")]), 7, |p| {
                p == Path::new("/tmp/fake/run/user/7")
            });
        assert_eq!((dir, source), (PathBuf::from("/tmp/fake/run/user/7/browserd"), DirSource::RunUser));
    }

    #[test]
    fn macos_never_probes_run_user() {
        let (dir, source) = unix_runtime_dir(Platform::MacOs, env(&[]), 501, |_| panic!("probed /run/user on macOS"));
        assert_eq!((dir, source), (PathBuf::from("/tmp/browserd-501"), DirSource::TmpFallback));
    }

    #[test]
    fn socket_path_limits_follow_sun_path_sizes() {
        assert_eq!(Platform::Linux.max_socket_path_len(), 107);
        assert_eq!(Platform::MacOs.max_socket_path_len(), 103);
    }

    #[test]
    fn windows_pipe_name_uses_the_sid() {
        let name = windows_pipe_name("S-1-5-21-3623811015-3361044348-30300820-1013");
        assert_eq!(name.as_deref(), Some(r"\\.\pipe\browserd-S-1-5-21-3623811015-3361044348-30300820-1013"));
    }

    #[test]
    fn windows_pipe_name_sanitizes_account_names() {
        assert_eq!(windows_pipe_name(r"CORP\jane doe").as_deref(), Some(r"\\.\pipe\browserd-CORP_jane_doe"));
        assert_eq!(windows_pipe_name("Zoë").as_deref(), Some(r"\\.\pipe\browserd-Zo_"));
        assert_eq!(windows_pipe_name("  "), None);
        assert_eq!(windows_pipe_name(""), None);
    }

    #[test]
    fn windows_pipe_name_is_cut_to_the_windows_limit() {
        let name = windows_pipe_name(&"a".repeat(400)).expect("non-empty user");
        assert_eq!(name.len(), WINDOWS_PIPE_NAME_MAX);
        assert!(name.starts_with(r"\\.\pipe\browserd-aaa"));
    }
}
