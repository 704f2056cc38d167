import type { FastifyPluginAsync } from "fastify";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/open-store.ts";
import { FakeOpenAiServer } from "../fakes/index.ts";
import { freePort } from "../helpers/free-port.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { createTestDatabase } from "../helpers/test-store.ts";
import {
  dropKeys,
  MINUTE_START,
  redisStoreUnderTest,
  TEST_REDIS_URL,
  testClock,
  uniquePrefix,
} from "./limit-fixtures.ts";
import { HAS_REDIS_SERVER, RedisServerProcess } from "./redis-server-process.ts";

// Where money is decided in Redis, a request that holds money has its key limits taken in the
// hold's own script call once an instance has seen the key far from its limits. What a client
// sees must not change: these cases run the spec's rate-limit rules over two instances sharing
// PostgreSQL and Redis, with keys that hold money (a monthly limit; every key when prepaid).

const DISTRIBUTED = Boolean(process.env.TEST_DATABASE_URL && TEST_REDIS_URL);
const MODEL = "gemma3.8-27b";
const PRICES = { input_per_million_tokens: 1, output_per_million_tokens: 2 };
const CHAT_LIMIT = 20;

/**
 * Routes of an endpoint that pays but answer without holding money (no real endpoint does): what
 * is left of their key limits must still be taken, before a plain answer or once a stream ends.
 */
const unpaidRoutes: FastifyPluginAsync = async (app) => {
  const config = { endpointLimit: { counter: "shared", limit: CHAT_LIMIT, pays: true } };
  app.post("/test-unpaid", { config }, async () => ({ ok: true }));
  app.post("/test-unpaid-stream", { config }, async (_request, reply) => {
    reply.hijack();
    reply.raw.writeHead(200, { "content-type": "text/event-stream" });
    reply.raw.end("data: [DONE]\n\n");
  });
};

