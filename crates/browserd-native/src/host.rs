//! The Native Messaging host: started by the browser with the extension origin, it relays frames between the
//! extension (stdin/stdout) and the broker-side [`crate::link`] endpoint (a Unix socket, NDJSON). stdout carries only
//! frames; logs go to stderr. It exits promptly on stdin EOF (Chromium kills a host about 2 s after closing its stdin).

use std::path::PathBuf;
use std::time::Duration;

use browserd_ipc::{FramedConnection, PeerCred, RuntimeDir, check_peer};
use serde_json::{Value, json};
use tokio::net::UnixStream;

use crate::framing::{self, Lane, MAX_FROM_EXTENSION, lane_of, read_frame, spawn_writer};

/// Environment variable that overrides the endpoint socket (tests, custom setups). Chromium passes its environment to
/// the host, so setting it on the browser process is enough.
pub const SOCKET_ENV: &str = "BROWSERD_EXTENSION_SOCKET";
/// File name of the endpoint socket inside browserd's runtime directory.
pub const SOCKET_NAME: &str = "extension.sock";
/// Largest NDJSON line on the host ↔ link socket (screenshots travel extension → broker).
pub const LINK_MAX_LINE: usize = MAX_FROM_EXTENSION + 1024 * 1024;

/// Why the host stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    #[error(
        "`{0}` is not an extension origin; the browser starts the host with `chrome-extension://<id>/` — run it through the browser, not by hand"
    )]
    BadOrigin(String),
    #[error(
        "no browserd endpoint at {path}: {message}; start browserd (the broker mounts the extension endpoint) and reload the extension"
    )]
    NoEndpoint { path: PathBuf, message: String },
    #[error("the browserd runtime directory is unusable: {0}")]
    RuntimeDir(String),
    #[error("the endpoint at {0} runs as another user; refusing to relay to it")]
    ForeignEndpoint(PathBuf),
    #[error("the browserd endpoint refused the pairing: {0}")]
    Refused(String),
    #[error(transparent)]
    Framing(#[from] framing::FramingError),
}

/// Checks `chrome-extension://<32 letters a-p>/` and returns the id.
pub fn parse_origin(origin: &str) -> Result<String, HostError> {
    let id = origin
        .strip_prefix("chrome-extension://")
        .and_then(|r| r.strip_suffix('/'))
        .filter(|id| id.len() == 32 && id.bytes().all(|b| (b'a'..=b'p').contains(&b)))
        .ok_or_else(|| HostError::BadOrigin(origin.to_owned()))?;
    Ok(id.to_owned())
}

/// Where the host looks for the endpoint: `$BROWSERD_EXTENSION_SOCKET`, else `<runtime dir>/extension.sock`.
pub fn endpoint_path() -> Result<PathBuf, HostError> {
    endpoint_socket().map_err(|e| HostError::RuntimeDir(e.to_string()))
}

