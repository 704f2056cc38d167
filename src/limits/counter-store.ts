/**
 * How a counter's window is laid out:
 * - "clock": the clock window (for 60 s, the clock minute); it resets for everyone at its end.
 * - "from-first": the window opens with the first request counted and lasts `windowMs`.
 */
export type WindowKind = "clock" | "from-first";

/** One counter a request is counted toward. Keys of one `take` must be distinct. */
export interface CounterSpec {
  key: string;
  /** The request is refused when the count before it is at this limit or above. */
  limit: number;
  windowMs: number;
  kind: WindowKind;
}

/** The state of one counter after a request was counted. */
export interface CounterState {
  count: number;
  /** Epoch milliseconds at which the window ends. */
  resetAt: number;
}

/** What one `take` decided. */
export type TakeResult =
  | { allowed: true; counters: CounterState[] }
  | {
      allowed: false /** Index in the specs of the first counter at its limit. */;
      refused: number;
      resetAt: number;
    };

/** Where rate-limit counters live (in the process, or in Redis shared by every instance). */
export interface CounterStore {
  /**
   * Atomically: if any counter is at its limit, refuses and counts toward none; else counts the
   * request toward every counter. `now` is the app clock (epoch ms), never the store's own.
   */
  take(counters: CounterSpec[], now: number): Promise<TakeResult>;
  /** Readiness of a shared store: resolves when it answers now, rejects with the reason (`GET /readyz`). */
  ping?(): Promise<void>;
  /** Where money decided across instances lives beside the counters (a shared store only). */
  money?(): { url: string; prefix: string; counterPrefix: string };
  close(): Promise<void>;
}

/** Start of the clock window that holds `now`. */
export function clockWindowStart(now: number, windowMs: number): number {
  return Math.floor(now / windowMs) * windowMs;
}

/** The key of a clock counter names its window, so a new window is a new key. */
export function clockWindowKey(key: string, windowStart: number): string {
  return `${key}:${windowStart}`;
}
