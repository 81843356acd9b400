//! The site policy: origin patterns, the `[policy]` allow and deny lists, a session's own lists, the built-in deny
//! list for the user's real profile, and the one decision every navigation, frame, observation and action is checked
//! with ([`SitePolicy::decide`]).
//!
//! # Pattern syntax
//! `[scheme://]host[:port]`, no path:
//! - `scheme` is `http`, `https` or `*`; left out, both `http` and `https` match.
//! - `host` is a name or an IP address (`127.0.0.1`, `[::1]`), matched case-insensitively and exactly; `*.example.com`
//!   matches `example.com` and every subdomain of it; `*` matches every host.
//! - `port` is a number or `*`; left out, any port matches.
//!
//! Only `http:` and `https:` URLs have an origin the site policy judges; `about:blank` and the like are left to the
//! scheme policy.

use std::fmt;

/// The deny list applied when the browser is the user's own (the extension), unless `[policy] real_profile_defaults
/// = false` or the origin is allowed by name (`[policy] allow` or the session's allowed origins, not by `*`): password
/// managers, banking and payment logins, and SSO / identity administration consoles.
pub const REAL_PROFILE_DENY: &[&str] = &[
    // Password managers.
    "*.1password.com",
    "*.1password.eu",
    "*.lastpass.com",
    "*.bitwarden.com",
    "*.bitwarden.eu",
    "*.dashlane.com",
    "*.keepersecurity.com",
    "*.nordpass.com",
    "pass.proton.me",
    "passwords.google.com",
    // Banking and payment logins.
    "*.paypal.com",
    "*.chase.com",
    "*.bankofamerica.com",
    "*.wellsfargo.com",
    "*.citi.com",
    "*.capitalone.com",
    "*.americanexpress.com",
    "*.usbank.com",
    "*.hsbc.com",
    "*.barclays.co.uk",
    "*.revolut.com",
    "*.wise.com",
    // SSO and identity administration.
    "admin.google.com",
    "admin.microsoft.com",
    "entra.microsoft.com",
    "portal.azure.com",
    "*.okta.com",
    "*.onelogin.com",
    "console.aws.amazon.com",
    "signin.aws.amazon.com",
    "console.cloud.google.com",
    "admin.atlassian.com",
];

/// An origin: scheme, lower-case host (IPv6 in brackets) and port (the scheme's default when the URL names none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `http` or `https`.
    pub scheme: String,
    /// Lower-case host.
    pub host: String,
    /// Port.
    pub port: u16,
}

impl Origin {
    /// The origin of an `http:`/`https:` URL; `None` for any other URL (the site policy does not judge it).
    #[must_use]
    pub fn of(url: &str) -> Option<Origin> {
        let (scheme, rest) = url.split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "http" => 80,
            "https" => 443,
            _ => return None,
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
        let (host, port) = split_host_port(authority)?;
        if host.is_empty() {
            return None;
        }
        let port = match port {
            None | Some("") => default_port,
            Some(p) => p.parse().ok()?,
        };
        Some(Origin { scheme, host: host.to_ascii_lowercase(), port })
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let default = matches!((self.scheme.as_str(), self.port), ("http", 80) | ("https", 443));
        if default {
            write!(f, "{}://{}", self.scheme, self.host)
        } else {
            write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
        }
    }
}

/// `host` and `port` of an authority (`[::1]:8080`, `example.com`, `a.b:443`).
fn split_host_port(authority: &str) -> Option<(&str, Option<&str>)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let close = rest.find(']')?;
        let host = &authority[..close + 2];
        let after = &rest[close + 1..];
        return Some((host, after.strip_prefix(':')));
    }
    Some(match authority.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (authority, None),
    })
}

/// One origin pattern (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginPattern {
    text: String,
    scheme: Option<String>,
    host: HostPattern,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    Any,
    Exact(String),
    Domain(String),
}

