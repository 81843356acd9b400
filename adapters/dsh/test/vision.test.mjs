//! Vision through the DSH plugin (real `cordis`, the contract host, the real broker, a managed Chromium and the Rust
//! fixture site's picture check). The route takes no images, and a stand-in for dsh-vision-router
//! (`router-stand-in.mjs`: its `vision_ground` — `{image, target, annotate?}` → JSON text `{x1, y1, x2, y2, width,
//! height}` in the source image's pixels — resolving a `sha256:` id only among the image blocks of the session's event
//! log, as the router does, and its `vision_activate`) is loaded by the test: the plugin picks `dsh-vision-router`, the
//! screenshot arrives as an attachment and as the tool result's image block the router looks it up by, the grounding
//! tool reads it by attachment id, and its point, used as `at: {imageId, x, y}`, lands on the dot — at device pixel
//! ratio 1 and 2, after a scroll, and at a page zoom of 150 %; the server's check says so. A point of a screenshot of
//! a replaced document is refused (STALE_TARGET). With the router's progressive tools only `vision_activate` is
//! registered at first: that is already `dsh-vision-router`, with a next step naming it; a route the router wraps
//! (declaring image input over a text model) is `dsh-vision-router` too; and the plugin itself never registers or
//! calls a vision tool nor touches settings. The page's DPR and scroll are set by the test rig through the broker's
//! advanced tier (`browser_cdp`), zoom by the profile's default zoom level; neither is the plugin's doing.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";

process.env.BROWSERD_ADVANCED = "1";
process.env.BROWSERD_ADVANCED_RAW_CDP = "1";

import { BrokerClient } from "../../common/broker-client.mjs";
import { brokerStatus, isolatedEnv, rustFixtureSite, stopBroker } from "../../test-support/env.mjs";
import { decodePng } from "../../test-support/png.mjs";
import * as plugin from "../index.mjs";
import { createHost } from "./fake-host.mjs";
import { visionRouterStandIn } from "./router-stand-in.mjs";

const env = isolatedEnv("dsh-vision");
let site;

before(async () => {
  site = await rustFixtureSite();
});

after(async () => {
  await stopBroker(env);
  await site.close();
});

async function setup() {
  const host = await createHost({ inputModalities: ["text"] });
  const fiber = host.plugin(plugin, {});
  await fiber;
  return { host, fiber };
}

/** The test rig's own broker client on the agent's broker session (advanced tier for raw CDP). */
async function rig(agentId) {
  const status = await brokerStatus();
  const session = status.sessions.find((s) => s.hostSessionId === agentId).session;
  const client = new BrokerClient({ role: "cli", component: "vision-rig", spawn: false });
  await client.call("tools.activate", { session, advanced: true });
  const cdp = (tab, method, params = {}) => client.call("tool.call", { session, name: "browser_cdp", arguments: { tab, method, params } });
  return { cdp, close: () => client.close() };
}

async function verdictOf(id) {
  for (let i = 0; i < 400; i++) {
    const challenge = (await site.results()).find((c) => c.id === id);
    if (challenge?.answers.length) return challenge.answers.at(-1);
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`the page posted no answer for challenge ${id}`);
}

/** The screenshot's attachment in a dsh-vision-router answer: in the value (by id) and as the image block. */
function attachmentOf(observed) {
  assert.equal(observed.isError, false, observed.error);
  const shot = observed.value.screenshot;
  assert.equal(shot.data, undefined, "no base64 in the value");
  assert.match(shot.attachment.attachmentId, /^sha256:/);
  assert.equal(shot.attachment.groundWith, "vision_ground");
  assert.equal(shot.attachment.width, shot.pixelSize.width, "the image is as large as its geometry says");
  // The tool result's image block is what dsh-vision-router resolves the id by (and what it turns into a text marker
  // for a model that takes no images): the ref exactly as saveImage answered it, no image bytes.
  const blocks = observed.content.filter((b) => b.type === "image");
  assert.equal(blocks.length, 1, JSON.stringify(observed.content.map((b) => b.type)));
  const { groundWith: _g, nextStep: _n, ...ref } = shot.attachment;
  assert.deepEqual(blocks[0], { type: "image", attachment: ref });
  return shot;
}

