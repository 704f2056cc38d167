import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAiServer } from "../fakes/index.ts";
import { freePort } from "../helpers/free-port.ts";
import { HAS_REDIS_SERVER, RedisServerProcess } from "../limits/redis-server-process.ts";
import { sweepThenAudit } from "./crash-experiment.ts";
import { CRASH_MODEL, type CrashSetup, setUpCrash, signedInAppUser } from "./crash-setup.ts";
import { loadThroughOutage, tally } from "./outage-load.ts";
import { HAS_POSTGRES_SERVER, PostgresServerProcess } from "./postgres-server-process.ts";

// The outage in the middle of the load; `PG_OUTAGE_SECONDS` makes it longer.
const DOWN_AT_MS = 3_000;
const OUTAGE_MS = Number(process.env.PG_OUTAGE_SECONDS ?? 5) * 1000;
const LOAD_SECONDS = (DOWN_AT_MS + OUTAGE_MS) / 1000 + 6;
// No request may wait longer than this, outage or not (the pool's connection timeout is 5 s).
const BOUND_MS = 6_000;

describe.skipIf(!HAS_POSTGRES_SERVER || !HAS_REDIS_SERVER)(
  "PostgreSQL restarted mid-load (distributed mode): fast 503 service_unavailable (Retry-After 2, both APIs' shapes) during the outage, recovery without a restart of Zona, no record lost",
  () => {
    let postgres: PostgresServerProcess;
    let redis: RedisServerProcess;
    let engine: FakeOpenAiServer;
    let engineUrl: { url: string; close(): Promise<void> };
    let setup: CrashSetup;
    let token = "";
    const conversations = async () => {
      const response = await fetch(`${setup.zona.url}/api/v1/chat/sessions`, {
        headers: { authorization: `Bearer ${token}` },
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };

    beforeAll(async () => {
      postgres = new PostgresServerProcess(await freePort());
      redis = new RedisServerProcess(await freePort());
      engine = new FakeOpenAiServer({ chunkDelayMs: 1 });
      [engineUrl] = await Promise.all([engine.start(), postgres.start(), redis.start()]);
      setup = await setUpCrash({
        engineUrl: engineUrl.url,
        prepaid: false,
        shared: { databaseUrl: postgres.url, redisUrl: redis.url },
      });
      token = await signedInAppUser(setup);
    }, 90_000);
    afterAll(async () => {
      await setup?.zona.kill9();
      setup?.remove();
      await engineUrl?.close();
      await redis?.kill();
      await postgres?.remove();
    });

    it(`a crash of PostgreSQL (pg_ctl stop -m immediate) for ${OUTAGE_MS / 1000} s under load`, async () => {
      const pid = setup.zona.pid;
      let downAt = 0;
      let upAt = 0;
      let restartAt = 0;
      let appDuringOutage: { status: number; body: Record<string, unknown> } | undefined;
      let keyDuringOutage: Response | undefined;
      const { samples, completed } = await loadThroughOutage({
        url: setup.zona.url,
        keys: setup.keys,
        seconds: LOAD_SECONDS,
        concurrency: 16,
        pauseMs: 5,
        fault: async (elapsed) => {
          await new Promise((resolve) => setTimeout(resolve, DOWN_AT_MS));
          await postgres.crash();
          downAt = elapsed();
          // Past the 5 s cache of signed-in users: the app API must say 503, never sign the user out (401).
          await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
          appDuringOutage = await conversations();
          // A key with a monthly limit reserves in the database before anything else.
          keyDuringOutage = await fetch(`${setup.zona.url}/v1/chat/completions`, {
            method: "POST",
            headers: {
              authorization: `Bearer ${setup.keys.find((k) => k.monthlyLimit !== null)?.secret}`,
              "content-type": "application/json",
            },
            body: JSON.stringify({ model: CRASH_MODEL, messages: [{ role: "user", content: "Hi" }] }),
          });
          // PostgreSQL accepts connections a little before pg_ctl returns: the outage ends when the start begins.
          restartAt = elapsed();
          await postgres.start();
          upAt = elapsed();
        },
      });
      const counts = tally(samples);
      const during = samples.filter((s) => s.sentAt > downAt && s.sentAt + s.ms < restartAt);
      const after = samples.filter((s) => s.sentAt > upAt);
      const firstWholeAfter = after.find((s) => s.answer.kind === "whole");

      // Only whole answers, 402 of the tight key, and the 503 that says to retry, also inside streams.
      const allowed = new Set([
        "whole",
        "status 402 spending_limit_reached",
        "status 503 service_unavailable",
      ]);
      allowed.add("stream-error service_unavailable");
      expect(Object.keys(counts).filter((name) => !allowed.has(name))).toEqual([]);
      expect(during.length).toBeGreaterThan(0);
      expect(during.filter((s) => s.answer.kind === "whole")).toEqual([]);
      expect(Math.max(...samples.map((s) => s.ms))).toBeLessThan(BOUND_MS);
      // Back by itself, in the same process.
      expect(firstWholeAfter).toBeDefined();
      expect(
        after.filter(
          (s) => s.sentAt > upAt + 2_000 && s.answer.kind !== "whole" && s.answer.kind !== "status",
        ),
      ).toEqual([]);
      expect(setup.zona.pid).toBe(pid);
      // The key API's shape, with Retry-After 2 and no x-should-retry: false (the SDKs retry it).
      expect(keyDuringOutage?.status).toBe(503);
      expect(keyDuringOutage?.headers.get("retry-after")).toBe("2");
      expect(keyDuringOutage?.headers.get("x-should-retry")).toBeNull();
      expect(await keyDuringOutage?.json()).toMatchObject({
        error: {
          type: "server_error",
          code: "service_unavailable",
          param: null,
          request_id: expect.stringMatching(/^req_/),
        },
      });
      expect(appDuringOutage).toMatchObject({
        status: 503,
        body: { error: { code: "service_unavailable" } },
      });
      expect((await conversations()).status).toBe(200);

      const { audit } = await sweepThenAudit(setup, completed, { databaseUrl: postgres.url });
      expect(audit.completedWithoutRecord).toEqual([]);
      expect(audit.completedNotBilled).toEqual([]);
      expect(audit.completedWithRecord).toBe(completed.length);
      expect(audit.heldReservations).toBe(0);
      expect(audit.keySpendMismatches).toEqual([]);
      expect(audit.overspentKeys).toEqual([]);
      if (process.env.FAULTS_REPORT) {
        const during503 = during.filter((s) => s.answer.kind !== "whole");
        console.log(
          JSON.stringify({
            requests: samples.length,
            counts,
            outageMs: Math.round(upAt - downAt),
            duringOutage: during.length,
            maxMsDuringOutage: Math.round(Math.max(0, ...during503.map((s) => s.ms))),
            maxMs: Math.round(Math.max(...samples.map((s) => s.ms))),
            firstWholeAfterUpMs: Math.round(
              (firstWholeAfter?.sentAt ?? 0) + (firstWholeAfter?.ms ?? 0) - upAt,
            ),
            records: audit.usageRecords,
            outcomes: audit.outcomes,
            whole: completed.length,
          }),
        );
      }
    }, 120_000);
  },
);