impl OriginPattern {
    /// Parses a pattern.
    ///
    /// # Errors
    /// What is wrong with it, with the syntax.
    pub fn parse(text: &str) -> Result<OriginPattern, String> {
        let t = text.trim();
        let bad = |why: &str| {
            Err(format!(
                "{t:?} is not an origin pattern ({why}); use `[scheme://]host[:port]`, e.g. `https://example.com`, `*.example.com`, `localhost:*` or `*`"
            ))
        };
        if t.is_empty() {
            return bad("it is empty");
        }
        let (scheme, rest) = match t.split_once("://") {
            Some((s, r)) => {
                let s = s.to_ascii_lowercase();
                if !matches!(s.as_str(), "http" | "https" | "*") {
                    return bad("the scheme must be http, https or *");
                }
                ((s != "*").then_some(s), r)
            }
            None => (None, t),
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', '@']) {
            return bad("origins have no path, query or user");
        }
        let Some((host, port)) = split_host_port(rest) else { return bad("the IPv6 address is not closed by `]`") };
        let port = match port {
            None | Some("*") => None,
            Some(p) => match p.parse::<u16>() {
                Ok(p) => Some(p),
                Err(_) => return bad("the port must be a number or *"),
            },
        };
        let host = host.to_ascii_lowercase();
        let host = if host == "*" {
            HostPattern::Any
        } else if let Some(domain) = host.strip_prefix("*.") {
            if domain.is_empty() || domain.contains('*') {
                return bad("`*.` must be followed by a domain");
            }
            HostPattern::Domain(domain.to_owned())
        } else if host.is_empty() || host.contains('*') {
            return bad("`*` may stand only for the whole host or its leading labels (`*.example.com`)");
        } else {
            HostPattern::Exact(host)
        };
        Ok(OriginPattern { text: t.to_owned(), scheme, host, port })
    }

    /// Parses every pattern of a list.
    ///
    /// # Errors
    /// The first bad pattern's error.
    pub fn parse_all<S: AsRef<str>>(items: &[S]) -> Result<Vec<OriginPattern>, String> {
        items.iter().map(|i| OriginPattern::parse(i.as_ref())).collect()
    }

    /// Whether `origin` matches.
    #[must_use]
    pub fn matches(&self, origin: &Origin) -> bool {
        self.scheme.as_ref().is_none_or(|s| *s == origin.scheme)
            && self.port.is_none_or(|p| p == origin.port)
            && match &self.host {
                HostPattern::Any => true,
                HostPattern::Exact(h) => *h == origin.host,
                HostPattern::Domain(d) => {
                    origin.host == *d || origin.host.strip_suffix(d.as_str()).is_some_and(|s| s.ends_with('.'))
                }
            }
    }

    /// Whether it matches every host (`*`, `https://*`).
    #[must_use]
    pub fn is_wildcard(&self) -> bool {
        self.host == HostPattern::Any
    }

    /// The pattern as written.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// Why an origin is refused: the origin, which list refused it and what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    /// The refused origin.
    pub origin: String,
    /// Which rule refused it.
    pub rule: String,
    /// What the user can change to allow it.
    pub change: String,
}

impl Denied {
    /// The refusal as one sentence for an error message.
    #[must_use]
    pub fn sentence(&self) -> String {
        format!("{} is not authorised ({})", self.origin, self.rule)
    }
}

/// A session's own lists, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionSites {
    /// When not empty: the only origins the session may use.
    pub allowed: Vec<OriginPattern>,
    /// Never used by the session.
    pub blocked: Vec<OriginPattern>,
}

impl SessionSites {
    /// Parses the wire form.
    ///
    /// # Errors
    /// The first bad pattern, naming the flag.
    pub fn parse(p: &browserd_protocol::policy::SessionPolicy) -> Result<SessionSites, String> {
        let allowed = OriginPattern::parse_all(&p.allowed_origins).map_err(|e| format!("--allowed-origins: {e}"))?;
        let blocked = OriginPattern::parse_all(&p.blocked_origins).map_err(|e| format!("--blocked-origins: {e}"))?;
        Ok(SessionSites { allowed, blocked })
    }
}

/// The broker's `[policy]` site lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitePolicy {
    /// When not empty: the only origins allowed.
    pub allow: Vec<OriginPattern>,
    /// Never allowed; wins over every allow list.
    pub deny: Vec<OriginPattern>,
    /// Apply [`REAL_PROFILE_DENY`] on the user's own browser.
    pub real_profile_defaults: bool,
    real_profile_deny: Vec<OriginPattern>,
}

impl Default for SitePolicy {
    fn default() -> Self {
        SitePolicy::new(Vec::new(), Vec::new(), true)
    }
}

impl SitePolicy {
    /// A policy of these lists.
    #[must_use]
    pub fn new(allow: Vec<OriginPattern>, deny: Vec<OriginPattern>, real_profile_defaults: bool) -> Self {
        let real_profile_deny = REAL_PROFILE_DENY.iter().filter_map(|p| OriginPattern::parse(p).ok()).collect();
        SitePolicy { allow, deny, real_profile_defaults, real_profile_deny }
    }

