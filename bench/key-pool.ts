interface PoolEntry {
  secret: string;
  used: number;
  windowStart: number;
}

/** How a pool hands out keys. */
export interface KeyPoolOptions {
  /** Requests per key and window: below the endpoint limit of the spec (60 per minute and key). */
  perWindow: number;
  /** How long before a used key may be used again; a little over the limiter's minute. 0: at once. */
  windowMs: number;
  /** Called, without waiting, with the key that comes next, while the current one still has room. */
  warm?: (secret: string) => void;
}

/**
 * API keys for a load run, each used at most `perWindow` times per window so that the endpoint
 * limiter (a fixed 60 requests per minute and key for chat completions, spec "Rate limits") never
 * refuses. Keys are used one after the other, as a single busy key would be; the next key is
 * warmed halfway through the current one so that its first request does not wait for the key
 * lookup in the database (Zona caches keys for a few seconds).
 */
export class KeyPool {
  private readonly entries: PoolEntry[] = [];
  private readonly options: KeyPoolOptions;
  private index = 0;
  /** Times no key had room and one was used past its budget (those requests may see 429). */
  overdrawn = 0;

  constructor(options: KeyPoolOptions) {
    this.options = options;
  }

  get size(): number {
    return this.entries.length;
  }

  add(secrets: string[]): void {
    for (const secret of secrets) this.entries.push({ secret, used: 0, windowStart: 0 });
  }

  /** Keys needed to sustain `perSecond` requests for a whole window, with a margin. */
  keysFor(perSecond: number): number {
    const window = Math.max(this.options.windowMs, 1_000) / 1000;
    return Math.ceil(((perSecond * window) / this.options.perWindow) * 1.3) + 2;
  }

  /** One request's key. */
  next(): string {
    return this.take(1);
  }

  /** A key with room for `uses` requests (a round of concurrent streams shares one key). */
  take(uses: number): string {
    const now = performance.now();
    let entry = this.current();
    if (!this.hasRoom(entry, uses, now)) entry = this.advance(uses, now);
    if (entry.used === 0) entry.windowStart = now;
    const before = entry.used;
    entry.used += uses;
    const half = this.options.perWindow / 2;
    if (this.options.warm && before < half && entry.used >= half) {
      const upcoming = this.entries[(this.index + 1) % this.entries.length];
      if (upcoming && upcoming !== entry) this.options.warm(upcoming.secret);
    }
    return entry.secret;
  }

  private current(): PoolEntry {
    const entry = this.entries[this.index];
    if (!entry) throw new Error("the key pool is empty");
    return entry;
  }

  private hasRoom(entry: PoolEntry, uses: number, now: number): boolean {
    if (entry.used > 0 && now - entry.windowStart >= this.options.windowMs) {
      entry.used = 0;
      entry.windowStart = 0;
    }
    return entry.used + uses <= this.options.perWindow;
  }

  private advance(uses: number, now: number): PoolEntry {
    for (let step = 1; step <= this.entries.length; step++) {
      const index = (this.index + step) % this.entries.length;
      const entry = this.entries[index];
      if (entry && this.hasRoom(entry, uses, now)) {
        this.index = index;
        return entry;
      }
    }
    this.overdrawn += 1;
    return this.current();
  }
}
