//! The per-entry browser flags of the real `browserd mcp` (`--headless/--headed`, `--executable-path`, `--isolated`,
//! `--user-data-dir`, `--viewport`): passed to the broker as the session's settings, shown in `browser_status`, really
//! applied — a page reads exactly the session's viewport as `innerWidth`×`innerHeight` (headless, and headed under an
//! Xvfb), an isolated session's cookies and storage are its own and gone when it ends — and entries asking for other
//! browser-wide settings (`--headed`, `--user-data-dir`, `--executable-path`) get a managed browser of their own,
//! within `max_browsers`, with typed errors for what cannot be honoured, never silently ignored.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

struct Machine {
    root: tempfile::TempDir,
    display: Option<String>,
}

impl Machine {
    fn new() -> Self {
        Self::with_config("")
    }

    /// A machine whose browserd config has `extra` too.
    fn with_config(extra: &str) -> Self {
        let root = tempfile::tempdir().unwrap();
        for dir in ["run", "home"] {
            std::fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        std::fs::set_permissions(root.path().join("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
        // The size probe below is a `data:` page, which the scheme policy refuses unless the config allows it.
        let config = root.path().join("home/.config/browserd");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("config.toml"), format!("{extra}\n[schemes]\nallow = [\"data\"]\n")).unwrap();
        Self { root, display: None }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_browserd"));
        command
            .args(args)
            .env_clear()
            .current_dir(self.path("home"))
            .env("HOME", self.path("home"))
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("XDG_RUNTIME_DIR", self.path("run"));
        if let Some(chromium) = std::env::var_os("BROWSERD_CHROMIUM") {
            command.env("BROWSERD_CHROMIUM", chromium);
        }
        if let Some(display) = &self.display {
            command.env("DISPLAY", display);
        }
        command
    }

    fn mcp(&self, flags: &[&str]) -> Mcp {
        let mut args = vec!["mcp"];
        args.extend_from_slice(flags);
        let mut child = self
            .command(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starts browserd mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut mcp = Mcp { child, stdin: Some(stdin), stdout, next: 1 };
        let init = mcp.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "flags", "version": "1"}}),
        );
        assert_eq!(init["serverInfo"]["name"], "browserd", "{init}");
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }
}

