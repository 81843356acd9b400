//! The `browserd-bench` binary: `cargo run --release -p browserd-bench -- --json`.

use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
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
