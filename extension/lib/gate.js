// The last-hop gate: write leases with fencing tokens, the control epoch and the Stop gate, checked before every
// page-mutating DevTools command is dispatched. `Gate.command` is the one entry point: a method on the read-only
// allow list (`READ_ONLY`) passes; every other method (navigation, reload, history, file input, dialogs, focus,
// `Input.*`, a `Runtime.*` call made for an action) must carry the tab's current lease token under the current
// control epoch and the gate must be open. Everything lives in memory on purpose: a restarted service worker has no
// lease.

/** DevTools methods that only read the page (or set up reading it); everything else is gated. */
export const READ_ONLY = new Set([
  'Accessibility.getFullAXTree', 'Accessibility.getPartialAXTree', 'Accessibility.queryAXTree',
  'DOM.describeNode', 'DOM.getBoxModel', 'DOM.getContentQuads', 'DOM.getDocument', 'DOM.getFrameOwner',
  'DOM.getNodeForLocation', 'DOM.querySelector', 'DOM.querySelectorAll', 'DOM.requestChildNodes', 'DOM.resolveNode',
  // Scrolls the viewport to an element for a screenshot; the page's content and state do not change.
  'DOM.scrollIntoViewIfNeeded',
  'DOMSnapshot.captureSnapshot',
  'Page.captureScreenshot', 'Page.createIsolatedWorld', 'Page.getFrameTree', 'Page.getLayoutMetrics',
  'Page.getNavigationHistory', 'Page.setLifecycleEventsEnabled',
  // Installs browserd's own observers (dialogs, console) into later documents of an attached tab.
  'Page.addScriptToEvaluateOnNewDocument',
  // Reading scripts (observation). A Runtime call made for an action is marked `forAction` and is gated.
  'Runtime.evaluate', 'Runtime.callFunctionOn', 'Runtime.getProperties', 'Runtime.releaseObject',
  'Runtime.releaseObjectGroup', 'Runtime.runIfWaitingForDebugger',
  'Target.getTargetInfo', 'Target.getTargets', 'Target.setAutoAttach', 'Target.setDiscoverTargets',
]);

/** Whether `method` (with `forAction` when a Runtime call is made for an action) only reads. */
export function readsOnly(method, forAction) {
  if (typeof method !== 'string') return false;
  if (forAction) return false;
  if (method.endsWith('.enable') || method.endsWith('.disable')) return !method.startsWith('Input.');
  return READ_ONLY.has(method);
}

/** An error the broker can act on: `code` is one of browserd's error codes. */
export class GateError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

export class Gate {
  constructor() {
    /** Bumped by every Stop and every service-worker start (persisted by the caller). */
    this.epoch = 0;
    /** Closed by Stop; reopened only by a new lease granted for the current epoch. */
    this.stopped = false;
    /** tabId -> { session, token } */
    this.leases = new Map();
    /** tabId -> highest token ever granted (fencing tokens only go up). */
    this.highest = new Map();
    /** tabId -> { session, token, epoch }: a lease whose debugger attachment went away (idle detach); the same lease may
     *  be granted again on the next attachment, in the same control epoch only. */
    this.parked = new Map();
    /** tabId -> promise tail of the per-tab input queue. */
    this.tails = new Map();
    /** Inputs queued but not yet dispatched: { reject } */
    this.waiting = new Set();
    this.dispatched = 0;
    this.refused = 0;
  }

  grant(tabId, session, token, epoch) {
    if (epoch !== this.epoch) {
      throw new GateError('LEASE_REVOKED', `lease for tab ${tabId} names control epoch ${epoch}, current is ${this.epoch}; read status and request a new lease`);
    }
    const parked = this.parked.get(tabId);
    const again = parked !== undefined && parked.session === session && parked.token === token && parked.epoch === epoch;
    if (!again && (!Number.isSafeInteger(token) || token <= (this.highest.get(tabId) ?? 0))) {
      throw new GateError('LEASE_REVOKED', `fencing token ${token} for tab ${tabId} is not above ${this.highest.get(tabId) ?? 0}; fencing tokens must increase`);
    }
    this.parked.delete(tabId);
    this.highest.set(tabId, token);
    this.leases.set(tabId, { session, token });
    this.stopped = false;
    return { tabId, session, token, epoch: this.epoch };
  }

