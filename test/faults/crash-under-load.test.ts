import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/test-store.ts";
import { type CrashReport, runCrashExperiment } from "./crash-experiment.ts";

// A short run in the suite: embedded with postpaid keys, and prepaid credits in distributed mode
// (embedded without PostgreSQL and Redis). `npm run faults:crash` runs every pair with 10,000 requests.
const REQUESTS = Number(process.env.CRASH_REQUESTS ?? 800);
const KILLS = Number(process.env.CRASH_KILLS ?? 2);
const shared = Boolean(process.env.TEST_DATABASE_URL && process.env.TEST_REDIS_URL);

function expectNothingLost(report: CrashReport) {
  const { load, audit } = report;
  expect(load.kills).toBe(KILLS);
  expect(load.completed.length).toBeGreaterThan(REQUESTS / 2);
  expect(audit.completedWithoutRecord).toEqual([]);
  expect(audit.completedNotBilled).toEqual([]);
  expect(audit.completedWithRecord).toBe(load.completed.length);
  expect(audit.heldReservations).toBe(0);
  expect(audit.keySpendMismatches).toEqual([]);
  expect(audit.overspentKeys).toEqual([]);
  expect(audit.creditMismatches).toEqual([]);
  expect(audit.ledgerMismatches).toEqual([]);
}

describe("kill -9 of Zona under load: every whole answer has exactly one usage record, nothing stays held, no credit lost", () => {
  let database: { url: string; drop(): Promise<void> } | undefined;
  beforeAll(async () => {
    if (shared) database = await createTestDatabase();
  });
  afterAll(() => database?.drop());

  it(`embedded, postpaid keys with and without limits: ${REQUESTS} requests, ${KILLS} kills`, async () => {
    const report = await runCrashExperiment({
      requests: REQUESTS,
      kills: KILLS,
      concurrency: 24,
      prepaid: false,
      seed: 15,
    });
    expectNothingLost(report);
  }, 240_000);

  it(`${shared ? "distributed (PostgreSQL and Redis)" : "embedded"}, prepaid credits: ${REQUESTS} requests, ${KILLS} kills`, async () => {
    const report = await runCrashExperiment({
      requests: REQUESTS,
      kills: KILLS,
      concurrency: 24,
      prepaid: true,
      seed: 16,
      ...(database
        ? { shared: { databaseUrl: database.url, redisUrl: process.env.TEST_REDIS_URL as string } }
        : {}),
    });
    expectNothingLost(report);
  }, 240_000);
});
