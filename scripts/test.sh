#!/usr/bin/env bash
#! README command two (and CI): set up what is missing, check that `browserd doctor` passes, then check formatting,
#! lint, and run every test (pure core, scripted CDP peer, real Chromium, the extension with its native host, the
#! acceptance suite through `browserd mcp` and the host hooks, the Pi/DSH adapters with the real Pi package). The
#! acceptance suite's disk-full check and the doctor's no-/tmp check need root (CI runs as root); without it they
#! fail, they never skip.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

step() { printf '\n[test] %s\n' "$*" >&2; }

step "browserd doctor (this machine's default path, as a user would check it after setup; exits 1 on a FAIL)"
cargo build -p browserd --bin browserd
target/debug/browserd doctor

step "rustfmt (cargo fmt --all --check)"
cargo fmt --all --check

step "clippy (all targets, -D warnings)"
cargo clippy --workspace --all-targets --quiet -- -D warnings

step "tests"
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast
  cargo test --workspace --doc --quiet
else
  cargo test --workspace --no-fail-fast
fi

step "host adapters (npm ci + node --test against the real broker, Pi and Chromium)"
bash scripts/test-adapters.sh
