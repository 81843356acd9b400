//! Patterns of web-component products on the settings console fixture app (Lit, open shadow roots), on real
//! Chromium (issue 13 items 1, 3 and 5): an icon button inside a custom element's shadow root, named only by the
//! `aria-label` on its host, is shown with that name and clicking it reaches the page's handler; a sentence split
//! across the shadow/light boundary with inline emphasis reads as one line.
mod common;

use std::time::Duration;

use browserd_protocol::{ActParams, ActionKind, Outcome};
use common::{Page, env};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_icon_button_in_a_shadow_root_is_named_by_the_aria_label_on_its_host() {
    let tab = Page::open("/apps/components.html").await;
    let o = tab.observe().await;
    let line = o
        .untrusted_content
        .lines()
        .find(|l| l.contains("button \"Refresh members\""))
        .unwrap_or_else(|| panic!("the icon button is named by its host's aria-label:\n{}", o.untrusted_content));
    assert!(
        !o.untrusted_content
            .lines()
            .any(|l| browserd_protocol::line_ref(l).is_some() && l.trim_end().ends_with(" button")),
        "no unnamed button left:\n{}",
        o.untrusted_content
    );
    let r = browserd_protocol::line_ref(line).expect("a ref line").to_owned();
    let acted = tab.act(ActParams::new(ActionKind::Click).target(r)).await;
    assert_eq!(acted.outcome, Outcome::Succeeded, "{acted:#?}");
    assert!(env().site.wait_for_record("members:reload", Duration::from_secs(5)).await, "{acted:#?}");
    // The card's sentence: its words in the shadow root, the emphasised word slotted from the light DOM.
    assert!(
        o.untrusted_content.lines().any(|l| l.trim() == "Type \"admin\" to confirm"),
        "one line, as rendered:\n{}",
        o.untrusted_content
    );
    tab.close().await;
}
