import type { LoadComparison, StreamComparison } from "./report.ts";
import type { RestartResult } from "./restart.ts";

/** A target of an issue and whether this run met it. */
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

/** The targets of issue 4, checked against a run. */
export function checkTargets(load: LoadComparison[], rssMaxMb: number): TargetCheck[] {
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

/** What the targets of issue 16 are checked against. */
export interface Issue16Run {
  load: LoadComparison[];
  streaming: StreamComparison[];
  storage: Storage;
  /** Idle after the first start (empty data folder) and largest under load, in MB. */
  rss: { idleMb: number; maxUnderLoadMb: number };
  /** undefined when the restart failed. */
  restart: RestartResult | undefined;
}

// Issue 16, "Targets": PGlite in the process gets more room than a Zona whose data lives elsewhere.
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
 * The targets of issue 16, as ratios and differences against the stack floor of the same run
 * (and RSS and start-up limits). A target whose runs are missing (no stack floor, no concurrency
 * 1, no 16 streams, a failed restart) is "not measured" and not met.
 */
export function checkIssue16Targets(run: Issue16Run): TargetCheck[] {
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

/** Zona's best requests/s over the concurrency levels against the floor's best. */
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

function rssChecks(run: Issue16Run): TargetCheck[] {
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

function best(levels: Array<[number, number]>): { at: number; value: number } {
  let top = { at: 0, value: Number.NEGATIVE_INFINITY };
  for (const [at, value] of levels) if (value > top.value) top = { at, value };
  return top;
}

function notMeasured(target: string, why = "not measured"): TargetCheck {
  return { target, measured: why, met: false };
}

function signed(value: number): string {
  return Number.isFinite(value) ? `${value >= 0 ? "+" : ""}${value.toFixed(2)}` : "n/a";
}

function fmt(value: number, digits = 2): string {
  return Number.isFinite(value) ? value.toFixed(digits) : "n/a";
}

function int(value: number): string {
  return Math.round(value).toLocaleString("en-US");
}
