//! The site policy's hook into the provider ([`OriginCheck`]): the broker decides which origins a tab may show, the
//! provider asks it where only the provider knows the URL — the main document an observation or action finds, the
//! document of every frame it renders or acts in.

use std::sync::Arc;

use browserd_core::provider::{Provider, ProviderError, ProviderErrorKind, ProviderKind, TabHandle};

use crate::provider::ChromiumProvider;

/// The check: `(tab, url, real_profile)` → why the URL's origin is not authorised, or `None`. Without a tab (a
/// request browserd cannot place in one of its tabs), the policy that applies whatever the session judges it.
pub type OriginCheckFn = dyn Fn(Option<TabHandle>, &str, bool) -> Option<String> + Send + Sync;

/// The broker's origin check (`ChromiumConfig::origin_check`); without one every origin is allowed.
#[derive(Clone)]
pub struct OriginCheck(pub Arc<OriginCheckFn>);

impl std::fmt::Debug for OriginCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OriginCheck")
    }
}

/// The message prefix that makes a provider error `ORIGIN_NOT_AUTHORISED` at the broker.
pub const ORIGIN_NOT_AUTHORISED_PREFIX: &str = "ORIGIN_NOT_AUTHORISED: ";

impl ChromiumProvider {
    /// Why `url` may not be shown or acted on in `tab`, or `None`. Callers pass the URL the tab record stands for
    /// ([`crate::state::Tab::policy_url`]): the browser's error page after a stopped navigation is that navigation's.
    pub(crate) fn origin_refusal(&self, tab: TabHandle, url: &str) -> Option<String> {
        let check = self.config.origin_check.as_ref()?;
        (check.0)(Some(tab), url, self.kind() == ProviderKind::Extension)
    }

    /// [`Self::origin_refusal`] as the provider error an observation answers with.
    pub(crate) fn origin_error(&self, tab: TabHandle, url: &str) -> Result<(), ProviderError> {
        match self.origin_refusal(tab, url) {
            None => Ok(()),
            Some(why) => Err(ProviderError::new(
                ProviderErrorKind::Refused,
                format!("{ORIGIN_NOT_AUTHORISED_PREFIX}tab {} shows {why}; nothing of it was read", tab.0),
            )),
        }
    }
}

/// The origin of a URL as a frame line shows it (`http://localhost:5173`), else the URL's scheme.
#[must_use]
pub(crate) fn shown_origin(url: &str) -> String {
    match url.find("://") {
        Some(end) => {
            let rest = &url[end + 3..];
            let host_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let host = &rest[..host_end];
            let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
            format!("{}://{}", &url[..end], host)
        }
        None => url.split(':').next().unwrap_or_default().to_owned(),
    }
}
