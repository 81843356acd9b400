//! `browser_act`'s `requestId` (an idempotency key the model chooses): a repeated id *of the same host session*
//! returns the first result (`deduplicated: true`) and never dispatches again; the same id with another payload is
//! refused (`PAYLOAD_MISMATCH`); while the first still runs a repeat is refused (`DUPLICATE_REQUEST`).
//!
//! Keys are (host, host session id, request id): sessions never share ids. Memory is bounded by a least-recently-used
//! cap and a time to live; the oldest entries leave one by one, never the whole map. A call that ends without a
//! result (cancelled, client gone) leaves an `unknown` (input may have been sent) or `cancelled` result behind at
//! once, through [`Running`]'s drop.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use browserd_protocol::page::{ActionResult, Dispatch, Outcome};
use serde_json::Value;

/// Most request ids remembered (all sessions together).
pub const MAX_ENTRIES: usize = 4096;
/// How long a request id is remembered after its last use.
pub const TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Who a request id belongs to: the host and its session id.
pub type Key = (String, String, String);

#[derive(Debug, Clone)]
enum Entry {
    Running(u64),
    Done(u64, Box<Value>),
}

#[derive(Debug)]
struct Slot {
    entry: Entry,
    used: Instant,
    order: u64,
}

#[derive(Debug, Default)]
struct Inner {
    slots: HashMap<Key, Slot>,
    /// Use order → key, oldest first.
    lru: BTreeMap<u64, Key>,
    next: u64,
}

impl Inner {
    fn touch(&mut self, key: &Key, now: Instant) {
        self.next += 1;
        let order = self.next;
        if let Some(slot) = self.slots.get_mut(key) {
            self.lru.remove(&slot.order);
            slot.order = order;
            slot.used = now;
            self.lru.insert(order, key.clone());
        }
    }

    fn insert(&mut self, key: Key, entry: Entry, now: Instant, cap: usize, ttl: Duration) {
        if let Some(old) = self.slots.remove(&key) {
            self.lru.remove(&old.order);
        }
        self.next += 1;
        let order = self.next;
        self.slots.insert(key.clone(), Slot { entry, used: now, order });
        self.lru.insert(order, key);
        self.evict(now, cap, ttl);
    }

    /// Drops expired entries and, past the cap, the least recently used ones (never a running one).
    fn evict(&mut self, now: Instant, cap: usize, ttl: Duration) {
        let mut skipped = Vec::new();
        while let Some((&order, key)) = self.lru.iter().next() {
            let slot = &self.slots[key];
            let expired = now.duration_since(slot.used) > ttl;
            if !expired && self.slots.len() - skipped.len() <= cap {
                break;
            }
            let key = key.clone();
            self.lru.remove(&order);
            if matches!(slot.entry, Entry::Running(_)) && !expired {
                skipped.push((order, key));
                continue;
            }
            self.slots.remove(&key);
        }
        for (order, key) in skipped {
            self.lru.insert(order, key);
        }
    }
}

/// The request-id table of one broker.
#[derive(Debug, Clone)]
pub struct RequestIds {
    inner: Arc<Mutex<Inner>>,
    cap: usize,
    ttl: Duration,
}

impl Default for RequestIds {
    fn default() -> Self {
        Self::with_bounds(MAX_ENTRIES, TTL)
    }
}

/// What [`RequestIds::begin`] decided.
#[derive(Debug)]
pub enum Begun {
    /// New: run it; finish through the guard.
    Run(Running),
    /// Answer with this result instead (the first result marked `deduplicated`, or a refusal).
    Answer(Box<ActionResult>),
}

/// A request id whose call runs. [`Running::finish`] stores the result; dropped without one, it stores `unknown`
/// (if `sent` says input may have gone out) or `cancelled`.
#[derive(Debug)]
pub struct Running {
    table: Option<RequestIds>,
    key: Key,
    hash: u64,
    trace: String,
}