    /// Whether `url` may be shown and acted on in a session with `session`'s lists, on the user's own browser
    /// (`real_profile`) or a managed one. Non-web URLs are not judged here (`Ok`).
    ///
    /// # Errors
    /// Which rule refused the origin and what to change.
    pub fn decide(&self, url: &str, session: Option<&SessionSites>, real_profile: bool) -> Result<(), Denied> {
        let Some(origin) = Origin::of(url) else { return Ok(()) };
        let shown = origin.to_string();
        let denied = |rule: String, change: String| Err(Denied { origin: shown.clone(), rule, change });
        let host = &origin.host;
        if let Some(p) = session.and_then(|s| s.blocked.iter().find(|p| p.matches(&origin))) {
            return denied(
                format!("this session's --blocked-origins has `{}`", p.as_str()),
                "start `browserd mcp` without that --blocked-origins pattern".to_owned(),
            );
        }
        if let Some(p) = self.deny.iter().find(|p| p.matches(&origin)) {
            return denied(
                format!("`[policy] deny` has `{}`", p.as_str()),
                format!("remove `{}` from `deny` in the `[policy]` section of the browserd config", p.as_str()),
            );
        }
        let config_allows = self.allow.iter().find(|p| p.matches(&origin));
        if !self.allow.is_empty() && config_allows.is_none() {
            return denied(
                "it is not in `[policy] allow`".to_owned(),
                format!("add `{host}` to `allow` in the `[policy]` section of the browserd config"),
            );
        }
        let session_allows = session.and_then(|s| s.allowed.iter().find(|p| p.matches(&origin)));
        if session.is_some_and(|s| !s.allowed.is_empty()) && session_allows.is_none() {
            return denied(
                "it is not in this session's --allowed-origins".to_owned(),
                format!("add `{host}` to `browserd mcp --allowed-origins`"),
            );
        }
        if real_profile && self.real_profile_defaults {
            let named = |p: Option<&OriginPattern>| p.is_some_and(|p| !p.is_wildcard());
            if let Some(p) = self.real_profile_deny.iter().find(|p| p.matches(&origin))
                && !named(config_allows)
                && !named(session_allows)
            {
                return denied(
                    format!(
                        "the real-profile default deny list has `{}` (password managers, banking, SSO admin)",
                        p.as_str()
                    ),
                    format!("add `{host}` to `allow` in the `[policy]` section of the browserd config"),
                );
            }
        }
        Ok(())
    }

