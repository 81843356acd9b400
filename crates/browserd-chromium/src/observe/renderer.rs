//! The renderer's state: the inputs of one observation (frames, DOM facts, trees, frame owners, the ref table), the
//! lines produced so far, and the node, byte and token budgets they are held to (tokens by a cheap o200k estimate).

use std::collections::HashMap;
use std::sync::Arc;

use browserd_protocol::{NodeRef, Truncation};

use super::context::Operable;
use super::line;
use super::snapshot::DomNode;
use super::window::WindowState;
use super::{Budget, Built};
use crate::ax::{AxNode, AxTree};
use crate::state::{Line, RefTable};

/// What the renderer needs of a frame: its key (`f2`), document epoch and URL.
pub(super) struct FrameMeta {
    pub(super) key: u32,
    pub(super) epoch: u64,
    pub(super) url: String,
}

/// The walk's state: turns one observation's trees into lines.
pub(super) struct Renderer<'a> {
    pub(super) frames: &'a HashMap<String, FrameMeta>,
    pub(super) docs: &'a HashMap<String, HashMap<i64, DomNode>>,
    pub(super) axs: &'a HashMap<String, Arc<AxTree>>,
    pub(super) owners: &'a HashMap<(String, i64), String>,
    /// See [`Inputs::denied`].
    pub(super) denied: &'a dyn Fn(&str) -> bool,
    pub(super) refs: &'a mut RefTable,
    /// The page's origin: same-origin links and frames are shown relative to it.
    pub(super) origin: String,
    /// The observation being built.
    pub(super) out: Built,
    /// Text gathered for the next text line, and its indent.
    pub(super) pending: String,
    pub(super) pending_indent: u16,
    /// A `~~` mark opened in `pending` for struck text (see [`Renderer::text_drawn`]); depth of `deletion` nodes
    /// (`<del>`, `<s>`) being walked.
    pub(super) strike_open: bool,
    pub(super) deleted: u32,
    /// `pending` holds text whose runs of spaces the page keeps (`<pre>`): it is not folded when written.
    pub(super) pending_spaces: bool,
    /// Bytes (two per level of indent) and estimated tokens of the lines so far.
    pub(super) bytes: usize,
    pub(super) tokens: usize,
    pub(super) max_nodes: u32,
    pub(super) budget: Budget,
    /// Operable nodes the budgets left out; which size budget was reached (`maxBytes`, `maxTokens`), if one was.
    pub(super) omitted: u32,
    pub(super) bytes_full: Option<&'static str>,
    /// Lines (of any kind) left out after the cut.
    pub(super) omitted_lines: u32,
    /// Containers being walked (frame, backend), innermost last; the regions to offer to expand.
    pub(super) containers: Vec<(String, i64)>,
    /// The only child (frame, node id) of each dialog walked: a panel that takes focus or clicks there (Element Plus's
    /// `<div class="el-dialog" tabindex="-1">` around the whole dialog) is the dialog itself, not a control in it.
    pub(super) dialog_panels: std::collections::HashSet<(String, String)>,
    pub(super) expand: Vec<(String, i64)>,
    /// The context chain of the current node: the quoted names of the rows, items, containers and headings around
    /// it, outermost first.
    pub(super) context: Vec<String>,
    /// Interactive lines, in order.
    pub(super) inter: Vec<Operable<'a>>,
    /// The nodes being walked (their ids in their frame's tree), outermost first, each with the length of the
    /// context chain when it was entered; cleared into a frame (see [`Renderer::scope`]).
    pub(super) path: Vec<(&'a str, usize)>,
    /// Depth of table rows being rendered (their cells share one line, joined with ` | `).
    pub(super) row_depth: u32,
    /// Depth of operable ancestors (heuristic clickables inside them get no ref of their own).
    pub(super) in_operable: u32,
    /// Whether a node has a semantic operable node below it (memo).
    pub(super) below: std::cell::RefCell<HashMap<(String, String), bool>>,
    /// A windowed read of `within` (`None`: every item).
    pub(super) window: Option<WindowState>,
    /// Tables and lists being walked, innermost last.
    pub(super) collections: Vec<(String, i64)>,
    /// Depth of unnamed lists being walked (a list inside a list item is indented under it: a tree).
    pub(super) list_depth: u16,
    /// Whether a fixed-position container is being walked (one inside it is not a popup of its own).
    pub(super) in_popup: bool,
    /// Depth of lists being walked that hold a tree (nested lists, disclosure triangles), and the list items of
    /// those being walked, innermost last: their rows get `expanded` / `collapsed` / `leaf`.
    pub(super) tree_depth: u16,
    pub(super) tree_items: Vec<super::disclosure::TreeItem>,
    /// Per frame, the elements that take clicks over what they overlap (fixed position), built on first use.
    pub(super) covers: std::cell::RefCell<HashMap<String, Vec<super::cover::Cover>>>,
    /// Per frame, the backend nodes the accessibility tree has (built on first use).
    pub(super) ax_backends: std::cell::RefCell<HashMap<String, std::collections::HashSet<i64>>>,
    /// Per frame, the table rows with a header cell that shows a pointer cursor of its own (a sortable column's):
    /// built once per frame, see `operable.rs` `quiet_header`.
    pub(super) pointer_header_rows: std::cell::RefCell<HashMap<String, std::collections::HashSet<i64>>>,
    /// Per frame, memoised: the elements outside the accessibility tree with a pointer of their own and a box
    /// (`element::hidden_controls_in`).
    pub(super) hidden_candidates: std::cell::RefCell<HashMap<String, Vec<i64>>>,
    /// Per frame, memoised: the `<label>`s (backend ids) that name a checkbox, radio or switch (`labelledby`).
    pub(super) toggle_labels: std::cell::RefCell<HashMap<String, std::collections::HashSet<i64>>>,
    /// Elements outside the accessibility tree already given a line from their text (`inline_clickable`).
    pub(super) inline_done: std::collections::HashSet<(String, i64)>,
    /// Elements already shown under the popup control that points at them (`controls`), skipped where they are.
    pub(super) moved: std::collections::HashSet<(String, i64)>,
    /// The open modal dialog (frame, element), once walked.
    pub(super) modal_at: Option<(String, i64)>,
    /// An `aria-modal` dialog with the page behind it covered by its backdrop but not made inert (Bootstrap's and
    /// antd's modals), found before the walk: its frame, its node and its ancestors (ids in that frame's tree), and
    /// how many operable elements wait behind it. What is outside it is not walked (`Renderer::find_covering_modal`).
    pub(super) covering_modal: Option<super::cover::CoveringModal>,
    /// Whether the walk is inside the covering modal.
    pub(super) in_covering_modal: bool,
    /// The depth of the items of trees drawn flat, by (frame, item id) (`flat_tree.rs`): their lines nest by it.
    pub(super) flat_tree_depth: super::flat_tree::Depths,
    /// The lines of the rendered line being walked (since the last line break), for [`Renderer::join_sentence`].
    pub(super) run: Vec<super::text::Piece>,
    /// The name of a clickable wrapper folded into the one operable node inside it (`operable::Fold`), by that node
    /// (frame, node id): the node's name when it has none, else its `title=`.
    pub(super) wrapper_names: HashMap<(String, String), String>,
    /// Per frame, the names of the icons drawn as images (`role="img"` with an icon library's markup): a name read
    /// from content begins or ends with them (`caret-down Projects`), which `element.rs` leaves out.
    pub(super) icon_names: std::cell::RefCell<HashMap<String, std::collections::HashSet<String>>>,
    /// Per frame, the drawn text of `aria-hidden` elements ([`DomNode::hidden_text`]) not yet shown, by the node of
    /// the accessibility tree nearest around each (`hidden.rs` `hidden_text_before`/`_after`).
    pub(super) hidden_texts: HashMap<String, HashMap<i64, Vec<super::hidden::HiddenText>>>,
    /// `aria-hidden` texts met inside the operable line being written, shown under it.
    pub(super) held_hidden: Vec<String>,
    /// Per frame, the controls drawn as icons outside the tree, by the backend id of the tree node nearest around
    /// each, not yet listed (`element.rs` `hidden_controls_after`).
    pub(super) hidden_icon_controls: HashMap<String, HashMap<i64, Vec<i64>>>,
}

