import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readDataDirOwner } from "../../src/store/data-dir-lock.ts";
import { localCredentialPath } from "../../src/store/local-operator-credential.ts";
import { freePort } from "../helpers/free-port.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const ZONA_BIN = join(ROOT, "bin/zona.js");
const TOKEN = "busy-test-admin-token-0123456789";

/** A real `zona` server process over an embedded database in its own folder. */
interface Server {
  child: ChildProcess;
  dataDir: string;
  url: string;
}

describe("zona while a running server holds the embedded database (PGlite admits one process)", () => {
  let dir: string;
  let tokenless: Server;
  let withToken: Server;
  const running: Server[] = [];

  // Two first starts at once create two databases: slow on a busy machine.
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "zona-cli-busy-"));
    const started = await Promise.allSettled([
      startServer(join(dir, "tokenless")),
      startServer(join(dir, "with-token"), { ZONA_ADMIN_TOKEN: TOKEN }),
    ]);
    // Every server that started is stopped by afterAll, even when the other one failed.
    for (const result of started) if (result.status === "fulfilled") running.push(result.value);
    for (const result of started) if (result.status === "rejected") throw result.reason;
    [tokenless, withToken] = running as [Server, Server];
  }, 120_000);
  afterAll(async () => {
    try {
      await Promise.all(running.map((server) => stop(server.child)));
    } finally {
      await rm(dir, { recursive: true, force: true, maxRetries: 5 });
    }
  });

  it("without ZONA_ADMIN_TOKEN: goes through the operator API with the credential the server wrote (docs/admin-api.md, CLI equivalents)", async () => {
    const env = { ZONA_DATA_DIR: tokenless.dataDir };
    const created = await zona(["accounts", "create", "--email", "local@example.com"], env);
    expect(created.stderr).toBe("");
    expect(created.code).toBe(0);
    // The server, which still holds the database, saw the account: the command went through it.
    const credential = readFileSync(localCredentialPath(tokenless.dataDir), "utf8").trim();
    const response = await fetch(`${tokenless.url}/admin/v1/accounts?email=local%40example.com`, {
      headers: { authorization: `Bearer ${credential}` },
    });
    expect(((await response.json()) as { data: Array<{ id: string }> }).data[0]?.id).toBe(
      JSON.parse(created.stdout).id,
    );
    expect(readDataDirOwner(tokenless.dataDir)?.pid).toBe(tokenless.child.pid);
  });

  it("without ZONA_ADMIN_TOKEN and no credential to read: exit 1 naming the server, the file and what to do (docs/admin-api.md, CLI equivalents)", async () => {
    const path = localCredentialPath(tokenless.dataDir);
    await rename(path, `${path}.moved`);
    try {
      const run = await zona(["accounts", "list"], { ZONA_DATA_DIR: tokenless.dataDir });
      expect(run.stdout).toBe("");
      expect(run.code).toBe(1);
      expect(run.stderr).toBe(
        `zona: the running Zona server (pid ${tokenless.child.pid}, ${tokenless.url}) holding ${tokenless.dataDir} ` +
          `wrote no operator credential (${path}): a server still starting writes it in a moment, ` +
          "an older version never does (set ZONA_ADMIN_TOKEN for both the server and this command)\n",
      );
    } finally {
      await rename(`${path}.moved`, path);
    }
  });

  it("a credential the server does not hold (an earlier start's): exit 1 saying to try again (docs/admin-api.md, Authentication: a new credential at every start)", async () => {
    const path = localCredentialPath(tokenless.dataDir);
    const kept = await readFile(path, "utf8");
    await writeFile(path, "zlo_left-by-an-earlier-start\n");
    try {
      const run = await zona(["accounts", "list"], { ZONA_DATA_DIR: tokenless.dataDir });
      expect(run.stdout).toBe("");
      expect(run.code).toBe(1);
      expect(run.stderr).toBe(
        `zona: the server at ${tokenless.url} refused the operator credential of ${path}; if it has just ` +
          "restarted, try again (from another machine: --url with ZONA_ADMIN_TOKEN) (invalid_admin_token)\n",
      );
    } finally {
      await writeFile(path, kept);
    }
  });

  it("with ZONA_ADMIN_TOKEN on both: goes through the operator API at the URL in the lock, as before (docs/admin-api.md, Authentication)", async () => {
    const env = { ZONA_DATA_DIR: withToken.dataDir, ZONA_ADMIN_TOKEN: TOKEN };
    const created = await zona(["accounts", "create", "--email", "busy@example.com"], env);
    expect(created.stderr).toBe("");
    expect(created.code).toBe(0);

    const listed = await zona(["accounts", "list"], env);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).data.map((a: { email: string }) => a.email)).toEqual([
      "busy@example.com",
    ]);

    // The server, which still holds the database, saw the account: the command went through it.
    const response = await fetch(`${withToken.url}/admin/v1/accounts?email=busy%40example.com`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const body = (await response.json()) as { data: Array<{ id: string }> };
    expect(body.data[0]?.id).toBe(JSON.parse(created.stdout).id);
    expect(readDataDirOwner(withToken.dataDir)?.pid).toBe(withToken.child.pid);

    // A wrong token is refused as before; the local credential does not stand in for it.
    const wrong = await zona(["accounts", "list"], { ...env, ZONA_ADMIN_TOKEN: `${TOKEN}-wrong` });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain("(invalid_admin_token)");
    // Without the token in this command's environment, the server's local credential works too.
    const local = await zona(["accounts", "list"], { ZONA_DATA_DIR: withToken.dataDir });
    expect(local.stderr).toBe("");
    expect(JSON.parse(local.stdout)).toEqual(JSON.parse(listed.stdout));
  }, 60_000);
});

/** Starts `node src/main.ts` on a free loopback port and waits until its lock records the URL. */
async function startServer(dataDir: string, env: Record<string, string> = {}): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(ROOT, "src/main.ts")], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      ZONA_DATA_DIR: dataDir,
      PORT: String(port),
      HOST: "127.0.0.1",
      ZONA_LOG_LEVEL: "warn",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 100_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}): ${output}`);
    const owner = readDataDirOwner(dataDir);
    if (owner?.url && owner.pid === child.pid) {
      return { child, dataDir, url: owner.url };
    }
    await sleep(100);
  }
  child.kill("SIGTERM");
  throw new Error(`the server did not record its URL in time: ${output}`);
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once("exit", done));
  child.kill("SIGTERM");
  await exited;
}

/** Runs bin/zona.js as its own process. */
async function zona(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [ZONA_BIN, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((done) => child.on("close", done));
  return { code, stdout, stderr };
}
