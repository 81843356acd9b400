//! Vision end to end with the real Pi package (in process, scripted models) against the real broker, a managed
//! Chromium and the fixture site's picture check (`/vision-check.html`: a random code and a red dot that exist only in
//! a canvas's pixels; the server keeps the truth and judges the page's own check). A model that declares image input
//! gets the screenshot as image content in its context, reads the code from those image bytes, types it and clicks
//! the dot through `at: {imageId, x, y}`: the server's check passes. The same session with a model that declares text
//! only (served through Pi's real `openai-completions` provider by a local endpoint that records each request): the
//! screenshot is refused with VISION_UNAVAILABLE, the page comes as text, and no request Pi sends that model carries
//! an image — not even the first model's screenshot, which Pi keeps in its session and replaces with a placeholder.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { isolatedEnv, rustFixtureSite, stopBroker } from "../../test-support/env.mjs";
import { readPicture } from "../../test-support/picture.mjs";
import { PI_IMAGE_LIMITS, piImageLimits, piVision } from "../extension.mjs";
import { callTools, createPi, lastResult, say } from "./harness.mjs";
import { openaiServer } from "./openai-server.mjs";

const env = isolatedEnv("pi-vision");
let site;

before(async () => {
  site = await rustFixtureSite();
});

after(async () => {
  await stopBroker(env);
  await site.close();
});

const MODELS = [
  { id: "eyes", input: ["text", "image"] },
  { id: "blind", input: ["text"] },
];

/** The newest tool result of `name` in a model context (the message itself). */
function lastToolMessage(context, name) {
  return [...context.messages].reverse().find((m) => m.role === "toolResult" && m.toolName === name);
}

/** The ref of the line `role "name"` in an observation's lines. */
function refOf(observation, role, name) {
  const line = observation.untrustedContent.split("\n").find((l) => l.trim().split(" ").slice(1).join(" ").startsWith(`${role} "${name}"`));
  assert.ok(line, `no ${role} ${name} in:\n${observation.untrustedContent}`);
  return line.trim().split(" ")[0];
}

async function verdictOf(id) {
  for (let i = 0; i < 400; i++) {
    const challenge = (await site.results()).find((c) => c.id === id);
    if (challenge?.answers.length) return challenge.answers.at(-1);
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`the page posted no answer for challenge ${id}`);
}

