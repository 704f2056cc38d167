import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readDataDirOwner } from "../../src/store/data-dir-lock.ts";
import { childOutput } from "../helpers/child-output.ts";
import { freePort } from "../helpers/free-port.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const EMAIL = "first.user@example.com";
const PASSWORD = "correct horse battery staple";

/** A real Zona process started as `npm start` starts it: in its folder, embedded default, no token. */
interface Server {
  child: ChildProcess;
  url: string;
  output: () => string;
}

describe("README: on the embedded default without ZONA_ADMIN_TOKEN, `npx zona mail list` reads the running server's outbox", () => {
  let dir: string;
  let dataDir: string;
  let credentialFile: string;
  let port: number;
  let server: Server | undefined;

  beforeAll(async () => {
    // The folder Zona runs in: no zona.yaml, the data in ./data, as after `npm install && npm start`.
    dir = await mkdtemp(join(tmpdir(), "zona-first-mail-"));
    dataDir = join(dir, "data");
    credentialFile = join(dataDir, "operator", "local-credential");
    port = await freePort();
    server = await start();
  }, 120_000);
  afterAll(async () => {
    try {
      if (server) await stop(server.child);
    } finally {
      await rm(dir, { recursive: true, force: true, maxRetries: 5 });
    }
  });

  async function start(): Promise<Server> {
    const child = spawn(process.execPath, [join(ROOT, "src/main.ts")], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", PORT: String(port), HOST: "127.0.0.1", ZONA_LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const output = childOutput(child);
    for (const deadline = Date.now() + 100_000; Date.now() < deadline; await sleep(100)) {
      if (child.exitCode !== null) throw new Error(`zona exited (${child.exitCode}):\n${output.text()}`);
      const owner = readDataDirOwner(dataDir);
      if (owner?.url && owner.pid === child.pid) return { child, url: owner.url, output: output.text };
    }
    await stop(child);
    throw new Error(`zona did not record its URL in time:\n${output.text()}`);
  }

  /** `npx zona ARGS` in the folder Zona runs in, with no operator setting of any kind. */
  async function zona(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn(process.execPath, [join(ROOT, "bin/zona.js"), ...args], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, "close")) as [number | null];
    return { code, stdout, stderr };
  }

  const operatorApi = (authorization?: string) =>
    fetch(`${server?.url}/admin/v1/mail`, authorization ? { headers: { authorization } } : {});

  it("README Web chat: a new user's verification mail is printed as text (To, Subject, the link on its own line), no restart, no token, and its link confirms the address", async () => {
    const registered = await fetch(`${server?.url}/api/v1/auth/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
    });
    expect(registered.status).toBe(201);

    // The mail is written just after the answer: the operator may have to ask twice.
    let run = await zona(["mail", "list"]);
    for (let tries = 0; !run.stdout.includes(EMAIL) && tries < 30; tries++) {
      await sleep(300);
      run = await zona(["mail", "list"]);
    }
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^To: +${EMAIL.replace(/\./g, "\\.")}$`, "m"));
    expect(run.stdout).toMatch(/^Subject: +Conferma il tuo indirizzo email$/m);
    expect(run.stdout).toMatch(/^Date: +\d{4}-\d\d-\d\dT/m);
    expect(run.stdout).toMatch(/^Status: +pending/m);
    // Readable text, not JSON with escaped line breaks.
    expect(run.stdout).not.toContain("\\n");
    expect(run.stdout.trimStart().startsWith("{")).toBe(false);
    const link = /^(http:\/\/\S+\/verify-email\?token=(\S+))$/m.exec(run.stdout);
    expect(link?.[1]).toBeDefined();
    expect(link?.[1]?.startsWith(`${server?.url}/verify-email?token=zev_`)).toBe(true);

    const verified = await fetch(`${server?.url}/api/v1/auth/verify-email`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: decodeURIComponent(link?.[2] ?? "") }),
    });
    expect(verified.status).toBe(200);
    expect(((await verified.json()) as { user: unknown }).user).toMatchObject({
      email: EMAIL,
      email_verified: true,
    });
  }, 60_000);

  it("docs/admin-api.md CLI equivalents: `zona mail list --json` prints the operator API's JSON answer", async () => {
    const run = await zona(["mail", "list", "--json"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const listed = JSON.parse(run.stdout);
    expect(listed.object).toBe("list");
    expect(listed.data[0]).toMatchObject({ object: "mail", to: EMAIL, status: "pending" });
    expect(listed.data[0].body).toMatch(/\/verify-email\?token=zev_/);
    // The same answer the operator API gives to the credential.
    const viaApi = await operatorApi(`Bearer ${readFileSync(credentialFile, "utf8").trim()}`);
    expect(await viaApi.json()).toEqual(listed);
  });

  it("docs/admin-api.md Authentication: the local credential is a file only its user reads (0600) in a folder only its user lists (0700)", () => {
    expect(statSync(credentialFile).mode & 0o777).toBe(0o600);
    expect(statSync(join(dataDir, "operator")).mode & 0o777).toBe(0o700);
    expect(readFileSync(credentialFile, "utf8")).toMatch(/^zlo_[A-Za-z0-9_-]{43}\n$/);
  });

  it("docs/admin-api.md Authentication: without ZONA_ADMIN_TOKEN a missing or wrong credential gets 401 invalid_admin_token", async () => {
    const credential = readFileSync(credentialFile, "utf8").trim();
    for (const authorization of [
      undefined,
      "Bearer zlo_wrong",
      `Bearer ${credential}-`,
      `Basic ${credential}`,
    ]) {
      const answer = await operatorApi(authorization);
      expect(answer.status, String(authorization)).toBe(401);
      expect(((await answer.json()) as { error: unknown }).error).toMatchObject({
        code: "invalid_admin_token",
        type: "invalid_request_error",
      });
    }
    expect((await operatorApi(`Bearer ${credential}`)).status).toBe(200);
    // Never in the log.
    expect(server?.output()).not.toContain(credential);
  });

  it("docs/admin-api.md Authentication: a clean stop removes the credential; the next start writes a new one and the old one is refused", async () => {
    const old = readFileSync(credentialFile, "utf8").trim();
    if (server) await stop(server.child);
    expect(existsSync(credentialFile)).toBe(false);

    server = await start();
    const fresh = readFileSync(credentialFile, "utf8").trim();
    expect(fresh).not.toBe(old);
    expect((await operatorApi(`Bearer ${old}`)).status).toBe(401);
    expect((await operatorApi(`Bearer ${fresh}`)).status).toBe(200);
    const run = await zona(["mail", "list", "--limit", "1"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`To:      ${EMAIL}`);
  }, 150_000);
});

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  await exited;
}
