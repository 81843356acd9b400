//! The browserd plugin for DeepSeek Harness (DSH), a Cordis plugin written against DSH's documented plugin API
//! (`ctx.tools.register` returning disposers, agent-scoped registration through `agent.ctx`, the `session/event`,
//! `agent/disposed` and `session/disposed` events, `ctx.attachments.saveImage`, and `tools/pre-execute` approvals).
//! A global `browser_skill` tool loads the browser skill and registers the browser tools in the calling agent's
//! scope; their disposers run only after a successful context reset (or with the agent's scope on disposal).
//! DSH `turn/end` is the turn end; agent or session disposal closes the broker session (final cleanup). When the broker
//! holds an action for the user's approval (`APPROVAL_REQUIRED`), the user is asked through DSH's approval service
//! (`approval.request`, as `tools/pre-execute` asks are); allowed grants exactly that action (`approval.grant`) and
//! runs it once, anything else is `APPROVAL_DECLINED`, and without the service or an open turn the answer stands.
//!
//! Verified only by contract tests (real `cordis`, a minimal host shaped after DSH's documented services, the real
//! broker and Chromium); the DSH runtime itself was not available. See adapters/README.md.

import { approvalQuestion, callWithApproval } from "../common/approval.mjs";
import { BrokerClient, BrokerError } from "../common/broker-client.mjs";
import { BrowserSession, VISION, extractScreenshots, readSkill, resultFailure, resultText } from "../common/session.mjs";

export const name = "browserd";

/**
 * `tools` is required. The attachments service is optional (Cordis 4 treats every `inject` entry as required), so it
 * is looked up with `ctx.get("attachments")` when a screenshot arrives: attachments when present, else files.
 */
export const inject = ["tools"];

/** Name of the global tool that loads the skill and registers the browser tools for the calling agent. */
export const SKILL_TOOL = "browser_skill";

const VERSION = "0.1.0";

/** Tools that ask the user's approval (inside a turn, through `tools/pre-execute`) unless configured otherwise. */
export const DEFAULT_ASK_BEFORE = ["browser_claim", "browser_handoff"];

const CLOSE_BUDGET_MS = 15_000;

/**
 * Converts a protocol JSON Schema into DSH's parameter form: `$ref`s into `$defs` are inlined, and every object
 * node states `additionalProperties` explicitly (DSH requires it), keeping the protocol's own value where given.
 */
