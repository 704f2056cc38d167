import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { monthOf } from "../../src/billing/month.ts";
import { openSharedMoney } from "../../src/billing/shared/open-shared-money.ts";
import { EXPIRED_FACTS, usageRow } from "../../src/billing/usage-row.ts";
import type { Store } from "../../src/store/database.ts";
import { openStore } from "../../src/store/open-store.ts";
import { BillingRepository } from "../../src/store/repositories/billing.ts";
import type { WrittenRecord } from "../../src/store/repositories/usage-writes.ts";
import type { TestApp } from "../helpers/test-app.ts";
import { createTestDatabase } from "../helpers/test-store.ts";
import { dropKeys, keysWithTtl, TEST_REDIS_URL, uniquePrefix } from "../limits/limit-fixtures.ts";
import { CHUNK_COST, STREAM_CHUNKS } from "./billed-test-routes.ts";
import { moneyInstances } from "./money-instances.ts";

const DISTRIBUTED = Boolean(process.env.TEST_DATABASE_URL && TEST_REDIS_URL);

function post(t: TestApp, key: string, body: unknown) {
  return t.fetch("/v1/test-billed", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** N requests alternating between the two instances, all at once; the statuses. */
async function spread(apps: TestApp[], key: string, count: number): Promise<number[]> {
  const answers = await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const response = await post(apps[i % apps.length] as TestApp, key, { max: 1, cost: 1 });
      await response.arrayBuffer();
      return response.status;
    }),
  );
  return answers;
}

/** Starts a stream that holds money and reads its first chunk: the hold is placed by then. */
async function holdingStream(t: TestApp, key: string): Promise<ReadableStreamDefaultReader<Uint8Array>> {
  const stream = await t.fetch("/v1/test-stream", {
    method: "POST",
    headers: { authorization: `Bearer ${key}` },
  });
  const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
  await reader.read();
  return reader;
}

