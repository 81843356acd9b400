//! A scripted OpenAI-compatible chat completions endpoint on 127.0.0.1 for the Pi tests: Pi's real
//! `openai-completions` provider (pi-ai's own message conversion, the OpenAI SDK, HTTP) talks to it, and it records
//! every request body exactly as it arrived, so a test can assert over the whole context Pi sent to a model. Each
//! request is answered by the next scripted step, streamed as server-sent events: tool calls
//! (`{tools: [[name, args], …]}`) or a text answer (`{text}`).

import http from "node:http";

/** Starts the endpoint; `url` is its base URL (`…/v1`), `requests` the parsed request bodies in order. */
export async function openaiServer() {
  const requests = [];
  let steps = [];
  let calls = 0;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) {
        res.writeHead(404).end();
        return;
      }
      const request = JSON.parse(body);
      requests.push(request);
      const step = steps.shift();
      if (!step) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "the scripted model has no step left" } }));
        return;
      }
      const id = `chatcmpl-${++calls}`;
      const chunk = (delta, finish = null) =>
        `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model: request.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      if (step.tools) {
        const toolCalls = step.tools.map(([name, args], index) => ({
          index,
          id: `call_${calls}_${index}`,
          type: "function",
          function: { name, arguments: JSON.stringify(args ?? {}) },
        }));
        res.write(chunk({ role: "assistant", tool_calls: toolCalls }));
        res.write(chunk({}, "tool_calls"));
      } else {
        res.write(chunk({ role: "assistant", content: step.text }));
        res.write(chunk({}, "stop"));
      }
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    /** Queues the answers of the next requests. */
    script(next) {
      steps = [...next];
    },
    get pending() {
      return steps.length;
    },
    /** A Pi model served by this endpoint through pi-ai's real `openai-completions` provider. */
    model({ id, provider, input }) {
      return {
        id,
        name: id,
        api: "openai-completions",
        provider,
        baseUrl: `http://127.0.0.1:${port}/v1`,
        reasoning: false,
        input,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        contextWindow: 128_000,
        maxTokens: 4096,
      };
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