fn refused(trace: &str, code: browserd_protocol::ErrorCode, message: String) -> Box<ActionResult> {
    Box::new(ActionResult {
        trace_id: trace.to_owned(),
        outcome: Outcome::Failed,
        dispatch: Dispatch::NotDispatched,
        code: Some(code.as_str().to_owned()),
        message: Some(message),
        ..ActionResult::default()
    })
}

impl RequestIds {
    /// A table with these bounds.
    #[must_use]
    pub fn with_bounds(cap: usize, ttl: Duration) -> Self {
        Self { inner: Arc::default(), cap, ttl }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many ids are remembered.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock().slots.len()
    }

    /// Whether none is.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Looks `key` up for a call with payload digest `hash` (the arguments without the request id).
    pub fn begin(&self, key: Key, hash: u64, trace: &str) -> Begun {
        let now = Instant::now();
        let mut inner = self.lock();
        inner.evict(now, self.cap, self.ttl);
        let found = inner.slots.get(&key).map(|slot| slot.entry.clone());
        match found {
            Some(Entry::Done(h, result)) if h == hash => {
                inner.touch(&key, now);
                let mut answer: ActionResult = serde_json::from_value(*result).unwrap_or_default();
                answer.deduplicated = true;
                Begun::Answer(Box::new(answer))
            }
            Some(Entry::Done(..) | Entry::Running(_)) if found_hash(&found) != hash => Begun::Answer(refused(
                trace,
                browserd_protocol::ErrorCode::PayloadMismatch,
                format!("requestId {} was already used with another payload; use a new requestId", key.2),
            )),
            Some(Entry::Running(_)) => Begun::Answer(refused(
                trace,
                browserd_protocol::ErrorCode::DuplicateRequest,
                format!("requestId {} is still running; wait for its result instead of resending", key.2),
            )),
            _ => {
                inner.insert(key.clone(), Entry::Running(hash), now, self.cap, self.ttl);
                Begun::Run(Running { table: Some(self.clone()), key, hash, trace: trace.to_owned() })
            }
        }
    }
}

/// Resolves a request id with how its call ended: the action's result; a refusal before anything was sent frees the
/// id; an end after input may have gone out leaves `unknown` (the guard's drop).
pub fn finish(running: Running, result: &Result<Value, browserd_protocol::ErrorData>) {
    use browserd_protocol::ErrorCode as C;
    match result {
        Ok(value) => match serde_json::from_value::<ActionResult>(value.clone()) {
            Ok(action) => running.finish(&action),
            Err(_) => drop(running),
        },
        Err(e)
            if matches!(
                e.code,
                C::UserStopped | C::OutcomeUnknown | C::ConnectionLost | C::DeadlineExceeded | C::Cancelled
            ) =>
        {
            drop(running);
        }
        Err(_) => running.forget(),
    }
}

/// The digest of an action's payload, its `requestId` left out (the caller has taken it).
#[must_use]
pub fn payload_digest(params: &browserd_protocol::ActParams) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(params).unwrap_or_default().hash(&mut hasher);
    hasher.finish()
}

fn found_hash(found: &Option<Entry>) -> u64 {
    match found {
        Some(Entry::Done(h, _) | Entry::Running(h)) => *h,
        None => 0,
    }
}

impl Running {
    /// Stores the call's result. A result that sent nothing and did not succeed frees the id for a retry.
    pub fn finish(mut self, result: &ActionResult) {
        let Some(table) = self.table.take() else { return };
        let mut inner = table.lock();
        if result.dispatch == Dispatch::NotDispatched && result.outcome != Outcome::Succeeded {
            if let Some(slot) = inner.slots.remove(&self.key) {
                inner.lru.remove(&slot.order);
            }
            return;
        }
        let value = serde_json::to_value(result).unwrap_or(Value::Null);
        inner.insert(self.key.clone(), Entry::Done(self.hash, Box::new(value)), Instant::now(), table.cap, table.ttl);
    }

