//! The line format: every kind of line an observation shows (text, heading, container, iframe, an operable node's
//! ref line, the context notes, the window and omitted notes, the dialog line), how names are quoted and links
//! shortened, `untrustedContent` rendered from lines, and the diff of two observations' lines.

use std::collections::HashSet;
use std::fmt::Write as _;

use browserd_protocol::NodeRef;

use crate::provider::truncate;
use crate::state::{Line, Revision};

/// Page text as a reader sees it: whitespace runs folded to one space, and without the glyphs of icon fonts
/// (characters of the Private Use Areas, which such fonts draw as pictures: `::before { content: "\e7f4" }`),
/// which no reader can read as text.
pub(super) fn fold(s: &str) -> String {
    if !s.chars().any(icon_glyph) {
        return s.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    let kept: String = s.chars().filter(|c| !icon_glyph(*c)).collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A character of a Private Use Area: what icon fonts map their pictures to.
fn icon_glyph(c: char) -> bool {
    matches!(c, '\u{E000}'..='\u{F8FF}' | '\u{F0000}'..='\u{FFFFD}' | '\u{100000}'..='\u{10FFFD}')
}

/// A name or text in quotes, whole (whitespace runs folded to one space, icon glyphs left out, inner quotes
/// escaped).
pub(super) fn quote(s: &str) -> String {
    format!("\"{}\"", fold(s).replace('"', "\\\""))
}

/// The name [`quote`] wrote at the start of `s` (`"Terms \"2026\"" -> /tos` gives `Terms "2026"`), or `None` when
/// `s` does not start with one.
pub(super) fn unquote(s: &str) -> Option<String> {
    // `quote` escapes the quote mark only: a backslash before anything else is the name's own.
    let mut chars = s.strip_prefix('"')?.chars().peekable();
    let mut out = String::new();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'"') => out.push(chars.next()?),
            '"' => return Some(out),
            c => out.push(c),
        }
    }
    None
}

/// A context label in quotes, cut at `max` characters with `…`: the words that tell a line from its namesakes
/// (` (in "Team lunch")`), never the text or name itself, which is shown whole on its own line.
pub(super) fn quote_cut(s: &str, max: usize) -> String {
    let clean = fold(s);
    format!("\"{}\"", truncate(&clean, max).replace('"', "\\\""))
}

pub(super) fn origin_of(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else { return String::new() };
    let rest = &url[scheme_end + 3..];
    let host_end = rest.find('/').unwrap_or(rest.len());
    url[..scheme_end + 3 + host_end].to_owned()
}

/// Renders lines as `untrustedContent`: one line each, indented one space per level, no framing (the field is the
/// framing). A line never breaks: any line break or other control character in it becomes a space, so page text
/// cannot forge a line of its own (a ref, a heading).
///
/// One space per level rather than two: in o200k a single space joins the token after it (` [`, ` Invoice`), so the
/// first level of nesting costs a ref line one token instead of two and a text line nothing (4-9% of a fixture
/// page, 1-4% of a large one), and every level is still its own whitespace token. The byte budget still counts two
/// bytes per level, so it stays an upper bound.
pub(crate) fn render(lines: &[Line]) -> String {
    let mut s = String::new();
    for (i, l) in lines.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        for _ in 0..l.indent {
            s.push(' ');
        }
        if l.node_ref.is_none() && starts_like_a_ref(&l.text) {
            // Page text that reads `e3 button "Pay"` would pass for a ref line (and name another node's ref).
            s.push_str("text: ");
        }
        s.extend(l.text.chars().map(|c| if c.is_control() { ' ' } else { c }));
    }
    s
}

/// Whether a line begins with a word of a ref's shape, the way a ref line does (`e3 button "Pay"`, or `e2 e4`, which a
/// reader could take for one).
pub(super) fn starts_like_a_ref(text: &str) -> bool {
    NodeRef::is_ref_shaped(text.split(' ').next().unwrap_or_default())
}

