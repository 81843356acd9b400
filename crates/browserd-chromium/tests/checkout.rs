//! The checkout fixture app (React 19), on real Chromium: an empty field shows the format its placeholder asks for
//! (`MM / YY`); a fill into a field that formats what is typed (a card
//! number in groups of four, an expiry as `MM / YY`, a phone number) succeeds and says how the page formatted it,
//! where it used to fail with `INPUT_NOT_APPLIED` though every character was taken; a field that drops a character
//! still fails; the order goes through with the formatted values, and a radio hidden inside its label card is chosen
//! by a click.
mod common;

use browserd_protocol::{ActParams, ActionKind, Outcome, codes};
use common::{Page, env, recorded, ref_in, ref_line};

async fn fill(tab: &Page, field: &str, value: &str) -> browserd_protocol::ActionResult {
    let o = tab.observe().await;
    let r = ref_in(ref_line(&o, &format!("textbox \"{field}\"")));
    tab.act(ActParams::new(ActionKind::Fill).target(&r).value(value)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fill_the_page_formats_succeeds_and_says_how_it_was_formatted() {
    let tab = Page::open("/apps/checkout.html").await;
    // An empty field shows the format its placeholder asks for, where its name does not say it.
    let o = tab.observe().await;
    assert!(ref_line(&o, "textbox \"Expiry\"").contains("placeholder=\"MM / YY\""), "{}", o.untrusted_content);
    assert!(!ref_line(&o, "textbox \"Email\"").contains("placeholder"), "{}", o.untrusted_content);
    for (field, typed, shown) in [
        ("Card number", "4242424242424242", "4242 4242 4242 4242"),
        ("Expiry", "1229", "12 / 29"),
        ("Phone (optional)", "5551234567", "(555) 123-4567"),
    ] {
        let r = fill(&tab, field, typed).await;
        assert_eq!(r.outcome, Outcome::Succeeded, "{field}: {r:#?}");
        assert_eq!(r.effects.value.as_deref(), Some(shown), "{field}: {r:#?}");
        assert!(r.message.as_deref().is_some_and(|m| m.contains(shown)), "{field}: {r:#?}");
        let o = tab.observe().await;
        let line = ref_line(&o, &format!("textbox \"{field}\""));
        assert!(line.ends_with(&format!(": {shown}")) && !line.contains("placeholder="), "{}", o.untrusted_content);
    }
    // The security code keeps digits only: a letter typed into it is lost, and that is a failure.
    let r = fill(&tab, "Security code", "12a3").await;
    assert_eq!(r.outcome, Outcome::Failed, "{r:#?}");
    assert_eq!(r.code.as_deref(), Some(codes::INPUT_NOT_APPLIED), "{r:#?}");
    assert_eq!(r.effects.value.as_deref(), Some("123"), "{r:#?}");
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_order_goes_through_with_the_formatted_values_and_a_hidden_radio_card() {
    let tab = Page::open("/apps/checkout.html").await;
    for (field, typed) in [
        ("Email", "ada@example.test"),
        ("Name on card", "Ada Lovelace"),
        ("Card number", "4242424242424242"),
        ("Expiry", "1229"),
        ("Security code", "123"),
    ] {
        let r = fill(&tab, field, typed).await;
        assert_eq!(r.outcome, Outcome::Succeeded, "{field}: {r:#?}");
    }
    // The radio is transparent and 0×0 inside its label card: the click goes to the card, and the radio is chosen.
    let o = tab.observe().await;
    let express = ref_in(ref_line(&o, "radio \"Express"));
    let r = tab.act(ActParams::new(ActionKind::Click).target(&express)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("ship:express").await);
    let o = tab.observe().await;
    assert!(ref_line(&o, "radio \"Express").contains(" checked"), "{}", o.untrusted_content);
    let pay = ref_in(ref_line(&o, "button \"Pay $104.00\""));
    let r = tab.act(ActParams::new(ActionKind::Click).target(&pay)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("pay:4242 4242 4242 4242|12 / 29||express|1").await, "{:?}", env().site.records());
    let o = tab.observe().await;
    assert!(o.untrusted_content.contains("Order placed: 1 × Mechanical keyboard, $104.00"), "{}", o.untrusted_content);
    tab.close().await;
}
