//! A minimal DeepSeek Harness host for CONTRACT tests of the browserd DSH plugin: the real `cordis` (4.x, as DSH
//! uses) with services shaped after DSH's documentation (tools registry with disposers and agent scopes, attachments
//! with `saveImage`, approvals that need an open turn, the session's request header naming its model route and
//! `llm.resolveModelInfo` declaring the route's input modalities, as dsh-vision-router reads them) and its events (`session/event` turn/start and turn/end,
//! `agent/disposed`, `session/disposed`, `tools/pre-execute`). Each agent's session keeps DSH's append-only event log
//! (`session.events`): every tool call's rendered content is recorded as a `tool/result` event, where dsh-vision-router
//! looks attachment ids up, and `attachments.readImage(ref)` gives the stored bytes back for a ref. Every call a
//! plugin makes on the `llm`, `settings` and `tools` services is recorded (`host.calls`). It is not DSH: it checks the
//! shapes the plugin relies on, as documented at deepseek-harness 0.1.1-rc.2, and nothing more.

import crypto from "node:crypto";

import { Context } from "cordis";
import { Compile } from "typebox/compile";

const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/webp", "image/gif"]);

/** Width and height of a PNG or JPEG, from its header. */
function imageSize(bytes) {
  const b = Buffer.from(bytes);
  if (b.length > 24 && b.readUInt32BE(0) === 0x89504e47) return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
  if (b[0] === 0xff && b[1] === 0xd8) {
    let i = 2;
    while (i + 9 < b.length) {
      if (b[i] !== 0xff) break;
      const marker = b[i + 1];
      const len = b.readUInt16BE(i + 2);
      if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)) {
        return { width: b.readUInt16BE(i + 7), height: b.readUInt16BE(i + 5) };
      }
      i += 2 + len;
    }
  }
  throw new Error("saveImage: not a PNG or JPEG image");
}

/** DSH requires explicit `additionalProperties` on object nodes of a tool's parameters. */
function checkSchema(node, path) {
  if (!node || typeof node !== "object") return;
  if (node.$ref) throw new Error(`${path}: unresolved $ref ${node.$ref}`);
  if (node.type === "object" && node.additionalProperties === undefined) {
    throw new Error(`${path}: object node without additionalProperties`);
  }
  for (const [k, v] of Object.entries(node)) {
    if (k === "properties") for (const [p, s] of Object.entries(v)) checkSchema(s, `${path}.${p}`);
    else if (typeof v === "object") checkSchema(v, `${path}/${k}`);
  }
}

function checkDefinition(def) {
  for (const key of ["name", "description"]) if (typeof def[key] !== "string" || !def[key]) throw new Error(`tool ${key} missing`);
  if (typeof def.execute !== "function") throw new Error(`${def.name}: execute missing`);
  if (!def.output || typeof def.output.render !== "function" || !def.output.schema) {
    throw new Error(`${def.name}: the canonical output declaration (schema + render) is mandatory`);
  }
  checkSchema(def.parameters, `${def.name}.parameters`);
}

