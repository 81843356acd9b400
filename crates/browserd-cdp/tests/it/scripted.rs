//! Connection-task behaviour against the scripted CDP peer: correlation, demux, deadlines, cancellation, closing.

use std::time::Duration;

use browserd_cdp::{AutoAttach, CdpError, ConnectionOptions, SessionId};
use browserd_test_support::scripted_cdp::{Answer, Rule, ScriptedCdp, ScriptedEvent};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

const T: Duration = Duration::from_secs(5);

fn attached(session: &str, target: &str, kind: &str, waiting: bool) -> Value {
    json!({
        "sessionId": session,
        "targetInfo": {"targetId": target, "type": kind, "url": "about:blank", "attached": true},
        "waitingForDebugger": waiting,
    })
}

#[tokio::test]
async fn answers_are_matched_to_calls_even_out_of_order() {
    let (cdp, mut server) = ScriptedCdp::new().rule(Rule::hold("Test.echo")).spawn();
    let calls: Vec<_> = (0..3)
        .map(|n| {
            let cdp = cdp.clone();
            tokio::spawn(async move { cdp.call(None, "Test.echo", json!({"n": n}), T).await })
        })
        .collect();
    let received = server.wait_for_calls(3).await;
    for call in received.iter().rev() {
        server.answer(call.id, Answer::Result(json!({"echo": call.params["n"]}))).await;
    }
    for (n, call) in calls.into_iter().enumerate() {
        assert_eq!(call.await.unwrap().unwrap(), json!({"echo": n}));
    }
}

