//! The broker's private runtime directory: created owner-only (0700), and refused when it is a symlink, not a
//! directory, owned by another uid, or open to the group or to others.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::paths::{self, DirSource, LOCK_FILE_NAME, Platform, SOCKET_FILE_NAME};

/// Why the runtime directory cannot be used. Every message says what to do next.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeDirError {
    /// The directory could not be created or inspected.
    #[error(
        "cannot create or inspect the browserd runtime directory {path}: {source}; check that its parent exists and \
         is writable, or point XDG_RUNTIME_DIR at a directory you own"
    )]
    Io {
        /// The runtime directory.
        path: PathBuf,
        /// The failing system call's error.
        source: io::Error,
    },
    /// The path is a symbolic link; following it could hand the socket to whoever controls the target.
    #[error("refusing the browserd runtime directory {path}: it is a symbolic link; remove it (`rm {path}`) and retry")]
    Symlink {
        /// The runtime directory.
        path: PathBuf,
    },
    /// The path exists but is not a directory.
    #[error("refusing the browserd runtime directory {path}: it is not a directory; remove or rename it and retry")]
    NotADirectory {
        /// The runtime directory.
        path: PathBuf,
    },
    /// Another user owns the directory: they could read or replace the socket.
    #[error(
        "refusing the browserd runtime directory {path}: it is owned by uid {owner}, not by you (uid {expected}); \
         another user may be trying to intercept browserd; ask an administrator to remove it, or set XDG_RUNTIME_DIR \
         to a directory you own"
    )]
    ForeignOwner {
        /// The runtime directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The uid this process runs as.
        expected: u32,
    },
    /// The group or others have some access to the directory.
    #[error(
        "refusing the browserd runtime directory {path}: its mode is {mode:04o}, but it must be accessible to its \
         owner only; run `chmod 700 {path}` and retry"
    )]
    TooOpen {
        /// The runtime directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The directory was swapped between the checks (something is racing us).
    #[error(
        "the browserd runtime directory {path} changed while it was being checked; retry, and find out what replaces it"
    )]
    Changed {
        /// The runtime directory.
        path: PathBuf,
    },
}

/// What [`check_dir_facts`] looks at, gathered from `lstat`/`fstat` (or made up in tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirFacts {
    /// `lstat` says it is a symbolic link.
    pub is_symlink: bool,
    /// It is a directory.
    pub is_dir: bool,
    /// Owner uid.
    pub uid: u32,
    /// `st_mode` (type and permission bits).
    pub mode: u32,
}

/// The decision on an existing directory: symlink, then type, then owner, then group/other access bits.
pub fn check_dir_facts(path: &Path, facts: DirFacts, expected_uid: u32) -> Result<(), RuntimeDirError> {
    let path = path.to_path_buf();
    if facts.is_symlink {
        return Err(RuntimeDirError::Symlink { path });
    }
    if !facts.is_dir {
        return Err(RuntimeDirError::NotADirectory { path });
    }
    if facts.uid != expected_uid {
        return Err(RuntimeDirError::ForeignOwner { path, owner: facts.uid, expected: expected_uid });
    }
    if facts.mode & 0o077 != 0 {
        return Err(RuntimeDirError::TooOpen { path, mode: facts.mode & 0o7777 });
    }
    Ok(())
}

/// A checked, owner-only runtime directory holding `broker.sock` and `broker.lock`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeDir {
    /// The directory itself.
    path: PathBuf,
    /// The effective uid that owns it (and that every peer must have).
    uid: u32,
}

impl RuntimeDir {
    /// Creates (if needed) and checks the default directory for this process: see [`paths::unix_runtime_dir`].
    pub fn from_env() -> Result<Self, RuntimeDirError> {
        Self::ensure(default_runtime_dir().0)
    }

    /// Creates `path` with mode 0700 if it is missing (its parent must exist), then checks it: not a symlink, a
    /// directory, owned by this process's effective uid, no group/other access. An existing directory is never
    /// loosened or re-owned; a wrong one is refused with a typed error.
    pub fn ensure(path: impl Into<PathBuf>) -> Result<Self, RuntimeDirError> {
        let path = path.into();
        let uid = nix::unistd::geteuid().as_raw();
        let created = match DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => true,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => false,
            Err(source) => return Err(RuntimeDirError::Io { path, source }),
        };
        let mode = check_existing_dir(&path, uid)?;
        // A umask such as 0277 strips owner bits from a directory we just made; restoring 0700 is safe since no
        // other user can have touched it (it is ours and owner-only).
        if created && mode & 0o700 != 0o700 {
            fs::set_permissions(&path, fs::Permissions::from_mode(0o700))
                .map_err(|source| RuntimeDirError::Io { path: path.clone(), source })?;
        }
        Ok(RuntimeDir { path, uid })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The uid that owns the directory; every peer of the broker must have it.
    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// `<dir>/broker.sock`.
    pub fn socket_path(&self) -> PathBuf {
        self.path.join(SOCKET_FILE_NAME)
    }

    /// `<dir>/broker.lock`.
    pub fn lock_path(&self) -> PathBuf {
        self.path.join(LOCK_FILE_NAME)
    }
}

