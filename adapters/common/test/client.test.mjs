//! Unit tests of the shared broker client and session queue against a scripted JSON-RPC peer on a temp Unix socket
//! (no broker, no browser): ids and results, typed errors, timeouts, notifications, connection loss and re-attach,
//! a missing browserd binary, serialization of one session's calls, and refusal of stale tool calls.

import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";

import { BrokerClient, BrokerError, runtimeDir, socketPath } from "../broker-client.mjs";
import { BrowserSession, extractScreenshots, resultFailure, resultText, MAX_RESULT_TEXT } from "../session.mjs";

/** A scripted peer: `handler(method, params, conn)` returns a result, throws `{rpc}` for an error, or returns a promise. */
async function peer(handler) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "browserd-client-"));
  const file = path.join(dir, "broker.sock");
  const conns = new Set();
  const calls = [];
  const server = net.createServer((sock) => {
    conns.add(sock);
    sock.on("close", () => conns.delete(sock));
    let buf = "";
    sock.on("data", async (chunk) => {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const msg = JSON.parse(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        calls.push(msg.method);
        try {
          const result = await handler(msg.method, msg.params, sock);
          if (result !== NO_ANSWER) sock.write(`${JSON.stringify({ jsonrpc: "2.0", id: msg.id, result })}\n`);
        } catch (err) {
          sock.write(`${JSON.stringify({ jsonrpc: "2.0", id: msg.id, error: err.rpc })}\n`);
        }
      }
    });
  });
  await new Promise((r) => server.listen(file, r));
  return {
    file,
    calls,
    dropAll: () => conns.forEach((c) => c.destroy()),
    notify: (method, params) => conns.forEach((c) => c.write(`${JSON.stringify({ jsonrpc: "2.0", method, params })}\n`)),
    close: () => new Promise((r) => server.close(r)),
  };
}

const NO_ANSWER = Symbol("no answer");
const hello = { protocolVersion: 1, role: "broker" };

test("calls get results by id; broker errors keep their code and next step", async () => {
  const p = await peer((method, params) => {
    if (method === "hello") return hello;
    if (method === "echo") return params;
    throw { rpc: { code: -32010, message: "x", data: { code: "STALE_TARGET", message: "ref e3 is stale", nextStep: "Observe again." } } };
  });
  const c = new BrokerClient({ socket: p.file, spawn: false });
  try {
    const [a, b] = await Promise.all([c.call("echo", { n: 1 }), c.call("echo", { n: 2 })]);
    assert.deepEqual([a, b], [{ n: 1 }, { n: 2 }]);
    const err = await c.call("act", {}).catch((e) => e);
    assert.ok(err instanceof BrokerError);
    assert.equal(err.code, "STALE_TARGET");
    assert.equal(err.nextStep, "Observe again.");
    assert.match(err.message, /STALE_TARGET: ref e3 is stale \(next: Observe again\.\)/);
  } finally {
    c.close();
    await p.close();
  }
});

test("a call with no answer fails with DEADLINE_EXCEEDED; notifications are delivered", async () => {
  const p = await peer((method) => (method === "hello" ? hello : NO_ANSWER));
  const c = new BrokerClient({ socket: p.file, spawn: false });
  try {
    await c.connect();
    const note = new Promise((resolve) => c.once("notification", (m, params) => resolve([m, params])));
    p.notify("tools.changed", { session: "s1", tools: "inactive" });
    assert.deepEqual(await note, ["tools.changed", { session: "s1", tools: "inactive" }]);
    const err = await c.call("slow", {}, { timeoutMs: 50 }).catch((e) => e);
    assert.equal(err.code, "DEADLINE_EXCEEDED");
  } finally {
    c.close();
    await p.close();
  }
});

