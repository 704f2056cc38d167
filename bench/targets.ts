import {
  BILLED_KINDS,
  BILLED_NAME,
  type BilledKind,
  type BilledLoad,
  type LoadComparison,
  type StreamComparison,
} from "./comparisons.ts";
import { fmt, int, signed } from "./format.ts";
import type { LoadResult } from "./load.ts";
import type { RestartResult } from "./restart.ts";

/** A target and whether this run met it. */
export interface TargetCheck {
  target: string;
  measured: string;
  met: boolean;
}

/** Where Zona kept its data in the run: what the environment gave it (DATABASE_URL, REDIS_URL). */
export interface Storage {
  database: "pglite" | "postgres";
  counters: "process" | "redis";
  /** embedded: PGlite and counters in the process; distributed: PostgreSQL and Redis; else mixed. */
  mode: "embedded" | "distributed" | "mixed";
}

/** The storage of a run, from whether DATABASE_URL and REDIS_URL are set. */
export function storageOf(databaseUrl: boolean, redisUrl: boolean): Storage {
  return {
    database: databaseUrl ? "postgres" : "pglite",
    counters: redisUrl ? "redis" : "process",
    mode: databaseUrl && redisUrl ? "distributed" : !databaseUrl && !redisUrl ? "embedded" : "mixed",
  };
}

/** The gateway targets (absolute figures through Zona), checked against a run. */
export function checkGatewayTargets(load: LoadComparison[], rssMaxMb: number): TargetCheck[] {
  const at16 = load.find((level) => level.concurrency === 16);
  const best = Math.max(...load.map((level) => level.zona.requestsPerSecond));
  const bestAt = load.find((level) => level.zona.requestsPerSecond === best)?.concurrency;
  return [
    {
      target: "added p50 < 0.5 ms at concurrency 16",
      measured: at16 ? `${fmt(at16.addedP50Ms)} ms` : "not measured",
      met: at16 !== undefined && at16.addedP50Ms < 0.5,
    },
    {
      target: "added p99 < 2 ms at concurrency 16",
      measured: at16 ? `${fmt(at16.addedP99Ms)} ms` : "not measured",
      met: at16 !== undefined && at16.addedP99Ms < 2,
    },
    {
      target: ">= 5,000 requests/s through Zona",
      measured: `${best.toLocaleString("en-US")} requests/s (best, at concurrency ${bestAt})`,
      met: best >= 5000,
    },
    {
      target: "RSS < 200 MB under load",
      measured: `${fmt(rssMaxMb)} MB`,
      met: rssMaxMb < 200,
    },
  ];
}

/** What the targets against the stack floor are checked against. */
export interface StackFloorRun {
  load: LoadComparison[];
  streaming: StreamComparison[];
  storage: Storage;
  /** Idle after the first start (empty data folder) and largest under load, in MB. */
  rss: { idleMb: number; maxUnderLoadMb: number };
  /** undefined when the restart failed. */
  restart: RestartResult | undefined;
}

// PGlite in the process gets more room than a Zona whose data lives elsewhere.
const RSS_LIMITS_MB = {
  pglite: { idle: 250, load: 300 },
  postgres: { idle: 150, load: 200 },
} as const;
const MAX_P99_RATIO = 2;
const MAX_TTFT_OVER_FLOOR_MS = 0.3;
const MAX_GAP_OVER_FLOOR_MS = 0.1;
const MIN_THROUGHPUT_RATIO = 0.6;
const MAX_START_MS = 2000;

/**
 * The targets against the stack floor: ratios and differences against the floor of the same run
 * (and RSS and start-up limits). A target whose runs are missing (no stack floor, no concurrency
 * 1, no 16 streams, a failed restart) is "not measured" and not met.
 */
export function checkStackFloorTargets(run: StackFloorRun): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const at1 = run.load.find((level) => level.concurrency === 1);
  const floorP99 = at1?.floorAddedP99Ms;
  checks.push(
    at1 !== undefined && floorP99 !== undefined
      ? {
          target: `added p99 at concurrency 1: Zona's <= ${MAX_P99_RATIO}x the floor's`,
          measured:
            `Zona ${signed(at1.addedP99Ms)} ms, floor ${signed(floorP99)} ms` +
            (floorP99 > 0 ? ` (${fmt(at1.addedP99Ms / floorP99, 1)}x)` : ""),
          met: at1.addedP99Ms <= MAX_P99_RATIO * floorP99,
        }
      : notMeasured(`added p99 at concurrency 1: Zona's <= ${MAX_P99_RATIO}x the floor's`),
  );
  for (const measure of STREAM_MEASURES) {
    for (const streams of [1, 16]) checks.push(streamCheck(run.streaming, streams, measure));
  }
  checks.push(peakThroughput(run.load));
  checks.push(...rssChecks(run));
  const startName = `start-up to first answer on an existing data folder < ${MAX_START_MS / 1000} s`;
  checks.push(
    run.restart
      ? {
          target: startName,
          measured: `${fmt(run.restart.firstAnswerMs, 0)} ms (${run.restart.attempts} requests, one every 10 ms)`,
          met: run.restart.firstAnswerMs < MAX_START_MS,
        }
      : notMeasured(startName, "restart failed"),
  );
  return checks;
}

