//! The scheme policy (BRIEF §8, issue 16 item 1): a tab may be opened at, navigated to, claimed at or read at
//! `http:`, `https:` and `about:blank` only; `file:` only inside a directory of `files.file_url_roots`. Everything
//! else (`javascript:`, top-level `data:` and `blob:`, `file:` elsewhere, `chrome:`, `chrome-extension:`,
//! `devtools:`, `view-source:`, …) is refused with `POLICY_DENIED` before anything is sent to the browser.
//!
//! The checks run at the broker's one door for tool calls ([`before`], called by `dispatch::tool_call` before the
//! tool runs): a URL the call names (`browser_open`, a `navigate` action or batch step) and the URL the target tab
//! shows now (every tool that reads or writes a page, `browser_claim` included). A page can still lead a tab to a
//! refused URL on its own (a link, a redirect, a popup: Chromium itself blocks those from web pages, but a `file:`
//! page may link to another file); [`after`] then withholds the answer — an observation, an action's effects — of
//! any call whose result shows a refused URL, and [`before`] refuses every later read or action on that tab except
//! a navigation back to an allowed URL. The extension's last-hop gate (`extension/lib/schemes.js`) checks again
//! with its own copy of the file roots.

use std::path::{Component, Path, PathBuf};

use browserd_core::provider::{SessionKey, TabHandle};
use browserd_protocol::tools::ToolCall;
use browserd_protocol::{ActionKind, ErrorCode, ErrorData};
use serde_json::{Value, json};

use crate::server::Broker;

/// The URL's scheme, lower case, as a browser parses it: leading and trailing C0 controls and spaces are ignored,
/// and tabs and newlines anywhere (`java\tscript:`). `None` when the text has no scheme (not an absolute URL).
#[must_use]
pub fn scheme_of(url: &str) -> Option<String> {
    let cleaned = cleaned(url);
    let (scheme, _) = cleaned.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let valid = first.is_ascii_alphabetic() && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| scheme.to_ascii_lowercase())
}

/// The URL with what a browser's URL parser drops removed (edge C0 controls and spaces, inner tabs and newlines).
fn cleaned(url: &str) -> String {
    url.trim_matches(|c: char| c <= ' ').chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect()
}

/// The `[schemes]` section of the config: schemes allowed besides http, https and about:blank (e.g. `data` for
/// test pages). `javascript` can never be allowed (script is the advanced tier's `browser_evaluate`), nor `file`
/// (that is `[files] file_url_roots`, per directory).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SchemesConfig {
    /// Extra schemes, lower case, without the colon.
    pub allow: Vec<String>,
}

/// The section's keys.
pub const KEYS: &[&str] = &["schemes.allow"];

impl SchemesConfig {
    /// Sets `schemes.allow` from its items.
    ///
    /// # Errors
    /// Not a scheme, or one that cannot be allowed.
    pub fn set_allow(&mut self, items: &[String]) -> Result<(), String> {
        let mut allow = Vec::new();
        for item in items.iter().map(|i| i.trim().trim_end_matches(':').to_ascii_lowercase()).filter(|i| !i.is_empty())
        {
            if scheme_of(&format!("{item}:")).as_deref() != Some(item.as_str()) {
                return Err(format!("{item:?} is not a URL scheme"));
            }
            if matches!(item.as_str(), "javascript" | "file") {
                return Err(format!(
                    "`{item}` cannot be allowed here (javascript: never; file: per directory with                      `[files] file_url_roots`)"
                ));
            }
            allow.push(item);
        }
        self.allow = allow;
        Ok(())
    }
}

/// What the policy allows beyond its fixed rules: the `file:` directories and the extra schemes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rules<'a> {
    /// `[files] file_url_roots`.
    pub file_roots: &'a [PathBuf],
    /// `[schemes] allow`.
    pub extra: &'a [String],
}

