//! Plain value types shared by the journal's tables: time, opaque ids, stable codes, origins, outcomes.
//!
//! The validated types ([`OpaqueId`], [`Code`], [`Origin`]) cannot hold free text: that is how the
//! audit ring keeps page content, URL paths and queries, and form values out by construction.

use std::fmt;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::error::{JournalError, Result};

/// Milliseconds since the Unix epoch. Always passed in by the caller: the journal reads no clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct UnixMillis(pub u64);

impl UnixMillis {
    /// This instant plus `duration` (saturating).
    #[must_use]
    pub fn saturating_add(self, duration: Duration) -> Self {
        Self(self.0.saturating_add(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)))
    }

    /// This instant minus `duration` (saturating at the epoch).
    #[must_use]
    pub fn saturating_sub(self, duration: Duration) -> Self {
        Self(self.0.saturating_sub(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)))
    }

    /// The value stored in SQLite (an `INTEGER`, clamped to `i64::MAX`).
    pub(crate) fn to_sql(self) -> i64 {
        i64::try_from(self.0).unwrap_or(i64::MAX)
    }

    /// The value read back from SQLite (negative values read as the epoch).
    pub(crate) fn from_sql(value: i64) -> Self {
        Self(u64::try_from(value).unwrap_or(0))
    }
}

/// Longest [`OpaqueId`], in bytes.
pub const OPAQUE_ID_MAX_LEN: usize = 128;

/// An opaque identifier (a session key, browser key, tab handle, request or trace id): 1 to 128
/// characters from `A-Z a-z 0-9 . _ : - + = ~`. No spaces, slashes, `?`, `&`, `@` or `%`, so it
/// cannot carry a sentence, a URL path or query, or an e-mail address. Use
/// [`OpaqueId::digest_of`] for an identifier that does not fit.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpaqueId(String);

impl OpaqueId {
    /// Validates `id`; fails with [`JournalError::InvalidInput`] naming the rule it breaks.
    pub fn new(id: impl Into<String>) -> Result<Self> {
        let id = id.into();
        if id.is_empty() || id.len() > OPAQUE_ID_MAX_LEN {
            return Err(JournalError::InvalidInput {
                what: "opaque id",
                reason: format!(
                    "it must be 1 to {OPAQUE_ID_MAX_LEN} bytes long, got {}; use OpaqueId::digest_of for longer ids",
                    id.len()
                ),
            });
        }
        if let Some(bad) = id.chars().find(|c| !is_opaque_char(*c)) {
            return Err(JournalError::InvalidInput {
                what: "opaque id",
                reason: format!(
                    "character {bad:?} is not allowed (only A-Z a-z 0-9 . _ : - + = ~); use OpaqueId::digest_of \
                     to store an id that is not opaque"
                ),
            });
        }
        Ok(Self(id))
    }

    /// An opaque id derived from any text: `h:` plus the first 24 hex digits of its SHA-256.
    /// The text itself is not kept.
    #[must_use]
    pub fn digest_of(text: &str) -> Self {
        let digest = Sha256::digest(text.as_bytes());
        let mut id = String::from("h:");
        crate::hash::push_hex(&mut id, &digest[..12]);
        Self(id)
    }

    /// The id's text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OpaqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn is_opaque_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-' | '+' | '=' | '~')
}

/// Longest [`Code`], in bytes.
pub const CODE_MAX_LEN: usize = 64;

/// A stable, machine-readable code such as `CONNECTION_LOST` or `STALE_TARGET`: an upper-case
/// ASCII letter followed by up to 63 of `A-Z 0-9 _`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Code(String);

impl Code {
    /// Validates `code`; fails with [`JournalError::InvalidInput`] naming the rule it breaks.
    pub fn new(code: impl Into<String>) -> Result<Self> {
        let code = code.into();
        let well_formed = code.len() <= CODE_MAX_LEN
            && code.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && code.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if !well_formed {
            return Err(JournalError::InvalidInput {
                what: "code",
                reason: format!(
                    "{code:?} is not a stable code: use an upper-case letter then A-Z, 0-9 or _, at most \
                     {CODE_MAX_LEN} bytes (e.g. CONNECTION_LOST)"
                ),
            });
        }
        Ok(Self(code))
    }

    /// The code's text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A web origin (`scheme://host[:port]`) and nothing else: built from a URL by dropping user info,
/// path, query and fragment. Default ports (80 for http/ws, 443 for https/wss) are dropped too.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin(String);

impl Origin {
    /// The origin of `url`, or `None` when the URL has no host-based origin (`about:blank`,
    /// `data:`, `file:`, a malformed URL).
    #[must_use]
    pub fn from_url(url: &str) -> Option<Self> {
        let (scheme, rest) = url.split_once("://")?;
        let scheme_ok = scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            && scheme.len() <= 32;
        if !scheme_ok {
            return None;
        }
        let scheme = scheme.to_ascii_lowercase();
        if scheme == "file" {
            return None;
        }
        let authority_end = rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len());
        let authority = &rest[..authority_end];
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, host_port)| host_port);
        let (host, port) = split_host_port(host_port)?;
        if host.is_empty() || host.len() > 253 {
            return None;
        }
        let host = host.to_ascii_lowercase();
        let port = match (scheme.as_str(), port) {
            ("http" | "ws", Some(80)) | ("https" | "wss", Some(443)) => None,
            (_, port) => port,
        };
        Some(Self(match port {
            Some(port) => format!("{scheme}://{host}:{port}"),
            None => format!("{scheme}://{host}"),
        }))
    }

    /// The origin's text, `scheme://host[:port]`.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Splits `host[:port]` or `[v6][:port]`; `None` when either part is malformed.