describe.skipIf(!DISTRIBUTED).each([false, true])(
  "Rate limits of keys that hold money in Redis (two instances, prepaid %s)",
  (prepaid) => {
    const apps: TestApp[] = [];
    let engine: FakeOpenAiServer;
    let database: Awaited<ReturnType<typeof createTestDatabase>>;
    const prefix = uniquePrefix();
    // A moment inside one clock minute that never moves: no count spans two tier windows.
    const clock = testClock(MINUTE_START + 1_000);

    beforeAll(async () => {
      database = await createTestDatabase();
      engine = new FakeOpenAiServer();
      const { url } = await engine.start();
      for (let i = 0; i < 2; i++) {
        const counters = await redisStoreUnderTest(TEST_REDIS_URL ?? "", prefix);
        apps.push(
          await startTestApp({
            store: await openStore({ databaseUrl: database.url }),
            counterStore: counters.store,
            now: clock.now,
            keyApiPlugins: [unpaidRoutes],
            config: {
              installation: {
                zones: [{ id: "ch-ti" }],
                ...(prepaid ? { prepaid: true, currency: "credits" } : {}),
              },
              tiers: { slow: { multiplier: 1, requests_per_minute: 100_000 } },
              rate_limits: { endpoint_limits: { chat_completions: CHAT_LIMIT } },
              models: [{ id: MODEL, kind: "chat", prices: PRICES }],
              machines: [{ name: "m-1", zone: "ch-ti", protocol: "openai", url, models: [MODEL] }],
            },
          }),
        );
      }
    });
    afterAll(async () => {
      for (const app of apps) {
        await app.close();
        await app.store.close();
      }
      await engine?.close();
      await database?.drop();
      await dropKeys(TEST_REDIS_URL ?? "", prefix);
    });

    /** A key that holds money: a monthly limit (and credits on a prepaid installation). */
    async function moneyKey(key: Record<string, unknown>, credits = 1000) {
      const made = await (apps[0] as TestApp).newKey({ key: { monthly_limit: 1000, ...key } });
      if (prepaid)
        await (apps[0] as TestApp).admin("PUT", `/accounts/${made.accountId}/credits`, { balance: credits });
      return made;
    }

    function chat(t: TestApp, key: string, body: Record<string, unknown> = {}) {
      return t.fetch("/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hello" }], ...body }),
      });
    }

    async function statusOf(response: Response): Promise<number> {
      await response.arrayBuffer();
      return response.status;
    }

    it("spec Rate limits / Tier limit: 80 parallel requests over both instances against a key's 16 per minute -> exactly 16 answered, the others get 429 rate_limit_exceeded", async () => {
      const [a, b] = apps as [TestApp, TestApp];
      const { key, keyId } = await moneyKey({ requests_per_minute: 16 });
      // Each instance sees the key once, far from its limit: the rest are counted with their holds.
      expect([await statusOf(await chat(a, key)), await statusOf(await chat(b, key))]).toEqual([200, 200]);
      const answers = await Promise.all(
        Array.from({ length: 80 }, async (_, i) => {
          const response = await chat(i % 2 ? b : a, key);
          const body = (await response.json()) as { error?: { code?: string } };
          return { status: response.status, code: body.error?.code };
        }),
      );
      expect(answers.filter((x) => x.status === 200)).toHaveLength(14);
      expect(answers.filter((x) => x.status === 429 && x.code === "rate_limit_exceeded")).toHaveLength(66);
      const summary = await a.admin("GET", `/usage/summary?key_id=${keyId}`);
      expect(summary.body.requests).toBe(16);
    });

    it("spec Rate limits / Endpoint limit: X-RateLimit-Limit and X-RateLimit-Remaining count down request by request, streamed or not, on either instance", async () => {
      const { key } = await moneyKey({});
      const remaining: string[] = [];
      for (let i = 0; i < 12; i++) {
        const t = apps[i % 2] as TestApp;
        const response = await chat(t, key, i % 3 === 2 ? { stream: true } : {});
        expect(response.status).toBe(200);
        await response.arrayBuffer();
        expect(response.headers.get("x-ratelimit-limit")).toBe(String(CHAT_LIMIT));
        remaining.push(response.headers.get("x-ratelimit-remaining") ?? "");
      }
      expect(remaining).toEqual(Array.from({ length: 12 }, (_, i) => String(CHAT_LIMIT - 1 - i)));
    });

    it("spec Rate limits / Tier limit: a key at its limit gets 429 rate_limit_exceeded (Retry-After to the next minute, no X-RateLimit-Reset) before the 422 of its invalid body, even where this instance last saw it far from the limit", async () => {
      const [a, b] = apps as [TestApp, TestApp];
      const { key } = await moneyKey({ requests_per_minute: 10 });
      expect(await statusOf(await chat(a, key))).toBe(200);
      for (let i = 0; i < 9; i++) expect(await statusOf(await chat(b, key))).toBe(200);
      const invalid = await chat(a, key, { messages: "not a list" });
      expect(invalid.status).toBe(429);
      // The tier limit's 429: Retry-After = seconds to the next clock minute (the clock stands 1 s into
      // it), no X-RateLimit-Reset.
      expect(invalid.headers.get("retry-after")).toBe("59");
      expect(invalid.headers.get("x-ratelimit-reset")).toBeNull();
      // A 429 may be retried: nothing of the 422 it stands for is left on it.
      expect(invalid.headers.get("x-should-retry")).toBeNull();
      const body = (await invalid.json()) as { error: unknown };
      expect(body.error).toMatchObject({ type: "rate_limit_exceeded", code: "rate_limit_exceeded" });
    });

    it("spec Rate limits: a key at its endpoint limit gets 429 Too Many Attempts before 402, with its four headers", async () => {
      const [a, b] = apps as [TestApp, TestApp];
      // Nothing left to spend: every request that reaches the money is refused with 402.
      const { key } = await moneyKey({ monthly_limit: 0 }, 0);
      const first = await chat(a, key);
      expect(first.status).toBe(402);
      await first.arrayBuffer();
      for (let i = 1; i < CHAT_LIMIT; i++) expect(await statusOf(await chat(b, key))).toBe(402);
      const limited = await chat(a, key);
      expect(limited.status).toBe(429);
      expect(await limited.json()).toEqual({ message: "Too Many Attempts." });
      expect(limited.headers.get("x-ratelimit-limit")).toBe(String(CHAT_LIMIT));
      expect(limited.headers.get("x-ratelimit-remaining")).toBe("0");
      expect(limited.headers.get("x-ratelimit-reset")).toMatch(/^\d+$/);
      expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);
    });

    it("spec Rate limits: requests refused with 422 or 402 still count toward the limits, exactly as before their body was read", async () => {
      const [a, b] = apps as [TestApp, TestApp];
      const { key } = await moneyKey({ monthly_limit: 0, requests_per_minute: 12 }, 0);
      const statuses: number[] = [];
      for (let i = 0; i < 16; i++) {
        const t = i % 2 ? b : a;
        statuses.push(await statusOf(await chat(t, key, i % 4 === 3 ? { messages: 7 } : {})));
      }
      expect(statuses.slice(12)).toEqual([429, 429, 429, 429]);
      expect(statuses.slice(0, 12).filter((s) => s === 402)).toHaveLength(9);
      expect(statuses.slice(0, 12).filter((s) => s === 422)).toHaveLength(3);
    });

    it("spec Rate limits: an answer that held no money is counted before it is sent, and answers 429 instead once the limit was reached elsewhere", async () => {
      const [a, b] = apps as [TestApp, TestApp];
      const { key } = await moneyKey({ requests_per_minute: 6 });
      const unpaid = () =>
        a.fetch("/v1/test-unpaid", { method: "POST", headers: { authorization: `Bearer ${key}` } });
      expect(await statusOf(await chat(a, key))).toBe(200);
      const plain = await unpaid();
      expect(plain.status).toBe(200);
      expect(await plain.json()).toEqual({ ok: true });
      expect(plain.headers.get("x-ratelimit-remaining")).toBe(String(CHAT_LIMIT - 2));
      for (let i = 0; i < 4; i++) expect(await statusOf(await chat(b, key))).toBe(200);
      const limited = await unpaid();
      expect(limited.status).toBe(429);
      expect(limited.headers.get("content-type")).toMatch(/^application\/json/);
      expect(((await limited.json()) as { error: unknown }).error).toMatchObject({
        code: "rate_limit_exceeded",
      });
    });

    it("spec Rate limits: a stream that held no money is counted when it ends", async () => {
      const [a, b] = apps as [TestApp, TestApp];
      const { key, keyId } = await moneyKey({ requests_per_minute: 4 });
      expect(await statusOf(await chat(a, key))).toBe(200);
      const stream = await a.fetch("/v1/test-unpaid-stream", {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
      });
      expect(await stream.text()).toContain("[DONE]");
      // Counted when its connection closes, a moment after the client has read it all.
      const redis = new Redis(TEST_REDIS_URL ?? "");
      try {
        await expect
          .poll(
            async () => {
              const [counter] = await redis.keys(`${prefix}tier:${keyId}:*`);
              return counter ? Number(await redis.get(counter)) : 0;
            },
            { timeout: 5_000 },
          )
          .toBe(2);
      } finally {
        redis.disconnect();
      }
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push(await statusOf(await chat(b, key)));
      expect(statuses).toEqual([200, 200, 429]);
    });
  },
);