/// Lines of the new observation (`lines`, leaving out `behind_modal`) not in `old` (by ref and text), and refs of
/// `old` gone from it. A modal dialog hides the page without removing it: a ref that went behind it is not gone, and
/// what comes back when it closes is compared with the page as it was before it opened (`Revision::behind_page`), so
/// only what changed meanwhile is new.
pub(crate) fn diff(old: &Revision, lines: &[Line], behind_modal: &[String]) -> (Vec<Line>, Vec<String>) {
    let page = old.page_behind();
    let old_set: HashSet<(&Option<String>, &str)> =
        old.lines.iter().chain(page).map(|l| (&l.node_ref, l.text.as_str())).collect();
    let on_page: HashSet<&str> = page.iter().filter_map(|l| l.node_ref.as_deref()).collect();
    // Behind the dialog with no line to compare with (it was open at the first look): back, not new.
    let unseen_behind: HashSet<&str> =
        old.behind_modal.iter().map(String::as_str).filter(|r| !on_page.contains(r)).collect();
    let new_refs: HashSet<&str> =
        lines.iter().filter_map(|l| l.node_ref.as_deref()).chain(behind_modal.iter().map(String::as_str)).collect();
    let added = lines
        .iter()
        .filter(|l| !old_set.contains(&(&l.node_ref, l.text.as_str())))
        .filter(|l| !l.node_ref.as_deref().is_some_and(|r| unseen_behind.contains(r)))
        .cloned()
        .collect();
    let mut behind: Vec<&str> = old.behind_modal.iter().map(String::as_str).collect();
    behind.sort_by_key(|r| (r.len(), *r));
    let removed = old
        .lines
        .iter()
        .filter_map(|l| l.node_ref.as_deref())
        .chain(behind)
        .filter(|r| !new_refs.contains(r))
        .map(str::to_owned)
        .collect();
    (added, removed)
}

/// A text line: page text gathered in document order, its whitespace runs folded to one space (as `innerText` shows
/// them), without a trailing cell separator. Shown whole: only the observation's budget cuts, between lines.
pub(super) fn text(gathered: &str) -> String {
    fold(gathered).trim_end_matches(" |").to_owned()
}

/// An image with a text alternative (a product photo, a chart, stars rated `Rated 4 out of 5`): `img "Red
/// running shoe"`. What it shows only pixels tell; its alternative is what the page says it shows.
pub(super) fn image(name: &str) -> String {
    format!("img {}", quote(&fold(name)))
}

/// A progress bar or meter and how far it is: its value text when the page gives one (`Step 2 of 5`), else the
/// share of its range (`progressbar "Upload" 60%`); one with no value is busy (`progressbar "Loading" busy`).
pub(super) fn progress(role: &str, name: &str, value: Option<f64>, min: f64, max: f64, text: &str) -> String {
    let name = fold(name);
    let shown = if !text.trim().is_empty() {
        quote(&fold(text))
    } else if let Some(v) = value.filter(|_| max > min) {
        let pct = ((v - min) / (max - min) * 100.0).clamp(0.0, 100.0);
        format!("{}%", (pct * 10.0).round() / 10.0)
    } else {
        "busy".to_owned()
    };
    if name.is_empty() { format!("{role} {shown}") } else { format!("{role} {} {shown}", quote(&name)) }
}

/// The line before and after a `<pre>` block's lines.
pub(super) const FENCE: &str = "```";

/// The note where a scroll container (a virtualised list) has rows not rendered until scrolled to.
pub(super) fn unrendered(side: &str, direction: &str) -> String {
    format!("… more {side}, not rendered: scroll {direction} with a row as target")
}

/// A heading: `## Billing` (level 1-6, the whole name on one line).
pub(super) fn heading(level: u64, name: &str) -> String {
    let level = level.clamp(1, 6);
    format!("{} {}", "#".repeat(usize::try_from(level).unwrap_or(2)), fold(name))
}

/// A container that opens its children: `region "Inbox":`, `form:`; with its ref when it keeps one (a heuristic
/// operable with operable nodes inside): `e3 clickable "Card":`. The name is shown whole.
pub(super) fn container(node_ref: Option<&str>, role: &str, name: &str) -> String {
    let label = if name.is_empty() { format!("{role}:") } else { format!("{role} {}:", quote(name)) };
    match node_ref {
        Some(r) => format!("{r} {label}"),
        None => label,
    }
}

