import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childOutput } from "./helpers/child-output.ts";
import { freePort } from "./helpers/free-port.ts";
import { readJson } from "./helpers/read-json.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const ADMIN = "start-test-admin-token-0123";

describe("README: `npm start` gives a working service on the embedded default", () => {
  let server: ChildProcess;
  let url: string;
  let dataDir: string;
  let log: ReturnType<typeof childOutput>;
  let exit: Promise<number | null>;
  /** Resolves once the child's output is closed: everything it wrote has been read. */
  let closed: Promise<void>;

  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    dataDir = mkdtempSync(join(tmpdir(), "zona-start-"));
    server = spawn("npm", ["start", "--silent"], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        PORT: String(port),
        HOST: "127.0.0.1",
        ZONA_DATA_DIR: dataDir,
        ZONA_ADMIN_TOKEN: ADMIN,
        ZONA_CONFIG: join(ROOT, "test/fixtures/start.yaml"),
      },
      stdio: ["ignore", "pipe", "pipe"],
      // Its own process group, so that afterAll can kill whatever is left, whatever npm did.
      detached: true,
    });
    exit = new Promise((resolve) => server.once("exit", (code) => resolve(code)));
    closed = new Promise((resolve) => server.once("close", () => resolve()));
    log = childOutput(server);
    await log.waitFor("zona listening");
  }, 60_000);

  afterAll(async () => {
    try {
      signalGroup("SIGKILL");
    } catch {
      // the group is gone already
    }
    await exit;
    // The data folder holds a whole database: leave nothing behind.
    if (dataDir) await rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
  });

  const signalGroup = (signal: NodeJS.Signals) => {
    if (server.pid) process.kill(-server.pid, signal);
  };

  it("serves the key API to the official openai package with a key made through the operator API", async () => {
    const admin = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
    const account = await readJson(
      await fetch(`${url}/admin/v1/accounts`, {
        method: "POST",
        headers: admin,
        body: JSON.stringify({ email: "start@example.com" }),
      }),
    );
    const key = await readJson(
      await fetch(`${url}/admin/v1/accounts/${account.id}/keys`, {
        method: "POST",
        headers: admin,
        body: JSON.stringify({ name: "start" }),
      }),
    );
    const client = new OpenAI({ apiKey: key.key, baseURL: `${url}/v1`, maxRetries: 0 });
    const page = await client.models.list();
    expect(page.data.map((model) => model.id)).toEqual(["gemma3.8-27b", "tts-1"]);

    const bad = new OpenAI({ apiKey: `sk-${"x".repeat(43)}`, baseURL: `${url}/v1`, maxRetries: 0 });
    await expect(bad.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it("logs JSON lines with the request id and never the key", () => {
    const lines = log
      .text()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line));
    const requests = lines.filter((line) => line.msg === "request");
    expect(requests.length).toBeGreaterThan(0);
    for (const line of requests) expect(line.request_id).toMatch(/^req_/);
    expect(log.text()).not.toContain(ADMIN);
  });

  it("stops gracefully on SIGTERM: in-flight request answered, store closed, data folder released", async () => {
    const lockPath = join(dataDir, "zona.lock");
    const serverPid: number = JSON.parse(readFileSync(lockPath, "utf8")).pid;
    // A request that takes a while (the password hash costs ~0.3 s) is in flight when the signal comes.
    const inFlight = fetch(`${url}/admin/v1/accounts`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({ email: "late@example.com", password: "a long enough password" }),
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    // SIGTERM to npm alone: the start script execs node, so npm's forwarding reaches the server.
    server.kill("SIGTERM");
    expect((await inFlight).status).toBe(201);
    const deadline = Date.now() + 10_000;
    while (isAlive(serverPid) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(isAlive(serverPid), log.text().slice(-1500)).toBe(false);
    expect(await exit).toBe(0);
    // The last lines may still be in the pipe when the process is gone.
    await closed;
    expect(log.text()).toContain('"msg":"stopped"');
    expect(existsSync(lockPath)).toBe(false);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
