import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/database.ts";
import { openStore } from "../../src/store/open-store.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { createTestDatabase, openTestStore, STORE_KINDS } from "../helpers/test-store.ts";
import {
  dropKeys,
  MINUTE_START,
  redisStoreUnderTest,
  TEST_REDIS_URL,
  testClock,
  uniquePrefix,
} from "./limit-fixtures.ts";

/** One database seen by two instances: the same PGlite store, or two pools on one PostgreSQL database. */
async function sharedDatabase(
  kind: "pglite" | "postgres",
): Promise<{ stores: [Store, Store]; close(): Promise<void> }> {
  if (kind === "pglite") {
    const store = await openTestStore();
    return { stores: [store, store], close: () => store.close() };
  }
  const database = await createTestDatabase();
  const a = await openStore({ databaseUrl: database.url });
  const b = await openStore({ databaseUrl: database.url });
  return {
    stores: [a, b],
    async close() {
      await a.close();
      await b.close();
      await database.drop();
    },
  };
}

describe.skipIf(!TEST_REDIS_URL).each(STORE_KINDS)(
  "Rate limits across instances: exact with Redis (two apps, one Redis, %s)",
  (kind) => {
    const url = TEST_REDIS_URL ?? "";
    const clock = testClock(MINUTE_START + 1_000); // pinned: no minute boundary is crossed
    const apps: TestApp[] = [];
    const prefixes: string[] = [];
    let fallbacks: Array<() => number> = [];
    let database: Awaited<ReturnType<typeof sharedDatabase>>;

    beforeAll(async () => {
      database = await sharedDatabase(kind);
      // Both instances count under one prefix, as two Zona processes on one Redis do.
      const prefix = uniquePrefix();
      prefixes.push(prefix);
      for (const store of database.stores) {
        const counters = await redisStoreUnderTest(url, prefix);
        fallbacks = [...fallbacks, counters.fallbacks];
        apps.push(
          await startTestApp({
            store,
            counterStore: counters.store,
            now: clock.now,
            config: { tiers: { slow: { multiplier: 1, requests_per_minute: 60 } } },
          }),
        );
      }
    });
    afterAll(async () => {
      for (const app of apps) await app.close();
      await database?.close();
      for (const prefix of prefixes) await dropKeys(url, prefix);
    });

    it("600 requests spread over both instances against a tier limit of 60/min: exactly 60 admitted", async () => {
      const [a, b] = apps;
      if (!a || !b) throw new Error("apps did not start");
      const { key, keyId } = await a.newKey();
      const statuses: Array<{ instance: number; status: number }> = [];
      for (let batch = 0; batch < 10; batch++) {
        const results = await Promise.all(
          Array.from({ length: 60 }, async (_, i) => {
            const instance = i % 2;
            const app = instance === 0 ? a : b;
            const response = await app.fetch("/v1/models", { headers: { authorization: `Bearer ${key}` } });
            await response.arrayBuffer();
            return { instance, status: response.status };
          }),
        );
        statuses.push(...results);
      }
      expect(statuses).toHaveLength(600);
      expect(statuses.filter((s) => s.status === 200)).toHaveLength(60);
      expect(statuses.filter((s) => s.status === 429)).toHaveLength(540);
      expect(statuses.filter((s) => s.instance === 0)).toHaveLength(300);
      expect(fallbacks.map((count) => count())).toEqual([0, 0]);
      const redis = new Redis(url);
      try {
        expect(await redis.get(`${prefixes[0]}tier:${keyId}:${MINUTE_START}`)).toBe("60");
      } finally {
        redis.disconnect();
      }
    });
  },
);
