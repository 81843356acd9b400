//! `browserd doctor` as a user runs it (the real binary): the default path is checked first and a healthy machine
//! exits 0 with the extension shown as optional; each FAIL the default-path checks can print appears with the exact
//! command that fixes it.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn uid() -> u32 {
    std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m)).unwrap()
}

struct Home {
    root: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let home = Self { root };
        for d in [home.path("home"), home.path("run")] {
            std::fs::create_dir_all(&d).unwrap();
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        home
    }
    /// `run` is this uid's directory under the fake `/run/user` root `base`.
    fn path(&self, p: &str) -> PathBuf {
        match p.strip_prefix("run") {
            Some("") => self.root.path().join("base").join(uid().to_string()),
            Some(rest) => self.path("run").join(rest.trim_start_matches('/')),
            None => self.root.path().join(p),
        }
    }
    /// `browserd doctor` with a fake `/run/user` root holding `<root>/run` as this uid's directory.
    fn doctor(&self, args: &[&str], vars: &[(&str, &str)]) -> (i32, String) {
        let mut command = Command::new(env!("CARGO_BIN_EXE_browserd"));
        command
            .arg("doctor")
            .args(args)
            .current_dir(self.root.path())
            .env_clear()
            .env("HOME", self.path("home"))
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("XDG_RUNTIME_DIR", self.path("run"))
            .env("BROWSERD_TEST_RUN_USER_BASE", self.path("base"));
        if let Some(chromium) = std::env::var_os("BROWSERD_CHROMIUM") {
            command.env("BROWSERD_CHROMIUM", chromium);
        }
        for (k, v) in vars {
            // An empty value: the variable is not set at all.
            if v.is_empty() {
                command.env_remove(k);
            } else {
                command.env(k, v);
            }
        }
        let out = command.output().unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
    }
    fn failures(&self, vars: &[(&str, &str)]) -> Vec<Value> {
        let (code, text) = self.doctor(&["--json"], vars);
        let checks: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
        let failed: Vec<Value> = checks.as_array().unwrap().iter().filter(|c| c["status"] == "fail").cloned().collect();
        assert_eq!(code, i32::from(!failed.is_empty()), "exit status follows the failures: {text}");
        failed
    }
}

fn only_failure(failed: &[Value], name: &str) -> (String, String) {
    let names: Vec<&str> = failed.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, [name], "{failed:#?}");
    (failed[0]["detail"].as_str().unwrap().to_owned(), failed[0]["fix"].as_str().unwrap().to_owned())
}

#[test]
fn a_healthy_machine_passes_with_the_extension_optional() {
    let home = Home::new();
    let (code, text) = home.doctor(&[], &[]);
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("FAIL"), "{text}");
    assert!(text.contains("[ok  ] browser launch: headless launch and a page load"), "{text}");
    assert!(text.contains("[optional] extension"), "{text}");
    assert!(text.contains("browserd install --browser chrome"), "{text}");
}

#[test]
fn no_browser_names_the_install_command() {
    let (_, fix) = only_failure(&Home::new().failures(&[("BROWSERD_CHROMIUM", "/nonexistent/chromium")]), "browser");
    assert!(fix.contains("apt-get install chromium") && fix.contains("BROWSERD_CHROMIUM"), "{fix}");
}

#[test]
fn a_browser_that_cannot_load_a_page_names_the_command_showing_why() {
    let failed = Home::new().failures(&[("BROWSERD_CHROMIUM", "/bin/false")]);
    let (detail, fix) = only_failure(&failed, "browser launch");
    assert!(detail.contains("did not load a page"), "{detail}");
    assert!(fix.starts_with("/bin/false --headless") && fix.contains("--dump-dom about:blank"), "{fix}");
}

#[test]
fn an_unsafe_runtime_dir_names_the_fix() {
    let home = Home::new();
    std::fs::create_dir_all(home.path("run/browserd")).unwrap();
    std::fs::set_permissions(home.path("run/browserd"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (detail, fix) = only_failure(&home.failures(&[]), "runtime dir");
    assert!(detail.contains("chmod 700"), "{detail}");
    assert!(fix.contains(&format!("chmod 700 {}", home.path("run/browserd").display())), "{fix}");
}

#[test]
fn a_host_without_xdg_runtime_dir_reaching_another_broker_is_a_failure() {
    let home = Home::new();
    // No fake /run/user/<uid>: a stripped host falls back to /tmp/browserd-<uid>, this shell uses <root>/run.
    let failed = home.failures(&[("BROWSERD_TEST_RUN_USER_BASE", &home.path("nowhere").display().to_string())]);
    let (detail, fix) = only_failure(&failed, "stripped-environment host");
    assert!(detail.contains("two brokers"), "{detail}");
    assert!(fix.contains(&format!("XDG_RUNTIME_DIR = \"{}\"", home.path("run").display())), "{fix}");
}

#[test]
fn an_unwritable_journal_directory_names_the_fix() {
    let home = Home::new();
    std::fs::create_dir_all(home.path("home/.local/state")).unwrap();
    std::fs::write(home.path("home/.local/state/browserd"), b"not a directory").unwrap();
    let failed = home.failures(&[]);
    let names: Vec<&str> = failed.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["journal"], "{failed:#?}");
    let fix = failed[0]["fix"].as_str().unwrap();
    assert!(fix.starts_with("rm -f ") && fix.contains("chmod 700"), "{fix}");
}

#[test]
fn no_home_names_the_fix() {
    let failed = Home::new().failures(&[("HOME", "relative/home")]);
    let names: Vec<&str> = failed.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"journal"), "{failed:#?}");
    let journal = failed.iter().find(|c| c["name"] == "journal").unwrap();
    assert!(journal["fix"].as_str().unwrap().starts_with("export HOME="), "{journal}");
}

