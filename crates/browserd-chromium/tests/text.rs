//! Text as rendered (issue 13 items 1 and 2), on real Chromium: every fixture page's observation reads as the page's
//! own `innerText` — each text line is text of one rendered line (no space added or lost at an inline boundary, no
//! two blocks folded into one line, nothing cut), and every rendered line is shown (as text, a heading, a name or a
//! value) — and the text pages' lines read exactly, whole.
mod common;

use browserd_core::provider::Provider;
use browserd_protocol::tools::EvaluateParams;
use browserd_protocol::{Observation, TabId};
use browserd_test_support::fixtures::FixtureSite;
use browserd_test_support::text_pages::TEXT_PAGES;
use common::{Page, ctx, env};

/// The rendered text of the page and of every same-origin frame inside it, as `innerText` gives it.
const INNER_TEXT: &str = r"(() => {
  const out = [];
  // innerText's line breaks over the flat tree: a block box is a line of its own, a table cell follows its previous
  // cell after a tab, <br> breaks the line, `display: none` and invisible text are left out.
  const flat = (root) => {
    const parts = [];
    const walk = (node) => {
      if (node.nodeType === 3) {
        const p = node.parentElement;
        if (!p || getComputedStyle(p).visibility === 'visible') parts.push(node.data.replace(/\s+/g, ' '));
        return;
      }
      if (node.nodeType !== 1 || ['script', 'style', 'template'].includes(node.localName)) return;
      const cs = getComputedStyle(node);
      if (cs.display === 'none') return;
      if (node.localName === 'br') { parts.push('\n'); return; }
      let kids = [...(node.shadowRoot || node).childNodes];
      if (node.localName === 'slot') {
        const assigned = node.assignedNodes({ flatten: true });
        if (assigned.length) kids = assigned;
      }
      const cell = cs.display === 'table-cell';
      const block = !cell && !cs.display.startsWith('inline') && cs.display !== 'contents';
      if (cell && node.previousElementSibling) parts.push('\t');
      if (block) parts.push('\n');
      kids.forEach(walk);
      if (block) parts.push('\n');
    };
    walk(root);
    return parts.join('');
  };
  const walk = (doc) => {
    if (!doc || !doc.body) return;
    // An element neither seen nor heard — hidden from assistive technology and clipped to nothing (the `<select>`
    // a Select2 widget draws over) — is not what the page shows, though `innerText` reads it.
    const gone = [];
    for (const el of doc.querySelectorAll('[aria-hidden=true]')) {
      const r = el.getBoundingClientRect();
      if (r.width <= 1 && r.height <= 1) { gone.push([el, el.style.display]); el.style.display = 'none'; }
    }
    out.push(doc.body.innerText);
    for (const [el, display] of gone) el.style.display = display;
    for (const f of doc.querySelectorAll('iframe')) { try { walk(f.contentDocument); } catch (e) {} }
    // A shadow host's rendered text, read along the flat tree (its shadow root, slots showing what is assigned to
    // them): `innerText` reads one tree, so a sentence split by a <slot> comes out cut and slotted text out of place.
    for (const el of doc.querySelectorAll('*')) if (el.shadowRoot) out.push(flat(el));
  };
  walk(document);
  return out.join('\n');
})()";

async fn inner_text(page: &Page) -> Vec<String> {
    let params = EvaluateParams { tab: TabId(page.tab.0), expression: INNER_TEXT.into(), await_promise: true };
    let r = env().provider.evaluate(&ctx(), page.tab, &params).await.expect("innerText is read");
    let text = r.value.as_str().unwrap_or_default().to_owned();
    text.lines().map(normalise).filter(|l| !l.is_empty()).collect()
}

