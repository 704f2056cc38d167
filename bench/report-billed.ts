// The billed runs beside the unlimited key: keys with a monthly limit on the same Zona, and a second
// Zona on a prepaid installation. Both hold money before the engine is called and settle after; the
// unlimited key on a postpaid installation holds nothing. Their comparisons and their tables.
import { errorsOf, fmt, int, percent, row, signed } from "./format.ts";
import type { LoadResult, LoadTarget } from "./load.ts";
import type { LoadComparison, StreamComparison } from "./report.ts";
import { round3 } from "./stats.ts";
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

/** A billed load run, against the unlimited key's run at the same concurrency. */
export interface BilledLoad {
  run: LoadResult;
  /** Its requests/s over the unlimited key's. */
  ratioToUnlimited: number;
  /** Its p50 minus the unlimited key's, in ms. */
  p50OverUnlimitedMs: number;
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

/** The billed runs of a concurrency against the unlimited key's; undefined when there are none. */
export function compareBilledLoad(
  unlimited: LoadResult,
  runs: Billed<LoadResult>,
): Billed<BilledLoad> | undefined {
  const billed: Billed<BilledLoad> = {};
  for (const kind of BILLED_KINDS) {
    const run = runs[kind];
    if (!run) continue;
    billed[kind] = {
      run,
      ratioToUnlimited: round3(run.requestsPerSecond / unlimited.requestsPerSecond),
      p50OverUnlimitedMs: round3(run.p50Ms - unlimited.p50Ms),
    };
  }
  return Object.keys(billed).length > 0 ? billed : undefined;
}

/** The billed streams of a level against the unlimited key's; undefined when there are none. */
export function compareBilledStreams(
  unlimited: StreamResult,
  runs: Billed<StreamResult>,
): Billed<BilledStream> | undefined {
  const billed: Billed<BilledStream> = {};
  for (const kind of BILLED_KINDS) {
    const run = runs[kind];
    if (run) billed[kind] = { run, ttftOverUnlimitedMs: round3(run.ttftP50Ms - unlimited.ttftP50Ms) };
  }
  return Object.keys(billed).length > 0 ? billed : undefined;
}

/** The section of the billed runs; nothing when they were skipped. */
export function billedTables(
  load: LoadComparison[],
  streaming: StreamComparison[],
  prepaidRssMaxMb: number | undefined,
): string[] {
  if (!load.some((level) => level.billed) && !streaming.some((level) => level.billed)) return [];
  return [
    "",
    "Money at full speed: keys with a monthly limit and prepaid credits beside an unlimited key",
    "",
    "Unlimited: the key without a monthly limit (postpaid) of the tables above. Limit: the same Zona, " +
      "keys with a monthly limit never reached. Prepaid: a second Zona on Zona's core " +
      "(`installation.prepaid`), an account with credits never used up, keys without a limit. " +
      "ms; billed - unlimited = the billed figure minus the unlimited key's.",
    ...billedLoadTable(load),
    ...billedStreamTable(streaming),
    ...(prepaidRssMaxMb === undefined
      ? []
      : ["", `The prepaid Zona's RSS: ${fmt(prepaidRssMaxMb, 1)} MB at most under load.`]),
  ];
}

function billedLoadTable(load: LoadComparison[]): string[] {
  const lines = [
    "",
    row([
      "Concurrency",
      "Unlimited req/s",
      "Limit req/s",
      "Prepaid req/s",
      "Unlimited p50",
      "Limit - unlimited p50",
      "Prepaid - unlimited p50",
      "Errors l/p",
      "Non-2xx l/p",
    ]),
    row(Array(9).fill("---:")),
  ];
  for (const level of load) {
    const { limit, prepaid } = level.billed ?? {};
    if (!limit && !prepaid) continue;
    lines.push(
      row([
        String(level.concurrency),
        int(level.zona.requestsPerSecond),
        throughput(limit),
        throughput(prepaid),
        fmt(level.zona.p50Ms),
        signed(limit?.p50OverUnlimitedMs ?? Number.NaN),
        signed(prepaid?.p50OverUnlimitedMs ?? Number.NaN),
        `${limit ? errorsOf(limit.run) : "n/a"} / ${prepaid ? errorsOf(prepaid.run) : "n/a"}`,
        `${limit?.run.non2xx ?? "n/a"} / ${prepaid?.run.non2xx ?? "n/a"}`,
      ]),
    );
  }
  return lines;
}

function billedStreamTable(streaming: StreamComparison[]): string[] {
  const lines = [
    "",
    row([
      "Concurrent streams",
      "Streams u/l/p",
      "Unlimited TTFT p50",
      "Limit - unlimited TTFT p50",
      "Prepaid - unlimited TTFT p50",
      "Failures l/p",
    ]),
    row(Array(6).fill("---:")),
  ];
  for (const level of streaming) {
    const { limit, prepaid } = level.billed ?? {};
    if (!limit && !prepaid) continue;
    lines.push(
      row([
        String(level.concurrentStreams),
        `${level.zona.streams} / ${limit?.run.streams ?? "n/a"} / ${prepaid?.run.streams ?? "n/a"}`,
        fmt(level.zona.ttftP50Ms),
        signed(limit?.ttftOverUnlimitedMs ?? Number.NaN),
        signed(prepaid?.ttftOverUnlimitedMs ?? Number.NaN),
        `${limit?.run.failures ?? "n/a"} / ${prepaid?.run.failures ?? "n/a"}`,
      ]),
    );
  }
  return lines;
}

function throughput(billed: BilledLoad | undefined): string {
  return billed ? `${int(billed.run.requestsPerSecond)} (${percent(billed.ratioToUnlimited)})` : "n/a";
}
