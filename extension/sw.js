// browserd's service worker: connects to the native host, relays CDP through chrome.debugger, manages owned tabs and
// one tab group per agent session, and enforces the last-hop gate (lease + fencing token + Stop) before any input,
// the scheme gate (`lib/schemes.js`) before any command to a tab, the site and scheme policy on every tab it opens,
// navigates or claims, on every top-level document request the Fetch domain pauses (failed before it is sent when
// refused) and on every popup an agent's tab opens (closed at once when refused; after a server redirect, as the
// refused document commits).

import { Gate, GateError } from './lib/gate.js';
import { SitePolicy } from './lib/sites.js';
import { Owners } from './lib/owners.js';
import { Reassembler } from './lib/chunks.js';
import { Schemes } from './lib/schemes.js';
import { Uploads } from './lib/uploads.js';

const HOST_NAME = 'com.browserd.native_host';
const VERSION = chrome.runtime.getManifest().version;
const CAPABILITIES = ['turnCleanup', 'turnScopedMarks', 'retainedCleanup', 'debuggerLeaseRecovery'];
const INSTANCE = crypto.randomUUID();
const GROUP_COLORS = ['blue', 'green', 'purple', 'cyan', 'orange', 'pink', 'yellow', 'red', 'grey'];

const gate = new Gate();
/** The scheme policy's last hop: which URLs a controlled tab may show (the broker sends its copy at connect). */
const schemes = new Schemes();
/** The upload policy's last hop: which files may be set on a file input (sent with the scheme policy). */
const uploads = new Uploads();

/** Throws POLICY_DENIED when a file input would get a file outside the upload roots. Checked only once the lease
 *  would admit the command, so a stale or stopped one keeps its own refusal. */
function refuseUpload(tabId, a) {
  if (a.method !== 'DOM.setFileInputFiles') return;
  try { gate.check(tabId, a.fence); } catch (e) { return; }
  const why = uploads.refusal(a.params?.files);
  if (why) {
    gate.refused++;
    throw new GateError('POLICY_DENIED', `refused to set a file on tab ${tabId} by the extension's upload gate: ${why}; nothing was sent`);
  }
}

/** Throws POLICY_DENIED when `url` is a scheme the policy refuses; `what` says what was refused. */
function refuseUrl(url, what) {
  const why = schemes.refusal(url);
  if (why) throw new GateError('POLICY_DENIED', `${what} refused by the extension's scheme gate: ${why}; nothing was sent`);
}

/** Throws ORIGIN_NOT_AUTHORISED when agent `session` may not open or go to `url` by the site policy. */
function refuseSite(url, session, what) {
  const why = sites.refusal(url, session);
  if (!why) return;
  gate.refused++;
  throw new GateError('ORIGIN_NOT_AUTHORISED', `${what} refused by the extension's site gate: ${why}; nothing was sent`);
}

/** Throws POLICY_DENIED when the tab shows (or is about to show) a URL the scheme policy refuses; with `session`
 *  (an agent taking the tab), ORIGIN_NOT_AUTHORISED when it shows an origin that session may not have. */
async function refuseTab(tabId, what, session) {
  const tab = await chrome.tabs.get(tabId);
  for (const url of [tab.url, tab.pendingUrl]) {
    const why = url ? schemes.shownRefusal(url) : null;
    if (why) throw new GateError('POLICY_DENIED', `${what} tab ${tabId} (it shows a ${String(url).split(':')[0]}: page) refused by the extension's scheme gate: ${why}; nothing was sent`);
  }
  if (session === undefined) return;
  for (const url of [tab.url, tab.pendingUrl]) if (url) refuseSite(url, session, `${what} tab ${tabId}`);
}
/** The site policy the gate checks every command's tab against (the broker's copy once it sent one). */
const sites = new SitePolicy();
const owners = new Owners(chrome.storage.session);
const reassembler = new Reassembler(64 * 1024 * 1024);
/** Tabs this worker attached chrome.debugger to. */
const attached = new Set();
/** Tabs the agent controlled when Stop came (attached or owned): chrome.debugger.attach to them is refused with
 *  USER_STOPPED until the agent resumes the tab and the broker grants it a new lease (`lease.grant`), or the tab goes
 *  back to the user. Kept in chrome.storage.session, so a restarted worker refuses them too. */
