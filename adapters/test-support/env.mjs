//! Test environment for the adapter integration tests: an isolated runtime/config/state directory per test file (so
//! each file gets its own broker and managed Chromium), a loopback fixture web server, and helpers to inspect and
//! stop the broker. Needs `BROWSERD_BIN` (a `browserd` with `broker run`); `scripts/test-adapters.sh` sets it.

import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before } from "node:test";

import { BrokerClient, socketPath } from "../common/broker-client.mjs";

/**
 * Points this process (and every broker it starts) at fresh temp directories. Call once per test file, before any
 * broker client is created.
 */
export function isolatedEnv(name) {
  const bin = process.env.BROWSERD_BIN;
  if (!bin || !fs.existsSync(bin)) {
    throw new Error(
      `BROWSERD_BIN must name a built browserd binary (got ${JSON.stringify(bin)}); run scripts/test-adapters.sh, which builds it`,
    );
  }
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `browserd-${name}-`));
  const dirs = {
    root,
    runtime: path.join(root, "run"),
    config: path.join(root, "config"),
    state: path.join(root, "state"),
    artifacts: path.join(root, "artifacts"),
    home: path.join(root, "home"),
    work: path.join(root, "work"),
  };
  for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  Object.assign(process.env, {
    XDG_RUNTIME_DIR: dirs.runtime,
    XDG_CONFIG_HOME: dirs.config,
    XDG_STATE_HOME: dirs.state,
    BROWSERD_ARTIFACT_DIR: dirs.artifacts,
    // The file stops its broker itself; the idle exit only cleans up after a file that crashed.
    BROWSERD_IDLE_EXIT_SECS: "120",
  });
  delete process.env.BROWSERD_SOCKET;
  return { ...dirs, bin, socket: socketPath() };
}

/** Runs `browserd broker stop` for this environment and waits until the socket is gone. */
export async function stopBroker(env) {
  try {
    execFileSync(env.bin, ["broker", "stop"], { env: process.env, stdio: "pipe", timeout: 30_000 });
  } catch {
    // Reported below if the socket stays.
  }
  for (let i = 0; i < 200 && fs.existsSync(env.socket); i++) await new Promise((r) => setTimeout(r, 50));
}

/** The broker's `status` (all sessions), through a separate client that never starts a broker. */
export async function brokerStatus() {
  const client = new BrokerClient({ role: "cli", component: "adapter-tests", spawn: false });
  try {
    return await client.call("status", {});
  } finally {
    client.close();
  }
}

/** The tabs of one host session as the broker reports them. */
export async function tabsOf(hostSessionId) {
  const status = await brokerStatus();
  const session = status.sessions.find((s) => s.hostSessionId === hostSessionId);
  if (!session) return { session: null, tabs: [], recovery: status.recovery };
  return {
    session,
    tabs: status.tabs.filter((t) => t.session === session.session),
    recovery: status.recovery.filter((r) => r.session === session.session),
  };
}

