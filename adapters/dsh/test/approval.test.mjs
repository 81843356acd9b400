//! CONTRACT tests of the DSH plugin's approvals (issue 16 item 3): real `cordis` 4 and the minimal DSH-shaped host
//! (fake-host.mjs, its `approval` service), against the real broker (`[policy] require_approval = ["submit",
//! "highRisk"]`) and a managed Chromium; the page's server records every click. Allowed: the user was asked through
//! the approval service with what the broker named, and "Delete account" ran once (a batch ran the approved step
//! after the others). Rejected: `APPROVAL_DECLINED`, nothing reached the site. Outside a turn (the service refuses):
//! the broker's `APPROVAL_REQUIRED` stands.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { approvalSite, isolatedEnv, stopBroker, writeConfig } from "../../test-support/env.mjs";
import * as plugin from "../index.mjs";
import { createHost } from "./fake-host.mjs";

const env = isolatedEnv("dsh-approval");
let site;

before(async () => {
  writeConfig(env, '[policy]\nrequire_approval = ["submit", "highRisk"]\n');
  site = await approvalSite();
});

after(async () => {
  await stopBroker(env);
  await site.close();
});

const refOf = (content, needle) => {
  const line = content.split("\n").find((l) => l.includes(needle));
  assert.ok(line, `no ${needle} in\n${content}`);
  return line.trim().split(" ")[0];
};

/** Opens the page in a fresh agent and returns what the actions need. */
async function start(answer, id, { turn = true } = {}) {
  const host = await createHost({ approvalPolicy: () => answer });
  const fiber = host.plugin(plugin, {});
  await fiber;
  const agent = await host.createAgent(id);
  host.beginTurn(agent, 1);
  await host.execute(agent, "browser_skill");
  const opened = await host.execute(agent, "browser_open", { url: site.url });
  const tab = opened.value.tab;
  const content = (await host.execute(agent, "browser_observe", { tab })).value.untrustedContent;
  if (!turn) {
    // Kept past the turn end (an unmarked tab is cleaned up there), then acted on outside any turn.
    await host.execute(agent, "browser_mark_deliverable", { tab });
    host.endTurn(agent, 1);
  }
  const act = () => host.execute(agent, "browser_act", { tab, action: "click", target: refOf(content, 'button "Delete account"') });
  const batch = () =>
    host.execute(agent, "browser_batch", {
      tab,
      steps: [
        { action: "fill", target: refOf(content, 'textbox "Display name"'), value: "Grace" },
        { action: "click", target: refOf(content, 'button "Save profile"') },
      ],
    });
  return { host, fiber, agent, act, batch };
}

test("contract: an action the broker holds for approval is asked through DSH's approval service and runs once", async () => {
  const { host, fiber, act, batch } = await start("allowed-once", "dsh-approval-yes");
  try {
    const clicked = await act();
    assert.equal(clicked.isError, false, clicked.error);
    assert.equal(clicked.value.outcome, "succeeded");
    const saved = await batch();
    assert.equal(saved.isError, false, saved.error);
    assert.deepEqual(saved.value.results.map((r) => [r.step, r.status]), [[0, "ran"], [1, "ran"]]);
    assert.deepEqual(host.approvals.map((a) => [a.toolName, a.outcome]), [["browser_act", "allowed-once"], ["browser_batch", "allowed-once"]]);
    for (const part of ["click", "highRisk", 'button "Delete account"', new URL(site.url).origin]) {
      assert.ok(host.approvals[0].reason.includes(part), `${part} in ${host.approvals[0].reason}`);
    }
    assert.ok(await site.waitFor("account:delete"), JSON.stringify(site.records()));
    assert.ok(await site.waitFor("profile:save"), JSON.stringify(site.records()));
    assert.equal(site.records().filter((r) => r === "account:delete").length, 1);
  } finally {
    await fiber.dispose();
  }
});

test("contract: a rejected approval is APPROVAL_DECLINED and nothing reaches the site", async () => {
  const before = site.records().length;
  const { host, fiber, act, batch } = await start("rejected", "dsh-approval-no");
  try {
    const clicked = await act();
    assert.equal(clicked.isError, true);
    assert.match(clicked.error, /APPROVAL_DECLINED/);
    const saved = await batch();
    assert.equal(saved.isError, true);
    assert.match(saved.error, /APPROVAL_DECLINED/);
    assert.equal(host.approvals.length, 2);
    assert.deepEqual(site.records().slice(before), [], "no click reached the site");
  } finally {
    await fiber.dispose();
  }
});

test("contract: outside a turn the approval cannot be asked and APPROVAL_REQUIRED stands", async () => {
  const before = site.records().length;
  const { host, fiber, act } = await start("allowed-once", "dsh-approval-noturn", { turn: false });
  try {
    const clicked = await act();
    assert.equal(clicked.isError, true);
    assert.match(clicked.error, /APPROVAL_REQUIRED/);
    assert.deepEqual(host.approvals, [], "nobody was asked");
    assert.deepEqual(site.records().slice(before), [], "no click reached the site");
  } finally {
    await fiber.dispose();
  }
});