const stoppedTabs = new Set();
function saveStoppedTabs() {
  return chrome.storage.session.set({ stoppedTabs: [...stoppedTabs] });
}
function unstop(tabId) {
  if (stoppedTabs.delete(tabId)) saveStoppedTabs();
}
/** tabId -> CDP target id (from chrome.debugger.getTargets). */
const targetIds = new Map();

const conn = { state: 'starting', port: null, backoffMs: 250, lastError: null, broker: null, connectedAt: null, timer: null };
let seq = 0;
let lastStop = null;
/** Debugger attachments a previous worker instance left behind and this one detached at start. */
let recoveredDetaches = 0;

function send(msg) {
  if (!conn.port) return false;
  try { conn.port.postMessage(msg); return true; } catch (e) { conn.lastError = String(e?.message || e); return false; }
}

/** Every event carries the next sequence number; the broker resyncs when it sees a gap. */
function emit(kind, body) {
  send({ type: 'event', seq: ++seq, kind, ...body });
}

function errorOf(e) {
  if (e instanceof GateError) return { code: e.code, message: e.message };
  const message = String(e?.message || e);
  if (/Cannot access a chrome:\/\/ URL|Cannot attach to this target|chrome-extension:\/\//.test(message)) {
    return { code: 'UNSUPPORTED', message: `unsupported: this page cannot be controlled through the extension (${message})` };
  }
  if (/No tab with id/.test(message)) return { code: 'TAB_GONE', message };
  if (/Another debugger is already attached/.test(message)) return { code: 'DEBUGGER_BUSY', message };
  return { code: 'BROWSER_ERROR', message };
}

async function targetIdOf(tabId) {
  if (targetIds.has(tabId)) return targetIds.get(tabId);
  for (let i = 0; i < 20; i++) {
    const all = await chrome.debugger.getTargets();
    for (const t of all) if (t.type === 'page' && t.tabId !== undefined) targetIds.set(t.tabId, t.id);
    if (targetIds.has(tabId)) return targetIds.get(tabId);
    await new Promise((r) => setTimeout(r, 10));
  }
  return null;
}

/**
 * Chromium lets several debugging clients share a tab, and chrome.debugger cannot tell who they are. This worker holds
 * no attachment of the tab here (its own leftovers were detached at start), so an attached target means another client
 * (developer tools, another extension, a remote protocol client) has it: refuse rather than act beside it.
 */
async function refuseIfOtherDebugger(tabId) {
  const target = (await chrome.debugger.getTargets()).find((t) => t.tabId === tabId);
  if (target?.attached) {
    throw new GateError('DEBUGGER_BUSY', `another debugger is attached to tab ${tabId} (developer tools, another extension or a remote protocol client); nothing was sent`);
  }
}

async function describe(tab) {
  return {
    tabId: tab.id,
    windowId: tab.windowId,
    targetId: await targetIdOf(tab.id),
    url: tab.url || tab.pendingUrl || '',
    title: tab.title || '',
    status: tab.status,
    active: tab.active,
    groupId: tab.groupId,
    owner: await owners.get(tab.id),
  };
}

// ---- chrome events -> broker -------------------------------------------------------------------------------------

/** The child DevTools sessions of each tab (out-of-process frames, workers) and the URL each one shows, from the
 *  events that announce them: `${tabId}/${sessionId}` -> { targetId, url }. The site gate checks a command sent to
 *  a child session against its own document, not the tab's. */
const children = new Map();

function noteChild(source, method, params) {
  if (source?.tabId === undefined) return;
  const key = (sessionId) => `${source.tabId}/${sessionId}`;
  if (method === 'Target.attachedToTarget' && params?.sessionId) {
    children.set(key(params.sessionId), { targetId: params.targetInfo?.targetId, url: params.targetInfo?.url ?? '' });
  } else if (method === 'Target.detachedFromTarget' && params?.sessionId) {
    children.delete(key(params.sessionId));
  } else if (method === 'Target.targetInfoChanged' && params?.targetInfo?.targetId) {
    for (const [k, child] of children) {
      if (k.startsWith(`${source.tabId}/`) && child.targetId === params.targetInfo.targetId) child.url = params.targetInfo.url ?? child.url;
    }
  } else if (method === 'Page.frameNavigated' && source.sessionId && params?.frame && !params.frame.parentId) {
    const child = children.get(key(source.sessionId));
    if (child) child.url = params.frame.url + (params.frame.urlFragment ?? '');
  }
}

