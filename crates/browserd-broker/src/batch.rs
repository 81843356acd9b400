//! `browser_batch` rules that need no browser: the batch deadline and where a step leaves the site.
//!
//! "Same site" is decided by comparing the scheme and host of the URLs, which is stricter than the browser's
//! registrable-domain notion of a site (`a.example.com` → `b.example.com` counts as leaving): a batch stops more often,
//! never less, so it never crosses into a page the model has not observed.

use std::time::Duration;

/// The default time budget of a whole batch (BRIEF §6).
pub const BATCH_DEADLINE: Duration = Duration::from_secs(30);

/// `scheme://host` of a URL, lower-cased, without user info or port; `None` for URLs without a host (e.g. `data:`).
#[must_use]
pub fn origin_host(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        host_port.split(':').next().unwrap_or_default()
    };
    if host.is_empty() {
        return None;
    }
    Some(format!("{}://{}", scheme.to_ascii_lowercase(), host.to_ascii_lowercase()))
}

/// Whether going from `from` to `to` leaves the site. URLs without a host (`about:blank`, `data:`) never count as the
/// same site as a page with one.
#[must_use]
pub fn leaves_site(from: &str, to: &str) -> bool {
    match (origin_host(from), origin_host(to)) {
        (Some(a), Some(b)) => a != b,
        (None, None) => false,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_compared_without_port_path_or_user_info() {
        assert_eq!(origin_host("http://User@Example.COM:8080/a?b#c").as_deref(), Some("http://example.com"));
        assert_eq!(origin_host("https://[::1]:9/x").as_deref(), Some("https://::1"));
        assert_eq!(origin_host("about:blank"), None);
        assert!(!leaves_site("http://127.0.0.1:1/a", "http://127.0.0.1:2/b"));
        assert!(leaves_site("http://127.0.0.1:1/a", "http://localhost:1/a"));
        assert!(leaves_site("https://a.example.com/", "https://b.example.com/"));
        assert!(leaves_site("http://example.com/", "https://example.com/"));
        assert!(leaves_site("about:blank", "http://example.com/"));
        assert!(!leaves_site("about:blank", "data:text/html,x"));
    }
}
