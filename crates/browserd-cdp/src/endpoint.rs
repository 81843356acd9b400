//! A remote CDP endpoint as the user wrote it (`ws://`, `wss://`, `http://`, `https://`, with path, query and
//! userinfo kept), its secret-free identity, and the redacted form used in every message and log line.

use base64::Engine as _;

use crate::error::TransportError;

/// The scheme of an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `ws://`: a WebSocket, used as given.
    Ws,
    /// `wss://`: a WebSocket over TLS, used as given.
    Wss,
    /// `http://`: asked for `/json/version` first.
    Http,
    /// `https://`: asked for `/json/version` over TLS first.
    Https,
}

impl Scheme {
    fn as_str(self) -> &'static str {
        match self {
            Scheme::Ws => "ws",
            Scheme::Wss => "wss",
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    /// Whether the connection runs over TLS.
    #[must_use]
    pub fn tls(self) -> bool {
        matches!(self, Scheme::Wss | Scheme::Https)
    }

    fn default_port(self) -> u16 {
        if self.tls() { 443 } else { 80 }
    }

    /// The WebSocket scheme of the same security.
    fn ws(self) -> Scheme {
        if self.tls() { Scheme::Wss } else { Scheme::Ws }
    }
}

/// A parsed remote endpoint. Its `Debug` and `Display` forms are redacted: they never show the query, userinfo or
/// an authorization header.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The scheme.
    pub scheme: Scheme,
    /// The host as written (an IPv6 address keeps its brackets).
    pub host: String,
    /// The port (the scheme's default when none was written).
    pub port: u16,
    /// The path, `/` when none was written.
    pub path: String,
    /// The query without its `?`, when there is one (often a grid's token).
    pub query: Option<String>,
    /// `user:password` from the URL, when there is one (sent as HTTP Basic authorization, never in the URL).
    userinfo: Option<String>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Endpoint({})", self.redacted())
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl Endpoint {
    /// Parses `url`. Path and query are kept as written (an empty path becomes `/`); a fragment is dropped.
    pub fn parse(url: &str) -> Result<Endpoint, TransportError> {
        let unsupported =
            |message: &str| TransportError::Unsupported { endpoint: redact_plain(url), message: message.to_owned() };
        let (scheme_text, rest) = url.trim().split_once("://").ok_or_else(|| {
            unsupported("expected a ws://, wss://, http:// or https:// URL (for example ws://127.0.0.1:3000/?token=…)")
        })?;
        let scheme = match scheme_text.to_ascii_lowercase().as_str() {
            "ws" => Scheme::Ws,
            "wss" => Scheme::Wss,
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            _ => return Err(unsupported("expected a ws://, wss://, http:// or https:// URL")),
        };
        let rest = rest.split('#').next().unwrap_or_default();
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(authority_end);
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((info, hostport)) => (Some(percent_decode(info)), hostport),
            None => (None, authority),
        };
        let (host, port) = split_host_port(hostport).ok_or_else(|| unsupported("the URL has no valid host[:port]"))?;
        if host.is_empty() {
            return Err(unsupported("the URL has no host"));
        }
        let port = port.unwrap_or_else(|| scheme.default_port());
        let (path, query) = match tail.split_once('?') {
            Some((path, query)) => (path, Some(query.to_owned()).filter(|q| !q.is_empty())),
            None => (tail, None),
        };
        let path = if path.is_empty() { "/".to_owned() } else { path.to_owned() };
        Ok(Endpoint { scheme, host: host.to_owned(), port, path, query, userinfo })
    }

    /// Whether the endpoint is asked for `/json/version` before the WebSocket is opened.
    #[must_use]
    pub fn discovers(&self) -> bool {
        matches!(self.scheme, Scheme::Http | Scheme::Https)
    }

