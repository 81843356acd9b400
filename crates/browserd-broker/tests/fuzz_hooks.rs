//! Fuzz target (bounded, in the default run): the hook JSON readers (`browserd hook turn-end|session-end`: Codex and
//! Claude Code hook JSON on stdin, Codex `notify` JSON as an argument). Arbitrary text and structured near-misses give
//! a session to act on or a reason why not — never a panic; a session id read is never blank; the notify argument
//! wins over stdin. Found cases are kept in `tests/fuzz_hooks.proptest-regressions`.

use browserd_broker::hooks::{close_reason, parse_input};
use browserd_protocol::lifecycle::HostKind;
use browserd_test_support::fuzz::{json_object, json_value};
use proptest::prelude::*;

fn hook_keys() -> Vec<String> {
    [
        "session_id",
        "turn_id",
        "hook_event_name",
        "reason",
        "thread-id",
        "thread_id",
        "turn-id",
        "type",
        "transcript_path",
        "cwd",
        "stop_hook_active",
        "input-messages",
        "last-assistant-message",
    ]
    .map(str::to_owned)
    .to_vec()
}

fn payload() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,64}",
        json_object(hook_keys()).prop_map(|v| v.to_string()),
        json_value(hook_keys()).prop_map(|v| v.to_string()),
        json_object(hook_keys()).prop_map(|v| format!("  {v}\n\n")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, max_shrink_iters: 2048, ..ProptestConfig::default() })]

    #[test]
    fn hook_payloads_give_a_session_or_a_reason(stdin in payload(), notify in proptest::option::of(payload())) {
        match parse_input(&stdin, notify.as_deref()) {
            Ok(input) => {
                prop_assert!(!input.host_session_id.trim().is_empty(), "{input:?}");
                if notify.as_deref().is_some_and(|n| !n.trim().is_empty()) {
                    prop_assert_eq!(input.host, Some(HostKind::Codex), "a notify argument is Codex's");
                }
                let _ = close_reason(input.reason.as_deref());
            }
            Err(why) => prop_assert!(!why.is_empty()),
        }
    }
}
