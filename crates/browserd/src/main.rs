//! The `browserd` binary: every subcommand of the product (demo now; broker, CLI tools, MCP server and native host
//! as they land).

mod demo;

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
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let code = rt.block_on(async {
        match cli.command {
            Command::Demo(args) => demo::run(args).await,
        }
    })?;
    std::process::exit(code);
}
