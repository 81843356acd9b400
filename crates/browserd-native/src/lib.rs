//! browserd's real-profile path: the Native Messaging host, the broker-side extension link, the CDP relay transport
//! over `chrome.debugger`, and install/doctor/uninstall.
//!
//! # Topology
//!
//! ```text
//! MV3 extension (extension/) ⇄ Native Messaging (stdio, 4-byte LE length + JSON) ⇄ native host (`browserd native-host`)
//!     ⇄ Unix socket `<runtime dir>/extension.sock` (0600, NDJSON, same-uid) ⇄ ExtensionEndpoint → ExtensionLink
//!     → RelayTransport (browserd_cdp::Transport) → Cdp → ChromiumProvider (ProviderKind::Extension)
//! ```
//!
//! - [`framing`]: frames, chunking of host → extension messages (≤ 256 KiB raw per chunk, each frame < 1 MiB, total
//!   cap), the outbound writer with a priority lane (Stop/cancel never wait behind a blob).
//! - [`host`]: [`host::run_native_host`] — stdout carries only frames, logs on stderr, exits on stdin EOF, connects to
//!   the endpoint (`$BROWSERD_EXTENSION_SOCKET` overrides the path) and relays.
//! - [`link`]: [`link::ExtensionEndpoint`] pairs hosts (peer uid, allowed extension ids, `hello` negotiation,
//!   capabilities) and yields [`link::ExtensionLink`]s: tabs, ownership, leases/fences, Stop, numbered events with
//!   resync on gaps.
//! - [`relay`]: [`relay::RelayTransport`], a browser-level CDP endpoint emulated over `chrome.debugger`.
//! - [`install`]: manifests per brand and OS (Linux live; macOS/Windows as data), wrapper script, receipt, doctor.
//! - [`cli`]: the clap subcommands and [`cli::run`].
//!
//! The broker mounts the endpoint: bind it at `<runtime dir>/extension.sock`, take links from the receiver, build
//! `Cdp::spawn(link.relay_transport(session), ..)` and a `ChromiumProvider` of kind `Extension`, forward
//! `LinkEvent::Stopped` to cancel queued work with `USER_STOPPED`.

pub mod cli;
pub mod framing;
pub mod host;
pub mod install;
pub mod link;
pub mod relay;

pub use host::run_native_host;
pub use link::{ExtensionEndpoint, ExtensionLink, LinkEvent};
pub use relay::RelayTransport;
