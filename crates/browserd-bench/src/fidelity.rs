//! The text-fidelity check: of the texts a page must show exactly as it renders them (the fixture apps' ground
//! truth, declared on the server side), how many does an observation not show whole on one line of its own text?
//! A line is read as written and, for tools that quote text, with `\"` as `"` and YAML's `''` as `'`; a text split
//! over several lines (a name cut, two text nodes on two lines, a space added at an inline boundary) is a mismatch.

use serde::{Deserialize, Serialize};

/// How many of a page's must-read texts an observation shows whole on one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FidelityReport {
    /// Texts the page must show (ground truth).
    pub texts: usize,
    /// How many of them no line of the observation holds whole.
    pub text_mismatches: usize,
    /// Up to 5 of the texts not shown whole.
    pub mismatch_sample: Vec<String>,
}

/// Checks `expected` texts against the observation `text`.
pub fn check(expected: &[String], text: &str) -> FidelityReport {
    let lines: Vec<(String, String)> = text.lines().map(|l| (l.to_owned(), unescape(l))).collect();
    let missing: Vec<&String> = expected
        .iter()
        .filter(|want| !lines.iter().any(|(raw, plain)| raw.contains(want.as_str()) || plain.contains(want.as_str())))
        .collect();
    FidelityReport {
        texts: expected.len(),
        text_mismatches: missing.len(),
        mismatch_sample: missing.iter().take(5).map(|s| (*s).clone()).collect(),
    }
}

fn unescape(line: &str) -> String {
    line.replace("\\\"", "\"").replace("''", "'").replace("\\\\", "\\")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_counts_only_when_one_line_holds_it_whole() {
        let want = vec!["Enter \"Ada\" into the field".to_owned(), "HP 10/12".to_owned(), "It's ok".to_owned()];
        let shown = "- paragraph: \"Enter \\\"Ada\\\" into the field\"\n- 'text: It''s ok'\nHP 10/12 MP 5";
        assert_eq!(check(&want, shown).text_mismatches, 0);
        // Split over two text nodes, or a space added at an inline boundary: not read as rendered.
        let split = "uid=1_3 \"Enter \"\"\nuid=1_4 \"Ada\"\nEnter \" Ada \" into the field\nHP 10/\n12";
        let report = check(&want, split);
        assert_eq!((report.texts, report.text_mismatches), (3, 3));
        assert_eq!(report.mismatch_sample[0], "Enter \"Ada\" into the field");
    }
}
