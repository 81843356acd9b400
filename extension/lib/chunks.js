// Reassembles host -> extension messages that the native host split into chunks (each below Chromium's 1 MiB limit).

export class Reassembler {
  constructor(totalCap) {
    this.totalCap = totalCap;
    this.parts = new Map(); // id -> { count, got, pieces: [], bytes }
  }

  /** Feeds one `{type:'chunk', id, index, count, data}` frame; returns the whole message once complete, else null. */
  push(frame) {
    let entry = this.parts.get(frame.id);
    if (!entry) {
      entry = { count: frame.count, got: 0, pieces: new Array(frame.count), bytes: 0 };
      this.parts.set(frame.id, entry);
    }
    if (frame.index >= entry.count || entry.pieces[frame.index]) throw new Error(`bad chunk ${frame.index}/${entry.count} of message ${frame.id}`);
    const raw = Uint8Array.from(atob(frame.data), (c) => c.charCodeAt(0));
    entry.bytes += raw.length;
    if (entry.bytes > this.totalCap) {
      this.parts.delete(frame.id);
      throw new Error(`chunked message ${frame.id} exceeds ${this.totalCap} bytes`);
    }
    entry.pieces[frame.index] = raw;
    entry.got += 1;
    if (entry.got < entry.count) return null;
    this.parts.delete(frame.id);
    const all = new Uint8Array(entry.bytes);
    let at = 0;
    for (const p of entry.pieces) { all.set(p, at); at += p.length; }
    return JSON.parse(new TextDecoder().decode(all));
  }
}
