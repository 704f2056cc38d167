import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/run-cli.ts";
import type { LoginResponse } from "../../src/contract/app-api.ts";
import {
  login,
  mailsTo,
  movableClock,
  newEmail,
  PASSWORD,
  postJson,
  register,
  startAuthApp,
  tokenOf,
} from "../app/auth-fixtures.ts";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../helpers/test-app.ts";

/**
 * Mail: the auth endpoints that send mail tell nobody whether an address has an
 * account, a mailed token acts on its own account only, and the outbox (which holds the links) is
 * the operator's alone. docs/app-auth.md describes the endpoints; the spec leaves their payloads open.
 */

const NEW_PASSWORD = "a brand new passphrase";
const VOLATILE = new Set([
  "date",
  "x-request-id",
  "x-ratelimit-remaining",
  "x-ratelimit-reset",
  "content-length",
]);

/** What a client sees of an answer: status, headers (those not volatile by nature) and body without the request id. */
async function seen(response: Response) {
  const headers: Record<string, string> = {};
  for (const [name, value] of response.headers) if (!VOLATILE.has(name)) headers[name] = value;
  const body = (await response.text()).replace(/req_[0-9a-f]{32}/g, "<request>");
  return { status: response.status, headers, body };
}

const clock = movableClock();
let t: TestApp;
beforeAll(async () => {
  t = await startAuthApp({ now: clock.now });
});
afterAll(() => t?.close());

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
/** Whether an access token still opens an endpoint that needs a verified account. */
const opens = async (token: string) =>
  (await t.fetch("/api/v1/audio/voices", { headers: bearer(token) })).status;

/** One account of each kind an address can belong to. */
async function accountsOfEveryKind() {
  const verified = await register(t);
  await t.admin("POST", `/accounts/${verified.user.id}/verify-email`);
  const unverified = await register(t);
  const disabled = await register(t);
  await t.admin("POST", `/accounts/${disabled.user.id}/disable`);
  const withoutPassword = newEmail("operator-made");
  await t.admin("POST", "/accounts", { email: withoutPassword });
  return { verified, unverified, disabled, withoutPassword };
}

describe("POST /auth/forgot-password tells nothing about the address (docs/app-auth.md: the same 202 whether or not an account has it)", () => {
  it("unknown, verified, unverified, disabled, operator-made, in capitals, with spaces, asked twice in a minute: the same answer; mail only to enabled accounts, at their stored address", async () => {
    const kinds = await accountsOfEveryKind();
    const verified = kinds.verified.user.email;
    const addresses: Array<[string, string]> = [
      ["an address with no account", newEmail("nobody")],
      ["a verified account", verified],
      ["an unverified account", kinds.unverified.user.email],
      ["a disabled account", kinds.disabled.user.email],
      ["an operator-made account without a password", kinds.withoutPassword],
      ["a verified account, in capitals", verified.toUpperCase()],
      ["a verified account, with spaces around", `  ${verified}  `],
      ["a verified account, again within the minute", verified],
    ];
    const baseline = await seen(await postJson(t, "/auth/forgot-password", { email: newEmail("nobody") }));
    expect(baseline.status).toBe(202);
    for (const [kind, email] of addresses) {
      expect(await seen(await postJson(t, "/auth/forgot-password", { email })), kind).toEqual(baseline);
    }
    const resets = async (email: string) =>
      (await mailsTo(t, email)).filter((mail) => mail.body.includes("/reset-password?token=zpr_"));
    expect(await resets(verified)).toHaveLength(1);
    expect(await resets(kinds.unverified.user.email)).toHaveLength(1);
    expect(await resets(kinds.withoutPassword)).toHaveLength(1);
    expect(await resets(kinds.disabled.user.email)).toEqual([]);
    for (const typed of [verified.toUpperCase(), `  ${verified}  `])
      expect(await mailsTo(t, typed)).toEqual([]);
  });

  it.each([
    ["a header injected after the address", "{victim}\r\nBcc: {attacker}"],
    ["a second address after a comma", "{victim}, {attacker}"],
    ["a second address after a semicolon", "{victim};{attacker}"],
    ["the attacker's address in the display name", `"{attacker}" <{victim}>`],
    ["the victim's address as the attacker's sub-address", "{attackerLocal}+{victimLocal}@example.com"],
  ])("%s: the same answer, and no mail reaches the attacker", async (_name, template) => {
    const victim = (await register(t)).user.email;
    const attacker = newEmail("attacker");
    const email = template
      .replaceAll("{victim}", victim)
      .replaceAll("{attacker}", attacker)
      .replaceAll("{attackerLocal}", attacker.split("@")[0] ?? "")
      .replaceAll("{victimLocal}", victim.split("@")[0] ?? "");
    const baseline = await seen(await postJson(t, "/auth/forgot-password", { email: newEmail("nobody") }));
    expect(await seen(await postJson(t, "/auth/forgot-password", { email }))).toEqual(baseline);
    await t.app.services.accountMails.settled();
    const all = (await t.admin("GET", "/mail?limit=1000")).body.data as Array<{ to: string }>;
    expect(all.filter((mail) => mail.to.includes(attacker.split("@")[0] ?? attacker))).toEqual([]);
  });
});

