//! Drill "installer interrupted": the real binary's `install` and `uninstall` killed (`SIGKILL`, the hidden
//! `--fault-after N` hook) after each of their file-system steps in turn. After every kill: no manifest names a missing
//! wrapper, `doctor` names what is half-done, and a later `install` or `uninstall` finishes cleanly; a file of the
//! user's beside the manifests is never touched.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Output;

use browserd_native::install::HOST_NAME;
use serde_json::Value;

const MANIFEST_DIRS: [&str; 3] =
    ["google-chrome/NativeMessagingHosts", "chromium/NativeMessagingHosts", "microsoft-edge/NativeMessagingHosts"];

struct Home {
    _root: tempfile::TempDir,
    home: PathBuf,
}

impl Home {
    /// A fresh HOME with a file of the user's in Chrome's manifest directory.
    fn new() -> Home {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let chrome = home.join(".config").join(MANIFEST_DIRS[0]);
        std::fs::create_dir_all(&chrome).unwrap();
        std::fs::write(chrome.join("com.user.other.json"), "{\"name\": \"com.user.other\"}").unwrap();
        Home { _root: root, home }
    }

    fn run(&self, args: &[&str]) -> Output {
        std::process::Command::new(env!("CARGO_BIN_EXE_browserd-native"))
            .args(args)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_RUNTIME_DIR", self.home.join("run"))
            .env_remove("BROWSERD_EXTENSION_SOCKET")
            .output()
            .unwrap()
    }

