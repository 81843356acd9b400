// The last hop of the scheme policy (issue 16 item 1): the extension's own copy of which URLs a tab the agent
// controls may show. Only http:, https: and about:blank pass by default; file: only inside a directory the broker
// sent (`schemes.set`, from `[files] file_url_roots`), and extra schemes the user allowed (`[schemes] allow`);
// javascript: never. The service worker asks `refusal(url)` before a navigation, a tab created or updated with a URL,
// a claim, a debugger attach, and every DevTools command to a tab (against the URL the tab shows or is about to).

/** Schemes that can never be allowed, whatever the broker sends. */
const NEVER = new Set(['javascript:', 'file:']);

export class Schemes {
  constructor() {
    /** Absolute directory paths whose file: URLs pass, without a trailing slash. */
    this.fileRoots = [];
    /** Extra schemes allowed, with the colon (`data:`). */
    this.extra = [];
  }

  /** Replaces the policy with the broker's copy: `{ fileRoots: [path], extra: [scheme] }`. */
  set(policy) {
    const roots = Array.isArray(policy?.fileRoots) ? policy.fileRoots : [];
    const extra = Array.isArray(policy?.extra) ? policy.extra : [];
    this.fileRoots = roots.filter((r) => typeof r === 'string' && r.startsWith('/')).map((r) => r.replace(/\/+$/, '') || '/');
    this.extra = extra.filter((s) => typeof s === 'string').map((s) => `${s.toLowerCase().replace(/:$/, '')}:`).filter((s) => !NEVER.has(s));
    return { fileRoots: this.fileRoots, extra: this.extra };
  }

  /** `null` when a tab showing `url` may be read and acted on: `refusal`, but the browser's error page for a failed load
   *  (`chrome-error://chromewebdata/`, showing the failed URL) may be shown, though never navigated to. */
  shownRefusal(url) {
    if (String(url).startsWith('chrome-error:')) return null;
    return this.refusal(url);
  }

  /** `null` when `url` may be navigated to or shown, else the reason (a sentence naming the scheme). */
  refusal(url) {
    let parsed;
    try { parsed = new URL(String(url)); } catch (e) { return 'a URL without a scheme is refused (only http:, https: and about:blank)'; }
    const scheme = parsed.protocol;
    if (scheme === 'http:' || scheme === 'https:') return null;
    if (scheme === 'about:' && parsed.pathname === 'blank') return null;
    if (scheme === 'javascript:') return '`javascript:` URLs are refused: they run script in the page';
    if (this.extra.includes(scheme)) return null;
    if (scheme === 'file:') {
      if (parsed.host !== '' && parsed.host !== 'localhost') return '`file:` URLs naming another host are refused';
      let path;
      try { path = decodeURIComponent(parsed.pathname); } catch (e) { return '`file:` URL with a malformed path is refused'; }
      if (path.split('/').includes('..')) return '`file:` URLs with `..` are refused';
      const inside = this.fileRoots.some((root) => root === '/' || path === root || path.startsWith(`${root}/`));
      return inside ? null : '`file:` URLs are refused outside the directories the user allowed (`[files] file_url_roots`)';
    }
    return `\`${scheme}\` URLs are refused (only http:, https: and about:blank)`;
  }
}
