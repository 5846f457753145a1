// The event queue: numbered events kept in localStorage until the server acknowledges them,
// sent in batches with retry (exponential back-off, the server's Retry-After on 429). An event
// the server refuses (422: the events before it are stored; any other 4xx: the whole batch) is
// never sent again: it and the events after it are dropped and onRefused tells the page.

export class EventQueue {
  constructor(token, onStatus) {
    this.token = token;
    this.key = `nonolab:${token}:pending`;
    this.onStatus = onStatus || (() => {});
    this.pending = JSON.parse(localStorage.getItem(this.key) || "[]");
    this.nextSeq = 1 + this.pending.reduce((m, e) => Math.max(m, e.seq), 0);
    this.waiters = new Map();
    this.sending = null;
    this.timer = null;
    this.backoff = 500;
    this.onRefused = () => {};
  }
  save() { localStorage.setItem(this.key, JSON.stringify(this.pending)); }
  setAcked(last) {
    this.pending = this.pending.filter((e) => e.seq > last);
    // with nothing pending, the next number follows the server's last (after a refusal the
    // dropped numbers are used again)
    this.nextSeq = this.pending.length ? Math.max(this.nextSeq, last + 1) : last + 1;
    this.save();
  }
  // drop every pending event (the server refused one of them) and tell the page
  refuse(info) {
    this.pending = [];
    this.save();
    for (const w of this.waiters.values()) w({ refused: true });
    this.waiters.clear();
    this.onRefused(info);
  }
  push(ev, t) {
    const e = { ...ev, seq: this.nextSeq++, t };
    this.pending.push(e);
    this.save();
    this.schedule(ev.kind === "move" || ev.kind === "drag" ? 250 : 0);
    return e.seq;
  }
  // push an event and resolve with the server's answer to it (once acknowledged)
  request(ev, t) {
    const seq = this.push(ev, t);
    return new Promise((resolve) => this.waiters.set(seq, resolve));
  }
  schedule(ms) {
    if (this.timer) return;
    this.timer = setTimeout(() => { this.timer = null; this.flush(); }, ms);
  }
  // resolve when every pending event is acknowledged
  async drain() {
    while (this.pending.length) {
      await this.flush();
      if (this.pending.length) await new Promise((r) => setTimeout(r, 200));
    }
  }
  async flush() {
    if (this.sending) return this.sending;
    if (!this.pending.length) return;
    this.sending = this._send().finally(() => { this.sending = null; });
    return this.sending;
  }
  async _send() {
    const batch = this.pending.slice(0, 100);
    let resp;
    try {
      this.onStatus("saving");
      resp = await fetch(`/api/s/${this.token}/events`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ events: batch }),
        cache: "no-store",
      });
    } catch (_) {
      return this.retry(this.backoff);
    }
    let body = {};
    try { body = await resp.json(); } catch (_) { /* not JSON */ }
    if (resp.status === 200 || resp.status === 422) {
      this.backoff = 500;
      this.setAcked(body.acked);
      for (const [seq, res] of Object.entries(body.results || {})) {
        const w = this.waiters.get(Number(seq));
        if (w) { this.waiters.delete(Number(seq)); w(res); }
      }
      if (resp.status === 422) {
        // the server refused an event: drop it and what follows (never resent)
        this.nextSeq = body.acked + 1;
        this.refuse({ seq: body.refused?.seq ?? null, error: body.error || "refused" });
        return;
      }
      this.onStatus(this.pending.length ? "saving" : "saved");
      if (this.pending.length) this.schedule(0);
      return;
    }
    if (resp.status === 429) return this.retry(1000 * (body.retry_after_s || 1));
    if (resp.status >= 400 && resp.status < 500 && resp.status !== 408) {
      // the server will never take this batch: drop it rather than resend it forever
      this.backoff = 500;
      return this.refuse({ seq: null, error: body.error || `HTTP ${resp.status}` });
    }
    return this.retry(this.backoff);
  }
  retry(ms) {
    this.onStatus("offline");
    this.backoff = Math.min(this.backoff * 2, 5000);
    this.schedule(ms);
  }
}
