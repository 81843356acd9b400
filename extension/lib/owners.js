// Ownership records in chrome.storage.session (they survive a service-worker restart, not a browser restart), checked
// before every close, release, attach or navigation. A tab without a record belongs to the user.

import { GateError } from './gate.js';

const KEY = (tabId) => `own:${tabId}`;

export class Owners {
  constructor(area) {
    this.area = area;
    /** tabId -> the agent session that owns it, as last read or written here (a hint for `peek`, never proof that a
     *  tab is the user's). */
    this.sessions = new Map();
  }

  async get(tabId) {
    const key = KEY(tabId);
    const got = await this.area.get(key);
    const rec = got[key] ?? null;
    if (rec) this.sessions.set(tabId, rec.session);
    else this.sessions.delete(tabId);
    return rec;
  }

  /** The owning session of `tabId` known without a storage read, or undefined (then ask `get`). */
  peek(tabId) {
    return this.sessions.get(tabId);
  }

  async set(tabId, record) {
    this.sessions.set(tabId, record.session);
    await this.area.set({ [KEY(tabId)]: { ...record, tabId, since: Date.now() } });
  }

  async forget(tabId) {
    const rec = await this.get(tabId);
    this.sessions.delete(tabId);
    await this.area.remove(KEY(tabId));
    return rec;
  }

  async all() {
    const everything = await this.area.get(null);
    const recs = Object.entries(everything).filter(([k]) => k.startsWith('own:')).map(([, v]) => v);
    for (const rec of recs) this.sessions.set(rec.tabId, rec.session);
    return recs;
  }

  /** Throws NOT_OWNER unless `session` owns `tabId` (created or claimed). */
  async require(tabId, session, what) {
    const rec = await this.get(tabId);
    if (!session) throw new GateError('INVALID_PARAMS', `${what} tab ${tabId} needs the agent session that owns it`);
    if (!rec) throw new GateError('NOT_OWNER', `refused to ${what} tab ${tabId}: it belongs to the user, not to session ${session}; claim it first`);
    if (rec.session !== session) throw new GateError('NOT_OWNER', `refused to ${what} tab ${tabId}: it is owned by another agent session`);
    return rec;
  }
}