    /// A stable name for the browser behind this endpoint without any secret: the WebSocket scheme of its security,
    /// host, port and path — no query, no userinfo. The same endpoint written as `http://` or `ws://`, or with
    /// another token, has the same identity.
    #[must_use]
    pub fn identity(&self) -> String {
        let path = self.path.trim_end_matches('/');
        format!("{}://{}:{}{}", self.scheme.ws().as_str(), self.host.to_ascii_lowercase(), self.port, path)
    }

    /// The endpoint for messages and logs: scheme, host, port and path, with `?…` when a query was given and `…@`
    /// when userinfo was.
    #[must_use]
    pub fn redacted(&self) -> String {
        let info = if self.userinfo.is_some() { "…@" } else { "" };
        let query = if self.query.is_some() { "?…" } else { "" };
        format!("{}://{info}{}:{}{}{query}", self.scheme.as_str(), self.host, self.port, self.path)
    }

    /// The `Authorization` header the userinfo stands for (HTTP Basic), if any.
    #[must_use]
    pub fn basic_authorization(&self) -> Option<String> {
        self.userinfo
            .as_ref()
            .map(|info| format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(info.as_bytes())))
    }

    /// The full WebSocket URL of this endpoint itself (for `ws`/`wss`, the URL as given without userinfo; for
    /// `http`/`https`, the same place reached as a WebSocket: the fallback when there is no `/json/version`).
    #[must_use]
    pub fn ws_url(&self) -> String {
        let query = self.query.as_ref().map(|q| format!("?{q}")).unwrap_or_default();
        format!("{}://{}:{}{}{query}", self.scheme.ws().as_str(), self.host, self.port, self.path)
    }

    /// The request target of `/json/version` under this endpoint's path, with its query.
    #[must_use]
    pub fn version_target(&self) -> String {
        let query = self.query.as_ref().map(|q| format!("?{q}")).unwrap_or_default();
        format!("{}/json/version{query}", self.path.trim_end_matches('/'))
    }

    /// The `Host` header value.
    #[must_use]
    pub fn host_header(&self) -> String {
        if self.port == self.scheme.default_port() { self.host.clone() } else { format!("{}:{}", self.host, self.port) }
    }

    /// The TLS server name (the host without IPv6 brackets).
    #[must_use]
    pub fn server_name(&self) -> &str {
        self.host.trim_start_matches('[').trim_end_matches(']')
    }

    /// The WebSocket URL `/json/version` named, completed from this endpoint: a URL without a path gets `/`, one without
    /// a query gets this endpoint's query (Browserless answers `ws://host:port` — no path, no token).
    #[must_use]
    pub fn complete_discovered(&self, discovered: &str) -> Option<String> {
        let mut found = Endpoint::parse(discovered).ok()?;
        if found.discovers() {
            return None;
        }
        if found.query.is_none() {
            found.query.clone_from(&self.query);
        }
        Some(found.ws_url())
    }
}

