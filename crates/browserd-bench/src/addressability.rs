//! The addressability check: for every operable element of a page (the generated pages' manifests and the
//! hand-written pages' ground truth in test-support), does the observation give it a ref? Elements are matched to refs by role and accessible name as a multiset, so three
//! "Edit" buttons need three "Edit" button refs.

use std::collections::BTreeMap;

use browserd_test_support::fixtures::BenchElement;
use serde::Serialize;

use crate::observer::Addressable;

/// How many of a page's interactive elements an observation makes addressable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
pub fn check(expected: &[BenchElement], refs: &[Addressable]) -> AddressabilityReport {
    let mut available: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for r in refs {
        *available.entry((r.role.as_str(), r.name.as_str())).or_default() += 1;
    }
    let mut addressable = 0;
    let mut missing_sample = Vec::new();
    for element in expected {
        match available.get_mut(&(element.role, element.name.as_str())) {
            Some(count) if *count > 0 => {
                *count -= 1;
                addressable += 1;
            }
            _ => {
                if missing_sample.len() < 5 {
                    missing_sample.push(format!("{} {} {:?}", element.id, element.role, element.name));
                }
            }
        }
    }
    AddressabilityReport { interactive: expected.len(), addressable, missing_sample }
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
}
