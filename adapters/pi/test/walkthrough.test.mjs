//! The lifecycle seed's acceptance walkthroughs ("真实验收" 1–9), scripted with the real `pi` CLI as a subprocess
//! (`pi --mode rpc`), the test-only scripted model and the browserd extension, against the real broker and a managed
//! Chromium. Each walkthrough checks what the seed asks for through Pi's own transcript (`get_messages`), the tools
//! the model was offered on each call, and the broker's `status`.
//!
//! Run alone: `BROWSERD_BIN=target/debug/browserd node --test adapters/pi/test/walkthrough.test.mjs`.

import assert from "node:assert/strict";
import fs from "node:fs";
import { after, before, test } from "node:test";

import { brokerStatus, fixtureServer, isolatedEnv, signalBrowser, stopBroker, tabsOf } from "../../test-support/env.mjs";
import { json, startPi, toolResults } from "./rpc-driver.mjs";

// Short operation deadline for walkthrough 8, which freezes the browser; set before the broker starts.
process.env.BROWSERD_OP_TIMEOUT_MS = "1500";
const env = isolatedEnv("pi-walkthrough");
let site;

before(async () => {
  site = await fixtureServer();
});

after(async () => {
  signalBrowser(env, "SIGCONT");
  await stopBroker(env);
  await site.close();
});

const browserTools = (call) => call.tools.filter((t) => t.startsWith("browser_") && t !== "browser_skill");
const skillTexts = (messages) =>
  toolResults(messages).filter((m) => m.toolName === "browser_skill" && m.content[0].text.includes("# Browser (browserd)")).length;

async function withPi(options, body) {
  const pi = await startPi({ env, ...options });
  try {
    await body(pi);
  } finally {
    if (pi.child.exitCode === null && pi.child.signalCode === null) await pi.quit();
  }
}

test("walkthrough 1: a new session that does not ask for the browser has no browser tools", async () => {
  await withPi({ name: "w1", script: [{ say: "hello" }] }, async (pi) => {
    await pi.prompt("hi");
    const [call] = pi.llmCalls();
    assert.deepEqual(browserTools(call), []);
    assert.ok(call.tools.includes("browser_skill"), "only the skill loader is offered");
    assert.equal(fs.existsSync(env.socket), false, "no broker was started for it");
  });
});

test("walkthroughs 2–3: the skill loads once; several turns work on the same tab with tools and bridge kept", async () => {
  const script = [
    { call: [["browser_skill", {}]] },
    { call: [["browser_open", { url: site.url("w3") }]] },
    { call: [["browser_mark_handoff", { tab: "$tab:browser_open" }]] },
    { say: "opened" },
    // turn 2: no skill call; act on the same tab and keep it again
    { call: [["browser_act", { action: "navigate", value: site.url("w3-second") }]] },
    { call: [["browser_mark_handoff", { tab: "$tab:browser_open" }]] },
    { say: "navigated" },
    // turn 3: the same tab, the same bridge, the same tools
    { call: [["browser_list", {}]] },
    { call: [["browser_status", {}]] },
    { say: "still there" },
  ];
  await withPi({ name: "w3", script }, async (pi) => {
    await pi.prompt("open the page");
    await pi.prompt("go to the second page");
    await pi.prompt("is it still there?");
    const messages = await pi.messages();
    const results = toolResults(messages);
    assert.ok(results.every((r) => !r.isError), JSON.stringify(results.filter((r) => r.isError)));
    assert.equal(skillTexts(messages), 1, "the skill text was shown once");
    assert.equal(results.filter((r) => r.toolName === "browser_skill").length, 1, "and loaded once");
    const calls = pi.llmCalls();
    assert.ok(browserTools(calls[4]).includes("browser_act"), "turn 2 starts with the browser tools offered");
    assert.ok(browserTools(calls[7]).includes("browser_act"), "turn 3 too");
    const tab = json(results[1]).tab;
    assert.equal(json(results[3]).outcome, "succeeded");
    const listed = json(results[5]).tabs.filter((t) => t.provenance !== "user");
    assert.deepEqual(listed.map((t) => [t.tab, t.url]), [[tab, site.url("w3-second")]], "the same tab, navigated in turn 2");
    const status = json(results[6]);
    assert.equal(status.bridge, "connected");
    assert.equal(status.toolsActive, true);
  });
});

