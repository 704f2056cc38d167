import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/run-cli.ts";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../helpers/test-app.ts";
import { billedTestRoutes } from "./billed-test-routes.ts";

describe("Operators read usage with the zona command (usage list, usage summary)", () => {
  let t: TestApp;
  let dir: string;

  async function zona(args: string[]): Promise<{ code: number; json: unknown; stderr: string }> {
    let stdout = "";
    let stderr = "";
    const code = await runCli(args, {
      stdout: { write: (chunk: string) => (stdout += chunk) },
      stderr: { write: (chunk: string) => (stderr += chunk) },
      stdin: Readable.from([]),
      env: { ZONA_URL: t.url, ZONA_ADMIN_TOKEN: ADMIN_TOKEN, ZONA_DATA_DIR: join(dir, "data") },
      cwd: dir,
    });
    return { code, json: code === 0 ? JSON.parse(stdout) : undefined, stderr };
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "zona-usage-cli-"));
    t = await startTestApp({
      config: { tiers: { slow: { multiplier: 1, requests_per_minute: 1000 } } },
      keyApiPlugins: [billedTestRoutes],
    });
  });
  afterAll(async () => {
    try {
      await t?.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("lists the records of an account by email and sums a key's month", async () => {
    const { key, keyId } = await t.newKey({ email: "usage-cli@example.com", key: { monthly_limit: 5 } });
    for (const cost of [0.5, 1.25]) {
      await t.fetch("/v1/test-billed", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ max: 2, cost }),
      });
    }
    const list = await zona(["usage", "list", "--account", "usage-cli@example.com"]);
    expect(list.code).toBe(0);
    expect((list.json as { data: Array<{ cost: number }> }).data.map((r) => r.cost).sort()).toEqual([
      0.5, 1.25,
    ]);
    const summary = await zona(["usage", "summary", "--key", keyId]);
    expect(summary.json).toMatchObject({
      requests: 2,
      cost: 1.75,
      key_spend: { spent: 1.75, monthly_limit: 5 },
    });
    const bad = await zona(["usage", "summary", "--month", "November"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/month/);
  });
});
