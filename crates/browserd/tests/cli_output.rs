//! What the real `browserd` CLI prints about a page, against the broker it starts on demand with a real managed
//! Chromium and the loopback fixture site: `open` names the loaded page's title (not its URL while it loads).

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};

use browserd_fixtures::FixtureSite;

/// A home for one test: the broker's socket, its config, journal, Chromium profile and cache all live here.
struct Home(tempfile::TempDir);

impl Home {
    fn new() -> Self {
        Self(tempfile::tempdir().unwrap())
    }

    fn dir(&self, name: &str) -> PathBuf {
        let d = self.0.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        d
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_browserd"))
            .args(args)
            .env("XDG_RUNTIME_DIR", self.dir("run"))
            .env("XDG_CONFIG_HOME", self.dir("config"))
            .env("XDG_STATE_HOME", self.dir("state"))
            .env("XDG_CACHE_HOME", self.dir("cache"))
            .env("HOME", self.0.path())
            .env_remove("BROWSERD_ADVANCED")
            .env_remove("BROWSERD_REMOTE_CDP")
            .output()
            .expect("runs browserd")
    }

    /// Runs a command that must succeed and returns its stdout.
    fn ok(&self, args: &[&str]) -> String {
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
        let _ = self.run(&["broker", "stop"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_prints_the_loaded_page_s_title() {
    let site = FixtureSite::start().await.unwrap();
    let home = Home::new();
    // The server holds the response back, so a title read before the load would be the URL (or nothing).
    let page = site.url("/slow.html?delay=700");
    let opened = home.ok(&["open", &page, "--session", "titles"]);
    let first = opened.lines().next().unwrap_or_default();
    assert!(first.starts_with("tab ") && first.ends_with(&format!("{page} — Slow page")), "{opened}");
    let form = site.url("/form.html");
    let json: serde_json::Value =
        serde_json::from_str(&home.ok(&["open", &form, "--session", "titles", "--json"])).unwrap();
    assert_eq!((json["url"].as_str(), json["title"].as_str()), (Some(form.as_str()), Some("Controlled form")));
    site.shutdown().await;
}
