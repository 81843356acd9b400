//! Playwright MCP as a benchmark observer: `bench/playwright-mcp/snapshot.mjs` drives Playwright MCP over stdio,
//! pointed at Debian's Chromium (see [`crate::node_mcp`]), and this module reads refs out of its aria snapshots.

use crate::node_mcp::{NodeMcp, NodeOptions, NodeTool};
use crate::observer::{Addressable, ObserverError};

/// Playwright MCP, pinned in `bench/playwright-mcp/package.json`.
pub static PLAYWRIGHT_MCP: NodeTool = NodeTool {
    name: "playwright-mcp",
    label: "Playwright MCP",
    dir_env: "BROWSERD_BENCH_PLAYWRIGHT_DIR",
    default_dir: "bench/playwright-mcp",
    modules: &["@playwright/mcp", "@modelcontextprotocol/sdk"],
    version_of: "@playwright/mcp",
    refs: parse_refs,
};

/// Where and how to run Playwright MCP: its package in the repository (or `BROWSERD_BENCH_PLAYWRIGHT_DIR`).
pub fn options_from_env() -> NodeOptions {
    NodeOptions::from_env(&PLAYWRIGHT_MCP)
}

/// Checks Chromium, installs the package if needed and starts a first Playwright MCP session.
pub async fn start(options: &NodeOptions) -> Result<NodeMcp, ObserverError> {
    NodeMcp::start(&PLAYWRIGHT_MCP, options).await
}

/// The elements of a Playwright aria snapshot that carry a `[ref=…]`, with their role and name.
/// Lines look like `- button "Delete" [ref=e9]`, `- link "Settings" [ref=e25] [cursor=pointer]:` or
/// `- generic [ref=e3]: text`.
pub fn parse_refs(text: &str) -> Vec<Addressable> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix("- ") else { continue };
        // YAML single-quotes an entry that contains `: `, e.g. `- 'heading "Section 1: Orders" [ref=e24]'`.
        let unquoted;
        let rest = match rest.strip_prefix('\'') {
            Some(quoted) => match yaml_single_quoted(quoted) {
                Some(inner) => {
                    unquoted = inner;
                    unquoted.as_str()
                }
                None => continue,
            },
            None => rest,
        };
        let role_len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')).unwrap_or(rest.len());
        if role_len == 0 {
            continue;
        }
        let role = &rest[..role_len];
        let after = &rest[role_len..];
        let (name, attrs) = match after.strip_prefix(" \"") {
            Some(quoted) => match json_string_prefix(quoted) {
                Some((name, used)) => (name, &quoted[used..]),
                None => continue,
            },
            None => (String::new(), after),
        };
        // Attributes come before the `:` that opens children or inline text.
        let (attrs, inline) = match attrs.split_once(": ") {
            Some((attrs, inline)) => (attrs, Some(inline.trim())),
            None => (attrs, None),
        };
        if attrs.contains("[ref=") {
            // An element without a name is known by its inline text (`- generic [ref=e5]: Open the card`).
            let name = match (name.is_empty(), inline) {
                (true, Some(text)) => match text.strip_prefix('"') {
                    Some(quoted) => json_string_prefix(quoted).map(|(t, _)| t).unwrap_or_default(),
                    None => text.to_owned(),
                },
                _ => name,
            };
            out.push(Addressable { role: role.to_owned(), name });
        }
    }
    out
}

/// The content of a YAML single-quoted scalar whose opening quote was just consumed (`''` stands for `'`).
fn yaml_single_quoted(s: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            if chars.peek() == Some(&'\'') {
                chars.next();
                out.push('\'');
            } else {
                return Some(out);
            }
        } else {
            out.push(c);
        }
    }
    None
}

/// Decodes the JSON string whose opening quote was just consumed; returns it and the bytes used (closing quote
/// included).
pub(crate) fn json_string_prefix(s: &str) -> Option<(String, usize)> {
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '"') => {
                let name = serde_json::from_str::<String>(&format!("\"{}\"", &s[..i])).ok()?;
                return Some((name, i + 1));
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(role: &str, name: &str) -> Addressable {
        Addressable { role: role.into(), name: name.into() }
    }

    #[test]
    fn parses_refs_roles_and_names() {
        let text = "### Snapshot\n```yaml\n- generic [active] [ref=e1]:\n  - heading \"Duplicate names\" [level=1] [ref=e2]\n\
                    \x20 - list [ref=e7]:\n    - listitem [ref=e8]:\n      - text: Invoice 1042\n\
                    \x20     - button \"Delete\" [ref=e9]\n  - link \"Say \\\"hi\\\"\" [ref=f1e25] [cursor=pointer]:\n\
                    \x20   - /url: \"#settings-panel\"\n  - option \"China\"\n  - paragraph: \"not [ref=e99] here\"\n\
                    \x20 - 'heading \"Section 1: Orders\" [level=2] [ref=e24]'\n\
                    \x20 - 'button \"It''s: ok\" [ref=e25]':\n\
                    \x20 - generic [ref=e26] [cursor=pointer]: Open the card\n\
                    \x20 - generic [ref=e27]: \"Terms: read\"\n```";
        assert_eq!(
            parse_refs(text),
            vec![
                a("generic", ""),
                a("heading", "Duplicate names"),
                a("list", ""),
                a("listitem", ""),
                a("button", "Delete"),
                a("link", "Say \"hi\""),
                a("heading", "Section 1: Orders"),
                a("button", "It's: ok"),
                a("generic", "Open the card"),
                a("generic", "Terms: read"),
            ]
        );
    }
}
