//! Benchmark helper: starts Playwright MCP over stdio against Debian's Chromium and, for each URL on the command line,
//! calls browser_navigate then browser_snapshot (timed) and prints one JSON line per URL:
//! {"url", "snapshot_text", "bytes", "ms", "ms_runs"} — the text exactly as a model would receive it.
//!
//! Usage: node snapshot.mjs [--repeat N] [--executable-path PATH] URL...
//!        node snapshot.mjs --stdin [--executable-path PATH]
//!   With --stdin it reads one request per line, {"url": "...", "repeat": N} or a bare URL, and answers each with
//!   one JSON line, so a caller can drive one long-lived Playwright MCP session.
//!   A request with "click": {"role": "button", "name": "Save"} instead finds that element's ref in an (untimed)
//!   snapshot and times N browser_click calls on it: {"url", "click_ms_runs", "click_text", "bytes"}.
//! Never downloads a browser (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1); exits 1 if any URL failed (its line has "error").

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const here = dirname(fileURLToPath(import.meta.url));
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

/** The ref of the first `- role "name" ... [ref=X]` line of a snapshot, or null. */
function findRef(text, role, name) {
  const head = '- ' + role + ' ' + JSON.stringify(name);
  for (const line of text.split('\n')) {
    const entry = line.trim();
    if (!entry.startsWith(head)) continue;
    const match = / \[ref=([A-Za-z0-9]+)\]/.exec(entry.slice(head.length));
    if (match) return match[1];
  }
  return null;
}

/** Times `repeat` browser_click calls on the element with `click.role` and `click.name`. */
async function timeClicks(client, url, click, repeat) {
  const snap = await client.callTool({ name: 'browser_snapshot', arguments: {} });
  if (snap.isError) throw new Error('browser_snapshot failed: ' + resultText(snap).slice(0, 500));
  const ref = findRef(resultText(snap), click.role, click.name);
  if (!ref) throw new Error(`no ${click.role} "${click.name}" with a ref in the snapshot`);
  const runs = [];
  let text = '';
  for (let i = 0; i < repeat; i++) {
    const started = process.hrtime.bigint();
    const result = await client.callTool({
      name: 'browser_click',
      arguments: { element: `${click.name} ${click.role}`, target: ref },
    });
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (result.isError) throw new Error('browser_click failed: ' + resultText(result).slice(0, 500));
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
  const cli = require.resolve('@playwright/mcp/package.json').replace(/package\.json$/, 'cli.js');
  const scratch = mkdtempSync(join(tmpdir(), 'browserd-bench-pwmcp-'));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      cli,
      '--browser', 'chromium',
      '--executable-path', opts.executablePath,
      '--headless',
      '--no-sandbox',
      '--isolated',
      '--output-dir', join(scratch, 'output'),
      '--viewport-size', '1280x720',
    ],
    env: {
      ...process.env,
      PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1',
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
        const nav = await client.callTool({ name: 'browser_navigate', arguments: { url } });
        if (nav.isError) throw new Error('browser_navigate failed: ' + resultText(nav).slice(0, 500));
        if (click) {
          process.stdout.write(JSON.stringify(await timeClicks(client, url, click, repeat)) + '\n');
          continue;
        }
        const runs = [];
        let text = '';
        for (let i = 0; i < repeat; i++) {
          const started = process.hrtime.bigint();
          const snap = await client.callTool({ name: 'browser_snapshot', arguments: {} });
          const ms = Number(process.hrtime.bigint() - started) / 1e6;
          if (snap.isError) throw new Error('browser_snapshot failed: ' + resultText(snap).slice(0, 500));
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
    process.stderr.write('Playwright MCP failed to start or crashed: ' + (err && err.message ? err.message : err) + '\n');
    if (serverLog) process.stderr.write('--- Playwright MCP stderr (tail) ---\n' + serverLog + '\n');
    failures += 1;
  } finally {
    await client.close().catch(() => {});
    rmSync(scratch, { recursive: true, force: true });
  }
  process.exit(failures === 0 ? 0 : 1);
}

main();
