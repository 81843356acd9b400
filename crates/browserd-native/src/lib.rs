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
//! - [`doctor`]: `browserd doctor`'s default-path checks (browser launch, sandbox, profile, journal, runtime dir,
//!   the broker a stripped-environment host reaches); the extension checks of [`install`] follow only when installed
//!   or asked.
//! - [`install_steps`]: what makes install/uninstall safe to interrupt (pending record, leftovers, `--fault-after`).
//! - [`cli`]: the clap subcommands and [`cli::run`].
//!
//! # Wire protocol (extension ⇄ broker; the host only relays)
//!
//! - extension → broker: `{"type":"hello","instance","seq","controlEpoch","recoveredDetaches","userAgent","params":
//!   {role, protocol:{min,max}, components, capabilities}}` first; then `{"type":"reply","id","ok","result"|"error":
//!   {code,message}}` and `{"type":"event","seq","kind",…}` with `kind` one of `cdp` (`source`,`method`,`params`),
//!   `detach` (`source`,`reason`), `tabCreated`/`tabUpdated` (`tab`), `tabRemoved` (`tabId`,`targetId`,`owner`),
//!   `stopped` (`via`,`controlEpoch`,`droppedInputs`,`detached`,`reason`). `seq` increases by one per event.
//! - broker → extension: `{"type":"welcome","protocolVersion","broker"}` or `{"type":"refused","message"}`, then
//!   `{"type":"call","id","cmd","args"[, "lane":"priority"]}`. Commands: `ping`, `status`, `resync`, `cdp.send`
//!   (`target:{tabId[,sessionId]}`, `method`, `params`, `fence:{token,epoch}` when a lease is granted),
//!   `debugger.attach|detach|getTargets`, `tabs.create|remove|get|query|update`, `own.claim|release|list`, `lease.grant|revoke`, `stop`, `cancel`.
//! - host → endpoint only: `{"type":"host","origin","extensionId","hostVersion","pid"}` first; `{"type":"probe"}` from
//!   `doctor` instead gets `{"type":"probeResult","paired","extension"}`. Host → extension only: `{"type":"chunk","id",
//!   "index","count","data"}` (base64 of ≤ 256 KiB) and `{"type":"hostError","message"}`.
//!
//! The broker mounts the endpoint (`browserd_broker`: `<runtime dir>/extension.sock`, on by default) and turns a link
//! into its extension browser (`browserd_broker::extension::ExtensionProvider`: a `ChromiumProvider` of kind
//! `Extension` over `link.relay_transport`, tab ownership per agent session through the link, write leases granted to
//! the extension, `LinkEvent::Stopped` → cancel page work with `USER_STOPPED`). When nothing listens at the default
//! socket, the native host starts the broker (`browserd broker run --daemon`) and waits for it.
//!
//! The relay runs each tab's commands for the session that owns it (recorded when the link creates or claims the tab),
//! gives every new debugger attachment a new synthesized session id (`tab-<id>.<n>`; CDP clients treat a detached
//! session id as dead), and tells its client when the extension detached by itself (Stop, release).

pub mod cli;
pub mod doctor;
pub mod framing;
pub mod host;
pub mod install;
pub mod install_steps;
pub mod link;
pub mod relay;

pub use host::run_native_host;
pub use link::{ExtensionEndpoint, ExtensionLink, LinkEvent};
pub use relay::RelayTransport;
