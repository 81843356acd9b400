//! Stacked modal dialogs: the control of the dialog on top is actionable even when another modal dialog opened
//! earlier sits before it in the document; the page behind both stays inert and is refused. Real Chromium.
mod common;

use browserd_protocol::{ActParams, ActionKind, Outcome};
use common::{Page, ref_of};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_button_of_the_top_modal_dialog_is_clicked_when_an_earlier_dialog_is_modal_too() {
    let page = "data:text/html,<title>t</title>\
        <button onclick=\"document.title='behind'\">Behind action</button>\
        <button onclick=\"document.getElementById('a').showModal();document.getElementById('b').showModal()\">Open both</button>\
        <dialog id=a><p>Lower dialog</p><button onclick=\"document.title='lower'\">Lower action</button></dialog>\
        <dialog id=b><p>Top dialog</p><button onclick=\"document.title='top'\">Top action</button></dialog>";
    let tab = Page::open(page).await;
    let o = tab.observe().await;
    let behind = ref_of(&o, "button \"Behind action\"");
    let open = ref_of(&o, "button \"Open both\"");
    let r = tab.act(ActParams::new(ActionKind::Click).target(&open)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");

    let o = tab.observe().await;
    let top = ref_of(&o, "button \"Top action\"");
    let r = tab.act(ActParams::new(ActionKind::Click).target(&top)).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "the top dialog's button is clicked: {r:#?}");
    assert_eq!(tab.observe().await.title, "top", "the click reached the top dialog's button");

    let r = tab.act(ActParams::new(ActionKind::Click).target(&behind).timeout_ms(1500)).await;
    assert_eq!(
        (r.outcome, r.code.as_deref()),
        (Outcome::Failed, Some("NOT_ACTIONABLE")),
        "the page behind both dialogs is inert: {r:#?}"
    );
    assert_eq!(tab.observe().await.title, "top", "nothing reached the page behind");
    tab.close().await;
}
