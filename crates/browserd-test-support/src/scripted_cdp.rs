//! A scripted CDP peer: a fake browser on the far side of an in-memory transport that answers calls by rules.
//!
//! Rules match a method (and optionally a session) and say how to answer: a result, a protocol error, or nothing
//! (the call is held, to be answered later by hand with [`ScriptedServer::answer`], or never). An answer can be
//! delayed, duplicated, and followed by events. Calls that match no rule get Chromium's "method not found" error,
//! unless the script answers them with `{}` by default. Every received call is logged, in order.
//!
//! ```ignore
//! let (cdp, server) = ScriptedCdp::new()
//!     .rule(Rule::reply("Browser.getVersion", json!({"product": "Fake/1"})))
//!     .rule(Rule::hold("Runtime.evaluate"))
//!     .spawn();
//! ```

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use browserd_cdp::{Cdp, ConnectionOptions, MemoryTransport, Transport, memory_pair};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// A call as the fake browser received it.
#[derive(Clone, Debug, PartialEq)]
pub struct ReceivedCall {
    pub id: u64,
    pub session: Option<String>,
    pub method: String,
    pub params: Value,
}

/// What the fake browser answers.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// `{"id", "result"}`.
    Result(Value),
    /// `{"id", "error": {code, message}}`.
    Error { code: i64, message: String },
    /// No answer: the call stays pending (answer it by hand, or let it time out).
    Hold,
}

/// Which session an emitted event belongs to.
#[derive(Clone, Debug, PartialEq)]
pub enum EventSession {
    /// A browser-level event (no `sessionId`).
    Root,
    /// The session of the call that triggered it.
    OfCall,
    /// A given session id.
    Id(String),
}

/// An event the fake browser emits.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptedEvent {
    pub session: EventSession,
    pub method: String,
    pub params: Value,
}

impl ScriptedEvent {
    /// An event on `session` (`None` for browser-level).
    pub fn new(session: Option<&str>, method: &str, params: Value) -> ScriptedEvent {
        let session = match session {
            Some(id) => EventSession::Id(id.to_owned()),
            None => EventSession::Root,
        };
        ScriptedEvent { session, method: method.to_owned(), params }
    }

    /// An event on the session of the call that triggered it.
    pub fn on_call_session(method: &str, params: Value) -> ScriptedEvent {
        ScriptedEvent { session: EventSession::OfCall, method: method.to_owned(), params }
    }
}

type AnswerFn = Arc<dyn Fn(&ReceivedCall) -> Answer + Send + Sync>;

/// How to answer the calls of one method.
#[derive(Clone)]
pub struct Rule {
    method: String,
    /// `None` matches every session; `Some(None)` only browser-level calls.
    session: Option<Option<String>>,
    answer: AnswerFn,
    delay: Duration,
    duplicate: bool,
    events: Vec<ScriptedEvent>,
    /// How many more calls this rule may answer; `None` for unlimited.
    times: Option<usize>,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule")
            .field("method", &self.method)
            .field("session", &self.session)
            .field("delay", &self.delay)
            .field("duplicate", &self.duplicate)
            .field("events", &self.events)
            .field("times", &self.times)
            .finish_non_exhaustive()
    }
}

impl Rule {
    /// Answers `method` with `result`.
    pub fn reply(method: &str, result: Value) -> Rule {
        Rule::with(method, move |_| Answer::Result(result.clone()))
    }

    /// Answers `method` with a protocol error.
    pub fn error(method: &str, code: i64, message: &str) -> Rule {
        let message = message.to_owned();
        Rule::with(method, move |_| Answer::Error { code, message: message.clone() })
    }

    /// Never answers `method` by itself (events of the rule are still emitted).
    pub fn hold(method: &str) -> Rule {
        Rule::with(method, |_| Answer::Hold)
    }

    /// Answers `method` with whatever `answer` computes from the call.
    pub fn with(method: &str, answer: impl Fn(&ReceivedCall) -> Answer + Send + Sync + 'static) -> Rule {
        Rule {
            method: method.to_owned(),
            session: None,
            answer: Arc::new(answer),
            delay: Duration::ZERO,
            duplicate: false,
            events: Vec::new(),
            times: None,
        }
    }

    /// Only matches calls on `session` (`None`: browser-level calls only).
    pub fn on_session(mut self, session: Option<&str>) -> Rule {
        self.session = Some(session.map(str::to_owned));
        self
    }

    /// Sends the answer (and the events) after `delay`.
    pub fn delay(mut self, delay: Duration) -> Rule {
        self.delay = delay;
        self
    }

    /// Sends the answer twice.
    pub fn duplicate(mut self) -> Rule {
        self.duplicate = true;
        self
    }

