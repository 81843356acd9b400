//! `browserd demo --json` end to end on a real managed Chromium: the README's first command keeps working and says
//! what happened to each tab at each boundary.

use std::process::Command;

use serde_json::Value;

#[test]
fn demo_runs_three_turns_and_reports_each_boundary() {
    let xdg = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_browserd"))
        .args(["demo", "--json"])
        .env("XDG_CONFIG_HOME", xdg.path())
        .output()
        .expect("runs browserd demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "demo failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let steps: Vec<Value> =
        stdout.lines().map(|l| serde_json::from_str(l).expect("one JSON object per line")).collect();
    let of = |step: &str| steps.iter().filter(|s| s["step"] == step).collect::<Vec<_>>();

    // The covered button is refused, naming what covers it, and nothing is dispatched.
    let refused =
        of("act").into_iter().find(|s| s["result"]["code"] == "NOT_ACTIONABLE").expect("a NOT_ACTIONABLE step");
    assert_eq!(refused["result"]["dispatch"], "notDispatched");
    assert_eq!(refused["result"]["covering"]["name"], "Cookie consent");

    // Turn 1 closes the scratch overlay tab and keeps the deliverable; turn 2 drops the unrenewed mark.
    let opens = of("open");
    let (form, overlay) = (opens[0]["tab"].clone(), opens[1]["tab"].clone());
    let ends = of("turn end");
    assert_eq!(ends[0]["result"]["closed"], serde_json::json!([overlay]));
    assert_eq!(ends[0]["result"]["kept"], serde_json::json!([form]));
    assert_eq!(ends[1]["result"]["closed"], serde_json::json!([form]));

    // Finalize keeps the handoff page and the tools.
    let cleanup = &of("cleanup")[0]["result"];
    assert_eq!(cleanup["ok"], true);
    assert_eq!(cleanup["toolsActive"], true);
    assert_eq!(cleanup["kept"], serde_json::json!([opens[2]["tab"]]));
}
