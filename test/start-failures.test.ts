import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { lockDataDir } from "../src/store/data-dir-lock.ts";
import { freePort } from "./helpers/free-port.ts";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const STACK_FRAME = /^\s+at /m;

interface Ended {
  code: number | null;
  stderr: string;
}

/** Runs a real entry point of Zona with the Node.js of the tests and collects how it ended. */
function run(args: string[], env: Record<string, string>): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: REPO,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 40_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

/** Exit 1 and exactly one line on stderr, `zona: ...`, without a stack frame; returns the line. */
function oneLineFailure(ended: Ended): string {
  expect(ended.code, ended.stderr).toBe(1);
  expect(ended.stderr, ended.stderr).not.toMatch(STACK_FRAME);
  const lines = ended.stderr.split("\n").filter((line) => line !== "");
  expect(lines, ended.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^zona: /);
  return lines[0] ?? "";
}

describe("a start that fails says why in one line on stderr, without a stack trace, and exits 1", () => {
  let dir: string;
  let config: string;
  const cleanups: Array<() => Promise<void>> = [];
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "zona-start-failure-"));
    config = join(dir, "zona.yaml");
    await writeFile(config, "installation:\n  owned_by: zona-test\n");
  });
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()?.();
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const dataDir = async () => mkdtemp(join(dir, "data-"));
  /** The one line a start on this data folder fails with (a free port, no log lines). */
  const failureOn = async (data: string) =>
    oneLineFailure(
      await run(["src/main.ts"], {
        ZONA_CONFIG: config,
        ZONA_DATA_DIR: data,
        PORT: String(await freePort()),
        ZONA_LOG_LEVEL: "silent",
      }),
    );

  it("port in use: names the port and the host; nothing is created in the data folder", async () => {
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise((resolve) => holder.close(() => resolve())));
    const address = holder.address();
    const port = typeof address === "object" && address ? address.port : 0;
    const data = await dataDir();
    const line = oneLineFailure(
      await run(["src/main.ts"], {
        ZONA_CONFIG: config,
        ZONA_DATA_DIR: data,
        PORT: String(port),
        HOST: "127.0.0.1",
        ZONA_LOG_LEVEL: "silent",
      }),
    );
    expect(line).toContain(`port ${port} on 127.0.0.1 is already in use`);
    expect(existsSync(join(data, "zona.lock"))).toBe(false);
    // The port is checked before any data is made: the data folder stays as it was (empty).
    expect(await readdir(data)).toEqual([]);
  }, 60_000);

  it("database unreachable: names where, with the reason, never the password", async () => {
    const port = await freePort();
    const line = oneLineFailure(
      await run(["src/main.ts"], {
        ZONA_CONFIG: config,
        DATABASE_URL: `postgres://zona:s3cret-Passw0rd@127.0.0.1:${port}/zona`,
        PORT: String(await freePort()),
        ZONA_LOG_LEVEL: "silent",
      }),
    );
    expect(line).toBe(`zona: cannot reach the database at 127.0.0.1:${port}/zona (ECONNREFUSED)`);
    expect(line).not.toContain("s3cret");
  }, 60_000);

  it("data folder locked by a running Zona process: names the folder and the process", async () => {
    const data = await dataDir();
    const lock = lockDataDir(data);
    cleanups.push(async () => lock.release());
    const line = await failureOn(data);
    expect(line).toContain(data);
    expect(line).toContain(`in use by another Zona process (pid ${process.pid}`);
  }, 60_000);

  it("any other failure is one line too (a data folder that is a file)", async () => {
    const file = join(dir, "not-a-folder");
    await writeFile(file, "");
    const line = await failureOn(file);
    expect(line).toMatch(/^zona: could not start: .*not-a-folder/);
  }, 60_000);

  it("a data folder the embedded database cannot use says which folder and why, not [object Object]", async () => {
    const data = join(dir, "broken-data");
    await mkdir(data);
    // PGlite's folder is a file: its file system throws a bare errno object.
    await writeFile(join(data, "pglite"), "");
    const line = await failureOn(data);
    expect(line).toBe(`zona: could not start: ${join(data, "pglite")}: not a folder (ENOTDIR)`);
  }, 60_000);

  // The Node.js of the tests claims to be an older one before Zona's first module runs (Node 20
  // itself cannot load src/main.ts at all: docs/operations.md).
  const olderNode = `data:text/javascript,${encodeURIComponent(
    'Object.defineProperty(process, "version", { value: "v20.19.0" });' +
      'Object.defineProperty(process.versions, "node", { value: "20.19.0" });',
  )}`;
  const entries: Array<[string, string[]]> = [
    ["bin/zona.js (the zona command)", ["bin/zona.js", "accounts", "list"]],
    ["src/main.ts (the server)", ["src/main.ts"]],
    ["src/cli/main.ts (the command's module)", ["src/cli/main.ts", "accounts", "list"]],
  ];
  it.each(entries)(
    "Node.js older than 24 running %s: says which version is needed",
    async (_name, args) => {
      const data = await dataDir();
      const line = oneLineFailure(
        await run(["--import", olderNode, ...args], {
          ZONA_CONFIG: config,
          ZONA_DATA_DIR: data,
          PORT: String(await freePort()),
        }),
      );
      expect(line).toMatch(/^zona: Node\.js 24 or newer is needed, this is v20\.19\.0/);
      // Stopped before anything was opened.
      expect(existsSync(join(data, "zona.lock"))).toBe(false);
      expect(existsSync(join(data, "pglite"))).toBe(false);
    },
    60_000,
  );
});
