//! The observer abstraction: anything that can turn a URL into the text a model would receive (Playwright MCP's
//! `browser_snapshot`, browserd's observation). Adding a tool to the benchmark means implementing [`Observer`].

use async_trait::async_trait;

use crate::report::TimingRow;

/// What one observer produced for one page.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// The observation text exactly as a model receives it (from the last of the timed calls).
    pub text: String,
    /// The observation's page rendering without its envelope (browserd: the `untrustedContent` field of the
    /// `Observation` JSON), when the tool wraps it in one; `None` when `text` is all there is.
    pub content: Option<String>,
    /// Wall time of each timed call, in milliseconds (navigation excluded), failed calls included.
    pub ms_runs: Vec<f64>,
    /// Operable nodes the tool says it left out of the observation (browserd's `truncated.omittedNodes`); `None`
    /// when the tool reports no truncation.
    pub omitted_nodes: Option<u32>,
    /// How many of the timed calls failed (an action that did not succeed or whose expectation did not hold).
    pub failures: usize,
    /// Per-phase medians of an action's own timings (`ActionResult.timings`: queue, resolve, actionability, dispatch,
    /// wait, observe, serialize), in milliseconds, when the tool reports them.
    pub phases_p50_ms: Option<std::collections::BTreeMap<String, f64>>,
}

/// An element an observation makes addressable: it has a ref the model can act on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Addressable {
    /// Its role as the observation shows it (`button`, `link`, `textbox`, ...).
    pub role: String,
    /// Its accessible name as the observation shows it.
    pub name: String,
}

/// Errors of an observer; each message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ObserverError {
    /// The tool could not be started (missing runtime, failed install, browser missing).
    #[error("{observer}: cannot start: {reason}")]
    Start {
        /// Observer name.
        observer: String,
        /// What failed and what to do.
        reason: String,
    },
    /// Navigating to or observing one page failed.
    #[error("{observer}: observing {url} failed: {reason}")]
    Page {
        /// Observer name.
        observer: String,
        /// The page.
        url: String,
        /// What failed.
        reason: String,
    },
    /// The observer cannot do this at all.
    #[error("{observer}: unsupported: {what}")]
    Unsupported {
        /// Observer name.
        observer: String,
        /// What is unsupported.
        what: String,
    },
    /// The observer's process or connection went away.
    #[error("{observer}: the session ended unexpectedly: {reason}")]
    Gone {
        /// Observer name.
        observer: String,
        /// What was seen.
        reason: String,
    },
}

/// A tool under benchmark.
#[async_trait]
pub trait Observer: Send {
    /// Short stable name used in the JSON rows, e.g. `playwright-mcp`.
    fn name(&self) -> &str;

    /// Navigates to `url` (untimed), then observes it `runs` times, timing each observation call.
    async fn observe(&mut self, url: &str, runs: usize) -> Result<Observation, ObserverError>;

    /// Navigates to `url` (untimed), finds the element with `role` and `name` in an untimed observation, then
    /// clicks it `runs` times, timing each call as the model would wait for it. `text` is the last call's result
    /// as the model receives it. Observers without actions keep the default, which says "unsupported".
    async fn click(&mut self, url: &str, role: &str, name: &str, runs: usize) -> Result<Observation, ObserverError> {
        let _ = (url, role, name, runs);
        Err(ObserverError::Unsupported { observer: self.name().to_owned(), what: "click".into() })
    }

    /// The elements `text` (an observation of this observer) gives a ref to, for the addressability check.
    /// Roles are ARIA roles; an element shown without one (a heuristic `clickable`/`focusable`, Playwright's
    /// `generic`) is reported as `generic`, and an element without a name is known by its text, because that is how
    /// the generated pages' manifests name their operable elements that have no role.
    fn addressable(&self, text: &str) -> Vec<Addressable>;

    /// Timing-only measurements of this observer beyond observe and click (browserd: the raw CDP round trip), each
    /// `runs` samples. The default has none.
    async fn timings(&mut self, runs: usize) -> Vec<Result<TimingRow, ObserverError>> {
        let _ = runs;
        Vec::new()
    }

    /// Ends the session and its browser.
    async fn close(self: Box<Self>);
}