impl Machine {
    /// `browserd broker status --json`.
    fn broker_status(&self) -> Value {
        let out = self.command(&["broker", "status", "--json"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = self.command(&["broker", "stop"]).output();
    }
}

struct Mcp {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: BufReader<std::process::ChildStdout>,
    next: u64,
}

impl Mcp {
    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "browserd mcp closed stdout");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message["result"].clone();
            }
        }
    }

    /// A tool call's result text, parsed when it is JSON, and its `isError`.
    fn call(&mut self, tool: &str, arguments: Value) -> (Value, bool) {
        let result = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let text = result["content"][0]["text"].as_str().unwrap_or_default().to_owned();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (body, result["isError"] == true)
    }

    fn close(mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// A page that shows its own size and every resize it saw.
const SIZE_PAGE: &str = "data:text/html,<title>Size</title><p id=s></p><p id=r>resized none</p><script>\
s.textContent='window '+innerWidth+'x'+innerHeight;\
onresize=()=>{r.textContent=(r.textContent=='resized none'?'resized':r.textContent)+' '+innerWidth+'x'+innerHeight}\
</script>";

/// Opens [`SIZE_PAGE`] and returns its observation text.
fn open_size_page(mcp: &mut Mcp) -> (Value, String) {
    let (opened, failed) = mcp.call("browser_open", json!({"url": SIZE_PAGE}));
    assert!(!failed, "{opened}");
    let text = observe(mcp, &opened["tab"]);
    (opened["tab"].clone(), text)
}

fn observe(mcp: &mut Mcp, tab: &Value) -> String {
    let (seen, failed) = mcp.call("browser_observe", json!({"tab": tab}));
    assert!(!failed, "{seen}");
    seen.as_str().unwrap_or_default().to_owned()
}

#[test]
fn mcp_browser_flags_reach_the_browser_show_in_status_and_a_browser_that_cannot_start_changes_nothing() {
    let machine = Machine::new();
    let mut first = machine.mcp(&["--viewport", "800x600", "--headless"]);
    let (status, failed) = first.call("browser_status", json!({}));
    assert!(!failed, "{status}");
    let settings = &status["browserSettings"];
    assert_eq!(settings["requested"], json!({"headless": true, "viewport": {"width": 800, "height": 600}}), "{status}");
    // Headless is what the configuration already has, and the viewport is the session's own: nothing to choose.
    assert_eq!(settings["setBy"], "config", "{settings}");
    assert_eq!(settings["effective"]["viewport"], json!({"width": 800, "height": 600}), "{settings}");
    assert_eq!(settings["effective"]["isolated"], false, "{settings}");

    // `--viewport` is the page's viewport: the page reads exactly 800×600 (not the window's size less a toolbar)…
    let (tab, text) = open_size_page(&mut first);
    assert!(text.contains("window 800x600") && text.contains("resized none"), "{text}");
    // …and keeps it between operations: past the idle window, when browserd's debugger of an idle tab would have
    // detached, the page has seen no resize.
    std::thread::sleep(Duration::from_millis(2500));
    let again = observe(&mut first, &tab);
    assert!(again.contains("window 800x600") && again.contains("resized none"), "{again}");

    // A second entry with another viewport shares the browser and gets its own; the first's tab keeps its size.
    let mut second = machine.mcp(&["--viewport", "1024x700"]);
    let (_, text) = open_size_page(&mut second);
    assert!(text.contains("window 1024x700"), "{text}");
    let (status, _) = second.call("browser_status", json!({}));
    assert_eq!(status["browserSettings"]["effective"]["viewport"], json!({"width": 1024, "height": 700}), "{status}");
    let first_again = observe(&mut first, &tab);
    assert!(first_again.contains("window 800x600") && first_again.contains("resized none"), "{first_again}");
    second.close();

    // An entry whose browser cannot start (an executable that is no browser) is refused, naming it, and changes
    // nothing: no session, no browser besides the default one.
    let mut third = machine.mcp(&["--executable-path", "/bin/true"]);
    let (refused, failed) = third.call("browser_status", json!({}));
    assert!(failed, "a browser that did not start must not be ignored: {refused}");
    let text = refused.to_string();
    assert!(text.contains("OFFLINE") && text.contains("--executable-path /bin/true"), "{text}");
    assert!(text.contains("nothing was changed") && text.contains("drop them"), "says what to do: {text}");
    third.close();
    let status = machine.broker_status();
    assert_eq!(status["browsers"].as_array().map(Vec::len), Some(1), "{status}");
    assert_eq!(status["sessions"].as_array().map(Vec::len), Some(1), "only the first entry's session: {status}");

    // An entry asking for what the browser has (or nothing) joins it.
    let mut fourth = machine.mcp(&["--headless"]);
    let (joined, failed) = fourth.call("browser_status", json!({}));
    assert!(!failed, "{joined}");
    fourth.close();
    first.close();
}

#[test]
fn mcp_viewport_applies_to_a_claimed_tab_and_a_released_tab_gets_its_own_size_back() {
    let machine = Machine::new();
    // A tab left to the user by a session without a viewport.
    let mut first = machine.mcp(&[]);
    let (tab, text) = open_size_page(&mut first);
    assert!(!text.contains("window 700x500"), "{text}");
    let (marked, failed) = first.call("browser_mark_deliverable", json!({"tab": tab}));
    assert!(!failed, "{marked}");
    first.close();

    // A session with a viewport claims it: the page gets exactly that size while it is the session's.
    let mut sized = machine.mcp(&["--viewport", "700x500"]);
    let (claimed, failed) = sized.call("browser_claim", json!({"tab": tab}));
    assert!(!failed, "{claimed}");
    // Reloaded while it is the session's, the page loads at exactly the session's viewport.
    let (reloaded, failed) = sized.call("browser_act", json!({"tab": tab, "action": "reload"}));
    assert!(!failed, "{reloaded}");
    let seen = observe(&mut sized, &tab);
    assert!(seen.contains("window 700x500"), "the claimed page has the session's viewport: {seen}");
    let (released, failed) = sized.call("browser_cleanup", json!({"release": [tab]}));
    assert!(!failed, "{released}");
    sized.close();

    // Released, the user's tab is its own size again.
    let mut plain = machine.mcp(&[]);
    let (claimed, failed) = plain.call("browser_claim", json!({"tab": tab}));
    assert!(!failed, "{claimed}");
    let (reloaded, failed) = plain.call("browser_act", json!({"tab": tab, "action": "reload"}));
    assert!(!failed, "{reloaded}");
    let seen = observe(&mut plain, &tab);
    assert!(seen.contains("window ") && !seen.contains("window 700x500"), "released, its own size again: {seen}");
    plain.close();
}

/// An Xvfb server on a display number it picked itself (`-displayfd`), stopped on drop.
struct Xvfb {
    child: Child,
    display: String,
}

impl Xvfb {
    fn start() -> Xvfb {
        let exe = std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<PathBuf>>())
            .map(|d| d.join("Xvfb"))
            .find(|p| p.is_file())
            .expect("Xvfb is not installed: install it with `apt-get install xvfb` (scripts/setup.sh does)");
        let mut child = Command::new(exe)
            .args(["-displayfd", "1", "-screen", "0", "1600x1200x24", "-nolisten", "tcp"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout")).read_line(&mut line).expect("Xvfb reports");
        let n: u32 = line.trim().parse().unwrap_or_else(|_| panic!("Xvfb reported no display number: {line:?}"));
        Xvfb { child, display: format!(":{n}") }
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        for _ in 0..100 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn mcp_viewport_is_the_page_size_in_a_headed_browser_too() {
    let xvfb = Xvfb::start();
    let mut machine = Machine::new();
    machine.display = Some(xvfb.display.clone());
    let mut mcp = machine.mcp(&["--headed", "--viewport", "800x600"]);
    let (status, failed) = mcp.call("browser_status", json!({}));
    assert!(!failed, "{status}");
    assert_eq!(status["browserSettings"]["effective"]["headless"], false, "{status}");
    let (tab, text) = open_size_page(&mut mcp);
    assert!(text.contains("window 800x600") && text.contains("resized none"), "headed: {text}");
    std::thread::sleep(Duration::from_millis(2500));
    let again = observe(&mut mcp, &tab);
    assert!(again.contains("window 800x600") && again.contains("resized none"), "headed, later: {again}");
    mcp.close();
    drop(machine);
    drop(xvfb);
}

/// A loopback site whose `/page` shows the cookies and local storage it sees; `/page?set=NAME` first sets the cookie
/// `who=NAME` (a `Set-Cookie` header) and `localStorage.who = NAME`.
fn cookie_site() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            // One thread per connection: the browser may hold a preconnected socket open without a request.
            std::thread::spawn(move || serve_jar(stream));
        }
    });
    origin
}