impl Renderer<'_> {
    /// The DOM facts of a node.
    pub(super) fn dom(&self, frame: &str, n: &AxNode) -> Option<&DomNode> {
        n.backend.and_then(|b| self.docs.get(frame).and_then(|d| d.get(&b)))
    }

    /// Puts a note about the whole page first (counted in the budgets, never cut by them).
    pub(super) fn note_first(&mut self, text: String) {
        self.bytes += text.len() + 1;
        self.tokens += super::tokens::estimate(&text) + 1;
        self.out.lines.insert(0, Line { indent: 0, node_ref: None, text });
        for o in &mut self.inter {
            o.line += 1;
        }
    }

    /// Adds a line after the pending text; `None` when the byte budget has no room for it.
    pub(super) fn push(&mut self, indent: u16, node_ref: Option<String>, text: String) -> Option<usize> {
        self.flush_text();
        self.push_raw(indent, node_ref, text)
    }

    /// Adds a line if the byte budget has room for it (else the table, list or region being cut is offered to
    /// expand); its index in the lines.
    pub(super) fn push_raw(&mut self, indent: u16, node_ref: Option<String>, text: String) -> Option<usize> {
        let size = text.len() + usize::from(indent) * 2 + 1;
        let tokens = line_tokens_of(&text, indent);
        // One cut, at a line boundary: once a budget is spent, no later line is shown (a shorter one would fit, but
        // the observation would then skip lines silently).
        let over = if self.bytes + size > self.budget.bytes {
            Some("maxBytes")
        } else if self.tokens + tokens > self.budget.tokens {
            Some("maxTokens")
        } else {
            None
        };
        if self.bytes_full.is_some() || self.nodes_full() || over.is_some() {
            if self.bytes_full.is_none() && !self.nodes_full() {
                self.bytes_full = over;
            }
            self.omitted_lines += 1;
            // Offer the table or list (else the region) that was cut, to read by `within` + `window`.
            if let Some(c) = self.collections.last().or(self.containers.last())
                && !self.expand.contains(c)
            {
                self.expand.push(c.clone());
            }
            return None;
        }
        self.bytes += size;
        self.tokens += tokens;
        self.out.lines.push(Line { indent, node_ref, text });
        let line = self.out.lines.len() - 1;
        self.run.push(super::text::Piece { line, kind: super::text::PieceKind::Other });
        Some(line)
    }
}

