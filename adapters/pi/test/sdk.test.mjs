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

/** Opens a page and marks it for handoff, so it outlives the turn end and only final cleanup touches it. */
const openAndHandoff = (name) => [
  callTools(["browser_skill", {}]),
  callTools(["browser_open", { url: site.url(name) }]),
  callTools(["browser_mark_handoff", tabOf("browser_open")]),
  say("over to you"),
];

async function assertFinalCleanup(hostSessionId, tab) {
  const status = await brokerStatus();
  assert.ok(!status.sessions.some((s) => s.hostSessionId === hostSessionId), "the old broker session was closed");
  const kept = status.tabs.find((t) => t.tab === tab);
  assert.ok(kept, "the handoff page stays open");
  assert.equal(kept.session, undefined, "its old ownership metadata was dropped");
  assert.equal(kept.provenance, "user");
}

test("a new, resumed or forked session runs final cleanup of the old one; quit does too", async () => {
  const pi = await createPi({ env });
  try {
    await pi.prompt("start", openAndHandoff("switch-new"));
    const first = { id: pi.sessionId, file: pi.sessionFile, tab: lastResult({ messages: pi.session.messages }, "browser_open").tab };
    assert.equal((await tabsOf(first.id)).tabs[0].mark, "handoff");

    await pi.newSession();
    assert.ok(pi.events.includes("session_shutdown:new"));
    await assertFinalCleanup(first.id, first.tab);
    assert.equal((await tabsOf(pi.sessionId)).session, null, "the new session has no broker session until it asks");

    await pi.prompt("again", openAndHandoff("switch-resume"));
    const second = { id: pi.sessionId, tab: lastResult({ messages: pi.session.messages }, "browser_open").tab };
    await pi.switchSession(first.file);
    assert.ok(pi.events.includes("session_shutdown:resume"));
    assert.equal(pi.sessionId, first.id);
    await assertFinalCleanup(second.id, second.tab);

    await pi.prompt("and again", openAndHandoff("switch-fork"));
    const third = { id: pi.sessionId, tab: lastResult({ messages: pi.session.messages }, "browser_open").tab };
    await pi.fork();
    assert.ok(pi.events.includes("session_shutdown:fork"));
    assert.notEqual(pi.sessionId, third.id);
    await assertFinalCleanup(third.id, third.tab);

    await pi.prompt("last", openAndHandoff("quit"));
    const fourth = { id: pi.sessionId, tab: lastResult({ messages: pi.session.messages }, "browser_open").tab };
    await pi.dispose();
    assert.ok(pi.events.includes("session_shutdown:quit"));
    await assertFinalCleanup(fourth.id, fourth.tab);
  } finally {
    await pi.dispose().catch(() => {});
  }
});

test("a dropped broker connection re-attaches and keeps ownership of the session's tabs", async () => {
  const client = new BrokerClient({ role: "piAdapter", component: "browserd-pi-test" });
  const pi = await createPi({ env, client });
  try {
    await pi.prompt("open, lose the connection, continue", [
      callTools(["browser_skill", {}]),
      callTools(["browser_open", { url: site.url("reconnect") }]),
      (context) => {
        client.disconnect();
        return callTools(["browser_list", {}])(context);
      },
      callTools(["browser_close", (context) => ({ tabs: [lastResult(context, "browser_open").tab] })]),
      say("closed"),
    ]);
    const [, opened, listed, closed] = pi.toolResults();
    assert.ok([opened, listed, closed].every((r) => !r.isError), JSON.stringify([listed, closed]));
    const tab = JSON.parse(opened.content[0].text).tab;
    assert.ok(pi.events.includes("reattach:true"), "the adapter re-attached to the same broker session");
    const mine = JSON.parse(listed.content[0].text).tabs.find((t) => t.tab === tab);
    assert.equal(mine.provenance, "agentCreated", "ownership survived the reconnect");
    assert.deepEqual(JSON.parse(closed.content[0].text).closed, [tab]);
  } finally {
    await pi.dispose();
    client.close();
  }
});

