//! Text assembly: page text gathered into text lines the way `innerText` breaks it — the text nodes of a line
//! joined exactly as rendered (no space added or lost at an inline element's boundary), a line break at every
//! block-level box and `<br>`, whitespace runs folded, shown whole —, the text of a subtree that names a generic
//! clickable or labels a list item, and label text that only echoes a name.

use super::line;
use super::operable::INTERACTIVE;
use super::renderer::Renderer;
use crate::ax::AxTree;
use crate::state::Line;

/// One line of the rendered line being walked: its index and what it is.
pub(super) struct Piece {
    pub(super) line: usize,
    pub(super) kind: PieceKind,
}

impl Piece {
    /// The text it shows in the rendered line (none for a line that is not text or a link).
    fn shown(&self) -> &str {
        match &self.kind {
            PieceKind::Text(t) | PieceKind::Inline(t) => t,
            PieceKind::Other => "",
        }
    }
}

/// What a line of the rendered line being walked is.
pub(super) enum PieceKind {
    /// Text, as gathered (its own spaces at the edges).
    Text(String),
    /// A link or clickable text inline in the line, and the text it shows.
    Inline(String),
    /// Anything else (a heading, a container, a field): the line is not a sentence.
    Other,
}

/// How the page draws a text: struck through, keeping its line breaks, keeping its runs of spaces.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Drawn {
    pub(super) struck: bool,
    pub(super) keeps_breaks: bool,
    pub(super) keeps_spaces: bool,
}

/// Roles whose name is built from their content, so their text is not repeated.
pub(super) const NAME_FROM_CONTENT: &[&str] =
    &["heading", "row", "link", "button", "option", "tab", "menuitem", "treeitem", "cell"];

