//! Finding the ref a fixture app's ground-truth operable got in an observation's text, the one matcher the app tests
//! share (in process in `browserd-chromium`, through `browserd mcp` in `browserd-mcp`).

/// The ref of the first line (the last one when `from_end`) not in `taken` showing an operable with `role` (any role
/// for `generic`) named `name`: for `generic`, whose name holds it; a name cut with `…` matches by its start; an empty
/// name matches a line of that role without one (a row's nameless checkbox). Duplicate names take one ref each
/// through `taken`.
pub fn app_ref(content: &str, role: &str, name: &str, taken: &[String], from_end: bool) -> Option<String> {
    let mut lines: Vec<&str> = content.lines().collect();
    if from_end {
        lines.reverse();
    }
    for line in lines {
        let Some((r, after)) = browserd_protocol::split_ref(line) else { continue };
        if taken.iter().any(|t| t == r) {
            continue;
        }
        let (shown_role, tail) = after.split_once(' ').unwrap_or((after, ""));
        if role != "generic" && shown_role != role {
            continue;
        }
        let Some(quoted) = tail.strip_prefix('"') else {
            if name.is_empty() && role != "generic" {
                return Some(r.to_owned());
            }
            continue;
        };
        let shown = quoted.find('"').map_or(quoted, |end| &quoted[..end]);
        // A generic element's text may carry more than its name (a caret drawn by CSS, a row's other cells).
        let matches = if role == "generic" { shown.contains(name) } else { shown == name };
        if matches || shown.strip_suffix('…').is_some_and(|cut| name.starts_with(cut)) {
            return Some(r.to_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_by_role_and_name_skipping_taken_refs() {
        let page = "e1 button \"Save\"\n e2 checkbox unchecked\n e3 clickable \"Name ↕\"\ne4 button \"Save\"";
        assert_eq!(app_ref(page, "button", "Save", &[], false).as_deref(), Some("e1"));
        assert_eq!(app_ref(page, "button", "Save", &[], true).as_deref(), Some("e4"));
        assert_eq!(app_ref(page, "button", "Save", &["e1".into()], false).as_deref(), Some("e4"));
        assert_eq!(app_ref(page, "checkbox", "", &[], false).as_deref(), Some("e2"));
        assert_eq!(app_ref(page, "generic", "Name", &[], false).as_deref(), Some("e3"));
        assert_eq!(app_ref(page, "link", "Save", &[], false), None);
    }
}
