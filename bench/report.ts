import type { FloorResult } from "./billing-floor.ts";
import type { Billed, LoadComparison, StreamComparison } from "./comparisons.ts";
import { errorsOf, fmt, int, percent, row } from "./format.ts";
import type { LoadResult, LoadTarget } from "./load.ts";
import { billedTables, compareBilledLoad, compareBilledStreams } from "./report-billed.ts";
import { floorStreamTable, floorTable } from "./report-floor.ts";
import type { RestartResult } from "./restart.ts";
import { round3 } from "./stats.ts";
import type { StreamResult } from "./streams.ts";
import type { Storage, TargetCheck } from "./targets.ts";

/** Everything one run wrote to bench/results/latest.json. */
export interface BenchResults {
  startedAt: string;
  finishedAt: string;
  machine: { cpus: number; cpuModel: string; memoryGb: number; node: string; kernel: string };
  cores: {
    zona: string;
    engine: string;
    loadGenerator: string;
    stackFloor?: string;
    limitZona?: string;
    prepaidZona?: string;
  };
  settings: Record<string, unknown>;
  /** The unlimited key's pool; `billed`: the pools of the billed targets. */
  keys: {
    issued: number;
    overdrawn: number;
    perKeyAndWindow: number;
    billed?: Billed<{ issued: number; overdrawn: number }>;
  };
  /** Where Zona kept its data: embedded (PGlite, counters in the process) or distributed. */
  storage: Storage;
  /**
   * Zona's process tree: idle a second after the first answer of the first start (empty data
   * folder), idle again after the keys were issued through the operator API, after the restart,
   * and at most under load (every run through it). The billed targets' Zonas' at most under load
   * apart.
   */
  rss: {
    idleMb: number;
    idleAfterKeysMb: number;
    idleAfterRestartMb?: number;
    maxUnderLoadMb: number;
    limitMaxUnderLoadMb?: number;
    prepaidMaxUnderLoadMb?: number;
  };
  /** Zona stopped and started again on the same data after the runs; `error` when that failed. */
  restart: RestartResult | { error: string };
  load: LoadComparison[];
  streaming: StreamComparison[];
  /** The billing transactions alone, without HTTP (bench/billing-floor.ts). */
  billingFloor?: FloorResult[];
  /** The gateway targets (absolute figures). */
  targets: TargetCheck[];
  /** The targets against the stack floor of the same run (and RSS, start-up). */
  targetsStackFloor: TargetCheck[];
  /** Money at full speed: the billed targets against the unlimited key (absent with BENCH_BILLED=0). */
  targetsBilled?: TargetCheck[];
}

export function compareLoad(
  direct: LoadResult,
  zona: LoadResult,
  floor?: LoadResult,
  billedRuns: Billed<LoadResult> = {},
  rounds: Array<Partial<Record<LoadTarget, LoadResult>>> = [],
): LoadComparison {
  const billed = compareBilledLoad(zona, billedRuns, rounds);
  return {
    concurrency: zona.concurrency,
    direct,
    zona,
    addedP50Ms: round3(zona.p50Ms - direct.p50Ms),
    addedP99Ms: round3(zona.p99Ms - direct.p99Ms),
    throughputRatio: round3(zona.requestsPerSecond / direct.requestsPerSecond),
    ...(floor
      ? {
          floor,
          floorAddedP50Ms: round3(floor.p50Ms - direct.p50Ms),
          floorAddedP99Ms: round3(floor.p99Ms - direct.p99Ms),
        }
      : {}),
    ...(billed ? { billed } : {}),
  };
}

export function compareStreams(
  direct: StreamResult,
  zona: StreamResult,
  floor?: StreamResult,
  billedRuns: Billed<StreamResult> = {},
): StreamComparison {
  const billed = compareBilledStreams(zona, billedRuns);
  return {
    concurrentStreams: zona.concurrentStreams,
    direct,
    zona,
    addedTtftP50Ms: round3(zona.ttftP50Ms - direct.ttftP50Ms),
    addedGapP99Ms: round3(zona.gapP99Ms - direct.gapP99Ms),
    ...(floor
      ? {
          floor,
          floorAddedTtftP50Ms: round3(floor.ttftP50Ms - direct.ttftP50Ms),
          floorAddedGapP99Ms: round3(floor.gapP99Ms - direct.gapP99Ms),
          zonaOverFloorTtftP50Ms: round3(zona.ttftP50Ms - floor.ttftP50Ms),
          zonaOverFloorGapP99Ms: round3(zona.gapP99Ms - floor.gapP99Ms),
        }
      : {}),
    ...(billed ? { billed } : {}),
  };
}

