import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/free-port.ts";
import { createTestDatabase } from "../helpers/test-store.ts";
import { ZonaChild } from "../helpers/zona-child.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const ADMIN = "cluster-admin-token-0123456789";
const shared = Boolean(process.env.TEST_DATABASE_URL && process.env.TEST_REDIS_URL);

/** Starts `src/main.ts` on a free port against the shared PostgreSQL and Redis. */
async function startServer(databaseUrl: string): Promise<ZonaChild> {
  const server = new ZonaChild({
    port: await freePort(),
    configFile: join(ROOT, "test/fixtures/cluster.yaml"),
    adminToken: ADMIN,
    storage: { databaseUrl, redisUrl: process.env.TEST_REDIS_URL as string },
  });
  await server.start();
  return server;
}

describe.skipIf(!shared)("Limits across instances: two Zona processes sharing PostgreSQL and Redis", () => {
  let servers: ZonaChild[] = [];
  let database: { url: string; drop(): Promise<void> };

  beforeAll(async () => {
    database = await createTestDatabase();
    servers = await Promise.all([startServer(database.url), startServer(database.url)]);
  }, 90_000);

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await database?.drop();
  });

  it("tier limit (clock minute): 600 requests spread over both against 60/min -> exactly 60 admitted", async () => {
    const [first, second] = servers as [ZonaChild, ZonaChild];
    const admin = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
    const account = await (
      await fetch(`${first.url}/admin/v1/accounts`, {
        method: "POST",
        headers: admin,
        body: JSON.stringify({ email: "cluster@example.com" }),
      })
    ).json();
    const key = await (
      await fetch(`${second.url}/admin/v1/accounts/${(account as { id: string }).id}/keys`, {
        method: "POST",
        headers: admin,
        body: JSON.stringify({ name: "cluster" }),
      })
    ).json();
    // Stay inside one clock minute: start only with at least 15 seconds of it left.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 45_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinute + 200));
    const headers = { authorization: `Bearer ${(key as { key: string }).key}` };
    const statuses = await Promise.all(
      Array.from({ length: 600 }, async (_, i) => {
        const server = i % 2 === 0 ? first : second;
        return (await fetch(`${server.url}/v1/models`, { headers })).status;
      }),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(60);
    expect(statuses.filter((s) => s === 429)).toHaveLength(540);
  }, 120_000);
});