fn split_host_port(host_port: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if let Some(v6) = host_port.strip_prefix('[') {
        let (inside, after) = v6.split_once(']')?;
        if inside.is_empty() || !inside.chars().all(|c| c.is_ascii_hexdigit() || matches!(c, ':' | '.')) {
            return None;
        }
        let host = &host_port[..inside.len() + 2];
        match after {
            "" => (host, None),
            _ => (host, Some(after.strip_prefix(':')?)),
        }
    } else {
        let (host, port) = match host_port.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        };
        if !host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')) {
            return None;
        }
        (host, port)
    };
    let port = match port {
        None | Some("") => None,
        Some(port) => Some(port.parse::<u16>().ok()?),
    };
    Some((host, port))
}

/// Declares a closed enum stored as a fixed lower-camel-case string.
macro_rules! stored_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident => $text:literal, )+ }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name { $( $(#[$vmeta])* $variant, )+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The stored (and displayed) name.
            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text,)+ }
            }

            /// The value with this stored name.
            #[must_use]
            pub fn from_name(name: &str) -> Option<Self> {
                match name { $($text => Some(Self::$variant),)+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use stored_enum;

stored_enum! {
    /// How an action ended (BRIEF §6).
    pub enum Outcome {
        /// It did what was asked.
        Succeeded => "succeeded",
        /// It failed.
        Failed => "failed",
        /// It was cancelled.
        Cancelled => "cancelled",
        /// Nobody knows whether it happened.
        Unknown => "unknown",
    }
}

stored_enum! {
    /// How far an action's input got (BRIEF §6).
    pub enum Dispatch {
        /// No input was sent.
        NotDispatched => "notDispatched",
        /// Input was sent.
        Dispatched => "dispatched",
        /// Input was sent and its effect was observed.
        Observed => "observed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_keeps_scheme_host_and_port_only() {
        let cases = [
            ("https://Example.COM/search?q=secret#frag", Some("https://example.com")),
            ("https://user:pw@example.com:8443/a", Some("https://example.com:8443")),
            ("http://example.com:80/", Some("http://example.com")),
            ("https://example.com:443?x=1", Some("https://example.com")),
            ("http://[::1]:9222/json", Some("http://[::1]:9222")),
            ("http://127.0.0.1:3000", Some("http://127.0.0.1:3000")),
            ("chrome-extension://abcdef/popup.html", Some("chrome-extension://abcdef")),
            ("about:blank", None),
            ("data:text/html,<p>hi</p>", None),
            ("file:///etc/passwd", None),
            ("https://exa mple.com/", None),
            ("https://example.com:99999/", None),
            ("https:///path", None),
        ];
        for (url, want) in cases {
            assert_eq!(Origin::from_url(url).as_ref().map(Origin::as_str), want, "{url}");
        }
    }

    #[test]
    fn opaque_ids_refuse_free_text() {
        assert!(OpaqueId::new("t42").is_ok());
        assert!(OpaqueId::new("codex:019a7c1e-aaaa").is_ok());
        for bad in ["", "hello world", "https://a.example/path", "a?b=c", "me@example.com", "50%", &"x".repeat(129)] {
            let err = OpaqueId::new(bad).unwrap_err();
            assert!(matches!(err, JournalError::InvalidInput { what: "opaque id", .. }), "{bad}: {err}");
        }
        let digest = OpaqueId::digest_of("https://a.example/path?q=1");
        assert_eq!(digest.as_str().len(), 26);
        assert!(OpaqueId::new(digest.as_str()).is_ok());
        assert_ne!(digest, OpaqueId::digest_of("https://a.example/path?q=2"));
    }

    #[test]
    fn codes_are_stable_upper_case_names() {
        assert!(Code::new("CONNECTION_LOST").is_ok());
        assert!(Code::new("E2").is_ok());
        for bad in ["", "connection_lost", "_X", "HAS SPACE", "X-Y", &"A".repeat(65)] {
            assert!(Code::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn stored_enums_round_trip() {
        for outcome in Outcome::ALL {
            assert_eq!(Outcome::from_name(outcome.as_str()), Some(*outcome));
        }
        for dispatch in Dispatch::ALL {
            assert_eq!(Dispatch::from_name(dispatch.as_str()), Some(*dispatch));
        }
        assert_eq!(Dispatch::from_name("sent"), None);
    }

    #[test]
    fn millis_saturate() {
        assert_eq!(UnixMillis(5).saturating_sub(Duration::from_millis(9)), UnixMillis(0));
        assert_eq!(UnixMillis(u64::MAX).saturating_add(Duration::from_secs(1)), UnixMillis(u64::MAX));
        assert_eq!(UnixMillis(u64::MAX).to_sql(), i64::MAX);
        assert_eq!(UnixMillis::from_sql(-1), UnixMillis(0));
    }
}
