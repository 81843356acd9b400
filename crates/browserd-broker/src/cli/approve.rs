//! `browserd approve <id>`: the user approves the one action an `APPROVAL_REQUIRED` answer named (the terminal's
//! stand-in for a host's approval UI).

use browserd_protocol::hello::ComponentRole;
use browserd_protocol::policy::ApprovalGrantParams;

use super::report_error;
use crate::client::{Client, ConnectOptions};

/// Grants `id`; the exit status is 0 when granted.
pub(crate) async fn run(id: String) -> i32 {
    let options = ConnectOptions { spawn: false, ..ConnectOptions::new(ComponentRole::Cli) };
    let result = match Client::connect(&options).await {
        Ok(client) => client.call(&ApprovalGrantParams { approval: id }).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(granted) => {
            println!(
                "approved: {} (the same call may run once within {} s)",
                granted.approved,
                granted.expires_in_ms / 1000
            );
            0
        }
        Err(e) => {
            report_error(&e.into_error_data());
            1
        }
    }
}
