//! Tests against the real Chromium (`/usr/lib/chromium/chromium` or `$BROWSERD_CHROMIUM`); they always run.

use std::time::Duration;

use browserd_cdp::{
    AutoAttach, CdpError, CdpEvent, LaunchError, LaunchOptions, ManagedBrowser, SessionId, TransportError, connect_ws,
    resolve_ws_url,
};
use serde_json::{Value, json};
use tokio::sync::broadcast;

const T: Duration = Duration::from_secs(30);

async fn launch() -> ManagedBrowser {
    ManagedBrowser::launch(LaunchOptions::default()).await.expect("launch the managed Chromium")
}

async fn new_page(browser: &ManagedBrowser, url: &str) -> (String, SessionId) {
    let cdp = browser.cdp();
    let created = cdp.call(None, "Target.createTarget", json!({"url": url}), T).await.unwrap();
    let target_id = created["targetId"].as_str().unwrap().to_owned();
    let attached =
        cdp.call(None, "Target.attachToTarget", json!({"targetId": target_id, "flatten": true}), T).await.unwrap();
    (target_id, SessionId(attached["sessionId"].as_str().unwrap().to_owned()))
}

#[tokio::test]
async fn launch_get_version_evaluate_and_shutdown() {
    let browser = launch().await;
    assert!(browser.product().starts_with("Chrome/") || browser.product().starts_with("HeadlessChrome/"));
    let version = browser.cdp().call(None, "Browser.getVersion", json!({}), T).await.unwrap();
    assert_eq!(version["protocolVersion"], "1.3");
    let (_target, session) = new_page(&browser, "about:blank").await;
    let result = browser
        .cdp()
        .call(Some(&session), "Runtime.evaluate", json!({"expression": "1+1", "returnByValue": true}), T)
        .await
        .unwrap();
    assert_eq!(result["result"]["value"], Value::from(2));
    let pid = browser.pid().unwrap();
    let profile = browser.user_data_dir().unwrap().to_owned();
    let exit = browser.shutdown().await.unwrap();
    assert!(exit.status.is_some_and(|s| s.success()), "clean exit expected: {}", exit.description);
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "browser process {pid} still exists");
    assert!(!profile.exists(), "temporary profile {} was not removed", profile.display());
}

#[tokio::test]
async fn events_arrive_for_the_session() {
    let browser = launch().await;
    let (_target, session) = new_page(&browser, "about:blank").await;
    let cdp = browser.cdp();
    let mut events = cdp.session_events(&session);
    cdp.call(Some(&session), "Page.enable", json!({}), T).await.unwrap();
    cdp.call(Some(&session), "Page.navigate", json!({"url": "data:text/html,<title>x</title><p>hi</p>"}), T)
        .await
        .unwrap();
    let event = tokio::time::timeout(T, async {
        loop {
            let event = events.recv().await.unwrap();
            if event.method == "Page.loadEventFired" {
                return event;
            }
        }
    })
    .await
    .expect("Page.loadEventFired within the deadline");
    assert_eq!(event.session, Some(session));
    browser.shutdown().await.unwrap();
}

