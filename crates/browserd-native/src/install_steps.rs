//! What makes `install` and `uninstall` safe to interrupt: the pending record written before any other file (so a
//! later `uninstall` knows what an interrupted `install` may have left), the leftovers `doctor` names, and the hidden
//! `--fault-after N` hook that kills the process after its Nth file-system step (the installer drill in
//! `tests/install_interrupted.rs`).
//!
//! Order of `install`: pending record → wrapper → manifests → receipt → pending record removed; each file is written to
//! a temporary name and renamed, so a manifest never exists before the wrapper it names. `uninstall` removes the
//! manifests first and the wrapper after them, so no manifest is left pointing at a missing wrapper.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use crate::install::{Locations, ReceiptEntry};

/// Steps left before the fault hook kills the process (`usize::MAX`: no fault).
static FAULT_AFTER: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Arms the fault hook: the process kills itself with `SIGKILL` right after its `n`th file-system step (a temporary
/// file written, a rename, a removal). Only the hidden `--fault-after` flag calls this.
pub fn arm_fault_after(n: usize) {
    FAULT_AFTER.store(n, Ordering::SeqCst);
}

/// One file-system step is done; dies here when the armed count is reached.
pub(crate) fn step_done() {
    let left = FAULT_AFTER.load(Ordering::SeqCst);
    if left == usize::MAX {
        return;
    }
    if left <= 1 {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
        std::process::abort();
    }
    FAULT_AFTER.store(left - 1, Ordering::SeqCst);
}

/// Where the pending record lives: beside the receipt.
pub fn pending_path(loc: &Locations) -> PathBuf {
    loc.data_dir.join("install-pending.json")
}

/// The files an `install` is about to write, recorded before it writes any of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    pub files: Vec<ReceiptEntry>,
}

impl Pending {
    /// The pending record of an interrupted install, if one is there (an unreadable one reads as empty: the receipt
    /// and the leftovers scan still find the files).
    pub fn load(loc: &Locations) -> Option<Pending> {
        let bytes = std::fs::read(pending_path(loc)).ok()?;
        Some(serde_json::from_slice(&bytes).unwrap_or_default())
    }
}

/// The temporary name `write_file` uses for `path`.
pub(crate) fn temp_path(path: &Path) -> Option<PathBuf> {
    let dir = path.parent()?;
    Some(dir.join(format!(".{}.tmp", path.file_name()?.to_str()?)))
}

/// Temporary files an interrupted install or uninstall left next to `paths` (the receipt, the pending record and every
/// file they name).
pub fn leftovers(loc: &Locations, entries: &[ReceiptEntry]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = vec![loc.receipt_path(), pending_path(loc), loc.wrapper_path()];
    paths.extend(entries.iter().map(|e| e.path.clone()));
    let mut found: Vec<PathBuf> = paths.iter().filter_map(|p| temp_path(p)).filter(|t| t.exists()).collect();
    found.sort();
    found.dedup();
    found
}

/// Removes the temporary files of an interrupted run; returns what it removed.
pub(crate) fn remove_leftovers(loc: &Locations, entries: &[ReceiptEntry]) -> anyhow::Result<Vec<PathBuf>> {
    let found = leftovers(loc, entries);
    for t in &found {
        std::fs::remove_file(t)?;
        step_done();
    }
    Ok(found)
}

/// What an interrupted install or uninstall left half-done, in words for `doctor` (empty when nothing is).
pub fn half_done(loc: &Locations) -> Vec<String> {
    let mut out = Vec::new();
    let pending = Pending::load(loc);
    let mut entries = pending.clone().map(|p| p.files).unwrap_or_default();
    if let Ok(bytes) = std::fs::read(loc.receipt_path())
        && let Ok(r) = serde_json::from_slice::<crate::install::Receipt>(&bytes)
    {
        let gone: Vec<String> =
            r.files.iter().filter(|f| !f.path.exists()).map(|f| f.path.display().to_string()).collect();
        if !gone.is_empty() && pending.is_none() {
            out.push(format!(
                "the install receipt {} names files that are gone (an interrupted uninstall?): {}",
                loc.receipt_path().display(),
                gone.join(", ")
            ));
        }
        entries.extend(r.files);
    }
    if let Some(p) = &pending {
        let missing: Vec<String> =
            p.files.iter().filter(|f| !f.path.exists()).map(|f| f.path.display().to_string()).collect();
        let mut what = format!("an install was interrupted ({} is still there)", pending_path(loc).display());
        if !missing.is_empty() {
            what.push_str(&format!("; not written yet: {}", missing.join(", ")));
        }
        out.push(what);
    }
    for t in leftovers(loc, &entries) {
        out.push(format!("a temporary file of an interrupted install or uninstall: {}", t.display()));
    }
    out
}
