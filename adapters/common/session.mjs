//! One host session's view of its broker session, shared by the Pi and DSH adapters: opens (or re-attaches) the
//! broker session keyed by the host's session id, activates the tools, serializes every call of the session (tool
//! calls, turn end, finalize, context reset, close) through one queue, refuses tool calls from an activation that a
//! context reset or session end already ended, re-attaches after a broker reconnect, and turns tool results into text
//! plus saved screenshot files. All lifecycle state lives in the broker; this object only mirrors activation.

import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { BrokerError } from "./broker-client.mjs";

/** The browser skill shared by both hosts. */
export const SKILL_PATH = fileURLToPath(new URL("../skill/SKILL.md", import.meta.url));

/** Reads the skill text (its front matter stripped: the host shows the body to the model once). */
export function readSkill() {
  const text = fs.readFileSync(SKILL_PATH, "utf8");
  return text.replace(/^---\n[\s\S]*?\n---\n+/, "").trim();
}

/** Largest tool-result text handed to a host; longer text is written to a file and summarised (Pi's limit is 50 KB). */
export const MAX_RESULT_TEXT = 48 * 1024;

/** Where screenshots and spilled results go: `BROWSERD_ARTIFACT_DIR`, else a per-user temp directory. */
export function artifactDir(env = process.env) {
  const dir = env.BROWSERD_ARTIFACT_DIR || path.join(os.tmpdir(), `browserd-artifacts-${os.userInfo().uid}`);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** Error for a tool call made from an activation that has ended (context reset, session end). */
export function staleToolError(name) {
  return new BrokerError(
    "CAPABILITY_NOT_ACTIVATED",
    `\`${name}\` belongs to a browser tool set that was reset or closed; the call was refused and nothing was done`,
    { nextStep: "Load the browser skill again (only if the user still wants browser work)." },
  );
}

/**
 * Finds screenshots in a tool result (objects with `imageId`, `format` and base64 `data`), writes each to a file and
 * replaces its `data` with the file path. Returns the images for hosts that show them.
 * @returns {{value: any, images: Array<{data: string, mimeType: string, path: string, imageId: string, meta: object}>}}
 */
export function extractScreenshots(value, dir = artifactDir()) {
  const images = [];
  const walk = (node) => {
    if (Array.isArray(node)) return node.map(walk);
    if (!node || typeof node !== "object") return node;
    if (typeof node.imageId === "string" && typeof node.data === "string" && typeof node.format === "string") {
      const { data, ...meta } = node;
      const ext = node.format === "jpeg" ? "jpg" : node.format;
      const safeId = node.imageId.replace(/[^A-Za-z0-9_.-]/g, "_");
      const file = path.join(dir, `${Date.now()}-${safeId}-${crypto.randomBytes(3).toString("hex")}.${ext}`);
      fs.writeFileSync(file, Buffer.from(data, "base64"), { mode: 0o600 });
      images.push({ data, mimeType: `image/${node.format}`, path: file, imageId: node.imageId, meta });
      return { ...meta, path: file };
    }
    const out = {};
    for (const [k, v] of Object.entries(node)) out[k] = walk(v);
    return out;
  };
  return { value: walk(value), images };
}

/** Compact JSON text for the model, spilled to a file past `MAX_RESULT_TEXT`. */
export function resultText(value, dir = artifactDir()) {
  const text = JSON.stringify(value);
  if (text.length <= MAX_RESULT_TEXT) return text;
  const file = path.join(dir, `${Date.now()}-result-${crypto.randomBytes(3).toString("hex")}.json`);
  fs.writeFileSync(file, text, { mode: 0o600 });
  return `${text.slice(0, MAX_RESULT_TEXT)}\n[truncated: ${text.length} bytes in total; the whole result is in ${file}]`;
}

/**
 * Why a tool result is not a full success, or `null` when it is one: the one rule of every browserd front end (the MCP
 * server's `isError`, the CLI's exit status; `browserd_protocol::verdict` in Rust). A result falls short when it says
 * `ok: false`, has an `outcome` other than `succeeded`, a `postcondition` of `failed`, a batch step that falls short,
 * or is a handoff whose wait ended `timedOut` or `tabClosed`.
 */
export function shortfall(value) {
  if (!value || typeof value !== "object" || Array.isArray(value)) return null;
  if (value.ok === false) return "not everything asked was done (ok: false)";
  if (typeof value.outcome === "string" && value.outcome !== "succeeded") {
    return `outcome ${value.outcome}${value.code ? ` (${value.code})` : ""}`;
  }
  if (value.postcondition === "failed") return "the expected postcondition did not hold";
  if (Array.isArray(value.steps)) {
    for (const [index, step] of value.steps.entries()) {
      const why = shortfall(step);
      if (why) return `step ${index}: ${why}`;
    }
  }
  if ((value.status === "timedOut" || value.status === "tabClosed") && "tab" in value) {
    return `the handoff ended ${value.status}`;
  }
  return null;
}

/** The error text for a tool result that must surface as a tool error (never as success), or `null`. */
export function resultFailure(name, value) {
  const why = shortfall(value);
  return why ? `${name} did not fully succeed (${why}): ${JSON.stringify(value)}` : null;
}

/** The vision modes of `session.vision` (what `browser_status` shows as `vision.mode`). */
export const VISION = Object.freeze({
  native: "native-multimodal",
  router: "dsh-vision-router",
  semantic: "semantic-only",
});

/**
 * A `VISION_UNAVAILABLE` error carries the text observation read instead of the screenshot: the error the host shows
 * says so and carries that observation, so the model still sees the page (as text) and the plain next step.
 */
export function visionUnavailable(err) {
  const observation = err?.data?.details?.observation;
  if (err?.code !== "VISION_UNAVAILABLE" || !observation) return err;
  const out = new BrokerError(err.code, err.reason, { nextStep: err.nextStep, data: err.data, rpcCode: err.rpcCode });
  out.message = `${err.message}\nThe page as text (no screenshot was taken):\n${resultText(observation)}`;
  return out;
}

/** Origin patterns from an adapter option: an array, or one string separated by `;` or `,` (as `browserd mcp` takes). */
function originList(value) {
  const items = Array.isArray(value) ? value : typeof value === "string" ? [value] : [];
  return items.flatMap((i) => String(i).split(/[;,]/)).map((i) => i.trim()).filter(Boolean);
}

/**
 * The session's own site policy (`session.open`'s `policy`) from the adapter's `allowedOrigins` / `blockedOrigins`
 * options, or `null` without either. It narrows the broker's `[policy]`, never widens it; the broker checks the
 * patterns when the session opens (a bad one is `INVALID_PARAMS`) and refuses a denied origin with
 * `ORIGIN_NOT_AUTHORISED`.
 */
export function sessionPolicy({ allowedOrigins, blockedOrigins } = {}) {
  const policy = { allowedOrigins: originList(allowedOrigins), blockedOrigins: originList(blockedOrigins) };
  return policy.allowedOrigins.length || policy.blockedOrigins.length ? policy : null;
}

/** Maps host close reasons onto the protocol's `CloseReason`. */
export const CLOSE_REASONS = Object.freeze({
  quit: "hostExit",
  reload: "pluginUnload",
  new: "sessionSwitch",
  resume: "sessionSwitch",
  fork: "fork",
});

/**
 * The broker session behind one host session.
 */
export class BrowserSession {
  /**
   * @param {import("./broker-client.mjs").BrokerClient} client
   * @param {{host: string, hostSessionId: string, label?: string, trace?: (event: string) => void,
   *   allowedOrigins?: string[] | string, blockedOrigins?: string[] | string}} options
   */
  constructor(client, options) {
    this.client = client;
    this.host = options.host;
    this.hostSessionId = options.hostSessionId;
    this.label = options.label;
    /** The session's own origin lists, sent with every `session.open` (re-attach included). */
    this.policy = sessionPolicy(options);
    this.trace = options.trace ?? (() => {});
    /** Broker session id once opened. */
    this.id = null;
    /** Tools visible (mirrors the broker's active-sticky state). */
    this.active = false;
    /** Bumped whenever an activation ends; tool closures compare it at execution. */
    this.generation = 0;
    /** The session was closed (final cleanup ran); nothing more is sent. */
    this.closed = false;
    /** Tool specs from `tools.list` (JSON Schemas from the protocol types). */
    this.specs = [];
    /** Failures of host-internal lifecycle calls (turn end, close), newest last; surfaced by status, never in the transcript. */
    this.lifecycleFailures = [];
    this.queue = Promise.resolve();
    /** The vision mode last sent with `session.vision` ({mode, source}); sent again after a re-attach. */
    this.vision = null;
    /** Called when an activation ends (context reset, session close, broker-side reset). */
    this.onDeactivate = options.onDeactivate ?? null;
    this.offConnect = client.onConnect(async (c, { reconnect }) => {
      if (reconnect && this.id && !this.closed) await this.#reattach(c);
    });
    this.onNote = (method, params) => {
      if (method === "tools.changed" && params?.session === this.id && params.tools === "inactive" && this.active) {
        this.#deactivate();
      }
    };
    client.on("notification", this.onNote);
  }

  async #reattach(c) {
    const opened = await c.callDirect("session.open", this.#openParams());
    this.trace(`reattach:${opened.reattached}`);
    this.id = opened.session;
    if (this.vision) await c.callDirect("session.vision", { session: this.id, ...this.vision });
    if (opened.tools !== "activeSticky" && this.active) this.#deactivate();
  }

  /**
   * Tells the broker the host's image route ({mode, source, limits}) when it differs from what it was last told;
   * `limits` ({maxEdge, maxBytes}) is the largest image the host's model or route takes.
   */
  async #syncVision(vision) {
    if (!vision || !this.id) return;
    const next = { mode: vision.mode, source: vision.source };
    if (vision.limits) next.limits = vision.limits;
    if (this.vision && JSON.stringify(this.vision) === JSON.stringify(next)) return;
    await this.client.call("session.vision", { session: this.id, ...next });
    this.vision = next;
    this.trace(`vision:${vision.mode}`);
  }

  #openParams() {
    const p = { host: this.host, hostSessionId: this.hostSessionId };
    if (this.label) p.label = this.label;
    if (this.policy) p.policy = this.policy;
    return p;
  }

  #deactivate() {
    const was = this.active;
    this.active = false;
    this.generation += 1;
    if (was) this.onDeactivate?.();
  }

  /** Runs `fn` after every earlier call of this session has settled (sibling calls never overlap finalize). */
  serial(label, fn) {
    const run = this.queue.then(async () => {
      this.trace(`start:${label}`);
      try {
        return await fn();
      } finally {
        this.trace(`end:${label}`);
      }
    });
    this.queue = run.catch(() => {});
    return run;
  }

  /** Opens or re-attaches the broker session. Returns the `session.open` result. */
  async open() {
    if (this.closed) throw new BrokerError("UNKNOWN_SESSION", "this browser session was closed", { nextStep: "Start a new host session." });
    const opened = await this.client.call("session.open", this.#openParams());
    this.id = opened.session;
    if (opened.tools === "activeSticky") {
      if (!this.active) this.active = true;
      this.specs = (await this.client.call("tools.list", { session: this.id })).tools;
    }
    return opened;
  }

  /** Activates the tools (active-sticky) and fetches their specs. Returns true when this call activated them. */
  async activate() {
    return this.serial("activate", async () => {
      if (!this.id) await this.open();
      const wasActive = this.active;
      const set = await this.client.call("tools.activate", { session: this.id });
      if (set.tools !== "activeSticky") {
        throw new BrokerError("CAPABILITY_NOT_ACTIVATED", "the broker did not activate the browser tools", { data: set });
      }
      this.specs = (await this.client.call("tools.list", { session: this.id })).tools;
      this.active = true;
      return !wasActive;
    });
  }

  /**
   * Calls a browser tool. `generation` is the activation the caller's tool snapshot came from; a call from an
   * ended activation is refused here, before anything reaches the broker. `vision` ({mode, source}) is the host's
   * image route now; it is sent with `session.vision` first when it changed.
   */
  async callTool(name, args, { callId, generation, vision } = {}) {
    return this.serial(name, async () => {
      if (this.closed || !this.active || (generation !== undefined && generation !== this.generation)) {
        throw staleToolError(name);
      }
      // The host's image route as of this call (the model may have changed since the last one).
      await this.#syncVision(vision);
      const params = { session: this.id, name, arguments: args ?? {} };
      // The broker de-duplicates by callId across all its clients; a host's call ids are only unique within its own
      // session (a scripted or restarted provider may reuse them), so they are scoped by host and session. A retry of
      // the same host call keeps the same id.
      if (callId) params.callId = `${this.host}:${this.hostSessionId}:${callId}`;
      let value;
      try {
        value = await this.client.call("tool.call", params);
      } catch (err) {
        // The broker no longer knows the session (e.g. it restarted, or the disconnect grace ran out): this
        // activation is over; the host hides the tools and the model must load the skill again.
        if (err?.code === "UNKNOWN_SESSION") {
          this.id = null;
          this.vision = null;
          this.#deactivate();
        }
        throw visionUnavailable(err);
      }
      if (name === "browser_context_reset" && value?.ok === true && value.toolsActive === false) this.#deactivate();
      return value;
    });
  }

  /** Host-internal turn start (no-op before the session is opened). */
  async turnBegin(hostTurnId) {
    if (!this.id || this.closed) return null;
    return this.serial("turn.begin", () =>
      this.client.call("turn.begin", hostTurnId ? { session: this.id, hostTurnId: String(hostTurnId) } : { session: this.id }),
    );
  }

  /** Host-internal turn cleanup; never model-visible. Failures are recorded, and the broker keeps recovery records. */
  async turnEnd(reason = "agentEnd", hostTurnId) {
    if (!this.id || this.closed) return null;
    return this.serial("turn.end", async () => {
      const params = { session: this.id, reason };
      if (hostTurnId) params.hostTurnId = String(hostTurnId);
      const result = await this.client.call("turn.end", params);
      if (result?.ok === false) this.lifecycleFailures.push({ op: "turn.end", result });
      return result;
    });
  }

  /** Final cleanup and end of the broker session. Returns the cleanup result; `ok: false` keeps recovery records. */
  async close(reason) {
    return this.serial("session.close", async () => {
      if (this.closed) return null;
      if (!this.id) {
        this.closed = true;
        return null;
      }
      const result = await this.client.call("session.close", { session: this.id, reason });
      this.closed = true;
      this.#deactivate();
      if (result?.ok === false) this.lifecycleFailures.push({ op: "session.close", result });
      return result;
    });
  }

  /** Stops listening to the client (the broker session itself is untouched). */
  detach() {
    this.offConnect();
    this.client.off("notification", this.onNote);
  }
}
