#!/usr/bin/env node
// The official MCP TypeScript SDK client against the real `browserd mcp` (spawned over stdio with this process's
// environment): it declares form elicitation (unless the answer is "none"), answers every `elicitation/create` with
// the given answer, and on the fixture's /delete-account.html clicks "Delete account" (browser_act) and runs a batch
// that fills the name and clicks "Save profile". Prints one JSON line: the elicitation messages and both answers.
//
// Usage: node elicit.mjs <browserd binary> <page url> <accept|decline|none>

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [browserd, url, answer] = process.argv.slice(2);
const capabilities = answer === "none" ? {} : { elicitation: { form: {} } };
const client = new Client({ name: "elicitation-test", version: "1.0.0" }, { capabilities });
const asked = [];
if (answer !== "none") {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message);
    return answer === "accept" ? { action: "accept", content: {} } : { action: "decline" };
  });
}
const transport = new StdioClientTransport({ command: browserd, args: ["mcp"], env: process.env, stderr: "inherit" });
await client.connect(transport);

const call = async (name, args) => {
  const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 300_000 });
  const text = result.content?.[0]?.text ?? "";
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { isError: result.isError === true, body };
};
const refOf = (content, needle) => {
  const line = content.split("\n").find((l) => l.includes(needle));
  if (!line) throw new Error(`no ${needle} in\n${content}`);
  return line.trim().split(" ")[0];
};

const opened = await call("browser_open", { url });
const tab = opened.body.tab;
const seen = await call("browser_observe", { tab });
// An observation comes back as text (the page's lines in the untrusted framing), not JSON.
const content = typeof seen.body === "string" ? seen.body : seen.body.untrustedContent;
const act = await call("browser_act", { tab, action: "click", target: refOf(content, 'button "Delete account"') });
const batch = await call("browser_batch", {
  tab,
  steps: [
    { action: "fill", target: refOf(content, 'textbox "Display name"'), value: "Grace" },
    { action: "click", target: refOf(content, 'button "Save profile"') },
  ],
});
process.stdout.write(`${JSON.stringify({ asked, act, batch })}\n`);
await client.close();
