import type { FloorResult } from "./billing-floor.ts";
import type { LoadResult } from "./load.ts";
import type { RestartResult } from "./restart.ts";
import { round3 } from "./stats.ts";
import type { StreamResult } from "./streams.ts";
import type { Storage, TargetCheck } from "./targets.ts";

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
}

/** Everything one run wrote to bench/results/latest.json. */
export interface BenchResults {
  startedAt: string;
  finishedAt: string;
  machine: { cpus: number; cpuModel: string; memoryGb: number; node: string; kernel: string };
  cores: { zona: string; engine: string; loadGenerator: string; stackFloor?: string };
  settings: Record<string, unknown>;
  keys: { issued: number; overdrawn: number; perKeyAndWindow: number };
  /** Where Zona kept its data: embedded (PGlite, counters in the process) or distributed. */
  storage: Storage;
  /**
   * Zona's process tree: idle a second after the first answer of the first start (empty data
   * folder), idle again after the keys were issued through the operator API, after the restart,
   * and at most under load.
   */
  rss: { idleMb: number; idleAfterKeysMb: number; idleAfterRestartMb?: number; maxUnderLoadMb: number };
  /** Zona stopped and started again on the same data after the runs; `error` when that failed. */
  restart: RestartResult | { error: string };
  load: LoadComparison[];
  streaming: StreamComparison[];
  /** The billing transactions alone, without HTTP (bench/billing-floor.ts). */
  billingFloor?: FloorResult[];
  /** Issue 4's targets (absolute). */
  targets: TargetCheck[];
  /** Issue 16's targets (against the stack floor of the same run; RSS; start-up). */
  targetsIssue16: TargetCheck[];
}

export function compareLoad(direct: LoadResult, zona: LoadResult, floor?: LoadResult): LoadComparison {
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
  };
}

