import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAiServer, FakeTeiServer } from "../fakes/index.ts";
import { freePort } from "../helpers/free-port.ts";
import { HAS_REDIS_SERVER, RedisServerProcess } from "../limits/redis-server-process.ts";
import { CRASH_MODEL, type CrashSetup, setUpCrash, signedInAppUser } from "./crash-setup.ts";
import { loadThroughOutage, tally } from "./outage-load.ts";
import { HAS_POSTGRES_SERVER, PostgresServerProcess } from "./postgres-server-process.ts";

const DOWN_AT_MS = 3_000;
const OUTAGE_MS = 5_000;
const LOAD_SECONDS = (DOWN_AT_MS + OUTAGE_MS) / 1000 + 5;
// `rate_limits.redis_timeout_ms` here; a request never waits much longer than it for Redis.
const REDIS_TIMEOUT_MS = 100;
const BOUND_MS = 2_000;
const PER_MINUTE = 20;

describe.skipIf(!HAS_POSTGRES_SERVER || !HAS_REDIS_SERVER)(
  "Redis killed and started again mid-load (distributed mode): limits counted in the process meanwhile, exact again after, no request hung, no job lost",
  () => {
    let postgres: PostgresServerProcess;
    let redis: RedisServerProcess;
    const engine = new FakeOpenAiServer({ chunkDelayMs: 1 });
    const tei = new FakeTeiServer();
    const closers: Array<() => Promise<void>> = [];
    let setup: CrashSetup;
    let token = "";

    const admin = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${setup.zona.url}/admin/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${setup.adminToken}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return (await response.json()) as Record<string, unknown>;
    };
    const app = (path: string, init: RequestInit = {}) =>
      fetch(`${setup.zona.url}/api/v1${path}`, {
        ...init,
        headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) },
      });
    const appJson = async (method: string, path: string, body: unknown) =>
      app(path, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    /** How many of `count` requests with a key of 20 a minute are admitted. */
    // The tier limit counts per clock minute: a measure whose requests straddle a minute's end would
    // see two windows, so it is taken again, with a fresh key, until one minute holds it all.
    const admitted = async (count: number) => {
      for (;;) {
        const minute = Math.floor(Date.now() / 60_000);
        const ok = await admittedOnce(count);
        if (Math.floor(Date.now() / 60_000) === minute) return ok;
      }
    };
    const admittedOnce = async (count: number) => {
      const account = (await admin("POST", "/accounts", {
        email: `rl-${Date.now()}-${Math.random()}@example.com`,
      })) as {
        id: string;
      };
      const key = (await admin("POST", `/accounts/${account.id}/keys`, {
        name: "limited",
        requests_per_minute: PER_MINUTE,
      })) as {
        key: string;
      };
      let ok = 0;
      for (let i = 0; i < count; i++) {
        const response = await fetch(`${setup.zona.url}/v1/models`, {
          headers: { authorization: `Bearer ${key.key}` },
        });
        await response.arrayBuffer();
        if (response.status === 200) ok += 1;
      }
      return ok;
    };

    beforeAll(async () => {
      postgres = new PostgresServerProcess(await freePort());
      redis = new RedisServerProcess(await freePort());
      const [chat, embeddings] = await Promise.all([
        engine.start(),
        tei.start(),
        postgres.start(),
        redis.start(),
      ]);
      closers.push(() => (chat as { close(): Promise<void> }).close());
      closers.push(() => (embeddings as { close(): Promise<void> }).close());
      setup = await setUpCrash({
        engineUrl: (chat as { url: string }).url,
        prepaid: false,
        shared: { databaseUrl: postgres.url, redisUrl: redis.url },
        installation: { redisTimeoutMs: REDIS_TIMEOUT_MS, embeddingUrl: (embeddings as { url: string }).url },
      });
      token = await signedInAppUser(setup);
    }, 90_000);
    afterAll(async () => {
      // Gracefully: a killed Zona would leave its upload folder behind.
      await setup?.zona.stop();
      setup?.remove();
      for (const close of closers) await close();
      await redis?.kill();
      await postgres?.remove();
    });

    it("a kill -9 of Redis for 5 s under load", async () => {
      const base = (await (await appJson("POST", "/rag/kb", { name: "Outage notes" })).json()) as {
        slug: string;
      };
      const conversations: string[] = [];
      const documents: string[] = [];
      let downAt = 0;
      let upAt = 0;
      let upAtClock = 0;
      let limitDuringOutage = -1;
      const { samples } = await loadThroughOutage({
        url: setup.zona.url,
        keys: setup.keys,
        seconds: LOAD_SECONDS,
        concurrency: 8,
        pauseMs: 5,
        fault: async (elapsed) => {
          await new Promise((resolve) => setTimeout(resolve, DOWN_AT_MS));
          await redis.kill();
          downAt = elapsed();
          // Work that queues a job while Redis is away: a first answer (its title) and an upload.
          for (let i = 0; i < 2; i++) {
            const made = (await (await appJson("POST", "/chat/sessions", {})).json()) as { id: string };
            const sent = await appJson("POST", `/chat/sessions/${made.id}/messages`, {
              content: `A question asked while Redis was away, number ${i}`,
              model: CRASH_MODEL,
            });
            await sent.text();
            conversations.push(made.id);
            const form = new FormData();
            form.append(
              "file",
              new Blob([`Notes written during the outage, part ${i}.`], { type: "text/plain" }),
              `notes-${i}.txt`,
            );
            const upload = await app(`/rag/kb/${base.slug}/docs`, { method: "POST", body: form });
            expect(upload.status).toBe(202);
            documents.push(((await upload.json()) as { id: string }).id);
          }
          limitDuringOutage = await admitted(2 * PER_MINUTE);
          await new Promise((resolve) =>
            setTimeout(resolve, Math.max(0, DOWN_AT_MS + OUTAGE_MS - elapsed())),
          );
          await redis.start();
          upAt = elapsed();
          upAtClock = performance.now();
        },
      });

      const counts = tally(samples);
      expect(
        Object.keys(counts).filter(
          (name) => name !== "whole" && name !== "status 402 spending_limit_reached",
        ),
      ).toEqual([]);
      expect(Math.max(...samples.map((s) => s.ms))).toBeLessThan(BOUND_MS);
      expect(samples.filter((s) => s.sentAt > downAt && s.sentAt < upAt).length).toBeGreaterThan(0);
      // The written policy: counted in the process meanwhile (one process here: the limit exactly).
      expect(limitDuringOutage).toBe(PER_MINUTE);
      // Exact again, in Redis, once it is back.
      expect(await admitted(2 * PER_MINUTE)).toBe(PER_MINUTE);

      // The jobs that could not be queued are queued when the queue's Redis is back.
      const deadline = Date.now() + 20_000;
      let titles: string[] = [];
      let jobsDoneAfterUpMs = -1;
      let statuses: string[] = [];
      while (Date.now() < deadline) {
        titles = await Promise.all(
          conversations.map(
            async (id) => ((await (await app(`/chat/sessions/${id}`)).json()) as { title: string }).title,
          ),
        );
        const listed = (await (await app(`/rag/kb/${base.slug}/docs`)).json()) as {
          data: Array<{ id: string; status: string }>;
        };
        statuses = documents.map((id) => listed.data.find((d) => d.id === id)?.status ?? "missing");
        if (titles.every((t) => t !== "New chat") && statuses.every((s) => s === "ready")) {
          jobsDoneAfterUpMs = performance.now() - upAtClock;
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(statuses).toEqual(documents.map(() => "ready"));
      expect(titles.filter((t) => t === "New chat")).toEqual([]);
      if (process.env.FAULTS_REPORT) {
        console.log(
          JSON.stringify({
            requests: samples.length,
            counts,
            outageMs: Math.round(upAt - downAt),
            maxMs: Math.round(Math.max(...samples.map((s) => s.ms))),
            limitDuringOutage,
            jobsDoneAfterUpMs: Math.round(jobsDoneAfterUpMs),
            titles,
            statuses,
          }),
        );
      }
    }, 120_000);
  },
);
