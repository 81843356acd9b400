//! One broker per user, whoever asks: the real `browserd mcp`, started with only the variables Codex passes
//! (`HOME LANG PATH SHELL TERM PWD`) or the MCP SDK's default environment (`HOME LOGNAME PATH SHELL TERM USER`,
//! what the Inspector uses), reaches the broker the CLI started with a full login environment
//! (`XDG_RUNTIME_DIR=/run/user/<uid>`), and sees the CLI's tab in the same browser.
//!
//! The per-uid directories live under an isolated fake root (`BROWSERD_TEST_RUN_USER_BASE`, tests only), so the
//! real `/run/user` is never touched; the rule that resolves `<base>/<uid>` is the production one.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

fn uid() -> u32 {
    std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m)).unwrap()
}

struct Machine {
    root: tempfile::TempDir,
}

impl Machine {
    /// A fake `/run/user/<uid>` (0700, ours) and a home directory.
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let run_user = root.path().join("run/user").join(uid().to_string());
        std::fs::create_dir_all(&run_user).unwrap();
        std::fs::set_permissions(&run_user, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::create_dir_all(root.path().join("home/.config/browserd")).unwrap();
        // The test opens a `data:` page, which the scheme policy refuses unless the user allows it.
        std::fs::write(root.path().join("home/.config/browserd/config.toml"), "[schemes]\nallow = [\"data\"]\n")
            .unwrap();
        Self { root }
    }

    fn run_user_base(&self) -> PathBuf {
        self.root.path().join("run/user")
    }