impl Renderer<'_> {
    /// Adds a text node's rendered text to the line being gathered, as it is: its own spaces (the accessibility
    /// tree's text keeps the collapsible space at a text node's edge that the page renders) decide whether words
    /// across an inline boundary are apart, so `Enter "<span>Ada</span>"` reads `Enter "Ada"`.
    pub(super) fn text(&mut self, indent: u16, t: &str) {
        self.text_drawn(indent, t, Drawn::default());
    }

    /// [`Renderer::text`] of text the page draws struck through (`struck`: a `<del>`, `<s>`, or a "was" price styled
    /// `line-through`): it goes between `~~` marks, `Price: ~~$59.00~~ $45.00`, so the crossed-out price never reads
    /// as the one that holds. Struck texts next to each other share one pair of marks.
    ///
    /// Text that keeps its line breaks (`<pre>`, `white-space: pre-wrap`) is a line per line it holds, as
    /// `innerText` gives it, and keeps its runs of spaces where the page does (code keeps its indentation).
    pub(super) fn text_drawn(&mut self, indent: u16, t: &str, drawn: Drawn) {
        if drawn.keeps_breaks && t.contains('\n') {
            for (i, part) in t.split('\n').enumerate() {
                if i > 0 {
                    self.flush_text();
                }
                self.text_drawn(indent, part, Drawn { keeps_breaks: false, ..drawn });
            }
            return;
        }
        let struck = drawn.struck;
        if drawn.keeps_spaces && !t.trim().is_empty() {
            if !self.pending.is_empty() && self.pending_indent != indent {
                self.flush_text();
            }
            self.pending_spaces = true;
        }
        if t.trim().is_empty() {
            if drawn.keeps_spaces && !t.is_empty() {
                // Indentation of preformatted text: kept, it is part of what the line shows.
                self.pending.push_str(t);
                return;
            }
            if !self.pending.is_empty() && !t.is_empty() {
                self.pending.push(' ');
            }
            return;
        }
        if !self.pending.is_empty() && self.pending_indent != indent {
            self.flush_text();
        }
        if self.pending.is_empty() {
            self.pending_indent = indent;
        }
        if self.strike_open && !struck {
            self.close_strike();
        }
        if struck && !self.strike_open {
            let lead = t.len() - t.trim_start().len();
            self.pending.push_str(&t[..lead]);
            self.pending.push_str("~~");
            self.pending.push_str(&t[lead..]);
            self.strike_open = true;
        } else {
            self.pending.push_str(t);
        }
    }

    /// A table cell begins after a cell with text on the line being gathered: ` | ` between them, as `innerText`
    /// puts a tab there (once, whatever empty cells came between).
    pub(super) fn cell_separator(&mut self) {
        self.close_strike();
        if !self.pending.trim().is_empty() && !self.pending.trim_end().ends_with(" |") {
            self.pending.truncate(self.pending.trim_end().len());
            self.pending.push_str(" | ");
        }
    }

    /// Ends the struck text gathered so far: the closing `~~` goes right after its last character, before the
    /// spaces that part it from what follows.
    pub(super) fn close_strike(&mut self) {
        if self.strike_open {
            let end = self.pending.trim_end().len();
            self.pending.insert_str(end, "~~");
            self.strike_open = false;
        }
    }

    /// A line break in the text (a block-level box starts or ends, or a `<br>`): the line gathered so far ends. In
    /// a table row, whose cells share one line, it is a space.
    pub(super) fn text_break(&mut self) {
        if self.row_depth > 0 {
            if !self.pending.is_empty() && !self.pending.ends_with(' ') {
                self.pending.push(' ');
            }
        } else {
            self.flush_text();
            self.join_sentence();
        }
    }

    pub(super) fn flush_text(&mut self) {
        self.close_strike();
        let spaces = std::mem::take(&mut self.pending_spaces);
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        let t = if spaces && !pending.trim().is_empty() {
            // Preformatted: its spaces as the page keeps them (control characters, a tab among them, are one space
            // each when rendered).
            pending.trim_end().to_owned()
        } else {
            line::text(&pending)
        };
        if !t.is_empty()
            && self.push_raw(self.pending_indent, None, t).is_some()
            && self.row_depth == 0
            && let Some(piece) = self.run.last_mut()
        {
            piece.kind = PieceKind::Text(pending);
        }
    }

    /// Marks the line just written as a link (or clickable text) inline in the rendered line, showing `shown` (one
    /// that shows no text, a canvas or an icon, is not part of a sentence).
    pub(super) fn inline_operable(&mut self, line: usize, shown: String) {
        if self.row_depth == 0
            && shown.chars().any(char::is_alphanumeric)
            && let Some(piece) = self.run.last_mut()
            && piece.line == line
        {
            piece.kind = PieceKind::Inline(shown);
        }
    }

    /// The rendered line just ended: when it is a sentence with links inside it (`Topic: ship the <a>release
    /// notes</a> by Friday`), written so far as its text before the link, the link, and its text after, it becomes
    /// the whole sentence on one line with the links under it (links that only end a line leave it as it is):
    /// `Topic: ship the release notes by Friday` / ` e5 link "release notes"`.
    pub(super) fn join_sentence(&mut self) {
        let run = std::mem::take(&mut self.run);
        let Some(start) = run.first().map(|p| p.line) else { return };
        let lines = &self.out.lines;
        let whole = start + run.len() == lines.len()
            && run.iter().enumerate().all(|(i, p)| p.line == start + i && lines[p.line].indent == lines[start].indent);
        // Words after a link, or the stop that ends its sentence (`Read our <a>privacy policy</a>.`): the link is
        // inside the sentence (or starts it). Links that only end a line of text ("… yield. Read more") leave that
        // text whole as it is, and are not repeated in it.
        // A separator between links (a breadcrumb's `/` or `›`) is neither: such a line stays as it is.
        let words = |p: &Piece| {
            matches!(&p.kind, PieceKind::Text(t) if t.chars().any(char::is_alphanumeric)
                || t.trim_start().starts_with(['.', ',', ';', ':', '!', '?', ')']))
        };
        let first_link = run.iter().position(|p| matches!(p.kind, PieceKind::Inline(_)));
        let inside = first_link.is_some_and(|i| run[i..].iter().any(words));
        if !whole || !inside || run.iter().any(|p| matches!(p.kind, PieceKind::Other)) {
            return;
        }
        // A link whose text touches a word of the text beside it with no space between (`<a>Quarterly report
        // 2026</a><span>PDF, 2 MB</span>`, kept apart on screen by a margin) is not read into one word
        // (`2026PDF`): such a line stays as it was.
        let glued = run.windows(2).any(|w| {
            let inline = matches!(w[0].kind, PieceKind::Inline(_)) || matches!(w[1].kind, PieceKind::Inline(_));
            let (a, b) = (w[0].shown(), w[1].shown());
            inline
                && a.chars().next_back().is_some_and(char::is_alphanumeric)
                && b.chars().next().is_some_and(char::is_alphanumeric)
        });
        if glued {
            return;
        }
        let sentence: String = run.iter().map(Piece::shown).collect();
        let indent = self.out.lines[start].indent;
        let old = self.out.lines.split_off(start);
        for l in &old {
            self.bytes = self.bytes.saturating_sub(super::renderer::line_size(l));
            self.tokens = self.tokens.saturating_sub(super::renderer::line_tokens(l));
        }
        let mut moved = vec![0; old.len()];
        let mut new = vec![crate::state::Line { indent, node_ref: None, text: line::text(&sentence) }];
        for (i, l) in old.into_iter().enumerate() {
            if l.node_ref.is_some() {
                moved[i] = start + new.len();
                new.push(crate::state::Line { indent: indent + 1, ..l });
            }
        }
        for l in &new {
            self.bytes += super::renderer::line_size(l);
            self.tokens += super::renderer::line_tokens(l);
        }
        self.out.lines.extend(new);
        for entry in self.inter.iter_mut().filter(|o| o.line >= start) {
            entry.line = moved[entry.line - start];
        }
    }

    /// Text of a subtree (for names of generic clickables): its text nodes joined as rendered, whole (the caller
    /// folds whitespace).
    pub(super) fn subtree_text(&self, frame: &str, ax: &AxTree, id: &str, out: &mut String) {
        let Some(n) = ax.nodes.get(id) else { return };
        if n.role == "StaticText" {
            out.push_str(&n.name);
            return;
        }
        if n.role == "LineBreak" {
            out.push(' ');
            return;
        }
        // A block-level box (a flex item, a div) starts a line of its own as innerText shows it; inside one name
        // that line break reads as a space ("Grace Hopper Compiler meeting…", not "Grace HopperCompiler meeting…").
        let block = self.dom(frame, n).is_some_and(|d| d.block);
        if block && !out.is_empty() && !out.ends_with(char::is_whitespace) {
            out.push(' ');
        }
        // A table cell after another cell's text: innerText puts a tab there, the observation ` | ` (as in `row:`).
        if self.dom(frame, n).is_some_and(|d| d.cell) && !out.trim_end().is_empty() {
            out.truncate(out.trim_end().len());
            out.push_str(" | ");
        }
        for c in &n.children {
            self.subtree_text(frame, ax, c, out);
        }
        if block && !out.is_empty() && !out.ends_with(char::is_whitespace) {
            out.push(' ');
        }
    }

    /// The first text of a subtree outside operable nodes (the label of a list item).
    pub(super) fn first_text(&self, ax: &AxTree, id: &str, out: &mut String) {
        let Some(n) = ax.nodes.get(id) else { return };
        if !out.is_empty() || INTERACTIVE.contains(&n.role.as_str()) {
            return;
        }
        if n.role == "StaticText" && !n.name.trim().is_empty() {
            out.push_str(n.name.trim());
            return;
        }
        for c in &n.children {
            self.first_text(ax, c, out);
        }
    }

    /// Drops label text that only repeats the name of the node right after it (or of its container), and a heading
    /// whose only content is one operable line of its name (an accordion's `<h3><button>`): the operable line takes
    /// the heading's place.
    pub(super) fn drop_label_echoes(&mut self) {
        let lines = std::mem::take(&mut self.out.lines);
        let (label_text, label_links) = labels_with_links(&lines);
        let mut keep = Vec::with_capacity(lines.len());
        let mut removed_before: Vec<usize> = Vec::with_capacity(lines.len());
        let mut removed = 0;
        let mut dedent = None;
        for (i, l) in lines.iter().enumerate() {
            removed_before.push(removed);
            if label_text.contains(&i) {
                removed += 1;
                continue;
            }
            if let Some(&(_, indent)) = label_links.iter().find(|(j, _)| *j == i) {
                keep.push(Line { indent, ..l.clone() });
                continue;
            }
            if image_echo(&lines, i) {
                removed += 1;
                continue;
            }
            if heading_echo(&lines, i) {
                removed += 1;
                dedent = Some(i + 1);
                continue;
            }
            // The first line inside a container that only repeats the container's name (`region "Inbox":`, or a
            // clickable card named by its first text, `e3 clickable "Desk lamp":`).
            let echo = l.node_ref.is_none() && !l.text.starts_with('#') && !l.text.ends_with(':') && {
                let q = format!("\"{}\"", l.text.replace('"', "\\\""));
                lines.get(i + 1).is_some_and(|n| n.node_ref.is_some() && n.text.contains(&q))
                    || (i > 0 && lines[i - 1].indent + 1 == l.indent && lines[i - 1].text.ends_with(&format!("{q}:")))
                    // The visible label of a group named by it (`Theme` / `group "Theme":`).
                    || lines.get(i + 1).is_some_and(|n| {
                        n.node_ref.is_none() && n.indent == l.indent && n.text.ends_with(&format!(" {q}:"))
                    })
            };
            if echo {
                removed += 1;
            } else {
                let mut l = l.clone();
                if dedent == Some(i) {
                    l.indent -= 1;
                }
                keep.push(l);
            }
        }
        for entry in &mut self.inter {
            entry.line -= removed_before[entry.line];
        }
        self.out.lines = keep;
    }
}

