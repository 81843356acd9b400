//! The per-entry browser flags of the real `browserd mcp` (`--headless/--headed`, `--executable-path`, `--isolated`,
//! `--user-data-dir`, `--viewport`): passed to the broker as the session's settings, shown in `browser_status`, really
//! applied to the managed Chromium (a page reads its window size), and a second entry asking the running browser for
//! something else is refused with a typed error naming the flag — never silently ignored.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

struct Machine {
    root: tempfile::TempDir,
}

impl Machine {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        for dir in ["run", "home"] {
            std::fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        std::fs::set_permissions(root.path().join("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
        // The size probe below is a `data:` page, which the scheme policy refuses unless the config allows it.
        let config = root.path().join("home/.config/browserd");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("config.toml"), "[schemes]\nallow = [\"data\"]\n").unwrap();
        Self { root }
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

#[test]
fn mcp_browser_flags_reach_the_browser_show_in_status_and_a_conflicting_entry_is_refused() {
    let machine = Machine::new();
    let mut first = machine.mcp(&["--isolated", "--viewport", "800x600", "--headless"]);
    let (status, failed) = first.call("browser_status", json!({}));
    assert!(!failed, "{status}");
    let settings = &status["browserSettings"];
    assert_eq!(
        settings["requested"],
        json!({"headless": true, "isolated": true, "viewport": {"width": 800, "height": 600}}),
        "{status}"
    );
    assert!(settings["setBy"].as_str().unwrap().starts_with("session "), "the first session chose: {settings}");
    assert_eq!(settings["effective"]["isolated"], true, "{settings}");
    assert_eq!(settings["effective"]["userDataDir"], Value::Null, "a throwaway profile: {settings}");

    // The managed Chromium really runs with that window size.
    let page = "data:text/html,<title>Size</title><p id=s></p><script>s.textContent='window '+innerWidth+'x'+innerHeight</script>";
    let (opened, failed) = first.call("browser_open", json!({"url": page}));
    assert!(!failed, "{opened}");
    let (seen, failed) = first.call("browser_observe", json!({"tab": opened["tab"]}));
    assert!(!failed, "{seen}");
    // `--viewport` sizes the window: the page gets its full width and the height below the browser's toolbar.
    let text = seen.as_str().unwrap_or_default();
    let height = text.split("window 800x").nth(1).and_then(|rest| rest.trim().parse::<u32>().ok());
    assert!(height.is_some_and(|h| h > 300 && h <= 600), "the page reads a window 800 wide, at most 600 high: {seen}");
    // …and no persistent profile was made under the broker's state directory.
    let profile = machine.path("home/.local/state/browserd/profile");
    assert!(
        !profile.join("Default").exists(),
        "an isolated browser wrote the persistent profile {}",
        profile.display()
    );

    // A second entry asking the running browser for a window is refused, naming the flag and the fix.
    let mut second = machine.mcp(&["--headed"]);
    let (refused, failed) = second.call("browser_status", json!({}));
    assert!(failed, "a setting the browser cannot honour must not be ignored: {refused}");
    let text = refused.to_string();
    assert!(text.contains("UNSUPPORTED_BY_IMPLEMENTATION") && text.contains("--headless/--headed"), "{text}");
    assert!(text.contains("browserd broker stop"), "says what to do: {text}");
    second.close();

    // An entry asking for what the browser has (or nothing) joins it.
    let mut third = machine.mcp(&["--viewport", "800x600"]);
    let (joined, failed) = third.call("browser_status", json!({}));
    assert!(!failed, "{joined}");
    third.close();
    first.close();
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