function forgetChildren(tabId) {
  for (const k of children.keys()) if (k.startsWith(`${tabId}/`)) children.delete(k);
}

// ---- the last hop of the site policy for navigations: paused document requests -----------------------------------

/** Document requests the Fetch domain paused (browserd enables it on each page session): `${tabId}/${sessionId}/
 *  ${requestId}` -> { url, main }. A top-level one the extension's own policy refuses is failed here, before anything
 *  is requested; browserd's answer for it (and for every other) passes `fetchAnswer`. At most 256 are remembered. */
const paused = new Map();
/** Top-level navigations this worker stopped before they were requested. */
let stoppedNavigations = 0;

function pausedKey(tabId, sessionId, requestId) {
  return `${tabId}/${sessionId ?? ''}/${requestId}`;
}

/** Why a top-level navigation of agent `session`'s tab to `url` is refused (scheme or site policy), or null. */
function navigationRefusal(url, session) {
  const scheme = schemes.refusal(url);
  if (scheme) return scheme;
  return sites.refusal(url, session);
}

function notePaused(source, params) {
  if (source?.tabId === undefined || !params?.requestId) return null;
  const main = !source.sessionId && params.frameId !== undefined && params.frameId === targetIds.get(source.tabId);
  const key = pausedKey(source.tabId, source.sessionId, params.requestId);
  paused.set(key, { url: params.request?.url ?? '', main });
  while (paused.size > 256) paused.delete(paused.keys().next().value);
  return { key, main, url: params.request?.url ?? '' };
}

/** A top-level document request the extension's policy refuses: failed at once, whatever browserd answers. */
async function gatePaused(source, params, noted) {
  if (!noted?.main) return;
  const session = (await owners.get(source.tabId))?.session;
  const why = navigationRefusal(noted.url, session);
  if (!why || !paused.delete(noted.key)) return;
  gate.refused++;
  stoppedNavigations++;
  try {
    await chrome.debugger.sendCommand(source, 'Fetch.failRequest', { requestId: params.requestId, errorReason: 'BlockedByClient' });
  } catch (e) { /* the request is gone already */ }
}

/** browserd's answer to a paused request: a failure passes; a continuation passes only unchanged (no URL, method,
 *  header or body of browserd's) and only when the extension's own policy authorises a top-level request's URL. */
async function fetchAnswer(target, a) {
  const requestId = a.params?.requestId;
  const key = pausedKey(target.tabId, target.sessionId, requestId);
  const entry = paused.get(key);
  if (!entry) throw new GateError('INVALID_PARAMS', `${a.method}: the extension's gate saw no paused request ${requestId} on tab ${target.tabId}; nothing was sent`);
  const continuing = a.method === 'Fetch.continueRequest';
  const extra = continuing ? Object.keys(a.params || {}).filter((k) => k !== 'requestId') : [];
  if (extra.length) {
    gate.refused++;
    throw new GateError('POLICY_DENIED', `Fetch.continueRequest may not change the request (${extra.join(', ')}) through the extension; nothing was sent`);
  }
  const why = continuing && entry.main ? navigationRefusal(entry.url, (await owners.get(target.tabId))?.session) : null;
  paused.delete(key);
  if (!continuing || why) {
    const failed = chrome.debugger.sendCommand(target, 'Fetch.failRequest', { requestId, errorReason: a.params?.errorReason ?? 'BlockedByClient' });
    if (!why) return failed;
    gate.refused++;
    stoppedNavigations++;
    await failed.catch(() => {});
    throw new GateError('ORIGIN_NOT_AUTHORISED', `the extension's gate stopped tab ${target.tabId}'s navigation before it was requested: ${why}`);
  }
  return chrome.debugger.sendCommand(target, 'Fetch.continueRequest', { requestId });
}

// ---- the last hop of the site policy for popups ---------------------------------------------------------------------

/** Popups opened by a tab an agent session owns, and the tabs they open in turn: tabId -> that session. The Fetch
 *  domain does not reach a new window (browserd's debugger is on the opener), so a popup is judged by every URL the
 *  browser announces for it (`webNavigation`: the first one, each new navigation, and the document that commits,
 *  which is where a server redirect shows) and closed at once when the policy refuses one. Kept in
 *  chrome.storage.session too (`popup:<tabId>`), so a restarted worker still judges the popups it knew. */