/** Creates the host. */
export async function createHost({
  approvalPolicy = () => "allowed-once",
  withAttachments = true,
  inputModalities = ["text", "image"],
} = {}) {
  const root = new Context();
  /** scope ('global' or agent id) → name → definition */
  const registry = new Map([["global", new Map()]]);
  const attachments = new Map();
  const openTurns = new Map();
  const approvals = [];
  const agents = new Map();
  /** `service.method` of every call made on the recorded services, with its first argument. */
  const calls = [];
  const recorded = (service, impl) =>
    new Proxy(impl, {
      get(target, key) {
        const value = target[key];
        if (typeof value !== "function") return value;
        return (...args) => {
          calls.push({ call: `${service}.${String(key)}`, arg: args[0] });
          return value.apply(target, args);
        };
      },
    });

  const add = (scope, def) => {
    checkDefinition(def);
    if (!registry.has(scope)) registry.set(scope, new Map());
    const layer = registry.get(scope);
    if (layer.has(def.name)) throw new Error(`duplicate tool ${def.name} in scope ${scope}`);
    layer.set(def.name, def);
    root.emit("tools/change");
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (layer.get(def.name) === def) layer.delete(def.name);
      root.emit("tools/change");
    };
  };

  /** Model route metadata by `provider/model`, answered by the `llm` service's `resolveModelInfo`. */
  const models = new Map([["deepseek/main", { inputModalities }]]);
  const hasIn = (scope) => (name) => Boolean(registry.get(scope)?.has(name) || registry.get("global").has(name));

  root.provide("tools");
  root.set("tools", recorded("tools", { register: (def) => add("global", def), has: hasIn("global") }));
  root.provide("llm");
  root.set("llm", recorded("llm", {
    async resolveModelInfo(provider, model) {
      const info = models.get(`${provider}/${model}`);
      if (!info) throw new Error(`unknown model ${provider}/${model}`);
      return { provider, model, ...info };
    },
    registerAdapter() {
      throw new Error("llm.registerAdapter: not offered by the contract host");
    },
    stream() {
      throw new Error("llm.stream: not offered by the contract host");
    },
  }));
  // DSH's settings service (dsh-vision-router keeps its vision chain, free fallback and annotate switches there).
  const settings = new Map();
  root.provide("settings");
  root.set("settings", recorded("settings", {
    register(namespace) {
      return { get: () => settings.get(namespace) ?? {}, set: (value) => settings.set(namespace, value) };
    },
    get: (namespace) => settings.get(namespace),
    set: (namespace, value) => settings.set(namespace, value),
  }));
  if (withAttachments) root.provide("attachments");
  if (withAttachments) root.set("attachments", {
    async saveImage({ data, mediaType, name }) {
      if (!(data instanceof Uint8Array)) throw new Error("saveImage: data must be a Uint8Array");
      if (!IMAGE_TYPES.has(mediaType)) throw new Error(`saveImage: unsupported media type ${mediaType}`);
      const attachmentId = `sha256:${crypto.createHash("sha256").update(data).digest("hex")}`;
      const ref = { attachmentId, mediaType, bytes: data.byteLength, ...imageSize(data), ...(name ? { name } : {}) };
      attachments.set(attachmentId, { ref, data });
      return ref;
    },
    /** The stored image of a ref: its id, media type and size must be those `saveImage` answered. */
    async readImage(ref) {
      const stored = attachments.get(ref?.attachmentId);
      if (!stored) throw new Error(`readImage: no attachment ${ref?.attachmentId}`);
      if (ref.mediaType !== stored.ref.mediaType || (ref.bytes !== undefined && ref.bytes !== stored.ref.bytes)) {
        throw new Error(`readImage: the ref does not match attachment ${ref.attachmentId}`);
      }
      return { ref: stored.ref, data: stored.data };
    },
  });
  root.provide("approval");
  root.set("approval", {
    async request(req) {
      if (!openTurns.get(req.agent.id)) throw new Error("approval.request requires the requesting session to be inside an open turn");
      const outcome = await approvalPolicy(req);
      approvals.push({ toolName: req.toolName, reason: req.reason, outcome });
      return outcome;
    },
  });

  await root.plugin({ name: "host-ready", apply() {} });

  return {
    root,
    registry,
    attachments,
    models,
    approvals,
    calls,
    /** Loads a plugin into the host (what `cordis.yml` / a bundle does). */
    plugin(plugin, config) {
      return root.plugin(plugin, config);
    },
    /** Creates an agent whose `ctx` registers tools in the agent's own scope, unwound when it is disposed. */
    async createAgent(id) {
      let agentCtx;
      const iso = root.isolate("tools");
      iso.provide("tools");
      iso.set("tools", { register: (def) => agentCtx.effect(() => add(id, def), `tool ${def.name}`), has: hasIn(id) });
      const fiber = iso.plugin({ name: `agent:${id}`, inject: ["tools"], apply(c) { agentCtx = c; } });
      await fiber;
      const route = { provider: "deepseek", model: "main" };
      // DSH's session request header names the route (provider and model) the session's turns go to; `events` is
      // the session's append-only event log.
      const session = { id, events: [], requestHeader: () => ({ config: { ...agent.route } }) };
      const agent = { id, route, session, ctx: fiber.ctx, fiber };
      agents.set(id, agent);
      root.emit("agent/created", { agent });
      return agent;
    },
    /** Tool names visible to an agent (its scope shadows the global layer). */
    visible(agent) {
      return [...new Set([...(registry.get("global")?.keys() ?? []), ...(registry.get(agent.id)?.keys() ?? [])])].sort();
    },
    /** Resolves a tool as the agent sees it now (a snapshot: the caller may hold on to it). */
    lookup(agent, name) {
      return registry.get(agent.id)?.get(name) ?? registry.get("global").get(name);
    },
    beginTurn(agent, turn) {
      openTurns.set(agent.id, turn);
      root.emit("session/event", agent.session, { type: "turn/start", turn });
    },
    endTurn(agent, turn, reason = { kind: "completed" }) {
      openTurns.delete(agent.id);
      root.emit("session/event", agent.session, { type: "turn/end", turn, reason });
    },
    /**
     * Runs a tool call the way DSH's pipeline does: pre-execute (allow/deny/ask) → execute → render → the rendered
     * content appended to the session's event log as a `tool/result` event. A throw becomes `isError`. `snapshot`
     * lets a test call an old definition (a stale tool snapshot).
     */
    async execute(agent, name, args = {}, options = {}) {
      const result = await this.run(agent, name, args, options);
      const callId = result.callId ?? `call-${crypto.randomUUID()}`;
      const content = result.isError ? [{ type: "text", text: result.error }] : result.content;
      const { events } = agent.session;
      events.push({
        seq: events.length,
        type: "tool/result",
        data: {
          turn: openTurns.get(agent.id),
          message: {
            id: `msg-${events.length}`,
            role: "user",
            source: { kind: "tool", callId },
            content: [{ type: "tool-result", toolCallId: callId, toolName: name, content, isError: result.isError }],
          },
        },
      });
      return result;
    },
    async run(agent, name, args = {}, { snapshot } = {}) {
      const def = snapshot ?? this.lookup(agent, name);
      if (!def) return { isError: true, code: "UNKNOWN_TOOL", error: `unknown tool ${name}` };
      const execution = { callId: `call-${crypto.randomUUID()}`, name, arguments: args, agent, signal: new AbortController().signal };
      const decision = await root.bail("tools/pre-execute", execution);
      if (decision?.kind === "deny") return { isError: true, code: "DENIED", error: decision.reason };
      if (decision?.kind === "ask") {
        const outcome = await root.get("approval").request({ agent, toolName: name, callId: execution.callId, reason: decision.reason });
        if (outcome !== "allowed-once") return { isError: true, code: "APPROVAL", error: `approval ${outcome}` };
      }
      try {
        const value = await def.execute(args, execution);
        // DSH: "returning an invalid value means isError" — the canonical value must match output.schema.
        const validator = Compile(def.output.schema);
        if (!validator.Check(value)) {
          const why = [...validator.Errors(value)].slice(0, 3).map((e) => `${e.instancePath ?? e.path}: ${e.message}`);
          return { isError: true, code: "INVALID_OUTPUT", error: `${name} returned a value outside its output schema: ${why.join("; ")}` };
        }
        return { isError: false, callId: execution.callId, value, content: def.output.render(args, value) };
      } catch (err) {
        return { isError: true, callId: execution.callId, error: err.message };
      }
    },
    /** Disposes an agent: scoped registrations unwind, then `agent/disposed` and `session/disposed` fire. */
    async disposeAgent(agent) {
      await agent.fiber.dispose();
      agents.delete(agent.id);
      root.emit("agent/disposed", { agent });
      root.emit("session/disposed", agent.session);
    },
  };
}
