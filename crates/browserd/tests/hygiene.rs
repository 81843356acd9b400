//! Connection hygiene through the real `browserd` binary: an MCP stdin line over 16 MiB is answered with a JSON-RPC
//! error naming the limit (under its id) and the server goes on; a broker frame over 16 MiB is answered the same way
//! on a connection that stays usable; a CLI command against a broker that never answers ends with a typed error and
//! a next step in CLI words instead of hanging.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{DEADLINE_ENV, Home};
use serde_json::{Value, json};

const LIMIT: usize = 16 * 1024 * 1024;

/// A home for one test; a broker that never answers does not hold up the `broker stop` at its end.
fn home() -> Home {
    Home::new().stop_within_ms(5000)
}

/// Reads lines until the one that answers `id`.
fn answer(stdout: &mut impl BufRead, id: &Value) -> Value {
    loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the server closed stdout before answering {id}");
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        // rmcp leaves `id` out of an answer to a message without one.
        if v.get("id").unwrap_or(&Value::Null) == id && (v.get("result").is_some() || v.get("error").is_some()) {
            return v;
        }
    }
}

#[test]
fn an_mcp_line_over_the_limit_is_answered_with_its_id_and_the_server_goes_on() {
    let home = home();
    let mut child = home
        .command(&["mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starts browserd mcp");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let send = |stdin: &mut std::process::ChildStdin, v: &Value| {
        stdin.write_all(format!("{v}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    send(
        &mut stdin,
        &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",
            "capabilities":{},"clientInfo":{"name":"hygiene","version":"0"}}}),
    );
    assert!(answer(&mut stdout, &json!(1))["result"].is_object());
    send(&mut stdin, &json!({"jsonrpc":"2.0","method":"notifications/initialized"}));

    // A tools/call whose text makes the line 17 MiB; its id comes after the text.
    let text = "x".repeat(17 * 1024 * 1024);
    let long = json!({"jsonrpc":"2.0","method":"tools/call",
        "params":{"name":"browser_act","arguments":{"action":"fill","target":"e1","value":text}},"id":"big-7"});
    send(&mut stdin, &long);
    let refused = answer(&mut stdout, &json!("big-7"));
    let error = &refused["error"];
    assert_eq!(error["code"], json!(-32600), "{refused}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains(&format!("limit of {LIMIT} bytes (16 MiB)")), "{message}");
    assert_eq!(error["data"]["code"], json!("INVALID_REQUEST"));
    assert!(error["data"]["nextStep"].as_str().unwrap().contains("file path"), "{error}");

    // The server goes on: the next request is answered.
    send(&mut stdin, &json!({"jsonrpc":"2.0","id":2,"method":"ping"}));
    assert_eq!(answer(&mut stdout, &json!(2))["result"], json!({}));

    // A line with no id is answered too (without an id).
    stdin.write_all(format!("{{\"jsonrpc\":\"2.0\",\"junk\":\"{}\"}}\n", "y".repeat(LIMIT)).as_bytes()).unwrap();
    stdin.flush().unwrap();
    let anonymous = answer(&mut stdout, &Value::Null);
    assert_eq!(anonymous["error"]["code"], json!(-32600), "{anonymous}");
    drop(stdin);
    let _ = child.wait();
}

#[test]
fn a_broker_frame_over_the_limit_is_answered_and_the_connection_goes_on() {
    let home = home();
    // Any command starts the broker; `status` needs no browser.
    let out = home.command(&["status"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stream = std::os::unix::net::UnixStream::connect(home.socket()).expect("the broker listens");
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    let mut call = |writer: &mut std::os::unix::net::UnixStream, line: String, id: Value| -> Value {
        writer.write_all(line.as_bytes()).unwrap();
        writer.write_all(b"\n").unwrap();
        answer(&mut reader, &id)
    };
    let hello = json!({"jsonrpc":"2.0","id":1,"method":"hello","params":{"role":"cli","protocol":{"min":1,"max":1}}});
    let said = call(&mut writer, hello.to_string(), json!(1));
    assert!(said.get("result").is_some(), "hello: {said}");
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"status\",\"params\":{{\"pad\":\"{}\"}}}}",
        "z".repeat(LIMIT + 10)
    );
    let refused = call(&mut writer, big, json!(5));
    let data = &refused["error"]["data"];
    assert_eq!(data["code"], json!("INVALID_PARAMS"), "{refused}");
    assert!(data["message"].as_str().unwrap().contains("frame limit of 16777216 bytes (16 MiB)"), "{refused}");
    let status = call(&mut writer, json!({"jsonrpc":"2.0","id":6,"method":"status","params":{}}).to_string(), json!(6));
    assert!(status.get("result").is_some(), "the connection goes on: {status}");
}

#[test]
fn a_cli_call_to_a_broker_that_never_answers_ends_with_a_typed_error() {
    let home = home();
    let socket = home.socket();
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    std::fs::set_permissions(socket.parent().unwrap(), std::fs::Permissions::from_mode(0o700)).unwrap();
    // A "broker" that takes connections, reads what it is sent and never answers.
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut sink = [0u8; 4096];
                while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
            });
        }
    });
    let started = Instant::now();
    let out = home.command(&["list"]).env(DEADLINE_ENV, "1500").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(30), "the command hung for {:?}", started.elapsed());
    assert!(
        stderr.contains("error: BROKER_UNAVAILABLE: the browserd broker did not answer `hello` within 1500 ms"),
        "{stderr}"
    );
    assert!(stderr.contains("next: ") && stderr.contains("`browserd doctor`"), "{stderr}");
    assert!(!stderr.contains("browser_"), "the next step speaks CLI words: {stderr}");
}