/// Whitespace runs collapsed to one space; a table cell boundary (`\t` in `innerText`) as the observation's ` | `.
fn normalise(s: &str) -> String {
    s.replace('\t', " | ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What one observation line says of the page's text.
enum Said {
    /// A text line (or a heading's text): page text, one rendered line or part of one.
    Text(String),
    /// A ref line's or container's quoted name and value: page text, maybe computed from several lines.
    Name(Vec<String>),
    /// browserd's own note (`… cut at ...`) or an `iframe` line.
    Own,
}

fn said(line: &str) -> Said {
    let l = line.trim_start();
    // browserd's own lines: notes, frames, the fence around a `<pre>` block, an image's alternative and a progress
    // bar's state (what they draw is not text).
    if l.starts_with("… ")
        || l.starts_with("iframe \"")
        || l == "```"
        || l.starts_with("img \"")
        || l.starts_with("progressbar ")
        || l.starts_with("meter ")
    {
        return Said::Own;
    }
    if let Some(h) = l.strip_prefix('#') {
        return Said::Text(h.trim_start_matches('#').trim().to_owned());
    }
    let is_ref = browserd_protocol::line_ref(l).is_some();
    let container = {
        let head = l.split([' ', ':']).next().unwrap_or("");
        l.ends_with(':')
            && head.chars().all(|c| c.is_ascii_lowercase())
            && (l == format!("{head}:") || l[head.len()..].starts_with(" \""))
    };
    if is_ref || container {
        let mut parts = quoted(l);
        if let Some((_, value)) = l.rsplit_once(": ").filter(|_| is_ref) {
            parts.push(value.to_owned());
        }
        if let Some(options) = l.split_once(" options=[").and_then(|(_, o)| o.split_once(']')).map(|(o, _)| o) {
            parts.extend(options.split('|').map(str::to_owned));
        }
        if let Some(row) = l.split_once(" (row: ").map(|(_, r)| r.trim_end_matches(')')) {
            parts.extend(row.split(" | ").map(str::to_owned));
        }
        return Said::Name(parts);
    }
    // Text drawn struck through is shown between `~~` marks (`~~$59.00~~ $45.00`): the marks are browserd's own.
    // Preformatted text keeps its runs of spaces; the rendered lines are compared with whitespace runs collapsed.
    Said::Text(normalise(&l.strip_prefix("text: ").unwrap_or(l).replace("~~", "")))
}

/// The quoted strings of a line (`"a \"b\""` → `a "b"`).
fn quoted(l: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    let mut chars = l.chars();
    while let Some(c) = chars.next() {
        match (&mut cur, c) {
            (None, '"') => cur = Some(String::new()),
            (Some(s), '\\') => s.extend(chars.next()),
            (Some(_), '"') => out.push(cur.take().unwrap_or_default()),
            (Some(s), c) => s.push(c),
            (None, _) => {}
        }
    }
    out
}

/// The consecutive rendered lines that, joined by a space, make up `name` (none when no run does).
fn spanned_lines(rendered: &[String], name: &str) -> Vec<String> {
    for start in 0..rendered.len() {
        let mut joined = String::new();
        for (end, line) in rendered.iter().enumerate().skip(start) {
            if !joined.is_empty() {
                joined.push(' ');
            }
            joined.push_str(line.trim());
            if joined == name {
                return rendered[start..=end].to_vec();
            }
            if !name.starts_with(joined.as_str()) {
                break;
            }
        }
    }
    Vec::new()
}

/// The fidelity mismatches of one observation against the page's rendered lines.
fn mismatches(o: &Observation, rendered: &[String]) -> Vec<String> {
    let mut bad = Vec::new();
    let mut fragments: Vec<String> = Vec::new();
    // Lines of a cross-origin frame (an `iframe` line with an absolute URL): its `innerText` cannot be read here.
    let mut foreign: Option<usize> = None;
    let mut in_fence = false;
    for line in o.untrusted_content.lines() {
        let depth = line.len() - line.trim_start().len();
        if foreign.is_some_and(|d| depth > d) {
            continue;
        }
        foreign = None;
        if line.trim_start().starts_with("iframe \"") && line.contains(" -> http") {
            foreign = Some(depth);
        }
        // Inside a fenced `<pre>` block every line is page text, even one that looks like a container (`server:`).
        let said = if in_fence && line.trim() != "```" {
            Said::Text(normalise(line.trim_start().strip_prefix("text: ").unwrap_or(line.trim_start())))
        } else {
            said(line)
        };
        if line.trim() == "```" {
            in_fence = !in_fence;
        }
        match said {
            Said::Text(t) => {
                if !rendered.iter().any(|r| r.contains(&t)) {
                    bad.push(format!("shown but not rendered as one line: {t:?}"));
                }
                fragments.push(t);
            }
            Said::Name(parts) => {
                for part in parts.into_iter().filter(|p| !p.is_empty()) {
                    // A clickable card or row named by all its text reads its lines joined by a space (where a block
                    // box begins, as innerText breaks the line): that name shows each of those rendered lines.
                    if !rendered.iter().any(|r| r.contains(&part)) {
                        fragments.extend(spanned_lines(rendered, &part));
                    }
                    // A marker drawn by CSS (`::before`/`::after { content: "▸" }`) is in the accessible name, not in
                    // innerText: the name without it shows the line.
                    let unmarked = part.trim_matches(|c: char| !c.is_alphanumeric()).to_owned();
                    if unmarked.len() < part.len() && !unmarked.is_empty() {
                        fragments.push(unmarked);
                    }
                    fragments.push(part);
                }
            }
            Said::Own => {}
        }
    }
    if o.truncated.is_none() {
        fragments.sort_by_key(|f| std::cmp::Reverse(f.len()));
        for r in rendered {
            let mut rest = r.clone();
            for f in &fragments {
                while let Some(i) = rest.find(f.as_str()) {
                    rest.replace_range(i..i + f.len(), "\u{1}");
                }
            }
            if rest.chars().any(char::is_alphanumeric) {
                bad.push(format!("rendered but not shown: {r:?} (left: {rest:?})"));
            }
        }
    }
    bad
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixture_page_reads_as_its_inner_text() {
    let mut report = Vec::new();
    let mut urls: Vec<(String, String)> =
        FixtureSite::pages().iter().map(|p| (p.path.to_owned(), env().site.url(p.path))).collect();
    urls.extend(TEXT_PAGES.iter().map(|p| (p.name.to_owned(), p.url())));
    for (name, url) in urls {
        let page = Page::open(&url).await;
        // A page that changes its own text (a poll's status line) is read again until its text is the same before
        // and after the observation: the two must be of one moment to be compared.
        let mut attempt = 0;
        let (o, rendered) = loop {
            attempt += 1;
            let before = inner_text(&page).await;
            let o = page.observe().await;
            let rendered = inner_text(&page).await;
            if before == rendered || attempt == 5 {
                break (o, rendered);
            }
        };
        if std::env::var("TEXT_DUMP").is_ok_and(|d| name.contains(&d)) {
            eprintln!("=== {name}\n{}\n--- rendered\n{}", o.untrusted_content, rendered.join("\n"));
        }
        for m in mismatches(&o, &rendered) {
            report.push(format!("{name}: {m}"));
        }
        page.close().await;
    }
    assert!(report.is_empty(), "{} text-fidelity mismatches:\n{}", report.len(), report.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_pages_show_every_rendered_line_exactly_and_whole() {
    for p in TEXT_PAGES {
        let page = Page::open(&p.url()).await;
        let o = page.observe().await;
        let lines: Vec<&str> = o
            .untrusted_content
            .lines()
            .map(|l| l.trim_start())
            .map(|l| l.strip_prefix("text: ").unwrap_or(l))
            .collect();
        for want in p.must_read {
            assert!(lines.contains(want), "{}: no line reads exactly {want:?} in\n{}", p.name, o.untrusted_content);
        }
        assert!(!o.untrusted_content.contains('…'), "{}: nothing is cut:\n{}", p.name, o.untrusted_content);
        page.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_after_a_link_joins_its_sentence_and_a_breadcrumb_separator_does_not() {
    // `Read our <a>privacy policy</a>.` left its stop alone on a line; a breadcrumb's links parted by `/` stay
    // lines of their own (joined, they would be read twice: the crumbs as text, then each link).
    let html = r#"<!doctype html><html><body>
<nav class="crumbs"><a href="/">Home</a> / <a href="/docs">Docs</a> / <a href="/docs/api">API</a></nav>
<p>Read our <a href="/privacy">privacy policy</a>.</p>
</body></html>"#;
    let page = Page::open(&browserd_test_support::text_pages::data_url(html)).await;
    let o = page.observe().await;
    let lines: Vec<&str> = o.untrusted_content.lines().map(str::trim).collect();
    assert!(lines.contains(&"Read our privacy policy."), "{}", o.untrusted_content);
    assert!(!lines.contains(&"."), "{}", o.untrusted_content);
    assert!(!lines.iter().any(|l| l.contains("Home / Docs") || l.contains("Home/Docs")), "{}", o.untrusted_content);
    assert_eq!(lines.iter().filter(|l| l.contains(" link \"")).count(), 4, "{}", o.untrusted_content);
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkbox_label_holding_links_is_read_once_with_its_links_under_it() {
    // Sign-up and checkout forms: `<label><input type=checkbox> I accept the <a>Terms</a> and the <a>Privacy
    // Policy</a>.</label>`. The label is the checkbox's name; it was read again in pieces around its links
    // (`I accept the` / link / `and the` / link / `.`).
    let html = r#"<!doctype html><html><body>
<label><input type="checkbox"> I agree to the <a href="/terms">terms</a></label>
<label><input type="checkbox"> I accept the <a href="/tos">Terms of Service</a> and the <a href="/privacy">Privacy Policy</a>.</label>
<label><input type="checkbox"> Remember me</label>
<p>Remember me</p>
</body></html>"#;
    let page = Page::open(&browserd_test_support::text_pages::data_url(html)).await;
    let o = page.observe().await;
    let lines: Vec<&str> = o.untrusted_content.lines().collect();
    let shown: Vec<String> = lines
        .iter()
        .map(|l| match browserd_protocol::split_ref(l.trim()) {
            Some((_, rest)) => format!("{}{}", &l[..l.len() - l.trim_start().len()], rest),
            None => (*l).to_owned(),
        })
        .collect();
    assert_eq!(
        shown,
        [
            "checkbox \"I agree to the terms\" unchecked",
            " link \"terms\" -> /terms",
            "checkbox \"I accept the Terms of Service and the Privacy Policy.\" unchecked",
            " link \"Terms of Service\" -> /tos",
            " link \"Privacy Policy\" -> /privacy",
            "checkbox \"Remember me\" unchecked",
            "Remember me",
        ],
        "{}",
        o.untrusted_content
    );
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_says_its_alternative_unless_the_line_beside_it_already_does() {
    // A chart's alternative is what the page says it shows; a product photo whose `alt` is the product's name, beside
    // its heading, would only say that name twice.
    let gif = "data:image/gif;base64,R0lGODlhAQABAAAAACw=";
    let html = format!(
        r#"<!doctype html><html><body>
<div class="card"><img alt="Desk lamp" width="20" height="20" src="{gif}"><h3>Desk lamp</h3><p>$45.00</p></div>
<figure><img alt="Sales by month: rising from 10 to 40" width="20" height="20" src="{gif}"><figcaption>Sales</figcaption></figure>
</body></html>"#
    );
    let page = Page::open(&browserd_test_support::text_pages::data_url(&html)).await;
    let o = page.observe().await;
    let lines: Vec<&str> = o.untrusted_content.lines().map(str::trim).collect();
    assert!(lines.contains(&"img \"Sales by month: rising from 10 to 40\""), "{}", o.untrusted_content);
    assert!(!lines.contains(&"img \"Desk lamp\""), "{}", o.untrusted_content);
    assert!(lines.contains(&"### Desk lamp"), "{}", o.untrusted_content);
    page.close().await;
}