fn serve_jar(mut stream: std::net::TcpStream) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).map_or(true, |n| n == 0) || header == "\r\n" {
            break;
        }
    }
    let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let set = path.split_once("?set=").map(|(_, name)| name.to_owned());
    let (status, body) = if path.starts_with("/page") {
        let store = set.as_ref().map(|n| format!("localStorage.setItem('who','{n}');")).unwrap_or_default();
        let body = format!(
            "<title>Jar</title><p id=j></p><script>{store}\
             j.textContent='cookie ['+document.cookie+'] storage ['+localStorage.getItem('who')+']'</script>"
        );
        ("200 OK", body)
    } else {
        ("404 Not Found", String::new())
    };
    let cookie = set.map(|n| format!("Set-Cookie: who={n}; Path=/\r\n")).unwrap_or_default();
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: text/html\r\n{cookie}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// Opens `url` and returns what the jar page says (`cookie [...] storage [...]`).
fn jar(mcp: &mut Mcp, url: &str) -> String {
    let (opened, failed) = mcp.call("browser_open", json!({"url": url}));
    assert!(!failed, "{opened}");
    let text = observe(mcp, &opened["tab"]);
    let at = text.find("cookie [").unwrap_or_else(|| panic!("the jar page shows its cookies: {text}"));
    text[at..].lines().next().unwrap_or_default().trim_end_matches('"').to_owned()
}

