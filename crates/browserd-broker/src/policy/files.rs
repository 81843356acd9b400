//! The `[files]` section of the config (BRIEF §8, issue 16 items 1 and 4): which directories' `file:` pages may be
//! shown (`file_url_roots`), which directories' files may be uploaded (`upload_roots`) and where downloads land
//! (`download_dir`, default `$XDG_DATA_HOME/browserd/downloads`). Paths must be absolute; `~/` is the home directory.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// The `[files]` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FilesConfig {
    /// Directories whose `file:` URLs may be opened, navigated to, claimed and read. Empty (the default): none.
    pub file_url_roots: Vec<PathBuf>,
    /// Directories whose files `browser_act` `upload` may set on a file input. Empty (the default): uploads are
    /// refused.
    pub upload_roots: Vec<PathBuf>,
    /// Where downloads land (default `$XDG_DATA_HOME/browserd/downloads`, else `~/.local/share/browserd/downloads`).
    pub download_dir: Option<PathBuf>,
}

/// The section's keys, as `config::KEYS` lists them.
pub const KEYS: &[&str] = &["files.file_url_roots", "files.upload_roots", "files.download_dir"];

/// The default download directory: `$XDG_DATA_HOME/browserd/downloads`, else `~/.local/share/browserd/downloads`.
#[must_use]
pub fn default_download_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(xdg) = env("XDG_DATA_HOME").filter(|v| Path::new(v).is_absolute()) {
        return Some(PathBuf::from(xdg).join("browserd").join("downloads"));
    }
    env("HOME").filter(|v| !v.is_empty()).map(|home| PathBuf::from(home).join(".local/share/browserd/downloads"))
}

/// The provider's file settings: the upload roots (and the staging directory of approved files), and the download directory (created private, 0700, if missing;
/// when it cannot be made, downloads stay denied and the broker log says why).
#[must_use]
pub fn chromium_config(files: &FilesConfig) -> browserd_chromium::ChromiumConfig {
    let download_dir = files.download_dir.as_ref().and_then(|dir| match make_private_dir(dir) {
        Ok(()) => Some(dir.clone()),
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot create the download directory; downloads are denied");
            None
        }
    });
    // The browser also reads the private copies of files the user approved for one upload (`approved_files`).
    let mut upload_roots = files.upload_roots.clone();
    upload_roots.push(super::approved_files::staging_dir());
    browserd_chromium::ChromiumConfig { upload_roots, download_dir, ..Default::default() }
}

fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// One path of the section: absolute, or `~/…` under `home`.
fn path_of(text: &str, home: Option<&str>) -> Result<PathBuf, String> {
    let text = text.trim();
    let path = match (text.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        (Some(_), None) => return Err(format!("{text:?} starts with ~/ but HOME is not set")),
        (None, _) => PathBuf::from(text),
    };
    if !path.is_absolute() {
        return Err(format!("{text:?} is not an absolute path (write /… or ~/…)"));
    }
    Ok(path)
}

/// A list of paths (TOML array items, or a `:`-separated environment value).
///
/// # Errors
/// A relative path.
pub fn paths_of(items: &[String], home: Option<&str>) -> Result<Vec<PathBuf>, String> {
    items.iter().filter(|s| !s.trim().is_empty()).map(|s| path_of(s, home)).collect()
}

/// Sets one key of the section from text (a `:`-separated list for the list keys).
///
/// # Errors
/// An unknown key or a relative path.
pub fn set(files: &mut FilesConfig, key: &str, value: &str, home: Option<&str>) -> Result<(), String> {
    let list = || paths_of(&value.split(':').map(str::to_owned).collect::<Vec<_>>(), home);
    match key {
        "files.file_url_roots" => files.file_url_roots = list()?,
        "files.upload_roots" => files.upload_roots = list()?,
        "files.download_dir" => {
            files.download_dir = if value.trim().is_empty() { None } else { Some(path_of(value, home)?) };
        }
        other => return Err(format!("unknown key `{other}`")),
    }
    Ok(())
}

/// Sets a list key from TOML array items.
///
/// # Errors
/// Not a list key, or a relative path.
pub fn set_list(files: &mut FilesConfig, key: &str, items: &[String], home: Option<&str>) -> Result<(), String> {
    let paths = paths_of(items, home)?;
    match key {
        "files.file_url_roots" => files.file_url_roots = paths,
        "files.upload_roots" => files.upload_roots = paths,
        other => return Err(format!("`{other}` is not a list")),
    }
    Ok(())
}

/// Whether `key` takes a list.
#[must_use]
pub fn is_list(key: &str) -> bool {
    matches!(key, "files.file_url_roots" | "files.upload_roots")
}

/// The effective value of a key as display text.
#[must_use]
pub fn display(files: &FilesConfig, key: &str) -> String {
    let list = |paths: &[PathBuf]| {
        if paths.is_empty() {
            "(none)".to_owned()
        } else {
            paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        }
    };
    match key {
        "files.file_url_roots" => list(&files.file_url_roots),
        "files.upload_roots" => list(&files.upload_roots),
        "files.download_dir" => files.download_dir.as_ref().map_or("(unset)".to_owned(), |p| p.display().to_string()),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_absolute_or_under_home() {
        let mut f = FilesConfig::default();
        set(&mut f, "files.upload_roots", "/srv/up:~/Documents", Some("/home/u")).unwrap();
        assert_eq!(f.upload_roots, [PathBuf::from("/srv/up"), PathBuf::from("/home/u/Documents")]);
        let e = set(&mut f, "files.file_url_roots", "reports", Some("/home/u")).unwrap_err();
        assert!(e.contains("not an absolute path"), "{e}");
        set(&mut f, "files.download_dir", "~/dl", Some("/home/u")).unwrap();
        assert_eq!(f.download_dir, Some(PathBuf::from("/home/u/dl")));
        assert_eq!(display(&f, "files.file_url_roots"), "(none)");
        let env = |k: &str| (k == "XDG_DATA_HOME").then(|| "/d".to_owned());
        assert_eq!(default_download_dir(&env), Some(PathBuf::from("/d/browserd/downloads")));
    }
}
