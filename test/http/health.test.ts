import { createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/free-port.ts";
import { captureLogs } from "../helpers/log-capture.ts";
import { readJson } from "../helpers/read-json.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { openTestStore } from "../helpers/test-store.ts";
import { HAS_REDIS_SERVER, RedisServerProcess } from "../limits/redis-server-process.ts";

async function probe(t: TestApp, path: "/healthz" | "/readyz") {
  const response = await t.fetch(path);
  return { status: response.status, body: await readJson(response) };
}

describe("GET /healthz and GET /readyz on the embedded default", () => {
  const logs = captureLogs("info");
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ logger: logs.logger, config: { server: { log_level: "info" } } });
  });
  afterAll(() => t.close());

  it("/healthz is 200 {status: ok}, without a key", async () => {
    expect(await probe(t, "/healthz")).toEqual({ status: 200, body: { status: "ok" } });
  });

  it("/readyz is 200 {status: ready} when the database answers and its migrations are done", async () => {
    expect(await probe(t, "/readyz")).toEqual({ status: 200, body: { status: "ready" } });
  });

  it("probes are not rate limited and leave no access-log line, other requests do", async () => {
    for (let i = 0; i < 30; i++) expect((await t.fetch(i % 2 ? "/healthz" : "/readyz")).status).toBe(200);
    await t.fetch("/v1/models");
    const paths = logs
      .lines()
      .filter((line) => line.msg === "request")
      .map((line) => line.path);
    expect(paths).toContain("/v1/models");
    expect(paths).not.toContain("/healthz");
    expect(paths).not.toContain("/readyz");
  });
});

describe("/readyz is 503 naming the database when it does not answer", () => {
  let t: TestApp;
  beforeAll(async () => {
    const store = await openTestStore();
    // The app does not close a store it was given: the test closes it under the running app.
    t = await startTestApp({ store });
    await store.close();
  });
  afterAll(() => t.close());

  it("503 {status: unavailable, reasons: ['database: ...']}; /healthz still 200", async () => {
    const ready = await probe(t, "/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({ status: "unavailable", reasons: [expect.stringMatching(/^database: .+/)] });
    expect(await probe(t, "/healthz")).toEqual({ status: 200, body: { status: "ok" } });
  });
});

describe("/readyz is 503 naming Redis when it is configured and does not answer", () => {
  let t: TestApp;
  beforeAll(async () => {
    // Nothing listens there: the app still starts (limits counted in the process meanwhile).
    t = await startTestApp({ config: { server: { redis_url: `redis://127.0.0.1:${await freePort()}` } } });
  }, 30_000);
  afterAll(() => t.close(), 30_000);

  it("503 with a reason for the rate-limit counters and one for the jobs; the database is fine", async () => {
    const ready = await probe(t, "/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body.status).toBe("unavailable");
    expect(ready.body.reasons).toEqual([
      expect.stringMatching(/^redis \(rate limits\): .+/),
      expect.stringMatching(/^redis \(jobs\): .+/),
    ]);
  });
});

describe("/readyz answers 503 in time when Redis hangs (accepts connections, never answers)", () => {
  let silent: Server;
  const sockets = new Set<Socket>();
  let t: TestApp;
  beforeAll(async () => {
    silent = createServer((socket) => {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const address = silent.address();
    const port = typeof address === "object" && address ? address.port : 0;
    t = await startTestApp({ config: { server: { redis_url: `redis://127.0.0.1:${port}` } } });
  }, 30_000);
  afterAll(async () => {
    await t.close();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }, 30_000);

  it("503 naming Redis, from a check with a time limit rather than a hanging probe", async () => {
    const ready = await probe(t, "/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body.reasons).toContainEqual(
      expect.stringMatching(/^redis \(jobs\): no answer within \d+ ms$/),
    );
  });
});

describe.skipIf(!HAS_REDIS_SERVER)("/readyz with a real Redis", () => {
  let redis: RedisServerProcess;
  let t: TestApp;
  beforeAll(async () => {
    redis = new RedisServerProcess(await freePort());
    await redis.start();
    t = await startTestApp({ config: { server: { redis_url: redis.url } } });
  }, 30_000);
  afterAll(async () => {
    await t?.close();
    await redis?.kill();
  }, 30_000);

  it("200 while Redis answers, 503 naming Redis once it is gone", async () => {
    expect(await probe(t, "/readyz")).toEqual({ status: 200, body: { status: "ready" } });
    await redis.kill();
    const ready = await probe(t, "/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body.reasons).toContainEqual(expect.stringMatching(/^redis \(rate limits\): .+/));
  });
});
