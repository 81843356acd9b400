//! The CRM fixture app (jQuery 3.7.1, every click on a document listener), on real Chromium (issue 13 items 3, 4 and
//! 5): a table row with several controls is one line of its cells with its controls under it, an icon button named
//! by its glyph shows its tooltip, a row menu appended to `<body>` is operable entry by
//! entry and its confirmation modal is what the next observation shows, and a pagination link CSS disables
//! (`pointer-events: none`) is not reported as clicked.
mod common;

use browserd_protocol::{ActParams, ActionKind, Observation, Outcome};
use common::{Page, env, recorded, ref_in, under};

/// The ref lines that contain `part`.
fn lines_with<'a>(o: &'a Observation, part: &str) -> Vec<&'a str> {
    o.untrusted_content.lines().filter(|l| browserd_protocol::line_ref(l).is_some() && l.contains(part)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_icon_buttons_tooltip_is_shown_and_its_row_menu_leads_to_the_confirmation() {
    let tab = Page::open("/apps/crm.html").await;
    let o = tab.observe().await;
    // Five "⋮" buttons whose only words are their `title`: each line says it, under the line of its row (all of the
    // row's cells), with the row's checkbox and name link.
    let menus = lines_with(&o, "button \"⋮\" title=\"Actions\"");
    assert_eq!(menus.len(), 5, "{}", o.untrusted_content);
    let row = under(&o, "row \"Grace Hopper | grace@cobol.test | Compilers Inc | Active");
    assert_eq!(row.len(), 3, "checkbox, link and menu button:\n{}", o.untrusted_content);
    assert!(
        browserd_protocol::line_ref(row[0]).is_some() && row[0].ends_with(" checkbox unchecked"),
        "{}",
        o.untrusted_content
    );
    assert!(row[1].ends_with("link \"Grace Hopper\""), "a link to `#` says no target:\n{}", o.untrusted_content);
    let grace = row[2];
    assert!(grace.ends_with("button \"⋮\" title=\"Actions\""), "the row line says which row:\n{}", o.untrusted_content);
    let r = tab.act(ActParams::new(ActionKind::Click).target(ref_in(grace))).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("menu:cust-2").await);
    // The menu is appended to <body> and placed by script; its entries are `href="#"` links.
    let o = tab.observe().await;
    let delete = lines_with(&o, "link \"Delete\"");
    assert_eq!(delete.len(), 1, "{}", o.untrusted_content);
    let r = tab.act(ActParams::new(ActionKind::Click).target(ref_in(delete[0]))).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    // The backdrop covers every line behind the dialog: those changes (`covered`) must not crowd the dialog that
    // opened out of the click's effects.
    assert!(
        r.effects.appeared.iter().any(|l| l.contains("button \"Cancel\"")),
        "the confirmation is in the click's effects: {:#?}",
        r.effects
    );
    assert!(recorded("delete:cust-2").await);
    let o = tab.observe().await;
    assert!(o.untrusted_content.contains("Delete Grace Hopper? This cannot be undone."), "{}", o.untrusted_content);
    let confirm = lines_with(&o, "button \"Delete\"");
    assert_eq!(confirm.len(), 1, "{}", o.untrusted_content);
    let r = tab.act(ActParams::new(ActionKind::Click).target(ref_in(confirm[0]))).await;
    assert_eq!(r.outcome, Outcome::Succeeded, "{r:#?}");
    assert!(recorded("delete:confirm").await);
    tab.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pagination_link_css_disables_is_not_reported_as_clicked() {
    let tab = Page::open("/apps/crm.html").await;
    let o = tab.observe().await;
    let previous = lines_with(&o, "link \"Previous\"");
    assert_eq!(previous.len(), 1, "{}", o.untrusted_content);
    let r = tab.act(ActParams::new(ActionKind::Click).target(ref_in(previous[0]))).await;
    println!("{r:#?}");
    assert_ne!(r.outcome, Outcome::Succeeded, "a link no pointer reaches is not clicked: {r:#?}");
    assert!(!env().site.records().iter().any(|e| e == "page:prev"), "nothing reached the page");
    tab.close().await;
}
