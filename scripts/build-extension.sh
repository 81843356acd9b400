#!/usr/bin/env bash
#! Builds one brand of the extension: extension/ copied as is, with extension/brands/<brand>.json laid over its
#! manifest.json (name, key → extension id). Shared code is never changed per brand. Usage:
#! scripts/build-extension.sh chrome|edge [OUT_DIR] (default OUT_DIR: target/extension/<brand>); prints OUT_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
brand="${1:-}"
overlay="extension/brands/$brand.json"
[ -n "$brand" ] && [ -f "$overlay" ] || { echo "[build-extension] usage: $0 chrome|edge [OUT_DIR]" >&2; exit 2; }
out="${2:-target/extension/$brand}"
rm -rf "$out"
mkdir -p "$out"
tar -C extension --exclude=brands -cf - . | tar -C "$out" -xf -
node -e '
  const fs = require("node:fs");
  const [base, overlay, dest] = process.argv.slice(1);
  const manifest = { ...JSON.parse(fs.readFileSync(base, "utf8")), ...JSON.parse(fs.readFileSync(overlay, "utf8")) };
  fs.writeFileSync(dest, JSON.stringify(manifest, null, 2) + "\n");
' extension/manifest.json "$overlay" "$out/manifest.json"
echo "$out"
