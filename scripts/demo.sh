#!/usr/bin/env bash
#! README command one: set up what is missing, build browserd, and run the demo on a managed headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --demo
printf '[demo] building browserd (release; the first build takes several minutes, cargo shows its progress)…\n' >&2
cargo build --release -p browserd
exec ./target/release/browserd demo "$@"
