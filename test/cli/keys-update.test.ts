import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/run-cli.ts";
import { EMBEDDED_FOLDER_TEST_MS } from "../helpers/embedded-folder-timeout.ts";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../helpers/test-app.ts";
import { MINUTE_START, testClock } from "../limits/limit-fixtures.ts";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  // biome-ignore lint/suspicious/noExplicitAny: the parsed answer; the assertions check its shape
  json: any;
}

describe.each(["http", "direct"] as const)("zona keys --rpm and zona keys update (%s mode)", {
  timeout: EMBEDDED_FOLDER_TEST_MS,
}, (mode) => {
  let dir: string;
  let env: Record<string, string>;
  let t: TestApp | undefined;
  const clock = testClock(MINUTE_START + 1_000);

  async function zona(args: string[]): Promise<Run> {
    let stdout = "";
    let stderr = "";
    const code = await runCli(args, {
      stdout: { write: (chunk: string) => (stdout += chunk) },
      stderr: { write: (chunk: string) => (stderr += chunk) },
      stdin: Readable.from([]),
      env,
      cwd: dir,
    });
    return { code, stdout, stderr, json: code === 0 ? JSON.parse(stdout) : undefined };
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), `zona-cli-keys-${mode}-`));
    await writeFile(join(dir, "zona.yaml"), "installation:\n  zones:\n    - id: ch-ti\n    - id: ch-zh\n");
    env = { ZONA_DATA_DIR: join(dir, "data"), ZONA_CONFIG: join(dir, "zona.yaml"), ZONA_LOG_LEVEL: "warn" };
    if (mode === "http") {
      t = await startTestApp({
        now: clock.now,
        config: {
          installation: { zones: [{ id: "ch-ti" }, { id: "ch-zh" }] },
          tiers: { slow: { multiplier: 1, requests_per_minute: 10 } },
        },
      });
      env = { ...env, ZONA_URL: t.url, ZONA_ADMIN_TOKEN: ADMIN_TOKEN };
    }
  });
  afterAll(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("keys create --rpm sets requests_per_minute; update --rpm N|none changes and clears it; list and show show it", async () => {
    const account = await zona(["accounts", "create", "--email", `rpm-${mode}@example.com`, "--verified"]);
    expect(account.code).toBe(0);
    const created = await zona(["keys", "create", account.json.id, "--name", "test key", "--rpm", "2"]);
    expect(created.stderr).toBe("");
    expect(created.json).toMatchObject({ object: "api_key", name: "test key", requests_per_minute: 2 });
    const keyId: string = created.json.id;

    const models = async () =>
      (await fetch(`${t?.url}/v1/models`, { headers: { authorization: `Bearer ${created.json.key}` } }))
        .status;
    if (t) expect([await models(), await models(), await models()]).toEqual([200, 200, 429]);

    const raised = await zona(["keys", "update", keyId, "--rpm", "4"]);
    expect(raised.code).toBe(0);
    expect(raised.json).toMatchObject({ id: keyId, name: "test key", requests_per_minute: 4 });
    if (t) expect([await models(), await models(), await models()]).toEqual([200, 200, 429]);

    const listed = await zona(["keys", "list", "--account", `rpm-${mode}@example.com`]);
    expect(listed.json.data).toEqual([expect.objectContaining({ id: keyId, requests_per_minute: 4 })]);

    const cleared = await zona(["keys", "update", keyId, "--rpm", "none"]);
    expect(cleared.json.requests_per_minute).toBeNull();
    expect((await zona(["keys", "show", keyId])).json.requests_per_minute).toBeNull();
    // Back to the tier table's 10: 4 counted so far this minute.
    if (t) expect([await models(), await models()]).toEqual([200, 200]);
  });

  it("keys update changes the other settings too: --name, --zones a,b|all, --monthly-limit X|none, --expires T|never", async () => {
    const account = await zona(["accounts", "create", "--email", `settings-${mode}@example.com`]);
    const created = await zona(["keys", "create", account.json.id, "--name", "laptop", "--zones", "ch-ti"]);
    const keyId: string = created.json.id;
    const changed = await zona([
      "keys",
      "update",
      keyId,
      "--name",
      "desktop",
      "--zones",
      "ch-zh,ch-ti",
      "--monthly-limit",
      "12.5",
      "--expires",
      "2099-01-01T00:00:00Z",
    ]);
    expect(changed.json).toMatchObject({
      name: "desktop",
      zones: ["ch-zh", "ch-ti"],
      monthly_limit: 12.5,
      requests_per_minute: null,
      expires_at: "2099-01-01T00:00:00.000Z",
    });
    const cleared = await zona([
      "keys",
      "update",
      keyId,
      "--zones",
      "all",
      "--monthly-limit",
      "none",
      "--expires",
      "never",
    ]);
    expect(cleared.json).toMatchObject({
      name: "desktop",
      zones: null,
      monthly_limit: null,
      expires_at: null,
    });
  });

  it("a bad --rpm exits 1 with the operator's message naming requests_per_minute; nothing is changed", async () => {
    const account = await zona(["accounts", "create", "--email", `bad-rpm-${mode}@example.com`]);
    const refusedCreate = await zona(["keys", "create", account.json.id, "--name", "k", "--rpm", "0"]);
    expect(refusedCreate.code).toBe(1);
    expect(refusedCreate.stdout).toBe("");
    expect(refusedCreate.stderr).toMatch(/requests_per_minute/);
    const created = await zona(["keys", "create", account.json.id, "--name", "k", "--rpm", "5"]);
    for (const value of ["lots", "2.5", "-1"]) {
      const refused = await zona(["keys", "update", created.json.id, "--rpm", value]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/requests_per_minute/);
    }
    expect((await zona(["keys", "show", created.json.id])).json.requests_per_minute).toBe(5);
    expect((await zona(["keys", "list", "--account", account.json.id])).json.data).toHaveLength(1);
  });
});
