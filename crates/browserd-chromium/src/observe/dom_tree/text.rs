//! The text of a document as laid out: whitespace collapsed as CSS `white-space: normal` does (the text
//! Chromium's tree holds in its `StaticText` nodes), and the names elements take from their content.

use super::Builder;

/// Collapses runs of whitespace to one space.
pub(super) fn collapse(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars() {
        if matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{c}') {
            space = true;
        } else {
            if space {
                out.push(' ');
            }
            space = false;
            out.push(c);
        }
    }
    if space {
        out.push(' ');
    }
    out
}

/// What a whitespace-collapsing walk of one line box context is at.
struct Flow {
    /// The last text written on the current line, and whether it ends with a collapsible space.
    last: Option<usize>,
    space: bool,
}

impl Builder<'_> {
    /// Lays out the text of the rendered text nodes under `i` as `white-space: normal` does: runs of whitespace
    /// collapse to one space, none at the start or end of a line; whitespace between atomic boxes is not text.
    pub(super) fn lay_out_text(&mut self, i: usize) -> Option<()> {
        let mut flow = Flow { last: None, space: true };
        self.flow(i, &mut flow)?;
        self.end_line(&mut flow);
        Some(())
    }

    fn end_line(&mut self, flow: &mut Flow) {
        if let Some(l) = flow.last.take()
            && let Some(t) = self.text.get_mut(&l)
            && t.ends_with(' ')
        {
            t.pop();
        }
        flow.space = true;
    }

    fn flow(&mut self, i: usize, flow: &mut Flow) -> Option<()> {
        let kids = self.doc.kids[i].clone();
        for (k, &c) in kids.iter().enumerate() {
            if !self.doc.rendered(c) || self.doc.pseudo[c].is_some() {
                continue;
            }
            if self.doc.kind[c] == 3 {
                let raw = self.doc.layout_text[c].unwrap_or(self.doc.value[c]);
                if !matches!(self.doc.style(c, super::WHITE_SPACE), Some("normal" | "nowrap"))
                    || self.doc.style(c, super::TEXT_TRANSFORM) != Some("none")
                {
                    return None;
                }
                let mut t = collapse(raw);
                if t == " " {
                    // Whitespace alone: a space between two inline boxes; nothing at the edge of a block or beside
                    // an atomic or block box.
                    let shown = |j: &&usize| self.doc.rendered(**j) && self.doc.pseudo[**j].is_none();
                    let before = kids[..k].iter().rev().find(shown).copied();
                    let after = kids[k + 1..].iter().find(shown).copied();
                    let boxed = |j: usize| self.doc.atomic(j) || self.doc.block(j);
                    match (before, after) {
                        (Some(b), Some(a)) if boxed(b) || boxed(a) => continue,
                        (Some(b), Some(a)) if self.doc.inline(b) && self.doc.inline(a) => {}
                        (None, _) | (_, None) if self.doc.block(i) || self.doc.atomic(i) => continue,
                        _ => return None,
                    }
                }
                if flow.space && t.starts_with(' ') {
                    t.remove(0);
                }
                if t.is_empty() {
                    continue;
                }
                flow.space = t.ends_with(' ');
                flow.last = Some(c);
                self.text.insert(c, t);
            } else if self.doc.kind[c] == 1 {
                let tag = self.doc.tag[c].as_str();
                if tag == "br" {
                    self.end_line(flow);
                } else if matches!(tag, "select" | "input") {
                    flow.space = false;
                    flow.last = None;
                } else if self.doc.block(c) || self.doc.atomic(c) {
                    let atomic = self.doc.atomic(c);
                    if !atomic {
                        self.end_line(flow);
                    }
                    let mut inner = Flow { last: None, space: true };
                    self.flow(c, &mut inner)?;
                    self.end_line(&mut inner);
                    if atomic {
                        flow.space = false;
                        flow.last = None;
                    } else {
                        self.end_line(flow);
                    }
                } else if self.doc.inline(c) {
                    self.flow(c, flow)?;
                } else {
                    return None;
                }
            }
        }
        Some(())
    }

    /// A link's or button's name: its `aria-label` (whitespace collapsed, not trimmed, as Chromium keeps it), else
    /// its content, else its `title`.
    pub(super) fn control_name(&self, i: usize) -> Option<String> {
        if let Some(label) = self.doc.attr(i, "aria-label") {
            return Some(collapse(label));
        }
        let name = self.content_name(i)?;
        match self.doc.attr(i, "title") {
            Some(title) if name.is_empty() => Some(collapse(title)),
            _ => Some(name),
        }
    }

    /// The name an element gets from its content: its text as laid out, block boxes apart; `None` when the content
    /// holds something whose name Chromium computes otherwise (a field, a list, a control named by `aria-label`).
    pub(super) fn content_name(&self, i: usize) -> Option<String> {
        let mut out = String::new();
        self.content_text(i, &mut out)?;
        Some(collapse(&out).trim().to_owned())
    }

    fn content_text(&self, i: usize, out: &mut String) -> Option<()> {
        for &c in &self.doc.kids[i] {
            match self.doc.kind[c] {
                3 => {
                    if let Some(t) = self.text.get(&c) {
                        out.push_str(t);
                    }
                }
                1 if self.doc.pseudo[c].is_some() || !self.doc.rendered(c) => {}
                1 => {
                    if !matches!(
                        self.doc.tag[c].as_str(),
                        "span" | "a" | "button" | "br" | "b" | "i" | "small" | "u" | "strong" | "em" | "code"
                    ) {
                        return None;
                    }
                    // A control named otherwise than by its content inside a name read from content: Chromium
                    // takes that name in, which this reading does not model.
                    if self.doc.attrs[c].iter().any(|(k, _)| matches!(*k, "aria-label" | "title" | "aria-hidden")) {
                        return None;
                    }
                    let apart = !self.doc.inline(c);
                    if apart {
                        out.push(' ');
                    }
                    self.content_text(c, out)?;
                    if apart {
                        out.push(' ');
                    }
                }
                _ => {}
            }
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::collapse;

    #[test]
    fn whitespace_runs_collapse_to_one_space() {
        assert_eq!(collapse("  many \n\t spaces "), " many spaces ");
        assert_eq!(collapse("none"), "none");
        assert_eq!(collapse("\n"), " ");
    }
}