impl<'a> Rules<'a> {
    /// The rules of a broker configuration.
    #[must_use]
    pub fn of(config: &'a crate::config::BrokerConfig) -> Self {
        Self { file_roots: &config.files.file_url_roots, extra: &config.schemes.allow }
    }
}

/// Why a tab may not be read or acted on while it shows `url`: [`refusal`], except that the browser's own error page
/// for a load that failed (`chrome-error://chromewebdata/`, which shows the failed URL and the error) may be read
/// and navigated away from, though never navigated to.
#[must_use]
pub fn shown_refusal(url: &str, rules: Rules<'_>) -> Option<Refusal> {
    if scheme_of(url).as_deref() == Some("chrome-error") {
        return None;
    }
    refusal(url, rules)
}

/// The policy's copy for the extension's last-hop gate (`schemes.set`): the file roots (symbolic links resolved,
/// since the extension cannot resolve them), the extra schemes, and the upload roots (`[files] upload_roots` and the
/// staging directory of files the user approved for one upload) its upload gate checks `DOM.setFileInputFiles` with.
#[must_use]
pub fn gate_copy(config: &crate::config::BrokerConfig) -> Value {
    let resolved = |dirs: &[std::path::PathBuf]| -> Vec<String> { dirs.iter().map(|r| resolved_dir(r)).collect() };
    let uploads = crate::policy::files::chromium_config(&config.files).upload_roots;
    json!({
        "fileRoots": resolved(&config.files.file_url_roots),
        "extra": config.schemes.allow,
        "uploadRoots": resolved(&uploads),
    })
}

/// `dir` with symbolic links resolved as far as it exists (a directory made later, such as the staging directory of
/// approved uploads, keeps its missing tail).
fn resolved_dir(dir: &std::path::Path) -> String {
    let mut missing = Vec::new();
    let mut at = dir.to_path_buf();
    loop {
        if let Ok(real) = std::fs::canonicalize(&at) {
            let whole = missing.iter().rev().fold(real, |p: std::path::PathBuf, part| p.join(part));
            return whole.display().to_string();
        }
        match (at.file_name().map(std::ffi::OsStr::to_os_string), at.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name);
                at = parent.to_path_buf();
            }
            _ => return dir.display().to_string(),
        }
    }
}

/// Why `url` may not be shown in a tab an agent controls; `None` when it may.
#[must_use]
pub fn refusal(url: &str, rules: Rules<'_>) -> Option<Refusal> {
    let Some(scheme) = scheme_of(url) else {
        return Some(Refusal { scheme: String::new(), why: Why::NotAbsolute });
    };
    if rules.extra.contains(&scheme) && scheme != "javascript" && scheme != "file" {
        return None;
    }
    let why = match scheme.as_str() {
        "http" | "https" => return None,
        "about" => {
            let rest = cleaned(url)[6..].to_ascii_lowercase();
            let page = rest.split(['?', '#']).next().unwrap_or_default();
            if page == "blank" {
                return None;
            }
            Why::Internal
        }
        "file" => match file_path(url) {
            Some(path) if inside(&path, rules.file_roots) => return None,
            Some(_) => Why::FileOutsideRoots,
            None => Why::FileRemote,
        },
        "javascript" => Why::Script,
        "data" | "blob" | "filesystem" => Why::Inline,
        "chrome" | "chrome-extension" | "chrome-untrusted" | "chrome-search" | "devtools" | "view-source" | "edge"
        | "brave" | "opera" | "vivaldi" | "extension" | "moz-extension" | "intent" | "googlechrome" => Why::Internal,
        _ => Why::Other,
    };
    Some(Refusal { scheme, why })
}

