//! `browserd approve <id>` through the real binary, against the broker the CLI starts on demand with a real managed
//! Chromium and `[policy] require_approval = ["highRisk"]`: `browserd act click` on the fixture's "Delete account"
//! answers APPROVAL_REQUIRED naming the approval and the command that grants it (exit status 1, nothing reaches the
//! page: the fixture server records every click); `browserd approve <id>` grants it (exit 0, saying what was
//! approved); the same `act` then runs, once; an unknown id is refused with what to do.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output};
use std::time::Duration;

use browserd_fixtures::FixtureSite;

/// A machine of its own: HOME (with the config), the runtime directory of the broker.
struct Machine {
    root: tempfile::TempDir,
}

impl Machine {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let m = Machine { root };
        std::fs::create_dir_all(m.home().join(".config/browserd")).unwrap();
        std::fs::create_dir_all(m.run_dir()).unwrap();
        std::fs::set_permissions(m.run_dir(), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(m.home().join(".config/browserd/config.toml"), "[policy]\nrequire_approval = [\"highRisk\"]\n")
            .unwrap();
        m
    }

    fn home(&self) -> std::path::PathBuf {
        self.root.path().join("home")
    }

    fn run_dir(&self) -> std::path::PathBuf {
        self.root.path().join("run")
    }

    fn browserd(&self, args: &[&str]) -> Output {
        let mut c = Command::new(env!("CARGO_BIN_EXE_browserd"));
        c.env_clear()
            .current_dir(self.home())
            .env("HOME", self.home())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("XDG_RUNTIME_DIR", self.run_dir());
        if let Some(chromium) = std::env::var_os("BROWSERD_CHROMIUM") {
            c.env("BROWSERD_CHROMIUM", chromium);
        }
        c.args(args).output().expect("runs browserd")
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        // Stop the broker this test started (and its Chromium).
        let _ = self.browserd(&["broker", "stop"]);
    }
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// The approval id of the `browserd approve <id>` an answer names.
fn approval_id(answer: &str) -> String {
    let at = answer.find("browserd approve ").unwrap_or_else(|| panic!("no `browserd approve <id>` in:\n{answer}"));
    answer[at + "browserd approve ".len()..]
        .split(|c: char| c.is_whitespace() || c == '`')
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn browserd_approve_grants_the_action_an_approval_required_named_and_it_runs_once() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let site = rt.block_on(FixtureSite::start()).unwrap();
    let deleted = || site.records().iter().filter(|r| *r == "account:delete").count();
    let m = Machine::new();
    let s = ["--session", "cli-approve"];
    let with = |args: &[&str]| -> Vec<String> { args.iter().chain(s.iter()).map(|a| (*a).to_owned()).collect() };
    let run = |args: &[&str]| m.browserd(&with(args).iter().map(String::as_str).collect::<Vec<_>>());

    let opened = run(&["open", &site.url("/delete-account.html")]);
    assert!(opened.status.success(), "{}", text(&opened));
    let observed = run(&["observe"]);
    assert!(observed.status.success(), "{}", text(&observed));
    let page = String::from_utf8_lossy(&observed.stdout).into_owned();
    let line = page.lines().find(|l| l.contains("button \"Delete account\"")).unwrap_or_else(|| panic!("{page}"));
    let delete = browserd_protocol::line_ref(line.trim_start_matches('|')).expect("a ref line");

    // Asked: exit status 1, the answer names what to confirm and the command; nothing reached the page.
    let asked = run(&["act", "click", delete]);
    let answer = text(&asked);
    assert!(!asked.status.success(), "{answer}");
    assert!(answer.contains("APPROVAL_REQUIRED") && answer.contains("Delete account"), "{answer}");
    let id = approval_id(&answer);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(deleted(), 0, "{:?}", site.records());

    // An unknown id: refused, saying what to do.
    let bad = m.browserd(&["approve", "a0-00000000"]);
    assert!(!bad.status.success(), "{}", text(&bad));
    assert!(text(&bad).contains("no approval"), "{}", text(&bad));

    // The user approves it in a terminal.
    let granted = m.browserd(&["approve", &id]);
    assert!(granted.status.success(), "{}", text(&granted));
    assert!(text(&granted).contains("approved:") && text(&granted).contains("Delete account"), "{}", text(&granted));

    // The same call runs, once: the server hears of it once, and again is asked anew.
    let ran = run(&["act", "click", delete]);
    assert!(ran.status.success(), "{}", text(&ran));
    for _ in 0..200 {
        if deleted() > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert_eq!(deleted(), 1, "{:?}", site.records());
    let again = run(&["act", "click", delete]);
    assert!(!again.status.success() && text(&again).contains("APPROVAL_REQUIRED"), "{}", text(&again));
    assert_ne!(approval_id(&text(&again)), id, "a used approval is gone: a new one is asked");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(deleted(), 1, "{:?}", site.records());
}