/// The label of a checkbox, radio or switch that holds links (`I accept the <a>Terms</a> and the <a>Privacy
/// Policy</a>.`): its text is the control's name, then read again in pieces around the links, `I accept the` /
/// `e4 link "Terms"` / `and the` / … The pieces of text are left out and the links go under the control. Returns
/// the lines of those pieces, and those of the links with their indent under the control.
fn labels_with_links(lines: &[Line]) -> (Vec<usize>, Vec<(usize, u16)>) {
    let bare = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let (mut text, mut links) = (Vec::new(), Vec::new());
    for (i, control) in lines.iter().enumerate() {
        let Some((_, rest)) = browserd_protocol::split_ref(&control.text) else { continue };
        let Some(name) = ["checkbox ", "radio ", "switch "]
            .iter()
            .find_map(|r| rest.strip_prefix(r))
            .and_then(line::unquote)
            .map(|name| bare(&name))
        else {
            continue;
        };
        let (mut said, mut pieces, mut found_link) = (String::new(), Vec::new(), false);
        for (j, l) in lines.iter().enumerate().skip(i + 1) {
            if l.indent < control.indent || l.indent > control.indent + 1 {
                break;
            }
            let piece = match browserd_protocol::split_ref(&l.text) {
                Some((_, rest)) => match rest.strip_prefix("link ").and_then(line::unquote) {
                    Some(link) => {
                        found_link = true;
                        link
                    }
                    None => break,
                },
                None => l.text.clone(),
            };
            said.push_str(&bare(&piece));
            pieces.push((j, l.node_ref.is_some()));
            if !name.starts_with(&said) {
                break;
            }
            if said == name {
                if found_link {
                    for (j, is_link) in pieces {
                        if is_link { links.push((j, control.indent + 1)) } else { text.push(j) }
                    }
                }
                break;
            }
        }
    }
    (text, links)
}

