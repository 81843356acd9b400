//! The npm package as a user meets it: `scripts/npm-package.sh` packs the real `browserd` binary, and
//! `npx --package <tarball> browserd mcp`, offline with an empty npm cache, is the MCP server: it answers `initialize` and `tools/list`
//! over stdio.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

#[test]
fn npx_of_the_packed_tarball_serves_mcp_offline() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let packed = Command::new("bash")
        .arg(root.join("scripts/npm-package.sh"))
        .args(["--bin", env!("CARGO_BIN_EXE_browserd"), "--out"])
        .arg(&out)
        .output()
        .expect("runs scripts/npm-package.sh (needs bash and npm)");
    let stderr = String::from_utf8_lossy(&packed.stderr);
    assert!(packed.status.success(), "npm-package.sh failed: {stderr}");
    let tarball = String::from_utf8_lossy(&packed.stdout).trim().to_owned();
    assert!(tarball.ends_with("browserd-0.1.0.tgz") && Path::new(&tarball).is_file(), "{tarball}\n{stderr}");

    let home = tmp.path().join("home");
    let run = tmp.path().join("run");
    for dir in [&home, &run] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::set_permissions(&run, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let mut child = Command::new("npx")
        .args(["--yes", "--offline", "--package", &tarball, "browserd", "mcp"])
        .env_clear()
        .current_dir(&home)
        .env("HOME", &home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("XDG_RUNTIME_DIR", &run)
        .env("npm_config_cache", tmp.path().join("npm-cache"))
        .env("npm_config_update_notifier", "false")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs npx");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |id: u64, method: &str, params: Value| -> Value {
        if id > 1 {
            writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
        }
        writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).unwrap();
        stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "npx … mcp closed stdout");
            let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if message["id"] == id {
                return message["result"].clone();
            }
        }
    };
    let init = ask(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "npx-test", "version": "1"}}),
    );
    assert_eq!(init["serverInfo"]["name"], "browserd", "{init}");
    assert_eq!(init["serverInfo"]["version"], "0.1.0", "{init}");
    let listed = ask(2, "tools/list", json!({}));
    let names: Vec<&str> = listed["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"browser_open") && names.contains(&"browser_observe"), "{names:?}");
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "npx … mcp ends cleanly when stdin closes: {status}");
}
