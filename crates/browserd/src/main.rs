//! The `browserd` binary: every subcommand of the product (demo, broker, CLI tools, MCP server, native host).

fn main() {
    println!("browserd {}", env!("CARGO_PKG_VERSION"));
}