/** The tables of a run, in Markdown. */
export function markdown(results: BenchResults): string {
  const lines: string[] = [];
  const { storage } = results;
  lines.push(
    `Storage: ${storage.mode} (database ${storage.database === "pglite" ? "PGlite in the data folder" : "PostgreSQL"}, ` +
      `rate-limit counters ${storage.counters === "redis" ? "in Redis" : "in the process"})`,
    "",
  );
  lines.push("Non-streamed `POST /v1/chat/completions` (latencies in ms; added = Zona minus direct)", "");
  lines.push(
    row([
      "Concurrency",
      "Direct p50",
      "Direct p99",
      "Direct req/s",
      "Zona p50",
      "Zona p99",
      "Zona req/s",
      "Added p50",
      "Added p99",
      "Zona/direct req/s",
      "Errors d/Z",
      "Non-2xx d/Z",
    ]),
    row(Array(12).fill("---:")),
  );
  for (const level of results.load) {
    const { direct, zona } = level;
    lines.push(
      row([
        String(level.concurrency),
        fmt(direct.p50Ms),
        fmt(direct.p99Ms),
        int(direct.requestsPerSecond),
        fmt(zona.p50Ms),
        fmt(zona.p99Ms),
        int(zona.requestsPerSecond),
        fmt(level.addedP50Ms),
        fmt(level.addedP99Ms),
        percent(level.throughputRatio),
        `${errorsOf(direct)} / ${errorsOf(zona)}`,
        `${direct.non2xx} / ${zona.non2xx}`,
      ]),
    );
  }
  const withFloor = results.load.some((level) => level.floor);
  if (withFloor) lines.push(...floorTable(results.load));
  lines.push(...cpuTable(results.load));
  lines.push(
    "",
    `Zona RSS: ${fmt(results.rss.idleMb, 1)} MB idle after the first start, ` +
      `${fmt(results.rss.idleAfterKeysMb, 1)} MB idle after issuing the keys (before the load), ` +
      `${fmt(results.rss.maxUnderLoadMb, 1)} MB at most under load (sampled every 200 ms during each run through it).`,
    "",
    restartLine(results.restart),
    "",
  );
  lines.push("Streaming (64 content chunks 20 ms apart; ms)", "");
  lines.push(
    row([
      "Concurrent streams",
      "Streams d/Z",
      "Direct TTFT p50",
      "Zona TTFT p50",
      "Added TTFT p50",
      "Direct gap p50",
      "Zona gap p50",
      "Direct gap p99",
      "Zona gap p99",
      "Added gap p99",
      "Failures d/Z",
    ]),
    row(Array(11).fill("---:")),
  );
  for (const level of results.streaming) {
    const { direct, zona } = level;
    lines.push(
      row([
        String(level.concurrentStreams),
        `${direct.streams} / ${zona.streams}`,
        fmt(direct.ttftP50Ms),
        fmt(zona.ttftP50Ms),
        fmt(level.addedTtftP50Ms),
        fmt(direct.gapP50Ms),
        fmt(zona.gapP50Ms),
        fmt(direct.gapP99Ms),
        fmt(zona.gapP99Ms),
        fmt(level.addedGapP99Ms),
        `${direct.failures} / ${zona.failures}`,
      ]),
    );
  }
  if (results.streaming.some((level) => level.floor)) lines.push(...floorStreamTable(results.streaming));
  lines.push(...billedTables(results.load, results.streaming, results.rss));
  if (results.billingFloor) {
    lines.push(
      "",
      "Billing floor: reserve + settle (with the usage record) alone, no HTTP, on Zona's core",
      "",
    );
    lines.push(
      row([
        "Store",
        "p50 ms",
        "p99 ms",
        "CPU ms per request",
        "Per second, 1 at a time",
        "Per second, 16 at a time",
      ]),
      row(["---", "---:", "---:", "---:", "---:", "---:"]),
    );
    for (const floor of results.billingFloor) {
      lines.push(
        row([
          floor.store,
          fmt(floor.sequentialP50Ms),
          fmt(floor.sequentialP99Ms),
          fmt(floor.cpuMsPerRequest),
          int(floor.sequentialPerSecond),
          int(floor.concurrent16PerSecond),
        ]),
      );
    }
    const first = results.billingFloor[0];
    if (first) {
      lines.push(
        "",
        `Opening the store (${first.store}) took the floor process from ${first.rssBeforeOpenMb} MB ` +
          `to ${first.rssAfterOpenMb} MB of RSS.`,
      );
    }
  }
  lines.push(
    ...targetList("Targets (gateway)", results.targets),
    ...targetList(
      "Targets (against the stack floor of this run; added = minus direct)",
      results.targetsStackFloor,
    ),
    ...(results.targetsBilled ? targetList("Targets (money at full speed)", results.targetsBilled) : []),
  );
  return lines.join("\n");
}

