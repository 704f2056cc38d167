import { Writable } from "node:stream";
import type { FastifyBaseLogger } from "fastify";
import { pino } from "pino";
import { loggerOptions } from "../../src/http/logger.ts";

/** A logger with the service's options whose JSON lines are kept in memory, parsed. */
export function capturedLogger(level = "info"): {
  logger: FastifyBaseLogger;
  // biome-ignore lint/suspicious/noExplicitAny: log lines are checked by assertions
  lines: any[];
  /** Everything written, as text (to look for what must never be there). */
  text(): string;
} {
  const raw: string[] = [];
  // biome-ignore lint/suspicious/noExplicitAny: as above
  const lines: any[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      const text = String(chunk);
      raw.push(text);
      for (const line of text.split("\n")) if (line.trim() !== "") lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino(loggerOptions(level), sink), lines, text: () => raw.join("") };
}

/** Waits until a line matches (the access line is written just after the answer went out). */
// biome-ignore lint/suspicious/noExplicitAny: as above
export async function lineWhere(lines: any[], match: (line: any) => boolean): Promise<any> {
  for (let i = 0; i < 100; i++) {
    const found = lines.find(match);
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("no such log line");
}