test("walkthrough 4: turn end closes the scratch tab, releases the claimed tab, detaches, adds no transcript text", async () => {
  const script = [
    { call: [["browser_skill", {}]] },
    { call: [["browser_list", {}]] },
    { call: [["browser_claim", { tab: "$userTab" }]] },
    { call: [["browser_observe", {}]] },
    { call: [["browser_open", { url: site.url("w4-scratch") }]] },
    { call: [["browser_observe", { screenshot: true }]] },
    { say: "looked" },
  ];
  await withPi({ name: "w4", script }, async (pi) => {
    await pi.prompt("look at my tab and a scratch page");
    const messages = await pi.messages();
    const results = toolResults(messages);
    assert.ok(results.every((r) => !r.isError), JSON.stringify(results.filter((r) => r.isError)));
    const claimed = json(results[2]).tab;
    const scratch = json(results[4]).tab;
    const id = await pi.sessionId();
    const view = await tabsOf(id);
    assert.deepEqual(view.tabs, [], "the session holds no tab after turn end");
    const status = await brokerStatus();
    assert.ok(!status.tabs.some((t) => t.tab === scratch), "the unmarked scratch tab was closed");
    const user = status.tabs.find((t) => t.tab === claimed);
    assert.ok(user, "the claimed user tab stays open");
    assert.equal(user.provenance, "user");
    assert.equal(user.session, undefined, "and was released");
    assert.ok(!status.debuggerLeases.some((l) => l.holder === view.session?.session), "no debugger lease left");
    // Transcript: the prompt, the model's calls and results, the one continuation note after the skill, the answer.
    assert.deepEqual(
      messages.map((m) => m.role),
      ["user", "assistant", "toolResult", "custom", ...Array(5).fill(["assistant", "toolResult"]).flat(), "assistant"],
    );
    assert.equal(messages.at(-1).content[0].text, "looked", "nothing was appended after the answer");
  });
});

test("walkthrough 5: task finalize handles tabs by ownership and keeps the tools", async () => {
  const script = [
    { call: [["browser_skill", {}]] },
    { call: [["browser_open", { url: site.url("w5-scratch") }]] },
    { call: [["browser_open", { url: site.url("w5-result") }]] },
    { call: [["browser_mark_deliverable", { tab: "$tab:browser_open" }]] },
    { call: [["browser_cleanup", {}]] },
    { call: [["browser_list", {}]] },
    { say: "finished" },
    { say: "yes" },
  ];
  await withPi({ name: "w5", script }, async (pi) => {
    await pi.prompt("open, keep the result, finish the task");
    const results = toolResults(await pi.messages());
    assert.ok(results.every((r) => !r.isError), JSON.stringify(results.filter((r) => r.isError)));
    const [scratch, result] = [json(results[1]).tab, json(results[2]).tab];
    const cleanup = json(results[4]);
    assert.equal(cleanup.ok, true);
    assert.deepEqual(cleanup.closed, [scratch]);
    assert.deepEqual(cleanup.kept, [result]);
    assert.equal(cleanup.toolsActive, true);
    await pi.prompt("are the tools still there?");
    assert.ok(browserTools(pi.llmCalls().at(-1)).includes("browser_open"), "tools still offered after finalize");
    const status = await brokerStatus();
    assert.equal(status.tabs.find((t) => t.tab === result)?.provenance, "user", "the deliverable page stays, handed to the user");
  });
});

test("walkthrough 6: a context reset removes the browser tools", async () => {
  const script = [
    { call: [["browser_skill", {}]] },
    { call: [["browser_open", { url: site.url("w6") }]] },
    { call: [["browser_context_reset", {}]] },
    { say: "reset" },
    { say: "no browser tools" },
  ];
  await withPi({ name: "w6", script }, async (pi) => {
    await pi.prompt("reset the browser context");
    const results = toolResults(await pi.messages());
    const reset = json(results[2]);
    assert.equal(reset.ok, true);
    assert.equal(reset.toolsActive, false);
    await pi.prompt("what tools do you have?");
    assert.deepEqual(browserTools(pi.llmCalls().at(-1)), []);
    assert.equal((await tabsOf(await pi.sessionId())).session.tools, "inactive");
  });
});

test("walkthrough 7: ending Pi without finalize runs the host's fallback cleanup", async () => {
  const script = [
    { call: [["browser_skill", {}]] },
    { call: [["browser_open", { url: site.url("w7") }]] },
    { hang: true },
  ];
  await withPi({ name: "w7", script }, async (pi) => {
    await pi.promptNoWait("open a page and think forever");
    await pi.waitForModelCalls(3);
    const id = await pi.sessionId();
    const before = await tabsOf(id);
    assert.equal(before.tabs.length, 1, "a scratch tab is open mid-task");
    const tab = before.tabs[0].tab;
    const exit = await pi.kill("SIGTERM");
    assert.ok(exit.code !== null || exit.signal !== null);
    assert.ok(pi.trace().includes("end:session.close"), `session close ran before exit: ${pi.trace().slice(-6).join(" ")}`);
    const status = await brokerStatus();
    assert.ok(!status.sessions.some((s) => s.hostSessionId === id), "the broker session was closed");
    assert.ok(!status.tabs.some((t) => t.tab === tab), "the scratch tab was closed by the fallback cleanup");
  });
});

