//! A stand-in for the `browserd` binary with only this crate's subcommands, for trying the CLI, the on-demand
//! broker start and the hooks by hand: `cargo run -p browserd-broker --example mini -- status`.

use clap::Parser;

/// browserd (broker subcommands only).
#[derive(Debug, Parser)]
#[command(name = "browserd")]
struct Cli {
    #[command(subcommand)]
    command: browserd_broker::cli::Command,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let code = rt.block_on(browserd_broker::cli::run(cli.command))?;
    std::process::exit(code);
}
