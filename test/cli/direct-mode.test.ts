import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/run-cli.ts";
import { EMBEDDED_FOLDER_TEST_MS } from "../helpers/embedded-folder-timeout.ts";

const ZONA_BIN = resolve(import.meta.dirname, "../../bin/zona.js");
const PASSWORD = "correct horse battery staple";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  // biome-ignore lint/suspicious/noExplicitAny: the parsed answer; the assertions check its shape
  json: any;
}

describe("zona in direct mode (no server: the command opens the embedded database itself)", {
  timeout: EMBEDDED_FOLDER_TEST_MS,
}, () => {
  let dir: string;
  let env: Record<string, string>;
  let accountId: string;
  let keyId: string;

  /** Runs the command in this process, as `zona ARGS` with `stdin` piped in. */
  async function zona(args: string[], stdin = ""): Promise<Run> {
    let stdout = "";
    let stderr = "";
    const code = await runCli(args, {
      stdout: { write: (chunk: string) => (stdout += chunk) },
      stderr: { write: (chunk: string) => (stderr += chunk) },
      stdin: Readable.from(stdin === "" ? [] : [stdin]),
      env,
      cwd: dir,
    });
    return { code, stdout, stderr, json: code === 0 ? JSON.parse(stdout) : undefined };
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "zona-cli-direct-"));
    await writeFile(join(dir, "zona.yaml"), "installation:\n  zones:\n    - id: ch-ti\n");
    env = { ZONA_DATA_DIR: join(dir, "data"), ZONA_CONFIG: join(dir, "zona.yaml"), ZONA_LOG_LEVEL: "warn" };
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("bin/zona.js creates an account with the password piped to stdin, never echoing it", async () => {
    const child = spawn(
      process.execPath,
      [ZONA_BIN, "accounts", "create", "--email", "ada@example.com", "--password-stdin"],
      {
        cwd: dir,
        env: { PATH: process.env.PATH ?? "", ...env },
      },
    );
    child.stdin.end(`${PASSWORD}\n`);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((done) => child.on("close", done));
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(stdout).not.toContain(PASSWORD);
    const account = JSON.parse(stdout);
    expect(account).toMatchObject({
      object: "account",
      email: "ada@example.com",
      email_verified: false,
      disabled: false,
      language: "it",
      has_password: true,
    });
    expect(stdout).toBe(`${JSON.stringify(account, null, 2)}\n`);
    accountId = account.id;
    // The command let go of the embedded database when it was done.
    expect(existsSync(join(dir, "data", "zona.lock"))).toBe(false);
  });

  it("accounts create takes --language and --verified, and refuses a taken email (exit 1, API message)", async () => {
    const second = await zona([
      "accounts",
      "create",
      "--email",
      "bo@example.com",
      "--language",
      "rm",
      "--verified",
    ]);
    expect(second.code).toBe(0);
    expect(second.json).toMatchObject({
      email: "bo@example.com",
      language: "rm",
      email_verified: true,
      has_password: false,
    });

    const taken = await zona(["accounts", "create", "--email", "ada@example.com"]);
    expect(taken.code).toBe(1);
    expect(taken.stdout).toBe("");
    expect(taken.stderr).toBe(
      "zona: An account with the email ada@example.com exists already. (email_taken)\n",
    );
  });

  it("accounts list pages and filters by email; accounts show takes an id or an email", async () => {
    const all = await zona(["accounts", "list"]);
    expect(all.code).toBe(0);
    expect(all.json.object).toBe("list");
    expect(all.json.data.map((a: { email: string }) => a.email)).toEqual([
      "ada@example.com",
      "bo@example.com",
    ]);

    const paged = await zona(["accounts", "list", "--limit", "1", "--offset", "1"]);
    expect(paged.json.data.map((a: { email: string }) => a.email)).toEqual(["bo@example.com"]);

    const filtered = await zona(["accounts", "list", "--email", "ada@example.com"]);
    expect(filtered.json.data).toHaveLength(1);

    const byEmail = await zona(["accounts", "show", "ada@example.com"]);
    expect(byEmail.code).toBe(0);
    expect(byEmail.json.id).toBe(accountId);
    const byId = await zona(["accounts", "show", accountId]);
    expect(byId.json).toEqual(byEmail.json);

    const unknown = await zona(["accounts", "show", "nobody@example.com"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe("zona: Account with the email nobody@example.com not found. (not_found)\n");
  });

  it("accounts verify-email, disable and enable change the account", async () => {
    expect((await zona(["accounts", "verify-email", "ada@example.com"])).json.email_verified).toBe(true);
    expect((await zona(["accounts", "disable", accountId])).json.disabled).toBe(true);
    expect((await zona(["accounts", "enable", "ada@example.com"])).json.disabled).toBe(false);
  });

  it("keys create with zones, a monthly limit and an expiry prints the one-time key; list, show, revoke", async () => {
    const expires = new Date(Date.now() + 30 * 86_400_000).toISOString();
    const created = await zona([
      "keys",
      "create",
      "ada@example.com",
      "--name",
      "ci",
      "--zones",
      "ch-ti",
      "--monthly-limit",
      "12.5",
      "--expires",
      expires,
    ]);
    expect(created.stderr).toBe("");
    expect(created.code).toBe(0);
    expect(created.json).toMatchObject({
      object: "api_key",
      account_id: accountId,
      name: "ci",
      zones: ["ch-ti"],
      monthly_limit: 12.5,
      expires_at: expires,
      status: "active",
      key: expect.stringMatching(/^sk-/),
    });
    keyId = created.json.id;

    const listed = await zona(["keys", "list", "--account", "ada@example.com"]);
    expect(listed.json.data.map((k: { id: string }) => k.id)).toEqual([keyId]);
    expect(listed.stdout).not.toContain(created.json.key);
    expect((await zona(["keys", "list"])).json.data).toHaveLength(1);

    const shown = await zona(["keys", "show", keyId]);
    expect(shown.json).toMatchObject({ id: keyId, status: "active" });
    expect(shown.json.key).toBeUndefined();

    const revoked = await zona(["keys", "revoke", keyId]);
    expect(revoked.json).toMatchObject({ id: keyId, status: "revoked", revoked_at: expect.any(String) });
  });

  it("keys create refuses zones the installation does not declare (exit 1 with the API message)", async () => {
    const refused = await zona(["keys", "create", accountId, "--name", "eu", "--zones", "ch-ti,eu-west"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      "zona: 'zones' must list zones of the installation (ch-ti); unknown: eu-west. (invalid_request_error)\n",
    );
  });

  it("credits set, add (negative too) and show", async () => {
    const set = await zona(["credits", "set", "ada@example.com", "20", "--note", "opening balance"]);
    expect(set.json).toEqual({
      object: "credit_balance",
      account_id: accountId,
      balance: 20,
      held: 0,
      currency: "CHF",
    });
    expect((await zona(["credits", "add", accountId, "-2.5"])).json.balance).toBe(17.5);
    expect((await zona(["credits", "add", accountId, "5", "--note", "top-up"])).json.balance).toBe(22.5);
    expect((await zona(["credits", "show", "ada@example.com"])).json.balance).toBe(22.5);

    const below = await zona(["credits", "add", accountId, "-100"]);
    expect(below.code).toBe(1);
    expect(below.stderr).toBe(
      "zona: This would leave the balance below zero, or below what requests in flight hold of it. (balance_below_zero)\n",
    );
  });

  it("a validation error exits 1 with the operator's message and prints nothing on stdout", async () => {
    const bad = await zona(["accounts", "create", "--email", "not-an-email"]);
    expect(bad).toMatchObject({ code: 1, stdout: "" });
    expect(bad.stderr).toBe("zona: 'email' must be an email address. (invalid_email)\n");

    const short = await zona(
      ["accounts", "create", "--email", "cy@example.com", "--password-stdin"],
      "short\n",
    );
    expect(short.code).toBe(1);
    expect(short.stderr).toMatch(
      /^zona: 'password' must be 8 to \d+ characters long\. \(invalid_password\)\n$/,
    );

    const amount = await zona(["credits", "set", accountId, "lots"]);
    expect(amount.code).toBe(1);
    expect(amount.stderr).toBe("zona: 'balance' must be a number. (invalid_request_error)\n");
  });

  it("keys create and keys list take the account the same two ways: as ACCOUNT or as --account ACCOUNT", async () => {
    const byOption = await zona(["keys", "create", "--account", "ada@example.com", "--name", "by-option"]);
    expect(byOption.stderr).toBe("");
    expect(byOption.json).toMatchObject({ object: "api_key", account_id: accountId, name: "by-option" });
    const placed = await zona(["keys", "list", "ada@example.com"]);
    const named = await zona(["keys", "list", "--account", accountId]);
    expect(placed.code).toBe(0);
    expect(named.json).toEqual(placed.json);
    const names = (placed.json.data as Array<{ name: string; account_id: string }>).map((key) => key.name);
    expect(names).toContain("by-option");
    expect(
      (placed.json.data as Array<{ account_id: string }>).every((key) => key.account_id === accountId),
    ).toBe(true);
    const both = await zona(["keys", "list", "ada@example.com", "--account", "someone@example.com"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toBe(
      "zona: give the account once: as ACCOUNT or as --account ACCOUNT\nRun 'zona keys list --help' for usage.\n",
    );
  });

  it("usage errors exit 2 before touching the database", async () => {
    const missing = await zona(["keys", "create", "--name", "x"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe("zona: missing ACCOUNT\nRun 'zona keys create --help' for usage.\n");

    const unknown = await zona(["accounts", "list", "--colour"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("zona: unknown option '--colour'");

    const password = await zona(["accounts", "create", "--email", "x@example.com", "--password=hunter22"]);
    expect(password.code).toBe(2);
    expect(password.stderr).toContain("--password-stdin");
    expect(password.stderr).not.toContain("hunter22");

    expect((await zona(["accounts", "show", "a", "b"])).code).toBe(2);
    expect((await zona(["money"])).code).toBe(2);
    expect((await zona(["keys", "rotate"])).code).toBe(2);
    expect((await zona([])).code).toBe(2);
  });
});