/** Screenshot → attachment → vision_ground → click at the box's centre. Returns what each step said. */
async function groundAndClick(host, agent, tab) {
  const observed = await host.execute(agent, "browser_observe", { tab, screenshot: true, screenshotOptions: { format: "png" } });
  const shot = attachmentOf(observed);
  assert.match(shot.attachment.nextStep, /vision_ground with image: this attachmentId.*annotate: false/, shot.attachment.nextStep);
  const challenge = /Challenge (c\d+)/.exec(observed.value.untrustedContent)[1];
  const grounded = await host.execute(agent, "vision_ground", {
    image: shot.attachment.attachmentId,
    target: "the red dot",
    annotate: false,
  });
  assert.equal(grounded.isError, false, grounded.error);
  const box = JSON.parse(grounded.value);
  assert.equal(box.width, shot.pixelSize.width, grounded.value);
  assert.equal(box.annotatedPath, undefined, "annotate: false writes no copy");
  const at = { imageId: shot.imageId, x: (box.x1 + box.x2) / 2, y: (box.y1 + box.y2) / 2 };
  const clicked = await host.execute(agent, "browser_act", { tab, action: "click", at });
  assert.equal(clicked.isError, false, clicked.error);
  return { shot, challenge, clicked: clicked.value, verdict: await verdictOf(challenge) };
}

test("dsh: the grounding tool's point lands on the dot at DPR 1 and 2 and after a scroll; an older document's point is STALE_TARGET", async () => {
  const { host, fiber } = await setup();
  try {
    const agent = await host.createAgent("dsh-vision-a");
    host.beginTurn(agent, 1);
    assert.equal((await host.execute(agent, "browser_skill")).isError, false);
    // No grounding tool yet: a text-only route has no image route at all.
    let status = await host.execute(agent, "browser_status");
    assert.equal(status.value.vision.mode, "semantic-only", JSON.stringify(status.value.vision));
    const refused = await host.execute(agent, "browser_open", { url: site.url("/vision-check.html") });
    const tab = refused.value.tab;
    const noImage = await host.execute(agent, "browser_observe", { tab, screenshot: true });
    assert.equal(noImage.isError, true);
    assert.match(noImage.error, /VISION_UNAVAILABLE/);

    await host.plugin(visionRouterStandIn().plugin);
    status = await host.execute(agent, "browser_status");
    assert.equal(status.value.vision.mode, "dsh-vision-router", JSON.stringify(status.value.vision));
    assert.match(status.value.vision.source, /takes no images; vision_ground is registered/);
    // DSH's route info names no image size: the bounds of DSH's attachment normalisation, so the attachment the
    // grounding tool reads is the very image browserd's geometry describes.
    assert.deepEqual(
      [status.value.vision.limits.maxEdge, status.value.vision.limits.maxBytes],
      [2048, 4 * 1024 * 1024],
      JSON.stringify(status.value.vision),
    );
    assert.match(status.value.vision.limits.source, /attachment normalisation/);
    const r = await rig("dsh-vision-a");
    try {
      // DPR 1.
      const one = await groundAndClick(host, agent, tab);
      assert.equal(one.shot.dpr, 1);
      assert.ok(one.verdict.clickOk, `DPR 1: ${JSON.stringify(one.verdict)}`);

      // DPR 2 (the rig emulates a device scale of 2 on the tab), on a fresh challenge.
      const two = (await host.execute(agent, "browser_open", { url: site.url("/vision-check.html") })).value.tab;
      await r.cdp(two, "Emulation.setDeviceMetricsOverride", { width: 800, height: 600, deviceScaleFactor: 2, mobile: false });
      const dpr2 = await groundAndClick(host, agent, two);
      assert.equal(dpr2.shot.dpr, 2, JSON.stringify(dpr2.shot));
      assert.ok(dpr2.shot.scale > 1, "more image pixels than CSS pixels");
      assert.ok(dpr2.verdict.clickOk, `DPR 2: ${JSON.stringify(dpr2.verdict)}`);

      // After a scroll: the screenshot is taken, the page then scrolls by 60 CSS px, the old point still lands.
      const scrolled = (await host.execute(agent, "browser_open", { url: site.url("/vision-check.html?spacer=400") })).value.tab;
      await r.cdp(scrolled, "Runtime.evaluate", { expression: "window.scrollTo(0, 300)" });
      const before = await host.execute(agent, "browser_observe", { tab: scrolled, screenshot: true, screenshotOptions: { format: "png" } });
      const shot = before.value.screenshot;
      assert.equal(shot.scroll.y, 300, JSON.stringify(shot.scroll));
      const box = JSON.parse((await host.execute(agent, "vision_ground", { image: shot.attachment.attachmentId, target: "the red dot", annotate: false })).value);
      await r.cdp(scrolled, "Runtime.evaluate", { expression: "window.scrollTo(0, 360)" });
      const challenge = /Challenge (c\d+)/.exec(before.value.untrustedContent)[1];
      const clicked = await host.execute(agent, "browser_act", {
        tab: scrolled,
        action: "click",
        at: { imageId: shot.imageId, x: (box.x1 + box.x2) / 2, y: (box.y1 + box.y2) / 2 },
      });
      assert.equal(clicked.isError, false, clicked.error);
      const after = await verdictOf(challenge);
      assert.ok(after.clickOk, `after scroll: ${JSON.stringify(after)}`);

      // A point of a screenshot of a document that has since been replaced: refused before any input.
      const old = await host.execute(agent, "browser_observe", { tab, screenshot: true, screenshotOptions: { format: "png" } });
      const oldShot = old.value.screenshot;
      assert.equal((await host.execute(agent, "browser_act", { tab, action: "reload" })).isError, false);
      const stale = await host.execute(agent, "browser_act", { tab, action: "click", at: { imageId: oldShot.imageId, x: 10, y: 10 } });
      assert.equal(stale.isError, true);
      assert.match(stale.error, /STALE_TARGET/);
      assert.match(stale.error, /notDispatched/);
    } finally {
      r.close();
    }
    host.endTurn(agent, 1);
  } finally {
    await fiber.dispose();
  }
});

