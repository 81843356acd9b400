//! The npm package as a user meets it: `scripts/npm-package.sh` packs the real `browserd` binary, and the one-line
//! forms the README documents — `npx -y ./browserd-0.1.0.tgz mcp` from the tarball's directory and
//! `npx -y file:/abs/path/browserd-0.1.0.tgz mcp` from anywhere — are the MCP server, offline (an empty npm cache and
//! no reachable registry): each answers `initialize` and `tools/list` over stdio. (A bare absolute path does not work:
//! npx runs an argument naming an existing file as a command, so the tarball itself would be executed.)

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// Runs `npx ARGS` in `cwd` as an MCP host would (stdio, a clean environment) and checks it serves MCP.
fn serves_mcp(tmp: &Path, cwd: &Path, args: &[&str]) {
    let home = tmp.join("home");
    let run = tmp.join("run");
    for dir in [&home, &run] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::set_permissions(&run, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let cache = tmp.join(format!("npm-cache-{}", args.join("-").replace(['/', ':', '.'], "_")));
    let mut child = Command::new("npx")
        .args(args)
        .env_clear()
        .current_dir(cwd)
        .env("HOME", &home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("XDG_RUNTIME_DIR", &run)
        // Offline: an empty cache and a registry nothing listens on.
        .env("npm_config_cache", &cache)
        .env("npm_config_registry", "http://127.0.0.1:9/")
        .env("npm_config_update_notifier", "false")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs npx");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let mut ask = |id: u64, method: &str, params: Value| -> Value {
        if id > 1 {
            writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
        }
        writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).unwrap();
        stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            if stdout.read_line(&mut line).unwrap() == 0 {
                let mut err = String::new();
                let _ = std::io::Read::read_to_string(&mut stderr, &mut err);
                panic!("npx {args:?} closed stdout: {err}");
            }
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
    assert_eq!(init["serverInfo"]["name"], "browserd", "{args:?}: {init}");
    assert_eq!(init["serverInfo"]["version"], "0.1.0", "{init}");
    let listed = ask(2, "tools/list", json!({}));
    let names: Vec<&str> = listed["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"browser_open") && names.contains(&"browser_observe"), "{names:?}");
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "npx {args:?} ends cleanly when stdin closes: {status}");
}

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

    // The README's forms, exactly: from the tarball's directory, and by its absolute path from anywhere.
    serves_mcp(tmp.path(), &out, &["-y", "./browserd-0.1.0.tgz", "mcp"]);
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    serves_mcp(tmp.path(), &home, &["-y", &format!("file:{tarball}"), "mcp"]);
}