describe.skipIf(!process.env.TEST_DATABASE_URL || !HAS_REDIS_SERVER)(
  "Rate limits of keys that hold money while Redis is away (one instance, its Redis killed)",
  () => {
    let t: TestApp;
    let engine: FakeOpenAiServer;
    let redis: RedisServerProcess;
    let database: Awaited<ReturnType<typeof createTestDatabase>>;

    beforeAll(async () => {
      redis = new RedisServerProcess(await freePort());
      await redis.start();
      database = await createTestDatabase();
      engine = new FakeOpenAiServer();
      const { url } = await engine.start();
      const counters = await redisStoreUnderTest(redis.url);
      t = await startTestApp({
        store: await openStore({ databaseUrl: database.url }),
        counterStore: counters.store,
        now: testClock(MINUTE_START + 1_000).now,
        config: {
          installation: { zones: [{ id: "ch-ti" }] },
          models: [{ id: MODEL, kind: "chat", prices: PRICES }],
          machines: [{ name: "m-1", zone: "ch-ti", protocol: "openai", url, models: [MODEL] }],
        },
      });
    }, 30_000);
    afterAll(async () => {
      await t?.close();
      await t?.store.close();
      await engine?.close();
      await database?.drop();
      await redis?.kill();
    });

    it("spec Rate limits, docs/operations.md (Redis down): the key's limit is counted in the instance before its money is decided in PostgreSQL; a refused request runs nothing and costs nothing", async () => {
      const { key, keyId } = await t.newKey({ key: { monthly_limit: 1000, requests_per_minute: 3 } });
      const chat = () =>
        t.fetch("/v1/chat/completions", {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hello" }] }),
        });
      const first = await chat();
      expect(first.status).toBe(200);
      await first.arrayBuffer();
      await redis.kill();
      // Counted in the process from now on (from zero): three more pass, then 429.
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const response = await chat();
        await response.arrayBuffer();
        statuses.push(response.status);
      }
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
      await expect
        .poll(async () => (await t.admin("GET", `/usage/summary?key_id=${keyId}`)).body.requests)
        .toBe(4);
    });
  },
);