#[test]
fn mcp_isolated_gives_this_session_its_own_throwaway_profile_in_the_shared_browser() {
    let machine = Machine::new();
    let site = cookie_site();
    let mut isolated = machine.mcp(&["--isolated"]);
    let mut shared = machine.mcp(&[]);
    let (status, _) = isolated.call("browser_status", json!({}));
    assert_eq!(status["browserSettings"]["effective"]["isolated"], true, "{status}");
    assert_eq!(status["browserSettings"]["setBy"], "config", "--isolated does not choose the browser: {status}");

    // The isolated session sets a cookie and local storage; the other session's tabs see neither …
    assert_eq!(jar(&mut isolated, &format!("{site}/page?set=isolated")), "cookie [who=isolated] storage [isolated]");
    assert_eq!(jar(&mut shared, &format!("{site}/page")), "cookie [] storage [null]");
    // … and what the other session sets is not the isolated session's (which keeps its own across its tabs).
    assert_eq!(jar(&mut shared, &format!("{site}/page?set=shared")), "cookie [who=shared] storage [shared]");
    assert_eq!(jar(&mut isolated, &format!("{site}/page")), "cookie [who=isolated] storage [isolated]");

    // A tab the isolated session keeps for the user still goes with its throwaway profile when the session ends.
    let (opened, failed) = isolated.call("browser_open", json!({"url": format!("{site}/page")}));
    assert!(!failed, "{opened}");
    let (marked, failed) = isolated.call("browser_mark_deliverable", json!({"tab": opened["tab"]}));
    assert!(!failed, "{marked}");
    isolated.close();
    let (listed, failed) = shared.call("browser_list", json!({}));
    assert!(!failed, "{listed}");
    let tabs: Vec<&Value> =
        listed["tabs"].as_array().expect("browser_list lists tabs").iter().map(|t| &t["tab"]).collect();
    assert!(
        !tabs.contains(&&opened["tab"]),
        "the isolated session's kept tab {} is still open: {listed}",
        opened["tab"]
    );

    // Gone after it closed: a new isolated session starts empty, the shared profile still has its own cookie.
    let mut next = machine.mcp(&["--isolated"]);
    assert_eq!(jar(&mut next, &format!("{site}/page")), "cookie [] storage [null]");
    assert_eq!(jar(&mut shared, &format!("{site}/page")), "cookie [who=shared] storage [shared]");
    next.close();
    shared.close();
}

#[test]
fn mcp_refuses_bad_browser_flags_at_start_with_what_to_do() {
    let machine = Machine::new();
    for (flags, says) in [
        (&["--executable-path", "/no/such/chromium"][..], "no such file"),
        (&["--viewport", "wide"][..], "WIDTHxHEIGHT"),
        (&["--headed", "--headless"][..], "cannot be used with"),
        (&["--isolated", "--user-data-dir", "/tmp/p"][..], "cannot be used with"),
    ] {
        let mut args = vec!["mcp"];
        args.extend_from_slice(flags);
        let out = machine.command(&args).stdin(Stdio::null()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flags:?} must fail: {stderr}");
        assert!(stderr.contains(says), "{flags:?}: {stderr}");
    }
}

/// The pids of the processes whose command line has `needle` (read from `/proc`).
fn pids_with(needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        if String::from_utf8_lossy(&cmdline).contains(needle) {
            pids.push(pid);
        }
    }
    pids
}

fn alive(pid: u32) -> bool {
    // A zombie is gone as far as the browser goes.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
}

/// A browser_status call that must fail; its text.
fn refused(machine: &Machine, flags: &[&str]) -> String {
    let mut mcp = machine.mcp(flags);
    let (refused, failed) = mcp.call("browser_status", json!({}));
    assert!(failed, "{flags:?} must be refused: {refused}");
    mcp.close();
    refused.to_string()
}

