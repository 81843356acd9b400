//! Pi integration tests, in process: the real Pi runtime (SDK) with a scripted model and the browserd extension,
//! against the real broker and a managed Chromium. Covers the lifecycle seed's Pi integration tests: skill loaded
//! once, tools sticky across turns and finalize, context reset refusing stale calls, final cleanup on new/resume/fork
//! and quit, reconnect keeping ownership, sibling calls serialized with finalize, no transcript noise at turn end,
//! screenshots as images plus files, and session isolation.

import assert from "node:assert/strict";
import fs from "node:fs";
import { after, before, test } from "node:test";

import { BrokerClient } from "../../common/broker-client.mjs";
import { brokerStatus, fixtureServer, isolatedEnv, stopBroker, tabsOf } from "../../test-support/env.mjs";
import { callTools, createPi, lastResult, say } from "./harness.mjs";

const env = isolatedEnv("pi-sdk");
let site;

before(async () => {
  site = await fixtureServer();
});

after(async () => {
  await stopBroker(env);
  await site.close();
});

const BROWSER_CORE = [
  "browser_status",
  "browser_list",
  "browser_open",
  "browser_claim",
  "browser_observe",
  "browser_act",
  "browser_batch",
  "browser_mark_deliverable",
  "browser_mark_handoff",
  "browser_handoff",
  "browser_close",
  "browser_cleanup",
  "browser_context_reset",
];

const tabOf = (name) => (context) => ({ tab: lastResult(context, name).tab });

function skillLoads(messages) {
  return messages.filter(
    (m) => m.role === "toolResult" && m.toolName === "browser_skill" && m.content.some((c) => c.text?.includes("# Browser (browserd)")),
  ).length;
}

test("a session that never asks for the browser sees no browser tools and starts no broker", async () => {
  const pi = await createPi({ env });
  try {
    await pi.prompt("hello", [say("hi")]);
    assert.deepEqual(pi.llmCalls[0].tools, ["browser_skill"]);
    assert.equal(fs.existsSync(env.socket), false, "no broker was started");
  } finally {
    await pi.dispose();
  }
});

test("the skill loads once, tools stay active across prompts, turn end cleans up without transcript text", async () => {
  const pi = await createPi({ env });
  try {
    await pi.prompt("open two pages, keep the first", [
      callTools(["browser_skill", {}]),
      callTools(["browser_open", { url: site.url("keep") }]),
      callTools(["browser_mark_deliverable", tabOf("browser_open")]),
      callTools(["browser_open", { url: site.url("scratch") }]),
      say("done"),
    ]);
    const afterSkill = pi.llmCalls[1].tools;
    for (const name of BROWSER_CORE) assert.ok(afterSkill.includes(name), `${name} active after the skill`);
    const results = pi.toolResults();
    assert.ok(results.every((r) => !r.isError), JSON.stringify(results.filter((r) => r.isError)));
    const keep = JSON.parse(results[1].content[0].text).tab;
    const scratch = JSON.parse(results[3].content[0].text).tab;

    let view = await tabsOf(pi.sessionId);
    assert.equal(view.session.tools, "activeSticky");
    assert.deepEqual(view.tabs.map((t) => t.tab), [keep], "the unmarked scratch tab was closed at agent_end");
    assert.equal(view.tabs[0].mark, "deliverable");
    assert.ok(!view.tabs.some((t) => t.tab === scratch));

    const transcriptAfterFirst = pi.session.messages.length;
    await pi.prompt("what is open?", [callTools(["browser_list", {}]), say("one tab")]);
    assert.deepEqual(pi.llmCalls[5].tools.filter((n) => n.startsWith("browser_")).sort(), ["browser_skill", ...BROWSER_CORE].sort());
    const listed = lastResult({ messages: pi.session.messages }, "browser_list");
    assert.deepEqual(listed.tabs.filter((t) => t.provenance !== "user").map((t) => t.tab), [keep]);

    // Only the prompt, the model's messages and tool results are in the transcript: turn end added nothing.
    const added = pi.session.messages.slice(transcriptAfterFirst).map((m) => m.role);
    assert.deepEqual(added, ["user", "assistant", "toolResult", "assistant"]);
    assert.equal(skillLoads(pi.session.messages), 1, "the skill text was shown once");
    assert.equal(pi.events.filter((e) => e === "skill:loaded").length, 1);

    // The mark lasted one turn: not marked again, the tab is closed at the second turn end.
    view = await tabsOf(pi.sessionId);
    assert.deepEqual(view.tabs, []);
    assert.equal(view.session.tools, "activeSticky", "turn end never hides the tools");
  } finally {
    await pi.dispose();
  }
});

test("browser_cleanup finalizes but keeps the tools; a second skill call adds no skill text", async () => {
  const pi = await createPi({ env });
  try {
    await pi.prompt("open a page then finish the browser task", [
      callTools(["browser_skill", {}]),
      callTools(["browser_open", { url: site.url("finalize") }]),
      callTools(["browser_cleanup", {}]),
      callTools(["browser_skill", {}]),
      callTools(["browser_list", {}]),
      say("finished"),
    ]);
    const results = pi.toolResults();
    assert.ok(results.every((r) => !r.isError), JSON.stringify(results.filter((r) => r.isError)));
    const opened = JSON.parse(results[1].content[0].text).tab;
    const cleanup = JSON.parse(results[2].content[0].text);
    assert.equal(cleanup.ok, true);
    assert.deepEqual(cleanup.closed, [opened]);
    assert.equal(cleanup.toolsActive, true);
    assert.match(results[3].content[0].text, /already active/);
    assert.equal(skillLoads(pi.session.messages), 1);
    assert.ok(pi.llmCalls[3].tools.includes("browser_open"), "tools still offered after finalize");
    assert.equal((await tabsOf(pi.sessionId)).session.tools, "activeSticky");
  } finally {
    await pi.dispose();
  }
});

test("a context reset hides the tools and a stale sibling call is refused at execution", async () => {
  const pi = await createPi({ env });
  try {
    await pi.prompt("reset the browser", [
      callTools(["browser_skill", {}]),
      callTools(["browser_open", { url: site.url("reset") }]),
      callTools(["browser_context_reset", {}], ["browser_list", {}]),
      // Pi fixes a run's tool list when the run starts: the model still holds the old snapshot here.
      callTools(["browser_open", { url: site.url("after-reset") }]),
      say("reset done"),
    ]);
    const [, opened, reset, sibling, later] = pi.toolResults();
    assert.equal(opened.isError, false);
    assert.equal(reset.isError, false, reset.content[0].text);
    const resetValue = JSON.parse(reset.content[0].text);
    assert.equal(resetValue.ok, true);
    assert.equal(resetValue.toolsActive, false);
    assert.deepEqual(resetValue.closed, [JSON.parse(opened.content[0].text).tab]);
    for (const stale of [sibling, later]) {
      assert.equal(stale.isError, true, stale.toolName);
      assert.match(stale.content[0].text, /CAPABILITY_NOT_ACTIVATED/);
    }
    assert.equal(sibling.toolName, "browser_list");
    const view = await tabsOf(pi.sessionId);
    assert.equal(view.session.tools, "inactive");
    assert.deepEqual(view.tabs, [], "the refused open never reached the browser");

    await pi.prompt("anything else?", [say("no")]);
    assert.deepEqual(pi.llmCalls.at(-1).tools, ["browser_skill"], "only the skill loader is offered after the reset");
  } finally {
    await pi.dispose();
  }
});
