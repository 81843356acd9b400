//! Drives the real `pi` CLI in RPC mode (`pi --mode rpc`, JSONL on stdin/stdout) with the browserd extension and
//! the test-only scripted model, for the subprocess tests and the acceptance walkthroughs. Waits on the extension's
//! trace file (`BROWSERD_TRACE_FILE`) for every agent run of a prompt and its turn cleanup to finish.

import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const adapters = path.resolve(here, "../..");
export const PI_CLI = path.join(adapters, "node_modules/@mariozechner/pi-coding-agent/dist/cli.js");
export const EXTENSION = path.join(adapters, "pi/index.ts");
export const SCRIPTED_MODEL = path.join(here, "fixtures/scripted-model.mjs");

let instances = 0;

/**
 * Starts `pi --mode rpc` with the extension and a scripted model.
 * @param {{env: object, name: string, script: object[], args?: string[]}} options
 */
export async function startPi({ env, name, script, args = [] }) {
  instances += 1;
  const dir = path.join(env.root, `pi-${name}-${instances}`);
  fs.mkdirSync(path.join(dir, "home"), { recursive: true });
  const files = {
    script: path.join(dir, "script.json"),
    log: path.join(dir, "llm.jsonl"),
    trace: path.join(dir, "trace.log"),
    sessions: path.join(dir, "sessions"),
  };
  fs.writeFileSync(files.script, JSON.stringify(script));
  const child = spawn(
    process.execPath,
    [
      PI_CLI,
      "--mode",
      "rpc",
      "--no-extensions",
      "--no-skills",
      "--no-prompt-templates",
      "--no-themes",
      "--no-context-files",
      "--no-builtin-tools",
      "--session-dir",
      files.sessions,
      "-e",
      SCRIPTED_MODEL,
      "-e",
      EXTENSION,
      "--provider",
      "browserd-scripted",
      "--model",
      "scripted",
      ...args,
    ],
    {
      cwd: env.work,
      env: {
        ...process.env,
        HOME: path.join(dir, "home"),
        BROWSERD_PI_SCRIPT: files.script,
        BROWSERD_PI_LOG: files.log,
        BROWSERD_TRACE_FILE: files.trace,
      },
      stdio: ["pipe", "pipe", "pipe"],
    },
  );
  let stderr = "";
  child.stderr.on("data", (d) => {
    stderr += d;
  });
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  const events = [];
  const waiters = new Map();
  let buffer = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => {
    buffer += chunk;
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (!line.trim()) continue;
      const msg = JSON.parse(line);
      if (msg.type === "response" && msg.id && waiters.has(msg.id)) {
        waiters.get(msg.id)(msg);
        waiters.delete(msg.id);
      } else {
        events.push(msg);
      }
    }
  });
  let nextId = 0;
  let promptsSent = 0;

  const send = (command) =>
    new Promise((resolve, reject) => {
      const id = `r${++nextId}`;
      waiters.set(id, (msg) => (msg.success ? resolve(msg.data) : reject(new Error(`${command.type}: ${msg.error}`))));
      child.stdin.write(`${JSON.stringify({ id, ...command })}\n`);
    });

  const trace = () => (fs.existsSync(files.trace) ? fs.readFileSync(files.trace, "utf8").split("\n").filter(Boolean) : []);
  const count = (name) => trace().filter((e) => e === name).length;

  async function settled() {
    for (let i = 0; i < 12_000; i++) {
      const runs = promptsSent + count("continue:scheduled");
      if (count("turn_end_done") >= runs && count("continue:done") === count("continue:scheduled")) {
        const state = await send({ type: "get_state" });
        if (!state.isStreaming) return;
      }
      if (child.exitCode !== null) throw new Error(`pi exited: ${stderr}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error(`pi did not settle: ${trace().slice(-10).join(" | ")}\n${stderr}`);
  }

  return {
    child,
    files,
    events,
    exited,
    trace,
    get stderr() {
      return stderr;
    },
    send,
    /** Sends a prompt and waits until all its agent runs and turn cleanups are done. */
    async prompt(message) {
      promptsSent += 1;
      await send({ type: "prompt", message });
      await settled();
    },
    /** Sends a prompt without waiting for it to finish. */
    async promptNoWait(message) {
      promptsSent += 1;
      await send({ type: "prompt", message });
    },
    /** Waits until the scripted model has been called `n` times. */
    async waitForModelCalls(n) {
      for (let i = 0; i < 12_000; i++) {
        if (this.llmCalls().length >= n) return;
        await new Promise((r) => setTimeout(r, 5));
      }
      throw new Error(`the model was called ${this.llmCalls().length} times, expected ${n}`);
    },
    /** Model calls so far: offered tool names and message counts. */
    llmCalls() {
      return fs.existsSync(files.log)
        ? fs.readFileSync(files.log, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l))
        : [];
    },
    async messages() {
      return (await send({ type: "get_messages" })).messages;
    },
    async sessionId() {
      return (await send({ type: "get_state" })).sessionId;
    },
    /** Closes stdin (Pi's graceful quit) and waits for the process to exit. */
    async quit() {
      child.stdin.end();
      return exited;
    },
    /** Sends a signal and waits for the process to exit. */
    async kill(signal) {
      child.kill(signal);
      return exited;
    },
  };
}

/** Tool results in a message list. */
export function toolResults(messages) {
  return messages.filter((m) => m.role === "toolResult");
}

/** The parsed JSON text of a tool result. */
export function json(result) {
  return JSON.parse(result.content.find((c) => c.type === "text").text);
}
