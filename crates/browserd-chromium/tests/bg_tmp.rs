//! Temporary: input into a background tab.
mod common;
use browserd_protocol::{ActParams, ActionKind};
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_tab_input() {
    let a = Page::open("/dialogs.html").await;
    let o = a.observe().await;
    let b = Page::open("/form.html").await;
    let _ = b.observe().await;
    let r = a.act(ActParams::new(ActionKind::Click).target(ref_of(&o, "Show alert"))).await;
    eprintln!("bg click: {:?} {:?} dialog={:?}", r.timings, r.code, r.effects.dialog.is_some());
    let r = a.act(ActParams::new(ActionKind::Dialog)).await;
    eprintln!("dialog: {:?} {:?}", r.timings, r.code);
    let html = "data:text/html,<button onclick=\"console.error('boom'); setTimeout(() => { throw new Error('bad thing') })\">Err</button>";
    let r = a.act(ActParams::new(ActionKind::Navigate).value(html)).await;
    let o = a.observe().await;
    let r2 = a.act(ActParams::new(ActionKind::Click).target(ref_of(&o, "Err"))).await;
    eprintln!("bg err click: {:?} {:?} {:?}", r.code, r2.timings, r2.effects.console_errors);
}