/** A streaming target: Zona's added figure against the floor's, by at most `maxOverMs`. */
interface StreamMeasure {
  what: string;
  maxOverMs: number;
  pick(level: StreamComparison): { zona: number; floor: number | undefined; over: number | undefined };
}

const STREAM_MEASURES: StreamMeasure[] = [
  {
    what: "added TTFT p50",
    maxOverMs: MAX_TTFT_OVER_FLOOR_MS,
    pick: (level) => ({
      zona: level.addedTtftP50Ms,
      floor: level.floorAddedTtftP50Ms,
      over: level.zonaOverFloorTtftP50Ms,
    }),
  },
  {
    what: "added p99 gap between chunks",
    maxOverMs: MAX_GAP_OVER_FLOOR_MS,
    pick: (level) => ({
      zona: level.addedGapP99Ms,
      floor: level.floorAddedGapP99Ms,
      over: level.zonaOverFloorGapP99Ms,
    }),
  },
];

function streamCheck(streaming: StreamComparison[], streams: number, measure: StreamMeasure): TargetCheck {
  const name = `${measure.what}, ${streams} stream${streams === 1 ? "" : "s"}: Zona's <= floor's + ${measure.maxOverMs} ms`;
  const level = streaming.find((comparison) => comparison.concurrentStreams === streams);
  const figures = level && measure.pick(level);
  if (figures?.over === undefined) return notMeasured(name);
  return {
    target: name,
    measured: `Zona ${signed(figures.zona)} ms, floor ${signed(figures.floor ?? Number.NaN)} ms (Zona - floor ${signed(figures.over)} ms)`,
    met: figures.over <= measure.maxOverMs,
  };
}

/** Zona's best requests/s over the concurrency levels against the floor's best. */
function peakThroughput(load: LoadComparison[]): TargetCheck {
  const name = `peak requests/s: Zona's best >= ${MIN_THROUGHPUT_RATIO} of the floor's best`;
  const withFloor = load.filter((level) => level.floor !== undefined);
  if (withFloor.length === 0) return notMeasured(name);
  const zona = best(withFloor.map((level) => [level.concurrency, level.zona.requestsPerSecond]));
  const floor = best(withFloor.map((level) => [level.concurrency, level.floor?.requestsPerSecond ?? 0]));
  const ratio = floor.value > 0 ? zona.value / floor.value : Number.NaN;
  return {
    target: name,
    measured: `Zona ${int(zona.value)} (at ${zona.at}), floor ${int(floor.value)} (at ${floor.at}): ${fmt(ratio)}`,
    met: ratio >= MIN_THROUGHPUT_RATIO,
  };
}

function rssChecks(run: StackFloorRun): TargetCheck[] {
  const limits = RSS_LIMITS_MB[run.storage.database];
  const mode = run.storage.mode === "mixed" ? `${run.storage.database} database` : run.storage.mode;
  const idleAfterRestart = run.restart?.idleMb;
  return [
    {
      target: `RSS idle after the first start on an empty data folder <= ${limits.idle} MB (${mode})`,
      measured: `${fmt(run.rss.idleMb, 1)} MB`,
      met: run.rss.idleMb <= limits.idle,
    },
    idleAfterRestart === undefined
      ? notMeasured(
          `RSS idle after a restart on the existing data <= ${limits.idle} MB (${mode})`,
          "restart failed",
        )
      : {
          target: `RSS idle after a restart on the existing data <= ${limits.idle} MB (${mode})`,
          measured: `${fmt(idleAfterRestart, 1)} MB`,
          met: idleAfterRestart <= limits.idle,
        },
    {
      target: `RSS under load <= ${limits.load} MB (${mode})`,
      measured: `${fmt(run.rss.maxUnderLoadMb, 1)} MB at most`,
      met: run.rss.maxUnderLoadMb <= limits.load,
    },
  ];
}

// Money at full speed: a request that holds money before the engine is called (its key's monthly
// limit, its account's prepaid credits) should cost about what one that holds nothing costs.
const MIN_BILLED_THROUGHPUT_RATIO = 0.8;
const MAX_BILLED_P50_OVER_MS = 0.1;
const MAX_BILLED_TTFT_OVER_MS = 0.3;

/**
 * The billed targets, for keys with a monthly limit and for prepaid credits, against the unlimited
 * key of the same run: requests/s at every concurrency, p50 at concurrency 1, TTFT of one stream.
 * A non-2xx answer or a failed stream makes a target not met whatever the speed: a 402 would mean
 * the benchmark's money ran out, and a refusal is fast.
 */
