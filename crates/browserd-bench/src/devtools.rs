//! chrome-devtools-mcp as a benchmark observer: `bench/chrome-devtools-mcp/snapshot.mjs` drives it over stdio
//! (headless, `--isolated`, pointed at Debian's Chromium with `--executablePath`; see [`crate::node_mcp`]), and this
//! module reads the uids out of its `take_snapshot` text.

use crate::node_mcp::{NodeMcp, NodeOptions, NodeTool};
use crate::observer::{Addressable, ObserverError};

/// chrome-devtools-mcp, pinned in `bench/chrome-devtools-mcp/package.json`.
pub static CHROME_DEVTOOLS_MCP: NodeTool = NodeTool {
    name: "chrome-devtools-mcp",
    label: "chrome-devtools-mcp",
    dir_env: "BROWSERD_BENCH_DEVTOOLS_DIR",
    default_dir: "bench/chrome-devtools-mcp",
    modules: &["chrome-devtools-mcp", "@modelcontextprotocol/sdk"],
    version_of: "chrome-devtools-mcp",
    refs: parse_uids,
};

/// Where and how to run chrome-devtools-mcp: its package in the repository (or `BROWSERD_BENCH_DEVTOOLS_DIR`).
pub fn options_from_env() -> NodeOptions {
    NodeOptions::from_env(&CHROME_DEVTOOLS_MCP)
}

/// Checks Chromium, installs the package if needed and starts a first chrome-devtools-mcp session.
pub async fn start(options: &NodeOptions) -> Result<NodeMcp, ObserverError> {
    NodeMcp::start(&CHROME_DEVTOOLS_MCP, options).await
}

/// The elements of a chrome-devtools-mcp snapshot, each with its uid (every node of its accessibility tree has one).
/// Lines look like `uid=1_2 button "Save" focusable`, `uid=1_0 RootWebArea "Title" url="…"` or, for a text node (its
/// role, StaticText, is left out), `uid=1_3 "Enter "Ada" into"`. Names are not escaped: a name ends at the last
/// quote after which only attributes (`word` or `word="…"`) follow. A text node is reported as `StaticText`.
pub fn parse_uids(text: &str) -> Vec<Addressable> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix("uid=") else { continue };
        let Some((_, rest)) = rest.split_once(' ') else { continue };
        let (role, rest) = if rest.starts_with('"') {
            ("StaticText", rest)
        } else {
            let (role, rest) = rest.split_once(' ').unwrap_or((rest, ""));
            (role, rest)
        };
        let name = rest.strip_prefix('"').map(quoted_name).unwrap_or_default();
        out.push(Addressable { role: role.to_owned(), name });
    }
    out
}

/// The name whose opening quote was just consumed: up to the first quote followed only by attributes.
fn quoted_name(s: &str) -> String {
    for (i, c) in s.char_indices() {
        if c == '"' && only_attributes(&s[i + 1..]) {
            return s[..i].to_owned();
        }
    }
    s.to_owned()
}

/// Whether `s` is empty or ` word`/` word="…"` attributes only.
fn only_attributes(s: &str) -> bool {
    let mut rest = s;
    while !rest.is_empty() {
        let Some(after) = rest.strip_prefix(' ') else { return false };
        let key_len = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')).unwrap_or(after.len());
        if key_len == 0 || !after.as_bytes()[0].is_ascii_lowercase() {
            return false;
        }
        rest = &after[key_len..];
        if let Some(value) = rest.strip_prefix("=\"") {
            // A value runs to the quote before the next attribute or the end.
            let Some(end) =
                (0..value.len()).filter(|&i| value.as_bytes()[i] == b'"').find(|&i| only_attributes(&value[i + 1..]))
            else {
                return false;
            };
            rest = &value[end + 1..];
        } else if rest.starts_with('=') {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(role: &str, name: &str) -> Addressable {
        Addressable { role: role.into(), name: name.into() }
    }

    #[test]
    fn parses_uids_roles_and_names() {
        let text = "## Latest page snapshot\nuid=1_0 RootWebArea \"Tracker\" url=\"http://x/?a=\"b\"\"\n\
                    \x20 uid=1_1 heading \"Hi\" level=\"1\"\n  uid=1_2 button \"Save\" focusable focused\n\
                    \x20 uid=1_3 \"Enter \"\"\n  uid=1_4 \"Ada\"\n  uid=1_5 \"\" into the field\"\n\
                    \x20 uid=1_6 generic\n  uid=1_7 link \"Say \"hi\" now\" url=\"http://x/\"\n\
                    \x20 uid=1_8 textbox \"Name\" value=\"Ada\"\n";
        assert_eq!(
            parse_uids(text),
            vec![
                a("RootWebArea", "Tracker"),
                a("heading", "Hi"),
                a("button", "Save"),
                a("StaticText", "Enter \""),
                a("StaticText", "Ada"),
                a("StaticText", "\" into the field"),
                a("generic", ""),
                a("link", "Say \"hi\" now"),
                a("textbox", "Name"),
            ]
        );
    }
}
