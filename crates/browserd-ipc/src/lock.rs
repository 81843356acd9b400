//! The single-instance lock: `broker.lock` in the runtime directory, held with `flock` for the broker's whole life.
//!
//! The kernel releases a `flock` when the last descriptor of its open file goes away, so a crashed or `kill -9`ed
//! broker never leaves a stale lock. The file itself stays (removing a lock file races with the next locker) and
//! holds the holder's pid as text, which is only a hint for error messages.
//!
//! The descriptor is close-on-exec (std's default), so browsers and other children the broker starts never inherit the
//! lock and cannot keep it alive after the broker dies.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::rundir::RuntimeDir;

/// Why the single-instance lock was not taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AcquireLockError {
    /// Another broker of this user holds the lock.
    #[error(
        "another browserd broker is already running ({}, lock {path}); use it, or stop it with `browserd broker stop`",
        match pid { Some(pid) => format!("pid {pid}"), None => "pid unknown".to_string() }
    )]
    AlreadyRunning {
        /// The holder's pid as it wrote it into the lock file, when readable.
        pid: Option<u32>,
        /// The lock file.
        path: PathBuf,
    },
    /// The lock path is a symlink, not a regular file, or owned by someone else.
    #[error("refusing the lock file {path}: {reason}; remove it (`rm {path}`) and retry")]
    Unsafe {
        /// The lock file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Opening, locking or writing the lock file failed.
    #[error("cannot use the lock file {path}: {source}; check the runtime directory's permissions and free space")]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The failing system call's error.
        source: io::Error,
    },
}

/// The held single-instance lock; dropping it releases the lock.
#[derive(Debug)]
pub struct InstanceLock {
    /// The open lock file; the `flock` lives as long as this descriptor.
    _file: Flock<File>,
    /// The lock file's path, for messages.
    path: PathBuf,
    /// The runtime directory it guards, so a listener can check it is bound under the same lock.
    dir: PathBuf,
}

impl InstanceLock {
    /// Takes the lock without waiting and records this process's pid in it. A second broker (in this process or any
    /// other) gets [`AcquireLockError::AlreadyRunning`] with the holder's pid.
    pub fn acquire(dir: &RuntimeDir) -> Result<Self, AcquireLockError> {
        let path = dir.lock_path();
        let file = open_lock_file(&path, dir.uid())?;
        let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => locked,
            Err((mut file, Errno::EWOULDBLOCK)) => {
                return Err(AcquireLockError::AlreadyRunning { pid: read_pid(&mut file), path });
            }
            Err((_, errno)) => return Err(AcquireLockError::Io { path, source: errno.into() }),
        };
        let io_err = |source| AcquireLockError::Io { path: path.clone(), source };
        file.set_len(0).map_err(io_err)?;
        file.seek(SeekFrom::Start(0)).map_err(io_err)?;
        writeln!(&mut *file, "{}", std::process::id()).map_err(io_err)?;
        Ok(InstanceLock { _file: file, path: path.clone(), dir: dir.path().to_path_buf() })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The runtime directory this lock guards.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The pid recorded by whoever holds (or last held) the lock in `dir`, if the file exists and is readable.
    pub fn recorded_pid(dir: &RuntimeDir) -> Option<u32> {
        let mut file = open_lock_file(&dir.lock_path(), dir.uid()).ok()?;
        read_pid(&mut file)
    }

    /// Whether some process holds the lock in `dir` right now (probes with a non-blocking `flock` and releases it).
    pub fn is_held(dir: &RuntimeDir) -> Result<bool, AcquireLockError> {
        let path = dir.lock_path();
        let file = open_lock_file(&path, dir.uid())?;
        match Flock::lock(file, FlockArg::LockSharedNonblock) {
            Ok(_probe) => Ok(false),
            Err((_, Errno::EWOULDBLOCK)) => Ok(true),
            Err((_, errno)) => Err(AcquireLockError::Io { path, source: errno.into() }),
        }
    }
}

/// Opens (creating 0600) the lock file without following a symlink, and checks it is a regular file we own.
fn open_lock_file(path: &Path, uid: u32) -> Result<File, AcquireLockError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .map_err(|source| match source.raw_os_error() {
            Some(nix::libc::ELOOP) => {
                AcquireLockError::Unsafe { path: path.to_path_buf(), reason: "it is a symbolic link".into() }
            }
            _ => AcquireLockError::Io { path: path.to_path_buf(), source },
        })?;
    let meta = file.metadata().map_err(|source| AcquireLockError::Io { path: path.to_path_buf(), source })?;
    if !meta.is_file() {
        return Err(AcquireLockError::Unsafe { path: path.to_path_buf(), reason: "it is not a regular file".into() });
    }
    if meta.uid() != uid {
        return Err(AcquireLockError::Unsafe {
            path: path.to_path_buf(),
            reason: format!("it is owned by uid {}, not by you (uid {uid})", meta.uid()),
        });
    }
    Ok(file)
}

fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    // The pid is a few bytes; a larger file is not ours to trust.
    file.take(32).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}