    fn xdg_runtime_dir(&self) -> PathBuf {
        self.run_user_base().join(uid().to_string())
    }

    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    /// A login shell's environment: the XDG runtime directory set, the rest as a user has it.
    fn cli(&self, args: &[&str]) -> std::process::Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_browserd"));
        command
            .args(args)
            .env_clear()
            .env("HOME", self.home())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("LANG", "C.UTF-8")
            .env("SHELL", "/bin/sh")
            .env("TERM", "xterm")
            .env("USER", "tester")
            .env("LOGNAME", "tester")
            .env("XDG_RUNTIME_DIR", self.xdg_runtime_dir());
        if let Some(chromium) = std::env::var_os("BROWSERD_CHROMIUM") {
            command.env("BROWSERD_CHROMIUM", chromium);
        }
        command.output().expect("runs browserd")
    }

    fn cli_ok(&self, args: &[&str]) -> String {
        let out = self.cli(args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "browserd {args:?}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        stdout
    }

    /// `browserd mcp` with exactly `vars` (plus the fake root), as the host would start it.
    fn mcp(&self, vars: &[&str]) -> Mcp {
        let mut command = Command::new(env!("CARGO_BIN_EXE_browserd"));
        command.arg("mcp").env_clear().current_dir(self.home());
        for var in vars {
            let value: std::ffi::OsString = match *var {
                "HOME" => self.home().into(),
                "PWD" => self.home().into(),
                "PATH" => std::env::var_os("PATH").unwrap_or_default(),
                "LANG" => "C.UTF-8".into(),
                "SHELL" => "/bin/sh".into(),
                "TERM" => "xterm".into(),
                "USER" | "LOGNAME" => "tester".into(),
                other => panic!("no value for {other}"),
            };
            command.env(var, value);
        }
        command.env("BROWSERD_TEST_RUN_USER_BASE", self.run_user_base());
        let mut child =
            command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("starts mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut mcp = Mcp { child, stdin: Some(stdin), stdout, next: 1 };
        let init = mcp.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "stripped-host", "version": "1"}}),
        );
        assert_eq!(init["serverInfo"]["name"], "browserd", "{init}");
        mcp.notify("notifications/initialized");
        mcp
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = self.cli(&["broker", "stop"]);
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

    fn notify(&mut self, method: &str) {
        self.send(&json!({"jsonrpc": "2.0", "method": method}));
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

    /// A tool call's structured result (panics on an error result).
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert_ne!(result["isError"], true, "{tool}: {result}");
        result["structuredContent"].clone()
    }

    fn close(mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

fn socket_of(dir: &Path) -> PathBuf {
    dir.join("browserd/broker.sock")
}

#[test]
fn mcp_under_codex_and_sdk_environments_reaches_the_clis_broker() {
    let machine = Machine::new();
    let page = "data:text/html,<title>Shared</title><h1>One broker</h1>";
    let opened = machine.cli_ok(&["open", page, "--session", "cli", "--json"]);
    let opened: Value = serde_json::from_str(&opened).unwrap();
    let cli_tab = opened["tab"].as_u64().expect("the CLI opened a tab");
    assert!(socket_of(&machine.xdg_runtime_dir()).exists(), "the CLI's broker listens in XDG_RUNTIME_DIR");

    for (host, vars) in [
        ("codex", &["HOME", "LANG", "PATH", "SHELL", "TERM", "PWD"][..]),
        ("mcp sdk default", &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"][..]),
    ] {
        let mut mcp = machine.mcp(vars);
        let listed = mcp.call("browser_list", json!({}));
        let tabs = listed["tabs"].as_array().unwrap();
        let seen = tabs.iter().find(|t| t["tab"].as_u64() == Some(cli_tab));
        assert_eq!(
            seen.map(|t| t["provenance"].clone()),
            Some(json!("otherSession")),
            "{host}: browserd mcp does not see the CLI's tab {cli_tab}, so it reached another broker: {listed}"
        );
        // Its own tab opens in the same browser, and the CLI sees it there.
        let own = mcp.call("browser_open", json!({"url": "data:text/html,<title>From MCP</title>x"}));
        let own_tab = own["tab"].as_u64().unwrap();
        let cli_list: Value = serde_json::from_str(&machine.cli_ok(&["list", "--session", "cli", "--json"])).unwrap();
        assert!(
            cli_list["tabs"].as_array().unwrap().iter().any(|t| t["tab"].as_u64() == Some(own_tab)),
            "{host}: the CLI does not see the MCP's tab: {cli_list}"
        );
        mcp.close();
    }
}

#[test]
fn a_second_broker_for_the_same_state_refuses_to_start_and_names_the_first() {
    let machine = Machine::new();
    machine.cli_ok(&["open", "data:text/html,<title>First</title>x", "--session", "first", "--json"]);
    let first_socket = socket_of(&machine.xdg_runtime_dir());

    // Another runtime directory (what an environment without XDG_RUNTIME_DIR used to get), the same home.
    let other = machine.root.path().join("other-run");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_browserd"))
        .args(["list", "--session", "second"])
        .env_clear()
        .env("HOME", machine.home())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("XDG_RUNTIME_DIR", &other)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a second broker must not half-work: {stderr}");
    assert!(stderr.contains("refused to start"), "{stderr}");
    assert!(stderr.contains(&first_socket.display().to_string()), "names the first broker's socket: {stderr}");
    assert!(stderr.contains("pid "), "names the first broker's pid: {stderr}");
    assert!(!socket_of(&other).exists(), "the refused broker left no socket");
}

#[test]
fn a_broker_refuses_a_profile_a_running_chromium_holds() {
    let machine = Machine::new();
    let profile = machine.home().join(".local/state/browserd/profile");
    std::fs::create_dir_all(&profile).unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    // This test process stands in for the Chromium holding the profile.
    std::os::unix::fs::symlink(format!("{}-{}", host.trim(), std::process::id()), profile.join("SingletonLock"))
        .unwrap();
    let out = machine.cli(&["broker", "run"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains(&format!("in use by another Chromium (pid {})", std::process::id())), "{stderr}");
    assert!(stderr.contains(&format!("kill {}", std::process::id())), "says how to fix it: {stderr}");
}
