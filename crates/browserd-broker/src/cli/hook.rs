//! `browserd hook turn-end|session-end`: the host hook runner; always exits 0 and prints nothing on stdout.

use std::io::{IsTerminal, Read};
use std::time::Duration;

use browserd_protocol::lifecycle::HostKind;

use super::args::{HookArg, HostArg};
use crate::hooks::{self, HookEvent, HookOptions};

pub(super) async fn run(event: HookArg, notify: Option<String>, host: Option<HostArg>, timeout_ms: u64) -> i32 {
    let mut stdin = String::new();
    if notify.is_none() && !std::io::stdin().is_terminal() {
        // Bounded in size (a host sends one small JSON object) and in time (a host that never closes stdin must
        // not hold the hook): the read runs on its own thread, abandoned at the deadline.
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::stdin().take(1 << 20).read_to_string(&mut text);
            let _ = tx.send(text);
        });
        match tokio::time::timeout(Duration::from_millis(timeout_ms), rx).await {
            Ok(Ok(text)) => stdin = text,
            _ => eprintln!("browserd hook: no complete input on stdin within {timeout_ms} ms"),
        }
    }
    let event = match event {
        HookArg::TurnEnd => HookEvent::TurnEnd,
        HookArg::SessionEnd => HookEvent::SessionEnd,
    };
    let input = match hooks::parse_input(&stdin, notify.as_deref()) {
        Ok(input) => input,
        Err(why) => {
            eprintln!("browserd hook: {why}; nothing done");
            return 0;
        }
    };
    let options = HookOptions {
        timeout: Duration::from_millis(timeout_ms),
        host: host.map(|h| match h {
            HostArg::Codex => HostKind::Codex,
            HostArg::ClaudeCode => HostKind::ClaudeCode,
            HostArg::Mcp => HostKind::Mcp,
        }),
        runtime_dir: None,
    };
    let summary = hooks::run_hook(event, &input, &options).await;
    eprintln!("browserd hook: {summary}");
    0
}
