//! The Pi extension's own origin lists (issue 16 item 2): `createBrowserdExtension({allowedOrigins, blockedOrigins})`
//! (for Pi as it loads the extension: `BROWSERD_PI_ALLOWED_ORIGINS` / `BROWSERD_PI_BLOCKED_ORIGINS`) becomes the
//! session's `policy` at `session.open`; the real broker then refuses a denied origin with `ORIGIN_NOT_AUTHORISED`
//! before the page is requested, while the allowed one opens. One loopback server answers on two origins
//! (`127.0.0.1` and `localhost`) and logs every request with its Host, so what reached the site is checked there.

import assert from "node:assert/strict";
import { test } from "node:test";

import { isolatedEnv, partnerSite } from "../../test-support/env.mjs";
import { callTools, createPi, say } from "./harness.mjs";

const env = isolatedEnv("pi-origins");
/** The partner site (two origins, one port) and every request it got, as `host/path`. */
const site = partnerSite(env);

const text = (result) => result.content.find((c) => c.type === "text")?.text ?? "";

/** Opens `urls` in turn in a Pi session with the extension `options`; returns the `browser_open` results. */
async function openAll(options, urls) {
  const pi = await createPi({ env, extension: options });
  try {
    await pi.prompt("open the partner pages", [
      callTools(["browser_skill", {}]),
      ...urls.map((url) => callTools(["browser_open", { url }])),
      say("done"),
    ]);
    return pi.toolResults().filter((r) => r.toolName === "browser_open");
  } finally {
    await pi.dispose();
  }
}

test("blockedOrigins: the blocked origin is ORIGIN_NOT_AUTHORISED and never requested, another opens", async () => {
  const blocked = `http://localhost:${site.port}/blocked`;
  const fine = `http://127.0.0.1:${site.port}/fine`;
  const [refused, opened] = await openAll({ blockedOrigins: "localhost;ads.example.com" }, [blocked, fine]);
  assert.equal(refused.isError, true, text(refused));
  assert.match(text(refused), /ORIGIN_NOT_AUTHORISED/);
  assert.ok(text(refused).includes(`http://localhost:${site.port}`), text(refused));
  assert.equal(opened.isError, false, text(opened));
  assert.ok(site.requests.includes(`127.0.0.1:${site.port}/fine`), JSON.stringify(site.requests));
  assert.ok(!site.requests.some((r) => r.endsWith("/blocked")), `never requested: ${JSON.stringify(site.requests)}`);
});

test("allowedOrigins: an origin outside the list is ORIGIN_NOT_AUTHORISED and never requested", async () => {
  const outside = `http://localhost:${site.port}/outside`;
  const inside = `http://127.0.0.1:${site.port}/inside`;
  const [refused, opened] = await openAll({ allowedOrigins: ["127.0.0.1:*"] }, [outside, inside]);
  assert.equal(refused.isError, true, text(refused));
  assert.match(text(refused), /ORIGIN_NOT_AUTHORISED/);
  assert.equal(opened.isError, false, text(opened));
  assert.ok(site.requests.includes(`127.0.0.1:${site.port}/inside`), JSON.stringify(site.requests));
  assert.ok(!site.requests.some((r) => r.endsWith("/outside")), `never requested: ${JSON.stringify(site.requests)}`);
});