export function compareStreams(
  direct: StreamResult,
  zona: StreamResult,
  floor?: StreamResult,
): StreamComparison {
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
        `${Math.round(level.throughputRatio * 100)} %`,
        `${errorsOf(direct)} / ${errorsOf(zona)}`,
        `${direct.non2xx} / ${zona.non2xx}`,
      ]),
    );
  }
  const withFloor = results.load.some((level) => level.floor);
  if (withFloor) lines.push(...floorTable(results.load));
  lines.push("", "CPU (percent of one core, during each measured run) and Zona's RSS", "");
  lines.push(
    row([
      "Concurrency",
      "Target",
      "Zona CPU",
      ...(withFloor ? ["Floor CPU"] : []),
      "Engine CPU",
      "Load generator CPU",
      "Zona RSS max (MB)",
    ]),
    row(["---:", "---", ...Array(withFloor ? 5 : 4).fill("---:")]),
  );
  for (const level of results.load) {
    for (const run of [level.direct, level.floor, level.zona]) {
      if (!run) continue;
      lines.push(
        row([
          String(level.concurrency),
          run.target,
          `${run.cpuPercent.zona ?? 0} %`,
          ...(withFloor ? [`${run.cpuPercent.floor ?? 0} %`] : []),
          `${run.cpuPercent.engine ?? 0} %`,
          `${run.cpuPercent.loadGenerator ?? 0} %`,
          run.zonaRssMaxMb === undefined ? "" : fmt(run.zonaRssMaxMb, 1),
        ]),
      );
    }
  }
  lines.push(
    "",
    `Zona RSS: ${fmt(results.rss.idleMb, 1)} MB idle after the first start, ` +
      `${fmt(results.rss.idleAfterKeysMb, 1)} MB idle after issuing the keys (before the load), ` +
      `${fmt(results.rss.maxUnderLoadMb, 1)} MB at most under load (sampled every 200 ms).`,
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
  lines.push("", "Targets (issue 4)", "");
  lines.push(row(["Target", "Measured", "Met"]), row(["---", "---", "---"]));
  for (const check of results.targets) {
    lines.push(row([check.target, check.measured, check.met ? "met" : "**not met**"]));
  }
  lines.push("", "Targets (issue 16: against the stack floor of this run; added = minus direct)", "");
  lines.push(row(["Target", "Measured", "Met"]), row(["---", "---", "---"]));
  for (const check of results.targetsIssue16) {
    lines.push(row([check.target, check.measured, check.met ? "met" : "**not met**"]));
  }
  return lines.join("\n");
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

/** The streams through the stack floor, against the engine and against Zona. */
function floorStreamTable(streaming: StreamComparison[]): string[] {
  const lines = [
    "",
    "Streaming through the stack floor (the engine's SSE piped as it arrives; ms; added = minus direct)",
    "",
    row([
      "Concurrent streams",
      "Streams f",
      "Floor TTFT p50",
      "Floor added TTFT p50",
      "Zona added TTFT p50",
      "Zona - floor TTFT p50",
      "Floor gap p99",
      "Floor added gap p99",
      "Zona added gap p99",
      "Zona - floor gap p99",
      "Failures f",
    ]),
    row(Array(11).fill("---:")),
  ];
  for (const level of streaming) {
    const { floor } = level;
    if (!floor) continue;
    lines.push(
      row([
        String(level.concurrentStreams),
        String(floor.streams),
        fmt(floor.ttftP50Ms),
        fmt(level.floorAddedTtftP50Ms ?? Number.NaN),
        fmt(level.addedTtftP50Ms),
        fmt(level.zonaOverFloorTtftP50Ms ?? Number.NaN),
        fmt(floor.gapP99Ms),
        fmt(level.floorAddedGapP99Ms ?? Number.NaN),
        fmt(level.addedGapP99Ms),
        fmt(level.zonaOverFloorGapP99Ms ?? Number.NaN),
        String(floor.failures),
      ]),
    );
  }
  return lines;
}

/** The stack floor's table: the floor against the engine, and Zona against the floor. */
function floorTable(load: LoadComparison[]): string[] {
  const lines = [
    "",
    "Stack floor (bare Fastify + undici proxy on Zona's core; added = floor minus direct)",
    "",
    row([
      "Concurrency",
      "Floor p50",
      "Floor p99",
      "Floor req/s",
      "Floor added p50",
      "Floor added p99",
      "Floor CPU",
      "Zona req/s",
      "Zona/floor req/s",
    ]),
    row(Array(9).fill("---:")),
  ];
  const failed: string[] = [];
  for (const level of load) {
    const { floor, zona } = level;
    if (!floor) continue;
    lines.push(
      row([
        String(level.concurrency),
        fmt(floor.p50Ms),
        fmt(floor.p99Ms),
        int(floor.requestsPerSecond),
        fmt(level.floorAddedP50Ms ?? Number.NaN),
        fmt(level.floorAddedP99Ms ?? Number.NaN),
        `${floor.cpuPercent.floor ?? 0} %`,
        int(zona.requestsPerSecond),
        floor.requestsPerSecond > 0
          ? `${Math.round((zona.requestsPerSecond / floor.requestsPerSecond) * 100)} %`
          : "n/a",
      ]),
    );
    if (floor.errors > 0 || floor.non2xx > 0) {
      failed.push(`${level.concurrency}: ${errorsOf(floor)} errors, ${floor.non2xx} non-2xx`);
    }
  }
  if (failed.length > 0) lines.push("", `Floor errors at concurrency ${failed.join("; ")}.`);
  return lines;
}

// autocannon counts a timeout as an error too.
function errorsOf(run: LoadResult): string {
  return run.timeouts > 0 ? `${run.errors} (${run.timeouts} timeouts)` : String(run.errors);
}

function row(cells: string[]): string {
  return `| ${cells.join(" | ")} |`;
}

function fmt(value: number, digits = 2): string {
  return Number.isFinite(value) ? value.toFixed(digits) : "n/a";
}

function int(value: number): string {
  return Math.round(value).toLocaleString("en-US");
}