const popups = new Map();
/** Popups whose session is still being looked up (the opener's record is read from storage after a worker restart):
 *  tabId -> a promise of that session. A navigation event that arrives meanwhile waits for it instead of passing. */
const pendingPopups = new Map();
/** The popups a previous worker instance recorded, and the broker's last site policy (`sitePolicy`, so a restarted
 *  worker judges popups by it until the broker hands it again), loaded once at start; every popup event waits for it. */
const popupsLoaded = chrome.storage.session.get(null).then((all) => {
  if (all.sitePolicy && !sites.fromBroker) {
    try { sites.set(all.sitePolicy); sites.fromBroker = false; } catch (e) { /* keep the defaults */ }
  }
  for (const [k, session] of Object.entries(all)) {
    const tabId = Number(k.slice('popup:'.length));
    if (k.startsWith('popup:') && !popups.has(tabId)) {
      popups.set(tabId, session);
      storedPopups.add(tabId);
    }
  }
}, () => { /* storage unreadable: only popups opened from now on are known */ });
/** Popups closed by the gate, newest last (at most 20): { tabId, openerTabId, url, why, at, via, committed, closed }. */
const closedPopups = [];
/** The popups whose record is in chrome.storage.session (a worker restarted from now on still judges them). */
const storedPopups = new Set();

function rememberPopup(tabId, session) {
  popups.set(tabId, session);
  chrome.storage.session.set({ [`popup:${tabId}`]: session }).then(() => {
    if (popups.get(tabId) === session) storedPopups.add(tabId);
  }, () => {});
}
function forgetPopup(tabId) {
  popups.delete(tabId);
  storedPopups.delete(tabId);
  chrome.storage.session.remove(`popup:${tabId}`).catch(() => {});
}

/** The agent session popup `tabId` answers to, or undefined (not a popup of an agent's tab). */
async function popupOf(tabId) {
  await popupsLoaded;
  return popups.get(tabId) ?? pendingPopups.get(tabId);
}

/** Closes popup `tabId` of agent `session` when `url` (the document it is about to load, `via` the event that said
 *  so, or the one that just `committed`) is refused. */
function gatePopup(tabId, openerTabId, url, session, via, committed = false) {
  const why = navigationRefusal(url, session);
  if (!why) return;
  gate.refused++;
  forgetPopup(tabId);
  const record = { tabId, openerTabId, url, why, at: Date.now(), via, committed, closed: false };
  closedPopups.push(record);
  while (closedPopups.length > 20) closedPopups.shift();
  chrome.tabs.remove(tabId).then(() => { record.closed = true; }, () => { /* already gone */ });
}

/** The agent session a popup opened by `openerTabId` answers to, or undefined (a popup of the user's own tab is the
 *  user's). Known without waiting for storage when it can be: the popup's request is already on its way. */
async function popupSession(openerTabId) {
  const known = popups.get(openerTabId) ?? owners.peek(openerTabId);
  if (known !== undefined) return known;
  const popup = await popupOf(openerTabId);
  return popup !== undefined ? popup : (await owners.get(openerTabId))?.session;
}

chrome.webNavigation.onCreatedNavigationTarget.addListener(async (d) => {
  // Registered before the first await, so the popup's next events wait for its session instead of passing unjudged.
  const looking = popupsLoaded.then(() => popupSession(d.sourceTabId));
  pendingPopups.set(d.tabId, looking);
  let session;
  try { session = await looking; } finally { pendingPopups.delete(d.tabId); }
  if (session === undefined) return;
  rememberPopup(d.tabId, session);
  gatePopup(d.tabId, d.sourceTabId, d.url, session, 'created');
});
chrome.webNavigation.onBeforeNavigate.addListener(async (d) => {
  if (d.frameId !== 0) return;
  const session = await popupOf(d.tabId);
  if (session !== undefined && popups.has(d.tabId)) gatePopup(d.tabId, null, d.url, session, 'navigation');
});
// A server redirect fires no new onBeforeNavigate: the committed document is judged too, and a refused one is closed
// as it commits. Also says whether a popup refused earlier committed before the close took effect.
chrome.webNavigation.onCommitted.addListener(async (d) => {
  if (d.frameId !== 0) return;
  const record = closedPopups.find((r) => r.tabId === d.tabId && !r.closed);
  if (record) record.committed = true;
  const session = await popupOf(d.tabId);
  if (session !== undefined && popups.has(d.tabId)) gatePopup(d.tabId, null, d.url, session, 'commit', true);
});

