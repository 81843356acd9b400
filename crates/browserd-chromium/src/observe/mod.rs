//! Observation: the accessibility tree of every frame merged with a DOM snapshot (identity, geometry, clickability),
//! rendered as compact lines with stable, document-bound refs; budgets, region expansion, diffs and staleness checks.
//! A session's accessibility trees are reused while its page state (DOM snapshot + focus and script-set states) is
//! unchanged.
//!
//! An observation, in order ([`observe`], [`build_in`]): the `within` ref is checked (`refs`) and a windowed read's
//! list scrolled to its window (`window`); the tab's frames are grouped by session (`frames`); each session's page
//! state and DOM snapshot are read in browserd's state world (`page_state`), which also tells whether the document is
//! ready (`ready`); cached accessibility trees are reused or brought up to date (`trees`), or for a large plain page
//! built from the snapshot (`dom_tree`); the snapshot's DOM facts are parsed (`snapshot`); the trees are walked into
//! lines (`renderer` holds the state and budgets, `walk` the document order, `text` the text lines, `operable` which
//! nodes get a ref, `element` an operable node's line, `window` the rows of a windowed read, `controls` what an
//! expanded popup control points at, under it); alike lines get context (`context`); the result is rendered in the
//! line format (`line`) as a full observation or a diff.

mod class_state;
mod combobox;
mod context;
mod controls;
mod cover;
mod disclosure;
mod dom_tree;
mod element;
mod flat_tree;
mod frames;
mod hidden;
mod icon;
mod line;
mod operable;
mod page_state;
mod ready;
mod refs;
mod renderer;
mod snapshot;
mod text;
mod tokens;
mod trees;
mod walk;
mod window;

use std::time::Instant;

use browserd_core::provider::{ProviderError, ProviderErrorKind, TabHandle};
use browserd_protocol::vision::PIXEL_CONTENT_NEXT_STEP;
use browserd_protocol::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_NODES, DEFAULT_MAX_TOKENS, DEFAULT_WINDOW_LIMIT, FrameSummary, NodeRef, Observation,
    ObservationDiff, ObserveParams, PixelContent, Size, Truncation, WindowShown,
};
use futures_util::future::join_all;

pub(crate) use crate::ax::AxCache;
use crate::provider::{ChromiumProvider, gone};
use crate::state::Line;
pub(crate) use line::{diff, is_bare_container, render};
pub(crate) use refs::{
    RefError, Resolved, await_reattached_frames, check_node_versions, commit_seen, cursor, resolve_ref,
};

/// What one node looked like (for expectations).
#[derive(Debug, Clone)]
pub(crate) struct NodeSummary {
    pub(crate) node_ref: String,
    pub(crate) role: String,
    pub(crate) name: String,
    pub(crate) states: Vec<String>,
}

/// An observation before it becomes wire data.
#[derive(Debug, Default)]
pub(crate) struct Built {
    pub(crate) lines: Vec<Line>,
    pub(crate) node_count: u32,
    pub(crate) truncated: Option<Truncation>,
    pub(crate) focused: Option<String>,
    pub(crate) modal: Option<String>,
    pub(crate) title: String,
    pub(crate) nodes: Vec<NodeSummary>,
    pub(crate) frames: Vec<FrameSummary>,
    pub(crate) url: String,
    /// The items a windowed read showed.
    pub(crate) window: Option<WindowShown>,
    /// The main document was ready to be observed: loaded past `loading`, and not the initial blank document of a
    /// tab that is opening a page (see [`ready::note_document`]).
    pub(crate) ready: bool,
    /// Drawing canvases: how many, and the largest (CSS pixels).
    pub(crate) canvases: Option<(u32, (f64, f64))>,
    /// Refs left out because a modal dialog holds the page (see [`crate::state::Revision`]).
    pub(crate) behind_modal: Vec<String>,
}

impl Built {
    /// What a diff compares: the lines and the refs behind a modal dialog.
    pub(crate) fn revision(&self) -> crate::state::Revision {
        crate::state::Revision::new(self.lines.clone(), self.behind_modal.clone())
    }
}

