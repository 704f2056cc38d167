import {
  type CounterSpec,
  type CounterState,
  type CounterStore,
  clockWindowKey,
  clockWindowStart,
  type TakeResult,
} from "./counter-store.ts";

// Ended windows are dropped at most this often (app clock), so memory follows live counters only.
const SWEEP_EVERY_MS = 60_000;

/** Counters in the process: exact for one instance; the embedded default and Redis's fallback. */
export class MemoryCounterStore implements CounterStore {
  private readonly entries = new Map<string, CounterState>();
  private lastSweep = 0;

  async take(counters: CounterSpec[], now: number): Promise<TakeResult> {
    return this.takeNow(counters, now);
  }

  /** The whole decision runs synchronously, so no other request can interleave: this is the atomicity. */
  takeNow(counters: CounterSpec[], now: number): TakeResult {
    this.sweep(now);
    const windows: Array<{ key: string; state: CounterState }> = [];
    for (const [index, spec] of counters.entries()) {
      const window = this.currentWindow(spec, now);
      if (window.state.count >= spec.limit) {
        return { allowed: false, refused: index, resetAt: window.state.resetAt };
      }
      windows.push(window);
    }
    return {
      allowed: true,
      counters: windows.map(({ key, state }) => {
        state.count += 1;
        this.entries.set(key, state);
        return { ...state };
      }),
    };
  }

  async close(): Promise<void> {
    this.entries.clear();
  }

  /** Number of live counters (tests check that ended windows are dropped). */
  get size(): number {
    return this.entries.size;
  }

  private currentWindow(spec: CounterSpec, now: number): { key: string; state: CounterState } {
    if (spec.kind === "clock") {
      const start = clockWindowStart(now, spec.windowMs);
      const key = clockWindowKey(spec.key, start);
      return { key, state: this.entries.get(key) ?? { count: 0, resetAt: start + spec.windowMs } };
    }
    const existing = this.entries.get(spec.key);
    if (existing && now < existing.resetAt) return { key: spec.key, state: existing };
    return { key: spec.key, state: { count: 0, resetAt: now + spec.windowMs } };
  }

  private sweep(now: number): void {
    // abs(): a clock moved backwards (tests) must not postpone sweeping forever.
    if (Math.abs(now - this.lastSweep) < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    for (const [key, state] of this.entries) {
      if (state.resetAt <= now) this.entries.delete(key);
    }
  }
}