/** A list of targets, each with what was measured and whether it was met. */
function targetList(title: string, checks: TargetCheck[]): string[] {
  return [
    "",
    title,
    "",
    row(["Target", "Measured", "Met"]),
    row(["---", "---", "---"]),
    ...checks.map((check) => row([check.target, check.measured, check.met ? "met" : "**not met**"])),
  ];
}

/**
 * CPU of every process during each measured run, and the largest RSS of the run's Zona. "Zona" is
 * the Zona the run went through (the unlimited key's for direct and floor runs), "other Zonas" the
 * billed targets' other Zonas together, idle then.
 */
function cpuTable(load: LoadComparison[]): string[] {
  const runs = load.flatMap((level) =>
    [level.direct, level.floor, level.zona, level.billed?.limit?.run, level.billed?.prepaid?.run].filter(
      (run): run is LoadResult => run !== undefined,
    ),
  );
  const withFloor = runs.some((run) => run.cpuPercent.floor !== undefined);
  const withOther = runs.some((run) => run.cpuPercent.otherZona !== undefined);
  const processes = ["zona", ...(withOther ? ["otherZona"] : []), ...(withFloor ? ["floor"] : [])];
  const header = [
    "Concurrency",
    "Target",
    "Zona CPU",
    ...(withOther ? ["Other Zonas CPU"] : []),
    ...(withFloor ? ["Floor CPU"] : []),
    "Engine CPU",
    "Load generator CPU",
    "Zona RSS max (MB)",
  ];
  const lines = [
    "",
    "CPU (percent of one core, during each measured run) and Zona's RSS",
    "",
    row(header),
    row(header.map((_, column) => (column === 1 ? "---" : "---:"))),
  ];
  for (const run of runs) {
    lines.push(
      row([
        String(run.concurrency),
        run.target,
        ...[...processes, "engine", "loadGenerator"].map((name) => `${run.cpuPercent[name] ?? 0} %`),
        run.zonaRssMaxMb === undefined ? "" : fmt(run.zonaRssMaxMb, 1),
      ]),
    );
  }
  return lines;
}

/** The restart after the runs: stop, start on the same data, first answer, idle RSS. */
function restartLine(restart: BenchResults["restart"]): string {
  if ("error" in restart) return `Restart on the same data: failed (${restart.error.split("\n")[0]}).`;
  const earlier = Object.entries(restart.earlierStatuses)
    .map(([status, count]) => `${count} x ${status}`)
    .join(", ");
  return (
    `Restart on the same data: stopped in ${fmt(restart.stopMs, 0)} ms (exit code ${restart.stopExitCode}); ` +
    `first 200 answer ${fmt(restart.firstAnswerMs, 0)} ms after the spawn (${restart.attempts} requests` +
    `${earlier ? `; ${earlier} before it` : ""}); RSS idle ${fmt(restart.idleMb, 1)} MB.`
  );
}
