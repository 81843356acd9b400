//! Real-Chromium differential tests of the incremental accessibility-tree refresh: after each DOM or state change,
//! the observation built by re-reading only the changed subtrees must equal the one built from whole trees read
//! fresh (the cache cleared), and the refresh must really have been incremental where the change allows it.
mod common;

use std::time::Duration;

use browserd_chromium::AxStats;
use browserd_protocol::Observation;
use common::{Page, env};

/// How a change must be refreshed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// By subtree reads only (no whole-tree read).
    Subtrees,
    /// Whole trees (the change cannot be bounded).
    Full,
    /// Either (random changes).
    Any,
}

fn stats() -> AxStats {
    env().provider.ax_stats()
}

/// Observes until the page's trees are cached for its current state: an observation reads no tree whole (and
/// re-reads at most the elements that are read at every observation).
async fn settle(page: &Page) -> Observation {
    for _ in 0..100 {
        let before = stats();
        let o = page.observe().await;
        let after = stats();
        if after.full == before.full && (after.reused > before.reused || after.subtrees > before.subtrees) {
            return o;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the page's trees were never cached: is the page still changing?");
}

/// Applies `script`, observes (incremental), then observes again from whole trees, and compares.
async fn check(page: &Page, what: &str, script: &str, expect: Expect) -> Observation {
    settle(page).await;
    page.run(script).await;
    let before = stats();
    let incremental = page.observe().await;
    let after = stats();
    let (subtrees, full) = (after.subtrees - before.subtrees, after.full - before.full);
    match expect {
        Expect::Subtrees => {
            assert!(
                subtrees > 0 && full == 0,
                "{what}: refreshed by subtrees ({subtrees}) without whole reads ({full})"
            )
        }
        Expect::Full => assert!(full > 0, "{what}: read whole ({full}), subtrees {subtrees}"),
        Expect::Any => {}
    }
    env().provider.clear_ax_cache();
    let reference = page.observe().await;
    assert_eq!(
        incremental.untrusted_content, reference.untrusted_content,
        "{what}: incremental and whole-tree observations differ"
    );
    assert_eq!(incremental.focused, reference.focused, "{what}: focus");
    assert_eq!(incremental.modal, reference.modal, "{what}: modal");
    assert_eq!(incremental.title, reference.title, "{what}: title");
    incremental
}

const PAGE: &str = "data:text/html,<title>Inc</title>
<main><h1 id=h>Orders</h1>
<p>Intro <b>text</b></p>
<span id=lbl>Customer</span><input id=cust aria-labelledby=lbl>
<span id=desc>Required field</span><input id=d aria-label=Described aria-describedby=desc>
<label>Phone <input id=phone></label>
<label for=mail id=maillabel>Mail</label><input id=mail>
<button id=save>Save</button>
<button id=tog aria-expanded=false aria-controls=panel>More</button>
<div id=panel hidden><a href='x.html'>Hidden link</a></div>
<input type=checkbox id=cb aria-label=Agree>
<select id=sel aria-label=Country><option value=a>Alpha</option><option value=b>Beta</option></select>
<ul id=list><li>One <button>Edit</button></li><li>Two <button>Edit</button></li></ul>
<table><caption>People</caption><tr><th>Name</th><th>Age</th></tr><tr><td>Ann</td><td>30</td></tr></table>
<div id=host></div>
<details id=det><summary>Details</summary><p>Inside</p></details>
<p id=count>Count: 0</p>
<div id=filler></div>
</main>
<script>
const r = document.getElementById('host').attachShadow({mode: 'open'});
r.innerHTML = '<button id=inner>Shadow button</button><span>shadow text</span>';
const f = document.getElementById('filler');
for (let i = 0; i < 60; i++) { const p = document.createElement('p'); p.textContent = 'Filler ' + i; f.appendChild(p); }
</script>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subtree_refreshes_match_whole_tree_reads() {
    use Expect::{Full, Subtrees};
    let page = Page::open(PAGE).await;
    let cases: &[(&str, &str, Expect)] = &[
        ("text of a heading", "document.getElementById('h').textContent = 'Invoices'", Subtrees),
        ("text inside a button", "document.getElementById('save').textContent = 'Store'", Subtrees),
        ("counter text", "document.getElementById('count').textContent = 'Count: 1'", Subtrees),
        (
            "text of a button beside a list marker",
            "document.querySelector('#list li button').textContent = 'Change'",
            Subtrees,
        ),
        ("labelledby target text", "document.getElementById('lbl').textContent = 'Client'", Subtrees),
        ("describedby target text", "document.getElementById('desc').textContent = 'Optional'", Subtrees),
        ("text of an enclosing label", "document.querySelector('label').firstChild.data = 'Mobile '", Subtrees),
        ("text of a for-label", "document.getElementById('maillabel').textContent = 'E-mail'", Subtrees),
        ("for-label retargeted", "document.getElementById('maillabel').htmlFor = 'phone'", Subtrees),
        ("value set by script", "document.getElementById('mail').value = 'a@b.c'", Subtrees),
        ("checked set by script", "document.getElementById('cb').checked = true", Subtrees),
        ("select value", "document.getElementById('sel').value = 'b'", Subtrees),
        ("disabled", "document.getElementById('save').disabled = true", Subtrees),
        ("aria-label", "document.getElementById('tog').setAttribute('aria-label', 'Show more')", Subtrees),
        (
            "expanded and shown",
            "document.getElementById('tog').setAttribute('aria-expanded', 'true'); \
             document.getElementById('panel').hidden = false",
            Subtrees,
        ),
        ("hidden again", "document.getElementById('panel').style.display = 'none'", Subtrees),
        ("aria-hidden", "document.getElementById('list').setAttribute('aria-hidden', 'true')", Subtrees),
        ("aria-hidden removed", "document.getElementById('list').removeAttribute('aria-hidden')", Subtrees),
        (
            "list item added",
            "const li = document.createElement('li'); li.innerHTML = 'Three <button>Edit</button>'; \
             document.getElementById('list').appendChild(li)",
            Subtrees,
        ),
        ("list item removed", "document.querySelector('#list li').remove()", Subtrees),
        (
            "table row added",
            "document.querySelector('table').insertRow().innerHTML = '<td>Bob</td><td>41</td>'",
            Subtrees,
        ),
        ("role changed", "document.getElementById('count').setAttribute('role', 'status')", Subtrees),
        (
            "shadow DOM text",
            "document.getElementById('host').shadowRoot.getElementById('inner').textContent = 'Shadow saved'",
            Subtrees,
        ),
        ("details opened", "document.getElementById('det').open = true", Subtrees),
        ("focus moved", "document.getElementById('phone').focus()", Subtrees),
        (
            "focus moved into a shadow root",
            "document.getElementById('host').shadowRoot.getElementById('inner').focus()",
            Subtrees,
        ),
        ("focus left", "document.activeElement.blur(); document.body.focus()", Subtrees),
        ("element moved", "document.getElementById('h').after(document.getElementById('save'))", Subtrees),
        (
            "most of the main element replaced",
            "document.querySelector('main').insertAdjacentHTML('afterbegin', '<h2>New</h2><button>Only</button>')",
            Subtrees,
        ),
        ("title changed", "document.title = 'Inc 2'", Full),
        (
            "style added",
            "const s = document.createElement('style'); s.textContent = 'b { display: none }'; document.head.appendChild(s)",
            Full,
        ),
        ("indeterminate (script-set state)", "document.getElementById('cb').indeterminate = true", Full),
        // Changes no mutation shows: the snapshot kept from the last read must not stand for the new one.
        (
            "a stylesheet adopted by script hides the counter",
            "const sheet = new CSSStyleSheet(); sheet.replaceSync('#count { display: none }'); document.adoptedStyleSheets = [sheet]",
            Expect::Any,
        ),
        (
            "a rule inserted into it hides the details",
            "document.adoptedStyleSheets[0].insertRule('#det { display: none }', 0)",
            Expect::Any,
        ),
        ("scrolled", "window.scrollTo(0, 300)", Expect::Any),
        ("value set by script again", "document.getElementById('mail').value = 'c@d.e'", Expect::Any),
        ("unchecked by script", "document.getElementById('cb').checked = false", Expect::Any),
    ];
    for (what, script, expect) in cases {
        check(&page, what, script, *expect).await;
    }
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unchanged_page_is_observed_from_its_kept_snapshot() {
    // The DOM snapshot carries every `<style>`'s text (360 KB on a Mantine app): while nothing changed, the one kept
    // from the last read stands for it, and what it says is what a fresh read says.
    let page = Page::open(PAGE).await;
    let first = settle(&page).await;
    let before = stats();
    let again = page.observe().await;
    assert!(stats().snapshots_kept > before.snapshots_kept, "the kept snapshot was not used: {:?}", stats());
    assert_eq!(again.untrusted_content, first.untrusted_content);
    // A change is seen at once.
    page.run("document.getElementById('h').textContent = 'Kept no more'").await;
    let changed = page.observe().await;
    assert!(changed.untrusted_content.contains("Kept no more"), "{}", changed.untrusted_content);
    page.close().await;
}

/// Observes `page` five times while something on it moves; returns (trees read whole, reads that used the kept
/// snapshot) over those reads, checking that what it shows does not change.
async fn observe_while_moving(page: &Page) -> (u64, u64) {
    // The animation starts at the page's next frame (its `animationstart` is a change like any).
    tokio::time::sleep(Duration::from_millis(100)).await;
    let first = page.observe().await;
    let (mut whole, mut kept) = (0, 0);
    for _ in 0..5 {
        // Time for the read that follows an observation (it caches what it read) to land.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let before = stats();
        let again = page.observe().await;
        whole += stats().full - before.full;
        kept += u64::from(stats().snapshots_kept > before.snapshots_kept);
        assert_eq!(again.untrusted_content, first.untrusted_content, "what moves carries no text");
    }
    (whole, kept)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_moves_is_not_read_whole_at_every_observation() {
    // A CSS spinner turning for as long as the page shows it, then a panel sliding in for a while (Element Plus's
    // tags zoom in for the first 300 ms of the people app): every DOM snapshot had their boxes elsewhere, so the page
    // state read after the trees never matched the one read before them, the trees were never cached, and every
    // observation read them whole (the people app: 25-35 ms a read while its tags zoomed in, 3 ms after).
    let page = Page::open(PAGE).await;
    page.run(
        "const s = document.createElement('style'); \
         s.textContent = '@keyframes spin { to { transform: rotate(360deg) } } \
           @keyframes slide { from { transform: translateX(-40px) } to { transform: translateX(0) } } \
           .spinner { width: 16px; height: 16px; border: 2px solid #36c; animation: spin 1s linear infinite } \
           .sliding { width: 40px; height: 8px; background: #36c; animation: slide 30s linear }'; \
         document.head.append(s); \
         const spinner = document.createElement('div'); spinner.className = 'spinner'; spinner.id = 'spinner'; \
         document.querySelector('main').prepend(spinner);",
    )
    .await;
    let (whole, kept) = observe_while_moving(&page).await;
    assert_eq!(whole, 0, "read whole while only the spinner turned: {:?}", stats());
    // A loop that only turns it changes nothing the snapshot is read for: the one kept stands for a new one.
    assert!(kept > 0, "the DOM snapshot was taken afresh at every read while only the spinner turned: {:?}", stats());

    page.run(
        "document.getElementById('spinner').remove(); const p = document.createElement('div'); \
         p.className = 'sliding'; document.querySelector('main').prepend(p);",
    )
    .await;
    let (whole, kept) = observe_while_moving(&page).await;
    // A finite animation may change what is shown (a popup zooming in has no box yet): the snapshot is taken afresh,
    // and the trees read meanwhile are the base of a refresh.
    assert_eq!(kept, 0, "a finite animation keeps no snapshot: {:?}", stats());
    assert_eq!(whole, 0, "read whole while only the panel slid: {:?}", stats());

    // What the page says is still read: a change while it moves is seen.
    page.run("document.getElementById('h').textContent = 'Orders (loading)'").await;
    let changed = page.observe().await;
    assert!(changed.untrusted_content.contains("Orders (loading)"), "{}", changed.untrusted_content);
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_refresh_by_subtree_too() {
    let page = Page::open("/iframes.html").await;
    let o = check(
        &page,
        "text in a same-origin frame",
        "document.querySelector('iframe').contentDocument.body.querySelector('p').textContent = 'Changed inner'",
        Expect::Subtrees,
    )
    .await;
    assert!(o.untrusted_content.contains("Changed inner"), "{}", o.untrusted_content);
    check(&page, "text in the main frame", "document.querySelector('h1').textContent = 'Frames'", Expect::Subtrees)
        .await;
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_page_refreshes_one_changed_element() {
    // The refresh by subtrees of Chromium's tree is what is tested: not the tree built from the DOM, which a page
    // this large in that subset gets by default (tests/dom_tree.rs).
    env().provider.set_dom_first(browserd_chromium::DomFirst::Never);
    let page = Page::open("/gen/elements?n=1000").await;
    let o = check(
        &page,
        "one button of 1000 elements",
        "document.querySelector('main button').textContent = 'Renamed'",
        Expect::Subtrees,
    )
    .await;
    assert!(o.untrusted_content.contains("button \"Renamed\""), "{}", o.untrusted_content);
    page.close().await;
}

/// A seeded series of random changes (text, attributes, visibility, insertions, removals, moves, values, focus) on
/// a generated page: after every one the incremental observation equals the whole-tree one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_changes_match_whole_tree_reads() {
    let page = Page::open("/gen/elements?n=100").await;
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    const OPS: &[&str] = &[
        "e.textContent = 'Changed ' + K",
        "e.setAttribute('aria-label', 'Label ' + K)",
        "e.hidden = !e.hidden",
        "e.setAttribute('aria-hidden', e.getAttribute('aria-hidden') === 'true' ? 'false' : 'true')",
        "e.style.display = e.style.display === 'none' ? '' : 'none'",
        "const n = document.createElement('button'); n.textContent = 'Added ' + K; e.appendChild(n)",
        "if (e.parentElement && e.parentElement !== document.body) e.remove()",
        "const t = all[(K * 7) % all.length]; if (!t.contains(e) && !e.contains(t)) t.after(e)",
        "if ('value' in e && e.tagName !== 'BUTTON') e.value = 'v' + K",
        "if ('checked' in e) e.checked = !e.checked",
        "if ('disabled' in e) e.disabled = !e.disabled",
        "e.setAttribute('role', ['button', 'status', 'note', 'link'][K % 4])",
        "if (e.focus) e.focus()",
        "e.setAttribute('tabindex', '0')",
        "e.insertAdjacentHTML('beforeend', '<span>more ' + K + '</span>')",
    ];
    let mut incremental = 0;
    for step in 0..60 {
        let op = OPS[(next() % OPS.len() as u64) as usize];
        let k = next() % 10_000;
        let script = format!(
            "(() => {{ const all = document.querySelectorAll('main *'); if (!all.length) return; const K = {k}; \
             const e = all[K % all.length]; {op}; }})()"
        );
        let before = stats();
        check(&page, &format!("step {step}: {op} (K={k})"), &script, Expect::Any).await;
        if stats().subtrees > before.subtrees {
            incremental += 1;
        }
    }
    assert!(incremental >= 30, "most random changes are refreshed by subtree: {incremental} of 60");
    page.close().await;
}

/// What no DOM snapshot or page-state signature shows — a custom element's `ElementInternals` states, focus moving
/// inside a closed shadow root — is read again at every observation, cached trees or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn states_the_snapshot_cannot_see_are_read_every_time() {
    let page = Page::open(
        "data:text/html,<title>Unseen</title><p>Custom widgets</p>
         <my-check id=c tabindex=0>Agree</my-check><div id=h></div>
         <script>
         customElements.define('my-check', class extends HTMLElement {
           constructor() { super(); this.i = this.attachInternals(); this.i.role = 'checkbox'; this.i.ariaChecked = 'false'; }
         });
         const root = document.getElementById('h').attachShadow({mode: 'closed'});
         root.innerHTML = '<button id=a>First</button><button id=b>Second</button>';
         window.focusIn = (id) => root.getElementById(id).focus();
         </script>",
    )
    .await;
    let first = page.observe().await;
    assert!(first.untrusted_content.contains("checkbox \"Agree\" unchecked"), "{}", first.untrusted_content);
    // Cached trees for this state (an observation that reads nothing whole).
    let _ = page.observe().await;
    let o =
        check(&page, "ElementInternals state", "document.getElementById('c').i.ariaChecked = 'true'", Expect::Subtrees)
            .await;
    assert!(o.untrusted_content.contains("checkbox \"Agree\" checked"), "{}", o.untrusted_content);
    let o = check(&page, "focus into a closed shadow root", "focusIn('a')", Expect::Any).await;
    let focused = |o: &Observation, name: &str| {
        let line = o
            .untrusted_content
            .lines()
            .find(|l| l.contains(&format!("button \"{name}\"")))
            .expect("the button is shown");
        o.focused.as_ref().is_some_and(|f| browserd_protocol::line_ref(line) == Some(f.as_str()))
    };
    assert!(focused(&o, "First"), "{o:#?}");
    let o = check(&page, "focus moved inside the closed shadow root", "focusIn('b')", Expect::Subtrees).await;
    assert!(focused(&o, "Second"), "{o:#?}");
    page.close().await;
}
