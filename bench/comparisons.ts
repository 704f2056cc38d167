// What a run compares, target by target: the billed kinds and their runs beside the unlimited key,
// and each level's comparison of Zona with the engine called directly. The reports and the targets
// read these shapes; nothing here computes.
import type { LoadResult, LoadTarget } from "./load.ts";
import type { StreamResult } from "./streams.ts";

/** The two ways a request holds money: its key's monthly limit, or its account's prepaid credits. */
export type BilledKind = "limit" | "prepaid";
export const BILLED_KINDS: readonly BilledKind[] = ["limit", "prepaid"];

/** The load target (bench/load.ts) of each kind. */
export const BILLED_TARGET = {
  limit: "zona-limit",
  prepaid: "zona-prepaid",
} as const satisfies Record<BilledKind, LoadTarget>;

/** What each kind is, in the targets' words. */
export const BILLED_NAME: Record<BilledKind, string> = {
  limit: "keys with a monthly limit",
  prepaid: "prepaid credits",
};

/**
 * A billed load run (its median round), against the unlimited key at the same concurrency: each
 * round's figure against the unlimited key's of the same round, and the median of those.
 */
export interface BilledLoad {
  run: LoadResult;
  /** Its requests/s over the unlimited key's, the median of the rounds'. */
  ratioToUnlimited: number;
  /** Its p50 minus the unlimited key's in ms, the median of the rounds'. */
  p50OverUnlimitedMs: number;
  /** Each round's ratio and p50 difference, in the order the rounds ran. */
  rounds: Array<{ ratio: number; p50OverMs: number }>;
}

/** A billed stream run, against the unlimited key's at the same number of streams. */
export interface BilledStream {
  run: StreamResult;
  /** Its TTFT p50 minus the unlimited key's, in ms. */
  ttftOverUnlimitedMs: number;
}

/** The billed runs of one level, by kind; absent with BENCH_BILLED=0. */
export interface Billed<T> {
  limit?: T;
  prepaid?: T;
}

/** One concurrency level: every target and what Zona (and the stack floor) add. */
export interface LoadComparison {
  concurrency: number;
  direct: LoadResult;
  zona: LoadResult;
  addedP50Ms: number;
  addedP99Ms: number;
  /** Zona's requests per second as a share of the engine's. */
  throughputRatio: number;
  /** The bare Fastify + undici proxy on Zona's core (absent with BENCH_STACK_FLOOR=0). */
  floor?: LoadResult;
  /** The floor's percentiles minus the direct ones. */
  floorAddedP50Ms?: number;
  floorAddedP99Ms?: number;
  /** Keys with a monthly limit and prepaid credits, against the unlimited key (absent with BENCH_BILLED=0). */
  billed?: Billed<BilledLoad>;
}

/** One number of concurrent streams: every target and what Zona (and the stack floor) add. */
export interface StreamComparison {
  concurrentStreams: number;
  direct: StreamResult;
  zona: StreamResult;
  /** Zona's TTFT p50 and gap p99 minus the direct ones. */
  addedTtftP50Ms: number;
  addedGapP99Ms: number;
  /** The bare Fastify + undici proxy piping the engine's SSE (absent with BENCH_STACK_FLOOR=0). */
  floor?: StreamResult;
  /** The floor's TTFT p50 and gap p99 minus the direct ones. */
  floorAddedTtftP50Ms?: number;
  floorAddedGapP99Ms?: number;
  /** Zona's minus the floor's (the same as Zona's added minus the floor's added). */
  zonaOverFloorTtftP50Ms?: number;
  zonaOverFloorGapP99Ms?: number;
  /** Keys with a monthly limit and prepaid credits, against the unlimited key (absent with BENCH_BILLED=0). */
  billed?: Billed<BilledStream>;
}
