//! CONTRACT test of the DSH plugin's own origin lists (issue 16 item 2): the plugin config's `allowedOrigins` /
//! `blockedOrigins` become each agent session's `policy` at `session.open`; the real broker then refuses a denied
//! origin with `ORIGIN_NOT_AUTHORISED` before the page is requested, while an allowed one opens. Real `cordis` 4, the
//! minimal DSH-shaped host (fake-host.mjs), a managed Chromium. One loopback server answers on two origins
//! (`127.0.0.1` and `localhost`) and logs every request with its Host, so what reached the site is checked there.

import assert from "node:assert/strict";
import { test } from "node:test";

import { isolatedEnv, partnerSite } from "../../test-support/env.mjs";
import * as plugin from "../index.mjs";
import { createHost } from "./fake-host.mjs";

const env = isolatedEnv("dsh-origins");
/** The partner site (two origins, one port) and every request it got, as `host/path`. */
const site = partnerSite(env);

/** Opens `urls` in turn in a fresh DSH agent of a plugin configured with `config`; the `browser_open` results. */
async function openAll(config, id, urls) {
  const host = await createHost();
  const fiber = host.plugin(plugin, config);
  await fiber;
  try {
    const agent = await host.createAgent(id);
    host.beginTurn(agent, 1);
    await host.execute(agent, "browser_skill");
    const results = [];
    for (const url of urls) results.push(await host.execute(agent, "browser_open", { url }));
    host.endTurn(agent, 1);
    return results;
  } finally {
    await fiber.dispose();
  }
}

test("contract: blockedOrigins refuses the blocked origin before it is requested; another opens", async () => {
  const blocked = `http://localhost:${site.port}/blocked`;
  const fine = `http://127.0.0.1:${site.port}/fine`;
  const [refused, opened] = await openAll({ blockedOrigins: ["localhost"] }, "dsh-origins-blocked", [blocked, fine]);
  assert.equal(refused.isError, true, JSON.stringify(refused));
  assert.match(String(refused.error), /ORIGIN_NOT_AUTHORISED/);
  assert.equal(opened.isError, false, String(opened.error));
  assert.ok(site.requests.includes(`127.0.0.1:${site.port}/fine`), JSON.stringify(site.requests));
  assert.ok(!site.requests.some((r) => r.endsWith("/blocked")), `never requested: ${JSON.stringify(site.requests)}`);
});

test("contract: allowedOrigins refuses an origin outside the list before it is requested", async () => {
  const outside = `http://localhost:${site.port}/outside`;
  const inside = `http://127.0.0.1:${site.port}/inside`;
  const [refused, opened] = await openAll({ allowedOrigins: "127.0.0.1:*" }, "dsh-origins-allowed", [outside, inside]);
  assert.equal(refused.isError, true, JSON.stringify(refused));
  assert.match(String(refused.error), /ORIGIN_NOT_AUTHORISED/);
  assert.equal(opened.isError, false, String(opened.error));
  assert.ok(site.requests.includes(`127.0.0.1:${site.port}/inside`), JSON.stringify(site.requests));
  assert.ok(!site.requests.some((r) => r.endsWith("/outside")), `never requested: ${JSON.stringify(site.requests)}`);
});