/// The default runtime directory for this process (`$XDG_RUNTIME_DIR/browserd`, else `/run/user/<uid>/browserd` when
/// that directory [`is_ours`], macOS `$TMPDIR/browserd`, else `/tmp/browserd-<uid>`) and which rule chose it. Reads
/// the environment and `lstat`s `/run/user/<uid>`; creates nothing.
pub fn default_runtime_dir() -> (PathBuf, DirSource) {
    let uid = nix::unistd::geteuid().as_raw();
    paths::unix_runtime_dir(Platform::current(), |name| std::env::var_os(name), uid, |p| is_ours(p, uid))
}

/// Whether `path` is a directory (not a symlink to one) owned by `uid`: the test `/run/user/<uid>` must pass before
/// a client without `XDG_RUNTIME_DIR` puts the broker there. The browserd directory inside it is then checked in
/// full by [`RuntimeDir::ensure`].
pub fn is_ours(path: &Path, uid: u32) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_dir() && m.uid() == uid)
}

/// Checks an existing directory without changing it and returns its `st_mode`.
///
/// `lstat` first (to name a symlink precisely), then the directory is opened with `O_NOFOLLOW | O_DIRECTORY` and the
/// decision is made on `fstat` of that descriptor, which must be the same inode `lstat` saw.
pub fn check_existing_dir(path: &Path, expected_uid: u32) -> Result<u32, RuntimeDirError> {
    let io_err = |source| RuntimeDirError::Io { path: path.to_path_buf(), source };
    let lmeta = fs::symlink_metadata(path).map_err(io_err)?;
    let lfacts = DirFacts {
        is_symlink: lmeta.file_type().is_symlink(),
        is_dir: lmeta.is_dir(),
        uid: lmeta.uid(),
        mode: lmeta.mode(),
    };
    check_dir_facts(path, lfacts, expected_uid)?;
    let dir = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_DIRECTORY)
        .open(path)
        .map_err(|source| match source.raw_os_error() {
            // Swapped for a symlink or a file since the lstat above.
            Some(nix::libc::ELOOP) | Some(nix::libc::ENOTDIR) => RuntimeDirError::Changed { path: path.to_path_buf() },
            _ => io_err(source),
        })?;
    let meta = dir.metadata().map_err(io_err)?;
    if (meta.dev(), meta.ino()) != (lmeta.dev(), lmeta.ino()) {
        return Err(RuntimeDirError::Changed { path: path.to_path_buf() });
    }
    let facts = DirFacts { is_symlink: false, is_dir: meta.is_dir(), uid: meta.uid(), mode: meta.mode() };
    check_dir_facts(path, facts, expected_uid)?;
    Ok(meta.mode())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIR: u32 = 0o040000;

    fn facts(mode: u32, uid: u32) -> DirFacts {
        DirFacts { is_symlink: false, is_dir: true, uid, mode: DIR | mode }
    }

    #[test]
    fn owner_only_directory_of_the_same_uid_passes() {
        assert!(check_dir_facts(Path::new("/x"), facts(0o700, 7), 7).is_ok());
        assert!(check_dir_facts(Path::new("/x"), facts(0o500, 7), 7).is_ok());
    }

    #[test]
    fn group_or_world_bits_are_refused() {
        for mode in [0o710, 0o701, 0o750, 0o755, 0o777, 0o702, 0o720] {
            let err = check_dir_facts(Path::new("/x"), facts(mode, 7), 7).unwrap_err();
            assert!(matches!(err, RuntimeDirError::TooOpen { mode: m, .. } if m == mode), "{mode:o}: {err}");
            assert!(err.to_string().contains("chmod 700 /x"), "{err}");
        }
    }

    #[test]
    fn foreign_owner_is_refused_before_mode() {
        let err = check_dir_facts(Path::new("/x"), facts(0o777, 0), 1000).unwrap_err();
        assert!(matches!(err, RuntimeDirError::ForeignOwner { owner: 0, expected: 1000, .. }), "{err}");
    }

    #[test]
    fn is_ours_wants_a_real_directory_of_this_uid() {
        let uid = nix::unistd::geteuid().as_raw();
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("1000");
        assert!(!is_ours(&dir, uid), "a missing directory is not ours");
        fs::create_dir(&dir).unwrap();
        assert!(is_ours(&dir, uid));
        assert!(!is_ours(&dir, uid.wrapping_add(1)), "another uid's directory");
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(!is_ours(&link, uid), "a symlink to our directory");
        let file = root.path().join("file");
        fs::write(&file, b"").unwrap();
        assert!(!is_ours(&file, uid), "a file");
    }

    #[test]
    fn symlink_and_non_directory_are_refused() {
        let link = DirFacts { is_symlink: true, is_dir: false, uid: 7, mode: 0o120777 };
        assert!(matches!(check_dir_facts(Path::new("/x"), link, 7), Err(RuntimeDirError::Symlink { .. })));
        let file = DirFacts { is_symlink: false, is_dir: false, uid: 7, mode: 0o100600 };
        assert!(matches!(check_dir_facts(Path::new("/x"), file, 7), Err(RuntimeDirError::NotADirectory { .. })));
    }
}