#[tokio::test]
async fn closing_the_target_fails_a_pending_call_with_target_closed() {
    let browser = launch().await;
    let (target, session) = new_page(&browser, "about:blank").await;
    let cdp = browser.cdp().clone();
    let pending = tokio::spawn({
        let cdp = cdp.clone();
        let session = session.clone();
        async move {
            cdp.call(
                Some(&session),
                "Runtime.evaluate",
                json!({"expression": "new Promise(() => {})", "awaitPromise": true}),
                T,
            )
            .await
        }
    });
    // Make sure the evaluate is in flight before closing: a second call on the session answers after it was sent.
    cdp.call(Some(&session), "Runtime.evaluate", json!({"expression": "0"}), T).await.unwrap();
    cdp.call(None, "Target.closeTarget", json!({"targetId": target}), T).await.unwrap();
    let err = pending.await.unwrap().unwrap_err();
    assert!(matches!(err, CdpError::TargetClosed { .. }), "expected TargetClosed, got {err:?}");
    // Later calls on the dead session fail the same way, without a round trip.
    let err = cdp.call(Some(&session), "Runtime.evaluate", json!({"expression": "1"}), T).await.unwrap_err();
    assert!(matches!(err, CdpError::TargetClosed { .. }), "expected TargetClosed, got {err:?}");
    browser.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_renderer_crash_fails_pending_calls_with_target_closed_naming_the_crash() {
    let browser = launch().await;
    let (target, session) = new_page(&browser, "about:blank").await;
    let cdp = browser.cdp().clone();
    let pending = tokio::spawn({
        let (cdp, session) = (cdp.clone(), session.clone());
        async move {
            cdp.call(
                Some(&session),
                "Runtime.evaluate",
                json!({"expression": "new Promise(() => {})", "awaitPromise": true}),
                T,
            )
            .await
        }
    });
    cdp.call(Some(&session), "Runtime.evaluate", json!({"expression": "0"}), T).await.unwrap();
    // Page.crash never answers: the renderer dies first.
    let crash = cdp.call(Some(&session), "Page.crash", json!({}), T).await.unwrap_err();
    for err in [crash, pending.await.unwrap().unwrap_err()] {
        let CdpError::TargetClosed { reason } = &err else { panic!("expected TargetClosed, got {err:?}") };
        assert!(reason.contains(&target) && reason.contains("crashed"), "{reason}");
    }
    assert!(!cdp.is_closed(), "a renderer crash does not end the browser connection");
    // Renderer calls fail at once while crashed; a reload brings the page back.
    let err = cdp.call(Some(&session), "Runtime.evaluate", json!({"expression": "1"}), T).await.unwrap_err();
    assert!(matches!(&err, CdpError::TargetClosed { reason } if reason.contains("Page.reload")), "{err:?}");
    let mut events = cdp.session_events(&session);
    cdp.call(Some(&session), "Page.reload", json!({}), T).await.unwrap();
    tokio::time::timeout(T, async {
        while events.recv().await.unwrap().method != "Inspector.targetReloadedAfterCrash" {}
    })
    .await
    .expect("the reload is reported");
    let result = cdp
        .call(Some(&session), "Runtime.evaluate", json!({"expression": "1+1", "returnByValue": true}), T)
        .await
        .unwrap();
    assert_eq!(result["result"]["value"], json!(2));
    browser.shutdown().await.unwrap();
}

#[tokio::test]
async fn killing_the_browser_fails_pending_calls_with_connection_closed_naming_the_exit() {
    let browser = launch().await;
    let (_target, session) = new_page(&browser, "about:blank").await;
    let cdp = browser.cdp().clone();
    let pending = tokio::spawn({
        let cdp = cdp.clone();
        async move {
            cdp.call(
                Some(&session),
                "Runtime.evaluate",
                json!({"expression": "new Promise(() => {})", "awaitPromise": true}),
                T,
            )
            .await
        }
    });
    tokio::task::yield_now().await;
    let pid = browser.pid().unwrap();
    let status = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
    assert!(status.success());
    let err = pending.await.unwrap().unwrap_err();
    let CdpError::ConnectionClosed { reason } = &err else { panic!("expected ConnectionClosed, got {err:?}") };
    assert!(reason.contains("signal 9"), "reason should name the kill: {reason}");
    assert!(cdp.is_closed());
    let err = cdp.call(None, "Browser.getVersion", json!({}), T).await.unwrap_err();
    assert!(matches!(err, CdpError::ConnectionClosed { .. }));
    let exit = browser.shutdown().await.unwrap();
    assert!(exit.description.contains("signal 9"), "{}", exit.description);
}

/// The pids of live processes in process group `pgid`, read from `/proc`.
fn processes_in_group(pgid: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // Fields after the parenthesised command name: state, ppid, pgrp, …
        let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2).and_then(|pgrp| pgrp.parse::<u32>().ok()) == Some(pgid) && fields.first() != Some(&"Z") {
            pids.push(pid);
        }
    }
    pids
}

#[tokio::test]
async fn shutdown_leaves_no_process_of_the_browser_behind() {
    let browser = launch().await;
    let pid = browser.pid().unwrap();
    // A page and its renderer make the process tree non-trivial.
    let (_target, session) = new_page(&browser, "data:text/html,<p>hello</p>").await;
    browser.cdp().call(Some(&session), "Runtime.evaluate", json!({"expression": "1"}), T).await.unwrap();
    assert!(processes_in_group(pid).len() > 1, "the browser runs helper processes in its group");
    let exit = browser.shutdown().await.unwrap();
    assert!(!exit.killed, "Browser.close should have been enough: {}", exit.description);
    assert_eq!(processes_in_group(pid), Vec::<u32>::new());
}

#[tokio::test]
async fn dropping_the_browser_kills_its_processes() {
    let browser = launch().await;
    let pid = browser.pid().unwrap();
    let cdp = browser.cdp().clone();
    drop(browser);
    let reason = tokio::time::timeout(T, cdp.closed()).await.expect("the connection closes");
    assert!(reason.contains("signal 9"), "{reason}");
    assert_eq!(processes_in_group(pid), Vec::<u32>::new());
}

#[tokio::test]
async fn a_browser_that_dies_at_startup_is_reported_with_its_exit_status() {
    let options = LaunchOptions { executable: Some("/bin/false".into()), ..LaunchOptions::default() };
    let err = ManagedBrowser::launch(options).await.unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, LaunchError::Handshake { .. }), "{err:?}");
    assert!(message.contains("exited with status 1"), "{message}");
}

