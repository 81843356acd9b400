//! Context for operable lines that would read alike: a table row with one operable cell folded into that cell's
//! line, and namesakes told apart by the text of their own small container (a chip's label beside its "×"), or by
//! the rows, items, containers and headings around them.

use std::collections::HashMap;

use super::line;
use super::operable::INTERACTIVE;
use super::renderer::Renderer;
use super::snapshot::{DomNode, holds};
use crate::ax::AxTree;
use crate::state::Line;

/// Where an operable node sits in its frame's tree: its frame, its own node, and the nodes around it below the
/// nearest context (row, item, named container, heading), innermost first.
pub(super) struct Scope<'a> {
    pub(super) frame: &'a str,
    pub(super) own: &'a str,
    pub(super) around: Vec<&'a str>,
    /// The namesake's element when the tree has no node for it (a chip's `aria-hidden` remove button): `own` is
    /// then empty and `around` starts at the node it was found under.
    pub(super) element: Option<i64>,
}

/// How many nodes up a namesake's own small container is looked for.
const SCOPE_DEPTH: usize = 4;

/// An interactive line, for disambiguation.
pub(super) struct Operable<'a> {
    /// Index in `Built::lines`.
    pub(super) line: usize,
    pub(super) role: String,
    pub(super) name: String,
    /// Context chain, outermost first: the quoted names of the rows, items, containers and headings around it.
    pub(super) context: Vec<String>,
    /// Where the line's value (`: Draft`) starts in its text (its length when it has none): context is inserted
    /// there, so the value, which may hold any text, always ends the line.
    pub(super) tail: usize,
    /// Where its node sits (`None`: unknown), for the text of its own small container.
    pub(super) scope: Option<Scope<'a>>,
}

impl Operable<'_> {
    /// Adds `extra` (` (in …)`) to the line, before its value.
    pub(super) fn annotate(&mut self, lines: &mut [Line], extra: &str) {
        lines[self.line].text.insert_str(self.tail, extra);
        self.tail += extra.len();
    }
}

impl<'a> Renderer<'a> {
    /// Where the node being walked sits (the last node of the walk's path): see [`Scope`].
    pub(super) fn scope(&self, frame: &str) -> Option<Scope<'a>> {
        let (frame, _) = self.axs.get_key_value(frame)?;
        let &(own, _) = self.path.last()?;
        let depth = self.context.len();
        let around = self.path.iter().rev().skip(1).take_while(|(_, d)| *d >= depth).take(SCOPE_DEPTH);
        Some(Scope { frame, own, around: around.map(|(id, _)| *id).collect(), element: None })
    }

    /// Where an element the tree has no node for sits: under the node being walked (see [`Scope::element`]).
    pub(super) fn element_scope(&self, frame: &str, element: i64) -> Option<Scope<'a>> {
        let (frame, _) = self.axs.get_key_value(frame)?;
        let depth = self.context.len();
        let around = self.path.iter().rev().take_while(|(_, d)| *d >= depth).take(SCOPE_DEPTH);
        Some(Scope { frame, own: "", around: around.map(|(id, _)| *id).collect(), element: Some(element) })
    }

    /// The text of a namesake's own small container: the nearest element around it, below its nearest context, that
    /// holds text besides it and no other operable node (the chip `<span>design <i>×</i></span>` for its "×").
    /// `None` once an element around it holds another operable node: that text would be a neighbour's, not its own.
    /// Elements are the DOM's (the accessibility tree often has no node for an inline `<span>`); their text and
    /// operable nodes are read from the tree below the nearest node around it that holds them.
    fn local_context(&self, s: &Scope<'_>) -> Option<String> {
        let ax = self.axs.get(s.frame)?;
        let docs = self.docs.get(s.frame)?;
        let element = match s.element {
            Some(element) => element,
            None => {
                let own = ax.nodes.get(s.own)?;
                // A text's own element is the element it is the text of (an inline clickable the tree leaves out).
                match own.backend? {
                    b if own.role == "StaticText" => docs.get(&b)?.parent?,
                    b => b,
                }
            }
        };
        let around: Vec<(&str, i64)> =
            s.around.iter().filter_map(|id| Some((*id, ax.nodes.get(*id)?.backend?))).collect();
        let limit = around.last()?.1;
        let mut at = element;
        for _ in 0..SCOPE_DEPTH * 2 {
            if at == limit {
                break;
            }
            at = docs.get(&at)?.parent?;
            // The nearest node of the tree around it that holds `at`, and the text and operable nodes below it that
            // `at` holds besides the namesake itself.
            let (root, root_backend) = *around.iter().find(|(_, b)| holds(docs, *b, at, None))?;
            let scan = Scan { frame: s.frame, ax, docs, own: (s.own, element), container: at, root: root_backend };
            let mut text = String::new();
            if self.scan(&scan, root, &mut text, 0) {
                return None;
            }
            if !line::fold(&text).is_empty() {
                return Some(line::quote_cut(&text, 40));
            }
        }
        None
    }

    /// Reads a subtree for [`Renderer::local_context`]: appends the first text that the container holds to `text`;
    /// true when it holds an operable node besides the namesake.
    fn scan(&self, s: &Scan<'_>, id: &str, text: &mut String, depth: u32) -> bool {
        let Some(n) = s.ax.nodes.get(id) else { return false };
        if id == s.own.0 || n.hidden || depth > 40 {
            return false;
        }
        let inside = match n.backend {
            Some(b) if holds(s.docs, s.own.1, b, Some(s.root)) => return false,
            Some(b) if holds(s.docs, s.container, b, Some(s.root)) => true,
            // Neither in the container nor around it: nothing below it is in it either.
            Some(b) if !holds(s.docs, b, s.container, Some(s.root)) => return false,
            _ => false,
        };
        if inside {
            let operable = if n.role == "StaticText" {
                self.inline_clickable_element(s.frame, n).is_some_and(|e| e != s.own.1)
            } else if n.ignored {
                self.dom_operable(s.frame, n)
            } else {
                self.operable(s.frame, s.ax, id).is_some()
            };
            if operable {
                return true;
            }
            if n.role == "StaticText" && text.trim().is_empty() {
                text.push_str(n.name.trim());
            }
            if INTERACTIVE.contains(&n.role.as_str()) {
                return false;
            }
        }
        n.children.iter().any(|c| self.scan(s, c, text, depth + 1))
    }
}