/// `browser_observe`.
pub(crate) async fn observe(
    p: &ChromiumProvider,
    tab: TabHandle,
    params: &ObserveParams,
    deadline: Instant,
) -> Result<Observation, ProviderError> {
    if params.within.is_some() && params.since.is_some() {
        return Err(ProviderError::new(ProviderErrorKind::InvalidRequest, "use either `within` or `since`, not both"));
    }
    if params.window.is_some() && params.within.is_none() {
        return Err(ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            "`window` reads rows/items of a region: also pass `within` (the ref of the table, list or its container, \
             e.g. from `truncated.expand`)",
        ));
    }
    let within = match &params.within {
        None => None,
        Some(r) => Some(refs::resolve_within(p, tab, r)?),
    };
    let max_nodes = params.max_nodes.unwrap_or(DEFAULT_MAX_NODES).max(1);
    // Room is kept for the envelope (URL, title, framing, the cut note) in both budgets.
    let max_bytes = Budget {
        bytes: usize::try_from(params.max_bytes.unwrap_or(DEFAULT_MAX_BYTES)).unwrap_or(usize::MAX).max(512) - 300,
        tokens: usize::try_from(params.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)).unwrap_or(usize::MAX).max(128) - 80,
    };
    let window = params.window.map(|w| (w.offset, w.limit.unwrap_or(DEFAULT_WINDOW_LIMIT).clamp(1, max_nodes)));
    if let (Some((offset, _)), Some(res)) = (window, &within) {
        window::scroll_window_into_view(p, &res.session, res.backend, offset, deadline).await?;
    }
    let within = within.map(|res| (res.frame_id, res.backend));
    // The page-state read of the build also says whether the document is ready: a document still loading (or the
    // initial blank document of an opening tab) is waited for, up to `READY_WAIT_CAP`, then observed as it is.
    let stop = deadline.min(Instant::now() + ready::READY_WAIT_CAP);
    let mut built = build_in(p, tab, within.clone(), window, max_nodes, max_bytes, false, deadline).await?;
    if !built.ready {
        ready::wait_until_ready(p, tab, stop).await?;
        built = build_in(p, tab, within.clone(), window, max_nodes, max_bytes, true, deadline).await?;
    }
    commit_seen(p, tab, &built.nodes);
    let mut obs = answer(p, tab, params, &built, within.is_some())?;
    if params.screenshot || params.screenshot_options.is_some() {
        let opts = params.screenshot_options.clone().unwrap_or_default();
        obs.screenshot = Some(crate::screenshot::capture(p, tab, &opts, deadline).await?);
    }
    Ok(obs)
}

/// The observation handed to the caller: a page blocked by a dialog shows the dialog only; a region (`within`) is
/// shown without a new revision; else the lines become the tab's next revision, shown whole or as a diff `since` a
/// cursor (a cursor out of the window asks to resync, with the full observation).
fn answer(
    p: &ChromiumProvider,
    tab: TabHandle,
    params: &ObserveParams,
    built: &Built,
    region: bool,
) -> Result<Observation, ProviderError> {
    let mut obs = Observation {
        window: built.window,
        url: built.url.clone(),
        title: built.title.clone(),
        frames: built.frames.clone(),
        node_count: built.node_count,
        truncated: built.truncated.clone(),
        connection_epoch: p.epoch,
        modal: built.modal.clone(),
        focused: built.focused.clone().map(NodeRef),
        pixel_content: built.canvases.map(|(canvases, (width, height))| PixelContent {
            canvases,
            largest: Size { width, height },
            needs_vision: false,
            next_step: PIXEL_CONTENT_NEXT_STEP.to_owned(),
        }),
        ..Default::default()
    };
    let mut st = p.st();
    let t = st.tabs.get_mut(&tab).ok_or_else(|| gone(tab))?;
    obs.dialog = t.dialog.clone();
    obs.load_state = t.load_state;
    if let Some(d) = &t.dialog {
        // The page is blocked: show the dialog only, and keep the revision history as it was.
        obs.untrusted_content = render(&[line::dialog(&d.kind, &d.message)]);
        obs.revision = t.revision;
        obs.cursor = cursor(p, t.revision);
    } else if region {
        obs.untrusted_content = render(&built.lines);
        obs.revision = t.revision;
        obs.cursor = cursor(p, t.revision);
    } else {
        let base = params.since.as_ref().map(|c| t.revision_at(p.epoch, c).map(|old| (c.clone(), old.clone())));
        let rev = t.push_revision(built.revision());
        obs.revision = rev;
        obs.cursor = cursor(p, rev);
        match base {
            Some(Some((since, old))) => {
                let (added, removed) = diff(&old, &built.lines, &built.behind_modal);
                obs.diff = Some(ObservationDiff {
                    since,
                    added: added.iter().map(|l| l.text.clone()).collect(),
                    removed: removed.into_iter().map(NodeRef).collect(),
                });
            }
            Some(None) => {
                obs.resync_required = true;
                obs.untrusted_content = render(&built.lines);
            }
            None => obs.untrusted_content = render(&built.lines),
        }
    }
    Ok(obs)
}

/// The size budgets of one observation's lines: bytes (two per level of indent) and estimated o200k tokens.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    pub(crate) bytes: usize,
    pub(crate) tokens: usize,
}

impl Default for Budget {
    /// The default budgets, less the envelope's room.
    fn default() -> Self {
        Budget { bytes: DEFAULT_MAX_BYTES as usize - 300, tokens: DEFAULT_MAX_TOKENS as usize - 80 }
    }
}