#[tokio::test]
async fn a_missing_executable_says_how_to_install_one() {
    let options = LaunchOptions { executable: Some("/nonexistent/chromium".into()), ..LaunchOptions::default() };
    let err = ManagedBrowser::launch(options).await.unwrap_err();
    let message = err.to_string();
    assert!(message.contains("/nonexistent/chromium") && message.contains("apt-get install chromium"), "{message}");
}

#[tokio::test]
async fn browser_level_auto_attach_resumes_new_pages() {
    let browser = launch().await;
    let cdp = browser.cdp();
    let mut events = cdp.events();
    cdp.set_auto_attach(None, AutoAttach::default(), T).await.unwrap();
    let created = cdp.call(None, "Target.createTarget", json!({"url": "about:blank"}), T).await.unwrap();
    let target_id = created["targetId"].as_str().unwrap().to_owned();
    let session = tokio::time::timeout(T, async {
        loop {
            let event = events.recv().await.unwrap();
            if event.method == "Target.attachedToTarget" && event.params["targetInfo"]["targetId"] == target_id.as_str()
            {
                return SessionId(event.params["sessionId"].as_str().unwrap().to_owned());
            }
        }
    })
    .await
    .expect("the new page is auto-attached");
    // The page was paused for the debugger; evaluating only answers once the connection resumed it.
    let result = cdp
        .call(Some(&session), "Runtime.evaluate", json!({"expression": "21*2", "returnByValue": true}), T)
        .await
        .unwrap();
    assert_eq!(result["result"]["value"], json!(42));
    browser.shutdown().await.unwrap();
}

/// A Chromium started by the test itself with `--remote-debugging-port=0`, killed on drop.
struct RemoteChromium {
    child: tokio::process::Child,
    _profile: tempfile::TempDir,
    port: u16,
    browser_path: String,
}