impl Renderer<'_> {
    /// Whether line `at` is indented right under a container line whose name is `context` (`e3 clickable "Desk
    /// lamp":` for `"Desk lamp"`): its context is on the line above it, so a note repeating it would add nothing.
    fn parent_shows(&self, at: usize, context: &str) -> bool {
        let lines = &self.out.lines;
        let Some(indent) = lines.get(at).map(|l| l.indent).filter(|i| *i > 0) else { return false };
        let parent = lines[..at].iter().rev().find(|l| l.indent < indent);
        parent.is_some_and(|p| p.indent + 1 == indent && line::container_context(&p.text).as_deref() == Some(context))
    }

    /// Whether line `at` follows, at its own indent, the text line that its context is the text of (an issue row's
    /// `TRK-101`, then its title link, then its `Open` chip), with at most [`ABOVE`] lines between: read in order,
    /// the lines say whose it is, so a note repeating that text would add nothing. The first text line met going up
    /// must be that text: one of another item would say the wrong thing.
    fn shown_above(&self, at: usize, context: &str) -> bool {
        let lines = &self.out.lines;
        let Some(indent) = lines.get(at).map(|l| l.indent) else { return false };
        for l in lines[..at].iter().rev().take(ABOVE).take_while(|l| l.indent == indent) {
            if l.node_ref.is_none() {
                return line::quote_cut(&l.text, 40) == context;
            }
        }
        false
    }
}

/// How many lines up [`Renderer::shown_above`] looks for the text a namesake's context is.
const ABOVE: usize = 3;

/// What [`Renderer::scan`] reads: the tree and DOM facts of a frame, the namesake (its tree node and element), the
/// element whose text is looked for, and the element of the node scanned from (the search for ancestors stops there).
struct Scan<'s> {
    frame: &'s str,
    ax: &'s AxTree,
    docs: &'s HashMap<i64, DomNode>,
    own: (&'s str, i64),
    container: i64,
    root: i64,
}

