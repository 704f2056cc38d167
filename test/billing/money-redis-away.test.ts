import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/free-port.ts";
import { ADMIN_TOKEN, type TestApp } from "../helpers/test-app.ts";
import { createTestDatabase } from "../helpers/test-store.ts";
import { uniquePrefix } from "../limits/limit-fixtures.ts";
import { HAS_REDIS_SERVER, RedisServerProcess } from "../limits/redis-server-process.ts";
import { CHUNK_COST, STREAM_CHUNKS } from "./billed-test-routes.ts";
import { moneyInstances } from "./money-instances.ts";

const HELD = STREAM_CHUNKS * CHUNK_COST;

/** N requests of `cost` alternating between the instances, all at once; how many passed (the rest must be 402s). */
async function passed(apps: TestApp[], key: string, count: number, cost: number): Promise<number> {
  const statuses = await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const response = await (apps[i % apps.length] as TestApp).fetch("/v1/test-billed", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ max: cost, cost }),
      });
      await response.arrayBuffer();
      return response.status;
    }),
  );
  expect(statuses.filter((status) => status !== 200 && status !== 402)).toEqual([]);
  return statuses.filter((status) => status === 200).length;
}

/** `zona_money_decided_in_database_total` summed over the instances. */
async function decidedInDatabase(apps: TestApp[]): Promise<number> {
  let total = 0;
  for (const app of apps) {
    const response = await app.fetch("/admin/v1/metrics", {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    const line = (await response.text())
      .split("\n")
      .find((l) => l.startsWith("zona_money_decided_in_database_total "));
    total += Number(line?.split(" ")[1] ?? Number.NaN);
  }
  return total;
}

describe.skipIf(!process.env.TEST_DATABASE_URL || !HAS_REDIS_SERVER).each([false, true])(
  "Money while Redis is away (two apps on one PostgreSQL, their Redis killed and started again; prepaid %s): decided in PostgreSQL meanwhile, never overspent, exact again after",
  (prepaid) => {
    const apps: TestApp[] = [];
    let redis: RedisServerProcess;
    let database: Awaited<ReturnType<typeof createTestDatabase>>;

    beforeAll(async () => {
      redis = new RedisServerProcess(await freePort());
      await redis.start();
      database = await createTestDatabase();
      const instances = { count: 2, databaseUrl: database.url, redisUrl: redis.url, prefix: uniquePrefix() };
      apps.push(...(await moneyInstances({ ...instances, prepaid })));
    }, 30_000);
    afterAll(async () => {
      for (const app of apps) {
        await app.close();
        await app.store.close();
      }
      await database?.drop();
      await redis?.kill();
    });

    it("402: a stream holds money, Redis dies; 60 parallel requests over both instances -> exactly those that fit beside the hold pass; Redis back -> exact again", async () => {
      const [a, b] = apps as [TestApp, TestApp];
      // What is left beside the stream's hold: 3.5, so three requests of 1.
      const room = HELD + 3.5;
      const { key, keyId, accountId } = await a.newKey(prepaid ? {} : { key: { monthly_limit: room } });
      if (prepaid) await a.admin("PUT", `/accounts/${accountId}/credits`, { balance: room });
      const stream = await a.fetch("/v1/test-stream", {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
      });
      const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();

      await redis.kill();
      const before = await decidedInDatabase(apps);
      expect(await passed(apps, key, 60, 1)).toBe(3);
      // docs/metrics.md zona_money_decided_in_database_total: each of the 60 was decided there.
      expect((await decidedInDatabase(apps)) - before).toBe(60);

      await redis.start();
      while (!(await reader.read()).done) {}
      // 0.5 is left: one request of 0.4 fits, whichever instance takes it, once Redis is rebuilt.
      expect(await passed(apps, key, 20, 0.4)).toBe(1);
      const summary = await b.admin("GET", `/usage/summary?key_id=${keyId}`);
      expect(summary.body).toMatchObject({ requests: 5, cost: HELD + 3.4 });
      if (prepaid) {
        expect((await b.admin("GET", `/accounts/${accountId}/credits`)).body).toMatchObject({
          balance: 0.1,
          held: 0,
        });
      } else {
        expect(summary.body.key_spend).toMatchObject({ spent: HELD + 3.4, reserved: 0 });
      }
    }, 60_000);
  },
);
