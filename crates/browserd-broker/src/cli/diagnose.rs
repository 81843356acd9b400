//! `browserd diagnose`: a redacted diagnostics bundle — versions (browserd, Chromium, extension, OS), the effective
//! config with secrets hidden, the broker's `status`, recent audit metadata from the journal and the broker's recent
//! log lines — previewed on stdout and written (one JSON file, mode 0600) only with `--write PATH`.
//!
//! The bundle is one JSON file rather than a `.tar.gz`: every part is text the user can read before sending it,
//! nothing needs unpacking, and no archive dependency is added. What is taken out is in [`crate::redact`]: URL
//! queries, fragments and userinfo everywhere, page titles, and every log line but the broker's own `INFO`+ events
//! (the browser's captured output carries console messages — page text and typed values — and `DEBUG`/`TRACE` may
//! carry protocol payloads). The audit rows hold no free text by construction (`browserd-journal`'s audit module).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use browserd_protocol::hello::ComponentRole;
use browserd_protocol::lifecycle::StatusParams;
use serde_json::{Value, json};

use super::config::to_camel;
use crate::client::{Client, ClientError, ConnectOptions};
use crate::config;
use crate::redact::{self, Dropped};

/// Audit rows included (newest first).
const AUDIT_ROWS: u32 = 200;
/// Log lines read from the end of `broker.log`.
const LOG_LINES_READ: usize = 2000;
/// Log lines kept at most (the newest).
const LOG_LINES_KEPT: usize = 500;

/// The extension version this build ships (`extension/manifest.json`).
const BUNDLED_EXTENSION_MANIFEST: &str = include_str!("../../../../extension/manifest.json");

pub(super) async fn run(write: Option<&Path>, json_out: bool) -> i32 {
    let bundle = match build().await {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let text = serde_json::to_string_pretty(&bundle).unwrap_or_default();
    if json_out {
        println!("{text}");
    } else {
        print!("{}", preview(&bundle, text.len()));
    }
    let Some(target) = write else {
        if !json_out {
            println!("nothing written; run `browserd diagnose --write PATH` to write this bundle to PATH");
        }
        return 0;
    };
    match write_bundle(target, &text) {
        Ok(path) => {
            eprintln!("wrote {} ({}, mode 0600); read it before you share it", path.display(), size(text.len()));
            0
        }
        Err(e) => {
            eprintln!("error: cannot write the diagnostics bundle: {e}");
            eprintln!("  next: run `browserd diagnose --write PATH` with a new file or an existing directory");
            1
        }
    }
}

/// Collects every section.
async fn build() -> Result<Value, String> {
    let effective = config::load().map_err(|e| e.to_string())?;
    let env = |name: &str| std::env::var(name).ok();
    // Looked up, never created: diagnose writes nothing without `--write`.
    let runtime = browserd_ipc::default_runtime_dir().0;
    let runtime = runtime.is_dir().then_some(runtime);
    let status = if runtime.is_some() { status().await } else { json!({"running": false}) };
    let journal = status
        .get("status")
        .and_then(|s| s["journal"]["path"].as_str())
        .map(PathBuf::from)
        .or_else(|| config::state_dir(&env).map(|d| d.join(browserd_journal::FILE_NAME)));
    Ok(json!({
        "kind": "browserd-diagnostics",
        "format": 1,
        "createdAtMs": now_ms(),
        "redaction": "URL queries, fragments and userinfo cut (`?…`); page titles withheld; secrets in the config \
                      hidden; log lines: only the broker's own INFO/WARN/ERROR events (no DEBUG/TRACE, no browser \
                      output such as console messages); audit rows are metadata only (no page text, paths or \
                      queries)",
        "versions": versions(&effective.config, runtime.as_deref()).await,
        "config": redact::scrub_json(&config_section(&effective)),
        "status": status,
        "audit": audit(journal.as_deref()),
        "logs": logs(runtime.as_ref().map(|d| d.join("broker.log")).as_deref()),
    }))
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// browserd, Chromium (`--version` of the executable the broker would use), the extension (bundled and paired), OS.
async fn versions(config: &config::BrokerConfig, runtime: Option<&Path>) -> Value {
    let chromium = match browserd_cdp::find_executable(config.chromium_path.as_deref()) {
        Ok(exe) => {
            let run = tokio::process::Command::new(&exe).arg("--version").kill_on_drop(true).output();
            match tokio::time::timeout(Duration::from_secs(10), run).await {
                Ok(Ok(out)) if out.status.success() => json!({"executable": exe, "version":
                    String::from_utf8_lossy(&out.stdout).trim()}),
                Ok(Ok(out)) => json!({"executable": exe, "error": format!("`--version` exited with {}", out.status)}),
                Ok(Err(e)) => json!({"executable": exe, "error": e.to_string()}),
                Err(_) => json!({"executable": exe, "error": "`--version` did not answer within 10 s"}),
            }
        }
        Err(e) => json!({"error": e.to_string()}),
    };
    let bundled = serde_json::from_str::<Value>(BUNDLED_EXTENSION_MANIFEST)
        .ok()
        .and_then(|m| m["version"].as_str().map(str::to_owned));
    let endpoint = std::env::var_os(browserd_native::host::SOCKET_ENV)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| runtime.map(|d| d.join(browserd_native::host::SOCKET_NAME)));
    let paired = match endpoint {
        Some(path) if path.exists() => match browserd_native::link::probe(&path).await {
            Ok(Some(ext)) => json!({
                "extensionId": ext["extensionId"],
                "version": ext["components"]["extension"],
                "hostVersion": ext["hostVersion"],
                "protocolVersion": ext["protocolVersion"],
            }),
            Ok(None) => json!("none paired"),
            Err(e) => json!(format!("the extension endpoint did not answer: {e}")),
        },
        _ => json!("no extension endpoint (no broker running, or it does not listen for the extension)"),
    };
    let os_release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let os_name = os_release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_owned())
        .unwrap_or_else(|| std::env::consts::OS.to_owned());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|k| k.trim().to_owned()).ok();
    json!({
        "browserd": env!("CARGO_PKG_VERSION"),
        "chromium": chromium,
        "extension": {"bundled": bundled, "paired": paired},
        "os": {"name": os_name, "kernel": kernel, "arch": std::env::consts::ARCH},
    })
}