async fn launch_remote() -> RemoteChromium {
    let executable = browserd_cdp::find_executable(None).unwrap();
    let profile = tempfile::tempdir().unwrap();
    let running_as_root =
        std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0).unwrap();
    let mut command = tokio::process::Command::new(executable);
    command
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--headless=new", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0"])
        .args(["--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync"])
        .args(["--disable-gpu", "--disable-quic"])
        .args(running_as_root.then_some("--no-sandbox"))
        .arg("about:blank")
        .env("XDG_CONFIG_HOME", profile.path().join("xdg"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let child = command.spawn().unwrap();
    let port_file = profile.path().join("DevToolsActivePort");
    let contents = tokio::time::timeout(T, async {
        loop {
            if let Ok(contents) = std::fs::read_to_string(&port_file)
                && contents.lines().count() >= 2
            {
                return contents;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("Chromium writes DevToolsActivePort");
    let mut lines = contents.lines();
    let port = lines.next().unwrap().trim().parse().unwrap();
    let browser_path = lines.next().unwrap().trim().to_owned();
    RemoteChromium { child, _profile: profile, port, browser_path }
}

#[tokio::test]
async fn remote_endpoint_by_ws_url_and_by_http_address() {
    let mut remote = launch_remote().await;
    tokio::time::timeout(Duration::from_secs(120), remote_endpoint_checks(&mut remote))
        .await
        .expect("the remote-endpoint checks finish");
}

async fn remote_endpoint_checks(remote: &mut RemoteChromium) {
    let ws_url = format!("ws://127.0.0.1:{}{}", remote.port, remote.browser_path);
    let http_url = format!("http://127.0.0.1:{}", remote.port);
    assert_eq!(resolve_ws_url(&http_url).await.unwrap(), ws_url);

    let by_http = connect_ws(&http_url).await.unwrap();
    let version = by_http.call(None, "Browser.getVersion", json!({}), T).await.unwrap();
    assert_eq!(version["protocolVersion"], "1.3");

    let cdp = connect_ws(&ws_url).await.unwrap();
    let created = cdp.call(None, "Target.createTarget", json!({"url": "about:blank"}), T).await.unwrap();
    let attached = cdp
        .call(None, "Target.attachToTarget", json!({"targetId": created["targetId"], "flatten": true}), T)
        .await
        .unwrap();
    let session = SessionId(attached["sessionId"].as_str().unwrap().to_owned());
    let mut events = cdp.session_events(&session);
    cdp.call(Some(&session), "Page.enable", json!({}), T).await.unwrap();
    let result = cdp
        .call(Some(&session), "Runtime.evaluate", json!({"expression": "1+1", "returnByValue": true}), T)
        .await
        .unwrap();
    assert_eq!(result["result"]["value"], json!(2));
    cdp.call(Some(&session), "Page.navigate", json!({"url": "data:text/html,<p>remote</p>"}), T).await.unwrap();
    tokio::time::timeout(T, async { while events.recv().await.unwrap().method != "Page.loadEventFired" {} })
        .await
        .expect("events arrive over the WebSocket");

    // Closing the browser closes both connections, naming the socket.
    let _ = cdp.call(None, "Browser.close", json!({}), T).await;
    let reason = cdp.closed().await;
    assert!(reason.contains("WebSocket"), "{reason}");
    assert!(by_http.closed().await.contains("WebSocket"));
    let status = tokio::time::timeout(T, remote.child.wait()).await.expect("the browser exits").unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn remote_endpoint_errors_say_what_is_wrong() {
    let err = connect_ws("ftp://127.0.0.1:1").await.unwrap_err();
    assert!(err.to_string().contains("unsupported"), "{err}");
    // A port nothing listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let err = connect_ws(&format!("http://127.0.0.1:{port}")).await.unwrap_err();
    assert!(matches!(err, CdpError::Transport(TransportError::Connect { .. })), "{err:?}");
    let err = connect_ws(&format!("ws://127.0.0.1:{port}/devtools/browser/x")).await.unwrap_err();
    assert!(matches!(err, CdpError::Transport(TransportError::Connect { .. })), "{err:?}");
}

/// Serves two pages on 127.0.0.1: `/` embeds `/frame` from `localhost` (another site, so an out-of-process iframe).
async fn serve_cross_site_pages() -> (u16, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let path = String::from_utf8_lossy(&request).split_whitespace().nth(1).unwrap_or("/").to_owned();
                let body = if path == "/frame" {
                    "<!doctype html><title>frame</title><p>inside the frame</p>".to_owned()
                } else {
                    format!("<!doctype html><title>top</title><iframe src='http://localhost:{port}/frame'></iframe>")
                };
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    (port, server)
}

/// Waits for `Target.attachedToTarget` of a `kind` target on `parent`; returns its params.
async fn attached(events: &mut broadcast::Receiver<CdpEvent>, parent: Option<SessionId>, kind: &str) -> Value {
    tokio::time::timeout(T, async {
        loop {
            let event = events.recv().await.unwrap();
            if event.method == "Target.attachedToTarget"
                && event.session == parent
                && event.params["targetInfo"]["type"] == kind
            {
                return event.params;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("a {kind} target is auto-attached"))
}

#[tokio::test]
async fn recursive_auto_attach_reaches_and_resumes_an_out_of_process_iframe() {
    let (port, server) = serve_cross_site_pages().await;
    let browser = launch().await;
    let cdp = browser.cdp();
    let mut events = cdp.events();
    cdp.set_auto_attach(None, AutoAttach::default(), T).await.unwrap();
    let created = cdp.call(None, "Target.createTarget", json!({"url": "about:blank"}), T).await.unwrap();
    let page_target = created["targetId"].as_str().unwrap().to_owned();
    // The browser-level auto-attach also attaches the startup page; skip to ours.
    let mut page = attached(&mut events, None, "page").await;
    while page["targetInfo"]["targetId"] != page_target.as_str() {
        page = attached(&mut events, None, "page").await;
    }
    let page_session = SessionId(page["sessionId"].as_str().unwrap().to_owned());
    let url = format!("http://127.0.0.1:{port}/");
    cdp.call(Some(&page_session), "Page.navigate", json!({"url": url}), T).await.unwrap();
    // The iframe is attached under the page's session because the page was configured like the browser.
    let frame = attached(&mut events, Some(page_session.clone()), "iframe").await;
    let frame_session = SessionId(frame["sessionId"].as_str().unwrap().to_owned());
    let href = cdp
        .call(
            Some(&frame_session),
            "Runtime.evaluate",
            json!({
                "expression": "new Promise(r => document.readyState === 'complete' ? r(location.href) \
                               : addEventListener('load', () => r(location.href)))",
                "awaitPromise": true,
                "returnByValue": true,
            }),
            T,
        )
        .await
        .unwrap();
    assert_eq!(href["result"]["value"], format!("http://localhost:{port}/frame"));
    browser.shutdown().await.unwrap();
    server.abort();
}

#[tokio::test]
async fn a_headed_browser_without_a_display_is_refused_before_starting() {
    let options = LaunchOptions {
        headless: false,
        env: vec![("DISPLAY".into(), String::new()), ("WAYLAND_DISPLAY".into(), String::new())],
        ..LaunchOptions::default()
    };
    let err = ManagedBrowser::launch(options).await.unwrap_err();
    assert!(matches!(err, LaunchError::NoDisplay), "{err:?}");
    assert!(err.to_string().contains("xvfb-run"), "{err}");
}
