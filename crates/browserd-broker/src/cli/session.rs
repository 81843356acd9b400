//! The CLI's browser session: its name (per parent shell unless named) and opening it with its tools active.

use browserd_protocol::lifecycle::{HostKind, SessionOpenParams, ToolsActivateParams};
use browserd_protocol::{ErrorCode, ErrorData, SessionId};

use crate::client::{Client, ClientError};

/// The CLI session name: `--session`, else `$BROWSERD_SESSION`, else one per parent shell (`shell-<ppid>`).
#[must_use]
pub fn session_name(explicit: Option<&str>) -> String {
    if let Some(name) = explicit.filter(|n| !n.trim().is_empty()) {
        return name.to_owned();
    }
    if let Ok(name) = std::env::var("BROWSERD_SESSION")
        && !name.trim().is_empty()
    {
        return name;
    }
    format!("shell-{}", nix::unistd::getppid())
}

/// Opens (or re-attaches) the CLI session and activates its browser tools.
///
/// # Errors
/// The broker refused, or is unreachable.
pub async fn cli_session(client: &Client, name: &str) -> Result<SessionId, ClientError> {
    cli_session_with(client, name, false).await
}

/// [`cli_session`], with `advanced` also activating the advanced tier; refused by policy, it is an error that names
/// the config key to change.
///
/// # Errors
/// The broker refused (also the advanced tier), or is unreachable.
pub async fn cli_session_with(client: &Client, name: &str, advanced: bool) -> Result<SessionId, ClientError> {
    let open = SessionOpenParams {
        host: HostKind::Cli,
        host_session_id: name.to_owned(),
        label: None,
        policy: None,
        browser: None,
    };
    let opened = client.call(&open).await?;
    if !opened.tools.is_active() || advanced {
        let set = client.call(&ToolsActivateParams { session: opened.session.clone(), advanced }).await?;
        if advanced && !set.advanced {
            let why = set.advanced_refused.map_or_else(|| "refused".to_owned(), |r| super::render::wire(&r));
            let next = set.advanced_next_step.unwrap_or_default();
            return Err(ClientError::Rpc(Box::new(
                ErrorData::new(ErrorCode::PolicyBlocked, format!("the advanced tier was not activated ({why})"))
                    .with_next_step(next),
            )));
        }
    }
    Ok(opened.session)
}
