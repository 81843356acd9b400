#!/usr/bin/env node
// The npm package's `browserd` command: runs the native browserd binary shipped in vendor/<platform>-<arch>/ with the
// same arguments, stdio, exit status and signals (so `npx browserd mcp` is the MCP server itself).
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const target = `${process.platform}-${process.arch}`;
const bin = path.join(__dirname, '..', 'vendor', target, 'browserd');
if (!fs.existsSync(bin)) {
  console.error(
    `browserd: this package ships a binary for linux-x64 only, not ${target}; ` +
      'build it from source instead: cargo install --path crates/browserd (https://github.com/browserd/browserd)',
  );
  process.exit(1);
}

const child = spawn(bin, process.argv.slice(2), { stdio: 'inherit' });
const forward = ['SIGINT', 'SIGTERM', 'SIGHUP'];
for (const signal of forward) process.on(signal, () => child.kill(signal));
child.on('error', (error) => {
  console.error(`browserd: could not run ${bin}: ${error.message}`);
  process.exit(1);
});
child.on('exit', (code, signal) => {
  if (signal) {
    for (const s of forward) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