describe("A mailed token acts on its own account only (docs/app-auth.md: tokens are opaque, work once, for their account)", () => {
  it("A's reset token with B's email, id and access token beside it changes A's password only; B keeps password and sessions", async () => {
    const a = await register(t);
    const b = await register(t);
    await postJson(t, "/auth/forgot-password", { email: a.user.email });
    const [mail] = await mailsTo(t, a.user.email);
    const token = tokenOf(mail?.body ?? "", "reset-password");
    const answer = await t.fetch("/api/v1/auth/password-reset/confirm", {
      method: "POST",
      headers: { "content-type": "application/json", ...bearer(b.access_token) },
      body: JSON.stringify({
        token,
        password: NEW_PASSWORD,
        email: b.user.email,
        user_id: b.user.id,
        account_id: b.user.id,
      }),
    });
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as LoginResponse).user.id).toBe(a.user.id);
    expect((await login(t, a.user.email, NEW_PASSWORD)).status).toBe(200);
    expect((await login(t, b.user.email, NEW_PASSWORD)).status).toBe(401);
    expect((await login(t, b.user.email, PASSWORD)).status).toBe(200);
    expect((await postJson(t, "/auth/refresh", { refresh_token: b.refresh_token })).status).toBe(200);
  });

  it("A's verification token with B's access token and email beside it verifies A only; a reset token is no verification token, nor the reverse", async () => {
    const a = await register(t);
    const b = await register(t);
    const [mail] = await mailsTo(t, a.user.email);
    const verifyToken = tokenOf(mail?.body ?? "", "verify-email");
    await postJson(t, "/auth/forgot-password", { email: b.user.email });
    const resetMail = (await mailsTo(t, b.user.email)).find((m) => m.body.includes("reset-password"));
    const resetToken = tokenOf(resetMail?.body ?? "", "reset-password");
    expect((await postJson(t, "/auth/verify-email", { token: resetToken })).status).toBe(422);
    expect(
      (await postJson(t, "/auth/password-reset/confirm", { token: verifyToken, password: NEW_PASSWORD }))
        .status,
    ).toBe(422);

    const answer = await postJson(
      t,
      "/auth/verify-email",
      { token: verifyToken, email: b.user.email },
      b.access_token,
    );
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { user: { id: string } }).user.id).toBe(a.user.id);
    expect(await opens(a.access_token)).toBe(200);
    expect(await opens(b.access_token)).toBe(403);
  });

  it("resend-verification mails the signed-in user's own address, whatever the body names", async () => {
    const a = await register(t);
    const b = await register(t);
    clock.advance(61);
    const answer = await postJson(t, "/auth/resend-verification", { email: a.user.email }, b.access_token);
    expect(answer.status).toBe(202);
    expect(await mailsTo(t, a.user.email)).toHaveLength(1);
    expect(await mailsTo(t, b.user.email)).toHaveLength(2);
  });

  it("someone who registered an address before its owner loses every session once the owner resets the password (access tokens too)", async () => {
    const email = newEmail("victim");
    const squatter = await register(t, { email });
    // Used once before (unverified, so 403): the session cache knows the account as it was.
    expect(await opens(squatter.access_token)).toBe(403);
    await postJson(t, "/auth/forgot-password", { email });
    const reset = (await mailsTo(t, email)).find((mail) => mail.body.includes("reset-password"));
    const confirmed = await postJson(t, "/auth/password-reset/confirm", {
      token: tokenOf(reset?.body ?? "", "reset-password"),
      password: NEW_PASSWORD,
    });
    expect(confirmed.status).toBe(200);
    const owner = (await confirmed.json()) as LoginResponse;
    expect((await postJson(t, "/auth/refresh", { refresh_token: squatter.refresh_token })).status).toBe(401);
    // The account is verified now: a token from before the reset would read the owner's conversations.
    expect(await opens(squatter.access_token)).toBe(401);
    expect(await opens(owner.access_token)).toBe(200);
  });
});

