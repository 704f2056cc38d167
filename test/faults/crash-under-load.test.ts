import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "../helpers/test-store.ts";
import { type CrashReport, runCrashExperiment } from "./crash-experiment.ts";

// A short run of the experiment in the suite; `npm run faults:crash` runs it with 10,000 requests.
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

describe("kill -9 of Zona under load (issue 15): every whole answer has exactly one usage record, nothing stays held, no credit lost", () => {
  for (const prepaid of [false, true]) {
    it(`embedded, ${prepaid ? "prepaid credits" : "postpaid keys with and without limits"}: ${REQUESTS} requests, ${KILLS} kills`, async () => {
      const report = await runCrashExperiment({
        requests: REQUESTS,
        kills: KILLS,
        concurrency: 24,
        prepaid,
        seed: 15,
      });
      expectNothingLost(report);
    }, 240_000);
  }
});

describe.skipIf(!shared)("kill -9 of Zona under load, distributed (PostgreSQL and Redis; issue 15)", () => {
  let database: { url: string; drop(): Promise<void> } | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database?.drop());

  for (const prepaid of [false, true]) {
    it(`${prepaid ? "prepaid credits" : "postpaid keys with and without limits"}: ${REQUESTS} requests, ${KILLS} kills`, async () => {
      const report = await runCrashExperiment({
        requests: REQUESTS,
        kills: KILLS,
        concurrency: 24,
        prepaid,
        seed: 16,
        shared: { databaseUrl: database?.url as string, redisUrl: process.env.TEST_REDIS_URL as string },
      });
      expectNothingLost(report);
    }, 240_000);
  }
});
