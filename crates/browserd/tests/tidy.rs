//! Architecture checks as ordinary tests (tidy style), run over the workspace's own files: the core names no
//! browser (no browser crate among its dependencies, no CDP method or `chrome.*` in its sources), every product
//! source file opens with a line saying what it is for, and no product file grows past 1 000 lines without a reason
//! written below.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Product files allowed over [`MAX_LINES`], each with the reason. An entry whose file is back under the limit (or
/// gone) fails the check too, so the list never outlives its reasons.
const ALLOWED_LONG: &[(&str, &str)] = &[];

/// The most lines a product file may have before its `#[cfg(test)]` module.
const MAX_LINES: usize = 1_000;

/// The crates that must stay browser-free.
const CORE_CRATES: &[&str] = &["browserd-core", "browserd-protocol"];

/// Crates that reach a browser (or sit above the core): none of them may be a dependency of [`CORE_CRATES`], directly
/// or through another workspace crate.
const BROWSER_CRATES: &[&str] = &[
    "browserd-cdp",
    "browserd-chromium",
    "browserd-native",
    "browserd-broker",
    "browserd-mcp",
    "browserd-bench",
    "browserd",
    "tokio-tungstenite",
    "tungstenite",
    "chromiumoxide",
    "chromiumoxide_cdp",
    "headless_chrome",
    "fantoccini",
    "thirtyfour",
    "playwright",
];

/// The Chrome DevTools Protocol's domains; `Domain.method` (or `Domain.event`) in a core source is a CDP name.
const CDP_DOMAINS: &[&str] = &[
    "Accessibility",
    "Animation",
    "Audits",
    "Autofill",
    "BackgroundService",
    "Browser",
    "CSS",
    "CacheStorage",
    "Cast",
    "Console",
    "DOM",
    "DOMDebugger",
    "DOMSnapshot",
    "DOMStorage",
    "Debugger",
    "DeviceAccess",
    "DeviceOrientation",
    "Emulation",
    "EventBreakpoints",
    "Extensions",
    "FedCm",
    "Fetch",
    "HeadlessExperimental",
    "HeapProfiler",
    "IO",
    "IndexedDB",
    "Input",
    "Inspector",
    "LayerTree",
    "Log",
    "Media",
    "Memory",
    "Network",
    "Overlay",
    "PWA",
    "Page",
    "Performance",
    "PerformanceTimeline",
    "Preload",
    "Profiler",
    "Runtime",
    "Schema",
    "Security",
    "ServiceWorker",
    "Storage",
    "SystemInfo",
    "Target",
    "Tethering",
    "Tracing",
    "WebAudio",
    "WebAuthn",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the workspace root exists")
}

fn rel(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).to_string_lossy().replace('\\', "/")
}

/// Every file under `dir` whose name ends with one of `exts`, skipping build output and installed packages.
fn files(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | "node_modules" | ".git") {
                    stack.push(path);
                }
            } else if exts.iter().any(|e| name.ends_with(e)) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The workspace's crates: `crates/*/`, by package name.
fn workspace_crates() -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    for entry in fs::read_dir(root().join("crates")).expect("crates/ is readable").flatten() {
        let manifest = entry.path().join("Cargo.toml");
        let Ok(text) = fs::read_to_string(&manifest) else { continue };
        let doc: toml::Table = text.parse().unwrap_or_else(|e| panic!("{} parses: {e}", rel(&manifest)));
        if let Some(name) = doc.get("package").and_then(|p| p.get("name")).and_then(|n| n.as_str()) {
            out.insert(name.to_owned(), entry.path());
        }
    }
    out
}

/// The package names `manifest` depends on to build and run (`[dependencies]`, `[build-dependencies]` and their
/// `[target.*]` forms; dev-dependencies are tests only). A renamed dependency counts by its package name.
fn runtime_dependencies(manifest: &toml::Table, workspace: &toml::Table) -> BTreeSet<String> {
    let ws_deps = workspace.get("workspace").and_then(|w| w.get("dependencies")).and_then(|d| d.as_table());
    let mut tables: Vec<&toml::Table> = Vec::new();
    for key in ["dependencies", "build-dependencies"] {
        tables.extend(manifest.get(key).and_then(|t| t.as_table()));
        if let Some(targets) = manifest.get("target").and_then(|t| t.as_table()) {
            tables.extend(targets.values().filter_map(|t| t.get(key)).filter_map(|t| t.as_table()));
        }
    }
    let mut out = BTreeSet::new();
    for table in tables {
        for (key, spec) in table {
            let inherited = spec.get("workspace").and_then(toml::Value::as_bool) == Some(true);
            let package = spec
                .get("package")
                .or_else(
                    || if inherited { ws_deps.and_then(|d| d.get(key)).and_then(|d| d.get("package")) } else { None },
                )
                .and_then(|p| p.as_str());
            out.insert(package.unwrap_or(key).to_owned());
        }
    }
    out
}

