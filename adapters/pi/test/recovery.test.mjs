//! Pi fault drill against the real broker and managed Chromium: the browser is frozen (SIGSTOP) so the turn-end and
//! session-switch cleanups cannot confirm their closes. Neither may read as success; the broker must keep a recovery
//! record for the old session across the switch, and a later call (after the browser thaws) must retry it.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { brokerStatus, fixtureServer, isolatedEnv, signalBrowser, stopBroker } from "../../test-support/env.mjs";
import { callTools, createPi, lastResult, say } from "./harness.mjs";

// A short operation deadline so a frozen browser fails fast; set before the broker starts.
process.env.BROWSERD_OP_TIMEOUT_MS = "1500";
const env = isolatedEnv("pi-recovery");
let site;

before(async () => {
  site = await fixtureServer();
});

after(async () => {
  thaw();
  await stopBroker(env);
  await site.close();
});

const freeze = () => signalBrowser(env, "SIGSTOP");
const thaw = () => signalBrowser(env, "SIGCONT");

test("a cleanup that cannot be confirmed leaves a recovery record that survives a session switch and is retried later", async () => {
  const pi = await createPi({ env });
  try {
    await pi.prompt("open a page", [
      callTools(["browser_skill", {}]),
      callTools(["browser_open", { url: site.url("frozen") }]),
      () => {
        assert.ok(freeze() > 0, "found the managed Chromium to freeze");
        return say("done")();
      },
    ]);
    const tab = lastResult({ messages: pi.session.messages }, "browser_open").tab;
    const oldSession = pi.sessionId;

    // Turn end could not close the tab: reported as a failure (never success), outside the transcript.
    assert.ok(pi.events.some((e) => e.startsWith("warn:turn cleanup left work for recovery")), pi.events.join("\n"));
    assert.ok(!pi.session.messages.some((m) => JSON.stringify(m).includes("recovery")), "nothing about it in the transcript");
    let status = await brokerStatus();
    assert.equal(status.tabs.find((t) => t.tab === tab)?.state, "cleanupUnknown");

    // The session switch runs final cleanup, which fails too; the record must outlive the old session.
    await pi.newSession();
    assert.ok(pi.events.some((e) => e.startsWith("warn:final cleanup")), pi.events.join("\n"));
    status = await brokerStatus();
    assert.ok(!status.sessions.some((s) => s.hostSessionId === oldSession), "the old session is gone");
    const record = status.recovery.find((r) => r.tab === tab);
    assert.ok(record, `a recovery record for tab ${tab}: ${JSON.stringify(status.recovery)}`);
    assert.equal(record.what, "close");
    assert.ok(record.attempts >= 1);

    // The browser thaws; later browser calls of the new session retry (once the record's backoff has passed) until
    // the close is confirmed. Bounded by attempts, not by elapsed time.
    assert.ok(thaw() > 0);
    await pi.prompt("check the browser", [callTools(["browser_skill", {}]), callTools(["browser_status", {}]), say("ok")]);
    for (let attempt = 0; attempt < 40 && (await brokerStatus()).recovery.length > 0; attempt++) {
      await new Promise((r) => setTimeout(r, 250));
      await pi.prompt("check again", [callTools(["browser_status", {}]), say("ok")]);
    }
    const results = pi.toolResults();
    assert.ok(results.every((r) => !r.isError), JSON.stringify(results.filter((r) => r.isError)));
    status = await brokerStatus();
    assert.deepEqual(status.recovery, [], "the retry succeeded and cleared the record");
    assert.ok(!status.tabs.some((t) => t.tab === tab), "the tab is really closed");
  } finally {
    thaw();
    await pi.dispose();
  }
});
