//! Handoff completion criteria: whether what the user was asked to do is done, judged only from what a read-only
//! look at the tab shows (its URL, and an observation's content when a criterion needs the page).
//!
//! `browser_handoff` with `until` waits for every criterion to hold. The criteria reuse the action expectations of
//! `browserd-protocol` that make sense without acting: `url`, `textPresent`, `appears`, `disappears` and
//! `navigated`; the others (`value`, `state`, `newTab`, `dialog`, `downloadFinished`) are refused by the protocol's
//! validation and answered "unsupported" here too. Pure functions: no clock, no I/O.

use browserd_protocol::{Expectation, ExpectationResult};

/// Whether any criterion needs the page's content (an observation), not just the tab's URL.
#[must_use]
pub fn needs_page(until: &[Expectation]) -> bool {
    until.iter().any(|e| {
        matches!(e, Expectation::TextPresent { .. } | Expectation::Appears { .. } | Expectation::Disappears { .. })
    })
}

/// What one check saw: the URL when the handoff began, the URL now, and the observation's `untrustedContent` (`None`
/// when the page was not observed, or could not be).
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    /// The tab's URL when the handoff began.
    pub start_url: &'a str,
    /// The tab's URL now.
    pub url: &'a str,
    /// The compact observation of the page, when one was taken.
    pub content: Option<&'a str>,
}

/// Check every criterion against what was seen; one result per criterion, in order.
#[must_use]
pub fn check(until: &[Expectation], seen: Seen<'_>) -> Vec<ExpectationResult> {
    until
        .iter()
        .enumerate()
        .map(|(i, exp)| {
            let (passed, detail) = check_one(exp, seen);
            ExpectationResult { index: u32::try_from(i).unwrap_or(u32::MAX), passed, detail }
        })
        .collect()
}

/// Whether every result passed (and there is at least one).
#[must_use]
pub fn all_passed(results: &[ExpectationResult]) -> bool {
    !results.is_empty() && results.iter().all(|r| r.passed)
}

fn check_one(exp: &Expectation, seen: Seen<'_>) -> (bool, String) {
    let no_page = || (false, "the page could not be read yet".to_owned());
    match exp {
        Expectation::Url { contains } => (seen.url.contains(contains.as_str()), format!("url is {}", short(seen.url))),
        Expectation::Navigated => {
            let moved = seen.url != seen.start_url;
            (moved, if moved { format!("navigated to {}", short(seen.url)) } else { "still on the same URL".into() })
        }
        Expectation::TextPresent { text } => match seen.content {
            None => no_page(),
            Some(content) => {
                let found = text_in(content, text);
                (found, if found { format!("text {:?} found", short(text)) } else { "text not found".into() })
            }
        },
        Expectation::Appears { role, name } => match seen.content {
            None => no_page(),
            Some(content) => match content.lines().find(|l| node_matches(l, role.as_deref(), name.as_deref())) {
                Some(line) => (true, format!("found {}", short(line.trim()))),
                None => (false, "no such node".into()),
            },
        },
        Expectation::Disappears { target, text } => match seen.content {
            None => no_page(),
            Some(content) => {
                if let Some(t) = target
                    && browserd_protocol::ref_line(content, t.as_str()).is_some()
                {
                    return (false, format!("{} is still shown", t.as_str()));
                }
                if let Some(tx) = text
                    && text_in(content, tx)
                {
                    return (false, format!("{:?} is still on the page", short(tx)));
                }
                (true, "gone".into())
            }
        },
        Expectation::Value { .. }
        | Expectation::State { .. }
        | Expectation::NewTab
        | Expectation::Dialog
        | Expectation::DownloadFinished => {
            (false, "unsupported as a handoff criterion: it cannot be checked without acting on the page".into())
        }
    }
}

/// Whitespace-insensitive substring search.
fn text_in(content: &str, text: &str) -> bool {
    let needle = text.split_whitespace().collect::<Vec<_>>().join(" ");
    !needle.is_empty() && content.lines().any(|l| l.split_whitespace().collect::<Vec<_>>().join(" ").contains(&needle))
}

/// Whether an observation line (` e3 button "Save"`, `# Heading`) shows a node with this role and name
/// substring (case-insensitive).
fn node_matches(line: &str, role: Option<&str>, name: Option<&str>) -> bool {
    let rest = browserd_protocol::split_ref(line).map_or_else(|| line.trim_start(), |(_, rest)| rest);
    let (line_role, line_name) = if let Some(h) = rest.strip_prefix('#') {
        ("heading", h.trim_start_matches('#').trim())
    } else {
        match rest.split_once(' ') {
            Some((r, n)) => (r.trim_end_matches(':'), n),
            None => (rest.trim_end_matches(':'), ""),
        }
    };
    let role_ok = role.is_none_or(|r| r.eq_ignore_ascii_case(line_role));
    let name_ok = name.is_none_or(|n| line_name.to_lowercase().contains(&n.to_lowercase()));
    role_ok && name_ok && (role.is_some() || name.is_some())
}

fn short(s: &str) -> String {
    if s.chars().count() <= 120 { s.to_owned() } else { format!("{}…", s.chars().take(120).collect::<String>()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn exps(v: serde_json::Value) -> Vec<Expectation> {
        serde_json::from_value(v).unwrap()
    }

    const PAGE: &str = "# Signed in\ne1 button \"Log out\"\nWelcome back, Ada";

    #[test]
    fn url_and_navigation_need_no_page() {
        let until = exps(json!([{"kind": "url", "contains": "/home"}, {"kind": "navigated"}]));
        assert!(!needs_page(&until));
        let before =
            check(&until, Seen { start_url: "https://a.test/login", url: "https://a.test/login", content: None });
        assert!(!all_passed(&before));
        let after =
            check(&until, Seen { start_url: "https://a.test/login", url: "https://a.test/home", content: None });
        assert!(all_passed(&after), "{after:?}");
    }

    #[test]
    fn page_criteria_read_the_observation() {
        let until = exps(json!([
            {"kind": "textPresent", "text": "Welcome  back"},
            {"kind": "appears", "role": "button", "name": "log out"},
            {"kind": "appears", "role": "heading", "name": "Signed in"},
            {"kind": "disappears", "text": "Password"}
        ]));
        assert!(needs_page(&until));
        let unread = check(&until, Seen { start_url: "", url: "", content: None });
        assert!(unread.iter().all(|r| !r.passed && r.detail.contains("could not be read")));
        let seen = check(&until, Seen { start_url: "", url: "", content: Some(PAGE) });
        assert!(all_passed(&seen), "{seen:?}");
        let still = check(
            &exps(json!([{"kind": "disappears", "target": "e1"}, {"kind": "appears", "role": "textbox"}])),
            Seen { start_url: "", url: "", content: Some(PAGE) },
        );
        assert!(!still[0].passed && still[0].detail.contains("still shown"));
        assert!(!still[1].passed);
    }

    #[test]
    fn no_criteria_never_count_as_passed() {
        assert!(!all_passed(&[]));
    }
}