/// [`endpoint_path`] with the runtime directory's own error (`browserd doctor` turns it into the fixing command).
pub(crate) fn endpoint_socket() -> Result<PathBuf, browserd_ipc::RuntimeDirError> {
    if let Some(p) = std::env::var_os(SOCKET_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    Ok(RuntimeDir::from_env()?.path().join(SOCKET_NAME))
}

async fn connect_endpoint(path: &PathBuf) -> Result<FramedConnection, HostError> {
    // The broker may be starting: retry briefly with a growing pause.
    let mut wait = Duration::from_millis(20);
    let mut last = String::new();
    for _ in 0..8 {
        match UnixStream::connect(path).await {
            Ok(stream) => {
                let peer = PeerCred::of(&stream)
                    .map_err(|e| HostError::NoEndpoint { path: path.clone(), message: e.to_string() })?;
                check_peer(nix::unistd::getuid().as_raw(), &peer)
                    .map_err(|_| HostError::ForeignEndpoint(path.clone()))?;
                return Ok(FramedConnection::new(stream, peer, LINK_MAX_LINE));
            }
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(Duration::from_millis(400));
    }
    Err(HostError::NoEndpoint { path: path.clone(), message: last })
}

/// Environment variable naming the `browserd` executable the host starts the broker with (default: this executable when
/// it is `browserd`, else a `browserd` next to it).
pub const BROKER_EXE_ENV: &str = "BROWSERD_BROKER_EXE";

/// The executable that has the `broker run` subcommand, if one can be found.
pub fn broker_exe() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(BROKER_EXE_ENV).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let me = std::env::current_exe().ok()?;
    if me.file_name().is_some_and(|n| n == "browserd") {
        return Some(me);
    }
    let sibling = me.parent()?.join("browserd");
    sibling.is_file().then_some(sibling)
}

/// Starts `<exe> broker run --daemon` detached (own process group, output appended to `broker.log` in the runtime
/// directory), so the broker outlives this host.
fn spawn_broker(exe: &std::path::Path, runtime_dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::process::CommandExt;
    let log = std::fs::OpenOptions::new().create(true).append(true).open(runtime_dir.join("broker.log"))?;
    let mut child = std::process::Command::new(exe)
        .args(["broker", "run", "--daemon"])
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()?;
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

/// Connects to the endpoint; when nothing listens at the default socket, starts the broker (which mounts the
/// endpoint) and waits for it (bounded).
async fn connect_or_start(path: &PathBuf) -> Result<FramedConnection, HostError> {
    let first = match connect_endpoint(path).await {
        Ok(c) => return Ok(c),
        Err(e @ HostError::ForeignEndpoint(_)) => return Err(e),
        Err(e) => e,
    };
    let overridden = std::env::var_os(SOCKET_ENV).is_some_and(|p| !p.is_empty());
    let (Some(exe), Some(dir)) = (broker_exe(), path.parent()) else { return Err(first) };
    if overridden {
        return Err(first);
    }
    tracing::info!(exe = %exe.display(), "no browserd endpoint; starting the broker");
    if let Err(e) = spawn_broker(&exe, dir) {
        return Err(HostError::NoEndpoint {
            path: path.clone(),
            message: format!("starting the broker with {} failed: {e}", exe.display()),
        });
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(8);
    loop {
        match connect_endpoint(path).await {
            Ok(c) => return Ok(c),
            Err(e) if tokio::time::Instant::now() >= deadline => return Err(e),
            Err(_) => {}
        }
    }
}

/// Runs the host until stdin ends (exit code 0) or the endpoint goes away (exit code 1; the extension reconnects with
/// backoff, which starts a new host).
pub async fn run_native_host(origin: &str) -> Result<i32, HostError> {
    let ext_id = parse_origin(origin)?;
    let (out, writer) = spawn_writer(tokio::io::stdout(), 64);
    let path = endpoint_path()?;
    let conn = match connect_or_start(&path).await {
        Ok(c) => c,
        Err(e) => {
            // Tell the extension why, so its popup can show it, then exit (it retries with backoff).
            let msg = json!({"type": "hostError", "message": e.to_string()}).to_string().into_bytes();
            let _ = out.send(Lane::Priority, msg).await;
            drop(out);
            let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
            return Err(e);
        }
    };
    tracing::info!(extension = %ext_id, endpoint = %path.display(), "native host connected to the browserd endpoint");
    let (mut reader, mut sock_w) = conn.into_split();
    let intro = json!({
        "type": "host",
        "origin": origin,
        "extensionId": ext_id,
        "hostVersion": env!("CARGO_PKG_VERSION"),
        "pid": std::process::id(),
    });
    sock_w.send(&intro).await.map_err(|e| HostError::NoEndpoint { path: path.clone(), message: e.to_string() })?;

    // endpoint → extension
    let out2 = out.clone();
    let mut down = tokio::spawn(async move {
        loop {
            match reader.recv().await {
                Ok(Some(Value::Object(m))) if m.get("type").and_then(Value::as_str) == Some("refused") => {
                    return Err(m.get("message").and_then(Value::as_str).unwrap_or("refused").to_owned());
                }
                Ok(Some(v)) => {
                    let lane = lane_of(&v);
                    if out2.send(lane, v.to_string().into_bytes()).await.is_err() {
                        return Ok(());
                    }
                }
                Ok(None) => return Ok(()),
                Err(e) => return Err(e.to_string()),
            }
        }
    });

    // extension → endpoint
    let mut stdin = tokio::io::stdin();
    let code = loop {
        tokio::select! {
            frame = read_frame(&mut stdin, MAX_FROM_EXTENSION) => match frame {
                Ok(Some(bytes)) => {
                    let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
                        tracing::warn!("the extension sent a frame that is not JSON; ignored");
                        continue;
                    };
                    if let Err(e) = sock_w.send(&value).await {
                        tracing::warn!("the browserd endpoint went away: {e}");
                        break 1;
                    }
                }
                Ok(None) => { tracing::info!("stdin closed by the browser; exiting"); break 0; }
                Err(e) => { tracing::warn!("reading from the browser failed: {e}"); break 1; }
            },
            res = &mut down => {
                match res {
                    Ok(Ok(())) => tracing::warn!("the browserd endpoint closed the connection"),
                    Ok(Err(reason)) => {
                        let msg = json!({"type": "hostError", "message": format!("browserd refused the pairing: {reason}")});
                        let _ = out.send(Lane::Priority, msg.to_string().into_bytes()).await;
                        tracing::warn!("the browserd endpoint refused: {reason}");
                    }
                    Err(_) => {}
                }
                break 1;
            }
        }
    };
    down.abort();
    drop(out);
    // Let queued frames out, but never linger past Chromium's kill window.
    let _ = tokio::time::timeout(Duration::from_millis(500), writer).await;
    Ok(code)
}
