import { spawn } from "node:child_process";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const REPO = fileURLToPath(new URL("../..", import.meta.url));

/** Runs the real entry point (`npm start` runs the same file) and collects how it ended. */
function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["src/main.ts"], {
      cwd: REPO,
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

describe("a bad configuration stops the start", () => {
  let dir: string;
  let dataDir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "zona-bad-start-"));
    dataDir = await mkdtemp(join(tmpdir(), "zona-bad-start-data-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
  });

  it("exits with code 1, names the bad field on stderr, and never opens the database", async () => {
    const file = join(dir, "zona.yaml");
    await writeFile(
      file,
      "installation:\n  zones: [{ id: ch-ti }]\nmachines:\n  - { name: m1, zone: de-fra, protocol: espeak }\n",
    );
    const { code, stderr } = await start({ ZONA_CONFIG: file, ZONA_DATA_DIR: dataDir });
    expect(code).toBe(1);
    expect(stderr).toContain(`zona: invalid configuration (${file}):`);
    expect(stderr).toMatch(/^ {2}machines\[0\]\.zone: is not a zone of the installation/m);
    expect(await readdir(dataDir)).toEqual([]);
  });

  it("exits with code 1 and names PORT when PORT is not a number", async () => {
    // An empty file of its own, so that a zona.yaml in the checkout cannot change the outcome.
    const file = join(dir, "empty.yaml");
    await writeFile(file, "");
    const { code, stderr } = await start({ PORT: "abc", ZONA_CONFIG: file, ZONA_DATA_DIR: dataDir });
    expect(code).toBe(1);
    expect(stderr).toContain('zona: PORT: must be a whole number from 0 to 65535, got "abc"');
  });
});
