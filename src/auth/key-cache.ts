import type { KeyWithAccount } from "../store/repositories/api-keys.ts";

/**
 * Keys found recently, by hash, so that a key's every request does not read the database. An
 * entry lives a few seconds: a key revoked or an account disabled on another instance stops
 * working within that time; on this instance the change clears the cache at once.
 */
export class KeyCache {
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly entries = new Map<string, { found: KeyWithAccount; until: number }>();

  constructor(ttlMs = 5_000, maxEntries = 10_000) {
    this.ttlMs = ttlMs;
    this.maxEntries = maxEntries;
  }

  get(hash: string, now: number): KeyWithAccount | undefined {
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    if (entry.until <= now) {
      this.entries.delete(hash);
      return undefined;
    }
    return entry.found;
  }

  set(hash: string, found: KeyWithAccount, now: number): void {
    if (this.entries.size >= this.maxEntries) {
      // Maps iterate in insertion order: drop the oldest.
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(hash, { found, until: now + this.ttlMs });
  }

  clear(): void {
    this.entries.clear();
  }
}