#[tokio::test]
async fn enqueued_calls_reach_the_browser_in_order_before_any_answer() {
    let (cdp, mut server) = ScriptedCdp::new().rule(Rule::hold("Input.dispatchMouseEvent")).spawn();
    let session = SessionId("S1".into());
    let mut queued = Vec::new();
    for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
        let q = cdp.enqueue(Some(&session), "Input.dispatchMouseEvent", json!({"type": kind}), T).await.unwrap();
        queued.push(q);
    }
    // All three are on the wire while none has been answered, in the order they were queued.
    let received = server.wait_for_calls(3).await;
    let kinds: Vec<&str> = received.iter().map(|c| c.params["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["mouseMoved", "mousePressed", "mouseReleased"]);
    for call in received.iter().rev() {
        server.answer(call.id, Answer::Result(json!({"was": call.params["type"]}))).await;
    }
    for (q, kind) in queued.into_iter().zip(["mouseMoved", "mousePressed", "mouseReleased"]) {
        assert_eq!(q.answer().await.unwrap(), json!({"was": kind}));
    }
}

#[tokio::test(start_paused = true)]
async fn an_enqueued_call_times_out_from_when_it_was_queued() {
    let (cdp, _server) = ScriptedCdp::new().rule(Rule::hold("Slow.call")).spawn();
    let q = cdp.enqueue(None, "Slow.call", json!({}), Duration::from_secs(1)).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let err = q.answer().await.unwrap_err();
    assert!(matches!(&err, CdpError::Timeout { method } if method == "Slow.call"), "{err:?}");
    cdp.close("done").await;
    let err = cdp.enqueue(None, "Slow.call", json!({}), T).await.unwrap_err();
    assert!(matches!(&err, CdpError::ConnectionClosed { reason } if reason == "done"), "{err:?}");
}

#[tokio::test]
async fn calls_carry_their_session_and_params_on_the_wire() {
    let (cdp, mut server) = ScriptedCdp::new().answer_unmatched_with_empty_result().spawn();
    let session = SessionId("S1".into());
    cdp.call(Some(&session), "Page.enable", json!({"a": 1}), T).await.unwrap();
    cdp.call(None, "Browser.getVersion", json!({}), T).await.unwrap();
    let calls = server.wait_for_calls(2).await;
    assert_eq!(calls[0].session.as_deref(), Some("S1"));
    assert_eq!((calls[0].method.as_str(), &calls[0].params), ("Page.enable", &json!({"a": 1})));
    assert_eq!(calls[1].session, None);
    assert_ne!(calls[0].id, calls[1].id);
}

#[tokio::test]
async fn protocol_errors_name_the_method_and_code() {
    let (cdp, _server) = ScriptedCdp::new().rule(Rule::error("DOM.focus", -32000, "Element is not focusable")).spawn();
    let err = cdp.call(None, "DOM.focus", json!({}), T).await.unwrap_err();
    let CdpError::Protocol { code, message } = &err else { panic!("expected Protocol, got {err:?}") };
    assert_eq!(*code, -32000);
    assert!(message.contains("DOM.focus") && message.contains("Element is not focusable"), "{message}");
    let err = cdp.call(None, "No.suchMethod", json!({}), T).await.unwrap_err();
    assert!(matches!(err, CdpError::Protocol { code: -32601, .. }), "{err:?}");
}

#[tokio::test]
async fn events_are_demultiplexed_by_session() {
    let (cdp, server) = ScriptedCdp::new().answer_unmatched_with_empty_result().spawn();
    let s1 = SessionId("S1".into());
    let mut all = cdp.events();
    let mut only_s1 = cdp.session_events(&s1);
    server.emit(ScriptedEvent::new(Some("S2"), "Page.loadEventFired", json!({"n": 1}))).await;
    server.emit(ScriptedEvent::new(Some("S1"), "Page.loadEventFired", json!({"n": 2}))).await;
    server.emit(ScriptedEvent::new(None, "Target.targetCreated", json!({"n": 3}))).await;
    server.emit(ScriptedEvent::new(Some("S1"), "Runtime.consoleAPICalled", json!({"n": 4}))).await;

    let first = only_s1.recv().await.unwrap();
    assert_eq!(
        (first.session.as_ref(), first.method.as_str(), &first.params["n"]),
        (Some(&s1), "Page.loadEventFired", &json!(2))
    );
    let second = only_s1.recv().await.unwrap();
    assert_eq!((second.method.as_str(), &second.params["n"]), ("Runtime.consoleAPICalled", &json!(4)));

    let mut seen = Vec::new();
    for _ in 0..4 {
        let event = all.recv().await.unwrap();
        seen.push((event.session.map(|s| s.0), event.params["n"].as_i64().unwrap()));
    }
    assert_eq!(seen, vec![(Some("S2".into()), 1), (Some("S1".into()), 2), (None, 3), (Some("S1".into()), 4)]);
}

#[tokio::test(start_paused = true)]
async fn a_call_past_its_deadline_times_out_and_its_late_answer_is_ignored() {
    let (cdp, mut server) = ScriptedCdp::new()
        .rule(Rule::reply("Slow.call", json!({"late": true})).delay(Duration::from_secs(10)))
        .rule(Rule::reply("Fast.call", json!({"fast": true})))
        .spawn();
    let err = cdp.call(None, "Slow.call", json!({}), Duration::from_secs(1)).await.unwrap_err();
    let CdpError::Timeout { method } = &err else { panic!("expected Timeout, got {err:?}") };
    assert_eq!(method, "Slow.call");
    assert!(err.to_string().contains("Slow.call"));
    // Let the late answer arrive, then check the connection still pairs answers correctly.
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert_eq!(cdp.call(None, "Fast.call", json!({}), T).await.unwrap(), json!({"fast": true}));
    assert!(!cdp.is_closed());
    assert_eq!(server.wait_for_calls(2).await.len(), 2);
}

#[tokio::test]
async fn a_cancelled_call_fails_with_cancelled_and_its_late_answer_is_ignored() {
    let (cdp, mut server) =
        ScriptedCdp::new().rule(Rule::hold("Slow.call")).rule(Rule::reply("Fast.call", json!({"fast": true}))).spawn();
    let cancel = CancellationToken::new();
    let call = tokio::spawn({
        let (cdp, cancel) = (cdp.clone(), cancel.clone());
        async move { cdp.call_cancellable(None, "Slow.call", json!({}), T, &cancel).await }
    });
    let held = server.wait_for_call("Slow.call").await;
    cancel.cancel();
    assert!(matches!(call.await.unwrap(), Err(CdpError::Cancelled)));
    server.answer(held.id, Answer::Result(json!({"late": true}))).await;
    assert_eq!(cdp.call(None, "Fast.call", json!({}), T).await.unwrap(), json!({"fast": true}));
    // A token cancelled up front stops the call before it is answered.
    let err = cdp.call_cancellable(None, "Fast.call", json!({}), T, &cancel).await.unwrap_err();
    assert!(matches!(err, CdpError::Cancelled));
}

#[tokio::test]
async fn duplicated_answers_are_ignored() {
    let (cdp, _server) = ScriptedCdp::new()
        .rule(Rule::reply("Twice.call", json!({"n": 1})).duplicate())
        .rule(Rule::reply("Other.call", json!({"n": 2})))
        .spawn();
    assert_eq!(cdp.call(None, "Twice.call", json!({}), T).await.unwrap(), json!({"n": 1}));
    assert_eq!(cdp.call(None, "Other.call", json!({}), T).await.unwrap(), json!({"n": 2}));
    assert_eq!(cdp.call(None, "Other.call", json!({}), T).await.unwrap(), json!({"n": 2}));
}

#[tokio::test]
async fn malformed_messages_are_skipped() {
    let (cdp, server) = ScriptedCdp::new().rule(Rule::reply("A.b", json!({"ok": 1}))).spawn();
    server.send_raw("this is not json".into()).await;
    server.send_raw("[1, 2]".into()).await;
    server.send_raw(json!({"neither": "id nor method"}).to_string()).await;
    assert_eq!(cdp.call(None, "A.b", json!({}), T).await.unwrap(), json!({"ok": 1}));
}

#[tokio::test]
async fn detaching_a_session_fails_its_pending_calls_and_those_of_its_children() {
    let (cdp, mut server) = ScriptedCdp::new().rule(Rule::hold("Runtime.evaluate")).spawn();
    let (page, frame) = (SessionId("PAGE".into()), SessionId("FRAME".into()));
    server.emit(ScriptedEvent::new(None, "Target.attachedToTarget", attached("PAGE", "T-PAGE", "page", false))).await;
    server
        .emit(ScriptedEvent::new(
            Some("PAGE"),
            "Target.attachedToTarget",
            attached("FRAME", "T-FRAME", "iframe", false),
        ))
        .await;
    let on = |session: SessionId| {
        let cdp = cdp.clone();
        tokio::spawn(async move { cdp.call(Some(&session), "Runtime.evaluate", json!({}), T).await })
    };
    let (on_page, on_frame) = (on(page.clone()), on(frame.clone()));
    let on_browser = tokio::spawn({
        let cdp = cdp.clone();
        async move { cdp.call(None, "Runtime.evaluate", json!({}), T).await }
    });
    server.wait_for_calls_of("Runtime.evaluate", 3).await;
    server.emit(ScriptedEvent::new(None, "Target.detachedFromTarget", json!({"sessionId": "PAGE"}))).await;

    for call in [on_page, on_frame] {
        let err = call.await.unwrap().unwrap_err();
        let CdpError::TargetClosed { reason } = &err else { panic!("expected TargetClosed, got {err:?}") };
        assert!(reason.contains("T-PAGE") || reason.contains("T-FRAME"), "the reason names the target: {reason}");
    }
    // The browser-level call is unaffected.
    assert!(!on_browser.is_finished());
    // A later call on the detached session fails at once, without reaching the browser.
    let before = server.calls().len();
    let err = cdp.call(Some(&page), "Runtime.evaluate", json!({}), T).await.unwrap_err();
    assert!(matches!(err, CdpError::TargetClosed { .. }), "{err:?}");
    assert_eq!(server.calls().len(), before);
    let browser_call = server.calls().iter().find(|call| call.session.is_none()).unwrap().id;
    server.answer(browser_call, Answer::Result(json!({"still": "fine"}))).await;
    assert_eq!(on_browser.await.unwrap().unwrap(), json!({"still": "fine"}));
}

#[tokio::test]
async fn the_detach_reason_and_crashes_are_reported() {
    let (cdp, mut server) = ScriptedCdp::new().rule(Rule::hold("Runtime.evaluate")).spawn();
    server.emit(ScriptedEvent::new(None, "Target.attachedToTarget", attached("A", "T-A", "page", false))).await;
    server.emit(ScriptedEvent::new(None, "Target.attachedToTarget", attached("B", "T-B", "page", false))).await;
    let call_on = |session: &str| {
        let (cdp, session) = (cdp.clone(), SessionId(session.into()));
        tokio::spawn(async move { cdp.call(Some(&session), "Runtime.evaluate", json!({}), T).await })
    };
    let (on_a, on_b) = (call_on("A"), call_on("B"));
    server.wait_for_calls_of("Runtime.evaluate", 2).await;

    server
        .emit(ScriptedEvent::new(
            None,
            "Target.targetCrashed",
            json!({"targetId": "T-A", "status": "crashed", "errorCode": 139}),
        ))
        .await;
    let err = on_a.await.unwrap().unwrap_err();
    let CdpError::TargetClosed { reason } = &err else { panic!("expected TargetClosed, got {err:?}") };
    assert!(reason.contains("T-A") && reason.contains("crashed") && reason.contains("139"), "{reason}");

    server.emit(ScriptedEvent::new(Some("B"), "Inspector.detached", json!({"reason": "Render process gone."}))).await;
    server
        .emit(ScriptedEvent::new(None, "Target.detachedFromTarget", json!({"sessionId": "B", "targetId": "T-B"})))
        .await;
    let err = on_b.await.unwrap().unwrap_err();
    let CdpError::TargetClosed { reason } = &err else { panic!("expected TargetClosed, got {err:?}") };
    assert!(reason.contains("Render process gone."), "{reason}");
}

#[tokio::test]
async fn an_unknown_session_answer_becomes_target_closed() {
    let (cdp, _server) =
        ScriptedCdp::new().rule(Rule::error("Runtime.evaluate", -32001, "Session with given id not found.")).spawn();
    let err = cdp.call(Some(&SessionId("GONE".into())), "Runtime.evaluate", json!({}), T).await.unwrap_err();
    let CdpError::TargetClosed { reason } = &err else { panic!("expected TargetClosed, got {err:?}") };
    assert!(reason.contains("GONE"), "{reason}");
}

#[tokio::test]
async fn a_closed_transport_fails_every_pending_call_naming_why() {
    let (cdp, mut server) = ScriptedCdp::new().rule(Rule::hold("Runtime.evaluate")).spawn();
    let mut events = cdp.events();
    let calls: Vec<_> = [None, Some("S1"), Some("S2")]
        .into_iter()
        .map(|session| {
            let (cdp, session) = (cdp.clone(), session.map(|s| SessionId(s.into())));
            tokio::spawn(async move { cdp.call(session.as_ref(), "Runtime.evaluate", json!({}), T).await })
        })
        .collect();
    server.wait_for_calls(3).await;
    server.close("browser process 42 exited with status 3").await;
    for call in calls {
        let err = call.await.unwrap().unwrap_err();
        let CdpError::ConnectionClosed { reason } = &err else { panic!("expected ConnectionClosed, got {err:?}") };
        assert_eq!(reason, "browser process 42 exited with status 3");
    }
    assert_eq!(cdp.closed().await, "browser process 42 exited with status 3");
    assert!(cdp.is_closed());
    assert!(matches!(events.recv().await, Err(RecvError::Closed)));
    assert!(matches!(cdp.events().recv().await, Err(RecvError::Closed)));
    let err = cdp.call(None, "Browser.getVersion", json!({}), T).await.unwrap_err();
    assert!(matches!(err, CdpError::ConnectionClosed { .. }), "{err:?}");
}

#[tokio::test]
async fn close_ends_the_connection_with_the_given_reason() {
    let (cdp, mut server) = ScriptedCdp::new().rule(Rule::hold("Runtime.evaluate")).spawn();
    let pending = tokio::spawn({
        let cdp = cdp.clone();
        async move { cdp.call(None, "Runtime.evaluate", json!({}), T).await }
    });
    server.wait_for_calls(1).await;
    cdp.close("the test is done").await;
    let err = pending.await.unwrap().unwrap_err();
    assert!(matches!(&err, CdpError::ConnectionClosed { reason } if reason == "the test is done"), "{err:?}");
}

#[tokio::test]
async fn a_lagging_subscriber_learns_how_many_events_it_lost() {
    let (cdp, server) = ScriptedCdp::new()
        .rule(Rule::reply("Sync.point", json!({})))
        .connection_options(ConnectionOptions { event_capacity: 4, ..ConnectionOptions::default() })
        .spawn();
    let mut events = cdp.events();
    for n in 0..10 {
        server.emit(ScriptedEvent::new(None, "Test.tick", json!({"n": n}))).await;
    }
    // The answer comes after the events on the same transport, so all ten have been published by now.
    cdp.call(None, "Sync.point", json!({}), T).await.unwrap();
    assert!(matches!(events.recv().await, Err(RecvError::Lagged(6))));
    assert_eq!(events.recv().await.unwrap().params["n"], json!(6));
}

#[tokio::test]
async fn auto_attach_configures_and_resumes_children_recursively() {
    let (cdp, mut server) = ScriptedCdp::new().answer_unmatched_with_empty_result().spawn();
    cdp.set_auto_attach(None, AutoAttach::default(), T).await.unwrap();
    let root_call = server.wait_for_call("Target.setAutoAttach").await;
    assert_eq!(root_call.session, None);
    assert_eq!(root_call.params, json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true}));

    let mut events = cdp.events();
    server.emit(ScriptedEvent::new(None, "Target.attachedToTarget", attached("PAGE", "T1", "page", true))).await;
    server
        .emit(ScriptedEvent::new(Some("PAGE"), "Target.attachedToTarget", attached("FRAME", "T2", "iframe", true)))
        .await;
    server
        .emit(ScriptedEvent::new(Some("FRAME"), "Target.attachedToTarget", attached("WORKER", "T3", "worker", false)))
        .await;
    for _ in 0..3 {
        assert_eq!(events.recv().await.unwrap().method, "Target.attachedToTarget");
    }
    let calls = server.wait_for_calls(1 + 2 + 2 + 1).await;
    let seen: Vec<(Option<&str>, &str)> = calls.iter().map(|c| (c.session.as_deref(), c.method.as_str())).collect();
    assert_eq!(
        seen,
        vec![
            (None, "Target.setAutoAttach"),
            (Some("PAGE"), "Target.setAutoAttach"),
            (Some("PAGE"), "Runtime.runIfWaitingForDebugger"),
            (Some("FRAME"), "Target.setAutoAttach"),
            (Some("FRAME"), "Runtime.runIfWaitingForDebugger"),
            // Not waiting for the debugger: configured, not resumed.
            (Some("WORKER"), "Target.setAutoAttach"),
        ]
    );
    assert!(calls[1..].iter().all(|c| c.params == root_call.params || c.method == "Runtime.runIfWaitingForDebugger"));
}

