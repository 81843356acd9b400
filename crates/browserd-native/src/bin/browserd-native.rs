//! A small standalone binary with the real-profile subcommands (`native-host`, `install`, `doctor`, `uninstall`), used
//! by the tests as the native host; `browserd` itself exposes the same subcommands.

use clap::Parser;

/// browserd's real-profile subcommands.
#[derive(Debug, Parser)]
#[command(name = "browserd-native", version)]
struct Cli {
    #[command(subcommand)]
    command: browserd_native::cli::Command,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let code = rt.block_on(browserd_native::cli::run(cli.command))?;
    std::process::exit(code);
}
