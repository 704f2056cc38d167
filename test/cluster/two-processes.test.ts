import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/free-port.ts";
import { createTestDatabase } from "../helpers/test-store.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const ADMIN = "cluster-admin-token-0123456789";
const shared = Boolean(process.env.TEST_DATABASE_URL && process.env.TEST_REDIS_URL);

interface Server {
  process: ChildProcess;
  url: string;
  output: string;
}

async function startServer(databaseUrl: string): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, ["src/main.ts"], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_URL: databaseUrl,
      REDIS_URL: process.env.TEST_REDIS_URL,
      ZONA_ADMIN_TOKEN: ADMIN,
      ZONA_CONFIG: join(ROOT, "test/fixtures/cluster.yaml"),
      ZONA_LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const server: Server = { process: child, url: `http://127.0.0.1:${port}`, output: "" };
  child.stdout?.on("data", (chunk) => {
    server.output += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    server.output += chunk;
  });
  for (const deadline = Date.now() + 45_000; ; ) {
    try {
      if ((await fetch(`${server.url}/healthz`)).ok) return server;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline || child.exitCode !== null)
      throw new Error(`server did not start:\n${server.output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe.skipIf(!shared)("Limits across instances: two Zona processes sharing PostgreSQL and Redis", () => {
  let servers: Server[] = [];
  let database: { url: string; drop(): Promise<void> };

  beforeAll(async () => {
    database = await createTestDatabase();
    servers = await Promise.all([startServer(database.url), startServer(database.url)]);
  }, 90_000);

  afterAll(async () => {
    for (const server of servers) server.process.kill("SIGTERM");
    await Promise.all(
      servers.map(
        (s) =>
          new Promise((resolve) =>
            s.process.exitCode !== null ? resolve(null) : s.process.once("exit", resolve),
          ),
      ),
    );
    await database?.drop();
  });

  it("tier limit (clock minute): 600 requests spread over both against 60/min -> exactly 60 admitted", async () => {
    const [first, second] = servers as [Server, Server];
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