/// Like `browserd config --json` (secrets are hidden by the config's own serialization).
fn config_section(effective: &config::Effective) -> Value {
    let all = serde_json::to_value(&effective.config).unwrap_or_default();
    let values: serde_json::Map<String, Value> = config::KEYS
        .iter()
        .map(|k| {
            let value = match k.split_once('.') {
                Some((section, key)) => all.get(to_camel(section)).and_then(|s| s.get(to_camel(key))).cloned(),
                None => all.get(to_camel(k)).cloned(),
            };
            ((*k).to_owned(), json!({"value": value, "source": effective.sources.get(k)}))
        })
        .collect();
    json!({"file": effective.file, "fileExists": effective.file_exists, "values": values})
}

/// The running broker's `status` (never starts one), scrubbed.
async fn status() -> Value {
    let options = ConnectOptions { spawn: false, ..ConnectOptions::new(ComponentRole::Cli) };
    let client = match Client::connect(&options).await {
        Ok(c) => c,
        Err(ClientError::Connect(browserd_ipc::ConnectError::NotRunning { .. })) => {
            return json!({"running": false});
        }
        Err(e) => return json!({"running": null, "error": redact::scrub_text(&e.into_error_data().message)}),
    };
    match client.call(&StatusParams::default()).await {
        Ok(status) => {
            json!({"running": true, "status": redact::scrub_json(&serde_json::to_value(status).unwrap_or_default())})
        }
        Err(e) => json!({"running": true, "error": redact::scrub_text(&e.into_error_data().message)}),
    }
}

/// The newest audit rows, read-only.
fn audit(journal: Option<&Path>) -> Value {
    let Some(path) = journal else { return json!({"error": "no state directory (no XDG_STATE_HOME or HOME)"}) };
    if !path.exists() {
        return json!({"journal": path, "rows": []});
    }
    match browserd_journal::read_recent_audit(path, AUDIT_ROWS) {
        Ok(entries) => {
            let rows: Vec<Value> = entries
                .iter()
                .map(|e| {
                    let r = &e.record;
                    let t = &r.timings;
                    json!({
                        "atMs": r.at.0,
                        "action": r.action.as_str(),
                        "input": r.input.map(|i| i.as_str()),
                        "session": r.session.as_ref().map(|i| i.as_str()),
                        "browser": r.browser.as_ref().map(|i| i.as_str()),
                        "tab": r.tab.as_ref().map(|i| i.as_str()),
                        "origin": r.origin.as_ref().map(|o| o.as_str()),
                        "outcome": r.outcome.map(|o| o.as_str()),
                        "dispatch": r.dispatch.map(|d| d.as_str()),
                        "code": r.code.as_ref().map(|c| c.as_str()),
                        "policy": r.policy.map(|p| p.as_str()),
                        "totalMs": t.total_ms,
                        "queueMs": t.queue_ms,
                        "dispatchMs": t.dispatch_ms,
                        "settleMs": t.settle_ms,
                        "observeMs": t.observe_ms,
                    })
                })
                .collect();
            redact::scrub_json(&json!({"journal": path, "rows": rows}))
        }
        Err(e) => json!({"journal": path, "error": redact::scrub_text(&e.to_string())}),
    }
}