    /// Frees the id (the call failed before anything could be sent, e.g. refused by back-pressure).
    pub fn forget(mut self) {
        let Some(table) = self.table.take() else { return };
        let mut inner = table.lock();
        if let Some(slot) = inner.slots.remove(&self.key) {
            inner.lru.remove(&slot.order);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(table) = self.table.take() else { return };
        // Ended without a result: the call was cancelled or its client went away. Input may have been sent.
        let result = ActionResult {
            trace_id: self.trace.clone(),
            outcome: Outcome::Unknown,
            dispatch: Dispatch::Dispatched,
            code: Some(browserd_protocol::ErrorCode::Cancelled.as_str().to_owned()),
            message: Some(
                "this requestId's call was cancelled before it finished; input may have been sent, so it is not \
                 run again: observe the page to see whether it took effect"
                    .to_owned(),
            ),
            ..ActionResult::default()
        };
        let value = serde_json::to_value(&result).unwrap_or(Value::Null);
        let mut inner = table.lock();
        inner.insert(self.key.clone(), Entry::Done(self.hash, Box::new(value)), Instant::now(), table.cap, table.ttl);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(session: &str, id: &str) -> Key {
        ("claudeCode".into(), session.into(), id.into())
    }

    fn done(table: &RequestIds, k: Key, hash: u64) {
        let Begun::Run(running) = table.begin(k, hash, "tr") else { panic!("new") };
        running.finish(&ActionResult {
            outcome: Outcome::Succeeded,
            dispatch: Dispatch::Dispatched,
            ..ActionResult::default()
        });
    }

    #[test]
    fn ids_are_scoped_to_their_session() {
        let table = RequestIds::default();
        done(&table, key("a", "r1"), 7);
        assert!(matches!(table.begin(key("b", "r1"), 7, "tr"), Begun::Run(_)), "another session's id is new");
        match table.begin(key("a", "r1"), 7, "tr") {
            Begun::Answer(answer) => assert!(answer.deduplicated && answer.outcome == Outcome::Succeeded),
            Begun::Run(_) => panic!("A's repeat is answered"),
        }
        match table.begin(key("a", "r1"), 8, "tr") {
            Begun::Answer(answer) => assert_eq!(answer.code.as_deref(), Some("PAYLOAD_MISMATCH")),
            Begun::Run(_) => panic!("another payload is refused"),
        }
    }

    #[test]
    fn the_table_is_bounded_one_entry_at_a_time() {
        let table = RequestIds::with_bounds(3, TTL);
        for n in 0..5 {
            done(&table, key("a", &format!("r{n}")), 1);
        }
        assert_eq!(table.len(), 3, "bounded");
        // The oldest left first; the newest stay: never wiped whole.
        assert!(matches!(table.begin(key("a", "r0"), 1, "tr"), Begun::Run(_)));
        assert!(matches!(table.begin(key("a", "r4"), 1, "tr"), Begun::Answer(_)));
    }

    #[test]
    fn entries_expire_after_their_ttl() {
        let table = RequestIds::with_bounds(10, Duration::ZERO);
        done(&table, key("a", "r1"), 1);
        std::thread::sleep(Duration::from_millis(2));
        assert!(matches!(table.begin(key("a", "r1"), 1, "tr"), Begun::Run(_)));
    }

    #[test]
    fn a_dropped_call_leaves_unknown_behind_at_once() {
        let table = RequestIds::default();
        let Begun::Run(running) = table.begin(key("a", "r1"), 1, "tr") else { panic!() };
        assert!(
            matches!(table.begin(key("a", "r1"), 1, "tr"), Begun::Answer(a) if a.code.as_deref() == Some("DUPLICATE_REQUEST"))
        );
        drop(running);
        match table.begin(key("a", "r1"), 1, "tr") {
            Begun::Answer(answer) => assert_eq!((answer.outcome, answer.deduplicated), (Outcome::Unknown, true)),
            Begun::Run(_) => panic!("a cancelled call is never run again"),
        }
    }
}
