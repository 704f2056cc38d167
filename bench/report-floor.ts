// The stack floor's tables: the bare Fastify + undici proxy against the engine, and Zona against it.

import type { LoadComparison, StreamComparison } from "./comparisons.ts";
import { errorsOf, fmt, int, percent, row } from "./format.ts";

/** The streams through the stack floor, against the engine and against Zona. */
export function floorStreamTable(streaming: StreamComparison[]): string[] {
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
export function floorTable(load: LoadComparison[]): string[] {
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
        floor.requestsPerSecond > 0 ? percent(zona.requestsPerSecond / floor.requestsPerSecond) : "n/a",
      ]),
    );
    if (floor.errors > 0 || floor.non2xx > 0) {
      failed.push(`${level.concurrency}: ${errorsOf(floor)} errors, ${floor.non2xx} non-2xx`);
    }
  }
  if (failed.length > 0) lines.push("", `Floor errors at concurrency ${failed.join("; ")}.`);
  return lines;
}
