//! CLI snapshot tests: the real `browserd` binary's help texts and a readable session (open, observe, act, mark,
//! list, close) against the broker it starts on demand with a real managed Chromium, pinned with insta.

mod common;

use std::path::Path;

use common::Home;

/// A home for one test; the transcripts open `data:` pages, which the scheme policy refuses unless the user allows
/// them.
fn home() -> Home {
    Home::with_config("[schemes]\nallow = [\"data\"]\n")
}

/// The first word of the line that starts with `prefix` (e.g. a tab id after "tab ").
fn word_after<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no line starting with {prefix:?} in:\n{text}"))
}

#[test]
fn help_texts_are_pinned() {
    let home = home();
    let mut all = String::new();
    for args in [
        vec!["--help"],
        vec!["open", "--help"],
        vec!["observe", "--help"],
        vec!["act", "--help"],
        vec!["handoff", "--help"],
        vec!["status", "--help"],
        vec!["stop", "--help"],
    ] {
        all.push_str(&format!("$ browserd {}\n{}\n", args.join(" "), home.ok(&args)));
    }
    insta::assert_snapshot!("help", all);
}

#[test]
fn a_readable_session_open_observe_act_mark_close() {
    let home = home();
    let page = "data:text/html,<title>Greeter</title><h1>Greeter</h1><label>Name <input id=n></label>\
                <button onclick=\"o.textContent='Hello, '+n.value\">Greet</button><p id=o>Nobody greeted</p>";
    let s = ["--session", "cli-snapshot"];
    let with = |args: &[&str]| -> Vec<String> { args.iter().chain(s.iter()).map(|a| (*a).to_owned()).collect() };
    let run = |args: &[&str]| -> String {
        let v = with(args);
        home.ok(&v.iter().map(String::as_str).collect::<Vec<_>>())
    };

    let mut transcript = String::new();
    let opened = run(&["open", page]);
    let tab = word_after(&opened, "tab ").to_owned();
    // `open`'s line names the loaded page's title.
    let open_line = opened.lines().next().unwrap_or_default().replace(&tab, "<tab>");
    transcript.push_str(&format!("$ browserd open <page>\n{open_line}\n\n"));
    let observed = run(&["observe"]);
    transcript.push_str(&format!("$ browserd observe\n{observed}\n"));
    let filled = run(&["act", "fill", "e1", "Ada"]);
    transcript.push_str(&format!("$ browserd act fill e1 Ada\n{filled}\n"));
    let clicked = run(&["act", "click", "e2", "--observe"]);
    transcript.push_str(&format!("$ browserd act click e2 --observe\n{clicked}\n"));
    let marked = run(&["mark", &tab, "deliverable"]);
    transcript.push_str(&format!("$ browserd mark <tab> deliverable\n{}\n", marked.replace(&tab, "<tab>")));
    let closed = run(&["close", &tab]);
    transcript.push_str(&format!("$ browserd close <tab>\n{}\n", closed.replace(&tab, "<tab>")));
    let page_url = page.to_owned();
    insta::assert_snapshot!("session", transcript.replace(&page_url, "<page>"));

    // The same call with --json is one JSON object that parses as the tool's result.
    let listed = run(&["list", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&listed).expect("--json prints JSON");
    assert!(v.get("tabs").is_some_and(serde_json::Value::is_array), "{v}");
    assert!(Path::new(&home.path().join("run/browserd")).is_dir(), "the broker's socket directory is in the home");
}

#[test]
fn a_closed_stdout_ends_a_command_quietly() {
    let home = home();
    for args in [&["status"][..], &["config"][..], &["broker", "status"][..]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader); // `browserd status | head -1` once head has exited
        let out = home.command(args).stdout(writer).stderr(std::process::Stdio::piped()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "browserd {args:?}: {stderr}");
        assert!(out.status.success(), "browserd {args:?}: {:?} {stderr}", out.status);
    }
}

#[test]
fn error_hints_name_cli_commands() {
    let home = home();
    let opened = home.ok(&["open", "data:text/html,<title>Mine</title>x", "--session", "owner", "--json"]);
    let tab = serde_json::from_str::<serde_json::Value>(&opened).unwrap()["tab"].as_u64().unwrap().to_string();
    home.ok(&["mark", &tab, "deliverable", "--session", "owner"]);
    home.ok(&["reset", "--session", "owner"]); // the kept page is the user's now
    let out = home.run(&["observe", "--tab", &tab, "--session", "other"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("`browserd claim`") && stderr.contains("`browserd open`"), "{stderr}");
    assert!(!stderr.contains("browser_claim"), "the CLI names its own commands, not MCP tools: {stderr}");
}