/// Whether `text` is the line [`container`] writes for a container with neither ref nor name (`status:`, `popup:`):
/// a header that says nothing the lines under it do not.
pub(crate) fn is_bare_container(text: &str) -> bool {
    text.strip_suffix(':').is_some_and(|role| !role.is_empty() && role.bytes().all(|b| b.is_ascii_lowercase()))
}

/// The context a container line (`e3 clickable "Desk lamp":`, `region "Inbox" (in "Mail"):`) gives the lines
/// indented under it, as [`quote_cut`] writes it: `None` for any other line, or a container without a name.
pub(super) fn container_context(text: &str) -> Option<String> {
    let rest = browserd_protocol::split_ref(text).map_or(text, |(_, rest)| rest);
    let rest = rest.strip_suffix(':')?;
    let (_role, quoted) = rest.split_once(' ')?;
    let mut chars = quoted.strip_prefix('"')?.chars();
    let mut name = String::new();
    loop {
        match chars.next()? {
            '\\' if chars.clone().next() == Some('"') => {
                chars.next();
                name.push('"');
            }
            '"' => break,
            c => name.push(c),
        }
    }
    let after = chars.as_str();
    (after.is_empty() || after.starts_with(" (")).then(|| quote_cut(&name, 40))
}

/// A loaded frame, which opens its document's lines: `iframe "Pay" [f1] -> /pay:` (its URL relative to the page's
/// origin when it shares it).
pub(super) fn iframe(name: &str, key: u32, url: &str, origin: &str) -> String {
    let url = relative(url, origin);
    let src = if url.is_empty() { String::new() } else { format!(" -> {url}") };
    format!("iframe {} [f{key}]{src}:", quote(name))
}

/// A frame whose origin the site policy does not authorise: `frame http://other.test (not authorised)`, nothing of
/// its document (no name, no content, no refs).
pub(super) fn frame_not_authorised(origin: &str) -> String {
    format!("frame {origin} (not authorised)")
}

/// A frame whose document is not there: `iframe "Ad" (not loaded)`.
pub(super) fn iframe_not_loaded(name: &str) -> String {
    format!("iframe {} (not loaded)", quote(name))
}

/// A URL relative to the page's origin when it shares it (`/a/b`), else as it is.
pub(super) fn relative<'a>(url: &'a str, origin: &str) -> &'a str {
    url.strip_prefix(origin).filter(|x| x.starts_with('/')).unwrap_or(url)
}

/// What the line of an operable node shows.
pub(super) struct RefLine<'a> {
    pub(super) node_ref: &'a str,
    /// The role shown (`button`, `clickable`, `focusable`, ...).
    pub(super) role: &'a str,
    pub(super) name: &'a str,
    pub(super) states: &'a [String],
    /// The placeholder of an empty field, where its name does not hold it.
    pub(super) placeholder: Option<&'a str>,
    /// A link's target, as the page gives it.
    pub(super) href: Option<&'a str>,
    /// A native select's options.
    pub(super) options: &'a [String],
    /// The value as shown (masked for a password); it ends the line.
    pub(super) value: Option<&'a str>,
}

/// The line of an operable node: `e4 combobox "Size" required options=[S|M|L]: M`. Returns the text and where its
/// value (`: M`) starts, its length when it has none: context is inserted there, so the value, which may hold any
/// text, always ends the line.
pub(super) fn ref_line(l: &RefLine<'_>, origin: &str) -> (String, usize) {
    let mut line = format!("{} {}", l.node_ref, l.role);
    if !fold(l.name).is_empty() {
        line.push(' ');
        line.push_str(&quote(l.name));
    }
    for s in l.states {
        line.push(' ');
        line.push_str(s);
    }
    if let Some(p) = l.placeholder {
        let _ = write!(line, " placeholder={}", quote(p));
    }
    if let Some(h) = l.href {
        let _ = write!(line, " -> {}", relative(h, origin));
    }
    if !l.options.is_empty() {
        let total = l.options.len();
        let shown: Vec<&str> = l.options.iter().take(10).map(String::as_str).collect();
        let more = if total > 10 { format!("|+{}", total - 10) } else { String::new() };
        let _ = write!(line, " options=[{}{more}]", shown.join("|"));
    }
    let tail = line.len();
    if let Some(v) = l.value {
        let _ = write!(line, ": {v}");
    }
    (line, tail)
}

