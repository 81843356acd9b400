//! browserd's Chrome DevTools Protocol layer: the connection to one browser, its transports, and the managed Chromium.
//!
//! # What it owns
//!
//! - [`Cdp`]: a cheap, cloneable handle to **one connection task per browser**. The task owns the [`Transport`],
//!   correlates calls with answers by id, and demultiplexes events by flat CDP `sessionId`. Every call has a deadline
//!   and may be cancelled; when a session is detached or its target crashes, its pending calls fail with
//!   [`CdpError::TargetClosed`] naming the reason (and until a crashed page is reloaded, calls that need its renderer
//!   fail the same way at once instead of waiting out their deadline); when the transport closes, every pending call
//!   fails with [`CdpError::ConnectionClosed`] naming why (for a managed browser: its exit status). Queues are
//!   bounded: calls wait for room (within their deadline) and a slow event subscriber is told how many events it lost.
//! - [`Cdp::set_auto_attach`]: recursive `Target.setAutoAttach {flatten: true}`; the task configures every attached
//!   child the same way and optionally resumes it (`Runtime.runIfWaitingForDebugger`).
//! - Transports, all behind the minimal [`Transport`] trait (send one JSON message, receive one):
//!   [`PipeTransport`] (`--remote-debugging-pipe`, NUL-terminated messages on fds 3 and 4), [`WsTransport`]
//!   (`ws://` and `wss://` endpoints such as a browser grid, TLS by rustls with the Mozilla roots plus any extra CA;
//!   `http://` and `https://` endpoints are resolved through `/json/version` by a hyper client, falling back to the
//!   endpoint itself; paths and queries are kept, and [`Endpoint`] gives the secret-free identity and the redacted form
//!   every message uses), and [`MemoryTransport`] for tests. The extension relay
//!   implements the same trait.
//! - [`ManagedBrowser`]: a Chromium process browserd starts, owns and stops.
//!
//! # How a managed browser is started
//!
//! [`ManagedBrowser::launch`] finds the executable ([`find_executable`]: the explicit option, `$BROWSERD_CHROMIUM`,
//! `/usr/lib/chromium/chromium`, then `chromium`, `chromium-browser`, `google-chrome`, `google-chrome-stable`,
//! `microsoft-edge` on `PATH`), makes a profile directory (a temporary one unless given, removed on shutdown) and
//! starts the browser in its own process group with `--remote-debugging-pipe` (the pipes are mapped onto fds 3 and 4
//! by the `command-fds` crate, so browserd itself has no `unsafe`), `--headless=new` unless headed (which needs
//! `DISPLAY` or `WAYLAND_DISPLAY`), `--no-sandbox` when running as root, flags that keep it off the network (no
//! background networking, component updates, sync, QUIC or first-run UI), `XDG_CONFIG_HOME`/`XDG_CACHE_HOME` inside
//! the profile, and `about:blank`.
//! It is ready once it answers `Browser.getVersion`. A watcher task reaps the process and reports its exit status,
//! which becomes the connection's close reason. [`ManagedBrowser::shutdown`] sends `Browser.close`, waits briefly,
//! kills the process group if needed, reaps it and removes the temporary profile; dropping a `ManagedBrowser` kills
//! the process group.
//!
//! # What it needs
//!
//! A tokio runtime (with the `process`, `net` and `time` drivers) and, for a managed browser, a Chromium-family
//! executable (`apt-get install chromium` on Debian). Linux only (pipes, process groups).

mod connection;
mod discovery;
mod endpoint;
mod error;
mod launch;
mod pipe;
mod transport;
mod ws;

pub use connection::{AutoAttach, Cdp, CdpEvent, ConnectionOptions, Queued, SessionEvents, SessionId};
pub use discovery::DEFAULT_RETRY_AFTER_MS;
pub use endpoint::{Endpoint, Scheme, redact_url};
pub use error::{CdpError, LaunchError, TransportError};
pub use launch::{
    BrowserExit, CHROMIUM_ENV, LaunchOptions, ManagedBrowser, ShutdownError, find_executable, find_executable_in,
    is_executable,
};
pub use pipe::{MAX_PIPE_MESSAGE, PipeTransport};
pub use transport::{MemoryTransport, Transport, memory_pair};
pub use ws::{ConnectOptions, WsTransport, connect_ws, connect_ws_with, resolve_ws_url};