/// What one observation renders: each frame's key and document, DOM facts and tree, and the owners of
/// out-of-process frames.
pub(super) struct Inputs<'a> {
    pub(super) frames: &'a HashMap<String, FrameMeta>,
    pub(super) docs: &'a HashMap<String, HashMap<i64, DomNode>>,
    pub(super) axs: &'a HashMap<String, Arc<AxTree>>,
    pub(super) owners: &'a HashMap<(String, i64), String>,
    /// Whether a frame's URL is of an origin the site policy does not authorise (shown as one line, never walked).
    pub(super) denied: &'a dyn Fn(&str) -> bool,
}

impl<'a> Renderer<'a> {
    /// A renderer of `inputs` into lines held to `max_nodes` operable nodes and the size `budget`, showing only the items
    /// `offset..offset + limit` of the start node when `window` is given.
    pub(super) fn new(
        inputs: Inputs<'a>,
        refs: &'a mut RefTable,
        origin: String,
        max_nodes: u32,
        budget: Budget,
        window: Option<(u32, u32)>,
    ) -> Self {
        let Inputs { frames, docs, axs, owners, denied } = inputs;
        Self {
            frames,
            docs,
            axs,
            owners,
            denied,
            refs,
            origin,
            out: Built::default(),
            pending: String::new(),
            pending_indent: 0,
            strike_open: false,
            deleted: 0,
            pending_spaces: false,
            bytes: 0,
            tokens: 0,
            max_nodes,
            budget,
            omitted: 0,
            omitted_lines: 0,
            bytes_full: None,
            containers: Vec::new(),
            dialog_panels: std::collections::HashSet::new(),
            expand: Vec::new(),
            context: Vec::new(),
            inter: Vec::new(),
            path: Vec::new(),
            in_operable: 0,
            list_depth: 0,
            in_popup: false,
            tree_depth: 0,
            tree_items: Vec::new(),
            covers: std::cell::RefCell::default(),
            ax_backends: std::cell::RefCell::default(),
            pointer_header_rows: std::cell::RefCell::default(),
            toggle_labels: std::cell::RefCell::default(),
            hidden_candidates: std::cell::RefCell::default(),
            inline_done: std::collections::HashSet::new(),
            moved: std::collections::HashSet::new(),
            wrapper_names: HashMap::new(),
            icon_names: std::cell::RefCell::default(),
            hidden_texts: HashMap::new(),
            held_hidden: Vec::new(),
            hidden_icon_controls: HashMap::new(),
            modal_at: None,
            covering_modal: None,
            in_covering_modal: false,
            flat_tree_depth: HashMap::new(),
            run: Vec::new(),
            row_depth: 0,
            below: std::cell::RefCell::new(HashMap::new()),
            window: window.map(|(offset, limit)| WindowState { offset, limit: limit.max(1), ..Default::default() }),
            collections: Vec::new(),
        }
    }
}