/// The local path of a `file:` URL (percent-decoded, dot segments resolved); `None` for a file URL naming another
/// host.
#[must_use]
pub fn file_path(url: &str) -> Option<PathBuf> {
    let cleaned = cleaned(url);
    let rest = &cleaned[cleaned.find(':')? + 1..];
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let rest = rest.replace('\\', "/");
    let path = match rest.strip_prefix("//") {
        Some(after) => {
            let (host, path) = after.split_at(after.find('/').unwrap_or(after.len()));
            if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
                return None;
            }
            path.to_owned()
        }
        None => rest,
    };
    let decoded = percent_decode(&path);
    let mut out = PathBuf::from("/");
    for part in Path::new(&decoded).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(p) => out.push(p),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Some(out)
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"), 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `path` is inside one of `roots`, symbolic links resolved on both sides where they exist.
fn inside(path: &Path, roots: &[PathBuf]) -> bool {
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    roots.iter().any(|root| {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
        root.is_absolute() && real.starts_with(&root)
    })
}

/// Why a URL is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// Not an absolute URL.
    NotAbsolute,
    /// `javascript:`.
    Script,
    /// `data:`, `blob:`, `filesystem:` at top level.
    Inline,
    /// `file:` outside every configured root.
    FileOutsideRoots,
    /// `file:` naming another host.
    FileRemote,
    /// A browser-internal or extension page.
    Internal,
    /// Any other scheme.
    Other,
}

/// A refused URL: its scheme and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The scheme, lower case (empty when there is none).
    pub scheme: String,
    /// Why.
    pub why: Why,
}

/// What the call was doing with the URL, for the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doing {
    /// `browser_open` or a `navigate` action: nothing was sent.
    Navigate,
    /// The target tab shows the URL now: nothing was sent.
    TabShows,
    /// The call ran and the tab then showed the URL: its answer is withheld.
    Landed,
}

impl Refusal {
    /// The `POLICY_DENIED` error naming the scheme and what to do next.
    #[must_use]
    pub fn error(&self, doing: Doing, tab: Option<TabHandle>) -> ErrorData {
        let s = &self.scheme;
        let what = match self.why {
            Why::NotAbsolute => {
                "a URL without a scheme is refused (browserd opens only http:, https: and about:blank)".to_owned()
            }
            Why::Script => "`javascript:` URLs are refused: they run script in the page, and script is the advanced \
                            tier's `browser_evaluate`, off unless the user enabled it"
                .to_owned(),
            Why::Inline => format!("`{s}:` URLs are refused at top level (their content comes from the caller)"),
            Why::FileOutsideRoots => "`file:` URLs are refused outside the directories the user allowed \
                                      (`files.file_url_roots` in the config)"
                .to_owned(),
            Why::FileRemote => "`file:` URLs naming another host are refused".to_owned(),
            Why::Internal => format!("`{s}:` pages (the browser's own settings, extensions and tools) are refused"),
            Why::Other => format!("`{s}:` URLs are refused (browserd opens only http:, https: and about:blank)"),
        };
        let tab_name = tab.map_or_else(|| "the tab".to_owned(), |t| format!("tab {}", t.0));
        let (message, outcome) = match doing {
            Doing::Navigate => (format!("{what}; nothing was sent to the browser"), "notDispatched"),
            Doing::TabShows => (
                format!("{tab_name} shows a page of a refused scheme: {what}; nothing was read or sent"),
                "notDispatched",
            ),
            Doing::Landed => (
                format!(
                    "the call ran and {tab_name} then showed a page of a refused scheme: {what}; what the page shows \
                     is withheld"
                ),
                "unknown",
            ),
        };
        let next = match (self.why, doing) {
            (Why::NotAbsolute, _) => "give a full URL starting with https:// or http://".to_owned(),
            (Why::Script, Doing::Navigate) => {
                "act on the page with browser_act (click, type, …) instead; if script is really needed, ask the user \
                 to enable the advanced tier (`[advanced] enabled = true`) and use browser_evaluate"
                    .to_owned()
            }
            (Why::FileOutsideRoots, Doing::Navigate) => {
                "ask the user to add the file's directory to `file_url_roots` in the `[files]` section of the \
                 browserd config (`browserd config` shows the file), or serve the file over http"
                    .to_owned()
            }
            (Why::FileOutsideRoots, _) => format!(
                "navigate {tab_name} to an http(s) URL or close it with browser_close; to allow this directory the \
                 user adds it to `[files] file_url_roots` in the browserd config"
            ),
            (_, Doing::Navigate) => {
                "use an http(s) URL; pages of this kind are for the user to open themselves".to_owned()
            }
            _ => format!("navigate {tab_name} to an http(s) URL or close it with browser_close"),
        };
        let mut details = json!({"scheme": s, "policy": "schemes", "outcome": outcome});
        if let Some(t) = tab {
            details["tab"] = json!(t.0);
        }
        ErrorData::new(ErrorCode::PolicyDenied, message).with_next_step(next).with_details(details)
    }
}

