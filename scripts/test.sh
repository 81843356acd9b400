#!/usr/bin/env bash
#! README command two (and CI): set up what is missing, then check formatting, lint, and run every test
#! (pure core, scripted CDP peer, real Chromium, adapters).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

step() { printf '\n[test] %s\n' "$*" >&2; }

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