impl Renderer<'_> {
    /// A row with exactly one operable cell becomes that cell's line, with the other cells as its context:
    /// `e4 button "Edit" (row: Ann | Active | $12)`.
    pub(super) fn merge_row(&mut self, start: usize, inter_start: usize) {
        let lines = &self.out.lines[start..];
        if self.inter.len() != inter_start + 1
            || lines.iter().filter(|l| l.node_ref.is_some()).count() != 1
            || lines.iter().any(|l| l.indent != lines[0].indent)
        {
            return;
        }
        let Some(pos) = lines.iter().position(|l| l.node_ref.is_some()) else { return };
        if self.inter[inter_start].line != start + pos {
            return;
        }
        let cells: Vec<&str> = lines.iter().filter(|l| l.node_ref.is_none()).map(|l| l.text.as_str()).collect();
        if cells.is_empty() {
            return;
        }
        let (note, context) = line::row_note(&cells);
        let removed: usize = lines.iter().map(|l| l.text.len() + usize::from(l.indent) * 2 + 1).sum();
        let line = self.out.lines.remove(start + pos);
        self.out.lines.truncate(start);
        self.out.lines.push(line);
        let entry = &mut self.inter[inter_start];
        entry.line = start;
        entry.annotate(&mut self.out.lines, &note);
        let line = &self.out.lines[start];
        self.bytes = self.bytes.saturating_sub(removed) + line.text.len() + usize::from(line.indent) * 2 + 1;
        // The row text tells it apart from its namesakes in other rows; only identical rows still need context.
        entry.name = format!("{}\u{0}{context}", entry.name);
    }

    /// Adds context to interactive lines of one frame that share a role and name: the text of its own small container
    /// that no other line of the group has (`(in "design")`, see `local_context`); else the nearest context (row,
    /// list item, named container, heading) that no other line of the group shares, `(in "Team lunch")`; else the nearest
    /// with the nearest outer one that together no other line shares, `(in "Invoice 1042" in "Inbox")`; an ordinal
    /// only where no context is enough, `(in "Inbox"; 2 of 3)`. A context is the quoted name (or first text) of its
    /// row, item, container or heading, which the lines above show with their role; contexts are compared as shown,
    /// so two lines never get the same annotation.
    pub(super) fn disambiguate(&mut self) {
        // Namesakes in different frames are told apart by their refs already: `[f2e1]` is in the frame whose line
        // reads `iframe "…" [f2]`, `[e5]` in the page itself.
        let mut groups: HashMap<(u32, String, String), Vec<usize>> = HashMap::new();
        for (i, o) in self.inter.iter().enumerate() {
            let frame = self.out.lines[o.line].node_ref.as_deref().and_then(crate::state::parse_ref).map(|r| r.frame);
            groups.entry((frame.unwrap_or(0), o.role.clone(), line::fold(&o.name))).or_default().push(i);
        }
        for idxs in groups.values().filter(|g| g.len() > 1) {
            let mut unresolved: HashMap<Option<String>, Vec<usize>> = HashMap::new();
            let mut extras = Vec::new();
            // The text of each line's own small container, kept where no other line has it (in its chain or as its
            // own container's text).
            let mut locals: Vec<Option<String>> =
                idxs.iter().map(|&i| self.inter[i].scope.as_ref().and_then(|s| self.local_context(s))).collect();
            let shared: Vec<bool> = (0..idxs.len())
                .map(|k| {
                    locals[k].as_ref().is_some_and(|own| {
                        idxs.iter().enumerate().any(|(j, &i)| {
                            j != k && (locals[j].as_ref() == Some(own) || self.inter[i].context.contains(own))
                        })
                    })
                })
                .collect();
            for (l, shared) in locals.iter_mut().zip(shared) {
                if shared {
                    *l = None;
                }
            }
            for (k, &i) in idxs.iter().enumerate() {
                let chain = &self.inter[i].context;
                let others = || idxs.iter().filter(|&&j| j != i).map(|&j| &self.inter[j].context);
                if let Some(own) = &locals[k] {
                    extras.push((i, line::context_note(Some(own), None), Some(own.clone())));
                    continue;
                }
                // A context no other line has, in its chain or as its own container's text.
                let unique = chain
                    .iter()
                    .rev()
                    .find(|c| others().all(|o| !o.contains(c)) && locals.iter().all(|l| l.as_ref() != Some(*c)));
                // Else the nearest context with the nearest outer one that, together, no other line shares.
                let pair = || {
                    let (near, outer) = chain.split_last()?;
                    let far = outer.iter().rev().find(|c| others().all(|o| !(o.contains(near) && o.contains(c))))?;
                    Some(line::nested(near, far))
                };
                if let Some(c) = unique {
                    extras.push((i, line::context_note(Some(c), None), Some(c.clone())));
                } else if let Some(c) = pair() {
                    extras.push((i, line::context_note(Some(&c), None), None));
                } else {
                    unresolved.entry(chain.last().cloned()).or_default().push(i);
                }
            }
            for (ctx, members) in &unresolved {
                let total = members.len();
                for (nth, &i) in members.iter().enumerate() {
                    let (extra, single) = match (ctx, total) {
                        (Some(c), 1) => (line::context_note(Some(c), None), Some(c.clone())),
                        // The one line without context: its place among all its namesakes (never `1 of 1`).
                        (None, 1) => {
                            let nth = idxs.iter().position(|&j| j == i).unwrap_or(0);
                            (line::context_note(None, Some((nth + 1, idxs.len()))), None)
                        }
                        (c, _) => (line::context_note(c.as_deref(), Some((nth + 1, total))), None),
                    };
                    extras.push((i, extra, single));
                }
            }
            // A line indented under the container that names it, or read right after the text its context is, shows
            // its context already; the note is left out when
            // every line of the group is told apart by one context alone (no ordinals, which count all of them).
            let plain = extras.iter().all(|(_, _, single)| single.is_some());
            for (i, extra, single) in extras {
                let line = self.inter[i].line;
                if plain && single.is_some_and(|c| self.parent_shows(line, &c) || self.shown_above(line, &c)) {
                    continue;
                }
                self.inter[i].annotate(&mut self.out.lines, &extra);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(r: Option<&str>, t: &str) -> Line {
        Line { indent: 0, node_ref: r.map(str::to_owned), text: t.to_owned() }
    }

    #[test]
    fn context_goes_before_the_value_which_ends_the_line() {
        let text = "e1 textbox \"Email\": a (in b) c";
        let mut lines = vec![line(Some("e1"), text)];
        let tail = text.find(": a").unwrap();
        let mut o =
            Operable { line: 0, role: "textbox".into(), name: "Email".into(), context: Vec::new(), tail, scope: None };
        o.annotate(&mut lines, " (row: x | y)");
        o.annotate(&mut lines, " (in \"Billing\")");
        assert_eq!(lines[0].text, "e1 textbox \"Email\" (row: x | y) (in \"Billing\"): a (in b) c");
    }
}
