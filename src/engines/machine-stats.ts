import type { UpstreamFailure } from "./types.ts";

/** The last thing that went wrong on a machine, as the machines view shows it. */
export interface MachineError {
  /** Who noticed: a request's attempt or the health probe. */
  source: "request" | "probe";
  kind: UpstreamFailure;
  /** The upstream HTTP status, for `status` failures. */
  status?: number;
  /**
   * The start of the error's message (at most 200 characters), never a key; with an engine's own
   * words, which may repeat a request: the machines view shows them, logs never do (upstream-log.ts).
   */
  message: string;
  /** Epoch milliseconds. */
  at: number;
}

/** Latency percentiles of the recent successful attempts. */
export interface LatencySummary {
  p50: number | null;
  p99: number | null;
  samples: number;
}

/** How long latency samples are kept: the machines view speaks of "the last minutes". */
export const LATENCY_WINDOW_MINUTES = 5;
const MINUTE_MS = 60_000;
// Per minute at most this many samples are kept (the latest ones), so memory stays bounded under load.
const SAMPLES_PER_MINUTE = 1024;
/** The longest message kept. */
export const MESSAGE_LIMIT = 200;

/**
 * The live record of one machine: requests in flight, the last error and success, whether its
 * probe answers, and the latencies of its answers over the last minutes, in one ring of samples per
 * minute (a number written into a preallocated array per request: nothing allocated on the hot path).
 */
export class MachineStats {
  /** Requests running on the machine now. */
  inFlight = 0;
  lastError: MachineError | null = null;
  /** Epoch milliseconds of the last successful request attempt, or null. */
  lastSuccessAt: number | null = null;
  /** Whether the last probe went unanswered and no request succeeded since. */
  down = false;
  private readonly minutes: Float64Array[] = [];
  /** The minute (epoch ms / 60 000) each ring holds, and how many samples it has taken. */
  private readonly minuteOf: number[] = [];
  private readonly counts: number[] = [];

  constructor() {
    for (let i = 0; i < LATENCY_WINDOW_MINUTES; i++) {
      this.minutes.push(new Float64Array(SAMPLES_PER_MINUTE));
      this.minuteOf.push(-1);
      this.counts.push(0);
    }
  }

  /** A request attempt that the machine answered, after `ms`. */
  success(ms: number, at: number): void {
    this.lastSuccessAt = at;
    this.down = false;
    const minute = Math.floor(at / MINUTE_MS);
    const slot = minute % LATENCY_WINDOW_MINUTES;
    if (this.minuteOf[slot] !== minute) {
      this.minuteOf[slot] = minute;
      this.counts[slot] = 0;
    }
    const count = this.counts[slot] ?? 0;
    const ring = this.minutes[slot];
    if (ring) ring[count % SAMPLES_PER_MINUTE] = ms;
    this.counts[slot] = count + 1;
  }

  /** A request attempt that failed. */
  failure(error: Omit<MachineError, "source" | "at">, at: number): void {
    this.lastError = { source: "request", ...error, message: error.message.slice(0, MESSAGE_LIMIT), at };
  }

  /** The probe was answered. */
  probeUp(): void {
    this.down = false;
  }

  /** The probe went unanswered. */
  probeDown(error: Omit<MachineError, "source" | "at">, at: number): void {
    this.down = true;
    this.lastError = { source: "probe", ...error, message: error.message.slice(0, MESSAGE_LIMIT), at };
  }

  /** p50 and p99 of the answers of the last minutes (the current one included), in milliseconds. */
  latency(now: number): LatencySummary {
    const current = Math.floor(now / MINUTE_MS);
    const samples: number[] = [];
    for (let slot = 0; slot < LATENCY_WINDOW_MINUTES; slot++) {
      const minute = this.minuteOf[slot] ?? -1;
      if (minute < 0 || current - minute >= LATENCY_WINDOW_MINUTES || minute > current) continue;
      const ring = this.minutes[slot];
      const kept = Math.min(this.counts[slot] ?? 0, SAMPLES_PER_MINUTE);
      if (ring) for (let i = 0; i < kept; i++) samples.push(ring[i] ?? 0);
    }
    if (samples.length === 0) return { p50: null, p99: null, samples: 0 };
    samples.sort((a, b) => a - b);
    return {
      p50: round(percentile(samples, 0.5)),
      p99: round(percentile(samples, 0.99)),
      samples: samples.length,
    };
  }
}

/** The nearest-rank percentile of sorted numbers. */
function percentile(sorted: number[], p: number): number {
  const rank = Math.max(1, Math.ceil(p * sorted.length));
  return sorted[rank - 1] ?? 0;
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
