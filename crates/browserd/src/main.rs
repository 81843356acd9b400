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

fn main() -> anyhow::Result<()> {
    malloc::reexec_broker_with_tunables();
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let code = rt.block_on(async {
        match cli.command {
            Command::Demo(args) => demo::run(args).await,
            Command::Mcp(args) => browserd_mcp::run(&args).await.map(|()| 0),
            Command::Broker(cmd) => browserd_broker::cli::run(cmd).await,
            Command::Native(cmd) => browserd_native::cli::run(cmd).await,
        }
    })?;
    std::process::exit(code);
}