chrome.debugger.onEvent.addListener((source, method, params) => {
  noteChild(source, method, params);
  const noted = method === 'Fetch.requestPaused' ? notePaused(source, params) : null;
  emit('cdp', { source, method, params });
  if (noted) gatePaused(source, params, noted);
});
chrome.debugger.onDetach.addListener((source, reason) => {
  if (source.tabId !== undefined) {
    attached.delete(source.tabId);
    gate.dropTab(source.tabId);
    forgetChildren(source.tabId);
  }
  emit('detach', { source, reason });
});
chrome.tabs.onCreated.addListener(async (tab) => emit('tabCreated', { tab: await describe(tab) }));
chrome.tabs.onUpdated.addListener(async (tabId, change, tab) => {
  if ('url' in change || 'title' in change || 'status' in change) emit('tabUpdated', { tab: await describe(tab) });
});
chrome.tabs.onRemoved.addListener(async (tabId) => {
  attached.delete(tabId);
  forgetPopup(tabId);
  forgetChildren(tabId);
  gate.forgetTab(tabId);
  unstop(tabId);
  const targetId = targetIds.get(tabId) ?? null;
  targetIds.delete(tabId);
  emit('tabRemoved', { tabId, targetId, owner: await owners.forget(tabId) });
});

// ---- tab groups: one named, coloured group per agent session ------------------------------------------------------

async function ensureGroup(session, tabId, title) {
  const key = `group:${session}`;
  const saved = (await chrome.storage.session.get(key))[key];
  if (saved !== undefined) {
    try {
      await chrome.tabGroups.get(saved.groupId);
      await chrome.tabs.group({ groupId: saved.groupId, tabIds: [tabId] });
      return saved.groupId;
    } catch (e) { /* the group is gone; make a new one */ }
  }
  const groupId = await chrome.tabs.group({ tabIds: [tabId] });
  let hash = 0;
  for (const c of session) hash = (hash * 31 + c.charCodeAt(0)) >>> 0;
  const color = GROUP_COLORS[hash % GROUP_COLORS.length];
  await chrome.tabGroups.update(groupId, { title: title || `browserd ${session.slice(0, 8)}`, color });
  await chrome.storage.session.set({ [key]: { groupId, color } });
  return groupId;
}

/**
 * Takes a tab out of the agent group browserd put it in (`groupedBy`), and only if it is still there; a tab in a
 * group of the user's (a claimed tab, or one the user moved) keeps its group. Groups are never closed whole.
 */
async function ungroupQuiet(tabId, groupedBy) {
  if (groupedBy === undefined || groupedBy === null) return;
  try {
    const tab = await chrome.tabs.get(tabId);
    if (tab.groupId === groupedBy) await chrome.tabs.ungroup([tabId]);
  } catch (e) { /* not grouped or gone */ }
}

async function detachQuiet(tabId) {
  attached.delete(tabId);
  gate.dropTab(tabId);
  try { await chrome.debugger.detach({ tabId }); } catch (e) { /* not attached */ }
}

// ---- Stop ---------------------------------------------------------------------------------------------------------

/** Closes the gate locally first (no round trip), then detaches and tells the broker. Pages stay open. */
async function stopNow(via, reason) {
  const t0 = performance.now();
  const dispatchedBeforeStop = gate.dispatched;
  const dropped = gate.stop();
  const gateClosedMs = performance.now() - t0;
  const epoch = gate.epoch;
  const at = Date.now();
  chrome.storage.session.set({ controlEpoch: epoch });
  const tabs = [...attached];
  attached.clear();
  for (const tabId of tabs) stoppedTabs.add(tabId);
  await Promise.allSettled(tabs.map((tabId) => chrome.debugger.detach({ tabId })));
  try { for (const rec of await owners.all()) stoppedTabs.add(rec.tabId); } catch (e) { /* storage unreadable */ }
  saveStoppedTabs();
  lastStop = {
    via,
    reason: reason ?? null,
    at,
    controlEpoch: epoch,
    droppedInputs: dropped,
    dispatchedBeforeStop,
    detached: tabs,
    timings: { gateClosedMs, detachedMs: performance.now() - t0 },
  };
  emit('stopped', lastStop);
  return lastStop;
}

