#!/usr/bin/env bash
#! Installs what browserd needs on a fresh Debian/Ubuntu machine, only when it is missing, and says what it does.
#
# - Debian's `chromium` (apt) — the managed browser for the demo and the real-browser tests;
# - Debian's `xvfb` (apt) — a virtual display for the headed-Chromium test;
# - nothing else system-wide: Rust (with cargo) must already be there (https://rustup.rs);
# - Node.js (20 or newer) with npm, for the Pi/DSH adapter tests: Debian's `nodejs npm` when missing;
# - npm packages for the adapters are installed (npm ci, pinned lockfiles) by the scripts that use them; the
#   benchmark's side-by-side peers (bench/playwright-mcp, bench/chrome-devtools-mcp, bench/agent-browser: its CLI ships
#   its native binary in the package, pointed at Debian's Chromium by the bench) and the Browserless grid
#   the remote-grid tests run against (bench/browserless, a test component only: SSPL, never bundled) are installed
#   here (npm ci, pinned lockfiles, no browser download) when their node_modules is not current.
# `setup.sh --demo` installs only what the demo needs: Chromium (no xvfb, no Node.js).
set -euo pipefail

demo_only=0
if [ "${1:-}" = "--demo" ]; then demo_only=1; fi

say() { printf '[setup] %s\n' "$*" >&2; }

if ! command -v cargo >/dev/null 2>&1; then
  say "cargo not found: install Rust first (rustup: https://rustup.rs), then run this again."
  exit 1
fi

chromium_found() {
  [ -x /usr/lib/chromium/chromium ] || command -v chromium >/dev/null 2>&1 || [ -n "${BROWSERD_CHROMIUM:-}" ]
}

if chromium_found; then
  say "chromium: found ($(/usr/lib/chromium/chromium --version 2>/dev/null || command -v chromium || echo "$BROWSERD_CHROMIUM"))"
else
  say "chromium: missing — installing Debian's 'chromium' package with apt-get (needs root or sudo; ~300 MB)"
  sudo_cmd=""
  if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq chromium >/dev/null
  say "chromium: installed ($(/usr/lib/chromium/chromium --version 2>/dev/null))"
fi

if [ "$demo_only" = 1 ]; then
  say "demo: nothing else needed (xvfb and Node.js are for the tests)"
  exit 0
fi

if command -v Xvfb >/dev/null 2>&1; then
  say "xvfb: found ($(command -v Xvfb))"
else
  say "xvfb: missing — installing Debian's 'xvfb' package with apt-get (a virtual display for the headed test)"
  sudo_cmd=""
  if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq xvfb >/dev/null
  say "xvfb: installed"
fi

if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  say "node: found ($(node --version)), npm $(npm --version)"
else
  say "node/npm: missing — installing Debian's 'nodejs' and 'npm' packages with apt-get (the adapters need Node 20+)"
  sudo_cmd=""
  if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq nodejs npm >/dev/null
  say "node: installed ($(node --version))"
fi

# The benchmark's side-by-side peers, each pinned in its package.json and lockfile; kept while current.
for pinned in "playwright-mcp:@playwright/mcp" "chrome-devtools-mcp:chrome-devtools-mcp" "agent-browser:agent-browser"; do
  bench_dir="$(dirname "$0")/../bench/${pinned%%:*}"
  package="${pinned#*:}"
  want="$(sed -n "s|.*\"$package\": \"\(.*\)\".*|\1|p" "$bench_dir/package.json")"
  have="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$bench_dir/node_modules/$package/package.json" 2>/dev/null || true)"
  if [ -n "$want" ] && [ "$have" = "$want" ]; then
    say "$package: found $have (bench/${pinned%%:*}, for the benchmark and its tests)"
  else
    say "$package: installing $want in bench/${pinned%%:*} (npm ci, no browser download)"
    (cd "$bench_dir" && PUPPETEER_SKIP_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
      npm ci --no-audit --no-fund --loglevel=error)
    say "$package: installed"
  fi
done

browserless_dir="$(dirname "$0")/../bench/browserless"
browserless_version="$(sed -n 's/.*"@browserless.io\/browserless": "\(.*\)".*/\1/p' "$browserless_dir/package.json")"
installed_version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' \
  "$browserless_dir/node_modules/@browserless.io/browserless/package.json" 2>/dev/null || true)"
if [ "$installed_version" = "$browserless_version" ]; then
  say "browserless: found $installed_version (bench/browserless, for the remote-grid tests)"
else
  say "browserless: installing @browserless.io/browserless $browserless_version in bench/browserless (npm ci, no browser download; ~2 min, ~580 MB)"
  (cd "$browserless_dir" && PUPPETEER_SKIP_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
    npm ci --no-audit --no-fund --loglevel=error)
  say "browserless: installed"
fi