/// The URLs a call names (open, navigate, batch steps that navigate).
fn named_urls(call: &ToolCall) -> Vec<&str> {
    fn navigate(p: &browserd_protocol::ActParams) -> Option<&str> {
        if p.action == ActionKind::Navigate { p.value.as_deref() } else { None }
    }
    match call {
        ToolCall::Open(p) => vec![p.url.as_str()],
        ToolCall::Act(p) => navigate(p).into_iter().collect(),
        ToolCall::Batch(p) => p.steps.iter().filter_map(navigate).collect(),
        _ => Vec::new(),
    }
}

/// The tab a page tool targets (named or the session's current tab), and whether a navigation away from a refused
/// page is all it does (allowed: it is how a tab leaves such a page).
fn target_tab(broker: &Broker, session: &browserd_protocol::SessionId, call: &ToolCall) -> Option<TabHandle> {
    let named = |t: Option<browserd_protocol::TabId>| broker.tab_for(session, t).ok();
    match call {
        ToolCall::Act(p) if p.action == ActionKind::Navigate => None,
        ToolCall::Act(p) => named(p.tab),
        ToolCall::Batch(p) if p.steps.first().is_some_and(|s| s.action == ActionKind::Navigate) => None,
        ToolCall::Batch(p) => named(p.tab),
        ToolCall::Observe(p) => named(p.tab),
        ToolCall::Claim(p) => Some(crate::to_proto::tab_handle(p.tab)),
        ToolCall::Evaluate(p) => Some(crate::to_proto::tab_handle(p.tab)),
        ToolCall::RawProtocol(p) => Some(crate::to_proto::tab_handle(p.tab)),
        ToolCall::Console(p) => Some(crate::to_proto::tab_handle(p.tab)),
        ToolCall::Network(p) => Some(crate::to_proto::tab_handle(p.tab)),
        _ => None,
    }
}

/// Whether [`after`] must look at the call's answer.
#[must_use]
pub fn answers_with_page(call: &ToolCall) -> bool {
    matches!(
        call,
        ToolCall::Open(_)
            | ToolCall::Claim(_)
            | ToolCall::Observe(_)
            | ToolCall::Act(_)
            | ToolCall::Batch(_)
            | ToolCall::Evaluate(_)
            | ToolCall::RawProtocol(_)
    )
}

/// The check before a tool runs: every URL the call names, then the URL its target tab shows now (browser events
/// applied first). The first refusal is the answer; nothing was sent.
///
/// # Errors
/// `POLICY_DENIED` naming the scheme and what to do.
pub(crate) async fn before(
    broker: &Broker,
    _key: &SessionKey,
    session: &browserd_protocol::SessionId,
    call: &ToolCall,
) -> Result<(), ErrorData> {
    let rules = Rules::of(&broker.config);
    for url in named_urls(call) {
        if let Some(r) = refusal(url, rules) {
            return Err(r.error(Doing::Navigate, None));
        }
    }
    let Some(tab) = target_tab(broker, session, call) else { return Ok(()) };
    broker.runtime.apply_events().await;
    let url = broker.runtime.inspect(|e| e.tabs().get(tab).filter(|r| r.alive).map(|r| r.url.clone()));
    match url.and_then(|u| shown_refusal(&u, rules)) {
        Some(r) => Err(r.error(Doing::TabShows, Some(tab))),
        None => Ok(()),
    }
}

