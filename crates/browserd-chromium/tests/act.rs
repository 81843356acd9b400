//! Real-Chromium action tests: every action kind, the effect summary, expectations, and each result code.
mod common;

use browserd_protocol::{ActParams, ActionKind, Dispatch, Expectation, Outcome, Postcondition, ScrollDirection};
use common::{Page, env, ref_of};

fn text(t: &str) -> Expectation {
    Expectation::TextPresent { text: t.into() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn click_with_expectation_reports_effects() {
    let page = Page::open("/duplicates.html").await;
    let o = page.observe().await;
    let del = ref_of(&o, "button \"Delete\" (in \"Team lunch\"");
    let mut p = ActParams::new(ActionKind::Click).target(&del).expect(text("Deleted: Inbox / Team lunch"));
    p.observe = true;
    let r = page.act(p).await;
    let fresh = r.observation.as_ref().expect("a fresh observation was asked for");
    assert!(
        !fresh.untrusted_content.lines().any(|l| l.trim() == "Team lunch" || l.contains("(in \"Team lunch\")"))
            && fresh.untrusted_content.contains("Old contract"),
        "{}",
        fresh.untrusted_content
    );
    assert_eq!(
        (r.outcome, r.postcondition, r.code.as_deref()),
        (Outcome::Succeeded, Postcondition::Passed, None),
        "{r:#?}"
    );
    assert_eq!(r.dispatch, Dispatch::Observed);
    assert!(r.effects.disappeared.iter().any(|d| d.as_str() == del), "{r:#?}");
    assert!(r.timings.dispatch > 0.0 && r.timings.actionability > 0.0);
    assert_eq!(r.trace_id, "trace-test");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expectation_failed_is_separate_from_the_action_outcome() {
    let page = Page::open("/duplicates.html").await;
    let o = page.observe().await;
    let settings = ref_of(&o, "button \"Settings\"");
    let r = page
        .act(
            ActParams::new(ActionKind::Click).target(&settings).expect(text("this text never appears")).timeout_ms(600),
        )
        .await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert_eq!(r.postcondition, Postcondition::Failed);
    assert_eq!(r.code.as_deref(), Some("EXPECTATION_FAILED"));
    assert!(!r.expectations[0].passed);
    // An action that fails (not editable) is a failed outcome, not an expectation failure.
    let page2 = Page::open("/form.html").await;
    let o = page2.observe().await;
    let ro = ref_of(&o, "textbox \"Account ID\"");
    let r = page2.act(ActParams::new(ActionKind::Fill).target(&ro).value("x")).await;
    assert_eq!(
        (r.outcome, r.code.as_deref(), r.dispatch),
        (Outcome::Failed, Some("NOT_ACTIONABLE"), Dispatch::NotDispatched),
        "{r:#?}"
    );
    assert!(r.message.unwrap().contains("read-only"));
    page.close().await;
    page2.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn covered_target_names_the_covering_element_as_a_ref() {
    let page = Page::open("/overlay.html").await;
    let o = page.observe().await;
    let sub = ref_of(&o, "button \"Subscribe\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&sub).timeout_ms(1500)).await;
    assert_eq!(
        (r.outcome, r.code.as_deref(), r.dispatch),
        (Outcome::Failed, Some("NOT_ACTIONABLE"), Dispatch::NotDispatched),
        "{r:#?}"
    );
    let cover = r.covering.clone().expect("the covering element");
    assert!(cover.name.contains("Cookie consent") || cover.name.contains("cookies"), "{cover:?}");
    assert!(r.message.as_deref().unwrap().contains(cover.node.as_str()));
    // Nothing reached the page.
    let o2 = page.observe().await;
    assert!(o2.untrusted_content.contains("Clicked: none"));
    // Dismiss the banner, then the click goes through.
    let accept = ref_of(&o, "button \"Accept\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&accept).expect(text("Clicked: Accept"))).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Click).target(&sub).expect(text("Clicked: Subscribe"))).await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ambiguous_and_unknown_targets_fail_before_dispatch() {
    let page = Page::open("/duplicates.html").await;
    page.observe().await;
    let r = page.act(ActParams::new(ActionKind::Click).target("button \"Delete\"")).await;
    assert_eq!(r.code.as_deref(), Some("AMBIGUOUS_TARGET"), "{r:#?}");
    assert_eq!(r.candidates.len(), 5);
    assert!(r.candidates.iter().any(|c| c.contains("Old contract")));
    let r =
        page.act(ActParams::new(ActionKind::Click).target("link \"Settings\"").expect(text("opened by: link"))).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Click).target("e99999")).await;
    assert_eq!(r.code.as_deref(), Some("TARGET_NOT_FOUND"));
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controlled_form_fill_type_select_check() {
    let page = Page::open("/form.html").await;
    let o = page.observe().await;
    let name = ref_of(&o, "textbox \"Full name\"");
    let email = ref_of(&o, "textbox \"Email\"");
    let r = page.act(ActParams::new(ActionKind::Fill).target(&name).value("Ada")).await;
    assert_eq!((r.outcome, r.dispatch), (Outcome::Succeeded, Dispatch::Observed), "{r:#?}");
    assert_eq!(r.effects.value.as_deref(), Some("Ada"));
    let r = page.act(ActParams::new(ActionKind::Type).target(&name).value(" Lovelace")).await;
    assert_eq!(r.effects.value.as_deref(), Some("Ada Lovelace"), "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Fill).target(&name).value("Grace")).await;
    assert_eq!(r.effects.value.as_deref(), Some("Grace"), "fill replaces: {r:#?}");
    let r = page
        .act(
            ActParams::new(ActionKind::Fill)
                .target(&email)
                .value("a@b.c")
                .expect(Expectation::Value { target: email.clone().into(), equals: "a@b.c".into() }),
        )
        .await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    // maxlength is honoured by real typing and reported.
    let code = ref_of(&o, "textbox \"Code\"");
    let r = page.act(ActParams::new(ActionKind::Fill).target(&code).value("12345678")).await;
    assert_eq!((r.outcome, r.code.as_deref()), (Outcome::Failed, Some("INPUT_NOT_APPLIED")), "{r:#?}");
    assert_eq!(r.effects.value.as_deref(), Some("123456"));
    // Disabled field.
    let referral = ref_of(&o, "textbox \"Referral\"");
    let r = page.act(ActParams::new(ActionKind::Fill).target(&referral).value("x").timeout_ms(500)).await;
    assert_eq!(r.code.as_deref(), Some("NOT_ACTIONABLE"), "{r:#?}");
    // Select by label and by value.
    let country = ref_of(&o, "combobox \"Country\"");
    let r = page.act(ActParams::new(ActionKind::Select).target(&country).value("France")).await;
    assert_eq!((r.outcome, r.effects.value.as_deref()), (Outcome::Succeeded, Some("fr")), "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Select).target(&country).value("jp")).await;
    assert_eq!(r.effects.value.as_deref(), Some("jp"));
    let r = page.act(ActParams::new(ActionKind::Select).target(&country).value("Atlantis")).await;
    assert_eq!(r.code.as_deref(), Some("TARGET_NOT_FOUND"));
    // Check / uncheck / radio.
    let news = ref_of(&o, "checkbox \"Subscribe to newsletter\"");
    let r = page
        .act(
            ActParams::new(ActionKind::Check)
                .target(&news)
                .expect(Expectation::State { target: news.clone().into(), state: "checked".into() }),
        )
        .await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Check).target(&news)).await;
    assert_eq!(r.dispatch, Dispatch::NotDispatched, "already checked: {r:#?}");
    let r = page.act(ActParams::new(ActionKind::Uncheck).target(&news)).await;
    assert_eq!((r.outcome, r.dispatch), (Outcome::Succeeded, Dispatch::Observed), "{r:#?}");
    let pro = ref_of(&o, "radio \"Pro\"");
    let r = page.act(ActParams::new(ActionKind::Check).target(&pro)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    // Submit with Enter from a field; the live result shows the controlled state.
    let r = page
        .act(ActParams::new(ActionKind::Press).target(&name).value("Enter").expect(text("\"country\": \"jp\"")))
        .await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    assert!(r.effects.announced.iter().any(|a| a.contains("Grace")), "live region text is captured: {r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chinese_text_goes_through_ime_composition() {
    let page = Page::open("/ime.html").await;
    let o = page.observe().await;
    let zh = ref_of(&o, "textbox \"Chinese text\"");
    let r = page.act(ActParams::new(ActionKind::Fill).target(&zh).value("你好，世界 ok")).await;
    assert_eq!((r.outcome, r.effects.value.as_deref()), (Outcome::Succeeded, Some("你好，世界 ok")), "{r:#?}");
    let o = page.observe().await;
    assert!(
        o.untrusted_content.contains("compositionstart: 1") && o.untrusted_content.contains("compositionend: 1"),
        "{}",
        o.untrusted_content
    );
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contenteditable_and_key_chords() {
    let page = Page::open("/contenteditable.html").await;
    let o = page.observe().await;
    let ed = ref_of(&o, "textbox \"Editor\"");
    let r = page.act(ActParams::new(ActionKind::Fill).target(&ed).value("Bonjour")).await;
    assert_eq!((r.outcome, r.effects.value.as_deref()), (Outcome::Succeeded, Some("Bonjour")), "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Type).target(&ed).value(" 世界")).await;
    assert_eq!(r.effects.value.as_deref(), Some("Bonjour 世界"), "{r:#?}");
    // Control+A then Backspace clears it through real key events.
    let r = page
        .act(ActParams::new(ActionKind::Press).target(&ed).value("Control+A Backspace").expect(text("Mirror: ")))
        .await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let o = page.observe().await;
    assert!(!o.untrusted_content.contains("Bonjour"), "{}", o.untrusted_content);
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iframe_and_oopif_clicks_land_in_the_right_frame() {
    let page = Page::open("/iframes.html").await;
    let o = page.observe().await;
    let inner: Vec<String> = o
        .untrusted_content
        .lines()
        .filter(|l| l.contains("button \"Inner button\""))
        .map(|l| browserd_protocol::line_ref(l).expect("a ref line").to_owned())
        .collect();
    for r in &inner {
        let res = page.act(ActParams::new(ActionKind::Click).target(r)).await;
        assert_eq!((res.outcome, res.code.as_deref()), (Outcome::Succeeded, None), "{res:#?}");
    }
    let input: Vec<String> = o
        .untrusted_content
        .lines()
        .filter(|l| l.contains("textbox \"Inner input\""))
        .map(|l| browserd_protocol::line_ref(l).expect("a ref line").to_owned())
        .collect();
    for r in &input {
        let res = page.act(ActParams::new(ActionKind::Fill).target(r).value("inside")).await;
        assert_eq!(res.effects.value.as_deref(), Some("inside"), "{res:#?}");
    }
    let o = page.observe().await;
    assert_eq!(o.untrusted_content.matches("Inner clicks: 1").count(), 2, "{}", o.untrusted_content);
    // Text expectations see into the same-origin frame and the out-of-process one.
    for t in ["Inner frame: same-origin", "Inner frame: cross-origin"] {
        let r = page.act(ActParams::new(ActionKind::Wait).expect(text(t)).timeout_ms(2000)).await;
        assert_eq!(r.postcondition, Postcondition::Passed, "{t}: {r:#?}");
    }
    let outer = ref_of(&o, "button \"Outer button\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&outer).expect(text("Outer clicks: 1"))).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shadow_dom_and_clickables_are_operable() {
    let page = Page::open("/shadow.html").await;
    let o = page.observe().await;
    let nested = ref_of(&o, "button \"Nested button\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&nested)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let input = ref_of(&o, "textbox \"Shadow input\"");
    let r = page.act(ActParams::new(ActionKind::Fill).target(&input).value("deep")).await;
    assert_eq!(r.effects.value.as_deref(), Some("deep"), "{r:#?}");
    page.close().await;

    let page = Page::open("/clickables.html").await;
    let o = page.observe().await;
    let card = ref_of(&o, "clickable \"Open the billing card\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&card).expect(text("Activated: "))).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let docs = ref_of(&o, "treeitem \"Documents\"");
    let r = page
        .act(
            ActParams::new(ActionKind::Click)
                .target(&docs)
                .expect(Expectation::State { target: docs.clone().into(), state: "expanded".into() }),
        )
        .await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    let menu = ref_of(&o, "button \"Actions\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&menu)).await;
    assert!(!r.effects.appeared.is_empty(), "menu items appear in the effects: {r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hover_dblclick_and_canvas() {
    let html = "data:text/html,<title>h</title><button onmouseover=\"document.title='hovered'\" ondblclick=\"this.textContent='double'\">Target</button>";
    let page = Page::open(html).await;
    let o = page.observe().await;
    let t = ref_of(&o, "button \"Target\"");
    let r = page
        .act(ActParams::new(ActionKind::Hover).target(&t).expect(Expectation::Appears { role: None, name: None }))
        .await;
    assert_eq!(r.outcome, Outcome::Succeeded);
    let o = page.observe().await;
    assert_eq!(o.title, "hovered");
    let r = page
        .act(
            ActParams::new(ActionKind::Dblclick)
                .target(&t)
                .expect(Expectation::Appears { role: Some("button".into()), name: Some("double".into()) }),
        )
        .await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    page.close().await;

    let page = Page::open("/canvas.html").await;
    let o = page.observe().await;
    let board = ref_of(&o, "\"Drawing board\"");
    let r =
        page.act(ActParams::new(ActionKind::Click).target(&board).expect(text("Clicks: 1, last: x=200 y=150"))).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dialogs_block_input_until_handled() {
    let page = Page::open("/dialogs.html").await;
    let o = page.observe().await;
    let confirm = ref_of(&o, "button \"Show confirm\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&confirm).expect(Expectation::Dialog)).await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    assert_eq!(r.effects.dialog.as_ref().unwrap().message, "Proceed with the order?");
    let obs = page.observe().await;
    assert_eq!(obs.dialog.as_ref().unwrap().kind, "confirm");
    assert!(
        obs.untrusted_content.contains("confirm dialog \"Proceed with the order?\" blocks the page"),
        "{}",
        obs.untrusted_content
    );
    let r = page.act(ActParams::new(ActionKind::Click).target(&confirm)).await;
    assert_eq!((r.code.as_deref(), r.dispatch), (Some("DIALOG_BLOCKING"), Dispatch::NotDispatched), "{r:#?}");
    let mut d = ActParams::new(ActionKind::Dialog).expect(text("confirm dismissed"));
    d.accept = Some(false);
    let r = page.act(d).await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    let prompt = ref_of(&o, "button \"Show prompt\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&prompt)).await;
    assert_eq!(r.effects.dialog.as_ref().unwrap().default_prompt.as_deref(), Some("Ada"), "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Dialog).value("Grace").expect(text("answered \"Grace\""))).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Dialog)).await;
    assert_eq!(r.code.as_deref(), Some("INVALID_PARAMS"));
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn popups_are_reported_as_new_tabs() {
    let page = Page::open("/popup.html").await;
    let o = page.observe().await;
    let link = ref_of(&o, "link \"Open in new tab\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&link).expect(Expectation::NewTab)).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    assert_eq!(r.effects.tabs_opened.len(), 1);
    let win = ref_of(&o, "button \"Open window\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&win).expect(Expectation::NewTab)).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toast_text_is_captured_in_the_settle_window() {
    let page = Page::open("/toast.html").await;
    let o = page.observe().await;
    let save = ref_of(&o, "button \"Save\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&save)).await;
    assert!(r.effects.announced.iter().any(|a| a == "Saved successfully"), "{r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scroll_page_and_virtual_list_until_text() {
    let page = Page::open("/virtual-list.html").await;
    let o = page.observe().await;
    let list = ref_of(&o, "\"Virtual rows\"");
    let mut p = ActParams::new(ActionKind::Scroll).target(&list);
    p.until_text = Some("Row 300".into());
    let r = page.act(p).await;
    assert_eq!((r.outcome, r.code.as_deref()), (Outcome::Succeeded, None), "{r:#?}");
    assert!(r.effects.appeared.iter().any(|l| l.contains("Open row 300")), "{r:#?}");
    // The list renders its rows again on every scroll event, and the last one of the scroll may come after the
    // observation: the ref is then stale, said so (`STALE_TARGET`, nothing clicked), and a new observation's works.
    let mut r = None;
    for _ in 0..3 {
        let o = page.observe().await;
        let open = ref_of(&o, "button \"Open row 300\"");
        let got = page.act(ActParams::new(ActionKind::Click).target(&open).expect(text("Selected: Row 300"))).await;
        if got.code.as_deref() == Some("STALE_TARGET") {
            assert_eq!(got.dispatch, Dispatch::NotDispatched, "{got:#?}");
            continue;
        }
        r = Some(got);
        break;
    }
    let r = r.expect("a fresh ref clicks the row's button");
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    page.close().await;

    let page = Page::open("/gen/elements?n=1000").await;
    let mut p = ActParams::new(ActionKind::Scroll);
    p.direction = Some(ScrollDirection::Down);
    let r = page.act(p).await;
    assert_eq!((r.outcome, r.dispatch), (Outcome::Succeeded, Dispatch::Dispatched), "{r:#?}");
    assert!(r.message.is_none(), "{r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_history_and_deadline() {
    let page = Page::open("/form.html").await;
    let r = page
        .act(
            ActParams::new(ActionKind::Navigate)
                .value(env().site.url("/overlay.html"))
                .expect(Expectation::Url { contains: "overlay".into() }),
        )
        .await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    assert!(r.effects.navigated.as_deref().unwrap().ends_with("/overlay.html"));
    let r = page.act(ActParams::new(ActionKind::Back).expect(Expectation::Url { contains: "form".into() })).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Forward).expect(Expectation::Url { contains: "overlay".into() })).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Reload).expect(Expectation::Navigated)).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    // A server that answers after the deadline: the navigation's outcome is unknown.
    let r = page
        .act(ActParams::new(ActionKind::Navigate).value(env().site.url("/slow.html?delay=3000")).timeout_ms(400))
        .await;
    assert_eq!(
        (r.outcome, r.code.as_deref(), r.dispatch),
        (Outcome::Unknown, Some("DEADLINE_EXCEEDED"), Dispatch::Dispatched),
        "{r:#?}"
    );
    let r = page.act(ActParams::new(ActionKind::Navigate).value("http://127.0.0.1:1/").timeout_ms(5000)).await;
    assert_eq!((r.outcome, r.code.as_deref()), (Outcome::Failed, Some("NAVIGATION_FAILED")), "{r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_waits_for_its_own_requests_not_for_a_pages_polls_or_a_new_pages_long_poll() {
    // The page polls every 200 ms and keeps a long-poll open: a click on "Ping" answers at once, with its effect,
    // nothing pending (the long-poll began before the input; a poll that began since ends at once).
    let page = Page::open("/never-idle.html").await;
    let o = page.observe().await;
    let r = page.act(ActParams::new(ActionKind::Click).target(ref_of(&o, "button \"Ping\""))).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(r.effects.changed.iter().any(|c| c == "Pinged: yes") && r.effects.pending.is_empty(), "{r:#?}");
    page.close().await;
    // A link to that page: the click waits for the load, not for the new page's long-poll, which is no answer to it.
    let html = format!(
        "data:text/html,<title>l</title><a href='{}'>Open the busy page</a>",
        env().site.url("/never-idle.html")
    );
    let page = Page::open(&html).await;
    let o = page.observe().await;
    let r = page.act(ActParams::new(ActionKind::Click).target(ref_of(&o, "link \"Open the busy page\""))).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(r.effects.navigated.as_deref().is_some_and(|u| u.ends_with("/never-idle.html")), "{r:#?}");
    assert!(r.effects.pending.is_empty(), "the new page's long-poll is not the click's: {r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_action_waits_for_an_expectation() {
    let page = Page::open("/never-idle.html").await;
    let r = page.act(ActParams::new(ActionKind::Wait).expect(text("Polling: active")).timeout_ms(5000)).await;
    assert_eq!(
        (r.outcome, r.postcondition, r.dispatch),
        (Outcome::Succeeded, Postcondition::Passed, Dispatch::NotDispatched),
        "{r:#?}"
    );
    let r = page.act(ActParams::new(ActionKind::Wait).expect(text("never there")).timeout_ms(300)).await;
    assert_eq!((r.postcondition, r.code.as_deref()), (Postcondition::Failed, Some("EXPECTATION_FAILED")), "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Wait)).await;
    assert_eq!(r.code.as_deref(), Some("INVALID_PARAMS"));
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_only_from_authorised_files_and_download_is_reported() {
    let e = env();
    let page = Page::open("/upload.html").await;
    let o = page.observe().await;
    let input = ref_of(&o, "Document");
    let file = e.upload_dir.join("report.txt");
    std::fs::write(&file, b"hello upload").unwrap();
    let r = page
        .act(
            ActParams::new(ActionKind::Upload)
                .target(&input)
                .value(file.display().to_string())
                .expect(text("report.txt (12 bytes)")),
        )
        .await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    let outside = std::env::temp_dir().join(format!("browserd-outside-{}.txt", std::process::id()));
    std::fs::write(&outside, b"secret").unwrap();
    let r = page.act(ActParams::new(ActionKind::Upload).target(&input).value(outside.display().to_string())).await;
    assert_eq!((r.code.as_deref(), r.dispatch), (Some("POLICY_DENIED"), Dispatch::NotDispatched), "{r:#?}");
    std::fs::remove_file(outside).unwrap();
    page.close().await;

    let page = Page::open("/download.html").await;
    let o = page.observe().await;
    let link = ref_of(&o, "link \"Download report.csv\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&link).expect(Expectation::DownloadFinished)).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    assert_eq!(r.effects.downloads[0].file_name, "report.csv");
    assert_eq!(r.effects.downloads[0].state, "completed");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drag_moves_between_refs() {
    let html2 = "data:text/html,<title>d</title><div id=a tabindex=0 draggable=true style='width:80px;height:40px;background:%23ccc'>Card</div><div id=b tabindex=0 style='width:200px;height:80px;margin-top:40px;background:%23eee'>Bin</div><p id=s>none</p><script>a.ondragstart=e=>e.dataTransfer.setData('text/plain','card');b.ondragover=e=>e.preventDefault();b.ondrop=e=>{e.preventDefault();s.textContent='dropped '+e.dataTransfer.getData('text/plain')}</script>";
    let page = Page::open(html2).await;
    let o = page.observe().await;
    let a = ref_of(&o, "\"Card\"");
    let b = ref_of(&o, "\"Bin\"");
    let mut p = ActParams::new(ActionKind::Drag).target(&a).expect(text("dropped card"));
    p.to = Some(b.into());
    let r = page.act(p).await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_ids_deduplicate_and_never_replay() {
    let page = Page::open("/toast.html").await;
    let o = page.observe().await;
    let save = ref_of(&o, "button \"Save\"");
    let mut p = ActParams::new(ActionKind::Click).target(&save);
    p.request_id = Some("req-1".into());
    let first = page.act(p.clone()).await;
    assert_eq!(first.outcome, Outcome::Succeeded);
    let again = page.act(p.clone()).await;
    assert!(again.deduplicated);
    assert_eq!(again.trace_id, first.trace_id);
    let o = page.observe().await;
    assert!(o.untrusted_content.contains("Saves: 1"), "the click was not replayed: {}", o.untrusted_content);
    let mut other = p.clone();
    other.action = ActionKind::Dblclick;
    let r = page.act(other).await;
    assert_eq!(r.code.as_deref(), Some("PAYLOAD_MISMATCH"));
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_errors_are_effects() {
    let html = "data:text/html,<title>c</title><button onclick=\"console.error('boom'); setTimeout(() => { throw new Error('bad thing') })\">Err</button>";
    let page = Page::open(html).await;
    let o = page.observe().await;
    let b = ref_of(&o, "button \"Err\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&b)).await;
    assert!(r.effects.console_errors.iter().any(|e| e.contains("boom")), "{r:#?}");
    assert!(r.effects.console_errors.iter().any(|e| e.contains("bad thing")), "{r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_into_a_background_tab_brings_it_forward_and_works() {
    let a = Page::open("/dialogs.html").await;
    let o = a.observe().await;
    let b = Page::open("/form.html").await;
    b.observe().await;
    let alert = ref_of(&o, "button \"Show alert\"");
    let r = a.act(ActParams::new(ActionKind::Click).target(&alert).expect(Expectation::Dialog)).await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    let r = a.act(ActParams::new(ActionKind::Dialog).expect(text("alert closed"))).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_ends_a_running_action() {
    use browserd_core::provider::Provider;
    let page = Page::open("/toast.html").await;
    let c = common::ctx();
    let cancel = c.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let r = env()
        .provider
        .act(&c, page.tab, &ActParams::new(ActionKind::Wait).expect(text("never there")).timeout_ms(10_000))
        .await
        .unwrap();
    assert_eq!((r.outcome, r.code.as_deref()), (Outcome::Cancelled, Some("CANCELLED")), "{r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_scripts_can_neither_see_nor_break_the_effect_tracker() {
    // The page replaces `Array.prototype.push`, `Element.prototype.getAttribute`, `String.prototype.includes`, the
    // `value` of inputs, `MutationObserver` and `performance.now`, and reports any global naming browserd: the
    // tracker, text expectations and value read-back live in an isolated world.
    let page = Page::open("/hostile.html").await;
    let o = page.observe().await;
    assert!(o.untrusted_content.contains("Probe: clean"), "the page sees no helper: {}", o.untrusted_content);
    let save = ref_of(&o, "button \"Save draft\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&save)).await;
    assert_eq!((r.outcome, r.dispatch), (Outcome::Succeeded, Dispatch::Observed), "{r:#?}");
    assert!(r.effects.announced.iter().any(|a| a == "Draft saved"), "toast text is captured: {r:#?}");
    let o = page.observe().await;
    assert!(
        o.untrusted_content.contains("Probe: clean") && o.untrusted_content.contains("Stolen: none"),
        "{}",
        o.untrusted_content
    );
    // Text expectations are read out of the page's reach too: its `String.prototype.includes` says yes to anything.
    let r =
        page.act(ActParams::new(ActionKind::Wait).expect(text("text that is not on the page")).timeout_ms(300)).await;
    assert_eq!((r.postcondition, r.code.as_deref()), (Postcondition::Failed, Some("EXPECTATION_FAILED")), "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Wait).expect(text("Stolen: none"))).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    // So are field values: the page makes every input read "forged".
    let title = ref_of(&o, "textbox \"Draft title\"");
    let r = page
        .act(
            ActParams::new(ActionKind::Fill)
                .target(&title)
                .value("Quarterly report")
                .expect(Expectation::Value { target: title.clone().into(), equals: "Quarterly report".into() }),
        )
        .await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    assert_eq!(r.effects.value.as_deref(), Some("Quarterly report"), "{r:#?}");
    // A new document gets its own tracker world, still out of the page's reach.
    let r = page.act(ActParams::new(ActionKind::Reload).expect(Expectation::Navigated)).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    let o = page.observe().await;
    let save = ref_of(&o, "button \"Save draft\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&save)).await;
    assert!(r.effects.announced.iter().any(|a| a == "Draft saved"), "after a reload: {r:#?}");
    let o = page.observe().await;
    assert!(
        o.untrusted_content.contains("Probe: clean") && o.untrusted_content.contains("Stolen: none"),
        "{}",
        o.untrusted_content
    );
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fading_cover_is_waited_for_and_a_persistent_one_is_reported() {
    let page = Page::open("/transient-cover.html").await;
    let o = page.observe().await;
    let notice = ref_of(&o, "button \"Show notice\"");
    let target = ref_of(&o, "button \"Continue\"");
    // A notice covers the page and fades out: the click waits for it and lands.
    let r = page.act(ActParams::new(ActionKind::Click).target(&notice)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Click).target(&target).expect(text("Continued: 1"))).await;
    assert_eq!(
        (r.outcome, r.postcondition, r.code.as_deref()),
        (Outcome::Succeeded, Postcondition::Passed, None),
        "{r:#?}"
    );
    let o2 = page.observe().await;
    assert!(
        o2.untrusted_content.contains("Notice: gone"),
        "the click waited for the notice, never hit it: {}",
        o2.untrusted_content
    );
    // The caller's deadline bounds the wait: a cover still fading when it comes is reported, not clicked through.
    let r = page.act(ActParams::new(ActionKind::Click).target(&notice)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Click).target(&target).timeout_ms(300)).await;
    assert_eq!(
        (r.outcome, r.code.as_deref(), r.dispatch),
        (Outcome::Failed, Some("NOT_ACTIONABLE"), Dispatch::NotDispatched),
        "{r:#?}"
    );
    assert!(r.covering.is_some(), "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Wait).expect(text("Notice: gone"))).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    // A banner that stays: NOT_ACTIONABLE, naming it as a ref with its role and name; nothing reaches the page.
    let banner = ref_of(&o, "button \"Show banner\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&banner)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Click).target(&target)).await;
    assert_eq!(
        (r.outcome, r.code.as_deref(), r.dispatch),
        (Outcome::Failed, Some("NOT_ACTIONABLE"), Dispatch::NotDispatched),
        "{r:#?}"
    );
    let cover = r.covering.clone().expect("the covering element");
    assert_eq!((cover.role.as_str(), cover.name.as_str()), ("dialog", "Maintenance notice"), "{cover:?}");
    assert!(r.message.as_deref().unwrap().contains(cover.node.as_str()), "{r:#?}");
    let o = page.observe().await;
    assert!(o.untrusted_content.contains("Continued: 1"), "{}", o.untrusted_content);
    // Dismiss the banner, then the click goes through.
    let o = page.observe().await;
    let dismiss = ref_of(&o, "button \"Dismiss\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&dismiss)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Click).target(&target).expect(text("Continued: 2"))).await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    page.close().await;
}

/// A page whose button logs the mouse and pointer events it receives (each change of event type once) in `#log`, and
/// runs `extra` (a script that may use `b`, the button, and `log`).
fn event_log_page(extra: &str) -> String {
    format!(
        "data:text/html,<title>events</title><button id=b style=\"width:200px;height:80px\">Target</button>\
         <p id=log>log:</p><script>const b = document.getElementById('b'), log = document.getElementById('log'); \
         let last = ''; for (const t of ['pointerover', 'pointerenter', 'mouseover', 'mouseenter', 'pointermove', \
         'mousemove', 'pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click', 'dblclick']) \
         b.addEventListener(t, () => {{ if (t !== last) {{ last = t; log.textContent += ' ' + t; }} }}); {extra}</script>"
    )
}

/// The line of an observation of [`event_log_page`] that shows its log.
fn log_line(o: &browserd_protocol::Observation) -> String {
    o.untrusted_content
        .lines()
        .find(|l| l.contains("log:"))
        .unwrap_or_else(|| panic!("no log in\n{}", o.untrusted_content))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn click_input_reaches_the_page_in_order() {
    // The move and the press go out together, the release after the press was handled: the page sees a real
    // mouse's sequence.
    let seq = "log: pointerover pointerenter mouseover mouseenter pointermove mousemove pointerdown mousedown \
               pointerup mouseup click";
    let page = Page::open(&event_log_page("")).await;
    let o = page.observe().await;
    let t = ref_of(&o, "button \"Target\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&t).expect(text(seq))).await;
    assert_eq!(
        (r.outcome, r.postcondition, r.dispatch),
        (Outcome::Succeeded, Postcondition::Passed, Dispatch::Observed),
        "{r:#?}"
    );
    page.close().await;

    let page = Page::open(&event_log_page("")).await;
    let o = page.observe().await;
    let t = ref_of(&o, "button \"Target\"");
    let twice = format!("{seq} pointerdown mousedown pointerup mouseup click dblclick");
    let r = page.act(ActParams::new(ActionKind::Dblclick).target(&t).expect(text(&twice))).await;
    assert_eq!((r.outcome, r.postcondition), (Outcome::Succeeded, Postcondition::Passed), "{r:#?}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialog_opened_by_the_pointer_reaching_the_target_leaves_the_click_unknown() {
    // The press was already sent with the move when the page opened a dialog on hover: whether it reaches the page
    // once the dialog is closed is the browser's business, so the click's outcome is unknown, and no release follows.
    let page = Page::open(&event_log_page(
        "let once = false; b.addEventListener('mouseover', () => { if (!once) { once = true; alert('hovered'); } });",
    ))
    .await;
    let o = page.observe().await;
    let t = ref_of(&o, "button \"Target\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&t)).await;
    assert_eq!((r.outcome, r.code.as_deref()), (Outcome::Unknown, Some("OUTCOME_UNKNOWN")), "{r:#?}");
    assert_ne!(r.dispatch, Dispatch::NotDispatched, "{r:#?}");
    let message = r.message.as_deref().unwrap_or_default();
    assert!(message.contains("mousePressed") && message.contains("not retried automatically"), "{r:#?}");
    assert_eq!(r.effects.dialog.as_ref().map(|d| d.message.as_str()), Some("hovered"), "{r:#?}");
    let r = page.act(ActParams::new(ActionKind::Dialog).expect(text("log: pointerover"))).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    let log = log_line(&page.observe().await);
    assert!(!log.contains("mouseup") && !log.contains("click"), "no release was sent: {log}");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_press_that_opens_a_dialog_is_followed_by_no_release() {
    let page = Page::open(&event_log_page(
        "let once = false; b.addEventListener('mousedown', () => { if (!once) { once = true; alert('pressed'); } });",
    ))
    .await;
    let o = page.observe().await;
    let t = ref_of(&o, "button \"Target\"");
    let r = page.act(ActParams::new(ActionKind::Click).target(&t).expect(Expectation::Dialog)).await;
    assert_eq!(
        (r.outcome, r.postcondition, r.dispatch),
        (Outcome::Succeeded, Postcondition::Passed, Dispatch::Observed),
        "{r:#?}"
    );
    let r = page.act(ActParams::new(ActionKind::Dialog).expect(text("mousedown"))).await;
    assert_eq!(r.postcondition, Postcondition::Passed, "{r:#?}");
    let log = log_line(&page.observe().await);
    assert!(!log.contains("mouseup") && !log.contains("click"), "no release was sent: {log}");
    page.close().await;
}