describe.skipIf(!DISTRIBUTED).each([false, true])(
  "Money across instances (two apps on one PostgreSQL and one Redis, prepaid %s): no concurrency overspends",
  (prepaid) => {
    const apps: TestApp[] = [];
    let database: Awaited<ReturnType<typeof createTestDatabase>>;
    const prefix = uniquePrefix();

    beforeAll(async () => {
      database = await createTestDatabase();
      apps.push(
        ...(await moneyInstances({
          count: 2,
          databaseUrl: database.url,
          redisUrl: TEST_REDIS_URL ?? "",
          prefix,
          prepaid,
        })),
      );
    });
    afterAll(async () => {
      for (const app of apps) {
        await app.close();
        await app.store.close();
      }
      await database?.drop();
      await dropKeys(TEST_REDIS_URL ?? "", prefix);
    });

    it("402 spending_limit_reached: 200 parallel requests over both instances against a limit that fits 7 -> exactly 7 pass", async () => {
      const [a, b] = apps as [TestApp, TestApp];
      const { key, keyId, accountId } = await a.newKey({ key: { monthly_limit: 7.5 } });
      if (prepaid) await a.admin("PUT", `/accounts/${accountId}/credits`, { balance: 1000 });
      const statuses = await spread(apps, key, 200);
      expect(statuses.filter((s) => s === 200)).toHaveLength(7);
      expect(statuses.filter((s) => s === 402)).toHaveLength(193);
      const summary = await b.admin("GET", `/usage/summary?key_id=${keyId}`);
      expect(summary.body).toMatchObject({ requests: 7, cost: 7, key_spend: { spent: 7, reserved: 0 } });
    });

    it("402 spending_limit_reached: 60 parallel requests that all fit leave nothing held (their holds end in batches), so of 10 more against the 2.5 left exactly 2 pass", async () => {
      const [a, b] = apps as [TestApp, TestApp];
      const { key, keyId, accountId } = await a.newKey({ key: { monthly_limit: 62.5 } });
      if (prepaid) await a.admin("PUT", `/accounts/${accountId}/credits`, { balance: 62.5 });
      const first = await spread(apps, key, 60);
      expect(first.filter((s) => s !== 200)).toEqual([]);
      await expect
        .poll(async () => (await b.admin("GET", `/usage/summary?key_id=${keyId}`)).body.key_spend)
        .toMatchObject({ spent: 60, reserved: 0 });
      const more = await spread(apps, key, 10);
      expect(more.filter((s) => s === 200)).toHaveLength(2);
      expect(more.filter((s) => s === 402)).toHaveLength(8);
      await expect
        .poll(async () => (await a.admin("GET", `/usage/summary?key_id=${keyId}`)).body.key_spend)
        .toMatchObject({ spent: 62, reserved: 0 });
      if (prepaid) {
        expect((await b.admin("GET", `/accounts/${accountId}/credits`)).body).toMatchObject({
          balance: 0.5,
          held: 0,
        });
      }
    });

    it("402 spending_limit_reached counts each request once: a write whose total in PostgreSQL holds another instance's request still open does not count that request twice", async () => {
      const [a] = apps as [TestApp, TestApp];
      const { keyId, accountId } = await a.newKey({ key: { monthly_limit: 3.5 } });
      if (prepaid) await a.admin("PUT", `/accounts/${accountId}/credits`, { balance: 1000 });
      const stores = [
        await openStore({ databaseUrl: database.url }),
        await openStore({ databaseUrl: database.url }),
      ];
      const [one, two] = await Promise.all(
        stores.map((store) =>
          openSharedMoney({ url: TEST_REDIS_URL ?? "", prefix: `${prefix}money:` }, store),
        ),
      );
      try {
        const month = monthOf(new Date());
        const hold = (requestId: string, amountMicros: number) => ({
          requestId,
          keyId,
          accountId,
          month,
          prepaid,
          amountMicros,
          kind: "r" as const,
          endpoint: "test.billed",
          model: null,
          expiresAt: Date.now() + 60_000,
        });
        const record = (requestId: string) =>
          usageRow(
            requestId,
            { keyId, accountId, month, prepaid },
            { endpoint: "test.billed", model: null },
            {
              ...EXPIRED_FACTS,
              outcome: "ok",
              costMicros: 1_000_000,
            },
          );
        const repo = new BillingRepository(stores[0]?.db as Store["db"], stores[0]?.named);
        // Each instance holds 1 for a request; both records are written, the first instance's first.
        expect(await one?.hold(hold("req_first", 1_000_000), 3_500_000)).toBeUndefined();
        expect(await two?.hold(hold("req_second", 1_000_000), 3_500_000)).toBeUndefined();
        const [first] = await repo.recordEach([record("req_first")]);
        const [second] = await repo.recordEach([record("req_second")]);
        expect(second?.keyMonthAfter).toBe(2_000_000);
        // The second closes first: its total (2) holds the first request, whose hold is still open.
        two?.closeWritten("req_second", second as WrittenRecord);
        await new Promise((resolve) => setImmediate(resolve));
        expect(await two?.read({ keyId, month })).toEqual([1_000_000, 1_000_000]);
        // So 1.5 still fits the 3.5 (1 spent, 1 held).
        expect(await one?.hold(hold("req_third", 1_500_000), 3_500_000, true)).toBeUndefined();
        one?.closeWritten("req_first", first as WrittenRecord);
        await new Promise((resolve) => setImmediate(resolve));
        expect(await one?.read({ keyId, month })).toEqual([2_000_000, 0]);
      } finally {
        for (const money of [one, two]) await money?.stop();
        for (const store of stores) await store.close();
      }
    });

    it("every key the money keeps in Redis carries a TTL: the holds of requests in flight and the copies", async () => {
      const [a] = apps as [TestApp, TestApp];
      const { key, accountId } = await a.newKey({ key: { monthly_limit: 100 } });
      if (prepaid) await a.admin("PUT", `/accounts/${accountId}/credits`, { balance: 100 });
      const reader = await holdingStream(a, key);
      await spread(apps, key, 20);
      const redis = new Redis(TEST_REDIS_URL ?? "");
      try {
        const keys = await keysWithTtl(redis, `${prefix}money:`);
        // The stream still holds: the holds are among them.
        expect(keys.map(([name]) => name.split(":").at(-1))).toEqual(expect.arrayContaining(["h"]));
        expect(keys.filter(([, ttl]) => ttl <= 0)).toEqual([]);
      } finally {
        redis.disconnect();
      }
      while (!(await reader.read()).done) {}
    });

    it("a Redis flush while a request holds money forgets nothing: held and spent money still count against the limit", async () => {
      const [a, b] = apps as [TestApp, TestApp];
      const held = STREAM_CHUNKS * CHUNK_COST;
      const { key, keyId, accountId } = await a.newKey({ key: { monthly_limit: held + 1.2 } });
      if (prepaid) await a.admin("PUT", `/accounts/${accountId}/credits`, { balance: 1000 });
      const reader = await holdingStream(a, key);
      // Everything this installation keeps in Redis is gone, as after a restart of Redis without persistence.
      await dropKeys(TEST_REDIS_URL ?? "", prefix);
      // 1.2 is left beside what the stream holds: one request of 1 fits, the others are refused.
      const statuses = await spread(apps, key, 10);
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      while (!(await reader.read()).done) {}
      await expect
        .poll(async () => (await b.admin("GET", `/usage/summary?key_id=${keyId}`)).body.key_spend)
        .toMatchObject({ spent: held + 1, reserved: 0 });
    });

    it("a hold whose instance died is given back by another instance's sweep, with an `expired` record; the spend stays exact", async () => {
      const [a, b] = apps as [TestApp, TestApp];
      const { key, keyId, accountId } = await a.newKey({ key: { monthly_limit: 3.5 } });
      if (prepaid) await a.admin("PUT", `/accounts/${accountId}/credits`, { balance: 1000 });
      // A third instance holds 2 of the limit for a request, then dies without a word.
      const dyingStore = await openStore({ databaseUrl: database.url });
      const dying = await openSharedMoney(
        { url: TEST_REDIS_URL ?? "", prefix: `${prefix}money:` },
        dyingStore,
      );
      const refusal = await dying.hold(
        {
          requestId: "req_of_a_dead_instance",
          keyId,
          accountId,
          month: monthOf(new Date()),
          prepaid,
          amountMicros: 2_000_000,
          kind: "r",
          endpoint: "test.billed",
          model: null,
          expiresAt: Date.now() + 500,
        },
        3_500_000,
      );
      expect(refusal).toBeUndefined();
      await dying.stop();
      await dyingStore.close();
      // 1.5 is left beside the dead hold.
      expect((await spread(apps, key, 4)).filter((s) => s === 200)).toHaveLength(1);
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(await b.app.services.billing.sweep()).toBe(1);
      expect((await spread(apps, key, 4)).filter((s) => s === 200)).toHaveLength(2);
      const records = (await b.admin("GET", `/usage?key_id=${keyId}`)).body.data as Array<{
        outcome: string;
      }>;
      expect(records.map((record) => record.outcome).sort()).toEqual(["expired", "ok", "ok", "ok"]);
      expect((await b.admin("GET", `/usage/summary?key_id=${keyId}`)).body.key_spend).toMatchObject({
        spent: 3,
        reserved: 0,
      });
    });

    it("the sweep gives back every hold past its expiry, however many (its scan of the holds goes on to the end)", async () => {
      const [a, b] = apps as [TestApp, TestApp];
      const { keyId, accountId } = await a.newKey({ key: { monthly_limit: 1000 } });
      if (prepaid) await a.admin("PUT", `/accounts/${accountId}/credits`, { balance: 1000 });
      const dyingStore = await openStore({ databaseUrl: database.url });
      const dying = await openSharedMoney(
        { url: TEST_REDIS_URL ?? "", prefix: `${prefix}money:` },
        dyingStore,
      );
      const month = monthOf(new Date());
      // More than one step of the scan (200 holds), placed by an instance that then dies.
      const refusals = await Promise.all(
        Array.from({ length: 450 }, (_, i) =>
          dying.hold(
            {
              requestId: `req_dead_${i}`,
              keyId,
              accountId,
              month,
              prepaid,
              amountMicros: 1_000_000,
              kind: "r",
              endpoint: "test.billed",
              model: null,
              expiresAt: Date.now() + 300,
            },
            1_000_000_000,
          ),
        ),
      );
      expect(refusals.filter((refusal) => refusal !== undefined)).toEqual([]);
      await dying.stop();
      await dyingStore.close();
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(await b.app.services.billing.sweep()).toBe(450);
      expect((await b.admin("GET", `/usage/summary?key_id=${keyId}`)).body.key_spend).toMatchObject({
        spent: 0,
        reserved: 0,
      });
    });

    // Only a prepaid installation has credits to run out of.
    if (prepaid)
      it("402 insufficient_credits: 200 parallel requests over both instances against 3 credits -> exactly 3 pass", async () => {
        const [a, b] = apps as [TestApp, TestApp];
        const { key, accountId } = await a.newKey();
        await a.admin("PUT", `/accounts/${accountId}/credits`, { balance: 3 });
        const statuses = await spread(apps, key, 200);
        expect(statuses.filter((s) => s === 200)).toHaveLength(3);
        expect(statuses.filter((s) => s === 402)).toHaveLength(197);
        expect((await b.admin("GET", `/accounts/${accountId}/credits`)).body).toMatchObject({
          balance: 0,
          held: 0,
        });
      });

    if (prepaid)
      it("a copy of credits in Redis's older layout (one balance per account) is never read: the account is loaded again from PostgreSQL", async () => {
        const [a, b] = apps as [TestApp, TestApp];
        const { key, accountId } = await a.newKey();
        await a.admin("PUT", `/accounts/${accountId}/credits`, { balance: 2 });
        const redis = new Redis(TEST_REDIS_URL ?? "");
        try {
          const epoch = await redis.get(`${prefix}money:epoch`);
          expect(epoch).toMatch(/^[0-9a-f]+$/);
          // What a Zona before the split of credited and spent left: a balance far above the real one.
          await redis.hset(`${prefix}money:${epoch}:a:${accountId}`, {
            balance: 999_000_000,
            version: 999,
            held: 0,
            loaded: 1,
          });
        } finally {
          redis.disconnect();
        }
        const statuses = await spread(apps, key, 6);
        expect(statuses.filter((s) => s === 200)).toHaveLength(2);
        expect((await b.admin("GET", `/accounts/${accountId}/credits`)).body).toMatchObject({
          balance: 0,
          held: 0,
        });
      });
  },
);
