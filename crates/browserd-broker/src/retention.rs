//! Retention of the files browserd writes for a host (BRIEF §8, issue 16 item 5): MCP screenshots and advanced-tier
//! spill files are kept at most `[retention] max_age_secs` (15 min) and `max_bytes` (100 MB) per directory, oldest
//! first out. [`sweep`] is one pass (the time is an argument, so tests use a fake clock); the broker sweeps the
//! spill directory and the default screenshot directory every minute ([`spawn_sweeper`]) and the MCP server sweeps
//! its screenshot directory after every file it writes.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;

/// The `[retention]` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetentionConfig {
    /// A file older than this is deleted (default 900: 15 minutes).
    pub max_age_secs: u64,
    /// Past this many bytes in one directory the oldest files are deleted (default 100 MB).
    pub max_bytes: u64,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self { max_age_secs: 15 * 60, max_bytes: 100 * 1024 * 1024 }
    }
}

/// The section's keys.
pub const KEYS: &[&str] = &["retention.max_age_secs", "retention.max_bytes"];

impl RetentionConfig {
    /// Sets a key from text.
    ///
    /// # Errors
    /// Not a non-negative integer, or an unknown key.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let n: u64 = value.trim().parse().map_err(|_| format!("expected a non-negative integer, got {value:?}"))?;
        match key {
            "retention.max_age_secs" => self.max_age_secs = n,
            "retention.max_bytes" => self.max_bytes = n,
            other => return Err(format!("unknown key `{other}`")),
        }
        Ok(())
    }

    /// The effective value of a key as text.
    #[must_use]
    pub fn display(&self, key: &str) -> String {
        match key {
            "retention.max_age_secs" => self.max_age_secs.to_string(),
            "retention.max_bytes" => self.max_bytes.to_string(),
            _ => String::new(),
        }
    }
}

/// What one sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Swept {
    /// Files deleted for their age.
    pub expired: usize,
    /// Files deleted to get under the byte limit.
    pub evicted: usize,
    /// Bytes kept.
    pub kept_bytes: u64,
}

/// Whether a file of a retention directory is one of browserd's: screenshots (`.png`, `.jpg`, `.webp`) and spill files
/// (`spill-*.json`). Nothing else there is touched.
#[must_use]
pub fn is_ours(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or_default();
    matches!(ext, "png" | "jpg" | "webp") || (name.starts_with("spill-") && ext == "json")
}

/// One pass over `dir` at time `now`: browserd's files older than `max_age_secs` go, then the oldest until the rest
/// fit in `max_bytes`. Best effort: a file that cannot be removed is logged and counted as kept.
#[must_use]
pub fn sweep(dir: &Path, limits: RetentionConfig, now: SystemTime) -> Swept {
    let mut out = Swept::default();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    let max_age = Duration::from_secs(limits.max_age_secs);
    let mut files: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() || !is_ours(&path) {
            continue;
        }
        let modified = meta.modified().unwrap_or(now);
        if now.duration_since(modified).unwrap_or_default() > max_age && remove(&path) {
            out.expired += 1;
            continue;
        }
        files.push((modified, meta.len(), path));
    }
    files.sort();
    let mut total: u64 = files.iter().map(|(_, len, _)| len).sum();
    for (_, len, path) in &files {
        if total <= limits.max_bytes {
            break;
        }
        if remove(path) {
            total -= len;
            out.evicted += 1;
        }
    }
    out.kept_bytes = total;
    out
}

fn remove(path: &Path) -> bool {
    match std::fs::remove_file(path) {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "a file past retention was not removed");
            false
        }
    }
}

/// The directories the broker sweeps: the spill directory and the screenshot directory ([`screenshot_dir`]).
#[must_use]
pub fn swept_dirs(env: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    vec![crate::advanced::spill_dir(), screenshot_dir(env)]
}

/// Where screenshot files go by default (the MCP server's and the CLI's text output): `$XDG_CACHE_HOME/browserd/
/// screenshots`, else `~/.cache/browserd/screenshots`, else (no absolute `HOME`) the runtime directory's
/// `screenshots`.
#[must_use]
pub fn screenshot_dir(env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    let absolute = |name: &str| env(name).map(PathBuf::from).filter(|p| p.is_absolute());
    match absolute("XDG_CACHE_HOME").or_else(|| absolute("HOME").map(|h| h.join(".cache"))) {
        Some(cache) => cache.join("browserd").join("screenshots"),
        None => browserd_ipc::default_runtime_dir().0.join("screenshots"),
    }
}

/// Sweeps `dirs` every minute until `cancel`.
pub fn spawn_sweeper(dirs: Vec<PathBuf>, limits: RetentionConfig, cancel: tokio_util::sync::CancellationToken) {
    tokio::spawn(async move {
        loop {
            for dir in &dirs {
                let swept = sweep(dir, limits, SystemTime::now());
                if swept.expired + swept.evicted > 0 {
                    tracing::info!(dir = %dir.display(), expired = swept.expired, evicted = swept.evicted,
                        "retention sweep");
                }
            }
            tokio::select! {
                () = cancel.cancelled() => break,
                () = tokio::time::sleep(Duration::from_secs(60)) => {}
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, name: &str, bytes: usize, age: Duration, now: SystemTime) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, vec![b'x'; bytes]).unwrap();
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(now - age).unwrap();
        path
    }

    #[test]
    fn old_files_go_then_the_oldest_until_the_rest_fit() {
        let dir = tempfile::tempdir().unwrap();
        // A fake clock: "now" is a day ahead of the files' real times, and their ages are set relative to it.
        let now = SystemTime::now() + Duration::from_secs(86_400);
        let expired = file(dir.path(), "i1.png", 10, Duration::from_secs(16 * 60), now);
        let oldest = file(dir.path(), "i2.jpg", 40, Duration::from_secs(10 * 60), now);
        let middle = file(dir.path(), "spill-2.json", 40, Duration::from_secs(5 * 60), now);
        let newest = file(dir.path(), "i3.webp", 40, Duration::from_secs(60), now);
        let foreign = file(dir.path(), "notes.txt", 1000, Duration::from_secs(99 * 60), now);
        let limits = RetentionConfig { max_age_secs: 15 * 60, max_bytes: 100 };
        let swept = sweep(dir.path(), limits, now);
        assert_eq!(swept, Swept { expired: 1, evicted: 1, kept_bytes: 80 });
        assert!(!expired.exists() && !oldest.exists());
        assert!(middle.exists() && newest.exists(), "the newest files that fit are kept");
        assert!(foreign.exists(), "files that are not browserd's are never touched");
        // Later on the fake clock everything of ours has expired.
        let later = sweep(dir.path(), limits, now + Duration::from_secs(20 * 60));
        assert_eq!(later.expired, 2);
    }

    #[test]
    fn keys_parse_and_display() {
        let mut r = RetentionConfig::default();
        assert_eq!((r.max_age_secs, r.max_bytes), (900, 104_857_600));
        r.set("retention.max_bytes", "5").unwrap();
        assert_eq!(r.display("retention.max_bytes"), "5");
        assert!(r.set("retention.max_age_secs", "soon").is_err());
    }
}
