//! The browserd extension for the Pi coding agent (`@mariozechner/pi-coding-agent` 0.73): a `browser_skill` tool
//! loads the browser skill once per session and activates the browser tools (`setActiveTools`) until a context reset
//! or the session ends; the core-tier tools are registered with the broker's JSON Schemas (`tools.list`) and
//! `executionMode: "sequential"`. Pi's `agent_end` is the turn end (its `turn_end` fires per LLM call), and
//! `session_start` / `session_shutdown` open and close the broker session keyed by Pi's session id. Failures throw,
//! so Pi sets `isError`; nothing is added to the transcript at turn end. An action that needs the user's approval is
//! asked with Pi's `ctx.ui.confirm` (yes: `approval.grant` and the call once more; no: `APPROVAL_DECLINED`; no UI:
//! `APPROVAL_REQUIRED` stands; `../common/approval.mjs`).

import fs from "node:fs";

import { approvalQuestion, callWithApproval } from "../common/approval.mjs";
import { BrokerClient, BrokerError, socketPath } from "../common/broker-client.mjs";
import {
  BrowserSession,
  CLOSE_REASONS,
  VISION,
  extractScreenshots,
  readSkill,
  resultFailure,
  resultText,
} from "../common/session.mjs";

/** Name of the tool that loads the skill and activates the browser tools. */
export const SKILL_TOOL = "browser_skill";

const VERSION = "0.1.0";

/** How long session close may hold up Pi's shutdown or session switch. */
const CLOSE_BUDGET_MS = 15_000;

let sharedClient = null;
/** Host session id → BrowserSession; module state survives Pi's per-session extension instances. */
const sessions = new Map();

function defaultClient() {
  if (!sharedClient || sharedClient.closed) {
    sharedClient = new BrokerClient({ role: "piAdapter", component: "browserd-pi", version: VERSION });
  }
  return sharedClient;
}

function withBudget(promise, ms, what) {
  let timer;
  const budget = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new BrokerError("DEADLINE_EXCEEDED", `${what} took longer than ${ms} ms`)), ms);
    timer.unref?.();
  });
  return Promise.race([promise, budget]).finally(() => clearTimeout(timer));
}

/**
 * The vision mode for Pi's current model: `native-multimodal` when the model declares image input (`model.input`
 * includes `image`), else `semantic-only` (Pi has no grounding tool of its own). No model: `semantic-only`.
 */
export function piVision(model) {
  if (!model) return { mode: VISION.semantic, source: "pi: no model selected" };
  const input = Array.isArray(model.input) ? model.input : [];
  const source = `pi model ${model.provider}/${model.id} declares input ${input.join("+") || "none"}`;
  const mode = input.includes("image") ? VISION.native : VISION.semantic;
  return { mode, source, limits: piImageLimits(model) };
}

/**
 * The largest image each provider's API takes, for models whose Pi model info declares none (Pi's `Model` has no
 * image limit field). Anthropic: 8000 px per side and 5 MB per image (base64; 3 750 000 bytes before encoding).
 */
export const PROVIDER_IMAGE_LIMITS = {
  anthropic: { maxEdge: 8000, maxBytes: 3_750_000 },
};

/**
 * Any other provider: the bounds Pi itself resizes images to for its models (`images.autoResize`: 2000×2000 px,
 * 4.5 MB of base64, i.e. 3 538 944 bytes before encoding).
 */
export const PI_IMAGE_LIMITS = { maxEdge: 2000, maxBytes: 3_538_944 };

/**
 * The image limits for Pi's model (`session.vision`'s `limits`): Pi's model info declares none, so its provider's
 * documented limits, else the bounds Pi itself resizes images to.
 */
export function piImageLimits(model) {
  const provider = PROVIDER_IMAGE_LIMITS[model?.provider];
  if (provider) return { ...provider, source: `pi: ${model.provider}'s API limits` };
  return { ...PI_IMAGE_LIMITS, source: "pi: Pi's own image bounds (images.autoResize)" };
}

function label(name) {
  return `Browser ${name.replace(/^browser_/, "").replace(/_/g, " ")}`;
}

/**
 * Builds the extension factory.
 * @param {object} [options]
 * @param {BrokerClient} [options.client] broker client (default: one per process, started on demand)
 * @param {(event: string) => void} [options.trace] test hook: lifecycle and tool-call events in order
 * @param {(message: string) => void} [options.warn] where lifecycle failures are reported (default: the UI, else stderr)
 * @param {string[] | string} [options.allowedOrigins] only these origin patterns may be shown or acted on in Pi's
 *   sessions (narrows the broker's `[policy]`; `;`/`,`-separated when a string)
 * @param {string[] | string} [options.blockedOrigins] origin patterns Pi's sessions never show or act on
 */
