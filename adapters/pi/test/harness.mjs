//! In-process Pi harness for the adapter tests: the real `@mariozechner/pi-coding-agent` runtime
//! (`createAgentSessionRuntime`, persistent sessions so new/resume/fork work) with a scripted model
//! (`registerFauxProvider`) and the browserd extension loaded as an extension factory. Every model call records the
//! tool names it was offered and the messages it saw, so tests can assert what the model was shown.

import path from "node:path";

import { fauxAssistantMessage, fauxText, fauxToolCall, registerFauxProvider } from "@mariozechner/pi-ai";
import {
  AuthStorage,
  createAgentSessionFromServices,
  createAgentSessionRuntime,
  createAgentSessionServices,
  SessionManager,
} from "@mariozechner/pi-coding-agent";

import { createBrowserdExtension } from "../extension.mjs";

let harnessCount = 0;

/** The newest tool result named `name` in a model context, parsed from its JSON text. */
export function lastResult(context, name) {
  for (let i = context.messages.length - 1; i >= 0; i--) {
    const m = context.messages[i];
    if (m.role === "toolResult" && m.toolName === name) {
      const text = m.content.find((c) => c.type === "text")?.text ?? "";
      try {
        return JSON.parse(text);
      } catch {
        return { text, isError: m.isError };
      }
    }
  }
  return undefined;
}

/** A model step that calls tools; `calls` is a list of [name, args] or [name, (context) => args]. */
export function callTools(...calls) {
  return (context) =>
    fauxAssistantMessage(
      calls.map(([name, args], i) => fauxToolCall(name, typeof args === "function" ? args(context) : (args ?? {}), { id: `c${Date.now()}_${i}` })),
      { stopReason: "toolUse" },
    );
}

/** A model step that answers with text (ends the prompt). */
export function say(text) {
  return () => fauxAssistantMessage(fauxText(text));
}

/**
 * Creates a Pi runtime with the browserd extension and a scripted model.
 * @param {{env: {work: string, home: string}, trace?: (e: string) => void, client?: any,
 *   models?: Array<{id: string, input: string[]}>, extension?: object}} options the scripted models (default one,
 *   `m1`, that declares text and image input; the first is selected); `extension`: more options of
 *   `createBrowserdExtension` (e.g. `blockedOrigins`)
 */
export async function createPi(options) {
  harnessCount += 1;
  const provider = `faux${harnessCount}`;
  const faux = registerFauxProvider({ provider, models: options.models ?? [{ id: "m1", input: ["text", "image"] }] });
  const model = faux.getModel();
  const authStorage = AuthStorage.inMemory();
  authStorage.setRuntimeApiKey(provider, "test-key");
  const events = [];
  const trace = (e) => {
    events.push(e);
    options.trace?.(e);
  };
  const extension = createBrowserdExtension({
    trace,
    client: options.client,
    warn: (m) => events.push(`warn:${m}`),
    ...options.extension,
  });
  const cwd = options.env.work;
  const agentDir = path.join(options.env.home, ".pi", "agent");
  const sessionDir = path.join(options.env.home, "sessions");
  /** Per model call: the tools offered and the messages seen. */
  const llmCalls = [];

  const createRuntime = async ({ cwd: effectiveCwd, sessionManager, sessionStartEvent }) => {
    const services = await createAgentSessionServices({
      cwd: effectiveCwd,
      agentDir,
      authStorage,
      resourceLoaderOptions: {
        extensionFactories: [extension],
        noExtensions: true,
        noSkills: true,
        noPromptTemplates: true,
        noThemes: true,
        noContextFiles: true,
      },
    });
    return {
      ...(await createAgentSessionFromServices({ services, sessionManager, sessionStartEvent, model, noTools: "builtin" })),
      services,
      diagnostics: services.diagnostics,
    };
  };
  const runtime = await createAgentSessionRuntime(createRuntime, {
    cwd,
    agentDir,
    sessionManager: SessionManager.create(cwd, sessionDir),
  });
  // `options.ui`: the host's UI (Pi's interactive and RPC modes bind one; the SDK default has none, `hasUI` false).
  const bindings = options.ui ? { uiContext: options.ui } : {};
  await runtime.session.bindExtensions(bindings);

  const record = (step) => (context, opts, state, m) => {
    llmCalls.push({
      tools: (context.tools ?? []).map((t) => t.name),
      messages: context.messages.map((msg) => structuredClone(msg)),
      systemPrompt: context.systemPrompt ?? "",
    });
    return typeof step === "function" ? step(context, opts, state, m) : step;
  };

  let promptsSent = 0;
  const count = (name) => events.filter((e) => e === name).length;
  /** Waits (by condition, not by time) until all runs are done: one per prompt plus one per continuation. */
  async function settled() {
    for (let i = 0; i < 12_000; i++) {
      const runs = promptsSent + count("continue:scheduled");
      if (count("turn_end_done") >= runs && count("continue:done") === count("continue:scheduled") && !runtime.session.isStreaming) {
        return;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error(`Pi did not settle: ${JSON.stringify(events.slice(-12))}`);
  }

  return {
    runtime,
    faux,
    events,
    llmCalls,
    get session() {
      return runtime.session;
    },
    get sessionId() {
      return runtime.session.sessionManager.getSessionId();
    },
    /**
     * Queues model steps and sends one user prompt; resolves once every agent run it caused (including the
     * continuation run after the skill loads) has ended and its turn cleanup finished.
     */
    async prompt(text, steps) {
      faux.setResponses(steps.map(record));
      promptsSent += 1;
      await runtime.session.prompt(text);
      await settled();
      if (faux.getPendingResponseCount() !== 0) {
        throw new Error(`the scripted model still had ${faux.getPendingResponseCount()} unused steps`);
      }
    },
    settled,
    /** Selects another of the scripted models (Pi's model switch within the session). */
    async setModel(id) {
      await runtime.session.setModel(faux.getModel(id));
    },
    /** Switches to a model of another provider (e.g. a real provider against a local endpoint), with its API key. */
    async useModel(other, apiKey = "test-key") {
      authStorage.setRuntimeApiKey(other.provider, apiKey);
      await runtime.session.setModel(other);
    },
    /** All tool results of the current session, in order. */
    toolResults() {
      return runtime.session.messages.filter((m) => m.role === "toolResult");
    },
    async newSession() {
      await runtime.newSession();
      await runtime.session.bindExtensions({});
    },
    /** Resumes another saved session (Pi's /resume). */
    async switchSession(file) {
      await runtime.switchSession(file);
      await runtime.session.bindExtensions({});
    },
    /** Forks from the first user message of the current session (Pi's /fork). */
    async fork() {
      const entry = runtime.session.sessionManager.getEntries().find((e) => e.type === "message" && e.message?.role === "user");
      if (!entry) throw new Error("no user message to fork from");
      await runtime.fork(entry.id);
      await runtime.session.bindExtensions({});
    },
    get sessionFile() {
      return runtime.session.sessionManager.getSessionFile();
    },
    async dispose() {
      await runtime.dispose();
      faux.unregister();
    },
  };
}