export function checkBilledTargets(load: LoadComparison[], streaming: StreamComparison[]): TargetCheck[] {
  return BILLED_KINDS.flatMap((kind) => [
    billedThroughput(load, kind),
    billedP50(load, kind),
    billedTtft(streaming, kind),
  ]);
}

function billedThroughput(load: LoadComparison[], kind: BilledKind): TargetCheck {
  const name =
    `${BILLED_NAME[kind]}: requests/s >= ${MIN_BILLED_THROUGHPUT_RATIO} of the unlimited key's ` +
    "at every concurrency";
  const missing = load.filter((level) => !level.billed?.[kind]).map((level) => level.concurrency);
  if (load.length === 0 || missing.length > 0) {
    return notMeasured(name, `not measured at concurrency ${missing.join(", ") || "any"}`);
  }
  let lowest: LoadComparison | undefined;
  for (const level of load) {
    const ratio = level.billed?.[kind]?.ratioToUnlimited ?? Number.NaN;
    if (!lowest || ratio < (lowest.billed?.[kind]?.ratioToUnlimited ?? Number.NaN)) lowest = level;
  }
  const billed = lowest?.billed?.[kind];
  if (!lowest || !billed) return notMeasured(name);
  return refusedOr(
    {
      target: name,
      measured:
        `lowest ${fmt(billed.ratioToUnlimited)} at concurrency ${lowest.concurrency}${ofRounds(billed)} ` +
        `(median runs ${int(billed.run.requestsPerSecond)} against ${int(lowest.zona.requestsPerSecond)} req/s)`,
      met: billed.ratioToUnlimited >= MIN_BILLED_THROUGHPUT_RATIO,
    },
    load.flatMap((level) => level.billed?.[kind]?.run ?? []),
  );
}

function billedP50(load: LoadComparison[], kind: BilledKind): TargetCheck {
  const name = `${BILLED_NAME[kind]}: p50 at concurrency 1 <= the unlimited key's + ${MAX_BILLED_P50_OVER_MS} ms`;
  const at1 = load.find((level) => level.concurrency === 1);
  const billed = at1?.billed?.[kind];
  if (!at1 || !billed) return notMeasured(name);
  return refusedOr(
    {
      target: name,
      measured:
        `${signed(billed.p50OverUnlimitedMs)} ms${ofRounds(billed)} ` +
        `(median runs ${fmt(billed.run.p50Ms)} against ${fmt(at1.zona.p50Ms)} ms)`,
      met: billed.p50OverUnlimitedMs <= MAX_BILLED_P50_OVER_MS,
    },
    [billed.run],
  );
}

function billedTtft(streaming: StreamComparison[], kind: BilledKind): TargetCheck {
  const name = `${BILLED_NAME[kind]}: TTFT p50, 1 stream <= the unlimited key's + ${MAX_BILLED_TTFT_OVER_MS} ms`;
  const one = streaming.find((level) => level.concurrentStreams === 1);
  const billed = one?.billed?.[kind];
  if (!one || !billed) return notMeasured(name);
  const measured = `${signed(billed.ttftOverUnlimitedMs)} ms (${fmt(billed.run.ttftP50Ms)} against ${fmt(one.zona.ttftP50Ms)} ms)`;
  const failures = billed.run.failures;
  return {
    target: name,
    measured: failures > 0 ? `${measured}; ${failures} failed streams` : measured,
    met: failures === 0 && billed.ttftOverUnlimitedMs <= MAX_BILLED_TTFT_OVER_MS,
  };
}

/** Says that a billed figure is the median of several rounds' comparisons; nothing for one round. */
function ofRounds(billed: BilledLoad): string {
  return billed.rounds.length > 1 ? `, median of ${billed.rounds.length} rounds` : "";
}

/** The check, or not met with the count and statuses when the runs had non-2xx answers. */
function refusedOr(check: TargetCheck, runs: LoadResult[]): TargetCheck {
  const statuses = new Map<string, number>();
  for (const run of runs) {
    for (const [status, count] of Object.entries(run.statusCodes)) {
      if (!status.startsWith("2")) statuses.set(status, (statuses.get(status) ?? 0) + count);
    }
  }
  const non2xx = runs.reduce((sum, run) => sum + run.non2xx, 0);
  if (non2xx === 0) return check;
  const byStatus = [...statuses].map(([status, count]) => `${int(count)} x ${status}`).join(", ");
  return {
    ...check,
    measured: `${check.measured}; ${int(non2xx)} non-2xx answers${byStatus ? ` (${byStatus})` : ""}`,
    met: false,
  };
}

function best(levels: Array<[number, number]>): { at: number; value: number } {
  let top = { at: 0, value: Number.NEGATIVE_INFINITY };
  for (const [at, value] of levels) if (value > top.value) top = { at, value };
  return top;
}

function notMeasured(target: string, why = "not measured"): TargetCheck {
  return { target, measured: why, met: false };
}
