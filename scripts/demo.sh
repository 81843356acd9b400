#!/usr/bin/env bash
#! README command one: set up what is missing, build browserd, and run the demo on a managed headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
printf '[demo] building browserd (release)…\n' >&2
cargo build --release -q -p browserd
exec ./target/release/browserd demo "$@"