/// Paths like `browserd-core → browserd-foo → browserd-cdp` from each of `roots` to a crate in `forbidden`, following
/// workspace crates' runtime dependencies.
fn forbidden_paths(roots: &[&str], forbidden: &[&str]) -> Vec<String> {
    let workspace: toml::Table =
        fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml is readable").parse().expect("parses");
    let crates = workspace_crates();
    let deps_of = |name: &str| -> BTreeSet<String> {
        let Some(dir) = crates.get(name) else { return BTreeSet::new() };
        let manifest = dir.join("Cargo.toml");
        let doc: toml::Table = fs::read_to_string(&manifest).expect("readable").parse().expect("parses");
        runtime_dependencies(&doc, &workspace)
    };
    let mut out = Vec::new();
    for &start in roots {
        let mut seen = BTreeSet::from([start.to_owned()]);
        let mut queue = vec![vec![start.to_owned()]];
        while let Some(path) = queue.pop() {
            let last = path.last().expect("non-empty").clone();
            for dep in deps_of(&last) {
                let mut next = path.clone();
                next.push(dep.clone());
                if forbidden.contains(&dep.as_str()) {
                    out.push(next.join(" → "));
                } else if crates.contains_key(&dep) && seen.insert(dep) {
                    queue.push(next);
                }
            }
        }
    }
    out.sort();
    out
}

/// Where `line` names a CDP method or event (`Page.navigate`, `"Runtime.evaluate"`) or a `chrome.*` API
/// (`chrome.debugger`): the names found.
fn browser_names(line: &str) -> Vec<String> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    for domain in CDP_DOMAINS.iter().copied().chain(["chrome"]) {
        let needle = format!("{domain}.");
        let mut from = 0;
        while let Some(at) = line[from..].find(&needle) {
            let start = from + at;
            let end = start + needle.len();
            from = end;
            let before_ok =
                start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || b"_.:".contains(&bytes[start - 1]));
            let member: String = line[end..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            // A CDP method starts lower-case (`navigate`); `chrome.` is followed by an API name.
            let member_ok = member.len() >= 2 && member.starts_with(|c: char| c.is_ascii_lowercase());
            if before_ok && member_ok {
                out.push(format!("{domain}.{member}"));
            }
        }
    }
    out
}

/// The number of lines before the first `#[cfg(test)]` line (the whole file when there is none).
fn product_lines(text: &str) -> usize {
    text.lines().take_while(|l| !l.trim_start().starts_with("#[cfg(test)]")).count()
}

/// The product source files the `//!`-line and size checks look at: `crates/*/src/**/*.rs`, `extension/*.js` and
/// `adapters/**/*.mjs`.
fn product_files() -> Vec<PathBuf> {
    let root = root();
    let mut out = Vec::new();
    for entry in fs::read_dir(root.join("crates")).expect("crates/ is readable").flatten() {
        out.extend(files(&entry.path().join("src"), &[".rs"]));
    }
    let extension: Vec<PathBuf> = fs::read_dir(root.join("extension"))
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "js")).collect())
        .unwrap_or_default();
    out.extend(extension);
    out.extend(files(&root.join("adapters"), &[".mjs"]));
    out.sort();
    out
}

/// Whether `text` opens with the line saying what the file is for: `//!` in Rust, a comment in JavaScript (after
/// a `#!` line, if any).
fn opens_with_purpose(path: &Path, text: &str) -> bool {
    let mut lines = text.lines();
    let mut first = lines.next().unwrap_or("");
    if path.extension().is_some_and(|e| e == "rs") {
        return first.starts_with("//!");
    }
    if first.starts_with("#!") {
        first = lines.next().unwrap_or("");
    }
    first.starts_with("//") || first.starts_with("/*")
}

#[test]
fn core_and_protocol_depend_on_no_browser_crate() {
    let found = forbidden_paths(CORE_CRATES, BROWSER_CRATES);
    assert!(
        found.is_empty(),
        "the core must reach browsers only through the Provider trait, but it depends on a browser crate \
         (read from the crates' Cargo.toml [dependencies]):\n  {}\nMove the browser-facing code into \
         browserd-chromium (or another provider crate) and keep the core's dependencies browser-free.",
        found.join("\n  ")
    );
}

