//! The advanced tool tier at the broker: the policy check of `tools.activate {advanced: true}` and of raw protocol
//! methods, the tool names the tier adds, and result bounding (an oversize value goes to a private spill file whose
//! path comes back with a summary, BRIEF §4).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use browserd_protocol::tools::{Spill, Tool, ToolTier};
use browserd_protocol::{ErrorCode, ErrorData};
use serde_json::Value;

use crate::config::AdvancedConfig;

/// Largest JSON value (serialized bytes) returned inline by `browser_evaluate` and `browser_cdp`.
pub const MAX_INLINE_BYTES: usize = 32 * 1024;
/// Spill files older than this are deleted when a new one is written (BRIEF §8: temporary files 15 min).
const SPILL_TTL: Duration = Duration::from_secs(15 * 60);

/// What `tools.activate {advanced: true}` answers when the policy keeps the tier off.
pub const ENABLE_NEXT_STEP: &str = "The advanced tier is off by policy. To allow it, set `enabled = true` in the \
    `[advanced]` section of the browserd config file (or BROWSERD_ADVANCED=1 for the broker), restart the broker \
    with `browserd broker stop`, then activate again with advanced.";

/// The advanced tools the policy allows (`browser_cdp` only with `raw_cdp`).
#[must_use]
pub fn tools(policy: &AdvancedConfig) -> Vec<Tool> {
    Tool::ALL
        .iter()
        .copied()
        .filter(|t| t.tier() == ToolTier::Advanced && (policy.raw_cdp || *t != Tool::RawProtocol))
        .collect()
}

/// The error of an advanced tool called while the session has not activated the tier (or the policy lacks it).
#[must_use]
pub fn not_activated(name: &str, policy: &AdvancedConfig) -> ErrorData {
    if !policy.enabled {
        return ErrorData::new(
            ErrorCode::CapabilityNotActivated,
            format!("`{name}` is an advanced tool; the advanced tier is disabled by this broker's policy"),
        )
        .with_next_step(ENABLE_NEXT_STEP);
    }
    if name == browserd_protocol::tools::BROWSER_CDP && !policy.raw_cdp {
        return ErrorData::new(
            ErrorCode::CapabilityNotActivated,
            "`browser_cdp` (raw protocol commands) is disabled by this broker's policy",
        )
        .with_next_step(
            "Use browser_evaluate, browser_observe or browser_act instead, or ask the user to set `raw_cdp = true` in \
             the `[advanced]` section of the browserd config.",
        );
    }
    ErrorData::new(
        ErrorCode::CapabilityNotActivated,
        format!("`{name}` is an advanced tool; this session has not activated the advanced tier"),
    )
    .with_next_step("Activate the tools again with advanced (tools.activate {\"advanced\": true}), then retry.")
}

/// The refusal of a raw protocol method the policy denies.
#[must_use]
pub fn method_denied(method: &str, policy: &AdvancedConfig) -> Option<ErrorData> {
    let why = policy.refuse_cdp_method(method)?;
    Some(
        ErrorData::new(ErrorCode::PolicyDenied, format!("raw protocol method refused: {why}"))
            .with_next_step("Use browser_observe / browser_act / browser_evaluate instead, or ask the user to change the `[advanced]` policy."),
    )
}

/// The directory spill files go to: `$XDG_RUNTIME_DIR/browserd/spill`, else `/tmp/browserd-<uid>/spill` (0700).
#[must_use]
pub fn spill_dir() -> PathBuf {
    let base = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).filter(|p| p.is_absolute()).map_or_else(
        || std::env::temp_dir().join(format!("browserd-{}", nix::unistd::getuid())),
        |p| p.join("browserd"),
    );
    base.join("spill")
}

/// Bounds a JSON value: inline when it serializes to at most [`MAX_INLINE_BYTES`], else written to a private file
/// in `dir` and replaced by `null` plus the [`Spill`] (path, size, summary).
///
/// # Errors
/// The file could not be written (the value is then not returned at all: the error says so).
pub fn bound(value: Value, what: &str, dir: &Path) -> Result<(Value, Option<Spill>), ErrorData> {
    let text = serde_json::to_string(&value).unwrap_or_default();
    if text.len() <= MAX_INLINE_BYTES {
        return Ok((value, None));
    }
    let summary = summarize(&value, what);
    let path = write_spill(dir, text.as_bytes()).map_err(|e| {
        ErrorData::new(
            ErrorCode::InternalError,
            format!(
                "{what} is {} bytes, over the {MAX_INLINE_BYTES}-byte bound, and writing it to {} failed: {e}",
                text.len(),
                dir.display()
            ),
        )
        .with_next_step("Return a smaller value (select the fields you need), or free disk space.")
    })?;
    Ok((Value::Null, Some(Spill { path: path.display().to_string(), bytes: text.len() as u64, summary })))
}

fn summarize(value: &Value, what: &str) -> String {
    let shape = match value {
        Value::String(s) => format!("a string of {} characters", s.chars().count()),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(o) => {
            let keys: Vec<&str> = o.keys().take(8).map(String::as_str).collect();
            format!("an object with {} keys ({}{})", o.len(), keys.join(", "), if o.len() > 8 { ", …" } else { "" })
        }
        other => other.to_string(),
    };
    format!("{what}: {shape}, too large to return inline; read the JSON file for the full value")
}

fn write_spill(dir: &Path, bytes: &[u8]) -> std::io::Result<PathBuf> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    prune(dir);
    let stamp = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_nanos();
    let path = dir.join(format!("spill-{stamp}.json"));
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
    file.write_all(bytes)?;
    Ok(path)
}

/// Deletes spill files older than [`SPILL_TTL`].
fn prune(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > SPILL_TTL);
        if old && entry.file_name().to_string_lossy().starts_with("spill-") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_stay_inline_and_large_ones_spill_to_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let (v, spill) = bound(serde_json::json!({"a": 1}), "the value", dir.path()).unwrap();
        assert_eq!(v["a"], 1);
        assert!(spill.is_none());
        let big = Value::String("x".repeat(MAX_INLINE_BYTES + 10));
        let (v, spill) = bound(big.clone(), "the value", dir.path()).unwrap();
        assert_eq!(v, Value::Null);
        let spill = spill.unwrap();
        assert!(spill.summary.contains("string of"), "{}", spill.summary);
        let back: Value = serde_json::from_slice(&std::fs::read(&spill.path).unwrap()).unwrap();
        assert_eq!(back, big);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&spill.path).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn the_tier_lists_raw_cdp_only_when_the_policy_allows_it() {
        let mut policy = AdvancedConfig { enabled: true, ..AdvancedConfig::default() };
        assert_eq!(tools(&policy), [Tool::Evaluate, Tool::Console, Tool::Network]);
        policy.raw_cdp = true;
        assert_eq!(tools(&policy).len(), 4);
        assert!(method_denied("Network.getAllCookies", &policy).is_some());
        assert!(method_denied("Page.reload", &policy).is_none());
        assert!(not_activated("browser_evaluate", &AdvancedConfig::default()).message.contains("disabled"));
        let enabled = AdvancedConfig { enabled: true, ..AdvancedConfig::default() };
        assert!(not_activated("browser_cdp", &enabled).next_step.contains("raw_cdp = true"));
        assert!(not_activated("browser_console", &enabled).next_step.contains("tools.activate"));
    }
}
