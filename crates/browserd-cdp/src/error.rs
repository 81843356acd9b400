//! The errors of the CDP layer: transport failures, call failures and launch failures, each saying what to do next.

use std::path::PathBuf;

/// A transport could not carry a message.
///
/// `Closed` is the ordinary end of a connection (the browser exited, the socket closed); the other variants are faults.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The peer is gone; `reason` says why (for example "browser process exited with status 0").
    #[error("the CDP transport closed: {reason}")]
    Closed { reason: String },
    /// An I/O error on the underlying pipe or socket.
    #[error("CDP transport I/O failed while {action}: {message}; the connection is unusable, reconnect or relaunch")]
    Io { action: &'static str, message: String },
    /// The peer sent something that is not a CDP message.
    #[error("the CDP peer sent a malformed message ({detail}); check that the endpoint is a Chrome DevTools endpoint")]
    Malformed { detail: String },
    /// A message exceeded the size limit of the transport.
    #[error("a CDP message of at least {size} bytes exceeds the limit of {limit} bytes; request less data per call")]
    TooLarge { size: usize, limit: usize },
    /// The endpoint could not be reached or did not accept the connection.
    #[error("could not connect to the CDP endpoint {endpoint}: {message}")]
    Connect { endpoint: String, message: String },
    /// The endpoint refused the credentials (HTTP 401 or 403 on discovery or the WebSocket upgrade).
    #[error("the CDP endpoint {endpoint} refused the credentials (HTTP {status}); {message}")]
    NotAuthorised { endpoint: String, status: u16, message: String },
    /// The endpoint (a grid) has no free slot and its queue is full (HTTP 429, or 503): retry later.
    #[error(
        "the browser grid at {endpoint} is full (no free browser and its queue is full); retry in {} s, or raise \
         the grid's concurrency/queue limits",
        retry_after_ms.unwrap_or(5_000).div_ceil(1000)
    )]
    Busy { endpoint: String, retry_after_ms: Option<u64> },
    /// The endpoint or one of its features is not supported by this build.
    #[error("unsupported CDP endpoint {endpoint}: {message}")]
    Unsupported { endpoint: String, message: String },
}

/// A CDP call failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CdpError {
    /// The browser answered with a protocol error; the command was received and rejected.
    #[error("the browser rejected the command: {message} (CDP error {code}); check the method name and parameters")]
    Protocol { code: i64, message: String },
    /// No answer arrived before the deadline. A late answer is ignored.
    #[error(
        "{method} got no answer within the deadline; the page may be busy or hung: retry with a longer deadline, or close the target"
    )]
    Timeout { method: String },
    /// The caller cancelled the call before an answer arrived. The command may still run in the browser.
    #[error("the call was cancelled before the browser answered; the command may still have taken effect")]
    Cancelled,
    /// The target (page, frame, worker) or its session went away while the call was pending or before it was sent.
    #[error("the target of this call is gone: {reason}; attach to a live target and retry")]
    TargetClosed { reason: String },
    /// The whole connection to the browser is gone.
    #[error("the connection to the browser is closed: {reason}; relaunch or reconnect the browser")]
    ConnectionClosed { reason: String },
    /// The transport failed while connecting or carrying the call.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The browser's answer could not be understood.
    #[error("the browser sent an answer that is not valid CDP ({detail}); this is a bug in browserd or the browser")]
    InvalidResponse { detail: String },
}

/// A managed browser could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// No Chromium-family executable was found.
    #[error(
        "no Chromium executable found (tried: {}); install one with `apt-get install chromium`, or set BROWSERD_CHROMIUM to its path",
        tried.join(", ")
    )]
    ExecutableNotFound { tried: Vec<String> },
    /// A headed browser was asked for, but there is no display.
    #[error(
        "a headed browser needs a display, and neither DISPLAY nor WAYLAND_DISPLAY is set; run under a display \
         (for example `xvfb-run`) or launch headless"
    )]
    NoDisplay,
    /// The executable exists but could not be started.
    #[error("could not start {}: {message}; check that it is an executable Chromium binary", path.display())]
    Spawn { path: PathBuf, message: String },
    /// The profile directory could not be prepared.
    #[error("could not prepare the browser profile directory {}: {message}; check permissions and free space", path.display())]
    Profile { path: PathBuf, message: String },
    /// The browser started but did not answer over CDP.
    #[error(
        "the browser at {} started but did not answer over CDP: {source}; if its profile directory is in use by another \
         browser, use a different one",
        path.display()
    )]
    Handshake { path: PathBuf, source: CdpError },
}