test("sibling browser calls never run concurrently with finalize", async () => {
  const pi = await createPi({ env });
  try {
    await pi.prompt("open two pages and finish", [
      callTools(["browser_skill", {}]),
      callTools(
        ["browser_open", { url: site.url("sib-a") }],
        ["browser_open", { url: site.url("sib-b") }],
        ["browser_cleanup", {}],
        ["browser_list", {}],
        ["browser_status", {}],
      ),
      say("done"),
    ]);
    const results = pi.toolResults();
    assert.ok(results.every((r) => !r.isError), JSON.stringify(results.filter((r) => r.isError)));
    const ops = pi.events.filter((e) => /^(start|end):browser_/.test(e));
    assert.equal(ops.length, 10);
    for (let i = 0; i < ops.length; i += 2) {
      const name = ops[i].slice("start:".length);
      assert.equal(ops[i], `start:${name}`);
      assert.equal(ops[i + 1], `end:${name}`, `nothing ran inside ${name}: ${ops.join(" ")}`);
    }
    const cleanup = JSON.parse(results[3].content[0].text);
    const opened = [1, 2].map((i) => JSON.parse(results[i].content[0].text).tab);
    assert.deepEqual([...cleanup.closed].sort(), [...opened].sort(), "finalize saw both opens complete");
    const listed = JSON.parse(results[4].content[0].text).tabs;
    assert.ok(!listed.some((t) => opened.includes(t.tab)), "the list after finalize saw the closes complete");
  } finally {
    await pi.dispose();
  }
});

test("a screenshot comes back as image content plus a saved file path", async () => {
  const pi = await createPi({ env });
  try {
    await pi.prompt("show me the page", [
      callTools(["browser_skill", {}]),
      callTools(["browser_open", { url: site.url("shot") }]),
      callTools(["browser_observe", { screenshot: true }]),
      say("looks fine"),
    ]);
    const observed = pi.toolResults()[2];
    assert.equal(observed.isError, false, observed.content[0]?.text);
    const image = observed.content.find((c) => c.type === "image");
    assert.ok(image, "an image block");
    assert.match(image.mimeType, /^image\/(png|jpeg|webp)$/);
    const value = JSON.parse(observed.content[0].text);
    assert.equal(value.screenshot.data, undefined, "no base64 in the text");
    assert.ok(fs.existsSync(value.screenshot.path), value.screenshot.path);
    assert.deepEqual(fs.readFileSync(value.screenshot.path), Buffer.from(image.data, "base64"));
    assert.ok(value.screenshot.pixelSize.width > 0 && value.screenshot.scale > 0);
  } finally {
    await pi.dispose();
  }
});

test("one session can neither close nor clean up another session's tab", async () => {
  const a = await createPi({ env });
  const b = await createPi({ env });
  try {
    await a.prompt("keep a page", openAndHandoff("mine"));
    const tab = lastResult({ messages: a.session.messages }, "browser_open").tab;
    await b.prompt("close everything", [
      callTools(["browser_skill", {}]),
      callTools(["browser_close", { tabs: [tab] }]),
      callTools(["browser_cleanup", {}]),
      say("tried"),
    ]);
    const [, close, cleanup] = b.toolResults();
    assert.equal(close.isError, true, "closing another session's tab is an error, never a success");
    assert.match(close.content[0].text, /OTHER_SESSION_TAB|NOT_OWNER/);
    assert.equal(cleanup.isError, false);
    assert.ok(!JSON.parse(cleanup.content[0].text).closed.includes(tab));
    const view = await tabsOf(a.sessionId);
    assert.deepEqual(view.tabs.map((t) => [t.tab, t.mark]), [[tab, "handoff"]], "still A's, still marked");
  } finally {
    await b.dispose();
    await a.dispose();
  }
});