#[tokio::test]
async fn auto_attach_can_leave_resuming_to_the_caller() {
    let (cdp, mut server) = ScriptedCdp::new().answer_unmatched_with_empty_result().spawn();
    let page = SessionId("PAGE".into());
    server.emit(ScriptedEvent::new(None, "Target.attachedToTarget", attached("PAGE", "T1", "page", false))).await;
    let config = AutoAttach { resume_children: false, ..AutoAttach::default() };
    cdp.set_auto_attach(Some(&page), config, T).await.unwrap();
    server
        .emit(ScriptedEvent::new(Some("PAGE"), "Target.attachedToTarget", attached("FRAME", "T2", "iframe", true)))
        .await;
    // A browser-level attach is not under the page, so it is left alone.
    server.emit(ScriptedEvent::new(None, "Target.attachedToTarget", attached("OTHER", "T3", "page", true))).await;
    cdp.call(None, "Sync.point", json!({}), T).await.unwrap();
    let calls = server.wait_for_calls(3).await;
    let seen: Vec<(Option<&str>, &str)> = calls.iter().map(|c| (c.session.as_deref(), c.method.as_str())).collect();
    assert_eq!(
        seen,
        vec![(Some("PAGE"), "Target.setAutoAttach"), (Some("FRAME"), "Target.setAutoAttach"), (None, "Sync.point")]
    );
}