fn split_host_port(hostport: &str) -> Option<(&str, Option<u16>)> {
    if let Some(rest) = hostport.strip_prefix('[') {
        let close = rest.find(']')?;
        let host = &hostport[..close + 2];
        let after = &rest[close + 1..];
        return match after.strip_prefix(':') {
            Some(port) => Some((host, Some(port.parse().ok()?))),
            None if after.is_empty() => Some((host, None)),
            None => None,
        };
    }
    match hostport.rsplit_once(':') {
        Some((host, port)) => Some((host, Some(port.parse().ok()?))),
        None => Some((hostport, None)),
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(byte) =
                std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `url` with its query and userinfo hidden, for messages and logs; an unparsable URL is cut at its first `?` and
/// `@`.
#[must_use]
pub fn redact_url(url: &str) -> String {
    match Endpoint::parse_quiet(url) {
        Some(endpoint) => endpoint.redacted(),
        None => redact_plain(url),
    }
}

/// `url` cut at its query or fragment, with any userinfo replaced by `…`.
fn redact_plain(url: &str) -> String {
    let cut = url.split(['?', '#']).next().unwrap_or_default();
    let hidden = if cut.len() < url.len() { "?…" } else { "" };
    match cut.split_once("://") {
        Some((scheme, rest)) => match rest.rsplit_once('@') {
            Some((_, host)) => format!("{scheme}://…@{host}{hidden}"),
            None => format!("{cut}{hidden}"),
        },
        None => match cut.rsplit_once('@') {
            Some((_, host)) => format!("…@{host}{hidden}"),
            None => format!("{cut}{hidden}"),
        },
    }
}

impl Endpoint {
    fn parse_quiet(url: &str) -> Option<Endpoint> {
        let (scheme, _) = url.trim().split_once("://")?;
        if !["ws", "wss", "http", "https"].contains(&scheme.to_ascii_lowercase().as_str()) {
            return None;
        }
        Endpoint::parse(url).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_queries_are_kept_and_an_empty_path_becomes_a_slash() {
        let e = Endpoint::parse("ws://127.0.0.1:3000?token=T").unwrap();
        assert_eq!(e.ws_url(), "ws://127.0.0.1:3000/?token=T");
        let e = Endpoint::parse("wss://grid.example/chromium?token=T&launch=%7B%7D").unwrap();
        assert_eq!(e.ws_url(), "wss://grid.example:443/chromium?token=T&launch=%7B%7D");
        let e = Endpoint::parse("http://127.0.0.1:3000/?token=T").unwrap();
        assert!(e.discovers());
        assert_eq!(e.version_target(), "/json/version?token=T");
        assert_eq!(e.ws_url(), "ws://127.0.0.1:3000/?token=T");
        let e = Endpoint::parse("https://grid.example/base/").unwrap();
        assert_eq!(e.version_target(), "/base/json/version");
        assert_eq!(e.host_header(), "grid.example");
        let e = Endpoint::parse("ws://[::1]:9222/devtools/browser/x").unwrap();
        assert_eq!(e.server_name(), "::1");
        assert_eq!(e.ws_url(), "ws://[::1]:9222/devtools/browser/x");
    }

    #[test]
    fn the_identity_and_the_redacted_form_hold_no_secret() {
        let a = Endpoint::parse("http://user:pw@Grid.example:3000/chromium?token=SECRET").unwrap();
        let b = Endpoint::parse("ws://grid.example:3000/chromium/?token=OTHER").unwrap();
        assert_eq!(a.identity(), "ws://grid.example:3000/chromium");
        assert_eq!(a.identity(), b.identity());
        for text in [a.identity(), a.redacted(), format!("{a:?}"), a.to_string()] {
            assert!(!text.contains("SECRET") && !text.contains("pw") && !text.contains("user"), "{text}");
        }
        assert_eq!(a.redacted(), "http://…@Grid.example:3000/chromium?…");
        assert_eq!(a.basic_authorization().as_deref(), Some("Basic dXNlcjpwdw=="));
        assert!(!redact_url("ftp://u:p@h/x?token=S").contains('S'));
        assert!(!redact_url("ftp://u:p@h/x?token=S").contains("u:p"));
    }

    #[test]
    fn a_discovered_url_without_path_or_query_gets_the_users_query() {
        let e = Endpoint::parse("http://127.0.0.1:3000/?token=T").unwrap();
        assert_eq!(e.complete_discovered("ws://127.0.0.1:3000").unwrap(), "ws://127.0.0.1:3000/?token=T");
        assert_eq!(
            e.complete_discovered("ws://127.0.0.1:3000/devtools/browser/abc?x=1").unwrap(),
            "ws://127.0.0.1:3000/devtools/browser/abc?x=1"
        );
        assert!(e.complete_discovered("not a url").is_none());
    }

    #[test]
    fn bad_urls_are_refused_with_the_forms_that_work() {
        for bad in ["ftp://h:1", "127.0.0.1:9222", "ws://", "ws://h:notaport/"] {
            let err = Endpoint::parse(bad).unwrap_err();
            assert!(matches!(err, TransportError::Unsupported { .. }), "{bad}: {err:?}");
        }
    }
}