test("a lost connection fails pending calls; the next call reconnects and re-attaches the session", async () => {
  let opens = 0;
  const p = await peer((method, params) => {
    if (method === "hello") return hello;
    if (method === "session.open") {
      opens += 1;
      return { session: "s7", reattached: opens > 1, tools: "activeSticky", turn: 0 };
    }
    if (method === "tools.list") return { tools: [{ name: "browser_list" }] };
    if (method === "hang") return NO_ANSWER;
    return { ok: true, params };
  });
  const c = new BrokerClient({ socket: p.file, spawn: false });
  const events = [];
  const sess = new BrowserSession(c, { host: "pi", hostSessionId: "host-1", trace: (e) => events.push(e) });
  try {
    await sess.open();
    assert.equal(sess.active, true);
    const pending = c.call("hang", {});
    p.dropAll();
    assert.equal((await pending.catch((e) => e)).code, "CONNECTION_LOST");
    const value = await sess.callTool("browser_list", {});
    assert.equal(value.ok, true);
    assert.ok(events.includes("reattach:true"));
    assert.equal(opens, 2);
    assert.deepEqual(p.calls.slice(-3), ["hello", "session.open", "tool.call"], "re-attach runs before the queued call");
  } finally {
    sess.detach();
    c.close();
    await p.close();
  }
});

test("a missing broker with a missing binary says how to fix it", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "browserd-nobroker-"));
  const c = new BrokerClient({ socket: path.join(dir, "broker.sock"), bin: path.join(dir, "no-such-browserd"), startTimeoutMs: 500 });
  const err = await c.call("status", {}).catch((e) => e);
  assert.equal(err.code, "OFFLINE");
  assert.match(err.message, /BROWSERD_BIN|did not start/);
  const off = new BrokerClient({ socket: path.join(dir, "broker.sock"), spawn: false });
  assert.equal((await off.call("status", {}).catch((e) => e)).code, "OFFLINE");
});

test("one session's calls never overlap, and a call from an ended activation is refused before sending", async () => {
  const p = await peer(async (method, params) => {
    if (method === "hello") return hello;
    if (method === "session.open") return { session: "s1", reattached: false, tools: "inactive", turn: 0 };
    if (method === "tools.activate") return { session: "s1", tools: "activeSticky", advanced: false, names: [] };
    if (method === "tools.list") return { tools: [] };
    await new Promise((r) => setTimeout(r, params?.name === "browser_open" ? 30 : 1));
    if (params?.name === "browser_context_reset") return { ok: true, toolsActive: false };
    return { ok: true };
  });
  const c = new BrokerClient({ socket: p.file, spawn: false });
  const events = [];
  const sess = new BrowserSession(c, { host: "dsh", hostSessionId: "agent-1", trace: (e) => events.push(e) });
  try {
    await sess.activate();
    const generation = sess.generation;
    const results = await Promise.allSettled([
      sess.callTool("browser_open", {}, { generation }),
      sess.callTool("browser_cleanup", {}, { generation }),
      sess.turnEnd("agentEnd"),
      sess.callTool("browser_context_reset", {}, { generation }),
      sess.callTool("browser_list", {}, { generation }),
    ]);
    const ops = events.filter((e) => e.startsWith("start:") || e.startsWith("end:")).slice(2);
    for (let i = 0; i < ops.length; i += 2) assert.equal(ops[i + 1], ops[i].replace("start:", "end:"), ops.join(" "));
    assert.deepEqual(results.slice(0, 4).map((r) => r.status), ["fulfilled", "fulfilled", "fulfilled", "fulfilled"]);
    assert.equal(results[4].status, "rejected");
    assert.equal(results[4].reason.code, "CAPABILITY_NOT_ACTIVATED");
    assert.equal(p.calls.filter((m) => m === "tool.call").length, 3, "the stale call never reached the broker");
  } finally {
    sess.detach();
    c.close();
    await p.close();
  }
});