#[test]
fn mcp_entries_with_other_browser_wide_settings_get_browsers_of_their_own_within_the_cap() {
    let xvfb = Xvfb::start();
    let mut machine = Machine::with_config("max_browsers = 2");
    machine.display = Some(xvfb.display.clone());
    let profile = machine.path("headed-profile");
    let profile_arg = profile.display().to_string();

    // Two entries, one headless (the configuration's browser) and one headed with a profile of its own: each opens a
    // page, in a browser of its own settings.
    let mut headless = machine.mcp(&["--headless"]);
    let mut headed = machine.mcp(&["--headed", "--user-data-dir", &profile_arg]);
    let (headless_tab, text) = open_size_page(&mut headless);
    assert!(text.contains("window "), "{text}");
    let (headed_tab, text) = open_size_page(&mut headed);
    assert!(text.contains("window "), "{text}");
    let (status, failed) = headless.call("browser_status", json!({}));
    assert!(!failed, "{status}");
    assert_eq!(status["browserSettings"]["browser"], "b1", "{status}");
    assert_eq!(status["browserSettings"]["effective"]["headless"], true, "{status}");
    let (status, failed) = headed.call("browser_status", json!({}));
    assert!(!failed, "{status}");
    let settings = &status["browserSettings"];
    assert_eq!(settings["browser"], "b2", "{status}");
    assert_eq!(settings["effective"]["headless"], false, "{status}");
    assert_eq!(settings["effective"]["userDataDir"], profile_arg.as_str(), "{status}");
    assert!(settings["setBy"].as_str().is_some_and(|s| s.starts_with("session ")), "{status}");

    // The broker's status shows the two browsers with their settings; the headed one is a real process on that
    // profile.
    let broker = machine.broker_status();
    let browsers = broker["browsers"].as_array().expect("browsers");
    assert_eq!(browsers.len(), 2, "{broker}");
    assert_eq!(
        (&browsers[0]["browser"], &browsers[0]["settings"]["headless"]),
        (&json!("b1"), &json!(true)),
        "{broker}"
    );
    assert_eq!(
        (&browsers[1]["browser"], &browsers[1]["settings"]["headless"]),
        (&json!("b2"), &json!(false)),
        "{broker}"
    );
    assert_eq!(browsers[1]["settings"]["userDataDir"], profile_arg.as_str(), "{broker}");
    assert_eq!(browsers[1]["sessions"].as_array().map(Vec::len), Some(1), "{broker}");
    let pid = u32::try_from(browsers[1]["pid"].as_u64().expect("the headed browser's pid")).unwrap();
    assert!(alive(pid), "the headed browser runs");
    let on_profile = pids_with(&format!("--user-data-dir={profile_arg}"));
    assert!(on_profile.contains(&pid), "pid {pid} runs on {profile_arg}: {on_profile:?}");
    let b1_pid = browsers[0]["pid"].as_u64().expect("the default browser's pid");

    // The same profile asked with other settings, a profile another process holds, and a third distinct set of
    // settings over `max_browsers = 2` are refused with typed errors, changing nothing.
    let text = refused(&machine, &["--headless", "--user-data-dir", &profile_arg]);
    assert!(text.contains("PROFILE_IN_USE") && text.contains("browser b2"), "{text}");
    let locked = machine.path("locked-profile");
    std::fs::create_dir_all(&locked).unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    std::os::unix::fs::symlink(format!("{}-{}", host.trim(), std::process::id()), locked.join("SingletonLock"))
        .unwrap();
    let text = refused(&machine, &["--headed", "--user-data-dir", &locked.display().to_string()]);
    assert!(text.contains("PROFILE_IN_USE") && text.contains(&format!("process {}", std::process::id())), "{text}");
    let text = refused(&machine, &["--headed"]);
    assert!(text.contains("TOO_MANY_BROWSERS") && text.contains("max_browsers"), "{text}");
    let after = machine.broker_status();
    assert_eq!(after["browsers"].as_array().map(Vec::len), Some(2), "{after}");
    assert_eq!(after["sessions"].as_array().map(Vec::len), Some(2), "{after}");

    // A third entry asking the headed browser's own settings shares it.
    let mut joined = machine.mcp(&["--headed", "--user-data-dir", &profile_arg]);
    let (status, failed) = joined.call("browser_status", json!({}));
    assert!(!failed, "{status}");
    assert_eq!(status["browserSettings"]["browser"], "b2", "{status}");

    // Stop (`browserd stop`) stops both sessions' work, whichever browser it runs on.
    let out = machine.command(&["stop"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for (mcp, tab) in [(&mut headless, &headless_tab), (&mut headed, &headed_tab)] {
        let (stopped, failed) = mcp.call("browser_act", json!({"tab": tab, "action": "reload"}));
        assert!(failed && stopped.to_string().contains("USER_STOPPED"), "{stopped}");
    }

    // Closing the headed browser's sessions closes that browser: its process is gone; the default one stays.
    joined.close();
    assert!(alive(pid), "the headed browser still has a session");
    headed.close();
    let mut waited = 0;
    while alive(pid) && waited < 3000 {
        std::thread::sleep(Duration::from_millis(10));
        waited += 1;
    }
    assert!(!alive(pid), "the headed browser's process {pid} is gone once its last session closed");
    let after = machine.broker_status();
    let browsers = after["browsers"].as_array().expect("browsers");
    assert_eq!(browsers.len(), 1, "{after}");
    assert_eq!(browsers[0]["pid"].as_u64(), Some(b1_pid), "the default browser stays: {after}");
    let (listed, failed) = headless.call("browser_list", json!({}));
    assert!(!failed, "{listed}");
    assert!(listed.to_string().contains("Size"), "the headless session's tab is still there: {listed}");
    headless.close();
    drop(machine);
    drop(xvfb);
}
