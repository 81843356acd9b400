//! The user's approval of one browser action, shared by the Pi and DSH adapters (BRIEF §8, issue 16 item 3): when the
//! broker answers a tool call with `APPROVAL_REQUIRED` (or a batch stops before a step that needs one), the host's own
//! UI asks the user what the answer names (action, class, target, origin, value or file); yes grants exactly that
//! approval with the broker's `approval.grant` (the binding the broker made: session, browser, origin, class, target
//! digest, parameter hash; five minutes; used once) and runs the same call once more — a batch only from the approved
//! step on, answered as one batch; no is `APPROVAL_DECLINED` (nothing sent). A host that cannot ask (no UI) gets the
//! `APPROVAL_REQUIRED` answer unchanged. The model never grants: the grant is made only on the user's answer.

import { BrokerError } from "./broker-client.mjs";

/** The title and text the user is asked, from an `APPROVAL_REQUIRED` answer's details. */
export function approvalQuestion(details) {
  const lines = [`browserd asks your approval for one browser action: ${details.confirm}.`];
  lines.push(`Action: ${details.action} (${details.class}).`);
  if (details.target) lines.push(`Target: ${details.target}.`);
  lines.push(`Site: ${details.origin}.`);
  if (details.file) lines.push(`File: ${details.file.path} (${details.file.size} bytes, sha256 ${details.file.sha256}).`);
  else if (typeof details.value === "string") lines.push(`Value: ${JSON.stringify(details.value)}.`);
  lines.push("Yes runs exactly this once; no sends nothing.");
  return { title: `Allow: ${details.confirm}?`, message: lines.join("\n") };
}

/** The refusal after the user said no. */
export function approvalDeclined(details) {
  return new BrokerError("APPROVAL_DECLINED", `the user declined to ${details.confirm ?? "do this"}; nothing was sent`, {
    nextStep: "Do not repeat it unless the user asks for it; tell the user what you wanted to do instead.",
    data: { code: "APPROVAL_DECLINED", details: { approval: details.approval, outcome: "notDispatched" } },
  });
}

/** The approval details of an `APPROVAL_REQUIRED` error, if it is one. */
export function approvalOf(err) {
  const details = err?.code === "APPROVAL_REQUIRED" ? err.data?.details : null;
  return details?.approval ? details : null;
}

/** `[step, details]` of the step a batch answer stopped before for an approval, if it did. */
export function batchWaits(value) {
  const step = value?.stopped?.step;
  const report = value?.results?.find?.((r) => r.step === step);
  return report?.code === "APPROVAL_REQUIRED" && report.approval?.approval ? [step, report.approval] : null;
}

/** The whole batch: `first` (stopped before step `from`) followed by `rest` (the steps from `from` on). */
export function mergeBatch(first, from, rest) {
  const merged = { ...first, ok: rest.ok, steps: [...(first.steps ?? []), ...(rest.steps ?? [])] };
  merged.results = [...(first.results ?? []).slice(0, from), ...(rest.results ?? []).map((r) => ({ ...r, step: r.step + from }))];
  if (rest.stopped) merged.stopped = { ...rest.stopped, step: rest.stopped.step + from };
  else delete merged.stopped;
  return merged;
}

function batchDeclined(value, from) {
  const results = value.results.map((r) =>
    r.step === from
      ? { ...r, code: "APPROVAL_DECLINED", message: `not started: the user declined to ${r.approval?.confirm ?? "do this step"}; nothing was sent` }
      : r,
  );
  return { ...value, results };
}

/**
 * Calls `name` through `session` (a BrowserSession); when the broker asks for the user's approval, `confirm(details)`
 * asks the user: `true` grants and runs the call once more, `false` refuses, `null` (cannot ask) leaves the
 * `APPROVAL_REQUIRED` answer as it is.
 * @param {import("./session.mjs").BrowserSession} session
 * @param {(details: object) => Promise<boolean | null>} confirm
 */
export async function callWithApproval(session, name, args, opts, confirm) {
  const again = { ...opts, callId: opts?.callId ? `${opts.callId}:approved` : undefined };
  let value;
  try {
    value = await session.callTool(name, args, opts);
  } catch (err) {
    const details = approvalOf(err);
    if (!details) throw err;
    const yes = await confirm(details);
    if (yes === null || yes === undefined) throw err;
    if (!yes) throw approvalDeclined(details);
    await session.client.call("approval.grant", { approval: details.approval });
    return session.callTool(name, args, again);
  }
  const waits = name === "browser_batch" ? batchWaits(value) : null;
  if (!waits) return value;
  const [from, details] = waits;
  const yes = await confirm(details);
  if (yes === null || yes === undefined) return value;
  if (!yes) return batchDeclined(value, from);
  await session.client.call("approval.grant", { approval: details.approval });
  const rest = await session.callTool(name, { ...args, steps: args.steps.slice(from) }, again);
  return from === 0 ? rest : mergeBatch(value, from, rest);
}