test("results: failures are detected, screenshots become files, long text spills to a file", () => {
  assert.match(resultFailure("browser_cleanup", { ok: false, failed: [{ tab: 3 }] }), /did not fully succeed \(not everything/);
  assert.match(resultFailure("browser_act", { outcome: "failed", code: "NOT_ACTIONABLE" }), /failed \(NOT_ACTIONABLE\)/);
  assert.equal(resultFailure("browser_act", { outcome: "succeeded" }), null);
  assert.equal(resultFailure("browser_open", { tab: 1 }), null);
  // The same rule as the MCP server's isError and the CLI's exit status (browserd_protocol::verdict).
  assert.match(resultFailure("browser_act", { outcome: "succeeded", postcondition: "failed" }), /postcondition/);
  assert.match(resultFailure("browser_batch", { ok: true, steps: [{ outcome: "succeeded" }, { outcome: "unknown" }] }), /step 1: outcome unknown/);
  assert.match(resultFailure("browser_handoff", { tab: 2, status: "timedOut" }), /handoff ended timedOut/);
  assert.equal(resultFailure("browser_handoff", { tab: 2, status: "completed" }), null);

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "browserd-art-"));
  const png = Buffer.from("89504e470d0a1a0a", "hex");
  const { value, images } = extractScreenshots({ screenshot: { imageId: "img1", format: "png", data: png.toString("base64"), scale: 1 } }, dir);
  assert.equal(value.screenshot.data, undefined);
  assert.deepEqual(fs.readFileSync(value.screenshot.path), png);
  assert.equal(images[0].mimeType, "image/png");

  const text = resultText({ big: "x".repeat(MAX_RESULT_TEXT * 2) }, dir);
  assert.ok(text.length < MAX_RESULT_TEXT + 500);
  const spilled = /whole result is in (\S+)\]$/.exec(text)[1];
  assert.equal(JSON.parse(fs.readFileSync(spilled, "utf8")).big.length, MAX_RESULT_TEXT * 2);
});

test("the socket path follows browserd-ipc's rules", () => {
  assert.equal(runtimeDir({ XDG_RUNTIME_DIR: "/run/user/7" }), "/run/user/7/browserd");
  const uid = process.getuid();
  const fake = fs.mkdtempSync(path.join(os.tmpdir(), "browserd-run-user-"));
  const stripped = { HOME: "/h", PATH: "/usr/bin", BROWSERD_TEST_RUN_USER_BASE: fake };
  assert.equal(runtimeDir({ ...stripped, XDG_RUNTIME_DIR: "relative" }), `/tmp/browserd-${uid}`);
  // Without XDG_RUNTIME_DIR (Codex, the MCP SDK): /run/user/<uid> when it is a real directory of ours.
  fs.mkdirSync(path.join(fake, String(uid)), { mode: 0o700 });
  assert.equal(runtimeDir(stripped), path.join(fake, String(uid), "browserd"));
  assert.equal(runtimeDir({ XDG_RUNTIME_DIR: path.join(fake, String(uid)) }), runtimeDir(stripped));
  assert.equal(runtimeDir(stripped, uid, "darwin"), `/tmp/browserd-${uid}`);
  // A symlink named like it is refused.
  fs.symlinkSync(path.join(fake, String(uid)), path.join(fake, String(uid + 1)));
  assert.equal(runtimeDir(stripped, uid + 1), `/tmp/browserd-${uid + 1}`);
  fs.rmSync(fake, { recursive: true });
  assert.equal(socketPath({ BROWSERD_SOCKET: "/x/y.sock" }), "/x/y.sock");
});

test("a session the broker no longer knows ends the activation, so the host hides the tools", async () => {
  const p = await peer((method) => {
    if (method === "hello") return hello;
    if (method === "session.open") return { session: "s9", reattached: false, tools: "activeSticky", turn: 0 };
    if (method === "tools.list") return { tools: [] };
    throw { rpc: { code: -32001, message: "x", data: { code: "UNKNOWN_SESSION", message: "no open session `s9`", nextStep: "Open a session." } } };
  });
  const c = new BrokerClient({ socket: p.file, spawn: false });
  let hidden = 0;
  const sess = new BrowserSession(c, { host: "pi", hostSessionId: "gone", onDeactivate: () => (hidden += 1) });
  try {
    await sess.open();
    const generation = sess.generation;
    assert.equal((await sess.callTool("browser_list", {}, { generation }).catch((e) => e)).code, "UNKNOWN_SESSION");
    assert.equal(sess.active, false);
    assert.equal(sess.id, null, "the next activation opens a new broker session");
    assert.equal(hidden, 1);
    assert.equal((await sess.callTool("browser_list", {}, { generation }).catch((e) => e)).code, "CAPABILITY_NOT_ACTIVATED");
  } finally {
    sess.detach();
    c.close();
    await p.close();
  }
});
