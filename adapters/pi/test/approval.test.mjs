//! Approvals in Pi (issue 16 item 3): the real Pi runtime with a scripted model and the browserd extension, against
//! the real broker (`[policy] require_approval = ["submit", "highRisk"]`) and a managed Chromium. The page's server
//! records every click, so what reached the site is checked on its side:
//! - Pi with a UI whose confirm says yes: the user is asked (the dialog names the action, class, target and site),
//!   "Delete account" runs once, and the batch that stopped before "Save profile" runs that step after the approval;
//! - confirm says no: `APPROVAL_DECLINED` errors, nothing reaches the site;
//! - no UI (`hasUI` false, Pi's SDK default): `APPROVAL_REQUIRED` as the broker answered, nobody asked.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { approvalSite, isolatedEnv, stopBroker, writeConfig } from "../../test-support/env.mjs";
import { callTools, createPi, lastResult, say } from "./harness.mjs";

const env = isolatedEnv("pi-approval");
let site;

before(async () => {
  writeConfig(env, '[policy]\nrequire_approval = ["submit", "highRisk"]\n');
  site = await approvalSite();
});

after(async () => {
  await stopBroker(env);
  await site.close();
});

/** A Pi UI whose confirm dialog answers `yes` and records what it was asked (other UI calls do nothing). */
function uiAnswering(yes) {
  const asked = [];
  const ui = new Proxy(
    {
      async confirm(title, message) {
        asked.push({ title, message });
        return yes;
      },
    },
    { get: (target, key) => (key in target ? target[key] : () => undefined) },
  );
  return { ui, asked };
}

const refOf = (context, needle) => {
  const content = lastResult(context, "browser_observe").untrustedContent;
  const line = content.split("\n").find((l) => l.includes(needle));
  assert.ok(line, `no ${needle} in\n${content}`);
  return line.trim().split(" ")[0];
};
const tab = (context) => lastResult(context, "browser_open").tab;

/** The scripted run: open the page, observe, click "Delete account", then a batch that fills and saves. */
async function run(pi) {
  await pi.prompt("delete my account and save the name Grace", [
    callTools(["browser_skill", {}]),
    callTools(["browser_open", { url: site.url }]),
    callTools(["browser_observe", (c) => ({ tab: tab(c) })]),
    callTools(["browser_act", (c) => ({ tab: tab(c), action: "click", target: refOf(c, 'button "Delete account"') })]),
    callTools([
      "browser_batch",
      (c) => ({
        tab: tab(c),
        steps: [
          { action: "fill", target: refOf(c, 'textbox "Display name"'), value: "Grace" },
          { action: "click", target: refOf(c, 'button "Save profile"') },
        ],
      }),
    ]),
    say("done"),
  ]);
  const results = pi.toolResults();
  return { act: results.find((r) => r.toolName === "browser_act"), batch: results.find((r) => r.toolName === "browser_batch") };
}

const text = (result) => result.content.find((c) => c.type === "text")?.text ?? "";

test("yes in Pi's confirm dialog grants the approval and the action runs once", async () => {
  const { ui, asked } = uiAnswering(true);
  const pi = await createPi({ env, ui });
  try {
    const { act, batch } = await run(pi);
    assert.equal(asked.length, 2, JSON.stringify(asked));
    for (const part of ["click", "highRisk", 'button "Delete account"', new URL(site.url).origin]) {
      assert.ok(asked[0].message.includes(part), `${part} in ${asked[0].message}`);
    }
    assert.ok(asked[1].message.includes('button "Save profile"'), asked[1].message);
    assert.equal(act.isError, false, text(act));
    assert.equal(JSON.parse(text(act)).outcome, "succeeded", text(act));
    assert.equal(batch.isError, false, text(batch));
    const b = JSON.parse(text(batch));
    assert.deepEqual(b.results.map((r) => [r.step, r.status]), [[0, "ran"], [1, "ran"]], text(batch));
    assert.ok(await site.waitFor("account:delete"), JSON.stringify(site.records()));
    assert.ok(await site.waitFor("profile:save"), JSON.stringify(site.records()));
    assert.equal(site.records().filter((r) => r === "account:delete").length, 1);
    assert.equal(site.records().filter((r) => r === "profile:save").length, 1);
  } finally {
    await pi.dispose();
  }
});

test("no in Pi's confirm dialog is APPROVAL_DECLINED and nothing reaches the site", async () => {
  const before = site.records().length;
  const { ui, asked } = uiAnswering(false);
  const pi = await createPi({ env, ui });
  try {
    const { act, batch } = await run(pi);
    assert.equal(asked.length, 2, JSON.stringify(asked));
    assert.equal(act.isError, true);
    assert.match(text(act), /APPROVAL_DECLINED/);
    assert.equal(batch.isError, true);
    assert.match(text(batch), /APPROVAL_DECLINED/);
    assert.deepEqual(site.records().slice(before), [], "no click reached the site");
  } finally {
    await pi.dispose();
  }
});

test("without a UI the broker's APPROVAL_REQUIRED stands and nobody is asked", async () => {
  const before = site.records().length;
  const pi = await createPi({ env });
  try {
    const { act, batch } = await run(pi);
    assert.equal(act.isError, true);
    assert.match(text(act), /APPROVAL_REQUIRED/);
    assert.match(text(act), /browserd approve/);
    assert.equal(batch.isError, true);
    assert.match(text(batch), /APPROVAL_REQUIRED/);
    assert.ok(!pi.events.includes("approval:asked"));
    assert.deepEqual(site.records().slice(before), [], "no click reached the site");
  } finally {
    await pi.dispose();
  }
});
