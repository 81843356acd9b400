//! Real-Chromium differential tests of the DOM-first first look (`observe::dom_tree`): a page's observation built
//! from a tree made from its DOM snapshot must equal the one built from Chromium's own accessibility tree, on the
//! generated benchmark pages, on every fixture page, and on random pages of the elements the builder models (with
//! whitespace as pages have it); and the built tree must really have been used where the page is in that subset.
mod common;

use browserd_chromium::DomFirst;
use browserd_protocol::{ActParams, ActionKind, Observation, Outcome};
use common::{Page, env};

/// Observes the page with Chromium's trees, then with trees built from the DOM where the page allows it; returns
/// both and how many frames were built from the DOM.
async fn both(page: &Page) -> (Observation, Observation, u64) {
    let p = &env().provider;
    p.set_dom_first(DomFirst::Never);
    p.clear_ax_cache();
    let reference = page.observe().await;
    // The reference's trees are cached by a task that may land after a clear: wait until an observation reuses
    // them, so that the clear below really leaves nothing cached.
    for _ in 0..50 {
        let before = p.ax_stats().reused;
        page.observe().await;
        if p.ax_stats().reused > before {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    p.set_dom_first(DomFirst::Always);
    p.clear_ax_cache();
    let before = p.ax_stats().dom;
    let built = page.observe().await;
    let dom = p.ax_stats().dom - before;
    p.set_dom_first(DomFirst::Never);
    (reference, built, dom)
}

fn assert_same(what: &str, reference: &Observation, built: &Observation) {
    assert_eq!(
        built.untrusted_content, reference.untrusted_content,
        "{what}: the observation from the DOM-built tree differs from Chromium's"
    );
    assert_eq!(built.title, reference.title, "{what}: title");
    assert_eq!(built.focused, reference.focused, "{what}: focus");
    assert_eq!(built.modal, reference.modal, "{what}: modal");
    assert_eq!(built.node_count, reference.node_count, "{what}: node count");
    assert_eq!(built.truncated, reference.truncated, "{what}: truncation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generated_pages_built_from_the_dom_read_as_chromiums_tree() {
    for n in [100, 300, 1000] {
        let page = Page::open(&format!("/gen/elements?n={n}")).await;
        let (reference, built, dom) = both(&page).await;
        assert_eq!(dom, 1, "n={n}: the generated page is in the subset and was built from the DOM");
        assert_same(&format!("n={n}"), &reference, &built);
        page.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_page_is_built_from_the_dom_by_default_and_again_after_a_change() {
    let p = &env().provider;
    let before = p.ax_stats();
    let page = Page::open("/gen/elements?n=1000").await;
    let first = page.observe().await;
    let after = p.ax_stats();
    // The navigation reads the blank page before it (Chromium's tree), then the page, built from the DOM.
    assert!(after.dom > before.dom, "built from the DOM: {before:?} → {after:?}");
    // While the page is unchanged the built tree is reused, once the task that caches it has confirmed the state.
    let mut reused = false;
    for _ in 0..50 {
        let before = p.ax_stats();
        let again = page.observe().await;
        let after = p.ax_stats();
        assert_eq!(after.full, before.full, "never Chromium's whole tree: {after:?}");
        assert_eq!(first.untrusted_content, again.untrusted_content);
        if after.reused > before.reused {
            reused = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(reused, "the built tree is reused while the page is unchanged");
    page.run("document.querySelector('main button').textContent = 'Renamed'").await;
    let before = p.ax_stats();
    let changed = page.observe().await;
    let after = p.ax_stats();
    assert_eq!((after.dom - before.dom, after.full - before.full), (1, 0), "rebuilt from the DOM: {after:?}");
    assert!(changed.untrusted_content.contains("button \"Renamed\""), "{}", changed.untrusted_content);
    let (reference, built, dom) = both(&page).await;
    assert_eq!(dom, 1);
    assert_same("n=1000 after a change", &reference, &built);
    assert_eq!(built.untrusted_content, changed.untrusted_content);
    // A click focuses its button: the tree is built again, with the focus, not read from Chromium.
    let r = page.act(ActParams::new(ActionKind::Click).target(common::ref_of(&changed, "button \"Renamed\""))).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let before = p.ax_stats();
    let focused = page.observe().await;
    let after = p.ax_stats();
    // Reused, or built again if the click's own tree was not cached yet: never Chromium's whole tree.
    assert_eq!(after.full - before.full, 0, "not read from Chromium after the click: {before:?} → {after:?}");
    assert!(focused.focused.is_some(), "the clicked button is in focus");
    let (reference, built, dom) = both(&page).await;
    assert_eq!(dom, 1);
    assert_same("n=1000 with a button in focus", &reference, &built);
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixture_page_reads_the_same_whether_or_not_it_is_built_from_the_dom() {
    for f in browserd_test_support::fixtures::FixtureSite::pages() {
        if f.path.starts_with("/gen/") || f.category == "generated" {
            continue;
        }
        let page = Page::open(f.path).await;
        let (reference, built, _) = both(&page).await;
        // A page that changes by itself can differ between two reads; read it again once before failing.
        if built.untrusted_content != reference.untrusted_content {
            let (reference, built, _) = both(&page).await;
            assert_same(f.path, &reference, &built);
        }
        page.close().await;
    }
}

/// A small deterministic generator (64-bit LCG).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
    /// Whitespace as markup has it: nothing, a space, runs, line breaks and indentation.
    fn ws(&mut self) -> &'static str {
        ["", "", " ", "  ", "\n", "\n    ", " \t "][self.below(7) as usize]
    }
    fn words(&mut self) -> String {
        let n = 1 + self.below(4);
        (0..n)
            .map(|_| {
                self.pick(&[
                    "alpha",
                    "beta",
                    "gamma",
                    "delta",
                    "Orders",
                    "$12.50",
                    "état",
                    "x",
                    "a\u{a0}b",
                    "co\u{ad}op",
                    "🎉",
                ])
            })
            .collect::<Vec<_>>()
            .join(self.pick(&[" ", "  ", "\n"]))
    }
}

/// A 1×1 GIF.
const PIXEL: &str = "data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7";

/// Random markup of the subset, `depth` levels deep.
fn flow(r: &mut Rng, depth: u32, out: &mut String, ids: &mut u32) {
    let items = 1 + r.below(4);
    for _ in 0..items {
        out.push_str(r.ws());
        let choice = if depth == 0 { r.below(7) } else { r.below(21) };
        match choice {
            0 | 1 => out.push_str(&r.words()),
            2 => {
                out.push_str("<span>");
                out.push_str(&r.words());
                out.push_str("</span>");
            }
            3 => {
                out.push_str(&format!("<a href=\"#l{}\">{}{}</a>", r.below(9), r.ws(), r.words()));
            }
            4 => match r.below(4) {
                0 => out.push_str(&format!("<button type=\"button\">{}</button>", r.words())),
                1 => out.push_str(&format!("<button type=\"button\" aria-label=\" Close  {} \">×</button>", r.words())),
                2 => out.push_str(&format!(
                    "<button type=\"button\" title=\"{}\"><i class=\"icon\" aria-hidden=\"true\"></i></button>",
                    r.words()
                )),
                _ => out.push_str(&format!(
                    "<a href=\"#t\" title=\"Tip\" target=\"_blank\" rel=\"noopener\">{}</a>{}<i aria-hidden=\"true\"></i>",
                    r.words(),
                    r.ws()
                )),
            },
            5 => out.push_str("<span onclick=\"this.dataset.c=1\" style=\"cursor:pointer\">details</span>"),
            6 => {
                let tag = r.pick(&["strong", "em", "b", "i", "small", "code", "u"]);
                out.push_str(&format!("<{tag}>{}{}</{tag}>", r.words(), r.ws()));
            }
            7 => {
                out.push_str("<div>");
                flow(r, depth - 1, out, ids);
                out.push_str("</div>");
            }
            8 => {
                out.push_str("<p>");
                flow(r, 0, out, ids);
                out.push_str("</p>");
            }
            9 => {
                let level = 1 + r.below(3);
                out.push_str(&format!("<h{level}>{}</h{level}>", r.words()));
            }
            10 => {
                let tag = r.pick(&["ul", "ol"]);
                out.push_str(&format!("<{tag}>"));
                for _ in 0..1 + r.below(3) {
                    out.push_str(r.ws());
                    out.push_str("<li>");
                    flow(r, depth - 1, out, ids);
                    out.push_str("</li>");
                }
                out.push_str(&format!("</{tag}>"));
            }
            11 => {
                *ids += 1;
                let k = *ids;
                match r.below(3) {
                    0 => out.push_str(&format!(
                        "<form aria-label=\"Form {k}\"><label for=\"f{k}\">Field {k}</label>{}<input id=\"f{k}\" \
                         type=\"{}\">{}<button>Send {k}</button></form>",
                        r.ws(),
                        r.pick(&["text", "email"]),
                        r.ws()
                    )),
                    1 => out.push_str(&format!(
                        "<form><input id=\"c{k}\" type=\"checkbox\"{}>{}<label for=\"c{k}\">Check {k}</label></form>",
                        if r.below(2) == 0 { " checked" } else { "" },
                        r.ws()
                    )),
                    _ => out.push_str(&format!(
                        "<div><label for=\"s{k}\">Pick {k}</label><select id=\"s{k}\"><option>One</option>\
                         <option{}>Two</option></select></div>",
                        if r.below(2) == 0 { " selected" } else { "" }
                    )),
                }
            }
            12 => {
                *ids += 1;
                let k = *ids;
                out.push_str(&format!(
                    "<table><caption>Table {k}</caption><thead><tr><th>Name</th><th>Act</th></tr></thead><tbody>"
                ));
                for i in 0..1 + r.below(3) {
                    out.push_str(&format!(
                        "<tr><td>{}{}</td><td><button type=\"button\">Edit {i}</button></td></tr>",
                        r.ws(),
                        r.words()
                    ));
                }
                out.push_str("</tbody></table>");
            }
            13 => {
                *ids += 1;
                let k = *ids;
                let named = r.below(2) == 0;
                if named {
                    out.push_str(&format!("<section aria-labelledby=\"h{k}\"><h2 id=\"h{k}\">Part {k}</h2>"));
                } else {
                    out.push_str("<section>");
                }
                flow(r, depth - 1, out, ids);
                out.push_str("</section>");
            }
            14 => {
                out.push_str(r.pick(&["<div style=\"display:flex\">", "<div style=\"display:inline-block\">"]));
                flow(r, 0, out, ids);
                out.push_str("</div>");
            }
            15 => {
                let tag = r.pick(&["article", "aside", "blockquote"]);
                out.push_str(&format!("<{tag}>"));
                flow(r, depth - 1, out, ids);
                out.push_str(&format!("</{tag}>"));
            }
            16 => {
                out.push_str(&format!("<section aria-label=\"Box\"><header>{}</header>", r.words()));
                flow(r, depth - 1, out, ids);
                out.push_str(&format!("<footer>{}</footer></section>", r.words()));
            }
            17 => out.push_str(&format!("<img src=\"{PIXEL}\" alt=\"{}\">", r.pick(&["Logo", "", "A chart"]))),
            18 => {
                out.push_str("<div onclick=\"this.dataset.c=1\">");
                flow(r, depth - 1, out, ids);
                out.push_str("</div>");
            }
            _ => out.push_str(r.pick(&[
                "<br>",
                "<hr>",
                "<div></div>",
                "<p></p>",
                "<p> </p>",
                "<ul><li></li></ul>",
                "<input type=\"hidden\" name=\"h\" value=\"1\">",
                "<div onclick=\"this.dataset.c=1\"></div>",
            ])),
        }
        out.push_str(r.ws());
    }
}

fn random_page(seed: u64) -> String {
    let mut r = Rng(seed);
    let mut body = String::new();
    let mut ids = 0;
    if r.below(2) == 0 {
        body.push_str(
            "<header><nav aria-label=\"Main\"><a href=\"#a\">Home</a> <a href=\"#b\">Docs</a></nav></header>",
        );
    }
    body.push_str("<main>");
    flow(&mut r, 3, &mut body, &mut ids);
    body.push_str("</main>");
    if r.below(2) == 0 {
        body.push_str("<footer><p>Footer text</p><a href=\"#t\">Terms</a></footer>");
    }
    format!("<!doctype html><html><head><title>Random {seed}</title></head><body>{body}</body></html>")
}

fn data_url(html: &str) -> String {
    let mut out = String::from("data:text/html;charset=utf-8,");
    for b in html.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_pages_of_the_subset_built_from_the_dom_read_as_chromiums_tree() {
    let mut built_count = 0;
    let seeds = 80;
    for seed in 1..=seeds {
        let html = random_page(seed);
        let page = Page::open(&data_url(&html)).await;
        if seed % 3 == 0 {
            // Focus on a control or link: the one state besides the DOM a built tree describes.
            page.run(&format!("(() => {{ const all = document.querySelectorAll('a[href], button, input, select'); if (all.length) all[{seed} % all.length].focus(); }})()")).await;
        }
        if seed % 4 == 1 {
            // What a user typed into the text fields (a valid e-mail address: an invalid one is a script-set state).
            page.run("document.querySelectorAll('input[type=text], input[type=email]').forEach((f, i) => f.value = i % 2 ? 'ada@example.com' : '  typed  text ')").await;
        }
        let (reference, built, dom) = both(&page).await;
        assert_same(&format!("random page {seed}:\n{html}\n"), &reference, &built);
        built_count += dom;
        page.close().await;
    }
    // Most random pages are in the subset: the comparison is not vacuous.
    assert!(built_count * 4 >= seeds * 3, "only {built_count} of {seeds} random pages were built from the DOM");
}
