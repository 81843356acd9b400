//! The addressability check: for every operable element of a page (the generated pages' manifests and the
//! hand-written pages' ground truth in browserd-fixtures), does the observation give it a ref? Elements are matched to refs by role and accessible name as a multiset, so three
//! "Edit" buttons need three "Edit" button refs.

use std::collections::BTreeMap;

use browserd_fixtures::BenchElement;
use serde::{Deserialize, Serialize};

use crate::observer::Addressable;

/// How many of a page's interactive elements an observation makes addressable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddressabilityReport {
    /// Interactive elements on the page (ground truth).
    pub interactive: usize,
    /// How many of them got a ref.
    pub addressable: usize,
    /// Up to 5 elements without a ref, as `id role "name"`.
    pub missing_sample: Vec<String>,
}

impl AddressabilityReport {
    /// True when every interactive element is addressable.
    pub fn complete(&self) -> bool {
        self.interactive == self.addressable
    }
}

/// Matches the page's `expected` operable elements against the `refs` an observation shows.
///
/// Exact (role, name) matches are taken first. Then an expected `generic` element (no ARIA role in the markup: a
/// clickable `div`, a contenteditable region) that is still unmatched takes any remaining ref with the same name,
/// whatever role the tool gave it (Chromium exposes a contenteditable region as `textbox`): it has a ref either way;
/// failing that, a remaining ref named from its content (not a form control, which is named by its label) whose
/// name contains the element's text (or, cut with `…`, begins it).
pub fn check(expected: &[BenchElement], refs: &[Addressable]) -> AddressabilityReport {
    let mut available: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for r in refs {
        *available.entry((r.role.as_str(), r.name.as_str())).or_default() += 1;
    }
    let mut matched = vec![false; expected.len()];
    for (element, matched) in expected.iter().zip(matched.iter_mut()) {
        if let Some(count) = available.get_mut(&(element.role, element.name.as_str()))
            && *count > 0
        {
            *count -= 1;
            *matched = true;
        }
    }
    for (element, matched) in expected.iter().zip(matched.iter_mut()) {
        if *matched || element.role != "generic" {
            continue;
        }
        let other = available.iter_mut().find(|((_, name), count)| *name == element.name.as_str() && **count > 0);
        // Else any remaining ref whose name holds the element's text: a clickable row or card is named by all of its
        // text (a caret drawn by CSS, the row's other cells), and a name cut short with `…` counts by its start.
        let other = match other {
            Some(found) => Some(found),
            None => available.iter_mut().find(|((role, name), count)| {
                **count > 0
                    && named_from_content(role)
                    && (name.contains(element.name.as_str())
                        || name.strip_suffix('…').is_some_and(|cut| !cut.is_empty() && element.name.starts_with(cut)))
            }),
        };
        if let Some((_, count)) = other {
            *count -= 1;
            *matched = true;
        }
    }
    let missing_sample = expected
        .iter()
        .zip(&matched)
        .filter(|(_, matched)| !**matched)
        .take(5)
        .map(|(element, _)| format!("{} {} {:?}", element.id, element.role, element.name))
        .collect();
    let addressable = matched.iter().filter(|m| **m).count();
    AddressabilityReport { interactive: expected.len(), addressable, missing_sample }
}

/// Whether a ref of this role can be a clickable container named by all its text, so a name holding more than the
/// element's own text can still be that element. A form control is named by its label (`textbox "Editor 2"` is not
/// `Editor`), and a paragraph or heading that holds a pointer span's text is not the span: clicking it may miss.
fn named_from_content(role: &str) -> bool {
    !matches!(
        role,
        "textbox"
            | "searchbox"
            | "combobox"
            | "checkbox"
            | "radio"
            | "switch"
            | "slider"
            | "spinbutton"
            | "listbox"
            | "paragraph"
            | "heading"
            | "text"
            | "StaticText"
            | "blockquote"
            | "strong"
            | "emphasis"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn el(id: &str, role: &'static str, name: &str) -> BenchElement {
        BenchElement { id: id.into(), role, name: name.into() }
    }
    fn r(role: &str, name: &str) -> Addressable {
        Addressable { role: role.into(), name: name.into() }
    }

    #[test]
    fn duplicates_need_one_ref_each() {
        let manifest = vec![el("b1", "button", "Edit"), el("b2", "button", "Edit"), el("b3", "link", "Home")];
        let report = check(&manifest, &[r("button", "Edit"), r("link", "Home"), r("generic", "")]);
        assert_eq!(report.addressable, 2);
        assert!(!report.complete());
        assert_eq!(report.missing_sample, vec!["b2 button \"Edit\"".to_owned()]);
        let report = check(&manifest, &[r("button", "Edit"), r("button", "Edit"), r("link", "Home")]);
        assert!(report.complete());
    }

    #[test]
    fn role_must_match_too() {
        let manifest = vec![el("b1", "link", "Settings")];
        assert_eq!(check(&manifest, &[r("button", "Settings")]).addressable, 0);
    }

    #[test]
    fn a_generic_element_may_be_shown_with_a_more_specific_role() {
        let manifest = vec![el("c1", "generic", "Editor"), el("c2", "generic", "Card"), el("c3", "button", "Card")];
        // The contenteditable region is shown as a textbox; the exact `generic "Card"` is kept for c2, and the one
        // `button "Card"` ref serves c3 only: a ref is never counted twice.
        let report = check(&manifest, &[r("textbox", "Editor"), r("button", "Card")]);
        assert_eq!(report.addressable, 2);
        assert_eq!(report.missing_sample, vec!["c2 generic \"Card\"".to_owned()]);
        let report = check(&manifest, &[r("textbox", "Editor"), r("generic", "Card"), r("button", "Card")]);
        assert!(report.complete());
        // The name must still match.
        assert_eq!(check(&manifest[..1], &[r("textbox", "Editor 2")]).addressable, 0);
        // A clickable row named by all its text holds the element; a paragraph around a pointer span does not.
        let span = vec![el("s1", "generic", "Show details")];
        assert_eq!(check(&span, &[r("clickable", "Section 1 Show details")]).addressable, 1);
        assert_eq!(check(&span, &[r("paragraph", "Section 1 Show details")]).addressable, 0);
    }
}
