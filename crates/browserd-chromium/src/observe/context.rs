//! Context for operable lines that would read alike: a table row with one operable cell folded into that cell's
//! line, and namesakes told apart by the rows, items, containers and headings around them.

use std::collections::HashMap;

use super::line;
use super::renderer::Renderer;
use crate::state::Line;

/// An interactive line, for disambiguation.
pub(super) struct Operable {
    /// Index in `Built::lines`.
    pub(super) line: usize,
    pub(super) role: String,
    pub(super) name: String,
    /// Context chain, outermost first: the quoted names of the rows, items, containers and headings around it.
    pub(super) context: Vec<String>,
    /// Where the line's value (`: Draft`) starts in its text (its length when it has none): context is inserted
    /// there, so the value, which may hold any text, always ends the line.
    pub(super) tail: usize,
}

impl Operable {
    /// Adds `extra` (` (in …)`) to the line, before its value.
    pub(super) fn annotate(&mut self, lines: &mut [Line], extra: &str) {
        lines[self.line].text.insert_str(self.tail, extra);
        self.tail += extra.len();
    }
}

impl Renderer<'_> {
    /// A row with exactly one operable cell becomes that cell's line, with the other cells as its context:
    /// `[e4] button "Edit" (row: Ann | Active | $12)`.
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

    /// Adds context to interactive lines of one frame that share a role and name: the nearest context (row, list
    /// item, named container, heading) that no other line of the group shares, `(in "Team lunch")`; else the nearest
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
            groups.entry((frame.unwrap_or(0), o.role.clone(), o.name.clone())).or_default().push(i);
        }
        for idxs in groups.values().filter(|g| g.len() > 1) {
            let mut unresolved: HashMap<Option<String>, Vec<usize>> = HashMap::new();
            let mut extras = Vec::new();
            for &i in idxs {
                let chain = &self.inter[i].context;
                let others = || idxs.iter().filter(|&&j| j != i).map(|&j| &self.inter[j].context);
                let unique = chain.iter().rev().find(|c| others().all(|o| !o.contains(c)));
                // Else the nearest context with the nearest outer one that, together, no other line shares.
                let pair = || {
                    let (near, outer) = chain.split_last()?;
                    let far = outer.iter().rev().find(|c| others().all(|o| !(o.contains(near) && o.contains(c))))?;
                    Some(line::nested(near, far))
                };
                match unique.cloned().or_else(pair) {
                    Some(c) => extras.push((i, line::context_note(Some(&c), None))),
                    None => unresolved.entry(chain.last().cloned()).or_default().push(i),
                }
            }
            for (ctx, members) in &unresolved {
                let total = members.len();
                for (nth, &i) in members.iter().enumerate() {
                    let extra = match (ctx, total) {
                        (Some(c), 1) => line::context_note(Some(c), None),
                        (c, _) => line::context_note(c.as_deref(), Some((nth + 1, total))),
                    };
                    extras.push((i, extra));
                }
            }
            for (i, extra) in extras {
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
        let text = "[e1] textbox \"Email\": a (in b) c";
        let mut lines = vec![line(Some("e1"), text)];
        let tail = text.find(": a").unwrap();
        let mut o = Operable { line: 0, role: "textbox".into(), name: "Email".into(), context: Vec::new(), tail };
        o.annotate(&mut lines, " (row: x | y)");
        o.annotate(&mut lines, " (in \"Billing\")");
        assert_eq!(lines[0].text, "[e1] textbox \"Email\" (row: x | y) (in \"Billing\"): a (in b) c");
    }
}