/// Builds an observation of a tab (records refs; does not store a revision).
pub(crate) async fn build(
    p: &ChromiumProvider,
    tab: TabHandle,
    within: Option<(String, i64)>,
    max_nodes: u32,
    max_bytes: Budget,
    deadline: Instant,
) -> Result<Built, ProviderError> {
    build_in(p, tab, within, None, max_nodes, max_bytes, true, deadline).await
}

/// [`build`], showing only the items `offset..offset + limit` of `within` when `window` is given. Unless `force`, a
/// main document that is not ready yet ends the build right after the page-state read, with `ready: false`.
#[allow(clippy::too_many_arguments)]
async fn build_in(
    p: &ChromiumProvider,
    tab: TabHandle,
    within: Option<(String, i64)>,
    window: Option<(u32, u32)>,
    max_nodes: u32,
    max_bytes: Budget,
    force: bool,
    deadline: Instant,
) -> Result<Built, ProviderError> {
    let main_session = p.ensure_attached(tab, deadline).await?;
    let layout = match frames::layout(p, tab, main_session)? {
        Ok(layout) => layout,
        Err(blocked) => return Ok(blocked),
    };
    // Per session: the page-state signature and a DOM snapshot (their digest is the session's state); the OOPIF
    // owners alongside. Accessibility trees are then fetched only for sessions whose state changed since their
    // trees were cached: `Accessibility.getFullAXTree` is most of an observation's cost on a large page.
    let t_calls = Instant::now();
    let reader = page_state::StateReader::new(p, tab, deadline);
    let states = join_all(layout.sessions.iter().map(|(s, _)| reader.read(s)));
    let (states, owners) = tokio::join!(states, frames::owners(p, &layout.oop, deadline));
    let snap_ms = t_calls.elapsed().as_secs_f64() * 1000.0;
    let epochs = frames::doc_epochs(p, tab)?;
    let ready = ready::main_ready(p, tab, states.first());
    let hidden = matches!(states.first(), Some(Ok(s)) if s.hidden);
    if !ready && !force {
        return Ok(Built::default());
    }
    let trees::Lookup { snapshots, mut misses, mut trees } = trees::lookup(p, tab, &layout.sessions, states, &epochs)?;
    let reads = trees::read_misses(p, &reader, &layout.sessions, &snapshots, &mut misses, &epochs, deadline).await;
    let ax_ms = t_calls.elapsed().as_secs_f64() * 1000.0;
    let ax_fetched = misses.len();
    let t_render = Instant::now();
    let garbage = trees::apply(&reader, misses, reads, &epochs, &layout.main_frame, &mut trees)?;
    let docs = snapshot::parse_all(&snapshots);
    let canvases = snapshot::canvases(&docs);
    // Large CDP answers are freed off the observation's path.
    // (A snapshot kept for the next read is only let go of here.)
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => drop(rt.spawn_blocking(move || drop((garbage, snapshots)))),
        Err(_) => drop((garbage, snapshots)),
    }
    let mut st = p.st();
    let t = st.tabs.get_mut(&tab).ok_or_else(|| gone(tab))?;
    t.refs.bind(p.epoch);
    let url = t.url.clone();
    // The site policy: a tab showing an origin that is not authorised is not read at all; a frame of one is one line.
    p.origin_error(tab, &t.policy_url(&url))?;
    let denied = |frame_url: &str| p.origin_refusal(tab, frame_url).is_some();
    let metas = frames::metas(t);
    let summaries = frames::summaries(t, &denied);
    let (start_frame, start_id) = frames::start(&trees, within.as_ref(), &layout.main_frame)?;
    let inputs = renderer::Inputs { frames: &metas, docs: &docs, axs: &trees, owners: &owners, denied: &denied };
    let mut r = renderer::Renderer::new(inputs, &mut t.refs, line::origin_of(&url), max_nodes, max_bytes, window);
    r.out.title = frames::title(&trees, &layout.main_frame);
    if within.is_none() {
        r.find_covering_modal(&start_frame);
    }
    r.walk(&start_frame, &start_id, 0, false);
    r.flush_text();
    r.join_sentence();
    if within.is_none() {
        r.note_inert_background();
        if hidden {
            r.note_first(line::background_tab());
        }
    }
    r.drop_label_echoes();
    r.disambiguate();
    r.trim_to_budget();
    let behind_modal = if within.is_none() { r.refs_behind_modal() } else { Vec::new() };
    let mut out = r.finish(within.as_ref());
    out.behind_modal = behind_modal;
    if out.title.is_empty() {
        out.title.clone_from(&t.title);
    }
    out.frames = summaries;
    out.url = url;
    out.ready = ready;
    out.canvases = canvases;
    tracing::debug!(
        snap_ms,
        ax_ms,
        ax_fetched,
        render_ms = t_render.elapsed().as_secs_f64() * 1000.0,
        nodes = out.node_count,
        "observation built"
    );
    Ok(out)
}