/** The keyboard command's listener (manifest `commands.stop-agent`, Alt+Shift+S by default). */
function onCommand(command) {
  if (command === 'stop-agent') return stopNow('keyboard');
  return undefined;
}
chrome.commands.onCommand.addListener(onCommand);

chrome.runtime.onMessage.addListener((msg, _sender, reply) => {
  if (msg?.type === 'popup.stop') { stopNow('popup').then(reply, (e) => reply({ error: errorOf(e) })); return true; }
  if (msg?.type === 'popup.status') { status().then(reply); return true; }
  return false;
});

async function status() {
  await popupsLoaded;
  return {
    instance: INSTANCE,
    version: VERSION,
    connection: { state: conn.state, lastError: conn.lastError, broker: conn.broker, connectedAt: conn.connectedAt },
    gate: gate.snapshot(),
    schemes: { fileRoots: schemes.fileRoots, extra: schemes.extra },
    uploadRoots: uploads.roots,
    sites: sites.snapshot(),
    stoppedNavigations,
    closedPopups,
    // The popups of agents' tabs being judged: { tabId, stored } (stored: a restarted worker knows it too).
    popups: [...popups.keys()].map((tabId) => ({ tabId, stored: storedPopups.has(tabId) })),
    attached: [...attached],
    stoppedTabs: [...stoppedTabs],
    owners: await owners.all(),
    seq,
    lastStop,
    recoveredDetaches,
  };
}

// ---- commands from the broker -------------------------------------------------------------------------------------

/** The site policy at the last hop, with the lists of the agent session that owns the tab: a command to a tab that
 *  shows (or is loading) an origin the policy does not authorise is refused, and so is a navigation to one; going to
 *  an allowed page (`Page.navigate`) stays possible. A command to a child session (an out-of-process frame) is
 *  checked against that frame's own document; a child session the gate never saw announced is refused. */
async function checkSite(tabId, method, params, sessionId) {
  const session = (await owners.get(tabId))?.session;
  const refuse = (what) => { gate.refused++; throw new GateError('ORIGIN_NOT_AUTHORISED', `${what}; nothing was sent`); };
  if (method === 'Page.navigate') {
    const why = sites.refusal(params?.url ?? '', session);
    if (why) refuse(`refused to navigate ${sessionId ? `a frame of tab ${tabId}` : `tab ${tabId}`}: ${why}`);
    if (!sessionId) return;
  }
  if (sessionId) {
    const child = children.get(`${tabId}/${sessionId}`);
    if (!child) refuse(`${method} to a frame of tab ${tabId} the extension's gate does not know (session ${sessionId})`);
    const why = sites.refusal(child.url, session);
    if (why) refuse(`${method} to a frame of tab ${tabId}: the frame shows ${why}`);
  }
  let tab;
  try { tab = await chrome.tabs.get(tabId); } catch { return; }
  for (const url of [tab.url, tab.pendingUrl]) {
    const why = url ? sites.refusal(url, session) : null;
    if (why) refuse(`tab ${tabId} shows ${why}`);
  }
}

async function cdpSend(a) {
  const target = a.target?.sessionId ? { tabId: a.target.tabId, sessionId: a.target.sessionId } : { tabId: a.target.tabId };
  // An answer to a paused request is judged by the request's own URL (the tab may still show the page it leaves).
  if (a.method === 'Fetch.continueRequest' || a.method === 'Fetch.failRequest') return fetchAnswer(target, a);
  // The scheme gate: a navigation's destination, and the page the tab shows, before any command reaches it.
  if (a.method === 'Page.navigate') refuseUrl(a.params?.url, 'navigating');
  await refuseTab(target.tabId, `${a.method} on`);
  await checkSite(target.tabId, a.method, a.params, target.sessionId);
  refuseUpload(target.tabId, a);
  // Every command passes the one gate: read-only methods at once, everything else under lease + fencing + Stop.
  return gate.command(target.tabId, a.method, a.fence, () => chrome.debugger.sendCommand(target, a.method, a.params || {}), a.forAction === true);
}