/** A loopback web server with a few small pages: `/page/<name>` shows a title, a button and a text field. */
export async function fixtureServer() {
  const server = http.createServer((req, res) => {
    const name = decodeURIComponent(new URL(req.url, "http://x").pathname.split("/").pop() || "home");
    res.setHeader("content-type", "text/html; charset=utf-8");
    res.end(
      `<!doctype html><title>${name}</title><h1>${name}</h1>` +
        `<label>Note <input id="note"></label> <button onclick="document.title='clicked'">Go</button>`,
    );
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  return { url: (name) => `${base}/page/${encodeURIComponent(name)}`, close: () => new Promise((r) => server.close(r)) };
}

/**
 * A loopback "Partner" page that answers on two origins (`127.0.0.1` and `localhost`, one port) and logs every
 * request as `host/path` (`requests`: what reached the site), for the adapters' origin-list tests: started before the
 * test file's tests, closed after them with the broker of `env`. Its `port` and `requests` are filled in by then.
 */
export function partnerSite(env) {
  const site = { port: 0, requests: [], close: async () => {} };
  before(async () => {
    const server = http.createServer((req, res) => {
      site.requests.push(`${req.headers.host}${req.url}`);
      res.setHeader("content-type", "text/html; charset=utf-8");
      res.end("<!doctype html><title>Partner</title><h1>Partner page</h1><button>Go</button>");
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    site.port = server.address().port;
    site.close = () => new Promise((r) => server.close(r));
  });
  after(async () => {
    await stopBroker(env);
    await site.close();
  });
  return site;
}

/**
 * A loopback "Account settings" page for the approval tests: a "Delete account" button (high risk) and a "Save
 * profile" form (submit); each click is recorded by the server (`records()`: what reached the site).
 */
export async function approvalSite() {
  const records = [];
  const page =
    `<!doctype html><title>Account settings</title><h1>Account settings</h1>` +
    `<form onsubmit="event.preventDefault(); fetch('/record', {method: 'POST', body: 'profile:save'})">` +
    `<label>Display name <input id="name" value="Ada"></label> <button type="submit">Save profile</button></form>` +
    `<button type="button" onclick="fetch('/record', {method: 'POST', body: 'account:delete'})">Delete account</button>`;
  const server = http.createServer((req, res) => {
    if (req.method === "POST" && req.url === "/record") {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        records.push(body);
        res.end("ok");
      });
      return;
    }
    res.setHeader("content-type", "text/html; charset=utf-8");
    res.end(page);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    url: `${base}/account`,
    records: () => [...records],
    /** Waits (by condition) until `event` was recorded; false after ~5 s. */
    async waitFor(event) {
      for (let i = 0; i < 500 && !records.includes(event); i++) await new Promise((r) => setTimeout(r, 10));
      return records.includes(event);
    },
    close: () => new Promise((r) => server.close(r)),
  };
}

/** Writes the browserd config (`$XDG_CONFIG_HOME/browserd/config.toml`) of an isolated environment. */
export function writeConfig(env, text) {
  const dir = path.join(env.config, "browserd");
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(dir, "config.toml"), text);
}

/**
 * The Rust fixture site (`browserd-fixture-site`, from `BROWSERD_FIXTURE_SITE`, else next to `BROWSERD_BIN`): the
 * pages of `crates/browserd-fixtures`, e.g. the picture check `/vision-check.html`, whose verdicts `results()` reads.
 */
export async function rustFixtureSite() {
  const bin = process.env.BROWSERD_FIXTURE_SITE || path.join(path.dirname(process.env.BROWSERD_BIN ?? ""), "browserd-fixture-site");
  if (!fs.existsSync(bin)) {
    throw new Error(`no fixture site binary at ${bin}: run scripts/test-adapters.sh (cargo build -p browserd-fixtures --bins)`);
  }
  const child = spawn(bin, [], { stdio: ["pipe", "pipe", "inherit"] });
  const line = await new Promise((resolve, reject) => {
    let buf = "";
    child.stdout.on("data", (chunk) => {
      buf += chunk;
      if (buf.includes("\n")) resolve(buf.split("\n")[0]);
    });
    child.on("exit", (code) => reject(new Error(`browserd-fixture-site exited (${code}) before it served`)));
  });
  const { url } = JSON.parse(line);
  return {
    url: (p) => `${url}${p}`,
    /** The picture checks' verdicts (never their codes): `[{id, answers: [{typedOk, clickOk, passed, distance}]}]`. */
    async results() {
      const r = await fetch(`${url}/api/vision/results`);
      return r.json();
    },
    close: () =>
      new Promise((resolve) => {
        child.on("exit", resolve);
        child.stdin.end();
      }),
  };
}

/**
 * Signals the main process of this environment's managed Chromium (found by its profile under `env.state`), e.g.
 * SIGSTOP to freeze the browser so cleanups cannot be confirmed. Returns how many processes were signalled.
 */
export function signalBrowser(env, signal) {
  let count = 0;
  for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    let cmdline;
    try {
      cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    if (cmdline.includes(env.state) && !cmdline.includes("--type") && /chrom/i.test(cmdline.split("\0")[0])) {
      try {
        process.kill(Number(pid), signal);
        count += 1;
      } catch {
        // Exited meanwhile.
      }
    }
  }
  return count;
}

/** Parses the JSON text of a tool result's first text block. */
export function resultJson(result) {
  const text = result?.content?.find((c) => c.type === "text")?.text ?? "";
  return JSON.parse(text.split("\n[truncated:")[0]);
}
