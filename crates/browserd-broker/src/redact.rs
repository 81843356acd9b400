//! Redaction for `browserd diagnose`: URLs lose their query, fragment and userinfo wherever they appear in text; a
//! JSON value loses every page title; broker log lines are kept only when they are the broker's own events at
//! `INFO`, `WARN` or `ERROR` (never `DEBUG`/`TRACE`, which may carry protocol payloads, and never the browser's own
//! output, which carries console messages, i.e. page text and form values).

use serde_json::Value;

/// The longest log line kept (longer ones are cut, marked).
pub const MAX_LOG_LINE: usize = 400;

/// What a withheld page title becomes.
pub const WITHHELD: &str = "(withheld: page content)";

/// Characters that end a URL-like token in free text.
fn ends_token(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | '\\')
}

/// `text` with every URL-like token cut at its query or fragment (replaced by `?…`) and any userinfo replaced by
/// `…@`. A token is URL-like when it has `://`, or starts with `/` (a path), or begins with `?`.
#[must_use]
pub fn scrub_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest.find(ends_token).unwrap_or(rest.len());
        let (token, after) = rest.split_at(end);
        out.push_str(&scrub_token(token));
        let sep_len = after.chars().next().map_or(0, char::len_utf8);
        out.push_str(&after[..sep_len]);
        rest = &after[sep_len..];
    }
    out
}

fn scrub_token(token: &str) -> String {
    let url_like = token.contains("://") || token.starts_with('/') || token.starts_with('?');
    if !url_like {
        return token.to_owned();
    }
    let (cut, hidden) = match token.find(['?', '#']) {
        Some(i) => (&token[..i], "?…"),
        None => (token, ""),
    };
    let cut = match cut.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            match authority.rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://…@{host}{path}"),
                None => cut.to_owned(),
            }
        }
        None => cut.to_owned(),
    };
    format!("{cut}{hidden}")
}

/// `value` with every string scrubbed ([`scrub_text`]) and every `title` replaced by [`WITHHELD`].
#[must_use]
pub fn scrub_json(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(scrub_text(s)),
        Value::Array(items) => Value::Array(items.iter().map(scrub_json).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v =
                        if k == "title" && !v.is_null() { Value::String(WITHHELD.to_owned()) } else { scrub_json(v) };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Why a log line was left out, for the preview's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// `DEBUG` or `TRACE`: may hold protocol payloads.
    Verbose,
    /// The browser's own output (console messages, i.e. page text) or another program's.
    NotBroker,
}

/// One line of `broker.log` as it may go into the bundle, or why it may not. Kept: the broker's own `tracing`
/// events at `INFO`/`WARN`/`ERROR` (target `browserd…`, not the browser's captured stderr) and its `error:` lines,
/// scrubbed and cut at [`MAX_LOG_LINE`].
///
/// # Errors
/// Why it is left out.
pub fn log_line(line: &str) -> Result<String, Dropped> {
    let trimmed = line.trim_end();
    let keep = if trimmed.starts_with("error: ") {
        true
    } else {
        let mut fields = trimmed.split_whitespace();
        let _time = fields.next();
        let level = fields.next().unwrap_or_default();
        let target = fields.next().unwrap_or_default().trim_end_matches(':');
        if !matches!(level, "INFO" | "WARN" | "ERROR") {
            return Err(if matches!(level, "DEBUG" | "TRACE") { Dropped::Verbose } else { Dropped::NotBroker });
        }
        target.starts_with("browserd") && !target.contains("chromium_stderr")
    };
    if !keep {
        return Err(Dropped::NotBroker);
    }
    let mut out = scrub_text(trimmed);
    if out.len() > MAX_LOG_LINE {
        let mut cut = MAX_LOG_LINE;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str(" …(cut)");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn urls_lose_query_fragment_and_userinfo_wherever_they_are() {
        assert_eq!(
            scrub_text("open https://u:pw@a.test:8080/p/q?token=S3CRET#frag failed"),
            "open https://…@a.test:8080/p/q?… failed"
        );
        assert_eq!(scrub_text("url=\"http://x.test/a#b\", next"), "url=\"http://x.test/a?…\", next");
        assert_eq!(scrub_text("path /form.html?q=1 and ?k=v"), "path /form.html?… and ?…");
        assert_eq!(scrub_text("ws://grid:3000/chromium?token=t"), "ws://grid:3000/chromium?…");
        assert_eq!(scrub_text("nothing to see? no."), "nothing to see? no.");
        assert_eq!(scrub_text("ünïcode https://ä.test/?x ok"), "ünïcode https://ä.test/?… ok");
    }

    #[test]
    fn json_strings_are_scrubbed_and_titles_withheld() {
        let v = json!({"tabs": [{"url": "https://a.test/x?s=1", "title": "Secret", "n": 3}], "title": null});
        assert_eq!(
            scrub_json(&v),
            json!({"tabs": [{"url": "https://a.test/x?…", "title": WITHHELD, "n": 3}], "title": null})
        );
    }

    #[test]
    fn only_the_brokers_own_info_and_worse_lines_are_kept() {
        let ok = "2026-12-02T18:09:52.106310Z  INFO browserd_broker::server: extension paired extension=abc";
        assert_eq!(log_line(ok).unwrap(), ok);
        let warn = "2026-12-02T18:09:52Z  WARN browserd_broker::lazy: lost url=https://a.test/x?q=1";
        assert!(log_line(warn).unwrap().ends_with("url=https://a.test/x?…"));
        let console = "2026-12-02T18:09:52Z TRACE browserd_cdp::chromium_stderr: [1:1:INFO:CONSOLE:1] \"typed\"";
        assert_eq!(log_line(console), Err(Dropped::Verbose));
        let console_info = "2026-12-02T18:09:52Z  INFO browserd_cdp::chromium_stderr: page text";
        assert_eq!(log_line(console_info), Err(Dropped::NotBroker));
        assert_eq!(log_line("2026-12-02T18:09:52Z DEBUG browserd_cdp::connection: x"), Err(Dropped::Verbose));
        assert_eq!(log_line("[15513:15513:1202/180952.106310:INFO:CONSOLE:1] \"secret\""), Err(Dropped::NotBroker));
        assert_eq!(log_line("error: another broker runs"), Ok("error: another broker runs".to_owned()));
        let long = format!("2026-12-02T18:09:52Z  INFO browserd_broker::x: {}", "y".repeat(1000));
        assert!(log_line(&long).unwrap().ends_with("…(cut)"));
    }
}