describe("POST /auth/register with an address that has an account (docs/app-auth.md: 422 with errors.email)", () => {
  it("verified, unverified, disabled, operator-made, in capitals, with spaces: one answer, no token, no mail, the account untouched", async () => {
    const kinds = await accountsOfEveryKind();
    const taken: Array<[string, string]> = [
      ["a verified account", kinds.verified.user.email],
      ["an unverified account", kinds.unverified.user.email],
      ["a disabled account", kinds.disabled.user.email],
      ["an operator-made account without a password", kinds.withoutPassword],
      ["a verified account, in capitals", kinds.verified.user.email.toUpperCase()],
      ["a verified account, with spaces around", `  ${kinds.verified.user.email} `],
    ];
    const mailsBefore = await mailsTo(t, kinds.verified.user.email);
    const answers = [];
    for (const [kind, email] of taken) {
      const answer = await seen(await postJson(t, "/auth/register", { email, password: NEW_PASSWORD }));
      expect(answer.status, kind).toBe(422);
      answers.push(answer.body);
    }
    expect(new Set(answers).size).toBe(1);
    const body = JSON.parse(answers[0] ?? "{}");
    expect(Object.keys(body.errors)).toEqual(["email"]);
    expect(answers[0]).not.toMatch(/zat_|zrt_|zev_|zpr_/);
    for (const [, email] of taken) expect(answers[0]).not.toContain(email.trim());
    expect(await mailsTo(t, kinds.verified.user.email)).toEqual(mailsBefore);
    expect((await login(t, kinds.verified.user.email, PASSWORD)).status).toBe(200);
    expect((await login(t, kinds.verified.user.email, NEW_PASSWORD)).status).toBe(401);
    expect((await postJson(t, "/auth/refresh", { refresh_token: kinds.verified.refresh_token })).status).toBe(
      200,
    );
  });
});

describe("The outbox is the operator's alone (docs/app-auth.md: the outbox keeps the links; GET /admin/v1/mail, zona mail list)", () => {
  let dir: string;
  let user: LoginResponse;
  let key: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "zona-mail-isolation-"));
    user = await register(t);
    key = (await t.newKey()).key;
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("GET /admin/v1/mail with any credential but the operator token: 401, exactly like none, naming no mail", async () => {
    const none = await seen(await t.fetch("/admin/v1/mail"));
    expect(none.status).toBe(401);
    const mail = ((await t.admin("GET", "/mail?limit=1")).body.data as Array<{ body: string }>)[0];
    const tries: Array<[string, Record<string, string>, string?]> = [
      ["the user's access token", bearer(user.access_token)],
      ["the user's refresh token", bearer(user.refresh_token)],
      ["an API key", bearer(key)],
      ["the operator token in capitals", bearer(ADMIN_TOKEN.toUpperCase())],
      ["the operator token and one more character", bearer(`${ADMIN_TOKEN}x`)],
      ["the operator token less its last character", bearer(ADMIN_TOKEN.slice(0, -1))],
      [
        "the operator token as Basic auth",
        { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString("base64")}` },
      ],
      ["the operator token in another header", { "x-admin-token": ADMIN_TOKEN }],
      ["the operator token in the query", {}, `?token=${ADMIN_TOKEN}`],
    ];
    for (const [name, headers, query] of tries) {
      const answer = await seen(await t.fetch(`/admin/v1/mail${query ?? ""}`, { headers }));
      expect(answer, name).toEqual(none);
      expect(answer.body).not.toContain(mail?.body.slice(-30));
    }
  });

  it.each([
    "/api/v1/mail",
    "/api/v1/web/mail",
    "/api/v1/auth/mail",
    "/v1/mail",
  ])("%s does not exist for a user or a key (404 unknown_endpoint)", async (path) => {
    for (const token of [user.access_token, key]) {
      const answer = await t.fetch(path, { headers: bearer(token) });
      expect(answer.status).toBe(404);
      expect(((await answer.json()) as { error: { code: string } }).error.code).toBe("unknown_endpoint");
    }
  });

  it("an installation without ZONA_ADMIN_TOKEN has no outbox endpoint at all", async () => {
    const bare = await startTestApp({ config: { server: { admin_token: undefined } } });
    try {
      const answer = await bare.fetch("/admin/v1/mail", { headers: bearer(ADMIN_TOKEN) });
      expect(answer.status).toBe(404);
    } finally {
      await bare.close();
    }
  });

  it("zona mail list through the server: without the operator token or with a wrong one it fails and prints no mail", async () => {
    for (const token of [undefined, `${ADMIN_TOKEN}-wrong`, user.access_token]) {
      let stdout = "";
      let stderr = "";
      const code = await runCli(["mail", "list"], {
        stdout: { write: (chunk: string) => (stdout += chunk) },
        stderr: { write: (chunk: string) => (stderr += chunk) },
        stdin: Readable.from([]),
        env: {
          ZONA_URL: t.url,
          ZONA_DATA_DIR: join(dir, "unused"),
          ...(token ? { ZONA_ADMIN_TOKEN: token } : {}),
        },
        cwd: dir,
      });
      expect(code).not.toBe(0);
      expect(stdout).toBe("");
      expect(stderr).not.toContain(user.user.email);
      expect(stderr).not.toMatch(/zev_|zpr_/);
    }
  });
});
