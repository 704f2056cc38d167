import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/run-cli.ts";
import { freePort } from "../helpers/free-port.ts";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../helpers/test-app.ts";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  // biome-ignore lint/suspicious/noExplicitAny: the parsed answer; the assertions check its shape
  json: any;
}

describe("zona in HTTP mode (ZONA_URL / --url: through the operator API of a running server)", () => {
  let t: TestApp;
  let dir: string;

  /** Runs the command in this process against the test app. */
  async function zona(args: string[], env: Record<string, string> = {}): Promise<Run> {
    let stdout = "";
    let stderr = "";
    const code = await runCli(args, {
      stdout: { write: (chunk: string) => (stdout += chunk) },
      stderr: { write: (chunk: string) => (stderr += chunk) },
      stdin: Readable.from([]),
      env: {
        ZONA_URL: t.url,
        ZONA_ADMIN_TOKEN: ADMIN_TOKEN,
        // Were the command to open a database itself, it would be this empty one, and the tests would notice.
        ZONA_DATA_DIR: join(dir, "data"),
        ...env,
      },
      cwd: dir,
    });
    return { code, stdout, stderr, json: code === 0 ? JSON.parse(stdout) : undefined };
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "zona-cli-http-"));
    t = await startTestApp({ config: { models: [{ id: "bge-m3", kind: "embedding" }] } });
  });
  afterAll(async () => {
    try {
      await t?.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("creates an account and a key whose secret works on /v1/models, then revokes it (401)", async () => {
    const account = await zona(["accounts", "create", "--email", "http@example.com", "--verified"]);
    expect(account.stderr).toBe("");
    expect(account.code).toBe(0);
    expect(account.json).toMatchObject({
      object: "account",
      email: "http@example.com",
      email_verified: true,
    });

    // The same answer the operator API gives for the account.
    const viaApi = await t.admin("GET", `/accounts/${account.json.id}`);
    expect(await zona(["accounts", "show", "http@example.com"])).toMatchObject({
      code: 0,
      json: viaApi.body,
    });

    const key = await zona(["keys", "create", "http@example.com", "--name", "laptop"]);
    expect(key.code).toBe(0);
    expect(key.json).toMatchObject({ object: "api_key", account_id: account.json.id, name: "laptop" });
    const secret: string = key.json.key;

    const models = await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${secret}` } });
    expect(models.status).toBe(200);

    const revoked = await zona(["keys", "revoke", key.json.id]);
    expect(revoked.json.status).toBe("revoked");
    const refused = await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${secret}` } });
    expect(refused.status).toBe(401);
  });

  it("covers the other operations: list, disable/enable, verify-email, keys list/show, credits", async () => {
    await zona(["accounts", "create", "--email", "ops@example.com"]);
    const listed = await zona(["accounts", "list", "--email", "ops@example.com"]);
    expect(listed.json.data).toHaveLength(1);
    const id: string = listed.json.data[0].id;
    expect((await zona(["accounts", "list", "--limit", "1"])).json.data).toHaveLength(1);
    expect((await zona(["accounts", "verify-email", id])).json.email_verified).toBe(true);
    expect((await zona(["accounts", "disable", "ops@example.com"])).json.disabled).toBe(true);
    expect((await zona(["accounts", "enable", id])).json.disabled).toBe(false);

    const key = await zona(["keys", "create", id, "--name", "k", "--monthly-limit", "3"]);
    expect((await zona(["keys", "list", "--account", "ops@example.com"])).json.data).toHaveLength(1);
    expect((await zona(["keys", "show", key.json.id])).json).toMatchObject({
      id: key.json.id,
      monthly_limit: 3,
    });

    expect((await zona(["credits", "set", id, "10"])).json.balance).toBe(10);
    expect((await zona(["credits", "add", id, "-4", "--note", "refund"])).json.balance).toBe(6);
    expect((await zona(["credits", "show", "ops@example.com"])).json).toEqual({
      object: "credit_balance",
      account_id: id,
      balance: 6,
      held: 0,
      currency: "CHF",
    });
  });

  it("an API error exits 1 with `zona: <message> (<code>)`", async () => {
    const missing = await zona(["keys", "show", "00000000-0000-4000-8000-000000000000"]);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe("");
    expect(missing.stderr).toBe(
      "zona: API key 00000000-0000-4000-8000-000000000000 not found. (not_found)\n",
    );

    const invalid = await zona(["accounts", "create", "--email", "nope"]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toBe("zona: 'email' must be an email address. (invalid_email)\n");
  });

  it("a wrong admin token exits 1 with invalid_admin_token; no token at all is refused before calling", async () => {
    const wrong = await zona(["accounts", "list"], { ZONA_ADMIN_TOKEN: "not-the-token-at-all" });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain("(invalid_admin_token)");

    const none = await zona(["accounts", "list"], { ZONA_ADMIN_TOKEN: "" });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("set ZONA_ADMIN_TOKEN");
  });

  it("--url wins over ZONA_URL; a server that is not there is named in the message", async () => {
    // Nothing listens there: free a moment ago, and never given to another test of this run.
    const port = await freePort();
    const deadUrl = `http://127.0.0.1:${port}`;
    const viaFlag = await zona(["accounts", "list", "--url", t.url], { ZONA_URL: deadUrl });
    expect(viaFlag.code).toBe(0);
    expect((await zona(["--url", t.url, "accounts", "list"], { ZONA_URL: deadUrl })).code).toBe(0);

    const refused = await zona(["accounts", "list"], { ZONA_URL: deadUrl });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `zona: cannot reach the Zona server at ${deadUrl} (ECONNREFUSED); is it running?\n`,
    );

    const bad = await zona(["accounts", "list", "--url", "ftp://example.com"]);
    expect(bad.code).toBe(2);
  });
});