    /// Emits `event` right after the answer (or, for a held call, when the answer would have been sent).
    pub fn then_emit(mut self, event: ScriptedEvent) -> Rule {
        self.events.push(event);
        self
    }

    /// Answers only the next `n` matching calls; later ones fall through to later rules.
    pub fn times(mut self, n: usize) -> Rule {
        self.times = Some(n);
        self
    }

    fn matches(&self, call: &ReceivedCall) -> bool {
        self.method == call.method
            && self.times != Some(0)
            && self.session.as_ref().is_none_or(|session| *session == call.session)
    }
}

/// A script for the fake browser: its rules, in priority order, and what to do with unmatched calls.
#[derive(Debug, Default)]
pub struct ScriptedCdp {
    rules: Vec<Rule>,
    answer_unmatched_with_empty_result: bool,
    connection: Option<ConnectionOptions>,
}

impl ScriptedCdp {
    /// An empty script: every call gets "method not found".
    pub fn new() -> ScriptedCdp {
        ScriptedCdp::default()
    }

    /// Adds a rule; earlier rules win.
    pub fn rule(mut self, rule: Rule) -> ScriptedCdp {
        self.rules.push(rule);
        self
    }

    /// Answers calls that match no rule with `{}` instead of an error.
    pub fn answer_unmatched_with_empty_result(mut self) -> ScriptedCdp {
        self.answer_unmatched_with_empty_result = true;
        self
    }

    /// Queue sizes for the `Cdp` connection made by [`ScriptedCdp::spawn`].
    pub fn connection_options(mut self, options: ConnectionOptions) -> ScriptedCdp {
        self.connection = Some(options);
        self
    }

    /// Starts the fake browser and a [`Cdp`] connected to it.
    pub fn spawn(self) -> (Cdp, ScriptedServer) {
        let (client_end, server_end) = memory_pair(64);
        let options = self.connection.clone().unwrap_or_default();
        let server = self.spawn_on(server_end);
        (Cdp::spawn(client_end, options), server)
    }

    /// Starts the fake browser on `transport` (the far end of a transport the caller connects itself).
    pub fn spawn_on(self, transport: MemoryTransport) -> ScriptedServer {
        let (control_tx, control_rx) = mpsc::channel(64);
        let (count_tx, count_rx) = watch::channel(0);
        let calls = Arc::new(Mutex::new(Vec::new()));
        let task = ServerTask {
            transport,
            control: control_rx,
            rules: self.rules,
            answer_unmatched_with_empty_result: self.answer_unmatched_with_empty_result,
            calls: calls.clone(),
            count: count_tx,
            schedule: BinaryHeap::new(),
            seq: 0,
        };
        ScriptedServer { control: control_tx, calls, count: count_rx, task: Some(tokio::spawn(task.run())) }
    }
}

/// The handle to a running fake browser.
#[derive(Debug)]
pub struct ScriptedServer {
    control: mpsc::Sender<Control>,
    calls: Arc<Mutex<Vec<ReceivedCall>>>,
    count: watch::Receiver<usize>,
    task: Option<JoinHandle<()>>,
}

enum Control {
    Send(String, oneshot::Sender<()>),
    Close(String, oneshot::Sender<()>),
}