impl Renderer<'_> {
    /// The node budget is spent: the observation is cut here.
    pub(super) fn nodes_full(&self) -> bool {
        self.out.node_count >= self.max_nodes
    }

    /// The ref of a node of a frame (recorded in the tab's ref table).
    pub(super) fn assign_ref(&mut self, frame: &str, backend: i64) -> String {
        let (key, epoch) = self.frames.get(frame).map_or((0, 0), |m| (m.key, m.epoch));
        self.refs.assign(frame, key, epoch, backend)
    }

    /// Context added after budgeting may overflow: trims lines from the end until the lines fit both size budgets.
    pub(super) fn trim_to_budget(&mut self) {
        let mut size: usize = self.out.lines.iter().map(line_size).sum();
        let mut tokens: usize = self.out.lines.iter().map(line_tokens).sum();
        while size > self.budget.bytes || tokens > self.budget.tokens {
            let reason = if size > self.budget.bytes { "maxBytes" } else { "maxTokens" };
            let Some(l) = self.out.lines.pop() else { break };
            size -= line_size(&l);
            tokens -= line_tokens(&l);
            self.bytes_full.get_or_insert(reason);
            self.omitted_lines += 1;
            if let Some(gone) = &l.node_ref {
                self.omitted += 1;
                self.out.node_count = self.out.node_count.saturating_sub(1);
                self.out.nodes.retain(|n| n.node_ref != *gone);
            }
        }
    }

    /// The observation: the lines, then a note of the items a windowed read of `within` showed and one of what the
    /// budgets left out (with the regions to expand).
    pub(super) fn finish(mut self, within: Option<&(String, i64)>) -> Built {
        let expand_nodes = std::mem::take(&mut self.expand);
        let mut out = std::mem::take(&mut self.out);
        if let (Some(w), Some((frame, backend))) = (self.window.take(), within) {
            let (note, shown) = self.window_shown(&w, frame, *backend);
            out.lines.push(note);
            out.window = Some(shown);
        }
        if self.omitted > 0 || self.bytes_full.is_some() || self.omitted_lines > 0 {
            let expand: Vec<NodeRef> = expand_nodes
                .into_iter()
                .take(8)
                .map(|(frame, backend)| NodeRef(self.assign_ref(&frame, backend)))
                .collect();
            let reason = self.bytes_full.unwrap_or("maxNodes");
            out.lines.push(line::omitted(self.omitted_lines.max(self.omitted), self.omitted, reason, &expand));
            out.truncated = Some(Truncation { omitted_nodes: self.omitted, reason: reason.into(), expand });
        }
        out
    }
}

/// The estimated tokens a line counts for in the budget (its text, its indent, its line break).
pub(super) fn line_tokens(l: &Line) -> usize {
    line_tokens_of(&l.text, l.indent)
}

fn line_tokens_of(text: &str, indent: u16) -> usize {
    super::tokens::estimate(text) + usize::from(indent > 0) + 1
}

/// The bytes a line counts for in the budget (two per level of indent, whatever the rendering uses).
pub(super) fn line_size(l: &Line) -> usize {
    l.text.len() + usize::from(l.indent) * 2 + 1
}