export function createBrowserdExtension(options = {}) {
  const trace = options.trace ?? (() => {});
  const getClient = () => options.client ?? defaultClient();

  return function browserdPi(pi) {
    /** This instance's session (Pi makes a new extension instance per session). */
    let sess = null;
    let browserNames = [];
    /** The skill was loaded in the running agent run; continue the user's request once the run ends. */
    let continueAfterRun = false;

    const warn = (ctx, message) => {
      if (options.warn) options.warn(message);
      else if (ctx?.hasUI) ctx.ui.notify(message, "warning");
      else process.stderr.write(`browserd: ${message}\n`);
    };

    const sessionFor = (ctx) => {
      const hostSessionId = ctx.sessionManager.getSessionId();
      if (sess && sess.hostSessionId === hostSessionId && !sess.closed) return sess;
      let existing = sessions.get(hostSessionId);
      if (!existing || existing.closed) {
        existing = new BrowserSession(getClient(), {
          host: "pi",
          hostSessionId,
          trace,
          allowedOrigins: options.allowedOrigins,
          blockedOrigins: options.blockedOrigins,
        });
        sessions.set(hostSessionId, existing);
      }
      sess = existing;
      sess.onDeactivate = () => hideTools();
      return sess;
    };

    const hideTools = () => {
      if (browserNames.length === 0) return;
      const hidden = new Set(browserNames);
      try {
        pi.setActiveTools(pi.getActiveTools().filter((name) => !hidden.has(name)));
        trace("tools:hidden");
      } catch {
        // A replaced (stale) instance: its tools went away with it.
      }
    };

    const showTools = (s) => {
      const generation = s.generation;
      browserNames = s.specs.map((spec) => spec.name);
      for (const spec of s.specs) {
        pi.registerTool({
          name: spec.name,
          label: label(spec.name),
          description: spec.description,
          // No promptSnippet: the skill already explains the tools; the system prompt stays short.
          parameters: spec.inputSchema,
          executionMode: "sequential",
          async execute(toolCallId, params, signal, _onUpdate, ctx) {
            // The mode follows the model making this call (the user may switch models within a session).
            const vision = piVision(ctx?.model);
            // An action that needs the user's approval is asked through Pi's confirm dialog; without a UI the
            // APPROVAL_REQUIRED answer stands.
            const confirm = async (details) => {
              if (!ctx?.hasUI) return null;
              const { title, message } = approvalQuestion(details);
              trace("approval:asked");
              const yes = await ctx.ui.confirm(title, message, { signal });
              trace(`approval:${yes ? "granted" : "declined"}`);
              return yes === true;
            };
            const value = await callWithApproval(s, spec.name, params, { callId: toolCallId, generation, vision }, confirm);
            const failure = resultFailure(spec.name, value);
            if (failure) throw new Error(failure);
            const { value: shown, images } = extractScreenshots(value);
            const content = [{ type: "text", text: resultText(shown) }];
            // Images reach the model only when it declares image input (the broker refuses screenshots otherwise).
            if (vision.mode === VISION.native) {
              for (const image of images) content.push({ type: "image", data: image.data, mimeType: image.mimeType });
            }
            return { content, details: shown };
          },
        });
      }
      pi.setActiveTools([...new Set([...pi.getActiveTools(), ...browserNames])]);
      trace("tools:shown");
    };

    pi.registerTool({
      name: SKILL_TOOL,
      label: "Browser skill",
      description:
        "Load the browser skill and enable the browser tools for this session. Call it once, only when the task needs a web browser.",
      promptSnippet: "Load the browser skill (once per session) when a task needs a web browser",
      parameters: { type: "object", properties: {}, additionalProperties: false },
      executionMode: "sequential",
      async execute(_toolCallId, _params, _signal, _onUpdate, ctx) {
        const s = sessionFor(ctx);
        if (s.active) {
          if (browserNames.length === 0) showTools(s);
          return {
            content: [{ type: "text", text: "Browser tools are already active in this session; the skill was loaded earlier." }],
            details: { alreadyActive: true },
          };
        }
        await s.activate();
        showTools(s);
        trace("skill:loaded");
        // Pi fixes a prompt's tool list when the prompt starts, so tools activated now are callable from the next
        // agent run: this run stops after the skill result and agent_end starts the continuation run.
        continueAfterRun = true;
        const tools = browserNames.join(", ");
        return {
          content: [{ type: "text", text: `${readSkill()}\n\nBrowser tools now active: ${tools}.` }],
          details: { activated: true, tools: browserNames },
          terminate: true,
        };
      },
    });

    pi.on("session_start", async (event, ctx) => {
      const s = sessionFor(ctx);
      trace(`session_start:${event.reason}`);
      // Re-attach only a broker session that already exists (a resumed or reloaded Pi session); never start the
      // broker for a session that has not asked for the browser.
      if (!fs.existsSync(getClient().socket)) return;
      try {
        const status = await getClient().call("status", {});
        const known = status.sessions?.some((x) => x.host === "pi" && x.hostSessionId === s.hostSessionId);
        if (!known) return;
        await s.open();
        if (s.active) showTools(s);
      } catch (err) {
        warn(ctx, `could not re-attach the browser session: ${err.message}`);
      }
    });

    pi.on("agent_start", async (_event, ctx) => {
      trace("agent_start");
      if (!sess?.id) return;
      try {
        await sess.turnBegin();
      } catch (err) {
        warn(ctx, `turn begin failed: ${err.message}`);
      }
    });

    // Pi's `turn_end` is per LLM call; one user prompt ends at `agent_end`.
    pi.on("agent_end", async (event, ctx) => {
      trace("agent_end");
      const last = event.messages?.[event.messages.length - 1];
      const resume = continueAfterRun && last?.role === "toolResult" && last.toolName === SKILL_TOOL && !last.isError;
      continueAfterRun = false;
      try {
        if (sess?.id) {
          const result = await sess.turnEnd("agentEnd");
          if (result && result.ok === false) {
            warn(ctx, `turn cleanup left work for recovery: ${JSON.stringify(result.failed ?? [])}`);
          }
        }
      } catch (err) {
        warn(ctx, `turn cleanup failed (the broker keeps recovery records): ${err.message}`);
      } finally {
        if (resume) {
          trace("continue:scheduled");
          continueWhenIdle(ctx);
        }
        trace("turn_end_done");
      }
    });

    const continueWhenIdle = async (ctx) => {
      try {
        for (let i = 0; i < 2000 && !ctx.isIdle(); i++) await new Promise((r) => setTimeout(r, 5));
        await pi.sendMessage(
          { customType: "browserd", content: "Browser tools are active; continue the request.", display: false },
          { triggerTurn: true },
        );
      } catch (err) {
        warn(ctx, `could not continue after loading the browser skill: ${err.message}`);
      } finally {
        trace("continue:done");
      }
    };

    pi.on("session_shutdown", async (event, ctx) => {
      const s = sess;
      trace(`session_shutdown:${event.reason}`);
      if (!s) return;
      sessions.delete(s.hostSessionId);
      try {
        if (s.id) {
          const result = await withBudget(s.close(CLOSE_REASONS[event.reason] ?? "hostExit"), CLOSE_BUDGET_MS, "session close");
          if (result && result.ok === false) {
            warn(ctx, `final cleanup left work for recovery: ${JSON.stringify(result.failed ?? [])}`);
          }
        }
      } catch (err) {
        warn(ctx, `final cleanup failed (the broker keeps recovery records): ${err.message}`);
      } finally {
        s.detach();
        if (event.reason === "quit" && !options.client && sessions.size === 0) sharedClient?.close();
      }
    });
  };
}

/** Appends lifecycle trace lines to `file` (set `BROWSERD_TRACE_FILE` to debug the adapter or to drive tests). */
function fileTrace(file) {
  if (!file) return undefined;
  return (event) => {
    try {
      fs.appendFileSync(file, `${event}\n`);
    } catch {
      // Tracing never breaks the adapter.
    }
  };
}

/** The extension as Pi loads it (`pi -e`, `~/.pi/agent/extensions`); the session's own origin lists come from
 *  `BROWSERD_PI_ALLOWED_ORIGINS` / `BROWSERD_PI_BLOCKED_ORIGINS` (`;`-separated patterns). */
export default createBrowserdExtension({
  trace: fileTrace(process.env.BROWSERD_TRACE_FILE),
  allowedOrigins: process.env.BROWSERD_PI_ALLOWED_ORIGINS,
  blockedOrigins: process.env.BROWSERD_PI_BLOCKED_ORIGINS,
});

export { socketPath };
