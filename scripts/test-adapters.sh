#!/usr/bin/env bash
#! Host adapter tests (shared broker client, DSH plugin contract tests, Pi extension and the acceptance walkthroughs
#! with the real `@mariozechner/pi-coding-agent`): installs the pinned npm packages (`npm ci`), builds `browserd`,
#! and runs node's test runner against the real broker and a managed Chromium. Called by scripts/test.sh.
#! Environment: BROWSERD_BIN overrides the browserd binary (default: target/debug/browserd, built here);
#! BROWSERD_FIXTURE_SITE the fixture site binary (default: target/debug/browserd-fixture-site, built here).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[test-adapters] %s\n' "$*" >&2; }

for tool in node npm; do
  command -v "$tool" >/dev/null || { say "$tool is missing: install Node.js 20 or newer (Debian: apt-get install nodejs npm)"; exit 1; }
done
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
  say "Node.js $(node --version) is too old: the adapters need 20 or newer"
  exit 1
fi

if [ -z "${BROWSERD_BIN:-}" ]; then
  say "building browserd (cargo build -p browserd)"
  cargo build -p browserd --quiet
  BROWSERD_BIN="$PWD/target/debug/browserd"
fi
if ! "$BROWSERD_BIN" broker --help >/dev/null 2>&1; then
  say "$BROWSERD_BIN has no \`broker\` subcommand: the adapter tests need \`browserd broker run\`"
  say "(wire browserd_broker::cli into crates/browserd, or point BROWSERD_BIN at a browserd that has it)"
  exit 1
fi
export BROWSERD_BIN
if [ -z "${BROWSERD_FIXTURE_SITE:-}" ]; then
  # The Rust fixture site (the picture check of the vision tests) as a binary the node tests start.
  say "building the fixture site (cargo build -p browserd-fixtures --bin browserd-fixture-site)"
  cargo build -p browserd-fixtures --bin browserd-fixture-site --quiet
  BROWSERD_FIXTURE_SITE="$PWD/target/debug/browserd-fixture-site"
fi
export BROWSERD_FIXTURE_SITE

say "installing the pinned npm packages (npm ci)"
(cd adapters && npm ci --no-audit --no-fund --loglevel=error)

say "running the adapter tests with $BROWSERD_BIN"
cd adapters
exec npm test --silent
