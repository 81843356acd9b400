//! Benchmark helper: starts chrome-devtools-mcp over stdio against Debian's Chromium (headless, an isolated
//! throw-away profile, no usage statistics, no update check, no CrUX look-ups) and, for each request, calls
//! navigate_page then take_snapshot (timed) and prints one JSON line per URL:
//! {"url", "snapshot_text", "bytes", "ms", "ms_runs"} — the text exactly as a model would receive it.
//!
//! Usage: node snapshot.mjs [--repeat N] [--executable-path PATH] URL...
//!        node snapshot.mjs --stdin [--executable-path PATH]
//!   With --stdin it reads one request per line, {"url": "...", "repeat": N} or a bare URL, and answers each with
//!   one JSON line, so a caller can drive one long-lived chrome-devtools-mcp session (the same protocol as
//!   bench/playwright-mcp/snapshot.mjs).
//!   A request with "click": {"role": "button", "name": "Save"} instead finds that element's uid in an (untimed)
//!   snapshot and times N click calls on it: {"url", "click_ms_runs", "click_text", "bytes"}.
//! Never downloads a browser (PUPPETEER_SKIP_DOWNLOAD=1); exits 1 if any URL failed (its line has "error").

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const require = createRequire(import.meta.url);

function parseArgs(argv) {
  const opts = { repeat: 1, executablePath: process.env.BROWSERD_CHROMIUM || '/usr/lib/chromium/chromium', urls: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--repeat') opts.repeat = Math.max(1, parseInt(argv[++i], 10) || 1);
    else if (arg === '--executable-path') opts.executablePath = argv[++i];
    else if (arg === '--stdin') opts.stdin = true;
    else if (arg === '--help' || arg === '-h') opts.help = true;
    else opts.urls.push(arg);
  }
  return opts;
}

/** The text of a tool result exactly as the model receives it: its text parts, in order. */
function resultText(result) {
  return (result.content || []).filter((part) => part.type === 'text').map((part) => part.text).join('\n');
}

/** The uid of the first `uid=X role "name"` line of a snapshot, or null. */
function findUid(text, role, name) {
  for (const line of text.split('\n')) {
    const match = /^\s*uid=(\S+) (\S+) "(.*)"(?: |$)/.exec(line);
    if (match && match[2] === role && match[3] === name) return match[1];
  }
  return null;
}

/** Times `repeat` click calls on the element with `click.role` and `click.name`. */
async function timeClicks(client, url, click, repeat) {
  const snap = await client.callTool({ name: 'take_snapshot', arguments: {} });
  if (snap.isError) throw new Error('take_snapshot failed: ' + resultText(snap).slice(0, 500));
  const uid = findUid(resultText(snap), click.role, click.name);
  if (!uid) throw new Error(`no ${click.role} "${click.name}" with a uid in the snapshot`);
  const runs = [];
  let text = '';
  for (let i = 0; i < repeat; i++) {
    const started = process.hrtime.bigint();
    const result = await client.callTool({ name: 'click', arguments: { uid } });
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (result.isError) throw new Error('click failed: ' + resultText(result).slice(0, 500));
    runs.push(Math.round(ms * 1000) / 1000);
    text = resultText(result);
  }
  return { url, click_ms_runs: runs, click_text: text, bytes: Buffer.byteLength(text, 'utf8') };
}

async function* argRequests(opts) {
  for (const url of opts.urls) yield { url, repeat: opts.repeat };
}

async function* stdinRequests() {
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const raw of lines) {
    const line = raw.trim();
    if (!line) continue;
    if (line.startsWith('{')) {
      const req = JSON.parse(line);
      yield { url: String(req.url), repeat: Math.max(1, parseInt(req.repeat, 10) || 1), click: req.click };
    } else {
      yield { url: line, repeat: 1 };
    }
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.help || (opts.urls.length === 0 && !opts.stdin)) {
    process.stderr.write('usage: node snapshot.mjs [--repeat N] [--executable-path PATH] (URL... | --stdin)\n');
    process.exit(opts.help ? 0 : 2);
  }
  const pkg = require.resolve('chrome-devtools-mcp/package.json');
  const cli = pkg.replace(/package\.json$/, 'build/src/bin/chrome-devtools-mcp.js');
  const scratch = mkdtempSync(join(tmpdir(), 'browserd-bench-cdmcp-'));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      cli,
      '--executablePath', opts.executablePath,
      '--headless',
      '--isolated',
      '--viewport', '1280x720',
      '--no-usage-statistics',
      '--no-performance-crux',
      // One page per session: tools act on the selected page, no pageId argument needed.
      '--no-page-id-routing',
      '--chromeArg=--no-sandbox',
    ],
    env: {
      ...process.env,
      PUPPETEER_SKIP_DOWNLOAD: '1',
      CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS: '1',
      CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS: '1',
      HOME: scratch,
      XDG_CONFIG_HOME: join(scratch, 'xdg-config'),
      XDG_CACHE_HOME: join(scratch, 'xdg-cache'),
    },
    cwd: scratch,
    stderr: 'pipe',
  });
  let serverLog = '';
  transport.stderr?.on('data', (chunk) => { serverLog = (serverLog + chunk.toString()).slice(-8000); });
  const client = new Client({ name: 'browserd-bench', version: '0.0.0' });
  let failures = 0;
  try {
    await client.connect(transport);
    const requests = opts.stdin ? stdinRequests() : argRequests(opts);
    for await (const { url, repeat, click } of requests) {
      try {
        const nav = await client.callTool({ name: 'navigate_page', arguments: { type: 'url', url } });
        if (nav.isError) throw new Error('navigate_page failed: ' + resultText(nav).slice(0, 500));
        if (click) {
          process.stdout.write(JSON.stringify(await timeClicks(client, url, click, repeat)) + '\n');
          continue;
        }
        const runs = [];
        let text = '';
        for (let i = 0; i < repeat; i++) {
          const started = process.hrtime.bigint();
          const snap = await client.callTool({ name: 'take_snapshot', arguments: {} });
          const ms = Number(process.hrtime.bigint() - started) / 1e6;
          if (snap.isError) throw new Error('take_snapshot failed: ' + resultText(snap).slice(0, 500));
          runs.push(Math.round(ms * 1000) / 1000);
          text = resultText(snap);
        }
        const line = { url, snapshot_text: text, bytes: Buffer.byteLength(text, 'utf8'), ms: runs[0], ms_runs: runs };
        process.stdout.write(JSON.stringify(line) + '\n');
      } catch (err) {
        failures += 1;
        process.stdout.write(JSON.stringify({ url, error: String(err && err.message ? err.message : err) }) + '\n');
      }
    }
  } catch (err) {
    process.stderr.write('chrome-devtools-mcp failed to start or crashed: ' + (err && err.message ? err.message : err) + '\n');
    if (serverLog) process.stderr.write('--- chrome-devtools-mcp stderr (tail) ---\n' + serverLog + '\n');
    failures += 1;
  } finally {
    await client.close().catch(() => {});
    rmSync(scratch, { recursive: true, force: true });
  }
  process.exit(failures === 0 ? 0 : 1);
}

main();
