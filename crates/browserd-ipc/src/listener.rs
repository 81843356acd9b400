//! The broker's listening socket: `broker.sock` bound under the instance lock, made 0600, recovered when stale, and
//! removed again when the listener goes away.

use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::net::{UnixListener, UnixStream};

use crate::lock::InstanceLock;
use crate::paths::Platform;
use crate::peer::PeerCred;
use crate::rundir::RuntimeDir;

/// How long a probe connect to an existing socket may take before we decide something is alive behind it.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Why the broker socket was not bound.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    /// The lock passed in guards another directory.
    #[error("the instance lock {lock_dir} does not guard {dir}; acquire the lock of the directory you bind in")]
    WrongLock {
        /// The directory being bound in.
        dir: PathBuf,
        /// The directory the lock guards.
        lock_dir: PathBuf,
    },
    /// The socket path does not fit `sockaddr_un`.
    #[error(
        "the socket path {path} is {len} bytes, over the system limit of {max}; set XDG_RUNTIME_DIR to a shorter \
         directory"
    )]
    PathTooLong {
        /// The socket path.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
        /// The platform limit.
        max: usize,
    },
    /// Something that is not a socket sits where the socket goes; we do not delete arbitrary files.
    #[error("{path} exists and is not a socket; move it away (`rm {path}` if it is junk) and retry")]
    NotASocket {
        /// The socket path.
        path: PathBuf,
    },
    /// The lock was free, yet a process answers on the socket (a broker from a version without the lock, or one
    /// whose lock file was deleted).
    #[error(
        "a process is already listening on {path} although the broker lock is free; stop it (`browserd broker stop`, \
         or find it with `ss -xlp | grep broker.sock`) and retry"
    )]
    InUse {
        /// The socket path.
        path: PathBuf,
    },
    /// Binding, removing the stale socket or setting its mode failed.
    #[error("cannot create the broker socket {path}: {source}; check the runtime directory's permissions")]
    Io {
        /// The socket path.
        path: PathBuf,
        /// The failing system call's error.
        source: io::Error,
    },
}

/// Fails with [`BindError::PathTooLong`] when `path` does not fit this platform's `sun_path`.
pub(crate) fn check_socket_path_len(path: &Path) -> Result<(), BindError> {
    let len = path.as_os_str().len();
    let max = Platform::current().max_socket_path_len();
    if len > max { Err(BindError::PathTooLong { path: path.to_path_buf(), len, max }) } else { Ok(()) }
}

/// The bound broker socket. Dropping it closes the socket and removes `broker.sock` if it is still the file we
/// created.
#[derive(Debug)]
pub struct BrokerListener {
    /// The listening socket.
    listener: UnixListener,
    /// `broker.sock`.
    path: PathBuf,
    /// Device and inode of the socket file we bound, so drop never removes a successor's socket.
    identity: (u64, u64),
    /// The uid every peer must have.
    uid: u32,
}

impl BrokerListener {
    /// Binds `broker.sock` in `dir`. The held `lock` proves no other broker of this user is running, so a socket file
    /// left there is stale: if nothing answers a connect to it, it is removed and the socket is bound again. A
    /// non-socket file or a live listener is refused.
    ///
    /// The socket is bound inside the 0700 directory and then set to 0600, so no other user can reach it in the
    /// window between the two. Needs a tokio runtime.
    pub async fn bind(dir: &RuntimeDir, lock: &InstanceLock) -> Result<Self, BindError> {
        if lock.dir() != dir.path() {
            return Err(BindError::WrongLock { dir: dir.path().to_path_buf(), lock_dir: lock.dir().to_path_buf() });
        }
        let path = dir.socket_path();
        check_socket_path_len(&path)?;
        let io_err = |source| BindError::Io { path: path.clone(), source };
        match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(io_err(source)),
            Ok(meta) if !meta.file_type().is_socket() => return Err(BindError::NotASocket { path }),
            Ok(_) => match tokio::time::timeout(PROBE_TIMEOUT, UnixStream::connect(&path)).await {
                Ok(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    tracing::info!(socket = %path.display(), "removing a stale broker socket (nobody answers, lock is free)");
                    match fs::remove_file(&path) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                        Err(source) => return Err(io_err(source)),
                    }
                }
                // Vanished between the lstat and the probe: nothing to remove.
                Ok(Err(e)) if e.kind() == io::ErrorKind::NotFound => {}
                Ok(Err(source)) => return Err(io_err(source)),
                // It answered, or it is alive but too busy to answer in time.
                Ok(Ok(_)) | Err(_) => return Err(BindError::InUse { path }),
            },
        }
        let listener = UnixListener::bind(&path).map_err(io_err)?;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).map_err(io_err)?;
        let meta = fs::symlink_metadata(&path).map_err(io_err)?;
        Ok(BrokerListener { listener, identity: (meta.dev(), meta.ino()), path, uid: dir.uid() })
    }

    /// `broker.sock`.
    pub fn socket_path(&self) -> &Path {
        &self.path
    }

    /// The uid every peer must have.
    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// Accepts one connection and reads its credentials, without deciding anything (see [`crate::serve`], which
    /// applies [`crate::check_peer`]).
    pub async fn accept(&self) -> io::Result<(UnixStream, PeerCred)> {
        let (stream, _addr) = self.listener.accept().await?;
        let peer = PeerCred::of(&stream)?;
        Ok((stream, peer))
    }
}

impl Drop for BrokerListener {
    fn drop(&mut self) {
        let ours = fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.identity);
        if ours && let Err(e) = fs::remove_file(&self.path) {
            tracing::warn!(socket = %self.path.display(), error = %e, "could not remove the broker socket");
        }
    }
}