/// Whether line `i` is an image whose alternative only repeats the line next to it: a product photo whose `alt`
/// is the product's name, beside the card, heading or link of that name (`e3 clickable "Desk lamp":` / `img "Desk
/// lamp"`).
fn image_echo(lines: &[Line], i: usize) -> bool {
    let l = &lines[i];
    let Some(alt) = l.text.strip_prefix("img ").filter(|_| l.node_ref.is_none()) else { return false };
    let Some(text) = line::unquote(alt) else { return false };
    let same = |n: &Line| {
        let t = n.text.trim_start_matches('#').trim();
        t.eq_ignore_ascii_case(&text) || n.text.contains(alt) && n.text != l.text
    };
    i.checked_sub(1).is_some_and(|p| same(&lines[p])) || lines.get(i + 1).is_some_and(same)
}

/// Whether line `i` is a heading (`### Can I change my email?`) whose only content is the operable line right under
/// it, named as the heading (`e12 button "Can I change my email?" collapsed`).
fn heading_echo(lines: &[Line], i: usize) -> bool {
    let l = &lines[i];
    let Some(name) = l.text.strip_prefix('#').map(|h| h.trim_start_matches('#').trim_start()) else { return false };
    if l.node_ref.is_some() || name.is_empty() {
        return false;
    }
    let quoted = format!("\"{}\"", name.replace('"', "\\\""));
    let named = |n: &Line| {
        let after_role = browserd_protocol::split_ref(&n.text).and_then(|(_, rest)| rest.split_once(' '));
        after_role.and_then(|(_, rest)| rest.strip_prefix(quoted.as_str())).is_some_and(|tail| !tail.starts_with(':'))
    };
    lines.get(i + 1).is_some_and(|n| n.node_ref.is_some() && n.indent == l.indent + 1 && named(n))
        && lines.get(i + 2).is_none_or(|n| n.indent <= l.indent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(spec: &[(u16, bool, &str)]) -> Vec<Line> {
        spec.iter()
            .map(|(indent, r, text)| Line {
                indent: *indent,
                node_ref: r.then(|| text.split(' ').next().unwrap_or_default().to_owned()),
                text: (*text).to_owned(),
            })
            .collect()
    }

    #[test]
    fn a_heading_that_only_holds_its_namesake_operable_gives_way_to_it() {
        let accordion = lines(&[
            (1, false, "### Can I change my \"email\"?"),
            (2, true, "e12 button \"Can I change my \\\"email\\\"?\" collapsed"),
            (1, false, "### Billing"),
        ]);
        assert!(heading_echo(&accordion, 0));
        assert!(!heading_echo(&accordion, 2), "no content");
        // More under the heading, another name, a container, a line not under it: the heading stays.
        let more = lines(&[(0, false, "## Plan"), (1, true, "e1 button \"Plan\""), (1, false, "Pro, billed yearly")]);
        assert!(!heading_echo(&more, 0));
        let other = lines(&[(0, false, "## Plan"), (1, true, "e1 button \"Change plan\"")]);
        assert!(!heading_echo(&other, 0));
        let container = lines(&[(0, false, "## Plan"), (1, true, "e1 clickable \"Plan\":")]);
        assert!(!heading_echo(&container, 0));
        let beside = lines(&[(0, false, "## Plan"), (0, true, "e1 button \"Plan\"")]);
        assert!(!heading_echo(&beside, 0));
    }
}
