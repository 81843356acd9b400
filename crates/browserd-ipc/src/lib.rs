//! browserd's local IPC: how clients (CLI, MCP server, host adapters, native host) reach the one broker of their OS user.
//!
//! # What it owns
//!
//! - [`RuntimeDir`]: the private runtime directory, created 0700 and refused (typed [`RuntimeDirError`] saying what
//!   to do) when it is a symlink, not a directory, owned by another uid, or open to the group or others. Checked with
//!   `lstat`, then opened with `O_NOFOLLOW | O_DIRECTORY` and re-checked with `fstat` on that descriptor.
//! - [`InstanceLock`]: the single-instance lock, `broker.lock` held with `flock` for the broker's life; a second
//!   broker gets [`AcquireLockError::AlreadyRunning`] naming the holder's pid. A crashed broker's lock is released by
//!   the kernel.
//! - [`BrokerListener`]: `broker.sock`, bound under the lock inside the 0700 directory and then set to 0600; a stale
//!   socket (nobody answers, lock free) is removed and bound again; a live one, or a non-socket file, is refused.
//! - [`check_peer`]: the same-uid decision (`SO_PEERCRED`) made on every accepted connection, and by clients on the
//!   broker ([`ConnectError::ForeignBroker`]).
//! - [`FramedConnection`] / [`FramedReader`] / [`FramedWriter`]: newline-delimited JSON, one JSON-RPC message per
//!   line, with a maximum frame size ([`DEFAULT_MAX_FRAME`], 16 MiB) enforced while reading, so no peer can make us
//!   buffer more: an over-long line is read to its end unkept and reported as [`FrameError::TooLarge`] with its
//!   `id` ([`IdScanner`]), so the peer can be answered and the connection goes on.
//! - [`serve`]: the accept loop (mini-redis style): one task per connection, a connection cap, graceful shutdown
//!   through a `CancellationToken` with a grace period, panics confined to their connection.
//! - [`connect`] and [`connect_or_spawn`]: the client, which starts the broker on demand through a callback and retries
//!   with a bounded backoff, reporting [`ConnectProgress`].
//! - [`IdleTracker`]: connected clients plus an "owns resources" flag; fires a token after a configured idle time.
//!
//! It moves `serde_json::Value`s and knows nothing of the protocol: the broker maps values to `browserd-protocol`
//! types. It does not depend on `browserd-core` or `browserd-protocol`.
//!
//! # Where the socket lives
//!
//! `$XDG_RUNTIME_DIR/browserd/broker.sock` (with `broker.lock` beside it); when `XDG_RUNTIME_DIR` is unset, empty or
//! relative (Codex and the MCP SDK start servers without it), `/run/user/<uid>/browserd/broker.sock` when
//! `/run/user/<uid>` is a real directory owned by this uid — the directory a login session's `XDG_RUNTIME_DIR` names,
//! so every client reaches the same broker whatever environment its host passed — else
//! `/tmp/browserd-<uid>/broker.sock`. See [`paths::unix_runtime_dir`]; `BROWSERD_TEST_RUN_USER_BASE` replaces
//! `/run/user` in tests only. The macOS rule (`$TMPDIR/browserd`)
//! and the Windows pipe name (`\\.\pipe\browserd-<user SID or name>`, [`paths::windows_pipe_name`]) are computed
//! and unit-tested as data but **not tested on those operating systems**; the socket code is Unix-only and Windows is
//! unsupported.
//!
//! # Threat boundary
//!
//! Defended: other local users. They cannot enter the 0700 directory or open the 0600 socket; if they pre-create the
//! directory under `/tmp` (squatting), make it a symlink, or loosen its mode, the broker and clients refuse it; a
//! connection from another uid that still gets through (e.g. a descriptor passed on) is closed by the peer check; a
//! client refuses a broker that runs as another uid. There is no network listener.
//!
//! Out of scope: processes running as the same user (they can ptrace the broker, read its memory and the browser
//! profile anyway) and root. Pairing the native host with the broker and per-request policy are other layers' jobs.
//!
//! # What it needs
//!
//! Unix (tested on Linux), a tokio runtime with I/O and time enabled, and a writable parent for the runtime directory
//! (`$XDG_RUNTIME_DIR` or `/tmp`). Socket paths must fit `sun_path` (107 bytes on Linux), otherwise
//! [`BindError::PathTooLong`].
//!
//! # How the broker and clients use it
//!
//! ```text
//! broker:  dir = RuntimeDir::from_env()?            // create 0700 / refuse unsafe
//!          lock = InstanceLock::acquire(&dir)?       // AlreadyRunning { pid } -> exit, another broker serves
//!          listener = BrokerListener::bind(&dir, &lock).await?   // stale socket recovered, 0600
//!          idle = IdleTracker::start(idle_after);    // broker calls idle.set_owns_resources(..) as sessions come/go
//!          serve(listener, handler, shutdown /* e.g. a child of idle.idle() and `broker stop` */, opts).await;
//!          drop(lock)                                // after the broker's own cleanup
//! client:  conn = connect_or_spawn(&RuntimeDir::from_env()?, || spawn("browserd broker --daemon"), &opts, report)
//! ```
//!
//! Measured with `examples/ipc_rtt.rs` (release build, server in a separate process, 2-core AMD EPYC VM under a load of
//! about 3 from parallel builds): warm status-sized round trip p50 ≈ 50 µs, p95 ≈ 60 µs; fresh connect + first call
//! p50 ≈ 86 µs, p95 ≈ 122 µs. The BRIEF §9 goal for a warm broker round trip is p95 ≤ 2 ms.
//!
//! # Layout
//!
//! `paths` (pure rules) → `rundir` → `lock` → `listener` + `peer` → `frame` → `server` / `client`; `idle` stands
//! alone.

pub mod paths;

#[cfg(unix)]
pub mod client;
#[cfg(unix)]
pub mod frame;
#[cfg(unix)]
pub mod idle;
#[cfg(unix)]
pub mod listener;
#[cfg(unix)]
pub mod lock;
pub mod oversize;
#[cfg(unix)]
pub mod peer;
#[cfg(unix)]
pub mod rundir;
#[cfg(unix)]
pub mod server;

#[cfg(unix)]
pub use crate::{
    client::{ConnectError, ConnectProgress, SpawnOptions, connect, connect_or_spawn, connect_with_limit},
    frame::{DEFAULT_MAX_FRAME, FrameError, FramedConnection, FramedReader, FramedWriter},
    idle::{ClientGuard, IdleTracker},
    listener::{BindError, BrokerListener},
    lock::{AcquireLockError, InstanceLock},
    peer::{PeerCred, PeerRefused, check_peer},
    rundir::{RuntimeDir, RuntimeDirError, default_runtime_dir, is_ours},
    server::{ConnectionContext, ServeOptions, ServeSummary, serve},
};
pub use oversize::IdScanner;
pub use paths::{DirSource, Platform};
