import { randomBytes } from "node:crypto";
import { openSync } from "node:fs";
import { basename, join } from "node:path";
import type { FastifyBaseLogger } from "fastify";
import { type DestinationStream, pino } from "pino";
import { expect } from "vitest";
import { loggerOptions } from "../../src/http/logger.ts";

/** The environment variable naming the folder of this test run's logs (set by the global setup). */
export const RUN_LOG_DIR_ENV = "ZONA_TEST_LOG_DIR";

type Destination = ReturnType<typeof pino.destination>;
// One file per test file (named after it, so that a finding names the test that wrote it).
const destinations = new Map<string, Destination>();
let exitHooked = false;

function runLog(): Destination | undefined {
  const folder = process.env[RUN_LOG_DIR_ENV];
  if (!folder) return undefined;
  const testFile = basename(expect.getState().testPath ?? "outside-a-test");
  const known = destinations.get(testFile);
  if (known) return known;
  const file = join(folder, `${testFile}.${process.pid}-${randomBytes(3).toString("hex")}.ndjson`);
  // Opened here, synchronously, so that the stream is ready at once and flushSync always works;
  // written asynchronously, in pieces of 8 KiB, so that logging every line costs the tests little.
  const opened = pino.destination({ dest: openSync(file, "a"), sync: false, minLength: 8 * 1024 });
  destinations.set(testFile, opened);
  if (!exitHooked) {
    exitHooked = true;
    process.once("exit", flushRunLog);
  }
  return opened;
}

/** Writes what the run's log files hold so far (a test app calls it when it closes). */
export function flushRunLog(): void {
  for (const destination of destinations.values()) destination.flushSync();
}

/**
 * The logger of a test app: every line, from `trace` on, into the run's log file, which the global
 * teardown scans for secrets and users' texts (test/logs/global-setup.ts); a test's own pino logger
 * keeps receiving the lines of its level. Without a run log: the test's logger, or none.
 */
export function testAppLogger(own: FastifyBaseLogger | undefined): FastifyBaseLogger | undefined {
  const file = runLog();
  if (file === undefined) return own;
  if (own === undefined) return pino(loggerOptions("trace"), file) as FastifyBaseLogger;
  const ownStream = (own as unknown as Record<symbol, DestinationStream | undefined>)[pino.symbols.streamSym];
  if (ownStream === undefined) return own;
  const streams = pino.multistream([
    { level: own.level as pino.Level, stream: ownStream },
    { level: "trace", stream: file },
  ]);
  return pino(loggerOptions("trace"), streams) as FastifyBaseLogger;
}
