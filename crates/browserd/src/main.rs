//! The `browserd` binary: every subcommand of the product — the demo, the broker and its CLI tools and host hooks,
//! the MCP server, and the native-messaging host with install/doctor/uninstall.

mod demo;
mod malloc;

use clap::{Parser, Subcommand};

/// browserd: a local browser runtime for AI agents.
#[derive(Debug, Parser)]
#[command(name = "browserd", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run an agent session on a managed Chromium through three turns and print what happens to each tab.
    Demo(demo::DemoArgs),
    /// Serve browserd's tools to an MCP host (Codex, Claude Code, …) over stdio.
    Mcp(browserd_mcp::McpArgs),
    #[command(flatten)]
    Broker(browserd_broker::cli::Command),
    #[command(flatten)]
    Native(browserd_native::cli::Command),
}

/// A closed stdout (`browserd status | head -1`) ends the command quietly, as it would any Unix tool: Rust ignores
/// SIGPIPE, so `println!` into a closed pipe panics; that one panic becomes a silent exit.
fn quiet_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.contains("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

fn main() -> anyhow::Result<()> {
    quiet_on_broken_pipe();
    malloc::reexec_broker_with_tunables();
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let code = rt.block_on(async {
        match cli.command {
            Command::Demo(args) => demo::run(args).await,
            Command::Mcp(args) => browserd_mcp::run(&args).await.map(|()| 0),
            Command::Broker(cmd) => {
                // One broker per state directory and profile: a second one refuses here, naming the first.
                let _claim = match &cmd {
                    browserd_broker::cli::Command::Broker {
                        action: browserd_broker::cli::BrokerAction::Run { .. },
                    } => match browserd_broker::claim::before_broker_run() {
                        Ok(claim) => claim,
                        Err(e) => {
                            eprintln!("error: {e}");
                            return Ok(4);
                        }
                    },
                    _ => None,
                };
                browserd_broker::cli::run(cmd).await
            }
            Command::Native(cmd) => browserd_native::cli::run(cmd).await,
        }
    })?;
    std::process::exit(code);
}