async function handle(cmd, a) {
  switch (cmd) {
    case 'ping': return { pong: true, instance: INSTANCE };
    case 'status': return status();
    case 'resync': return { ...(await status()), tabs: await Promise.all((await chrome.tabs.query({})).map(describe)) };
    case 'cdp.send': return cdpSend(a);
    case 'debugger.getTargets': {
      const all = await chrome.debugger.getTargets();
      for (const t of all) if (t.type === 'page' && t.tabId !== undefined) targetIds.set(t.tabId, t.id);
      return all.filter((t) => t.type === 'page' && t.tabId !== undefined);
    }
    case 'debugger.attach': {
      await owners.require(a.tabId, a.session, 'attach to');
      await refuseTab(a.tabId, 'attaching to');
      if (stoppedTabs.has(a.tabId)) {
        gate.refused++;
        throw new GateError('USER_STOPPED', `the user pressed Stop: the debugger does not attach to tab ${a.tabId} again until the agent resumes it (browser_claim with resume: true); nothing was sent`);
      }
      if (!attached.has(a.tabId)) {
        await refuseIfOtherDebugger(a.tabId);
        await chrome.debugger.attach({ tabId: a.tabId }, '1.3');
        attached.add(a.tabId);
      }
      return { tabId: a.tabId, targetId: await targetIdOf(a.tabId) };
    }
    case 'debugger.detach': {
      const was = attached.has(a.tabId);
      await detachQuiet(a.tabId);
      return { tabId: a.tabId, detached: was };
    }
    case 'tabs.create': {
      if (!a.session) throw new GateError('INVALID_PARAMS', 'tabs.create needs the agent session that will own the tab');
      refuseUrl(a.url || 'about:blank', 'opening a tab at this URL');
      refuseSite(a.url || 'about:blank', a.session, 'opening a tab at this URL');
      const tab = await chrome.tabs.create({ url: a.url || 'about:blank', active: a.active ?? false });
      await owners.set(tab.id, { session: a.session, kind: 'created' });
      if (a.group !== false) {
        // Remember the group browserd put the tab in: release takes it out of that group only.
        const groupedBy = await ensureGroup(a.session, tab.id, a.groupTitle);
        await owners.set(tab.id, { session: a.session, kind: 'created', groupedBy });
      }
      return describe(await chrome.tabs.get(tab.id));
    }
    case 'tabs.remove': {
      const rec = await owners.require(a.tabId, a.session, 'close');
      if (rec.kind !== 'created') throw new GateError('NOT_OWNER', `refused to close tab ${a.tabId}: the session claimed it from the user; release it instead`);
      await detachQuiet(a.tabId);
      await chrome.tabs.remove(a.tabId);
      return { removed: a.tabId };
    }
    case 'tabs.get': return describe(await chrome.tabs.get(a.tabId));
    case 'tabs.query': return Promise.all((await chrome.tabs.query(a.query || {})).map(describe));
    case 'tabs.update': {
      const rec = await owners.require(a.tabId, a.session, 'update');
      const props = {};
      if (a.active !== undefined) props.active = !!a.active;
      if (a.url !== undefined) {
        refuseUrl(a.url, 'navigating');
        refuseSite(a.url, rec.session, `navigating tab ${a.tabId}`);
        props.url = a.url;
      }
      return describe(await chrome.tabs.update(a.tabId, props));
    }
    case 'own.claim': {
      const rec = await owners.get(a.tabId);
      if (rec && rec.session !== a.session) throw new GateError('NOT_OWNER', `tab ${a.tabId} is owned by another agent session`);
      await refuseTab(a.tabId, 'claiming', a.session);
      if (!rec) await owners.set(a.tabId, { session: a.session, kind: 'claimed' });
      return owners.get(a.tabId);
    }
    case 'own.release': {
      const rec = await owners.require(a.tabId, a.session, 'release');
      await detachQuiet(a.tabId);
      gate.forgetTab(a.tabId);
      unstop(a.tabId);
      await ungroupQuiet(a.tabId, rec.groupedBy);
      await owners.forget(a.tabId);
      return { released: a.tabId };
    }
    case 'own.list': return owners.all();
    case 'lease.grant': {
      await owners.require(a.tabId, a.session, 'lease');
      const granted = gate.grant(a.tabId, a.session, a.token, a.epoch);
      // A new lease is the resume: the debugger may attach to the tab again.
      unstop(a.tabId);
      return granted;
    }
    case 'lease.revoke': return gate.revoke(a.tabId);
    case 'policy.set': {
      const counts = sites.set(a);
      chrome.storage.session.set({ sitePolicy: a }).catch(() => {});
      return counts;
    }
    case 'stop': return stopNow('broker', a.reason);
    case 'cancel': return { droppedInputs: gate.cancel(a.tabId) };
    case 'schemes.set': return { ...schemes.set(a), uploadRoots: uploads.set(a.uploadRoots) };
    case 'schemes.check': return { url: a.url, refusal: schemes.refusal(a.url) };
    default: throw new GateError('METHOD_NOT_FOUND', `unknown extension command ${cmd}; update the extension and browserd together`);
  }
}

