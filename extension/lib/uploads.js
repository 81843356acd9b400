// The last hop of the upload policy (issue 16 item 4): the extension's own copy of the directories whose files may be
// set on a file input (`[files] upload_roots`, plus browserd's private staging directory for a file the user approved
// for one call), sent by the broker with `schemes.set` (`uploadRoots`, symbolic links resolved). Until it is, no
// upload passes. The service worker asks `refusal(files)` before `DOM.setFileInputFiles` reaches a page.

export class Uploads {
  constructor() {
    /** Absolute directory paths without a trailing slash. */
    this.roots = [];
  }

  /** Replaces the roots with the broker's copy; anything but absolute paths is left out. */
  set(roots) {
    const list = Array.isArray(roots) ? roots : [];
    this.roots = list.filter((r) => typeof r === 'string' && r.startsWith('/')).map((r) => r.replace(/\/+$/, '') || '/');
    return this.roots;
  }

  /** `null` when every path of `files` lies inside a root, else the reason (naming the first path refused). */
  refusal(files) {
    if (!Array.isArray(files)) return 'DOM.setFileInputFiles needs a list of file paths';
    for (const path of files) {
      if (typeof path !== 'string' || !path.startsWith('/')) return `${JSON.stringify(path)} is not an absolute path`;
      if (path.split('/').some((part) => part === '..' || part === '.')) return `${path} has a \`.\` or \`..\` part`;
      const inside = this.roots.some((root) => root === '/' || path.startsWith(`${root}/`));
      if (!inside) return `${path} is outside the directories the user allowed for uploads (\`[files] upload_roots\`)`;
    }
    return null;
  }
}
