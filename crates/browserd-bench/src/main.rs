//! The `browserd-bench` binary: `cargo run --release -p browserd-bench -- --json`.

use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    // Per-phase timings of the provider (e.g. `RUST_LOG=browserd_chromium::observe=debug`) go to stderr.
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() {
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
    }
    let args = browserd_bench::run::Args::parse();
    match browserd_bench::run::run(args).await {
        Ok(0) => std::process::ExitCode::SUCCESS,
        Ok(failures) => {
            eprintln!("browserd-bench: {failures} measurement(s) failed; see the rows with an \"error\" field");
            std::process::ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("browserd-bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