async function onHostMessage(msg) {
  if (msg?.type === 'chunk') {
    let whole;
    try { whole = reassembler.push(msg); } catch (e) { conn.lastError = String(e.message); return; }
    if (whole) onHostMessage(whole);
    return;
  }
  if (msg?.type === 'welcome') {
    conn.state = 'paired';
    conn.broker = msg.broker ?? null;
    conn.backoffMs = 250;
    conn.connectedAt = Date.now();
    return;
  }
  if (msg?.type === 'hostError') { conn.lastError = msg.message; return; }
  if (msg?.type !== 'call') return;
  try {
    send({ type: 'reply', id: msg.id, ok: true, result: (await handle(msg.cmd, msg.args || {})) ?? null });
  } catch (e) {
    send({ type: 'reply', id: msg.id, ok: false, error: errorOf(e) });
  }
}

// Reachable only from this worker's own global scope (DevTools on the service worker, the end-to-end tests and the
// relay benchmark); no web page and no other extension can reach it. Headless Chromium cannot press a keyboard
// shortcut, so the tests call the very listener registered for the command.
globalThis.browserd = { onCommand, status, instance: INSTANCE, cdpSend, command: handle };

// ---- connection with backoff --------------------------------------------------------------------------------------

function connect() {
  conn.timer = null;
  conn.state = 'connecting';
  let port;
  try {
    port = chrome.runtime.connectNative(HOST_NAME);
  } catch (e) {
    conn.lastError = String(e?.message || e);
    scheduleReconnect();
    return;
  }
  conn.port = port;
  port.onMessage.addListener(onHostMessage);
  port.onDisconnect.addListener(() => {
    conn.lastError = chrome.runtime.lastError?.message ?? conn.lastError;
    if (conn.port === port) conn.port = null;
    conn.state = 'disconnected';
    conn.broker = null;
    scheduleReconnect();
  });
  send({
    type: 'hello',
    instance: INSTANCE,
    seq,
    controlEpoch: gate.epoch,
    recoveredDetaches,
    userAgent: navigator.userAgent,
    params: {
      role: 'extension',
      protocol: { min: 1, max: 1 },
      components: { extension: VERSION },
      capabilities: CAPABILITIES,
    },
  });
}

function scheduleReconnect() {
  if (conn.timer) return;
  const wait = conn.backoffMs;
  conn.backoffMs = Math.min(conn.backoffMs * 2, 30000);
  conn.timer = setTimeout(connect, wait);
}

// A new worker instance starts with no lease and a bumped control epoch, so no fence from before the restart passes.
// chrome.debugger attachments belong to the extension, not to a worker instance: detach the ones a previous instance
// left behind (detach only succeeds for this extension's own attachments), so nothing stays attached without a lease.
(async () => {
  const { controlEpoch = 0, stoppedTabs: kept = [] } = await chrome.storage.session.get(['controlEpoch', 'stoppedTabs']);
  for (const tabId of kept) stoppedTabs.add(tabId);
  gate.epoch = controlEpoch + 1;
  await chrome.storage.session.set({ controlEpoch: gate.epoch });
  try {
    const stale = (await chrome.debugger.getTargets()).filter((t) => t.attached && t.tabId !== undefined);
    const results = await Promise.allSettled(stale.map((t) => chrome.debugger.detach({ tabId: t.tabId })));
    recoveredDetaches = results.filter((r) => r.status === 'fulfilled').length;
  } catch (e) { /* getTargets failed: nothing to recover */ }
  connect();
})();