/// The other cells of a row folded into the line of its one operable cell: ` (row: Ann | Active | $12)`, and the
/// row's text in it (whole).
pub(super) fn row_note(cells: &[&str]) -> (String, String) {
    let context = cells.join(" | ");
    (format!(" (row: {context})"), context)
}

/// What tells an operable line from its namesakes: ` (in "Team lunch")`, ` (in "Inbox"; 2 of 3)`, ` (2 of 3)`.
pub(super) fn context_note(context: Option<&str>, ordinal: Option<(usize, usize)>) -> String {
    match (context, ordinal) {
        (Some(c), None) => format!(" (in {c})"),
        (Some(c), Some((nth, total))) => format!(" (in {c}; {nth} of {total})"),
        (None, Some((nth, total))) => format!(" ({nth} of {total})"),
        (None, None) => String::new(),
    }
}

/// A context with the outer one that, together, no namesake shares: `"Invoice 1042" in "Inbox"`.
pub(super) fn nested(near: &str, far: &str) -> String {
    format!("{near} in {far}")
}

/// The note that ends a windowed read: `… items 11–20 of 50 shown; next: within=e3 window={"offset":20}` (`next`:
/// the list's ref, when more items follow), or `… no items at offset 90 of 50` (`asked`: the offset asked for).
pub(super) fn window_note(asked: u32, first: u32, shown: u32, total: Option<u32>, next: Option<&str>) -> Line {
    let of = total.map_or(String::new(), |t| format!(" of {t}"));
    let end = first + shown;
    let text = match (shown, next) {
        (0, _) => format!("… no items at offset {asked}{of}"),
        (_, Some(own)) => {
            format!("… items {}–{end}{of} shown; next: within={own} window={{\"offset\":{end}}}", first + 1)
        }
        (_, None) => format!("… items {}–{end}{of} shown", first + 1),
    };
    Line { indent: 0, node_ref: None, text }
}

/// The note that ends an observation the budget cut (always at a line boundary, nothing shown after it): what was
/// left out and how to read it. `… cut at maxBytes: 40 more lines (12 operable) not shown; observe within=e3|f1e9
/// to read them`; with no region to offer, a larger budget or a `window` of the list is the way.
pub(super) fn omitted(lines: u32, operable: u32, reason: &str, expand: &[NodeRef]) -> Line {
    let what = match operable {
        0 => format!("{lines} more lines"),
        _ => format!("{lines} more lines ({operable} operable)"),
    };
    let how = if expand.is_empty() {
        format!("observe with a larger {reason} to read them")
    } else {
        format!(
            "observe within={} to read them (a long list: with window)",
            expand.iter().map(NodeRef::as_str).collect::<Vec<_>>().join("|")
        )
    };
    Line { indent: 0, node_ref: None, text: format!("… cut at {reason}: {what} not shown; {how}") }
}

/// What stands for the page an open modal dialog makes inert (it takes no input, and the accessibility tree leaves
/// it out): `(page behind the dialog is inert: 12 operable elements; close the dialog to reach them)`.
pub(super) fn inert_background(operable: usize) -> String {
    let s = if operable == 1 { "" } else { "s" };
    format!("(page behind the dialog is inert: {operable} operable element{s}; close the dialog to reach them)")
}

/// The note of a tab in the background of its window: its page runs no rendering steps there, so what it draws on
/// an animation frame (a virtualised list's rows, lazy content) may be missing until it is in front.
pub(super) fn background_tab() -> String {
    "(background tab: the page may not have drawn all it shows in front; an action on it brings the tab forward)".into()
}