#[test]
fn a_profile_held_by_a_stray_chromium_names_the_kill_command() {
    let home = Home::new();
    let profile = home.path("home/.local/state/browserd/profile");
    std::fs::create_dir_all(&profile).unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    std::os::unix::fs::symlink(format!("{}-{}", host.trim(), std::process::id()), profile.join("SingletonLock"))
        .unwrap();
    let failed = home.failures(&[]);
    let (_, fix) = only_failure(&failed, "profile lock");
    assert_eq!(fix, format!("kill {}", std::process::id()));
}

/// An executable script standing in for Chromium.
fn fake_browser(home: &Home, name: &str, script: &str) -> String {
    let path = home.path(name);
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

#[test]
fn a_browser_that_cannot_be_started_names_the_command_showing_why() {
    let home = Home::new();
    let exe = fake_browser(&home, "no-interpreter", "#!/nonexistent/interpreter\n");
    let (detail, fix) = only_failure(&home.failures(&[("BROWSERD_CHROMIUM", &exe)]), "browser launch");
    assert!(detail.starts_with(&format!("cannot start {exe}")), "{detail}");
    assert!(fix.starts_with(&format!("{exe} --headless")), "{fix}");
}

#[test]
fn a_browser_that_loads_no_page_in_time_names_the_command_showing_why() {
    let home = Home::new();
    let exe = fake_browser(&home, "hangs", "#!/bin/sh\nexec sleep 600\n");
    let failed = home.failures(&[("BROWSERD_CHROMIUM", &exe), ("BROWSERD_DOCTOR_LAUNCH_TIMEOUT_MS", "500")]);
    let (detail, fix) = only_failure(&failed, "browser launch");
    assert!(detail.contains("loaded no page within 500 ms"), "{detail}");
    assert!(fix.starts_with(&format!("{exe} --headless")), "{fix}");
}

#[test]
fn no_temporary_directory_names_the_fix() {
    let home = Home::new();
    // Under a plain file: no directory can be made there, not even by root.
    std::fs::write(home.path("a-file"), b"").unwrap();
    let tmp = home.path("a-file/tmp").display().to_string();
    let failed = home.failures(&[("TMPDIR", &tmp)]);
    let (detail, fix) = only_failure(&failed, "browser launch");
    assert!(detail.contains(&tmp), "{detail}");
    assert_eq!(fix, "export TMPDIR=/tmp");
}

#[test]
fn the_extension_check_names_the_runtime_dir_in_use_when_xdg_runtime_dir_is_unset() {
    let home = Home::new();
    // No XDG_RUNTIME_DIR: the runtime dir is this uid's /run/user directory (the fake root's), left open to others.
    let dir = home.path("run/browserd");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, text) = home.doctor(&["--browser", "chrome", "--json"], &[("XDG_RUNTIME_DIR", "")]);
    assert_eq!(code, 1, "{text}");
    let checks: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
    let socket = checks.as_array().unwrap().iter().find(|c| c["name"] == "endpoint socket").expect("checked");
    assert_eq!(socket["status"], "fail", "{socket}");
    let (detail, fix) = (socket["detail"].as_str().unwrap(), socket["fix"].as_str().unwrap());
    assert!(detail.starts_with("the runtime directory is unusable") && detail.contains("0755"), "{detail}");
    assert_eq!(fix, format!("chmod 700 {}", dir.display()), "the directory in use, not an unset variable");
}

#[test]
fn no_usable_tmp_without_tmpdir_names_the_command_that_repairs_it() {
    // A user whose /tmp is not writable, and no TMPDIR: in a mount namespace of its own, /tmp is a fresh root-owned
    // 0755 tmpfs and the doctor runs as `nobody` (needs root to set up, as CI has; without it the test fails).
    const NOBODY: u32 = 65534;
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let home = root.path().join("home");
    let run = root.path().join("base").join(NOBODY.to_string());
    for dir in [root.path().to_path_buf(), home.clone(), root.path().join("base"), run.clone()] {
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut command = Command::new("unshare");
    command
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg("mount -t tmpfs -o mode=0755,size=64k tmpfs /tmp && exec setpriv --reuid=65534 --regid=65534 --clear-groups \"$@\"")
        .args(["sh", env!("CARGO_BIN_EXE_browserd"), "doctor", "--json"])
        .current_dir(&home)
        .env_clear()
        .env("HOME", &home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("XDG_RUNTIME_DIR", &run)
        .env("BROWSERD_TEST_RUN_USER_BASE", root.path().join("base"));
    if let Some(chromium) = std::env::var_os("BROWSERD_CHROMIUM") {
        command.env("BROWSERD_CHROMIUM", chromium);
    }
    let out = command.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let checks: Value = serde_json::from_str(&text).unwrap_or_else(|_| {
        panic!(
            "not JSON (the setup needs root: unshare, mount, setpriv): {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let failed: Vec<Value> = checks.as_array().unwrap().iter().filter(|c| c["status"] == "fail").cloned().collect();
    let (detail, fix) = only_failure(&failed, "browser launch");
    assert!(detail.starts_with("cannot make a temporary profile under /tmp"), "{detail}");
    assert_eq!(fix, "sudo mkdir -p /tmp && sudo chmod 1777 /tmp");
    assert_eq!(out.status.code(), Some(1), "{text}");
}