impl ScriptedServer {
    /// Every call received so far, in order.
    pub fn calls(&self) -> Vec<ReceivedCall> {
        self.calls.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// Waits until at least `n` calls have been received; returns all received so far.
    pub async fn wait_for_calls(&mut self, n: usize) -> Vec<ReceivedCall> {
        let _ = self.count.wait_for(|count| *count >= n).await;
        self.calls()
    }

    /// Waits until a call of `method` has been received; returns the first one.
    pub async fn wait_for_call(&mut self, method: &str) -> ReceivedCall {
        self.wait_for_calls_of(method, 1).await.remove(0)
    }

    /// Waits until `n` calls of `method` have been received; returns all received so far, in order.
    pub async fn wait_for_calls_of(&mut self, method: &str, n: usize) -> Vec<ReceivedCall> {
        let mut seen = 0;
        loop {
            let calls = self.wait_for_calls(seen + 1).await;
            let matching: Vec<ReceivedCall> = calls.iter().filter(|call| call.method == method).cloned().collect();
            if matching.len() >= n {
                return matching;
            }
            seen = calls.len();
        }
    }

    /// Answers call `id` now (the call need not have been held; a second answer is a duplicate).
    pub async fn answer(&self, id: u64, answer: Answer) {
        if let Some(text) = answer_text(id, &answer) {
            self.send_raw(text).await;
        }
    }

    /// Emits an event now.
    pub async fn emit(&self, event: ScriptedEvent) {
        self.send_raw(event_text(&event, None)).await;
    }

    /// Sends any text to the client, verbatim.
    pub async fn send_raw(&self, text: String) {
        let (done_tx, done_rx) = oneshot::channel();
        if self.control.send(Control::Send(text, done_tx)).await.is_ok() {
            let _ = done_rx.await;
        }
    }

    /// Closes the transport as a dying browser would; the client's pending calls fail naming `reason`.
    pub async fn close(&mut self, reason: &str) {
        let (done_tx, done_rx) = oneshot::channel();
        if self.control.send(Control::Close(reason.to_owned(), done_tx)).await.is_ok() {
            let _ = done_rx.await;
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

struct ServerTask {
    transport: MemoryTransport,
    control: mpsc::Receiver<Control>,
    rules: Vec<Rule>,
    answer_unmatched_with_empty_result: bool,
    calls: Arc<Mutex<Vec<ReceivedCall>>>,
    count: watch::Sender<usize>,
    /// Messages due later, ordered by due time, then by the order they were scheduled.
    schedule: BinaryHeap<Reverse<(Instant, u64, String)>>,
    seq: u64,
}

impl ServerTask {
    async fn run(mut self) {
        loop {
            let next_due = self.schedule.peek().map(|Reverse((due, _, _))| *due);
            tokio::select! {
                incoming = self.transport.recv() => match incoming {
                    Ok(text) => self.on_call(&text),
                    Err(_) => return,
                },
                control = self.control.recv() => match control {
                    Some(Control::Send(text, done)) => {
                        if self.transport.send(text).await.is_err() {
                            return;
                        }
                        let _ = done.send(());
                    }
                    Some(Control::Close(reason, done)) => {
                        self.transport.close(&reason).await;
                        let _ = done.send(());
                        return;
                    }
                    None => return,
                },
                () = sleep_until_due(next_due) => {
                    let now = Instant::now();
                    while let Some(Reverse((due, _, _))) = self.schedule.peek() {
                        if *due > now {
                            break;
                        }
                        let Some(Reverse((_, _, text))) = self.schedule.pop() else { break };
                        if self.transport.send(text).await.is_err() {
                            return;
                        }
                    }
                }
            }
        }
    }

    fn on_call(&mut self, text: &str) {
        let Ok(message) = serde_json::from_str::<Value>(text) else {
            panic!("the CDP client sent a message that is not JSON: {text}");
        };
        let call = ReceivedCall {
            id: message["id"].as_u64().unwrap_or_else(|| panic!("the CDP client sent a call without an id: {text}")),
            session: message.get("sessionId").and_then(Value::as_str).map(str::to_owned),
            method: message["method"].as_str().unwrap_or_default().to_owned(),
            params: message.get("params").cloned().unwrap_or_else(|| json!({})),
        };
        self.calls.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(call.clone());
        self.count.send_modify(|count| *count += 1);

        let rule = self.rules.iter_mut().find(|rule| rule.matches(&call));
        let (answer, delay, duplicate, events) = match rule {
            Some(rule) => {
                if let Some(times) = &mut rule.times {
                    *times -= 1;
                }
                ((rule.answer)(&call), rule.delay, rule.duplicate, rule.events.clone())
            }
            None if self.answer_unmatched_with_empty_result => {
                (Answer::Result(json!({})), Duration::ZERO, false, vec![])
            }
            None => (
                Answer::Error { code: -32601, message: format!("'{}' wasn't found", call.method) },
                Duration::ZERO,
                false,
                vec![],
            ),
        };
        let due = Instant::now() + delay;
        if let Some(text) = answer_text(call.id, &answer) {
            if duplicate {
                self.schedule_at(due, text.clone());
            }
            self.schedule_at(due, text);
        }
        for event in &events {
            self.schedule_at(due, event_text(event, call.session.as_deref()));
        }
    }

    fn schedule_at(&mut self, due: Instant, text: String) {
        self.seq += 1;
        self.schedule.push(Reverse((due, self.seq, text)));
    }
}

async fn sleep_until_due(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

fn answer_text(id: u64, answer: &Answer) -> Option<String> {
    match answer {
        Answer::Result(result) => Some(json!({"id": id, "result": result}).to_string()),
        Answer::Error { code, message } => {
            Some(json!({"id": id, "error": {"code": code, "message": message}}).to_string())
        }
        Answer::Hold => None,
    }
}

fn event_text(event: &ScriptedEvent, call_session: Option<&str>) -> String {
    let mut message = Map::new();
    message.insert("method".into(), Value::String(event.method.clone()));
    message.insert("params".into(), event.params.clone());
    let session = match &event.session {
        EventSession::Root => None,
        EventSession::OfCall => call_session,
        EventSession::Id(id) => Some(id.as_str()),
    };
    if let Some(session) = session {
        message.insert("sessionId".into(), Value::String(session.to_owned()));
    }
    Value::Object(message).to_string()
}
