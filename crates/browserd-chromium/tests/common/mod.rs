//! Shared real-Chromium harness: one managed browser and one fixture site per test binary, on a runtime of their own.
#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use browserd_cdp::LaunchOptions;
use browserd_chromium::{ChromiumConfig, ChromiumProvider};
use browserd_core::provider::{CreateTab, HandleAllocator, OpContext, Provider, SessionKey, TabHandle};
use browserd_protocol::{ActParams, ActionResult, Observation, ObserveParams};
use browserd_test_support::fixtures::FixtureSite;

pub struct Env {
    pub provider: Arc<ChromiumProvider>,
    pub site: FixtureSite,
    pub upload_dir: PathBuf,
    pub download_dir: PathBuf,
}

static ENV: OnceLock<Env> = OnceLock::new();

/// The shared browser and fixture site (launched on first use).
pub fn env() -> &'static Env {
    ENV.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            rt.block_on(async move {
                let site = FixtureSite::start().await.expect("fixture site starts");
                let root = tempfile::tempdir().unwrap().keep();
                let upload_dir = root.join("uploads");
                let download_dir = root.join("downloads");
                std::fs::create_dir_all(&upload_dir).unwrap();
                std::fs::create_dir_all(&download_dir).unwrap();
                let config = ChromiumConfig {
                    upload_roots: vec![upload_dir.clone()],
                    download_dir: Some(download_dir.clone()),
                    ..ChromiumConfig::default()
                };
                let opts = LaunchOptions {
                    user_data_dir: Some(root.join("profile")),
                    env: vec![("XDG_CONFIG_HOME".into(), root.join("xdg").display().to_string())],
                    window_size: Some((1000, 800)),
                    ..LaunchOptions::default()
                };
                let (provider, browser) = ChromiumProvider::launch_managed(opts, HandleAllocator::new(), config)
                    .await
                    .expect("chromium launches");
                tx.send(Env { provider, site, upload_dir, download_dir }).unwrap();
                let _keep = browser;
                std::future::pending::<()>().await;
            });
        });
        rx.recv().expect("the browser thread reports")
    })
}

pub fn ctx() -> OpContext {
    OpContext::new(SessionKey("test".into()), Duration::from_secs(20), "trace-test")
}

/// A tab on a fixture page, closed when dropped... explicitly via `close`.
pub struct Page {
    pub tab: TabHandle,
}

impl Page {
    pub async fn open(path: &str) -> Page {
        let e = env();
        let url = if path.starts_with("http") || path.starts_with("data:") || path.starts_with("about:") {
            path.to_owned()
        } else {
            e.site.url(path)
        };
        let info =
            e.provider.create_tab(&ctx(), CreateTab { url: "about:blank".into(), ..Default::default() }).await.unwrap();
        let page = Page { tab: info.tab };
        let r = page.act(ActParams::new(browserd_protocol::ActionKind::Navigate).value(url)).await;
        assert_eq!(r.outcome, browserd_protocol::Outcome::Succeeded, "{r:#?}");
        page
    }

    pub async fn observe(&self) -> Observation {
        env().provider.observe(&ctx(), self.tab, &ObserveParams::default()).await.unwrap()
    }

    pub async fn observe_with(&self, p: ObserveParams) -> Observation {
        env().provider.observe(&ctx(), self.tab, &p).await.unwrap()
    }

    /// Runs a script in the page (a change made as the page's own script would), which must not throw.
    pub async fn run(&self, script: &str) {
        let params = browserd_protocol::tools::EvaluateParams {
            tab: browserd_protocol::TabId(self.tab.0),
            expression: script.to_owned(),
            await_promise: true,
        };
        let r = env().provider.evaluate(&ctx(), self.tab, &params).await.unwrap();
        assert_eq!(r.exception, None, "the script ran: {script}");
    }

    pub async fn act(&self, p: ActParams) -> ActionResult {
        env().provider.act(&ctx(), self.tab, &p).await.unwrap()
    }

    pub async fn close(self) {
        env().provider.close_tab(&ctx(), self.tab).await.unwrap();
    }
}

/// The ref on the first line containing `needle`.
pub fn ref_of(o: &Observation, needle: &str) -> String {
    let line = o
        .untrusted_content
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in\n{}", o.untrusted_content));
    browserd_protocol::line_ref(line).unwrap_or_else(|| panic!("no ref on {line:?}")).to_owned()
}

/// The ref of a ref line (`  e4 button "Save"` → `e4`).
pub fn ref_in(line: &str) -> String {
    browserd_protocol::line_ref(line).expect("a ref line").to_owned()
}

/// The first ref line that contains `part` (panics with the observation when none).
pub fn ref_line<'a>(o: &'a Observation, part: &str) -> &'a str {
    o.untrusted_content
        .lines()
        .find(|l| browserd_protocol::line_ref(l).is_some() && l.contains(part))
        .unwrap_or_else(|| panic!("no ref line with {part:?} in\n{}", o.untrusted_content))
}

/// The lines indented under the first line that contains `head` (panics with the observation when none).
pub fn under<'a>(o: &'a Observation, head: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = o.untrusted_content.lines().collect();
    let depth = |l: &str| l.len() - l.trim_start().len();
    let at = lines
        .iter()
        .position(|l| l.contains(head))
        .unwrap_or_else(|| panic!("no {head:?} in\n{}", o.untrusted_content));
    lines[at + 1..].iter().take_while(|l| depth(l) > depth(lines[at])).copied().collect()
}

/// Whether the fixture site records `event` (a click that reached an app's handler) within 5 s.
pub async fn recorded(event: &str) -> bool {
    env().site.wait_for_record(event, Duration::from_secs(5)).await
}

/// Observation content with refs replaced by stable placeholders for snapshots.
pub fn redact(o: &Observation) -> String {
    let mut out = String::new();
    let mut map = std::collections::HashMap::new();
    let site = &env().site;
    let base = site.url("/");
    let cross = site.cross_origin_url("/");
    for line in o.untrusted_content.lines() {
        let mut l = line.to_owned();
        if let Some(r) = browserd_protocol::line_ref(line) {
            let indent = line.len() - line.trim_start().len();
            let n = map.len() + 1;
            let id = *map.entry(r.to_owned()).or_insert(n);
            let prefix = if r.starts_with('f') { "f#" } else { "" };
            l = format!("{}{prefix}e{id}{}", &line[..indent], &line[indent + r.len()..]);
        }
        let l = l.replace(&base, "http://site/").replace(&cross, "http://cross/");
        out.push_str(&redact_refs_inline(&l, &map));
        out.push('\n');
    }
    out
}

fn redact_refs_inline(l: &str, map: &std::collections::HashMap<String, usize>) -> String {
    // `within=e12|e30` notes and frame keys.
    let mut s = l.to_owned();
    if let Some(i) = s.find("within=") {
        let tail: String = s[i + 7..].split(' ').next().unwrap_or("").to_owned();
        let red: Vec<String> = tail.split('|').map(|r| map.get(r).map_or("e?".into(), |n| format!("e{n}"))).collect();
        s = s.replacen(&tail, &red.join("|"), 1);
    }
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    // Frame markers like `[f3]:` become `[f#]:`.
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '[' && chars.peek() == Some(&'f') {
            let look: String = chars.clone().take_while(|c| *c != ']').collect();
            if look.len() > 1 && look[1..].chars().all(|c| c.is_ascii_digit()) {
                out.push_str("f#");
                for _ in 0..look.len() {
                    chars.next();
                }
            }
        }
    }
    out
}
