//! A file the user approves for one call (BRIEF §8, issue 16 item 4): an `upload` of a file outside `[files]
//! upload_roots` is not refused outright but asks the user (`APPROVAL_REQUIRED`), bound to exactly that file — its
//! resolved path and the SHA-256 of its contents are in the approval's parameter hash, with the session, browser,
//! origin, class and target as for every approval (`approvals`). Once granted, that upload (only that file, unchanged,
//! once) goes through; another path, a changed file or a second upload asks again.
//!
//! The browser itself only takes files from its upload directories, so the approved file is copied, after its digest
//! is checked again, into a private staging directory the browser may read
//! (`$XDG_RUNTIME_DIR/browserd/approved-uploads/<n>/<name>`, else `/tmp/browserd-<uid>/…`, 0700) and the step uploads
//! that copy (the page sees the file's own name). The broker's own check never counts the staging directory as an
//! upload root, so a path into it asks for approval like any other. Copies older than an hour are removed when the
//! next one is made (the page reads the file when its form is sent, which may be after the action).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use browserd_protocol::{ActParams, ActionKind, ErrorCode, ErrorData};
use serde_json::json;

use super::approvals::{APPROVAL_TTL, Asked, Binding, approval_required};

/// How long a staged copy is kept.
const STAGED_KEPT: Duration = Duration::from_secs(3600);

/// The private directory approved files are copied to: an upload root of the browser, never of the broker's check.
#[must_use]
pub fn staging_dir() -> PathBuf {
    let base = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).filter(|p| p.is_absolute()).map_or_else(
        || std::env::temp_dir().join(format!("browserd-{}", nix::unistd::getuid())),
        |p| p.join("browserd"),
    );
    base.join("approved-uploads")
}

/// Whether `real` (resolved) lies inside one of `roots`.
fn inside(real: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|r| std::fs::canonicalize(r).is_ok_and(|root| real.starts_with(root)))
}

impl crate::tools::ToolCtx<'_> {
    /// Before an `upload` step on `tab`: a file inside `[files] upload_roots` goes ahead unchanged; any other existing
    /// file needs the user's approval of exactly it (`APPROVAL_REQUIRED`, used up here), and once approved the step
    /// is rewritten to upload its staged copy.
    pub(crate) fn check_upload(
        &self,
        tab: browserd_core::provider::TabHandle,
        step: &mut ActParams,
    ) -> Result<(), ErrorData> {
        let (ActionKind::Upload, Some(path)) = (step.action, step.value.clone()) else { return Ok(()) };
        let roots = &self.broker.config.files.upload_roots;
        let real = std::fs::canonicalize(&path).map_err(|e| {
            ErrorData::invalid_params(format!(
                "{path} cannot be read ({e}); give the absolute path of an existing file"
            ))
        })?;
        if inside(&real, roots) {
            return Ok(());
        }
        if !real.is_file() {
            return Err(ErrorData::invalid_params(format!("{path} is not a regular file")));
        }
        let (size, sha) = super::transfer::digest(&real)
            .map_err(|e| ErrorData::invalid_params(format!("{path} cannot be read: {e}")))?;
        let url = self.broker.runtime.inspect(|e| e.tabs().get(tab).map(|r| r.url.clone())).unwrap_or_default();
        let seen = self.broker.gate.last_observation(tab);
        let content = seen.as_deref().and_then(|o| o["untrustedContent"].as_str());
        let origin = super::sites::Origin::of(&url).map_or_else(|| url.clone(), |o| o.to_string());
        let line = super::classes::target_line(step, content);
        let target = line.as_deref().and_then(super::classes::Target::of_line);
        let (class, _) = super::classes::classify(step, target.as_ref(), &url);
        let mut binding = Binding::of(self.session, &self.browser_instance(), &origin, class, line.as_deref(), step);
        // The exact file: its resolved path and its contents.
        binding.params = digest_of(&(binding.params, &real, &sha));
        let shown = real.display();
        let summary = format!(
            "upload the file {shown} ({size} bytes, sha256 {}…) to {} in tab {}",
            &sha[..12],
            line.as_deref().unwrap_or("the page's file input"),
            tab.0
        );
        if let Err(id) = self.broker.approvals.take_or_ask(&binding, &summary, Instant::now()) {
            let listed: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
            let where_ = if listed.is_empty() { "no upload root is configured".to_owned() } else { listed.join(", ") };
            let mut e = approval_required(&Asked {
                id: &id,
                summary: &summary,
                class,
                origin: &origin,
                step,
                target: line.as_deref(),
            });
            e.message = format!(
                "uploading {path} needs the user's approval: it is not inside an upload root ({where_}); nothing was \
                 sent"
            );
            e.next_step = format!(
                "Ask the user to approve this one file (the host's approval UI, or `browserd approve {id}` in a \
                 terminal): the same call then uploads it once within {} minutes. For files they upload often, the \
                 user can add the directory to `upload_roots` in the `[files]` section of the browserd config.",
                APPROVAL_TTL.as_secs() / 60
            );
            if let Some(d) = e.details.as_deref_mut().and_then(|d| d.as_object_mut()) {
                d.insert("file".into(), json!({"path": shown.to_string(), "size": size, "sha256": sha}));
                d.insert("key".into(), json!("files.upload_roots"));
            }
            return Err(e);
        }
        let staged = stage(&real, &sha).map_err(|e| {
            ErrorData::new(ErrorCode::PolicyDenied, format!("the approved file {path} was not uploaded: {e}"))
                .with_next_step("Nothing was sent. Run the same call again to ask the user once more.")
        })?;
        tracing::info!(file = %shown, "the user approved uploading a file outside the upload roots");
        step.value = Some(staged.display().to_string());
        Ok(())
    }
}

fn digest_of<T: std::hash::Hash>(value: &T) -> u64 {
    use std::hash::Hasher;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// Copies `real` into a fresh private directory under [`staging_dir`] and checks the copy is the approved content.
fn stage(real: &Path, sha: &str) -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let base = staging_dir();
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&base)
        .map_err(|e| format!("cannot create {}: {e}", base.display()))?;
    sweep(&base);
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let dir = base.join(format!("{}-{nanos}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let name = real.file_name().ok_or("the file has no name")?;
    let copy = dir.join(name);
    std::fs::copy(real, &copy).map_err(|e| format!("cannot copy it: {e}"))?;
    match super::transfer::digest(&copy) {
        Ok((_, got)) if got == sha => Ok(copy),
        _ => {
            let _ = std::fs::remove_dir_all(&dir);
            Err("it changed after the user approved it".to_owned())
        }
    }
}

/// Removes staged copies older than [`STAGED_KEPT`].
fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else { return };
    for entry in entries.flatten() {
        let old = entry.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
        if old.is_some_and(|age| age > STAGED_KEPT) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
