import { Writable } from "node:stream";
import type { FastifyBaseLogger } from "fastify";
import { pino } from "pino";
import { loggerOptions } from "../../src/http/logger.ts";

/** One parsed log line. */
// biome-ignore lint/suspicious/noExplicitAny: log lines are checked by assertions, not by types.
export type LogLine = Record<string, any> & { level: number; msg?: string };

/** pino's numbers of the levels. */
export const LEVEL = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const;

/** A logger with the service's options that keeps every line it writes, raw and parsed. */
export interface CapturedLogs {
  logger: FastifyBaseLogger;
  /** The raw NDJSON lines, in order. */
  raw: string[];
  /** The lines, parsed. */
  lines(): LogLine[];
}

/** Captures what an app logs (pass `logger` to startTestApp), at `level` and above. */
export function captureLogs(level: keyof typeof LEVEL = "trace"): CapturedLogs {
  const raw: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) if (line !== "") raw.push(line);
      done();
    },
  });
  return {
    logger: pino(loggerOptions(level), sink) as FastifyBaseLogger,
    raw,
    lines: () => raw.map((line) => JSON.parse(line) as LogLine),
  };
}
