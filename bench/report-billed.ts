// The billed runs beside the unlimited key: keys with a monthly limit on the same Zona, and a second
// Zona on a prepaid installation. Both hold money before the engine is called and settle after; the
// unlimited key on a postpaid installation holds nothing. Their comparisons and their tables.

import {
  BILLED_KINDS,
  BILLED_TARGET,
  type Billed,
  type BilledLoad,
  type BilledStream,
  type LoadComparison,
  type StreamComparison,
} from "./comparisons.ts";
import { errorsOf, fmt, int, percent, row, signed } from "./format.ts";
import type { LoadResult, LoadTarget } from "./load.ts";
import { median, round3 } from "./stats.ts";
import type { StreamResult } from "./streams.ts";

/**
 * The billed runs of a concurrency against the unlimited key's, round by round: the machine's
 * speed drifts between rounds far more than the money path costs (the unlimited key at one
 * connection: 345 to 760 req/s in five rounds of one run), and each round's billed run is compared
 * with the unlimited key's run a few seconds from it. Without rounds, the median runs are compared.
 * Undefined when there are no billed runs.
 */
export function compareBilledLoad(
  unlimited: LoadResult,
  runs: Billed<LoadResult>,
  rounds: Array<Partial<Record<LoadTarget, LoadResult>>> = [],
): Billed<BilledLoad> | undefined {
  const billed: Billed<BilledLoad> = {};
  for (const kind of BILLED_KINDS) {
    const run = runs[kind];
    if (!run) continue;
    const pairs = rounds.flatMap((round) => {
      const mine = round[BILLED_TARGET[kind]];
      return mine && round.zona ? [[mine, round.zona] as const] : [];
    });
    if (pairs.length === 0) pairs.push([run, unlimited]);
    const each = pairs.map(([mine, theirs]) => ({
      ratio: round3(mine.requestsPerSecond / theirs.requestsPerSecond),
      p50OverMs: round3(mine.p50Ms - theirs.p50Ms),
    }));
    billed[kind] = {
      run,
      ratioToUnlimited: round3(median(each.map((pair) => pair.ratio))),
      p50OverUnlimitedMs: round3(median(each.map((pair) => pair.p50OverMs))),
      rounds: each,
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
  rss: { limitMaxUnderLoadMb?: number; prepaidMaxUnderLoadMb?: number },
): string[] {
  if (!load.some((level) => level.billed) && !streaming.some((level) => level.billed)) return [];
  return [
    "",
    "Money at full speed: keys with a monthly limit and prepaid credits beside an unlimited key",
    "",
    "Unlimited: the key without a monthly limit (postpaid) of the tables above. Limit: a Zona of its " +
      "own on Zona's core, postpaid, keys with a monthly limit never reached. Prepaid: another " +
      "(`installation.prepaid`), an account with credits never used up, keys without a limit. " +
      "ms; billed - unlimited = the billed figure minus the unlimited key's. Req/s: each target's " +
      "median round; the share in brackets and the p50 differences: each round's billed run against " +
      "the unlimited key's run of the same round, the median of the rounds.",
    ...billedLoadTable(load),
    ...billedStreamTable(streaming),
    ...(rss.limitMaxUnderLoadMb === undefined || rss.prepaidMaxUnderLoadMb === undefined
      ? []
      : [
          "",
          `RSS at most under load: the limit's Zona ${fmt(rss.limitMaxUnderLoadMb, 1)} MB, ` +
            `the prepaid Zona ${fmt(rss.prepaidMaxUnderLoadMb, 1)} MB.`,
        ]),
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