export function toDshSchema(schema) {
  const defs = schema?.$defs ?? schema?.definitions ?? {};
  const seen = new Set();
  const walk = (node) => {
    if (Array.isArray(node)) return node.map(walk);
    if (!node || typeof node !== "object") return node;
    if (typeof node.$ref === "string") {
      const key = node.$ref.replace(/^#\/(\$defs|definitions)\//, "");
      if (seen.has(key)) return { type: "json", description: node.description ?? key };
      seen.add(key);
      const { $ref: _ref, ...rest } = node;
      const resolved = walk({ ...defs[key], ...rest });
      seen.delete(key);
      return resolved;
    }
    const out = {};
    for (const [k, v] of Object.entries(node)) {
      if (k === "$defs" || k === "definitions" || k === "$schema" || k === "title") continue;
      out[k] = k === "properties" ? Object.fromEntries(Object.entries(v).map(([p, s]) => [p, walk(s)])) : walk(v);
    }
    const isObject = out.type === "object" || (Array.isArray(out.type) && out.type.includes("object"));
    if (isObject && out.additionalProperties === undefined) out.additionalProperties = true;
    return out;
  };
  return walk(schema);
}

/** The JSON Schema of a DSH image attachment reference (`ImageAttachmentRef`). */
const ATTACHMENT_REF_SCHEMA = {
  type: "object",
  description: "The screenshot, saved as an image attachment of this conversation.",
  properties: {
    attachmentId: { type: "string" },
    mediaType: { type: "string" },
    bytes: { type: "integer" },
    width: { type: "integer" },
    height: { type: "integer" },
  },
  required: ["attachmentId", "mediaType"],
  additionalProperties: true,
};

/** The JSON Schema of a screenshot saved to a file (when the host has no attachments service). */
const FILE_PATH_SCHEMA = { type: "string", description: "Path of the saved screenshot file." };

/**
 * The output schema of a tool whose screenshots leave the value: every screenshot object (`imageId`, `format`,
 * `data`) loses its base64 `data` and gains `attachment` (or `path`), so the canonical value still matches.
 */
export function withAttachments(schema, field = "attachment", fieldSchema = ATTACHMENT_REF_SCHEMA) {
  const walk = (node) => {
    if (Array.isArray(node)) return node.map(walk);
    if (!node || typeof node !== "object") return node;
    const out = {};
    for (const [k, v] of Object.entries(node)) {
      out[k] = k === "properties" ? Object.fromEntries(Object.entries(v).map(([p, s]) => [p, walk(s)])) : walk(v);
    }
    const props = out.properties;
    if (props && props.imageId && props.format && props.data) {
      const { data: _data, ...rest } = props;
      out.properties = { ...rest, [field]: fieldSchema };
      out.required = [...(out.required ?? []).filter((r) => r !== "data"), field];
    }
    return out;
  };
  return walk(schema);
}

/** The grounding tool of dsh-vision-router: `{image, target}` → `{x1, y1, x2, y2, width, height}` in image pixels. */
export const GROUNDING_TOOL = "vision_ground";

/**
 * dsh-vision-router's bootstrap tool. With its `progressiveTools` on (the default of its own schema in v1.7.7; its
 * published entry point turns it off unless the user opts in), only this tool is registered until it is called (or an
 * image turn arrives); it then mounts `vision_ground` and the other deep vision tools.
 */
export const ACTIVATE_TOOL = "vision_activate";

/** Whether a tool named `name` is registered where `tools` (a DSH tools service) can see it. */
function hasTool(tools, name) {
  try {
    if (typeof tools?.has === "function") return Boolean(tools.has(name));
    if (typeof tools?.get === "function") return Boolean(tools.get(name));
    if (typeof tools?.list === "function") return [...tools.list()].some((t) => (t?.name ?? t) === name);
  } catch {
    // A registry that cannot answer has no grounding tool as far as this plugin can tell.
  }
  return false;
}

/** Whether the route's model declares image input (`llm.resolveModelInfo`); `null` when the route is unknown. */
async function declaresImage(llm, provider, model) {
  try {
    const info = await llm?.resolveModelInfo?.(provider, model);
    return Array.isArray(info?.inputModalities) && info.inputModalities.includes("image");
  } catch {
    return null;
  }
}

/**
 * Why a route that declares image input is dsh-vision-router's own wrapper over a model that takes none, or `null`.
 * The router's wrapper route (`deepseek-vision`) and its `<provider>-vision` twins declare `["text", "image"]` but
 * replace every image block with a text marker before the text model's request (a twin passes the image through only
 * when its source route's model takes images); its stealth takeover serves `deepseek-official` with image input over
 * a hidden text-only `deepseek-official-native` route. On such a route the main model never sees a screenshot: the
 * router's tools read it, so the mode is `dsh-vision-router`, not `native-multimodal`.
 */
async function routerWrapped(llm, provider, model) {
  if (provider.endsWith("-vision")) {
    const source = provider.slice(0, -"-vision".length);
    if ((await declaresImage(llm, source, model)) === true) return null;
    return "is dsh-vision-router's wrapper over a text model";
  }
  if (provider === "deepseek-official" && (await declaresImage(llm, "deepseek-official-native", model)) === false) {
    return "is dsh-vision-router's stealth wrapper over a text model";
  }
  return null;
}

/** A `session.vision` source (at most 200 characters: the broker refuses a longer one). */
function clip(text) {
  return text.length <= 200 ? text : `${text.slice(0, 199)}…`;
}

/** What the main model is told to do with a screenshot attachment in `dsh-vision-router` mode. */
function groundingStep(grounding) {
  const ground =
    `${GROUNDING_TOOL} with image: this attachmentId, target: what to find, annotate: false (browserd needs only the ` +
    "box; true writes an annotated copy into the workspace), then act at the box's centre with at: {imageId, x, y}";
  return grounding ? `Call ${ground}` : `Call ${ACTIVATE_TOOL} once (it mounts ${GROUNDING_TOOL}), then call ${ground}`;
}

/**
 * The vision mode of a DSH agent's call. The route's model takes images (`llm.resolveModelInfo(provider, model)`
 * declares `inputModalities` with `image`, the probe DSH's own read_image gate uses) and is not dsh-vision-router's
 * wrapper over a text model → `native-multimodal`; else dsh-vision-router is there (`vision_ground`, or
 * `vision_activate` before it mounted `vision_ground`) → `dsh-vision-router` (the screenshot is an attachment the
 * grounding tool reads; the main model gets its id and a next step); else `semantic-only`. Nothing here turns a route
 * on, calls a vision tool or changes the router's settings.
 */
export async function dshVision(ctx, agent) {
  let provider;
  let model;
  try {
    const header = agent?.session?.requestHeader?.();
    provider = header?.config?.provider;
    model = header?.config?.model;
  } catch {
    // No header: the route is unknown.
  }
  const route = provider && model ? `${provider}/${model}` : "unknown route";
  const llm = ctx.get("llm");
  // Unknown route or model info: treated as text only (fail safe).
  const image = provider && model ? (await declaresImage(llm, provider, model)) === true : false;
  const limits = { ...DSH_IMAGE_LIMITS, source: clip(`dsh route ${route}: ${DSH_IMAGE_LIMITS.source}`) };
  const registered = (name) => hasTool(agent?.ctx?.tools, name) || hasTool(ctx.get("tools"), name);
  const grounding = registered(GROUNDING_TOOL);
  const router = grounding || registered(ACTIVATE_TOOL);
  const wrapped = image && router ? await routerWrapped(llm, provider, model) : null;
  if (image && !wrapped) {
    return { mode: VISION.native, source: clip(`dsh route ${route} declares image input`), limits };
  }
  if (router) {
    const takes = wrapped ?? "takes no images";
    const tool = grounding ? `${GROUNDING_TOOL} is registered` : `${ACTIVATE_TOOL} is registered (it mounts ${GROUNDING_TOOL})`;
    return { mode: VISION.router, source: clip(`dsh route ${route} ${takes}; ${tool}`), limits, nextStep: groundingStep(grounding) };
  }
  return {
    mode: VISION.semantic,
    source: clip(`dsh route ${route} takes no images and no ${GROUNDING_TOOL} is registered`),
    limits,
  };
}

/**
 * The image bounds of a DSH route. DSH's model info (`llm.resolveModelInfo`) declares input modalities but no image
 * size, and DSH's attachment service normalises every image to a long edge of 2048 px and 4 MiB: a larger
 * screenshot would be re-encoded there, and the grounding tool's points would then be in pixels of another image
 * than the one browserd's geometry describes. Screenshots are made to fit these bounds instead.
 */
export const DSH_IMAGE_LIMITS = {
  maxEdge: 2048,
  maxBytes: 4 * 1024 * 1024,
  source: "DSH attachment normalisation (2048 px, 4 MiB)",
};

function sessionIdOf(arg) {
  return arg?.agent?.id ?? arg?.session?.id ?? arg?.id;
}

/**
 * Replaces screenshots (base64 `data`) in a value by DSH image attachments; returns the value and the refs. In
 * `dsh-vision-router` mode the value's ref names the grounding tool (`groundWith`) and what to call (`nextStep`).
 */
async function toAttachments(value, attachments, vision) {
  const refs = [];
  const walk = async (node) => {
    if (Array.isArray(node)) return Promise.all(node.map(walk));
    if (!node || typeof node !== "object") return node;
    if (typeof node.imageId === "string" && typeof node.data === "string" && typeof node.format === "string") {
      const { data, ...meta } = node;
      const attachment = await attachments.saveImage({
        data: new Uint8Array(Buffer.from(data, "base64")),
        mediaType: `image/${node.format}`,
        name: `${node.imageId}.${node.format === "jpeg" ? "jpg" : node.format}`,
      });
      const ref =
        vision.mode === VISION.router ? { ...attachment, groundWith: GROUNDING_TOOL, nextStep: vision.nextStep } : attachment;
      refs.push(ref);
      return { ...meta, attachment: ref };
    }
    const out = {};
    for (const [k, v] of Object.entries(node)) out[k] = await walk(v);
    return out;
  };
  return { value: await walk(value), refs };
}

function findAttachments(value, out = []) {
  if (Array.isArray(value)) value.forEach((v) => findAttachments(v, out));
  else if (value && typeof value === "object") {
    if (value.attachment && typeof value.attachment.attachmentId === "string") out.push(value.attachment);
    for (const v of Object.values(value)) findAttachments(v, out);
  }
  return out;
}

/**
 * Model-facing content: the compact JSON (no image bytes) plus each attached image by reference, as DSH's own
 * `read_image` renders one (`{type: "image", attachment}`, the ref exactly as `saveImage` returned it). In
 * `dsh-vision-router` mode the block is what the router needs: its `vision_ground` resolves a `sha256:` id only among
 * the image blocks of the session's event log, and the router itself replaces tool-result image blocks with a text
 * marker before a request to a model that takes no images.
 */
function render(_args, value) {
  const blocks = [{ type: "text", text: resultText(value) }];
  for (const { groundWith: _g, nextStep: _n, ...attachment } of findAttachments(value)) {
    blocks.push({ type: "image", attachment });
  }
  return blocks;
}

/**
 * @param {import("cordis").Context} ctx
 * @param {{client?: BrokerClient, askBefore?: string[], trace?: (e: string) => void,
 *   allowedOrigins?: string[] | string, blockedOrigins?: string[] | string}} [config] `allowedOrigins` /
 *   `blockedOrigins`: each agent session's own origin lists (they narrow the broker's `[policy]`, never widen it)
 */
export function apply(ctx, config = {}) {
  const trace = config.trace ?? (() => {});
  /** Lifecycle failures go to the host's log (and the trace), never into the transcript. */
  const warn = (message) => {
    trace(message);
    try {
      ctx.logger.warn(`browserd: ${message}`);
    } catch {
      // No logger: the trace is all there is.
    }
  };
  const askBefore = new Set(config.askBefore ?? DEFAULT_ASK_BEFORE);
  const ownClient = !config.client;
  const client = config.client ?? new BrokerClient({ role: "dshAdapter", component: "browserd-dsh", version: VERSION });
  /** DSH session (agent) id → { sess, disposers, agent } */
  const entries = new Map();

  const entryFor = (agent) => {
    let entry = entries.get(agent.id);
    if (!entry || entry.sess.closed) {
      const { allowedOrigins, blockedOrigins } = config;
      const options = { host: "dsh", hostSessionId: String(agent.id), trace, allowedOrigins, blockedOrigins };
      entry = { agent, disposers: [], sess: new BrowserSession(client, options) };
      const current = entry;
      // Any end of the activation (reset from elsewhere, lost session, close) unregisters the agent's tools.
      entry.sess.onDeactivate = () => void unregister(current).catch(() => {});
      entries.set(agent.id, entry);
    }
    return entry;
  };

  /** Unregisters an agent's browser tools (only after a successful reset, or on disposal). */
  const unregister = async (entry) => {
    const disposers = entry.disposers.splice(0);
    for (const dispose of disposers) await dispose();
    if (disposers.length) trace(`tools:unregistered:${entry.agent.id}`);
  };

  const registerTools = (entry) => {
    const { sess, agent } = entry;
    const generation = sess.generation;
    for (const spec of sess.specs) {
      const dispose = agent.ctx.tools.register({
        name: spec.name,
        description: spec.description,
        parameters: toDshSchema(spec.inputSchema),
        output: {
          schema: ctx.get("attachments")
            ? withAttachments(toDshSchema(spec.outputSchema))
            : withAttachments(toDshSchema(spec.outputSchema), "path", FILE_PATH_SCHEMA),
          render,
        },
        // Browser work of one agent is exclusive: never run two browser calls at once.
        isConcurrencySafe: () => false,
        async execute(args, exec) {
          const vision = await dshVision(ctx, exec?.agent ?? agent);
          // An action the broker holds for the user's approval is asked through DSH's approval service (the one
          // `tools/pre-execute` asks go through), inside the turn; yes grants exactly it (`approval.grant`).
          const confirm = async (details) => {
            const approval = ctx.get("approval");
            if (!approval) return null;
            let outcome;
            try {
              const { message } = approvalQuestion(details);
              outcome = await approval.request({ agent: exec?.agent ?? agent, toolName: spec.name, callId: exec?.callId, reason: message });
            } catch (err) {
              // Outside a turn (or no approval UI): the broker's APPROVAL_REQUIRED stands.
              trace(`approval:unavailable:${err.message}`);
              return null;
            }
            trace(`approval:${outcome}`);
            return typeof outcome === "string" && outcome.startsWith("allowed");
          };
          const raw = await callWithApproval(sess, spec.name, args, { callId: exec?.callId, generation, vision }, confirm);
          const failure = resultFailure(spec.name, raw);
          if (failure) throw new Error(failure);
          if (spec.name === "browser_context_reset") await unregister(entry);
          // Screenshots never travel as base64 in the value: attachments when the host has them, else files.
          if (!ctx.get("attachments")) return extractScreenshots(raw).value;
          return (await toAttachments(raw, ctx.get("attachments"), vision)).value;
        },
      });
      entry.disposers.push(dispose);
    }
    trace(`tools:registered:${agent.id}`);
  };

  // Tied to this plugin's scope explicitly, so it goes away on unload (HMR) whatever registry it lands in.
  ctx.effect(() => ctx.tools.register({
    name: SKILL_TOOL,
    description:
      "Load the browser skill and enable the browser tools for this agent. Call it once, only when the task needs a web browser.",
    parameters: { type: "object", properties: {}, additionalProperties: false },
    output: {
      schema: { type: "object", additionalProperties: true },
      render: (_args, value) => [{ type: "text", text: value.skill ?? value.message }],
    },
    isConcurrencySafe: () => false,
    async execute(_args, exec) {
      const agent = exec?.agent;
      if (!agent) {
        throw new BrokerError("UNSUPPORTED_BY_IMPLEMENTATION", "browser_skill needs an agent (it registers tools in the agent's scope)");
      }
      const entry = entryFor(agent);
      if (entry.sess.active && entry.disposers.length) {
        return { activated: false, message: "Browser tools are already active for this agent; the skill was loaded earlier." };
      }
      await entry.sess.activate();
      registerTools(entry);
      trace("skill:loaded");
      return { activated: true, tools: entry.sess.specs.map((s) => s.name), skill: readSkill() };
    },
  }), "browser_skill tool");

  // Approvals are requested inside a turn, before execution, and only for the configured tools. Turn-end and
  // disposal cleanup never ask: they are not tool calls.
  ctx.on("tools/pre-execute", (execution) => {
    if (!execution || !askBefore.has(execution.name)) return undefined;
    return { kind: "ask", reason: `${execution.name} takes over or hands over a browser tab` };
  });

  ctx.on("session/event", (session, event) => {
    const entry = entries.get(sessionIdOf(session));
    if (!entry?.sess.id || !event) return;
    if (event.type === "turn/start") {
      entry.sess.turnBegin(event.turn).catch((err) => warn(`turn.begin failed: ${err.message}`));
    } else if (event.type === "turn/end") {
      // Fire-and-forget in DSH (turn/end is not awaited); the session queue still orders it before later calls.
      entry.sess
        .turnEnd("agentEnd", event.turn)
        .then((result) => {
          if (result?.ok === false) warn(`turn cleanup left work for recovery: ${JSON.stringify(result.failed ?? [])}`);
        })
        .catch((err) => warn(`turn cleanup failed: ${err.message}`))
        .finally(() => trace(`turn_end_done:${entry.agent.id}`));
    }
  });

  const closeEntry = async (id, reason) => {
    const entry = entries.get(id);
    if (!entry) return null;
    entries.delete(id);
    try {
      const budget = new Promise((_, reject) => setTimeout(() => reject(new Error("session close timed out")), CLOSE_BUDGET_MS).unref());
      const result = await Promise.race([entry.sess.close(reason), budget]);
      if (result?.ok === false) warn(`final cleanup left work for recovery: ${JSON.stringify(result.failed ?? [])}`);
      return result;
    } catch (err) {
      warn(`final cleanup failed: ${err.message}`);
      return null;
    } finally {
      await unregister(entry).catch(() => {});
      entry.sess.detach();
      trace(`closed:${id}`);
    }
  };

  ctx.on("agent/disposed", (payload) => {
    void closeEntry(sessionIdOf(payload), "agentDisposed");
  });
  ctx.on("session/disposed", (session) => {
    void closeEntry(sessionIdOf(session), "agentDisposed");
  });

  // Plugin unload (including HMR): final cleanup for every agent, without blocking the host for long.
  ctx.effect(() => async () => {
    await Promise.all([...entries.keys()].map((id) => closeEntry(id, "pluginUnload")));
    if (ownClient) client.close();
  }, "browserd sessions");

  return { entries, client };
}