test("dsh: with the router's progressive tools, vision_activate alone selects dsh-vision-router; a wrapped route is no native route; the plugin never calls or registers vision tools or touches settings", async () => {
  const { host, fiber } = await setup();
  const router = visionRouterStandIn({ progressive: true });
  try {
    await host.plugin(router.plugin);
    assert.deepEqual(router.stats.registered, ["vision_activate"], "only vision_activate until it is called");
    const agent = await host.createAgent("dsh-vision-progressive");
    host.beginTurn(agent, 1);
    assert.equal((await host.execute(agent, "browser_skill")).isError, false);
    let status = (await host.execute(agent, "browser_status")).value.vision;
    assert.equal(status.mode, "dsh-vision-router", JSON.stringify(status));
    assert.match(status.source, /takes no images; vision_activate is registered \(it mounts vision_ground\)/);

    const opened = await host.execute(agent, "browser_open", { url: site.url("/vision-check.html") });
    assert.equal(opened.isError, false, opened.error);
    const tab = opened.value.tab;
    const observed = await host.execute(agent, "browser_observe", { tab, screenshot: true, screenshotOptions: { format: "png" } });
    const shot = attachmentOf(observed);
    assert.match(shot.attachment.nextStep, /^Call vision_activate once \(it mounts vision_ground\), then call vision_ground/);
    // The model follows the next step: vision_activate, then vision_ground on the attachment id.
    assert.equal(host.lookup(agent, "vision_ground"), undefined);
    assert.equal((await host.execute(agent, "vision_activate")).isError, false);
    const grounded = await host.execute(agent, "vision_ground", { image: shot.attachment.attachmentId, target: "the red dot", annotate: false });
    assert.equal(grounded.isError, false, grounded.error);
    const box = JSON.parse(grounded.value);
    const challenge = /Challenge (c\d+)/.exec(observed.value.untrustedContent)[1];
    const at = { imageId: shot.imageId, x: (box.x1 + box.x2) / 2, y: (box.y1 + box.y2) / 2 };
    assert.equal((await host.execute(agent, "browser_act", { tab, action: "click", at })).isError, false);
    assert.ok((await verdictOf(challenge)).clickOk, "the grounded point landed on the dot");
    status = (await host.execute(agent, "browser_status")).value.vision;
    assert.match(status.source, /vision_ground is registered$/, JSON.stringify(status));

    // An id that never appeared as an image block of this session is unknown to the router (as for any other session).
    const other = await host.createAgent("dsh-vision-other");
    const unknown = await host.execute(other, "vision_ground", { image: shot.attachment.attachmentId, target: "the red dot" });
    assert.equal(unknown.isError, true);
    assert.match(unknown.error, /unknown attachment id/);

    // Routes that declare image input. The router's wrapper (`deepseek-vision`), a twin over a text route
    // (`deepseek-vision` has no source; `opencode-vision` over text-only `opencode`) and its stealth takeover of
    // `deepseek-official` (over the hidden text-only `deepseek-official-native`) hand the text model a marker, never
    // the image: dsh-vision-router. A twin over a route whose model takes images, and any other image route, are the
    // user's own multimodal route: native-multimodal.
    const image = { inputModalities: ["text", "image"] };
    const text = { inputModalities: ["text"] };
    for (const [key, info] of [
      ["deepseek-vision/main", image],
      ["opencode/main", text],
      ["opencode-vision/main", image],
      ["deepseek-official/main", image],
      ["deepseek-official-native/main", text],
      ["openai/main", image],
      ["openai-vision/main", image],
    ]) {
      host.models.set(key, info);
    }
    const modeOn = async (provider) => {
      agent.route = { provider, model: "main" };
      const vision = (await host.execute(agent, "browser_status")).value.vision;
      return `${vision.mode}: ${vision.source}`;
    };
    assert.match(await modeOn("deepseek-vision"), /^dsh-vision-router: .*is dsh-vision-router's wrapper over a text model/);
    assert.match(await modeOn("opencode-vision"), /^dsh-vision-router: .*is dsh-vision-router's wrapper over a text model/);
    assert.match(await modeOn("deepseek-official"), /^dsh-vision-router: .*stealth wrapper over a text model/);
    assert.match(await modeOn("openai"), /^native-multimodal: dsh route openai\/main declares image input/);
    assert.match(await modeOn("openai-vision"), /^native-multimodal: /);
    // On a wrapped route the screenshot still goes to the grounding tool, as an attachment.
    agent.route = { provider: "deepseek-vision", model: "main" };
    attachmentOf(await host.execute(agent, "browser_observe", { tab, screenshot: true, screenshotOptions: { format: "png" } }));
    host.endTurn(agent, 1);

    // What the plugin did on the host: it asked for model info and probed the registry; it registered no vision tool
    // (in any scope), ran none (every vision_* execution is one of the test's own), and never touched settings.
    const calls = host.calls.map((c) => c.call);
    assert.ok(!calls.some((c) => c.startsWith("settings.")), JSON.stringify(calls));
    assert.deepEqual([...new Set(calls.filter((c) => c.startsWith("llm.")))], ["llm.resolveModelInfo"]);
    const registeredGlobally = host.calls.filter((c) => c.call === "tools.register").map((c) => c.arg.name);
    assert.deepEqual(registeredGlobally.sort(), ["browser_skill", "vision_activate", "vision_ground"]);
    assert.deepEqual(router.stats.registered, ["vision_activate", "vision_ground"]);
    for (const [scope, layer] of host.registry) {
      for (const name of layer.keys()) {
        if (name.startsWith("vision_")) assert.equal(scope, "global", `${name} registered in ${scope}`);
      }
    }
    assert.deepEqual(
      router.stats.calls.map((c) => c.name),
      ["vision_activate", "vision_ground", "vision_ground"],
      "only the test's own calls ran the router's tools",
    );
  } finally {
    await fiber.dispose();
  }
});

test("dsh: at a page zoom of 150 % the image is as large as its geometry says and the point lands on the dot", async () => {
  // A browser whose profile zooms every page to 150 % (Chromium's default zoom level, log base 1.2 of 1.5).
  await stopBroker(env);
  // The socket goes before the process: wait until the old broker (and so its Chromium) has exited.
  const owner = path.join(env.state, "browserd", "broker.owner");
  const pid = Number(/pid (\d+)/.exec(fs.existsSync(owner) ? fs.readFileSync(owner, "utf8") : "")?.[1]);
  for (let i = 0; pid && i < 600 && fs.existsSync(`/proc/${pid}`); i++) await new Promise((r) => setTimeout(r, 50));
  const prefs = path.join(env.state, "browserd", "profile", "Default", "Preferences");
  const current = fs.existsSync(prefs) ? JSON.parse(fs.readFileSync(prefs, "utf8")) : {};
  current.partition = { ...(current.partition ?? {}), default_zoom_level: { x: Math.log(1.5) / Math.log(1.2) } };
  fs.mkdirSync(path.dirname(prefs), { recursive: true });
  fs.writeFileSync(prefs, JSON.stringify(current));
  const { host, fiber } = await setup();
  try {
    await host.plugin(visionRouterStandIn().plugin);
    const agent = await host.createAgent("dsh-vision-zoom");
    host.beginTurn(agent, 1);
    const skill = await host.execute(agent, "browser_skill");
    assert.equal(skill.isError, false, skill.error);
    const opened = await host.execute(agent, "browser_open", { url: site.url("/vision-check.html") });
    assert.equal(opened.isError, false, opened.error);
    const tab = opened.value.tab;
    // The viewport is 510 CSS px wide at 150 %: the rig scrolls the picture into view, as a model would.
    const r = await rig("dsh-vision-zoom");
    await r.cdp(tab, "Runtime.evaluate", { expression: "document.getElementById('pic').scrollIntoView({block: 'center'})" });
    r.close();
    const zoomed = await groundAndClick(host, agent, tab);
    assert.equal(zoomed.shot.dpr, 1.5, JSON.stringify(zoomed.shot));
    assert.equal(zoomed.shot.scale, 1.5, "one image pixel per device pixel");
    const attachment = host.attachments.get(zoomed.shot.attachment.attachmentId);
    const img = decodePng(attachment.data);
    assert.deepEqual([img.width, img.height], [zoomed.shot.pixelSize.width, zoomed.shot.pixelSize.height]);
    assert.ok(zoomed.verdict.clickOk, `zoom 150 %: ${JSON.stringify(zoomed.verdict)}`);
    host.endTurn(agent, 1);
  } finally {
    await fiber.dispose();
  }
});