#[tokio::test]
async fn a_failed_set_auto_attach_reports_the_error() {
    let (cdp, _server) = ScriptedCdp::new().rule(Rule::error("Target.setAutoAttach", -32000, "Not allowed")).spawn();
    let err = cdp.set_auto_attach(None, AutoAttach::default(), T).await.unwrap_err();
    assert!(matches!(err, CdpError::Protocol { code: -32000, .. }), "{err:?}");
}

#[tokio::test]
async fn after_a_crash_renderer_calls_fail_at_once_until_the_target_is_reloaded() {
    let (cdp, server) = ScriptedCdp::new().answer_unmatched_with_empty_result().spawn();
    let page = SessionId("PAGE".into());
    server.emit(ScriptedEvent::new(None, "Target.attachedToTarget", attached("PAGE", "T-PAGE", "page", false))).await;
    server.emit(ScriptedEvent::new(Some("PAGE"), "Inspector.targetCrashed", json!({}))).await;
    cdp.call(None, "Sync.point", json!({}), T).await.unwrap();

    let err = cdp.call(Some(&page), "Runtime.evaluate", json!({}), T).await.unwrap_err();
    let CdpError::TargetClosed { reason } = &err else { panic!("expected TargetClosed, got {err:?}") };
    assert!(reason.contains("T-PAGE") && reason.contains("crashed") && reason.contains("Page.reload"), "{reason}");
    // Browser-side calls still go through: they answer after a crash, and Page.reload is how to recover.
    cdp.call(Some(&page), "Emulation.setDeviceMetricsOverride", json!({}), T).await.unwrap();
    cdp.call(Some(&page), "Page.reload", json!({}), T).await.unwrap();
    server.emit(ScriptedEvent::new(Some("PAGE"), "Inspector.targetReloadedAfterCrash", json!({}))).await;
    cdp.call(None, "Sync.point", json!({}), T).await.unwrap();
    cdp.call(Some(&page), "Runtime.evaluate", json!({}), T).await.unwrap();

    let seen: Vec<String> = server.calls().into_iter().map(|call| call.method).collect();
    assert_eq!(
        seen,
        ["Sync.point", "Emulation.setDeviceMetricsOverride", "Page.reload", "Sync.point", "Runtime.evaluate"]
    );
}