#[test]
fn core_and_protocol_sources_name_no_cdp_method_or_chrome_api() {
    let root = root();
    let mut found = Vec::new();
    for krate in CORE_CRATES {
        for path in files(&root.join("crates").join(krate), &[".rs"]) {
            let text = fs::read_to_string(&path).expect("readable");
            for (n, line) in text.lines().enumerate() {
                for name in browser_names(line) {
                    found.push(format!("{}:{}: {name}   | {}", rel(&path), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "browserd-core and browserd-protocol never name CDP or chrome.* (ARCHITECTURE.md, the core's invariant); \
         found:\n  {}\nSay it in browserd's own words (the Provider trait) and keep the browser's names in \
         browserd-chromium or the extension.",
        found.join("\n  ")
    );
}

#[test]
fn every_product_source_file_opens_with_what_it_is_for() {
    let missing: Vec<String> = product_files()
        .into_iter()
        .filter(|p| !opens_with_purpose(p, &fs::read_to_string(p).expect("readable")))
        .map(|p| rel(&p))
        .collect();
    assert!(
        missing.is_empty(),
        "these product source files do not open with a line saying what they are for (`//!` in Rust, a leading \
         comment in JavaScript):\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn no_product_file_over_1000_lines_without_a_written_reason() {
    let allowed: BTreeMap<&str, &str> = ALLOWED_LONG.iter().copied().collect();
    let mut sizes: Vec<(usize, String)> = product_files()
        .into_iter()
        .map(|p| (product_lines(&fs::read_to_string(&p).expect("readable")), rel(&p)))
        .collect();
    sizes.sort_by(|a, b| b.cmp(a));
    let long: Vec<&(usize, String)> = sizes.iter().filter(|(n, _)| *n > MAX_LINES).collect();
    let mut problems: Vec<String> = long
        .iter()
        .filter(|(_, p)| allowed.get(p.as_str()).is_none_or(|r| r.trim().is_empty()))
        .map(|(n, p)| {
            format!("{p}: {n} lines before #[cfg(test)] — split it by job, or add it to ALLOWED_LONG with a reason")
        })
        .collect();
    for (path, _) in ALLOWED_LONG {
        if !long.iter().any(|(_, p)| p == path) {
            let now = sizes.iter().find(|(_, p)| p == path).map_or("gone".to_owned(), |(n, _)| format!("{n} lines"));
            problems.push(format!("{path}: in ALLOWED_LONG but {now}; remove the entry"));
        }
    }
    println!("product files over {MAX_LINES} lines (counted before #[cfg(test)]):");
    for (n, p) in &long {
        let note = allowed.get(p.as_str()).map_or("NOT ALLOWED".to_owned(), |r| format!("allowed: {r}"));
        println!("  {n:>5}  {p}  ({note})");
    }
    assert!(
        problems.is_empty(),
        "product files over {MAX_LINES} lines without a written reason:\n  {}",
        problems.join("\n  ")
    );
}

// The detectors themselves, on lines made up for the purpose: each check above can fail.

#[test]
fn a_cdp_method_or_chrome_api_is_detected_and_prose_is_not() {
    assert_eq!(browser_names(r#"cdp.call("Page.navigate", json!({}))"#), ["Page.navigate"]);
    assert_eq!(
        browser_names("// sends Runtime.evaluate, then Input.dispatchMouseEvent"),
        ["Input.dispatchMouseEvent", "Runtime.evaluate"]
    );
    assert_eq!(browser_names("await chrome.debugger.attach(target)"), ["chrome.debugger"]);
    assert_eq!(browser_names("\"Target.setAutoAttach\""), ["Target.setAutoAttach"]);
    assert!(browser_names("the Runtime. The runtime::Runtime::new, self.page.url, Page.Foo").is_empty());
    assert!(browser_names("never names CDP or `chrome.*`; LifecycleRuntime.x").is_empty());
}

#[test]
fn a_browser_dependency_is_found_directly_and_through_a_workspace_crate() {
    let manifest: toml::Table = r#"
        [dependencies]
        browserd-protocol.workspace = true
        ws = { package = "tokio-tungstenite", version = "0.30" }
        [target.'cfg(unix)'.dependencies]
        browserd-cdp = { path = "../browserd-cdp" }
        [dev-dependencies]
        browserd-chromium.workspace = true
    "#
    .parse()
    .expect("parses");
    let deps = runtime_dependencies(&manifest, &toml::Table::new());
    assert_eq!(deps, BTreeSet::from(["browserd-cdp", "browserd-protocol", "tokio-tungstenite"].map(str::to_owned)));
    // The real graph: the broker reaches the CDP crate through browserd-chromium.
    let found = forbidden_paths(&["browserd-broker"], &["browserd-cdp"]);
    assert!(found.iter().any(|p| p.starts_with("browserd-broker → ") && p.ends_with("browserd-cdp")), "{found:?}");
}

#[test]
fn purpose_lines_and_product_lines_are_read_as_meant() {
    assert!(opens_with_purpose(Path::new("a.rs"), "//! What it is for.\nuse x;"));
    assert!(!opens_with_purpose(Path::new("a.rs"), "use x;\n//! late"));
    assert!(!opens_with_purpose(Path::new("a.rs"), "// a plain comment\n"));
    assert!(opens_with_purpose(Path::new("a.mjs"), "#!/usr/bin/env node\n// What it is for.\n"));
    assert!(!opens_with_purpose(Path::new("a.js"), "import x from 'y';\n"));
    assert_eq!(product_lines("a\nb\n#[cfg(test)]\nmod tests {}\n"), 2);
    assert_eq!(product_lines("a\nb\nc\n"), 3);
}
