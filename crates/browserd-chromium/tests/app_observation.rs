//! What the admin (Vue) and shop (React) fixture apps showed of the observation, on real Chromium (issue 13 item 4):
//! alike controls told apart by the text of their own small container, namesakes of any kind of line told apart,
//! suggestions a portal renders shown under the combobox that points at them, the page an open modal makes inert
//! said in one line, and a sentence with a link inside it read whole (issue 13 item 1).
mod common;

use browserd_protocol::{ActParams, ActionKind, Observation, Outcome};
use common::{Page, recorded, ref_in, under};

/// The ref lines that end with `tail`.
fn lines_ending<'a>(o: &'a Observation, tail: &str) -> Vec<&'a str> {
    o.untrusted_content.lines().filter(|l| browserd_protocol::line_ref(l).is_some() && l.ends_with(tail)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_chips_remove_icon_is_told_apart_by_the_chips_own_label() {
    // Each tag chip is `<span>design<i>×</i></span>`: the "×" of each is read right after the label of its own chip
    // (the line above says whose it is, so no note repeats it), not with the section heading and an ordinal.
    let tab = Page::open("/apps/admin.html").await;
    let o = tab.observe().await;
    let after = |o: &Observation, label: &str| -> Option<String> {
        let lines: Vec<&str> = o.untrusted_content.lines().collect();
        let at = lines.iter().position(|l| l.trim_start() == label)?;
        lines.get(at + 1).filter(|l| l.ends_with(" clickable \"×\"")).map(|l| (*l).to_owned())
    };
    for tag in ["design", "backend", "urgent"] {
        assert!(after(&o, tag).is_some(), "the \"×\" of {tag}:\n{}", o.untrusted_content);
    }
    assert!(!o.untrusted_content.contains(" of 3)"), "no ordinal is needed:\n{}", o.untrusted_content);
    let backend = ref_in(&after(&o, "backend").expect("backend's ×"));
    let r = tab.act(ActParams::new(ActionKind::Click).target(&backend)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("untag:backend").await, "{r:#?}");
    let o = tab.observe().await;
    assert!(after(&o, "backend").is_none(), "{}", o.untrusted_content);
    for tag in ["design", "urgent"] {
        assert!(after(&o, tag).is_some(), "{}", o.untrusted_content);
    }
    tab.close().await;

    // The same on a page of plain HTML, where a label follows the "x" it names: the note says it, as the line above
    // is the other chip's. Where the container holds other operable elements too, its text is a neighbour's, not
    // theirs: those namesakes keep their section and an ordinal.
    let page = "data:text/html,<title>t</title><h2>Filters</h2>\
                <div><span><i style='cursor:pointer' onclick='document.title=1'>x</i> red</span> \
                <span><i style='cursor:pointer' onclick='document.title=2'>x</i> blue</span></div>\
                <h2>Notes</h2><p>Pick one <button>Edit</button> <button>Edit</button></p>";
    let tab = Page::open(page).await;
    let o = tab.observe().await;
    for colour in ["red", "blue"] {
        assert_eq!(lines_ending(&o, &format!("clickable \"x\" (in \"{colour}\")")).len(), 1, "{}", o.untrusted_content);
    }
    for nth in [1, 2] {
        let tail = format!("button \"Edit\" (in \"Notes\"; {nth} of 2)");
        assert_eq!(lines_ending(&o, &tail).len(), 1, "{tail}:\n{}", o.untrusted_content);
    }
    tab.close().await;
}

/// The ref lines showing `role "name"`, with what follows the name (the notes that tell them apart).
fn namesakes<'a>(o: &'a Observation, role: &str, name: &str) -> Vec<&'a str> {
    let shown = format!("{role} \"{name}\"");
    o.untrusted_content
        .lines()
        .filter_map(|l| browserd_protocol::split_ref(l)?.1.strip_prefix(shown.as_str()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clickable_card_and_a_suggestion_of_the_same_name_are_told_apart() {
    // The shop's card of a product holds its own buttons (a container line with a ref); the combobox suggests the same
    // product by the same name. Each line says which one it is.
    let tab = Page::open("/apps/shop.html").await;
    let o = tab.observe().await;
    let search = o.untrusted_content.lines().find(|l| l.contains("combobox \"Search products\"")).expect("combobox");
    let r = tab.act(ActParams::new(ActionKind::Type).target(ref_in(search)).value("grind")).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let o = tab.observe().await;
    let name = "Burr coffee grinder with 40 grind settings";
    let alike = namesakes(&o, "clickable", name);
    assert_eq!(alike.len(), 2, "the card and the suggestion:\n{}", o.untrusted_content);
    assert_ne!(alike[0], alike[1], "told apart:\n{}", o.untrusted_content);
    assert!(alike.iter().all(|rest| rest.starts_with(" (")), "each says which one it is:\n{}", o.untrusted_content);
    tab.close().await;

    // Two cards of the same name, and a namesake with a context beside one without: never `1 of 1`.
    let page = "data:text/html,<title>t</title>\
                <div style='cursor:pointer' onclick='document.title=1'><div>Blue mug</div><button>Add</button></div>\
                <div style='cursor:pointer' onclick='document.title=2'><div>Blue mug</div><button>Add</button></div>\
                <button>Buy</button><section aria-label=Deals><button>Buy</button></section>";
    let tab = Page::open(page).await;
    let o = tab.observe().await;
    assert_eq!(namesakes(&o, "clickable", "Blue mug"), [" (1 of 2):", " (2 of 2):"], "{}", o.untrusted_content);
    assert_eq!(namesakes(&o, "button", "Buy"), [" (1 of 2)", " (in \"Deals\")"], "{}", o.untrusted_content);
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_button_under_its_cards_line_is_not_annotated_with_the_cards_name_again() {
    // The shop's three cards each hold an "Add to cart": each button sits indented under its card's line, which names
    // the card, so a note `(in "Trail runner waterproof hiking shoes wit…")` would only repeat the line above it.
    let tab = Page::open("/apps/shop.html").await;
    let o = tab.observe().await;
    for card in ["Trail runner waterproof", "Desk lamp with", "Burr coffee grinder"] {
        let inside = under(&o, &format!("clickable \"{card}"));
        let adds: Vec<&&str> = inside.iter().filter(|l| l.contains("button \"Add to cart\"")).collect();
        assert_eq!(adds.len(), 1, "{card}:\n{}", o.untrusted_content);
        assert!(adds[0].ends_with("button \"Add to cart\""), "no note repeats the card line:\n{}", o.untrusted_content);
    }
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suggestions_rendered_in_a_portal_are_shown_under_the_combobox_that_points_at_them() {
    // The shop's suggestions render in a portal at the end of <body>; the combobox points at them (aria-controls).
    let tab = Page::open("/apps/shop.html").await;
    let o = tab.observe().await;
    let search = o.untrusted_content.lines().find(|l| l.contains("combobox \"Search products\"")).expect("combobox");
    let r = tab.act(ActParams::new(ActionKind::Type).target(ref_in(search)).value("r")).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let o = tab.observe().await;
    let suggestions = under(&o, "combobox \"Search products\" expanded");
    for name in ["Trail runner waterproof", "Desk lamp with", "Burr coffee grinder"] {
        assert_eq!(
            suggestions.iter().filter(|l| l.contains(&format!("clickable \"{name}"))).count(),
            1,
            "{name} under the combobox:\n{}",
            o.untrusted_content
        );
    }
    assert_eq!(suggestions.len(), 3, "{}", o.untrusted_content);
    // Shown once: not again after the page's footer, where the DOM has them.
    let last = o.untrusted_content.lines().last().unwrap_or_default();
    assert_eq!(last, " Free shipping over $50", "{}", o.untrusted_content);
    let lamp = suggestions.iter().find(|l| l.contains("Desk lamp")).expect("the lamp's suggestion");
    let r = tab.act(ActParams::new(ActionKind::Click).target(ref_in(lamp))).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("search:p2").await, "{r:#?}");
    tab.close().await;

    // On a plain page: a menu button's menu (aria-controls) and a combobox's listbox (aria-activedescendant only), both
    // at the end of <body>, are shown under them; a disclosure button's panel (no popup) stays where it is.
    let page = "data:text/html,<title>t</title><main>\
                <button aria-haspopup=menu aria-expanded=true aria-controls=m>Sort</button>\
                <input role=combobox aria-label=City aria-expanded=true aria-activedescendant=c2>\
                <button aria-expanded=true aria-controls=panel>Details</button><p>Between</p></main>\
                <div id=panel>Panel text</div>\
                <div role=menu id=m><div role=menuitem>Newest</div><div role=menuitem>Oldest</div></div>\
                <ul role=listbox><li role=option id=c1>Paris</li><li role=option id=c2>Rome</li></ul>";
    let tab = Page::open(page).await;
    let o = tab.observe().await;
    let menu = under(&o, "button \"Sort\"");
    assert!(menu.iter().any(|l| l.contains("menuitem \"Oldest\"")), "{}", o.untrusted_content);
    let cities = under(&o, "combobox \"City\"");
    assert!(cities.iter().any(|l| l.contains("option \"Rome\"")), "{}", o.untrusted_content);
    assert_eq!(o.untrusted_content.matches("\"Rome\"").count(), 1, "{}", o.untrusted_content);
    assert!(under(&o, "button \"Details\"").is_empty(), "{}", o.untrusted_content);
    let text: Vec<&str> = o.untrusted_content.lines().map(str::trim).collect();
    let (between, panel) = (text.iter().position(|l| *l == "Between"), text.iter().position(|l| *l == "Panel text"));
    assert!(between < panel, "{}", o.untrusted_content);
    tab.close().await;
}

/// The number of ref lines of an observation.
fn refs(o: &Observation) -> usize {
    o.untrusted_content.lines().filter(|l| browserd_protocol::line_ref(l).is_some()).count()
}

/// The number the line standing for the page behind a modal dialog gives, if there is that line.
fn behind(o: &Observation) -> Option<usize> {
    let l = o.untrusted_content.lines().find(|l| l.starts_with("(page behind the dialog is inert: "))?;
    assert!(l.ends_with("; close the dialog to reach them)"), "{l}");
    l["(page behind the dialog is inert: ".len()..].split(' ').next()?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modal_says_how_many_operable_elements_wait_inert_behind_it() {
    // The shop's checkout modal sets `inert` on the app: the accessibility tree leaves the app out. The observation
    // starts with one line that says so and how many operable elements wait there: the ones the page shows again once
    // the dialog is closed.
    let tab = Page::open("/apps/shop.html").await;
    let o = tab.observe().await;
    assert_eq!(behind(&o), None, "{}", o.untrusted_content);
    let all = refs(&o);
    let checkout = o.untrusted_content.lines().find(|l| l.contains("button \"Checkout\"")).expect("checkout");
    tab.act(ActParams::new(ActionKind::Click).target(ref_in(checkout))).await;
    assert!(recorded("checkout:open").await);
    let o = tab.observe().await;
    assert_eq!(behind(&o), Some(all), "{}", o.untrusted_content);
    assert!(o.untrusted_content.starts_with("(page behind the dialog is inert"), "{}", o.untrusted_content);
    assert_eq!(refs(&o), 2, "only the dialog's buttons:\n{}", o.untrusted_content);
    let back = o.untrusted_content.lines().find(|l| l.contains("button \"Back to shop\"")).expect("back");
    tab.act(ActParams::new(ActionKind::Click).target(ref_in(back))).await;
    assert!(recorded("checkout:cancel").await);
    let o = tab.observe().await;
    assert_eq!((behind(&o), refs(&o)), (None, all), "{}", o.untrusted_content);
    tab.close().await;

    // A modal <dialog> (showModal) makes everything outside it inert: what waits is what its closing gives back, not
    // what stays `inert` after it; `inert` without a modal dialog says nothing.
    let page = "data:text/html,<title>t</title><main><p>Before</p><button>Outside</button><a href=x>Foot</a>\
                <div inert><button>Later</button></div></main>\
                <dialog id=d><button onclick=d.close()>Close</button></dialog><script>d.showModal()</script>";
    let tab = Page::open(page).await;
    let o = tab.observe().await;
    assert_eq!(behind(&o), Some(2), "Outside and Foot (Later stays inert):\n{}", o.untrusted_content);
    let close = o.untrusted_content.lines().find(|l| l.contains("button \"Close\"")).expect("close");
    tab.act(ActParams::new(ActionKind::Click).target(ref_in(close))).await;
    let o = tab.observe().await;
    assert_eq!(behind(&o), None, "{}", o.untrusted_content);
    assert_eq!(refs(&o), 2, "Outside and Foot; Later stays inert:\n{}", o.untrusted_content);
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentence_reads_whole_with_its_link_under_it_but_words_a_margin_keeps_apart_are_not_glued() {
    // The chat's topic has a link inside it: one line, the link under it.
    let tab = Page::open("/apps/chat.html").await;
    let o = tab.observe().await;
    let held = under(&o, "Topic: ship the release notes by Friday");
    assert!(held.first().is_some_and(|l| l.contains("link \"release notes\"")), "{}", o.untrusted_content);
    tab.close().await;
    // A result link followed by its metadata in a span kept apart only by a margin (no space between them in the
    // text): joining them would read "Quarterly report 2026PDF"; the link keeps its own line.
    let tab = Page::open("/apps/delegated.html").await;
    let o = tab.observe().await;
    assert!(!o.untrusted_content.contains("2026PDF"), "{}", o.untrusted_content);
    assert!(
        o.untrusted_content
            .lines()
            .any(|l| browserd_protocol::line_ref(l).is_some() && l.ends_with("\"Quarterly report 2026\""))
    );
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issue_rows_status_chip_is_read_after_its_rows_id_without_repeating_it() {
    // Twenty issue rows `<li><span>TRK-101</span><a>title</a><span class=chip>Open</span></li>`: seven chips read
    // "Open". Each follows its row's id and title, so a note `(in "TRK-101")` would only repeat the line two above.
    let tab = Page::open("/apps/tracker.html").await;
    let o = tab.observe().await;
    let lines: Vec<&str> = o.untrusted_content.lines().collect();
    assert!(!o.untrusted_content.contains("(in \"TRK-"), "{}", o.untrusted_content);
    let row = lines.iter().position(|l| l.trim_start() == "TRK-104").expect("the row's id");
    assert!(lines[row + 1].ends_with(" clickable \"Export to CSV drops the last row\""), "{}", o.untrusted_content);
    assert!(lines[row + 2].ends_with(" clickable \"Open\""), "{}", o.untrusted_content);
    // The chip under TRK-104 is that row's: clicking it moves TRK-104 on.
    let r = tab.act(ActParams::new(ActionKind::Click).target(ref_in(lines[row + 2]))).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("status:TRK-104").await, "{r:#?}");
    tab.close().await;
}
