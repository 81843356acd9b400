//! The shared JS client of the browserd broker, used by the Pi extension and the DSH plugin: finds the socket,
//! starts the broker on demand (`browserd broker run --daemon`), says `hello`, and makes JSON-RPC 2.0 calls over
//! newline-delimited JSON with ids, timeouts and notifications. It keeps no lifecycle state of its own: that lives in
//! the broker; the adapters only re-attach their sessions after a reconnect (see `onConnect`).

import { spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

/** Protocol versions this client speaks (crates/browserd-protocol `hello.rs`). */
export const PROTOCOL = Object.freeze({ min: 1, max: 1 });

/** Largest line accepted from the broker (the broker's own default frame limit). */
const MAX_FRAME = 16 * 1024 * 1024;

/** A failure reported by the broker or by the connection, carrying the protocol's stable code and next step. */
export class BrokerError extends Error {
  /**
   * @param {string} code stable code, e.g. `STALE_TARGET`, `CONNECTION_LOST`
   * @param {string} message what went wrong
   * @param {{nextStep?: string, data?: any, rpcCode?: number}} [extra]
   */
  constructor(code, message, extra = {}) {
    super(extra.nextStep ? `${code}: ${message} (next: ${extra.nextStep})` : `${code}: ${message}`);
    this.name = "BrokerError";
    this.code = code;
    this.reason = message;
    this.nextStep = extra.nextStep ?? "";
    this.data = extra.data;
    this.rpcCode = extra.rpcCode;
  }

  /** Builds the error from a JSON-RPC error object. */
  static fromRpc(error) {
    const data = error?.data ?? undefined;
    const code = data?.code ?? `RPC_${error?.code ?? "ERROR"}`;
    return new BrokerError(code, data?.message ?? error?.message ?? "unknown broker error", {
      nextStep: data?.nextStep,
      data,
      rpcCode: error?.code,
    });
  }
}

/** Whether `dir` is a real directory (not a symlink) owned by `uid`, as `browserd-ipc`'s `is_ours`. */
function isOurs(dir, uid) {
  try {
    const st = fs.lstatSync(dir);
    return st.isDirectory() && st.uid === uid;
  } catch {
    return false;
  }
}

/**
 * The broker's runtime directory, by the same rules as `browserd-ipc` (`paths.rs`): `$XDG_RUNTIME_DIR/browserd`,
 * else on Linux `/run/user/<uid>/browserd` when that directory is ours (`BROWSERD_TEST_RUN_USER_BASE` replaces
 * `/run/user` in tests), else macOS `$TMPDIR/browserd`, else `/tmp/browserd-<uid>`.
 */
export function runtimeDir(env = process.env, uid = process.getuid?.() ?? os.userInfo().uid, platform = process.platform) {
  const xdg = env.XDG_RUNTIME_DIR;
  if (xdg && path.isAbsolute(xdg)) return path.join(xdg, "browserd");
  if (platform === "linux") {
    const base = env.BROWSERD_TEST_RUN_USER_BASE;
    const runUser = path.join(base && path.isAbsolute(base) ? base : "/run/user", String(uid));
    if (isOurs(runUser, uid)) return path.join(runUser, "browserd");
  }
  if (platform === "darwin" && env.TMPDIR && path.isAbsolute(env.TMPDIR)) return path.join(env.TMPDIR, "browserd");
  return path.join("/tmp", `browserd-${uid}`);
}

/** The broker's socket path. `BROWSERD_SOCKET` overrides it (tests, unusual setups). */
export function socketPath(env = process.env) {
  return env.BROWSERD_SOCKET || path.join(runtimeDir(env), "broker.sock");
}

/** The `browserd` executable: `BROWSERD_BIN`, else `browserd` on PATH. */
export function browserdBin(env = process.env) {
  return env.BROWSERD_BIN || "browserd";
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function connectOnce(file) {
  return new Promise((resolve, reject) => {
    const sock = net.createConnection({ path: file });
    const onError = (err) => {
      sock.destroy();
      reject(err);
    };
    sock.once("error", onError);
    sock.once("connect", () => {
      sock.off("error", onError);
      resolve(sock);
    });
  });
}

function notRunning(err) {
  return err && (err.code === "ENOENT" || err.code === "ECONNREFUSED");
}

/**
 * A connection to the broker. Calls made while disconnected reconnect first (and start the broker when allowed);
 * `onConnect` hooks run after every successful `hello`, before any queued call is sent, so adapters can re-attach
 * their sessions (`session.open` with the same host session id keeps ownership).
 *
 * Events: `notification` (method, params), `disconnect` (error), `connect` ({reconnect}).
 */
export class BrokerClient extends EventEmitter {
  /**
   * @param {object} [options]
   * @param {string} [options.role] `piAdapter` | `dshAdapter` | ...
   * @param {string} [options.component] component name sent in hello, e.g. `browserd-pi`
   * @param {string} [options.version] component version
   * @param {string} [options.socket] socket path (default: `socketPath()`)
   * @param {string} [options.bin] browserd executable (default: `browserdBin()`)
   * @param {boolean} [options.spawn] start the broker when none answers (default true)
   * @param {number} [options.timeoutMs] default per-call timeout (default 120000; browser work has its own deadlines)
   * @param {number} [options.startTimeoutMs] how long to wait for a started broker (default 15000)
   * @param {NodeJS.ProcessEnv} [options.env]
   */
  constructor(options = {}) {
    super();
    const env = options.env ?? process.env;
    this.role = options.role ?? "cli";
    this.component = options.component ?? "browserd-js";
    this.version = options.version ?? "0.1.0";
    this.socket = options.socket ?? socketPath(env);
    this.bin = options.bin ?? browserdBin(env);
    this.spawnAllowed = options.spawn ?? true;
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.startTimeoutMs = options.startTimeoutMs ?? 15_000;
    this.env = env;
    /** @type {net.Socket | null} */
    this.sock = null;
    this.nextId = 1;
    /** @type {Map<number, {resolve: Function, reject: Function, timer: NodeJS.Timeout, method: string}>} */
    this.pending = new Map();
    /** @type {Array<(client: BrokerClient, info: {reconnect: boolean}) => Promise<void>>} */
    this.connectHooks = [];
    this.connecting = null;
    this.connectedOnce = false;
    this.closed = false;
    this.helloResult = null;
    this.spawnedBroker = false;
  }

  /** Registers a hook run after each (re)connection, before queued calls. */
  onConnect(hook) {
    this.connectHooks.push(hook);
    return () => {
      this.connectHooks = this.connectHooks.filter((h) => h !== hook);
    };
  }

  get connected() {
    return this.sock !== null && !this.sock.destroyed && this.helloResult !== null;
  }

  /** Connects (idempotent). Starts the broker when none answers and spawning is allowed. */
  async connect() {
    if (this.closed) throw new BrokerError("CONNECTION_LOST", "this broker client was closed", { nextStep: "Create a new client." });
    if (this.connected) return this.helloResult;
    if (!this.connecting) {
      this.connecting = this.#doConnect().finally(() => {
        this.connecting = null;
      });
    }
    return this.connecting;
  }

  async #doConnect() {
    let sock;
    try {
      sock = await connectOnce(this.socket);
    } catch (err) {
      if (!notRunning(err) || !this.spawnAllowed) {
        throw new BrokerError("OFFLINE", `cannot reach the browserd broker at ${this.socket}: ${err.message}`, {
          nextStep: "Start it with `browserd broker run` (or allow the adapter to start it).",
        });
      }
      sock = await this.#spawnAndWait();
    }
    this.#attach(sock);
    const reconnect = this.connectedOnce;
    try {
      this.helloResult = await this.#request("hello", {
        role: this.role,
        protocol: PROTOCOL,
        components: { [this.component]: this.version },
      });
      for (const hook of this.connectHooks) await hook(this, { reconnect });
    } catch (err) {
      this.helloResult = null;
      sock.destroy();
      throw err;
    }
    this.connectedOnce = true;
    this.emit("connect", { reconnect });
    return this.helloResult;
  }

  async #spawnAndWait() {
    const dir = path.dirname(this.socket);
    let logFd = "ignore";
    try {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      logFd = fs.openSync(path.join(dir, "broker.log"), "a", 0o600);
    } catch {
      // The broker creates and checks its directory itself; without a log file its output is dropped.
    }
    let spawnError = null;
    try {
      const child = spawn(this.bin, ["broker", "run", "--daemon"], {
        detached: true,
        stdio: ["ignore", logFd, logFd],
        env: this.env,
      });
      child.once("error", (err) => {
        spawnError = err;
      });
      child.unref();
      this.spawnedBroker = true;
    } finally {
      if (typeof logFd === "number") fs.closeSync(logFd);
    }
    const started = Date.now();
    let delay = 20;
    for (;;) {
      await sleep(delay);
      if (spawnError) {
        throw new BrokerError("OFFLINE", `cannot start the broker with \`${this.bin} broker run --daemon\`: ${spawnError.message}`, {
          nextStep: "Install browserd or set BROWSERD_BIN to its path.",
        });
      }
      try {
        return await connectOnce(this.socket);
      } catch (err) {
        if (!notRunning(err)) throw new BrokerError("OFFLINE", `cannot reach the started broker: ${err.message}`);
      }
      if (Date.now() - started > this.startTimeoutMs) {
        throw new BrokerError("OFFLINE", `the broker did not start within ${this.startTimeoutMs} ms (socket ${this.socket})`, {
          nextStep: `Read ${path.join(dir, "broker.log")} or run \`${this.bin} broker run\` in a terminal.`,
        });
      }
      delay = Math.min(delay * 2, 250);
    }
  }

  #attach(sock) {
    this.sock = sock;
    let buffer = "";
    sock.setEncoding("utf8");
    sock.on("data", (chunk) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (line) this.#onLine(line);
      }
      if (buffer.length > MAX_FRAME) sock.destroy(new Error(`the broker sent a frame larger than ${MAX_FRAME} bytes`));
    });
    const gone = (err) => {
      if (this.sock !== sock) return;
      this.sock = null;
      this.helloResult = null;
      const error = new BrokerError("CONNECTION_LOST", `the connection to the broker was lost${err ? `: ${err.message}` : ""}`, {
        nextStep: "Retry: the adapter reconnects and re-attaches the session.",
      });
      for (const [id, waiter] of this.pending) {
        clearTimeout(waiter.timer);
        waiter.reject(error);
        this.pending.delete(id);
      }
      this.emit("disconnect", error);
    };
    sock.on("error", gone);
    sock.on("close", () => gone(null));
  }

  #onLine(line) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      return;
    }
    if (msg.id !== undefined && msg.id !== null && (msg.result !== undefined || msg.error !== undefined)) {
      const waiter = this.pending.get(msg.id);
      if (!waiter) return;
      this.pending.delete(msg.id);
      clearTimeout(waiter.timer);
      if (msg.error) waiter.reject(BrokerError.fromRpc(msg.error));
      else waiter.resolve(msg.result);
    } else if (typeof msg.method === "string" && msg.id === undefined) {
      this.emit("notification", msg.method, msg.params);
    }
  }

  #request(method, params, timeoutMs = this.timeoutMs) {
    const sock = this.sock;
    if (!sock || sock.destroyed) {
      return Promise.reject(new BrokerError("CONNECTION_LOST", "not connected to the broker"));
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(
          new BrokerError("DEADLINE_EXCEEDED", `\`${method}\` got no answer within ${timeoutMs} ms`, {
            nextStep: "Check `browserd status`; the operation may still complete in the broker.",
          }),
        );
      }, timeoutMs);
      timer.unref?.();
      this.pending.set(id, { resolve, reject, timer, method });
      sock.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    });
  }

  /**
   * Calls a method, connecting (and re-attaching through the hooks) first when needed.
   * @param {string} method
   * @param {object} [params]
   * @param {{timeoutMs?: number}} [options]
   */
  async call(method, params = {}, options = {}) {
    await this.connect();
    return this.#request(method, params, options.timeoutMs ?? this.timeoutMs);
  }

  /** Calls a method on the current connection without reconnecting (used by the re-attach hooks themselves). */
  callDirect(method, params = {}, options = {}) {
    return this.#request(method, params, options.timeoutMs ?? this.timeoutMs);
  }

  /** Drops the connection (the broker keeps the sessions for its disconnect grace period). */
  disconnect() {
    this.sock?.destroy();
  }

  /** Closes for good: pending calls fail with CONNECTION_LOST, later calls are refused. */
  close() {
    this.closed = true;
    this.sock?.end();
    this.sock?.destroy();
  }
}