    /// Runs `args` with the fault hook armed at step `n`: `true` when the hook killed it, `false` when it finished.
    fn run_killed_after(&self, args: &[&str], n: usize) -> bool {
        let n = n.to_string();
        let mut all = args.to_vec();
        all.extend(["--fault-after", &n]);
        let out = self.run(&all);
        match out.status.signal() {
            Some(9) => true,
            None if out.status.success() => false,
            _ => panic!(
                "{args:?} --fault-after {n} ended with {:?}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }

    fn manifests(&self) -> Vec<PathBuf> {
        MANIFEST_DIRS
            .iter()
            .map(|d| self.home.join(".config").join(d).join(format!("{HOST_NAME}.json")))
            .filter(|p| p.exists())
            .collect()
    }

    /// Every file under the data directory and browserd's manifests (the user's file excluded).
    fn browserd_files(&self) -> Vec<PathBuf> {
        let mut out = self.manifests();
        let mut stack = vec![self.home.join(".local/share/browserd")];
        for d in MANIFEST_DIRS {
            let dir = self.home.join(".config").join(d);
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') {
                    out.push(e.path());
                }
            }
        }
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                if e.path().is_dir() {
                    stack.push(e.path());
                } else {
                    out.push(e.path());
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// No manifest names a wrapper that is missing or not executable.
    fn assert_no_dangling_manifest(&self, when: &str) {
        for m in self.manifests() {
            let v: Value = serde_json::from_slice(&std::fs::read(&m).unwrap())
                .unwrap_or_else(|e| panic!("{when}: {} is not whole JSON: {e}", m.display()));
            let target = PathBuf::from(v["path"].as_str().unwrap());
            let mode = std::fs::metadata(&target).map(|md| md.permissions().mode()).unwrap_or(0);
            assert!(mode & 0o111 != 0, "{when}: {} names {}, which is missing", m.display(), target.display());
        }
    }

    fn doctor(&self) -> Vec<Value> {
        let out = self.run(&["doctor", "--browser", "all", "--json"]);
        serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap()
    }

    fn half_done(&self) -> Vec<String> {
        self.doctor()
            .into_iter()
            .filter(|c| c["name"] == "install state")
            .map(|c| {
                assert_eq!(c["status"], "fail", "{c}");
                assert!(c["fix"].as_str().unwrap().contains("browserd install"), "{c}");
                c["detail"].as_str().unwrap().to_owned()
            })
            .collect()
    }

    /// A complete install: three manifests naming an executable wrapper, doctor passes on every file check.
    fn assert_installed(&self, when: &str) {
        assert_eq!(self.manifests().len(), 3, "{when}: {:?}", self.browserd_files());
        self.assert_no_dangling_manifest(when);
        let checks = self.doctor();
        for c in &checks {
            let name = c["name"].as_str().unwrap();
            if name.starts_with("manifest ") || name == "browserd binary" || name == "install state" {
                assert_eq!(c["status"], "pass", "{when}: {c}");
            }
        }
        assert!(self.half_done().is_empty(), "{when}");
    }

    /// Nothing of browserd's is left and the user's file is.
    fn assert_clean(&self, when: &str) {
        assert_eq!(self.browserd_files(), Vec::<PathBuf>::new(), "{when}");
        assert!(self.user_file().exists(), "{when}: the user's file survives");
        assert!(self.half_done().is_empty(), "{when}");
    }

    fn user_file(&self) -> PathBuf {
        self.home.join(".config").join(MANIFEST_DIRS[0]).join("com.user.other.json")
    }
}

const INSTALL: [&str; 3] = ["install", "--browser", "all"];

fn uninstall_ok(h: &Home, when: &str) {
    let out = h.run(&["uninstall"]);
    assert!(out.status.success(), "{when}: {}", String::from_utf8_lossy(&out.stderr));
}

fn install_ok(h: &Home, when: &str) {
    let out = h.run(&INSTALL);
    assert!(out.status.success(), "{when}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Killed after each step of a fresh install: then `uninstall` removes all of it, or `install` completes it.
#[test]
fn install_killed_after_each_step_is_finished_or_removed_cleanly() {
    let mut steps = 0;
    for n in 1.. {
        let a = Home::new();
        if !a.run_killed_after(&INSTALL, n) {
            a.assert_installed("the hook was past the last step");
            break;
        }
        steps = n;
        let when = format!("install killed after step {n}");
        a.assert_no_dangling_manifest(&when);
        let installed_whole = a.manifests().len() == 3 && a.half_done().is_empty();
        if !installed_whole {
            assert!(!a.half_done().is_empty(), "{when}: doctor names what is half-done: {:#?}", a.doctor());
        }
        uninstall_ok(&a, &when);
        a.assert_clean(&format!("{when}, then uninstall"));

        let b = Home::new();
        assert!(b.run_killed_after(&INSTALL, n));
        install_ok(&b, &when);
        b.assert_installed(&format!("{when}, then install"));
        uninstall_ok(&b, &when);
        b.assert_clean(&format!("{when}, then install and uninstall"));
    }
    // pending record, wrapper, three manifests, receipt (two steps each), the pending record removed.
    assert_eq!(steps, 13, "the drill covered every step of install");
}

/// Killed after each step of a re-install over a complete one: nothing dangles, `uninstall` removes all of it.
#[test]
fn reinstall_killed_after_each_step_leaves_a_working_or_removable_install() {
    for n in 1..=13 {
        let h = Home::new();
        install_ok(&h, "first install");
        assert!(h.run_killed_after(&INSTALL, n), "step {n} exists");
        let when = format!("re-install killed after step {n}");
        h.assert_no_dangling_manifest(&when);
        uninstall_ok(&h, &when);
        h.assert_clean(&format!("{when}, then uninstall"));
    }
}

/// Killed after each step of an uninstall: manifests go before the wrapper, so none dangles; doctor names what is
/// half-done; a second `uninstall` (or an `install`) finishes cleanly.
#[test]
fn uninstall_killed_after_each_step_never_leaves_a_dangling_manifest() {
    let mut steps = 0;
    for n in 1.. {
        let h = Home::new();
        install_ok(&h, "install");
        if !h.run_killed_after(&["uninstall"], n) {
            h.assert_clean("the hook was past the last step of uninstall");
            break;
        }
        steps = n;
        let when = format!("uninstall killed after step {n}");
        h.assert_no_dangling_manifest(&when);
        if !h.browserd_files().is_empty() {
            assert!(!h.half_done().is_empty(), "{when}: doctor names what is half-done: {:#?}", h.doctor());
        }
        let again = Home::new();
        install_ok(&again, "install");
        assert!(again.run_killed_after(&["uninstall"], n));
        install_ok(&again, &when);
        again.assert_installed(&format!("{when}, then install"));
        uninstall_ok(&h, &when);
        h.assert_clean(&format!("{when}, then uninstall"));
    }
    // three manifests, the wrapper, the receipt.
    assert_eq!(steps, 5, "the drill covered every step of uninstall");
}