test("walkthrough 8: after the browser connection stalls, retrying cleanup works and ownership was kept", async () => {
  const retries = 4;
  const script = [
    { call: [["browser_skill", {}]] },
    { call: [["browser_open", { url: site.url("w8") }]] },
    { signal: "SIGSTOP", call: [["browser_cleanup", {}]] },
    { say: "cleanup failed; will retry" },
    ...Array(retries).fill([{ call: [["browser_cleanup", {}]] }, { say: "retried" }]).flat(),
  ];
  await withPi({ name: "w8", script }, async (pi) => {
    await pi.prompt("open a page and finish");
    let results = toolResults(await pi.messages());
    const tab = json(results[1]).tab;
    assert.equal(results[2].isError, true, "the stalled cleanup is an error, never a success");
    const id = await pi.sessionId();
    const stalled = await tabsOf(id);
    const record = stalled.tabs.find((t) => t.tab === tab);
    assert.ok(record, "the tab is still recorded as this session's");
    assert.equal(record.provenance, "agentCreated");
    assert.ok(stalled.recovery.some((r) => r.tab === tab), "with a recovery record");

    assert.ok(signalBrowser(env, "SIGCONT") > 0);
    // The user asks again until the cleanup is confirmed (bounded by attempts, not time). Every answer is either a
    // confirmed success or an error: a cleanup that did not happen never reads as success.
    let confirmed = false;
    for (let attempt = 0; attempt < retries && !confirmed; attempt++) {
      await pi.prompt("try again");
      results = toolResults(await pi.messages());
      const retry = results.at(-1);
      if (!retry.isError) {
        assert.equal(json(retry).ok, true);
        confirmed = true;
      }
    }
    assert.ok(confirmed, `no retry was confirmed: ${results.at(-1).content[0].text}`);
    const after = await brokerStatus();
    assert.ok(!after.tabs.some((t) => t.tab === tab), "the tab is really closed");
    assert.ok(!after.recovery.some((r) => r.tab === tab), "and its recovery record is gone");
  });
});

test("walkthrough 9: with two sessions at once, one cannot clean up the other's resources", async () => {
  const a = await startPi({
    env,
    name: "w9-a",
    script: [
      { call: [["browser_skill", {}]] },
      { call: [["browser_open", { url: site.url("w9-a") }]] },
      { call: [["browser_mark_handoff", { tab: "$tab:browser_open" }]] },
      { say: "kept" },
    ],
  });
  const b = await startPi({
    env,
    name: "w9-b",
    script: [
      { call: [["browser_skill", {}]] },
      { call: [["browser_list", {}]] },
      { call: [["browser_close", { tabs: ["$otherTab"] }]] },
      { call: [["browser_cleanup", {}]] },
      { say: "tried" },
    ],
  });
  try {
    await a.prompt("keep a page for me");
    const aTab = json(toolResults(await a.messages())[1]).tab;
    await b.prompt("close every tab");
    const results = toolResults(await b.messages());
    assert.equal(json(results[1]).tabs.find((t) => t.tab === aTab)?.provenance, "otherSession");
    assert.equal(results[2].isError, true, "closing the other session's tab is refused");
    assert.match(results[2].content[0].text, /OTHER_SESSION_TAB|NOT_OWNER/);
    assert.ok(!json(results[3]).closed.includes(aTab));
    const view = await tabsOf(await a.sessionId());
    assert.deepEqual(view.tabs.map((t) => [t.tab, t.mark]), [[aTab, "handoff"]], "A's tab is untouched and still A's");
  } finally {
    await b.quit();
    await a.quit();
  }
});

test("a Pi process that dies and is resumed within the grace period re-attaches: tools active, tab still owned", async () => {
  const first = await startPi({
    env,
    name: "crash-1",
    script: [
      { call: [["browser_skill", {}]] },
      { call: [["browser_open", { url: site.url("crash") }]] },
      { call: [["browser_mark_handoff", { tab: "$tab:browser_open" }]] },
      { say: "kept" },
    ],
  });
  const state = await first.send({ type: "get_state" });
  await first.prompt("keep a page");
  const tab = json(toolResults(await first.messages())[1]).tab;
  await first.kill("SIGKILL");
  assert.ok(!first.trace().includes("start:session.close"), "no shutdown ran: the process was killed");

  await withPi(
    {
      name: "crash-2",
      script: [{ call: [["browser_list", {}]] }, { say: "still mine" }],
      args: ["--session", state.sessionFile],
    },
    async (second) => {
      assert.equal(await second.sessionId(), state.sessionId);
      await second.prompt("is my page still there?");
      const [call] = second.llmCalls();
      assert.ok(browserTools(call).includes("browser_list"), "the tools are active without loading the skill again");
      const results = toolResults(await second.messages());
      const listed = json(results.at(-1)).tabs.find((t) => t.tab === tab);
      assert.equal(listed?.provenance, "handoff", "the re-attached session still owns its marked tab");
      assert.ok(second.trace().includes("session_start:startup"));
    },
  );
});