    /// The wire form of the policy in force for a session.
    #[must_use]
    pub fn status(
        &self,
        session: Option<&SessionSites>,
        real_profile: bool,
    ) -> browserd_protocol::policy::PolicyStatus {
        let texts = |v: &[OriginPattern]| v.iter().map(|p| p.as_str().to_owned()).collect::<Vec<_>>();
        browserd_protocol::policy::PolicyStatus {
            allow: texts(&self.allow),
            deny: texts(&self.deny),
            session: browserd_protocol::policy::SessionPolicy {
                allowed_origins: session.map(|s| texts(&s.allowed)).unwrap_or_default(),
                blocked_origins: session.map(|s| texts(&s.blocked)).unwrap_or_default(),
            },
            real_profile_deny: if real_profile && self.real_profile_defaults {
                texts(&self.real_profile_deny)
            } else {
                Vec::new()
            },
            require_approval: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pats(items: &[&str]) -> Vec<OriginPattern> {
        OriginPattern::parse_all(items).unwrap()
    }

    /// The extension's gate carries its own copy of [`REAL_PROFILE_DENY`] (it must fail closed before the broker has
    /// sent the policy): the two lists must be the same, in the same order.
    #[test]
    fn the_extensions_copy_of_the_real_profile_deny_list_is_the_same() {
        let js = include_str!("../../../../extension/lib/sites.js");
        let start = js.find("export const REAL_PROFILE_DENY = [").expect("sites.js declares REAL_PROFILE_DENY");
        let body = &js[start..];
        let body = &body[body.find('[').unwrap() + 1..body.find("];").expect("the array is closed by `];`")];
        let copied: Vec<&str> = body
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(|item| {
                item.strip_prefix('\'')
                    .and_then(|i| i.strip_suffix('\''))
                    .unwrap_or_else(|| panic!("sites.js REAL_PROFILE_DENY item {item:?} is not a single-quoted string"))
            })
            .collect();
        assert_eq!(copied, REAL_PROFILE_DENY, "extension/lib/sites.js REAL_PROFILE_DENY differs from the broker's");
    }

    #[test]
    fn origins_are_read_from_web_urls_only() {
        let o = Origin::of("HTTPS://User:pw@Example.COM/a?b#c").unwrap();
        assert_eq!((o.scheme.as_str(), o.host.as_str(), o.port), ("https", "example.com", 443));
        assert_eq!(o.to_string(), "https://example.com");
        assert_eq!(Origin::of("http://127.0.0.1:8080/x").unwrap().to_string(), "http://127.0.0.1:8080");
        assert_eq!(Origin::of("http://[::1]:9/").unwrap().host, "[::1]");
        for other in ["about:blank", "data:text/html,x", "file:///etc/passwd", "chrome://settings", "javascript:1"] {
            assert_eq!(Origin::of(other), None, "{other}");
        }
    }

    #[test]
    fn patterns_match_scheme_host_and_port_as_documented() {
        let o = |u: &str| Origin::of(u).unwrap();
        let p = |t: &str| OriginPattern::parse(t).unwrap();
        assert!(p("example.com").matches(&o("http://example.com:81/")));
        assert!(p("example.com").matches(&o("https://example.com")));
        assert!(!p("example.com").matches(&o("https://www.example.com")));
        assert!(p("*.example.com").matches(&o("https://a.b.example.com")));
        assert!(p("*.example.com").matches(&o("https://example.com")));
        assert!(!p("*.example.com").matches(&o("https://badexample.com")));
        assert!(p("https://example.com").matches(&o("https://example.com:443")));
        assert!(!p("https://example.com").matches(&o("http://example.com")));
        assert!(p("localhost:*").matches(&o("http://localhost:5173")));
        assert!(p("localhost:8080").matches(&o("http://localhost:8080")));
        assert!(!p("localhost:8080").matches(&o("http://localhost:8081")));
        assert!(p("*").matches(&o("https://anything.test")));
        assert!(p("*://[::1]").matches(&o("http://[::1]:3000")));
        for bad in ["", "https://example.com/path", "ftp://x", "ex*mple.com", "*.", "host:port", "u@host"] {
            let e = OriginPattern::parse(bad).unwrap_err();
            assert!(e.contains("[scheme://]host[:port]"), "{bad}: {e}");
        }
    }

    #[test]
    fn deny_wins_then_allow_lists_narrow_then_real_profile_defaults() {
        let policy = SitePolicy::new(Vec::new(), pats(&["evil.test"]), true);
        assert!(policy.decide("https://ok.test/", None, false).is_ok());
        assert!(policy.decide("about:blank", None, true).is_ok());
        let d = policy.decide("https://evil.test/x", None, false).unwrap_err();
        assert!(d.rule.contains("`[policy] deny` has `evil.test`") && d.change.contains("remove `evil.test`"), "{d:?}");

        // The real-profile defaults apply only to the user's own browser, and an allow by name lifts them.
        assert!(policy.decide("https://my.1password.com/", None, false).is_ok());
        let d = policy.decide("https://my.1password.com/", None, true).unwrap_err();
        assert!(d.rule.contains("real-profile default deny list") && d.change.contains("add `my.1password.com`"));
        let allowing = SitePolicy::new(pats(&["my.1password.com", "*"]), Vec::new(), true);
        assert!(allowing.decide("https://my.1password.com/", None, true).is_ok());
        let wildcard = SitePolicy::new(pats(&["*"]), Vec::new(), true);
        assert!(wildcard.decide("https://vault.bitwarden.com/", None, true).is_err());
        let off = SitePolicy::new(Vec::new(), Vec::new(), false);
        assert!(off.decide("https://vault.bitwarden.com/", None, true).is_ok());

        // A session narrows: its blocked list and its allowed list; the config's deny list still wins.
        let session = SessionSites { allowed: pats(&["*.ok.test", "evil.test"]), blocked: pats(&["bad.ok.test"]) };
        assert!(policy.decide("https://a.ok.test/", Some(&session), false).is_ok());
        let d = policy.decide("https://bad.ok.test/", Some(&session), false).unwrap_err();
        assert!(d.rule.contains("--blocked-origins"), "{d:?}");
        let d = policy.decide("https://else.test/", Some(&session), false).unwrap_err();
        assert!(d.change.contains("--allowed-origins"), "{d:?}");
        assert!(policy.decide("https://evil.test/", Some(&session), false).unwrap_err().rule.contains("[policy] deny"));

        // A config allow list refuses everything else.
        let only = SitePolicy::new(pats(&["https://ok.test"]), Vec::new(), true);
        assert!(only.decide("https://ok.test/a", None, false).is_ok());
        assert!(only.decide("http://ok.test/a", None, false).unwrap_err().rule.contains("not in `[policy] allow`"));
    }
}