  revoke(tabId) {
    this.parked.delete(tabId);
    const had = this.leases.delete(tabId);
    return { tabId, revoked: had };
  }

  /** The tab's debugger attachment went away: its lease stops admitting input, and may be granted again as it was. */
  dropTab(tabId) {
    const lease = this.leases.get(tabId);
    if (lease) this.parked.set(tabId, { ...lease, epoch: this.epoch });
    this.leases.delete(tabId);
  }

  /** The tab is gone or no longer the agent's: nothing of its lease may come back. */
  forgetTab(tabId) {
    this.parked.delete(tabId);
    this.leases.delete(tabId);
  }

  /** Throws a GateError unless input may go to `tabId` under `fence` right now. */
  check(tabId, fence) {
    if (this.stopped) throw new GateError('USER_STOPPED', 'the user pressed Stop; a new lease and a full observation are needed');
    if (!fence || typeof fence.token !== 'number') throw new GateError('LEASE_REVOKED', `input to tab ${tabId} carries no fencing token; acquire a write lease first`);
    if (fence.epoch !== this.epoch) throw new GateError('LEASE_REVOKED', `input names control epoch ${fence.epoch}, current is ${this.epoch}; the lease is void, acquire a new one`);
    const lease = this.leases.get(tabId);
    if (!lease) throw new GateError('LEASE_REVOKED', `tab ${tabId} has no write lease; acquire one first`);
    if (lease.token !== fence.token) throw new GateError('LEASE_REVOKED', `stale fencing token ${fence.token} for tab ${tabId} (current ${lease.token}); the lease moved on`);
  }

  /**
   * The one entry point for a DevTools command to a tab: read-only methods run at once; every other method runs as
   * an input (lease + fencing + Stop checked when queued and again right before dispatch, in per-tab order).
   */
  command(tabId, method, fence, dispatch, forAction = false) {
    if (readsOnly(method, forAction)) return dispatch();
    return this.runInput(tabId, fence, dispatch);
  }

  /** Runs `dispatch` for one input in per-tab order, checking the gate when queued and again right before dispatch. */
  runInput(tabId, fence, dispatch) {
    try { this.check(tabId, fence); } catch (e) { this.refused++; return Promise.reject(e); }
    const prev = this.tails.get(tabId) ?? Promise.resolve();
    let entry;
    const run = new Promise((resolve, reject) => {
      entry = { reject, tabId };
      this.waiting.add(entry);
      prev.catch(() => {}).then(async () => {
        if (!this.waiting.delete(entry)) return; // dropped by Stop
        try { this.check(tabId, fence); } catch (e) { this.refused++; reject(e); return; }
        this.dispatched++;
        const epoch = this.epoch;
        try {
          resolve(await dispatch());
        } catch (e) {
          // Handed to the browser before Stop, failed while Stop detached: it may or may not have reached the page.
          if (this.epoch !== epoch) reject(new GateError('DISPATCH_UNKNOWN', `Stop arrived while this input was being dispatched; it may have reached the page (${e?.message || e})`));
          else reject(e);
        }
      });
    });
    this.tails.set(tabId, run.catch(() => {}));
    return run;
  }

  /** Stop: close the gate, void every lease, bump the epoch, drop undispatched input. Synchronous. */
  stop() {
    this.stopped = true;
    this.epoch += 1;
    this.leases.clear();
    this.parked.clear();
    const dropped = this.waiting.size;
    for (const entry of this.waiting) entry.reject(new GateError('USER_STOPPED', 'the user pressed Stop before this input was dispatched'));
    this.waiting.clear();
    return dropped;
  }

  /** Cancel: drop the undispatched input of one tab (or all tabs); the gate stays open and leases stay. */
  cancel(tabId) {
    let dropped = 0;
    for (const entry of [...this.waiting]) {
      if (tabId === undefined || tabId === null || entry.tabId === tabId) {
        this.waiting.delete(entry);
        entry.reject(new GateError('CANCELLED', 'cancelled by browserd before this input was dispatched'));
        dropped++;
      }
    }
    return dropped;
  }

  snapshot() {
    return {
      epoch: this.epoch,
      stopped: this.stopped,
      leases: [...this.leases].map(([tabId, l]) => ({ tabId, session: l.session, token: l.token })),
      dispatched: this.dispatched,
      refused: this.refused,
    };
  }
}
