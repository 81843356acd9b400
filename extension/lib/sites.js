// The extension's own copy of the site policy (the last-hop gate's origin check): the broker's `[policy]` allow and
// deny lists and the real-profile default deny list, sent by the broker (`policy.set`); until it is, the built-in
// real-profile deny list applies, so a fresh service worker fails closed on the sites that matter most. Pattern syntax
// as in the broker (crates/browserd-broker/src/policy/sites.rs): `[scheme://]host[:port]`, `*.domain`, `*`.

/** The real-profile default deny list (kept equal to the broker's `REAL_PROFILE_DENY`). */
export const REAL_PROFILE_DENY = [
  '*.1password.com', '*.1password.eu', '*.lastpass.com', '*.bitwarden.com', '*.bitwarden.eu', '*.dashlane.com',
  '*.keepersecurity.com', '*.nordpass.com', 'pass.proton.me', 'passwords.google.com',
  '*.paypal.com', '*.chase.com', '*.bankofamerica.com', '*.wellsfargo.com', '*.citi.com', '*.capitalone.com',
  '*.americanexpress.com', '*.usbank.com', '*.hsbc.com', '*.barclays.co.uk', '*.revolut.com', '*.wise.com',
  'admin.google.com', 'admin.microsoft.com', 'entra.microsoft.com', 'portal.azure.com', '*.okta.com', '*.onelogin.com',
  'console.aws.amazon.com', 'signin.aws.amazon.com', 'console.cloud.google.com', 'admin.atlassian.com',
];

/** `{scheme, host, port}` of an http(s) URL, else null (not judged by the site policy). */
export function originOf(url) {
  let u;
  try { u = new URL(url); } catch { return null; }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  const scheme = u.protocol.slice(0, -1);
  const port = u.port ? Number(u.port) : (scheme === 'http' ? 80 : 443);
  return { scheme, host: u.hostname.toLowerCase(), port, text: `${scheme}://${u.host.toLowerCase()}` };
}

/** A pattern as a predicate over origins; throws on a bad pattern. */
export function parsePattern(text) {
  let rest = String(text).trim();
  let scheme = null;
  const sep = rest.indexOf('://');
  if (sep >= 0) {
    scheme = rest.slice(0, sep).toLowerCase();
    rest = rest.slice(sep + 3);
    if (!['http', 'https', '*'].includes(scheme)) throw new Error(`bad scheme in ${text}`);
    if (scheme === '*') scheme = null;
  }
  if (rest.endsWith('/')) rest = rest.slice(0, -1);
  let host = rest;
  let port = null;
  const m = rest.match(/^(\[[^\]]+\]|[^:]*)(?::(\*|\d+))?$/);
  if (!m) throw new Error(`bad origin pattern ${text}`);
  host = m[1].toLowerCase();
  if (m[2] && m[2] !== '*') port = Number(m[2]);
  return { text, test(o) {
    if (scheme && scheme !== o.scheme) return false;
    if (port !== null && port !== o.port) return false;
    if (host === '*') return true;
    if (host.startsWith('*.')) { const d = host.slice(2); return o.host === d || o.host.endsWith('.' + d); }
    return o.host === host;
  }, wildcard: host === '*' };
}

export class SitePolicy {
  constructor() {
    this.set({ allow: [], deny: [], realProfileDeny: REAL_PROFILE_DENY, sessions: {} });
    this.fromBroker = false;
  }

  /** The broker's policy: `{allow, deny, realProfileDeny, sessions}` (pattern lists; `sessions` maps an agent
   *  session to its own `{allowed, blocked}` lists, from `browserd mcp --allowed-origins/--blocked-origins`). */
  set(p) {
    const allow = (p.allow || []).map(parsePattern);
    const deny = (p.deny || []).map(parsePattern);
    const realProfileDeny = (p.realProfileDeny || []).map(parsePattern);
    const sessions = new Map();
    for (const [session, lists] of Object.entries(p.sessions || {})) {
      sessions.set(session, { allowed: (lists.allowed || []).map(parsePattern), blocked: (lists.blocked || []).map(parsePattern) });
    }
    // Parsed in full before anything changes: a bad pattern leaves the policy as it was.
    Object.assign(this, { allow, deny, realProfileDeny, sessions, fromBroker: true });
    return { allow: allow.length, deny: deny.length, realProfileDeny: realProfileDeny.length, sessions: sessions.size };
  }

  /** What the gate checks with (for status). */
  snapshot() {
    const texts = (ps) => ps.map((p) => p.text);
    const sessions = Object.fromEntries([...this.sessions].map(([s, l]) => [s, { allowed: texts(l.allowed), blocked: texts(l.blocked) }]));
    return { fromBroker: this.fromBroker, allow: texts(this.allow), deny: texts(this.deny), realProfileDeny: this.realProfileDeny.length, sessions };
  }

  /** Why `url` may not be shown or acted on by agent `session` (the tab's owner; its own lists apply), or null. The
   *  order is the broker's (`SitePolicy::decide`): the session's blocked list, the deny list, the allow list, the
   *  session's allowed list, then the real-profile list unless an allow list names the origin (not by `*`). */
  refusal(url, session) {
    const o = originOf(url);
    if (!o) return null;
    const own = session !== undefined && session !== null ? this.sessions.get(session) : undefined;
    const b = own?.blocked.find((p) => p.test(o));
    if (b) return `${o.text} is blocked for this agent session (--blocked-origins ${b.text})`;
    const d = this.deny.find((p) => p.test(o));
    if (d) return `${o.text} is denied by the browserd policy (${d.text})`;
    const a = this.allow.find((p) => p.test(o));
    if (this.allow.length && !a) return `${o.text} is not in the browserd policy's allow list`;
    const sa = own?.allowed.find((p) => p.test(o));
    if (own?.allowed.length && !sa) return `${o.text} is not in this agent session's --allowed-origins`;
    const named = (p) => p && !p.wildcard;
    const r = this.realProfileDeny.find((p) => p.test(o));
    if (r && !named(a) && !named(sa)) return `${o.text} is on browserd's real-profile deny list (${r.text})`;
    return null;
  }
}
