//! `browserd broker run|stop|status`: the broker in the foreground (or as the on-demand daemon), a graceful stop, its
//! status.

use browserd_ipc::RuntimeDir;
use browserd_protocol::hello::ComponentRole;
use browserd_protocol::lifecycle::{StatusParams, StatusResult};
use serde_json::json;

use super::args::BrokerAction;
use super::render::{status_text, to_json};
use super::{init_logging, report_error};
use crate::client::{Client, ClientError, ConnectOptions};
use crate::config;
use crate::server::{Broker, BrokerError};

pub(super) async fn run(action: BrokerAction) -> anyhow::Result<i32> {
    match action {
        BrokerAction::Run { daemon } => {
            init_logging("info");
            let effective = match config::load() {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("error: {e}");
                    return Ok(1);
                }
            };
            let dir = match RuntimeDir::from_env() {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("error: {e}");
                    return Ok(1);
                }
            };
            let env = |name: &str| std::env::var(name).ok();
            let state_dir = config::state_dir(&env);
            if let Some(dir) = &state_dir {
                let _ = std::fs::create_dir_all(dir);
            }
            let broker = Broker::from_config(effective.config, state_dir.as_deref());
            if let Some(dir) = &state_dir {
                broker.set_journal_path(dir.join(browserd_journal::FILE_NAME));
            }
            let shutdown = broker.shutdown_token();
            tokio::spawn(async move {
                let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(s) => s,
                    Err(_) => return,
                };
                tokio::select! {
                    _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
                    _ = tokio::signal::ctrl_c() => tracing::info!("interrupted: shutting down"),
                }
                shutdown.cancel();
            });
            match broker.run(&dir).await {
                Ok(summary) => {
                    tracing::info!(?summary, "broker exited");
                    Ok(0)
                }
                Err(BrokerError::AlreadyRunning(e)) => {
                    if daemon {
                        tracing::info!(%e, "another broker already serves this user");
                        Ok(0)
                    } else {
                        eprintln!("error: {e}");
                        Ok(3)
                    }
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    Ok(1)
                }
            }
        }
        BrokerAction::Stop => {
            let options = ConnectOptions { spawn: false, ..ConnectOptions::new(ComponentRole::Cli) };
            match Client::connect(&options).await {
                Ok(client) => match client.shutdown_broker().await {
                    Ok(()) => {
                        println!("broker stopping: sessions are disposed and the managed browser closed");
                        Ok(0)
                    }
                    Err(e) => {
                        report_error(&e.into_error_data());
                        Ok(1)
                    }
                },
                Err(ClientError::Connect(browserd_ipc::ConnectError::NotRunning { .. })) => {
                    println!("no broker is running");
                    Ok(0)
                }
                Err(e) => {
                    report_error(&e.into_error_data());
                    Ok(1)
                }
            }
        }
        BrokerAction::Status { json } => {
            let options = ConnectOptions { spawn: false, ..ConnectOptions::new(ComponentRole::Cli) };
            match Client::connect(&options).await {
                Ok(client) => match client.call(&StatusParams::default()).await {
                    Ok(status) => {
                        print_status(&status, json);
                        Ok(0)
                    }
                    Err(e) => {
                        report_error(&e.into_error_data());
                        Ok(1)
                    }
                },
                Err(ClientError::Connect(browserd_ipc::ConnectError::NotRunning { path })) => {
                    if json {
                        println!("{}", json!({"running": false, "socket": path}));
                    } else {
                        println!("broker: not running (socket {})", path.display());
                    }
                    Ok(0)
                }
                Err(e) => {
                    report_error(&e.into_error_data());
                    Ok(1)
                }
            }
        }
    }
}

fn print_status(status: &StatusResult, json_out: bool) {
    println!("{}", if json_out { to_json(status) } else { status_text(status) });
}