test("pi: a model with image input reads the code from the screenshot's pixels and clicks the dot; a text-only model gets VISION_UNAVAILABLE", async () => {
  const pi = await createPi({ env, models: MODELS });
  try {
    const seen = {};
    await pi.prompt("pass the picture check", [
      callTools(["browser_skill", {}]),
      callTools(["browser_open", { url: site.url("/vision-check.html") }]),
      callTools(["browser_status", {}], ["browser_observe", { screenshot: true, screenshotOptions: { format: "png" } }]),
      (context) => {
        // What the model sees: the screenshot as an image block of its input, not a path or base64 in the text.
        const shot = lastToolMessage(context, "browser_observe");
        const image = shot.content.find((c) => c.type === "image");
        assert.ok(image, `the screenshot is image content in the model's input: ${JSON.stringify(shot.content.map((c) => c.type))}`);
        assert.equal(image.mimeType, "image/png");
        const text = shot.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
        assert.ok(!text.includes(image.data.slice(0, 64)), "no base64 of the image in the text");
        const observation = JSON.parse(text);
        assert.equal(observation.screenshot.data, undefined);
        seen.status = lastResult(context, "browser_status");
        seen.observation = observation;
        seen.picture = readPicture(Buffer.from(image.data, "base64"));
        seen.challenge = /Challenge (c\d+)/.exec(observation.untrustedContent)[1];
        assert.equal(seen.picture.width, observation.screenshot.pixelSize.width);
        return callTools(["browser_act", { action: "fill", target: refOf(observation, "textbox", "Code"), value: seen.picture.code }])(context);
      },
      (context) =>
        callTools([
          "browser_act",
          { action: "click", at: { imageId: seen.observation.screenshot.imageId, x: seen.picture.dot.x, y: seen.picture.dot.y } },
        ])(context),
      say("done"),
    ]);
    const results = pi.toolResults();
    assert.ok(results.every((r) => !r.isError), JSON.stringify(results.filter((r) => r.isError)));
    assert.equal(seen.status.vision.mode, "native-multimodal", JSON.stringify(seen.status.vision));
    assert.match(seen.status.vision.source, /declares input text\+image/);
    // The scripted provider has no documented image limits: Pi's own image bounds are sent, and the image fits them.
    const { limits } = seen.status.vision;
    assert.deepEqual([limits.maxEdge, limits.maxBytes], [PI_IMAGE_LIMITS.maxEdge, PI_IMAGE_LIMITS.maxBytes], JSON.stringify(limits));
    assert.match(limits.source, /Pi's own image bounds/);
    assert.ok(seen.picture.width <= limits.maxEdge, JSON.stringify(seen.observation.screenshot.pixelSize));
    assert.equal(seen.observation.pixelContent.canvases, 1, "the canvas is named as pixel content");
    assert.match(seen.picture.code, /^[0-9A-Z]{5}$/);
    const verdict = await verdictOf(seen.challenge);
    assert.deepEqual(
      { typedOk: verdict.typedOk, clickOk: verdict.clickOk, passed: verdict.passed },
      { typedOk: true, clickOk: true, passed: true },
      `the server's check: ${JSON.stringify(verdict)} (read ${seen.picture.code} at ${JSON.stringify(seen.picture.dot)})`,
    );
    const click = JSON.parse(results.at(-1).content[0].text);
    assert.equal(click.outcome, "succeeded", JSON.stringify(click));

    // The same session, now with a model that declares text only, served through Pi's real `openai-completions`
    // provider (its own message conversion, the OpenAI SDK, HTTP) by a scripted local endpoint that records every
    // request exactly as Pi sent it.
    const server = await openaiServer();
    try {
      await pi.useModel(server.model({ id: "blind", provider: "local-openai", input: ["text"] }));
      server.script([
        // The first prompt's tab was closed at its turn end (it was not marked): open the page again.
        { tools: [["browser_open", { url: site.url("/vision-check.html") }]] },
        { tools: [["browser_status", {}]] },
        { tools: [["browser_observe", { screenshot: true, screenshotOptions: { format: "png" } }]] },
        { text: "I cannot see the picture" },
      ]);
      await pi.prompt("look at a new picture", []);
      assert.equal(server.pending, 0, "every scripted step was asked for");
      const status = JSON.parse(pi.toolResults().at(-2).content[0].text);
      assert.equal(status.vision.mode, "semantic-only", JSON.stringify(status.vision));
      assert.match(status.vision.source, /blind declares input text$/);
      const refused = pi.toolResults().at(-1);
      assert.equal(refused.isError, true);
      assert.ok(!refused.content.some((c) => c.type === "image"), "no image in the refused result");
      const text = refused.content.map((c) => c.text ?? "").join("\n");
      assert.match(text, /VISION_UNAVAILABLE/);
      assert.match(text, /ask the user what the picture shows, or enable a vision route/);
      assert.match(text, /Picture check/, "the AX/DOM observation comes instead");
      assert.match(text, /needsVision/, "the canvas says it needs vision");
      assert.ok(!/"data"|\.png/.test(text), "no image data or file");
      // The whole context of every request to the text-only model, after Pi's own conversion: no image anywhere —
      // although Pi keeps the first model's screenshot in its session (by design); its conversion for a model without
      // image input replaced it with a placeholder.
      assert.equal(server.requests.length, 4, "one request per step");
      for (const [i, request] of server.requests.entries()) {
        const wire = JSON.stringify(request);
        assert.ok(!/image_url|data:image|iVBORw0KGgo/.test(wire), `request ${i} to the text-only model carries an image`);
        assert.match(wire, /\(tool image omitted: model does not support images\)/, `request ${i}: the earlier screenshot`);
      }
      assert.ok(
        pi.session.messages.some((m) => m.role === "toolResult" && m.content.some((c) => c.type === "image")),
        "Pi's session still holds the first model's screenshot",
      );
    } finally {
      await server.close();
    }
  } finally {
    await pi.dispose();
  }
});

test("pi: the image limits come from the model's provider, else Pi's own image bounds", () => {
  // Pi's model info declares no image size: Anthropic's documented API limits (8000 px per side, 5 MB as base64).
  const claude = piVision({ provider: "anthropic", id: "claude-sonnet-4-5", input: ["text", "image"] });
  assert.equal(claude.mode, "native-multimodal");
  assert.deepEqual(claude.limits, { maxEdge: 8000, maxBytes: 3_750_000, source: "pi: anthropic's API limits" });
  assert.deepEqual(piImageLimits({ provider: "some-proxy", id: "m" }).maxEdge, 2000);
});
