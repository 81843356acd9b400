#!/usr/bin/env bash
#! Builds the npm package (npm/ with the linux-x64 `browserd` binary in vendor/linux-x64/) and packs it with
#! `npm pack`, printing the tarball's path on stdout. Usage: scripts/npm-package.sh [--bin PATH] [--out DIR]
#! --bin: use this browserd binary (default: `cargo build --release -p browserd`, then target/release/browserd);
#! --out: where the tarball goes (default: target/npm). The package's version must equal the binary's.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

say() { printf '[npm-package] %s\n' "$*" >&2; }

bin="" out="$root/target/npm"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) say "unknown argument $1 (use --bin PATH, --out DIR)"; exit 2 ;;
  esac
done

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  say "the package ships a linux-x64 binary; this machine is $(uname -s)-$(uname -m)"
  exit 1
fi
command -v npm >/dev/null || { say "npm is missing: install Node.js (Debian: apt-get install nodejs npm)"; exit 1; }

if [ -z "$bin" ]; then
  say "building browserd (cargo build --release -p browserd)"
  cargo build --release -p browserd
  bin="$root/target/release/browserd"
fi
[ -x "$bin" ] || { say "$bin is not an executable browserd"; exit 1; }

version="$(node -p 'require("./npm/package.json").version')"
binary_version="$("$bin" --version | awk '{print $2}')"
if [ "$version" != "$binary_version" ]; then
  say "npm/package.json is $version but $bin is $binary_version: bump one of them"
  exit 1
fi

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp -R npm/. "$stage/"
cp LICENSE-MIT LICENSE-APACHE "$stage/"
mkdir -p "$stage/vendor/linux-x64"
cp "$bin" "$stage/vendor/linux-x64/browserd"
chmod 0755 "$stage/vendor/linux-x64/browserd" "$stage/bin/browserd.js"
# Debug info is not needed to run it (a debug build's is most of its size).
if command -v strip >/dev/null; then strip --strip-debug "$stage/vendor/linux-x64/browserd"; fi

mkdir -p "$out"
say "packing browserd $version ($(du -h "$bin" | cut -f1) binary)"
name="$(cd "$stage" && npm_config_update_notifier=false npm pack --offline --silent --pack-destination "$out")"
echo "$out/$name"
