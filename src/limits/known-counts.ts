import type { CounterSpec, TakeResult } from "./counter-store.ts";

// A process seeing more live counters than this forgets them all (and takes at once until it knows again).
const MAX_KNOWN = 50_000;

/**
 * The counts this process last saw of each counter, to tell whether a request may be counted
 * later (with its money hold) rather than before its body is read: only when every one of its
 * counters was last seen below half its limit, so a client at or near its limit is still refused
 * before its body is read. Other instances' counts make this stale; it never decides a refusal.
 */
export class KnownCounts {
  private readonly counts = new Map<string, { count: number; resetAt: number }>();

  /** Whether every counter was last seen, in its live window, below half its limit. */
  farFromLimits(counters: CounterSpec[], now: number): boolean {
    for (const spec of counters) {
      const seen = this.counts.get(spec.key);
      if (!seen) return false;
      const count = seen.resetAt <= now ? 0 : seen.count;
      if (count * 2 >= spec.limit) return false;
    }
    return true;
  }

  /** Remembers what a take decided. */
  saw(counters: CounterSpec[], result: TakeResult): void {
    if (this.counts.size > MAX_KNOWN) this.counts.clear();
    if (!result.allowed) {
      const refused = counters[result.refused];
      if (refused) this.counts.set(refused.key, { count: refused.limit, resetAt: result.resetAt });
      return;
    }
    counters.forEach((spec, index) => {
      const state = result.counters[index];
      if (state) this.counts.set(spec.key, state);
    });
  }
}
