import { Writable } from "node:stream";
import type { Redis } from "ioredis";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loggerOptions } from "../../src/http/logger.ts";
import { freePort } from "../helpers/free-port.ts";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../helpers/test-app.ts";
import { MINUTE_START, testClock } from "./limit-fixtures.ts";
import { HAS_REDIS_SERVER, RedisServerProcess } from "./redis-server-process.ts";

const LIMIT = 5;
const FALLBACK_WARNING = "Redis unreachable or slow: rate limits counted in this process";

describe.skipIf(!HAS_REDIS_SERVER)(
  "Rate limits when Redis is unreachable or slow: counted in the process, never hanging, back on Redis when it returns",
  () => {
    let server: RedisServerProcess;
    let inspector: Redis | undefined;
    let t: TestApp;
    const clock = testClock(MINUTE_START + 1_000);
    const warnings: number[] = [];

    beforeAll(async () => {
      server = new RedisServerProcess(await freePort());
      await server.start();
      inspector = server.client();
      const sink = new Writable({
        write(chunk, _encoding, done) {
          for (const line of String(chunk).split("\n").filter(Boolean)) {
            const entry = JSON.parse(line);
            if (entry.msg === FALLBACK_WARNING) warnings.push(entry.time);
          }
          done();
        },
      });
      t = await startTestApp({
        config: {
          server: { redis_url: server.url },
          tiers: { slow: { multiplier: 1, requests_per_minute: LIMIT } },
        },
        now: clock.now,
        logger: pino(loggerOptions("warn"), sink),
      });
    });
    afterAll(async () => {
      inspector?.disconnect();
      await t?.close();
      await server?.kill();
    });

    const tierKey = (keyId: string) => `zona:rl:tier:${keyId}:${MINUTE_START}`;
    const timed = async (key: string) => {
      const started = performance.now();
      const response = await t.fetch("/v1/models", { headers: { authorization: `Bearer ${key}` } });
      await response.arrayBuffer();
      return { status: response.status, ms: performance.now() - started };
    };
    const fallbackMetric = async () => {
      const response = await t.fetch("/admin/v1/metrics", {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      expect(response.status).toBe(200);
      const line = (await response.text())
        .split("\n")
        .find((l) => l.startsWith("zona_rate_limit_fallback_total "));
      return Number(line?.split(" ")[1]);
    };

    it("with Redis up, the counters live in Redis under zona:rl: with a TTL, and the fallback metric is 0", async () => {
      const { key, keyId } = await t.newKey();
      expect((await timed(key)).status).toBe(200);
      expect((await timed(key)).status).toBe(200);
      expect(await inspector?.get(tierKey(keyId))).toBe("2");
      expect(await inspector?.pttl(tierKey(keyId))).toBeGreaterThan(0);
      expect(await fallbackMetric()).toBe(0);
    });

    it("Redis slow (clients paused): each request answers within about redis_timeout_ms, counted in the process", async () => {
      const { key } = await t.newKey();
      await inspector?.call("CLIENT", "PAUSE", "1500", "ALL");
      const results = [];
      for (let i = 0; i < 3; i++) results.push(await timed(key));
      expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
      for (const { ms } of results) expect(ms).toBeLessThan(1_000);
      expect(await fallbackMetric()).toBeGreaterThanOrEqual(3);
      await inspector?.call("CLIENT", "UNPAUSE");
    });

    it("Redis stopped mid-run: requests go on without hanging, the limit holds in the process, the metric counts it", async () => {
      inspector?.disconnect();
      await server.kill();
      const before = await fallbackMetric();
      const { key } = await t.newKey();
      const results = [];
      for (let i = 0; i <= LIMIT; i++) results.push(await timed(key));
      expect(results.map((r) => r.status)).toEqual([...Array(LIMIT).fill(200), 429]);
      for (const { ms } of results) expect(ms).toBeLessThan(1_000);
      expect(await fallbackMetric()).toBe(before + LIMIT + 1);
    });

    it("the fallback warning is logged at most once every 10 s", () => {
      expect(warnings.length).toBeGreaterThanOrEqual(1);
      for (let i = 1; i < warnings.length; i++) {
        expect((warnings[i] ?? 0) - (warnings[i - 1] ?? 0)).toBeGreaterThanOrEqual(10_000);
      }
    });

    it("Redis restarted on the same port: counts go to Redis again, without restarting Zona", async () => {
      await server.start();
      inspector = server.client();
      const { key, keyId } = await t.newKey();
      const deadline = Date.now() + 15_000;
      let backOnRedis = false;
      while (!backOnRedis && Date.now() < deadline) {
        expect((await timed(key)).ms).toBeLessThan(1_000);
        backOnRedis = (await inspector.exists(tierKey(keyId))) === 1;
        if (!backOnRedis) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(backOnRedis).toBe(true);
      const counted = Number(await inspector.get(tierKey(keyId)));
      const metric = await fallbackMetric();
      await timed(key);
      expect(Number(await inspector.get(tierKey(keyId)))).toBe(counted + 1);
      expect(await fallbackMetric()).toBe(metric);
    });
  },
);
