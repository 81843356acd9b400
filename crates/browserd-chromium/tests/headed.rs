//! A headed (windowed) Chromium on a virtual X display: launched with `headless: false` under an Xvfb this test
//! starts on a free display number, it is observed and clicked like a headless one. Needs `Xvfb` (`apt-get install
//! xvfb`; `scripts/setup.sh` installs it).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use browserd_cdp::LaunchOptions;
use browserd_chromium::{ChromiumConfig, ChromiumProvider};
use browserd_core::provider::{CreateTab, HandleAllocator, OpContext, Provider, SessionKey};
use browserd_protocol::{ActParams, ActionKind, Expectation, ObserveParams, Outcome, Postcondition};
use serde_json::json;

/// An Xvfb server on a display number it picked itself (`-displayfd`), stopped on drop.
struct Xvfb {
    child: Child,
    display: String,
}

impl Xvfb {
    fn start() -> Xvfb {
        let exe = std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<PathBuf>>())
            .map(|d| d.join("Xvfb"))
            .find(|p| p.is_file())
            .expect("Xvfb is not installed: install it with `apt-get install xvfb` (scripts/setup.sh does)");
        let mut child = Command::new(exe)
            .args(["-displayfd", "1", "-screen", "0", "1280x1024x24", "-nolisten", "tcp"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout")).read_line(&mut line).expect("Xvfb reports");
        let n: u32 = line.trim().parse().unwrap_or_else(|_| panic!("Xvfb reported no display number: {line:?}"));
        Xvfb { child, display: format!(":{n}") }
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        // SIGTERM lets Xvfb remove its lock file and socket; SIGKILL only if it does not stop.
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        for _ in 0..100 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ctx() -> OpContext {
    OpContext::new(SessionKey("test".into()), Duration::from_secs(20), "trace-headed")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headed_chromium_under_xvfb_observes_and_clicks() {
    let x = Xvfb::start();
    let root = tempfile::tempdir().unwrap();
    let opts = LaunchOptions {
        headless: false,
        user_data_dir: Some(root.path().join("profile")),
        env: vec![
            ("DISPLAY".into(), x.display.clone()),
            ("XDG_CONFIG_HOME".into(), root.path().join("xdg").display().to_string()),
        ],
        window_size: Some((1000, 800)),
        ..LaunchOptions::default()
    };
    let (p, browser) = ChromiumProvider::launch_managed(opts, HandleAllocator::new(), ChromiumConfig::default())
        .await
        .expect("a headed Chromium launches on the virtual display");
    let v = browser.cdp().call(None, "Browser.getVersion", json!({}), Duration::from_secs(5)).await.unwrap();
    let ua = v["userAgent"].as_str().unwrap_or_default();
    assert!(ua.contains("Chrome/") && !ua.contains("HeadlessChrome"), "a headed browser, not a headless one: {v}");

    let url = "data:text/html,<title>headed</title><button onclick=\"this.textContent='Clicked in a window'\">Press me</button>";
    let tab = p.create_tab(&ctx(), CreateTab { url: url.into(), ..Default::default() }).await.unwrap().tab;
    let o = p.observe(&ctx(), tab, &ObserveParams::default()).await.unwrap();
    let line = o
        .untrusted_content
        .lines()
        .find(|l| l.contains("button \"Press me\""))
        .unwrap_or_else(|| panic!("{}", o.untrusted_content));
    let button = browserd_protocol::line_ref(line).expect("a ref line").to_owned();
    let r = p
        .act(
            &ctx(),
            tab,
            &ActParams::new(ActionKind::Click)
                .target(&button)
                .expect(Expectation::TextPresent { text: "Clicked in a window".into() }),
        )
        .await
        .unwrap();
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    browser.shutdown().await.unwrap();
    drop(x);
}
