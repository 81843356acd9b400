//! `browserd-fixture-site`: runs the loopback fixture site for tests outside Rust (the adapters' node tests). Prints
//! one JSON line (`{"url": "http://127.0.0.1:P1", "crossOriginUrl": "http://localhost:P2"}`) and serves until its
//! stdin closes.

use std::io::{Read as _, Write as _};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::io::Result<()> {
    let site = browserd_fixtures::FixtureSite::start().await?;
    let line = serde_json::json!({"url": site.url(""), "crossOriginUrl": site.cross_origin_url("")});
    let mut out = std::io::stdout();
    writeln!(out, "{line}")?;
    out.flush()?;
    // Serve until the parent closes stdin (or dies).
    tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
    })
    .await
    .ok();
    site.shutdown().await;
    Ok(())
}