/// The newest broker log lines that may leave the machine, with what was left out.
fn logs(file: Option<&Path>) -> Value {
    let Some(path) = file else { return json!({"error": "no runtime directory (XDG_RUNTIME_DIR)"}) };
    let text = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return json!({"file": path, "lines": []}),
        Err(e) => return json!({"file": path, "error": e.to_string()}),
    };
    let all: Vec<&str> = text.lines().collect();
    let read = &all[all.len().saturating_sub(LOG_LINES_READ)..];
    let (mut kept, mut verbose, mut other) = (Vec::new(), 0u32, 0u32);
    for line in read {
        match redact::log_line(line) {
            Ok(l) => kept.push(l),
            Err(Dropped::Verbose) => verbose += 1,
            Err(Dropped::NotBroker) => other += 1,
        }
    }
    let older = kept.len().saturating_sub(LOG_LINES_KEPT);
    json!({
        "file": path,
        "linesRead": read.len(),
        "leftOut": {"debugOrTrace": verbose, "browserOrOtherOutput": other, "older": older},
        "lines": kept.split_off(older),
    })
}

fn size(bytes: usize) -> String {
    if bytes < 1024 { format!("{bytes} B") } else { format!("{:.1} KiB", bytes as f64 / 1024.0) }
}

fn part_size(v: &Value) -> String {
    size(serde_json::to_string_pretty(v).map_or(0, |s| s.len()))
}

/// What would be in the bundle: each section, its size and a one-line summary.
fn preview(b: &Value, total: usize) -> String {
    let v = &b["versions"];
    let paired = match &v["extension"]["paired"] {
        Value::String(s) => s.clone(),
        p => format!("{} paired", p["version"].as_str().unwrap_or("?")),
    };
    let chromium = v["chromium"]["version"]
        .as_str()
        .map_or_else(|| format!("Chromium: {}", v["chromium"]["error"].as_str().unwrap_or("unknown")), str::to_owned);
    let versions = format!(
        "browserd {}, {chromium}, extension {} bundled ({paired}), {}",
        v["browserd"].as_str().unwrap_or("?"),
        v["extension"]["bundled"].as_str().unwrap_or("?"),
        v["os"]["name"].as_str().unwrap_or("?"),
    );
    let keys = b["config"]["values"].as_object().map_or(0, serde_json::Map::len);
    let st = &b["status"];
    let status = match st["running"].as_bool() {
        Some(true) if st.get("status").is_some() => format!(
            "broker running: {} sessions, {} tabs (URLs cut at the query, titles withheld)",
            st["status"]["sessions"].as_array().map_or(0, Vec::len),
            st["status"]["tabs"].as_array().map_or(0, Vec::len)
        ),
        Some(false) => "no broker running".to_owned(),
        _ => format!("broker did not answer: {}", st["error"].as_str().unwrap_or("?")),
    };
    let audit = match b["audit"]["rows"].as_array() {
        Some(rows) => format!("{} recent rows (metadata only: action, origin, outcome, code, timings)", rows.len()),
        None => format!("not read: {}", b["audit"]["error"].as_str().unwrap_or("?")),
    };
    let l = &b["logs"];
    let logs = match l["lines"].as_array() {
        Some(lines) => format!(
            "{} of {} lines kept (left out: {} debug/trace, {} browser or other output, {} older)",
            lines.len(),
            l["linesRead"].as_u64().unwrap_or(0),
            l["leftOut"]["debugOrTrace"].as_u64().unwrap_or(0),
            l["leftOut"]["browserOrOtherOutput"].as_u64().unwrap_or(0),
            l["leftOut"]["older"].as_u64().unwrap_or(0),
        ),
        None => format!("not read: {}", l["error"].as_str().unwrap_or("?")),
    };
    let rows = [
        ("versions", part_size(v), versions),
        ("config", part_size(&b["config"]), format!("{keys} keys, secrets hidden, URL queries cut")),
        ("status", part_size(st), status),
        ("audit", part_size(&b["audit"]), audit),
        ("logs", part_size(l), logs),
    ];
    let mut out = String::from("browserd diagnostics bundle (redacted: no URL queries, page text or form values)\n");
    for (name, bytes, what) in rows {
        out.push_str(&format!("  {name:<9}{bytes:>10}  {what}\n"));
    }
    out.push_str(&format!("  {:<9}{:>10}\n", "total", size(total)));
    out
}

/// Writes `text` to `target` (a new file, or a new file inside an existing directory), mode 0600.
fn write_bundle(target: &Path, text: &str) -> std::io::Result<PathBuf> {
    let path = if target.is_dir() {
        target.join(format!("browserd-diagnostics-{}.json", now_ms() / 1000))
    } else {
        target.to_path_buf()
    };
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            std::io::Error::new(e.kind(), format!("{} already exists; nothing was overwritten", path.display()))
        } else {
            std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
        }
    })?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()?;
    Ok(path)
}