/// The check after a tool ran: an answer showing a refused URL anywhere (an observation's `url`, an action's
/// `effects.navigated`, a tab result's `url`) is replaced by `POLICY_DENIED`; the page's content never leaves the
/// broker. The error keeps what the call did (`details.outcome` of an action: it ran).
pub(crate) fn after(broker: &Broker, result: &mut Result<Value, ErrorData>) {
    let Ok(value) = result else { return };
    let rules = Rules::of(&broker.config);
    let mut found = None;
    visit_urls(value, &mut |url| {
        if found.is_none() {
            found = shown_refusal(url, rules);
        }
    });
    let Some(refused) = found else { return };
    let tab = value.get("tab").and_then(Value::as_u64).map(TabHandle);
    let mut error = refused.error(Doing::Landed, tab);
    if let (Some(Value::Object(details)), Some(outcome)) = (error.details.as_deref_mut(), value.get("outcome")) {
        details.insert("outcome".to_owned(), outcome.clone());
        if let Some(dispatch) = value.get("dispatch") {
            details.insert("dispatch".to_owned(), dispatch.clone());
        }
    }
    *result = Err(error);
}

/// Calls `f` with every page URL in an answer: `url` and `navigated` strings at any depth (observations, action
/// effects, batch steps, tab results). Tab lists (`tabs`, `tabsOpened`) are names, not pages shown: skipped.
fn visit_urls(value: &Value, f: &mut dyn FnMut(&str)) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("url" | "navigated", Value::String(url)) if !url.is_empty() => f(url),
                    ("tabs" | "tabsOpened", _) => {}
                    _ => visit_urls(v, f),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| visit_urls(v, f)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_are_read_as_a_browser_reads_them() {
        assert_eq!(scheme_of("https://a.test/").as_deref(), Some("https"));
        assert_eq!(scheme_of("  JaVaScRiPt:alert(1)").as_deref(), Some("javascript"));
        assert_eq!(scheme_of("java\tscr\nipt:alert(1)").as_deref(), Some("javascript"));
        assert_eq!(scheme_of("\u{1}chrome://settings").as_deref(), Some("chrome"));
        assert_eq!(scheme_of("example.com/path"), None);
        assert_eq!(scheme_of("1http://x"), None);
    }

    #[test]
    fn only_http_https_and_about_blank_pass_by_default() {
        for ok in ["http://127.0.0.1:8080/x", "https://example.com", "about:blank", "ABOUT:BLANK#x", "about:blank?"] {
            assert_eq!(refusal(ok, Rules::default()), None, "{ok}");
        }
        for (bad, why) in [
            ("javascript:void(document.title='pwned')", Why::Script),
            (" javascript:alert(1)", Why::Script),
            ("data:text/html,<h1>x</h1>", Why::Inline),
            ("blob:https://a.test/uuid", Why::Inline),
            ("file:///etc/passwd", Why::FileOutsideRoots),
            ("file://otherhost/share/x", Why::FileRemote),
            ("chrome://settings", Why::Internal),
            ("chrome-extension://abc/popup.html", Why::Internal),
            ("devtools://devtools/bundled/inspector.html", Why::Internal),
            ("view-source:https://a.test/", Why::Internal),
            ("about:settings", Why::Internal),
            ("about:srcdoc", Why::Internal),
            ("ftp://a.test/", Why::Other),
            ("www.example.com", Why::NotAbsolute),
        ] {
            assert_eq!(refusal(bad, Rules::default()).map(|r| r.why), Some(why), "{bad}");
        }
    }

    #[test]
    fn file_urls_pass_only_inside_a_configured_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("allowed");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("a b.html"), "x").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
        let root_list = vec![root.clone()];
        let roots = Rules { file_roots: &root_list, extra: &[] };
        let url = |p: &Path| format!("file://{}", p.display()).replace(' ', "%20");
        assert_eq!(refusal(&url(&root.join("a b.html")), roots), None);
        assert_eq!(refusal(&format!("file://localhost{}/", root.display()), roots), None);
        // Dot segments, encoded or not, and symbolic links do not leave the root.
        let escape = format!("{}/../secret.txt", url(&root));
        assert_eq!(refusal(&escape, roots).map(|r| r.why), Some(Why::FileOutsideRoots));
        let encoded = format!("{}/%2e%2e/secret.txt", url(&root));
        assert_eq!(refusal(&encoded, roots).map(|r| r.why), Some(Why::FileOutsideRoots));
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("link.txt")).unwrap();
        assert_eq!(refusal(&url(&root.join("link.txt")), roots).map(|r| r.why), Some(Why::FileOutsideRoots));
        assert_eq!(refusal("file:///etc/passwd", roots).map(|r| r.why), Some(Why::FileOutsideRoots));
        // A relative root never matches.
        let relative = [PathBuf::from("allowed")];
        assert!(refusal(&url(&root.join("a b.html")), Rules { file_roots: &relative, extra: &[] }).is_some());
    }

    #[test]
    fn extra_schemes_can_be_allowed_but_never_javascript_or_file() {
        let mut c = SchemesConfig::default();
        c.set_allow(&["data:".into(), " Blob ".into()]).unwrap();
        assert_eq!(c.allow, ["data", "blob"]);
        let rules = Rules { file_roots: &[], extra: &c.allow };
        assert_eq!(refusal("data:text/html,<p>x", rules), None);
        assert!(refusal("chrome://settings", rules).is_some());
        assert!(c.set_allow(&["javascript".into()]).unwrap_err().contains("cannot be allowed"));
        assert!(c.set_allow(&["file".into()]).unwrap_err().contains("file_url_roots"));
        assert!(c.set_allow(&["no scheme".into()]).is_err());
        let forced = ["javascript".to_owned()];
        assert!(refusal("javascript:1", Rules { file_roots: &[], extra: &forced }).is_some());
    }

    #[test]
    fn the_browsers_error_page_may_be_shown_but_not_navigated_to() {
        let error_page = "chrome-error://chromewebdata/";
        assert_eq!(shown_refusal(error_page, Rules::default()), None);
        assert!(refusal(error_page, Rules::default()).is_some());
        assert!(shown_refusal("chrome://settings", Rules::default()).is_some());
    }

    #[test]
    fn the_error_names_the_scheme_and_the_next_step() {
        let e = refusal("javascript:alert(1)", Rules::default()).unwrap().error(Doing::Navigate, None);
        assert_eq!(e.code, ErrorCode::PolicyDenied);
        assert!(e.message.contains("`javascript:`") && e.message.contains("nothing was sent"), "{e}");
        assert!(e.next_step.contains("browser_evaluate"), "{e}");
        let e = refusal("file:///etc/passwd", Rules::default()).unwrap().error(Doing::Navigate, None);
        assert!(e.next_step.contains("file_url_roots") && e.next_step.contains("[files]"), "{e}");
        let e = refusal("chrome://settings", Rules::default()).unwrap().error(Doing::TabShows, Some(TabHandle(4)));
        assert!(e.message.contains("tab 4") && e.message.contains("`chrome:`"), "{e}");
        assert_eq!(e.details.as_deref().unwrap()["scheme"], "chrome");
    }

    #[test]
    fn answers_are_searched_for_page_urls_but_not_tab_lists() {
        let mut seen = Vec::new();
        let answer = json!({"url": "https://a.test/", "effects": {"navigated": "file:///etc/passwd",
            "tabsOpened": [{"url": "chrome://x"}]}, "observation": {"url": "about:blank"}});
        visit_urls(&answer, &mut |u| seen.push(u.to_owned()));
        seen.sort();
        assert_eq!(seen, ["about:blank", "file:///etc/passwd", "https://a.test/"]);
    }
}