/// The one line of a page a dialog blocks: `confirm dialog "Leave?" blocks the page; use the dialog action`.
pub(super) fn dialog(kind: &str, message: &str) -> Line {
    Line {
        indent: 0,
        node_ref: None,
        text: format!("{kind} dialog {} blocks the page; use the dialog action", quote(message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_name_reads_back_whole() {
        for name in ["Terms", "Say \"hi\" now", "a\\b", ""] {
            let q = quote(name);
            assert_eq!(unquote(&format!("{q} -> /x")).as_deref(), Some(name), "{q}");
        }
        assert_eq!(unquote("no quote"), None);
        assert_eq!(unquote("\"open"), None);
    }

    fn line(r: Option<&str>, t: &str) -> Line {
        Line { indent: 0, node_ref: r.map(str::to_owned), text: t.to_owned() }
    }

    #[test]
    fn a_container_line_gives_the_context_its_children_would_repeat() {
        let long = "Trail runner waterproof hiking shoes with a mesh upper";
        assert_eq!(container_context(&container(Some("e3"), "clickable", long)), Some(quote_cut(long, 40)));
        assert_eq!(container_context("region \"Say \\\"hi\\\"\" (in \"Mail\"):"), Some(quote_cut("Say \"hi\"", 40)));
        assert_eq!(container_context(&container(None, "form", "")), None);
        assert_eq!(container_context("e4 button \"Add to cart\""), None);
        assert_eq!(container_context("group \"Plan\" x:"), None);
    }

    #[test]
    fn icon_font_glyphs_are_left_out_of_text_names_and_headings() {
        // Icon fonts draw pictures for Private Use Area characters (`::before { content: "\e7f4" }`).
        assert_eq!(text("\u{e7f4}Notifications"), "Notifications");
        assert_eq!(heading(2, "\u{e892} TAGS"), "## TAGS");
        assert_eq!(quote("Delete \u{f1f8}"), "\"Delete\"");
        assert_eq!(text("\u{f0001}"), "");
        let only_icon = RefLine {
            node_ref: "e1",
            role: "button",
            name: "\u{e5cd}",
            states: &[],
            placeholder: None,
            href: None,
            options: &[],
            value: None,
        };
        assert_eq!(ref_line(&only_icon, "").0, "e1 button");
        // Other symbols are text: arrows, the multiplication sign, emoji.
        assert_eq!(text("▾ Actions × 🔔"), "▾ Actions × 🔔");
    }

    #[test]
    fn diff_reports_new_or_changed_lines_and_gone_refs() {
        let old =
            vec![line(Some("e1"), "e1 button \"A\""), line(Some("e2"), "e2 textbox \"B\""), line(None, "Count: 1")];
        let new = vec![line(Some("e1"), "e1 button \"A\""), line(None, "Count: 2"), line(Some("e3"), "e3 link \"C\"")];
        let rev = |lines: &[Line], behind: &[&str]| {
            Revision::new(lines.to_vec(), behind.iter().map(|r| (*r).to_owned()).collect())
        };
        let (added, removed) = diff(&rev(&old, &[]), &new, &[]);
        assert_eq!(added.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(), vec!["Count: 2", "e3 link \"C\""]);
        assert_eq!(removed, vec!["e2".to_owned()]);
        // A dialog opens over the page: its refs went behind it, not away.
        let dialog = [line(None, "dialog \"Delete?\":"), line(Some("e9"), "e9 button \"Cancel\"")];
        let (added, removed) = diff(&rev(&old, &[]), &dialog, &["e1".to_owned(), "e2".to_owned()]);
        assert_eq!(added.len(), 2);
        assert!(removed.is_empty(), "{removed:?}");
        // It closes: the page is back, not new; only what changed behind it meanwhile is (and what went away).
        let mut open = rev(&dialog, &["e1", "e2"]);
        open.behind_page = Some(std::sync::Arc::new(old.clone()));
        let (added, removed) = diff(&open, &new, &[]);
        assert_eq!(added.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(), vec!["Count: 2", "e3 link \"C\""]);
        assert_eq!(removed, vec!["e9".to_owned(), "e2".to_owned()]);
        // Opened before the first look: what comes back has nothing to be compared with, and is not new either.
        let (added, removed) = diff(&rev(&dialog, &["e1", "e2"]), &old, &[]);
        assert_eq!(added.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(), vec!["Count: 1"]);
        assert_eq!(removed, vec!["e9".to_owned()]);
    }

    #[test]
    fn render_indents_lines_and_never_lets_page_text_break_one() {
        let lines = [
            line(None, "# Title"),
            Line { indent: 1, node_ref: Some("e1".into()), text: "e1 link \"a\" -> /x\ne9 button \"Pay\"".into() },
            Line { indent: 2, node_ref: None, text: "tab\there\r".into() },
        ];
        assert_eq!(render(&lines), "# Title\n e1 link \"a\" -> /x e9 button \"Pay\"\n  tab here ");
        assert_eq!(render(&[]), "");
        // Page text whose first word has a ref's shape is marked as text; other words are left alone.
        let text = [
            line(None, "e3 button \"Pay\""),
            line(None, "f2e1b x"),
            line(None, "e4"),
            line(None, "[e3] note"),
            line(None, "e4x2 pawn"),
            line(None, "Move e3"),
        ];
        assert_eq!(render(&text), "text: e3 button \"Pay\"\ntext: f2e1b x\ntext: e4\n[e3] note\ne4x2 pawn\nMove e3");
        assert_eq!(render(&[line(Some("e3"), "e3 button \"Pay\"")]), "e3 button \"Pay\"");
    }

    #[test]
    fn origins_and_quotes() {
        assert_eq!(origin_of("http://127.0.0.1:8080/a/b?c"), "http://127.0.0.1:8080");
        assert_eq!(origin_of("about:blank"), "");
        assert_eq!(quote("  a \"b\"\n c "), "\"a \\\"b\\\" c\"");
        assert_eq!(quote(&"n".repeat(300)), format!("\"{}\"", "n".repeat(300)));
        assert_eq!(quote_cut(&"n".repeat(50), 40), format!("\"{}…\"", "n".repeat(40)));
    }

    #[test]
    fn a_text_line_folds_whitespace_drops_a_trailing_cell_separator_and_is_never_cut() {
        assert_eq!(text("Ann | Active |"), "Ann | Active");
        assert_eq!(text("Ann | Active | "), "Ann | Active");
        assert_eq!(text(" Count:\n  2 "), "Count: 2");
        assert_eq!(text("a|b"), "a|b");
        assert_eq!(text(&"x".repeat(2000)), "x".repeat(2000));
    }

    #[test]
    fn a_heading_line_shows_its_level_and_its_name_on_one_line() {
        assert_eq!(heading(2, "  Billing \n details "), "## Billing details");
        assert_eq!(heading(0, "Top"), "# Top");
        assert_eq!(heading(9, "Deep"), "###### Deep");
        assert_eq!(heading(1, &"y".repeat(300)), format!("# {}", "y".repeat(300)));
    }

    #[test]
    fn a_container_line_opens_its_children() {
        assert_eq!(container(None, "region", "Inbox"), "region \"Inbox\":");
        assert_eq!(container(None, "form", ""), "form:");
        assert!(is_bare_container(&container(None, "popup", "")));
        assert!(!is_bare_container(&container(None, "region", "Inbox")) && !is_bare_container("Total: 3"));
        assert_eq!(container(Some("e3"), "clickable", "Card \"A\""), "e3 clickable \"Card \\\"A\\\"\":");
        assert_eq!(container(None, "row", &"r".repeat(155)), format!("row \"{}\":", "r".repeat(155)));
    }

    #[test]
    fn an_iframe_line_names_its_frame_and_shortens_a_same_origin_url() {
        let origin = "http://127.0.0.1:8080";
        assert_eq!(iframe("Pay", 1, "http://127.0.0.1:8080/pay?x=1", origin), "iframe \"Pay\" [f1] -> /pay?x=1:");
        assert_eq!(iframe("Ad", 2, "https://ads.example/a", origin), "iframe \"Ad\" [f2] -> https://ads.example/a:");
        assert_eq!(iframe("", 3, "", origin), "iframe \"\" [f3]:");
        assert_eq!(iframe_not_loaded("Ad"), "iframe \"Ad\" (not loaded)");
    }

    #[test]
    fn a_ref_line_ends_with_its_value_and_says_where_the_value_starts() {
        let states = ["required".to_owned(), "type=email".to_owned()];
        let l = RefLine {
            node_ref: "e4",
            role: "textbox",
            name: "Email",
            states: &states,
            placeholder: None,
            href: None,
            options: &[],
            value: Some("a@b.c"),
        };
        let (text, tail) = ref_line(&l, "");
        assert_eq!(text, "e4 textbox \"Email\" required type=email: a@b.c");
        assert_eq!(&text[tail..], ": a@b.c");
        let empty = RefLine { name: "", states: &[], placeholder: Some("Search"), value: None, ..l };
        assert_eq!(ref_line(&empty, ""), ("e4 textbox placeholder=\"Search\"".to_owned(), 31));
    }

    #[test]
    fn a_link_line_points_at_its_target_and_a_select_line_lists_its_options() {
        let link = RefLine {
            node_ref: "f2e6",
            role: "link",
            name: "Docs",
            states: &[],
            placeholder: None,
            href: Some("http://127.0.0.1:8080/docs/intro"),
            options: &[],
            value: None,
        };
        assert_eq!(ref_line(&link, "http://127.0.0.1:8080").0, "f2e6 link \"Docs\" -> /docs/intro");
        assert_eq!(ref_line(&link, "http://other:1").0, "f2e6 link \"Docs\" -> http://127.0.0.1:8080/docs/intro");
        let options: Vec<String> = (1..=12).map(|i| format!("o{i}")).collect();
        let select = RefLine { node_ref: "e7", role: "combobox", name: "Size", href: None, options: &options, ..link };
        assert_eq!(ref_line(&select, "").0, "e7 combobox \"Size\" options=[o1|o2|o3|o4|o5|o6|o7|o8|o9|o10|+2]");
    }

    #[test]
    fn context_notes_tell_namesakes_apart() {
        let (note, context) = row_note(&["Ann", "Active", "$12"]);
        assert_eq!(note, " (row: Ann | Active | $12)");
        assert_eq!(context, "Ann | Active | $12");
        assert_eq!(context_note(Some("\"Team lunch\""), None), " (in \"Team lunch\")");
        assert_eq!(context_note(Some("\"Inbox\""), Some((2, 3))), " (in \"Inbox\"; 2 of 3)");
        assert_eq!(context_note(None, Some((1, 2))), " (1 of 2)");
        assert_eq!(nested("\"Invoice 1042\"", "\"Inbox\""), "\"Invoice 1042\" in \"Inbox\"");
    }

    #[test]
    fn a_window_note_says_which_items_were_shown_and_how_to_read_on() {
        let text = |l: Line| {
            assert_eq!((l.indent, l.node_ref), (0, None));
            l.text
        };
        assert_eq!(
            text(window_note(10, 10, 10, Some(50), Some("e3"))),
            "… items 11–20 of 50 shown; next: within=e3 window={\"offset\":20}"
        );
        assert_eq!(text(window_note(0, 0, 5, None, None)), "… items 1–5 shown");
        assert_eq!(text(window_note(90, 90, 0, Some(50), Some("e3"))), "… no items at offset 90 of 50");
    }

    #[test]
    fn an_omitted_note_says_what_was_cut_and_how_to_read_it() {
        assert_eq!(
            omitted(4, 0, "maxBytes", &[]).text,
            "… cut at maxBytes: 4 more lines not shown; observe with a larger maxBytes to read them"
        );
        let expand = [NodeRef("e3".into()), NodeRef("f1e9".into())];
        assert_eq!(
            omitted(40, 12, "maxNodes", &expand).text,
            "… cut at maxNodes: 40 more lines (12 operable) not shown; observe within=e3|f1e9 to read them (a long \
             list: with window)"
        );
    }

    #[test]
    fn the_page_behind_a_modal_dialog_is_one_line_that_says_how_to_reach_it() {
        assert_eq!(
            inert_background(12),
            "(page behind the dialog is inert: 12 operable elements; close the dialog to reach them)"
        );
        assert!(inert_background(1).contains(" 1 operable element;"));
    }

    #[test]
    fn a_dialog_line_is_all_a_blocked_page_shows() {
        assert_eq!(
            dialog("confirm", "Leave\n  now?").text,
            "confirm dialog \"Leave now?\" blocks the page; use the dialog action"
        );
    }
}
