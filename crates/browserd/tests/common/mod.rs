//! A home of its own for each test of the real `browserd` binary: the broker's socket, its config, journal, Chromium
//! profile and cache all live in one temporary directory, and the broker a test started is stopped when it ends.
#![allow(dead_code, unreachable_pub)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The CLI's per-call deadline, in milliseconds.
pub const DEADLINE_ENV: &str = "BROWSERD_CLI_TIMEOUT_MS";

pub struct Home {
    root: tempfile::TempDir,
    /// The deadline (ms) `broker stop` gets when the test ends (`None`: the CLI's own).
    stop_deadline_ms: Option<u64>,
}

impl Home {
    pub fn new() -> Self {
        Self { root: tempfile::tempdir().unwrap(), stop_deadline_ms: None }
    }

    /// A home whose `browserd/config.toml` says `config`.
    pub fn with_config(config: &str) -> Self {
        let home = Self::new();
        std::fs::create_dir_all(home.dir("config").join("browserd")).unwrap();
        std::fs::write(home.dir("config").join("browserd/config.toml"), config).unwrap();
        home
    }

    /// The `broker stop` at the end waits at most `ms` for an answer (for a test whose broker never answers).
    pub fn stop_within_ms(mut self, ms: u64) -> Self {
        self.stop_deadline_ms = Some(ms);
        self
    }

    /// The home directory itself (`HOME`).
    pub fn path(&self) -> &Path {
        self.root.path()
    }

    /// The private directory `name` in the home (mode 0700), made if need be.
    pub fn dir(&self, name: &str) -> PathBuf {
        let d = self.root.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        d
    }

    /// The broker's socket in this home.
    pub fn socket(&self) -> PathBuf {
        self.dir("run").join("browserd").join("broker.sock")
    }

    /// `browserd args` in this home (its XDG runtime, config, state and cache directories), with none of the test
    /// environment's `BROWSERD_ADVANCED`, `BROWSERD_REMOTE_CDP` or CLI deadline.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_browserd"));
        command
            .args(args)
            .env("XDG_RUNTIME_DIR", self.dir("run"))
            .env("XDG_CONFIG_HOME", self.dir("config"))
            .env("XDG_STATE_HOME", self.dir("state"))
            .env("XDG_CACHE_HOME", self.dir("cache"))
            .env("HOME", self.root.path())
            .env_remove("BROWSERD_ADVANCED")
            .env_remove("BROWSERD_REMOTE_CDP")
            .env_remove(DEADLINE_ENV);
        command
    }

    /// Runs `browserd args` to the end.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("runs browserd")
    }

    /// Runs a command that must succeed and returns its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "browserd {args:?} failed ({:?}): {stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        // Stop the broker this test started (and its Chromium); nothing is left running.
        let mut stop = self.command(&["broker", "stop"]);
        if let Some(ms) = self.stop_deadline_ms {
            stop.env(DEADLINE_ENV, ms.to_string());
        }
        let _ = stop.output();
    }
}
