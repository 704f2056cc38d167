import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/run-cli.ts";
import { parseConfig } from "../../src/config/load.ts";
import { createServices } from "../../src/services/create-services.ts";
import { openStore } from "../../src/store/open-store.ts";
import { EMBEDDED_FOLDER_TEST_MS } from "../helpers/embedded-folder-timeout.ts";
import { ADMIN_TOKEN, type TestApp } from "../helpers/test-app.ts";
import {
  type ListedMail,
  mailsTo,
  newEmail,
  postJson,
  register,
  startAuthApp,
  tokenOf,
} from "./auth-fixtures.ts";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  // biome-ignore lint/suspicious/noExplicitAny: the parsed answer; the assertions check its shape
  json: any;
}

async function zona(args: string[], env: Record<string, string>, cwd: string): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, {
    stdout: { write: (chunk: string) => (stdout += chunk) },
    stderr: { write: (chunk: string) => (stderr += chunk) },
    stdin: Readable.from([]),
    env,
    cwd,
  });
  return {
    code,
    stdout,
    stderr,
    json: code === 0 && stdout.startsWith("{") ? JSON.parse(stdout) : undefined,
  };
}

describe("Mail without SMTP: the outbox (app.mail.smtp_url absent)", () => {
  let t: TestApp;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "zona-mail-"));
    t = await startAuthApp();
  });
  afterAll(async () => {
    try {
      await t?.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("mail lands in mail_outbox with sent_at null; GET /admin/v1/mail lists it newest first", async () => {
    const first = await register(t, { language: "de" });
    const second = await register(t, { language: "en" });
    await postJson(t, "/auth/forgot-password", { email: first.user.email });
    await t.app.services.accountMails.settled();

    const listed = await t.admin("GET", "/mail");
    expect(listed.status).toBe(200);
    expect(listed.body.object).toBe("list");
    const data = listed.body.data as ListedMail[];
    const ours = data.filter((mail) => [first.user.email, second.user.email].includes(mail.to));
    expect(ours.map((mail) => [mail.to, mail.subject])).toEqual([
      [first.user.email, "Passwort zurücksetzen"],
      [second.user.email, "Confirm your email address"],
      [first.user.email, "Bestätigen Sie Ihre E-Mail-Adresse"],
    ]);
    expect(ours[0]).toEqual({
      id: expect.any(String),
      object: "mail",
      to: first.user.email,
      subject: "Passwort zurücksetzen",
      body: expect.stringContaining(`${t.url}/reset-password?token=zpr_`),
      status: "pending",
      sent_at: null,
      last_error: null,
      created_at: expect.any(String),
    });
    // The operator passes the link on; it works.
    const verify = await postJson(t, "/auth/verify-email", {
      token: tokenOf(ours[2]?.body ?? "", "verify-email"),
    });
    expect(verify.status).toBe(200);
  });

  it("?pending=true keeps what no server took; limit and offset page; a bad filter is 400", async () => {
    const pending = await t.admin("GET", "/mail?pending=true");
    expect(pending.body.data.length).toBeGreaterThan(0);
    expect(pending.body.data.every((mail: ListedMail) => mail.sent_at === null)).toBe(true);
    const one = await t.admin("GET", "/mail?limit=1&offset=1");
    expect(one.body.data).toHaveLength(1);
    expect((await t.admin("GET", "/mail?pending=maybe")).status).toBe(400);
    // Operator only.
    expect((await t.fetch("/admin/v1/mail")).status).toBe(401);
  });

  it("zona mail list (HTTP mode) prints the same list; --pending and --limit", async () => {
    const email = newEmail("cli-http");
    await register(t, { email });
    await t.app.services.accountMails.settled();
    const env = { ZONA_URL: t.url, ZONA_ADMIN_TOKEN: ADMIN_TOKEN, ZONA_DATA_DIR: join(dir, "unused") };
    const run = await zona(["mail", "list", "--pending", "--limit", "1", "--json"], env, dir);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.json.data).toHaveLength(1);
    expect(run.json.data[0]).toMatchObject({ to: email, status: "pending" });
    expect(run.json).toEqual((await t.admin("GET", "/mail?pending=true&limit=1")).body);
    expect((await mailsTo(t, email))[0]?.body).toContain("/verify-email?token=zev_");
  });

  it("zona mail list (direct mode: the command opens the embedded database itself)", {
    timeout: EMBEDDED_FOLDER_TEST_MS,
  }, async () => {
    const dataDir = join(dir, "data");
    const config = parseConfig({ server: { data_dir: dataDir, log_level: "silent" } });
    const store = await openStore({ dataDir });
    const services = createServices(config, store);
    const email = newEmail("cli-direct");
    await services.accountMails.register({ email, password: "correct horse battery" });
    await services.accountMails.close();
    await store.close();

    const run = await zona(
      ["mail", "list", "--json"],
      { ZONA_DATA_DIR: dataDir, ZONA_LOG_LEVEL: "warn" },
      dir,
    );
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.json.data).toHaveLength(1);
    expect(run.json.data[0]).toMatchObject({
      to: email,
      status: "pending",
      subject: "Conferma il tuo indirizzo email",
    });
    expect(run.json.data[0].body).toMatch(/\/verify-email\?token=zev_/);

    const help = await zona(["mail", "list", "--help"], {}, dir);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("--pending");
  });
});
