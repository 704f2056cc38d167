import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LoginResponse } from "../../src/contract/app-api.ts";
import type { TestApp } from "../helpers/test-app.ts";
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
} from "./auth-fixtures.ts";

const NEW_PASSWORD = "a brand new passphrase";
const clock = movableClock();
let t: TestApp;

beforeAll(async () => {
  t = await startAuthApp({ now: clock.now });
});
afterAll(() => t.close());

const forgot = (email: unknown) => postJson(t, "/auth/forgot-password", { email });
const confirm = (token: string, password = NEW_PASSWORD) =>
  postJson(t, "/auth/password-reset/confirm", { token, password });
const refresh = (token: string) => postJson(t, "/auth/refresh", { refresh_token: token });

async function resetMails(email: string) {
  return (await mailsTo(t, email)).filter((mail) => mail.body.includes("/reset-password?token="));
}

describe("Authentication: /auth/forgot-password (payload: email; no account enumeration)", () => {
  it("the same 202 and body whether or not the account exists; only an existing account gets a mail", async () => {
    const { user } = await register(t);
    const known = await forgot(user.email);
    const unknownEmail = newEmail("nobody");
    const unknown = await forgot(unknownEmail);
    expect(known.status).toBe(202);
    expect(unknown.status).toBe(202);
    const knownBody = await known.json();
    expect(await unknown.json()).toEqual(knownBody);
    expect(knownBody).toEqual({ message: expect.any(String) });

    const [mail] = await resetMails(user.email);
    expect(mail?.subject).toBe("Reimposta la tua password");
    // Without app.public_url the link points to the address the app listens on (docs/configuration.md).
    expect(mail?.body).toContain(`${t.url}/reset-password?token=zpr_`);
    expect(mail?.body).toMatch(/\/reset-password\?token=zpr_[A-Za-z0-9_-]{43}\n/);
    expect(await mailsTo(t, unknownEmail)).toEqual([]);
  });

  it("a disabled account gets no mail; the answer is the same", async () => {
    const { user } = await register(t);
    await t.admin("POST", `/accounts/${user.id}/disable`);
    expect((await forgot(user.email)).status).toBe(202);
    expect(await resetMails(user.email)).toEqual([]);
  });

  it("one reset mail a minute per account; asking again within it answers the same and sends nothing", async () => {
    const { user } = await register(t);
    await forgot(user.email);
    await forgot(user.email);
    expect(await resetMails(user.email)).toHaveLength(1);
    clock.advance(61);
    await forgot(user.email);
    expect(await resetMails(user.email)).toHaveLength(2);
  });

  it("one reset mail a minute also when five asks arrive at once (the check and the token are one step)", async () => {
    const { user } = await register(t);
    await Promise.all(Array.from({ length: 5 }, () => forgot(user.email)));
    await t.app.services.accountMails.settled();
    expect(await resetMails(user.email)).toHaveLength(1);
  });

  it("a missing email is 422 validation_error on email", async () => {
    const response = await postJson(t, "/auth/forgot-password", {});
    expect(response.status).toBe(422);
    expect(((await response.json()) as { errors: object }).errors).toHaveProperty("email");
  });
});

describe("Authentication: /auth/password-reset/confirm (payload: token, password)", () => {
  it("sets the password, revokes every refresh token, marks the email verified, signs in; the token works once", async () => {
    const signedUp = await register(t);
    const email = signedUp.user.email;
    const other = (await (await login(t, email)).json()) as LoginResponse;
    await forgot(email);
    const [mail] = await resetMails(email);
    const token = tokenOf(mail?.body ?? "", "reset-password");

    const response = await confirm(token);
    expect(response.status).toBe(200);
    const body = (await response.json()) as LoginResponse;
    expect(body.user).toEqual({ id: signedUp.user.id, email, email_verified: true });
    expect(body.refresh_token).toMatch(/^zrt_/);

    // Every refresh token issued before the reset is revoked; the one just issued works.
    expect((await refresh(signedUp.refresh_token)).status).toBe(401);
    expect((await refresh(other.refresh_token)).status).toBe(401);
    expect((await refresh(body.refresh_token)).status).toBe(200);

    // The new password works, the old one does not.
    expect((await login(t, email, NEW_PASSWORD)).status).toBe(200);
    expect((await login(t, email, PASSWORD)).status).toBe(401);

    // The mail reached its owner: the email counts as verified.
    const voices = await t.fetch("/api/v1/audio/voices", {
      headers: { authorization: `Bearer ${body.access_token}` },
    });
    expect(voices.status).toBe(200);

    // Single use.
    const again = await confirm(token, "yet another passphrase");
    expect(again.status).toBe(422);
    expect(await again.json()).toEqual({
      message: expect.any(String),
      error: { code: "validation_error", message: expect.any(String) },
      errors: { token: [expect.any(String)] },
    });
    expect((await login(t, email, NEW_PASSWORD)).status).toBe(200);
  });

  it("an expired token (over one hour) is refused and changes nothing", async () => {
    const { user } = await register(t);
    await forgot(user.email);
    const [mail] = await resetMails(user.email);
    clock.advance(3600 + 1);
    const response = await confirm(tokenOf(mail?.body ?? "", "reset-password"));
    expect(response.status).toBe(422);
    expect(((await response.json()) as { errors: object }).errors).toHaveProperty("token");
    expect((await login(t, user.email, PASSWORD)).status).toBe(200);
  });

  it("a verification token is not a reset token; garbage is refused", async () => {
    const { user } = await register(t);
    const [verification] = await mailsTo(t, user.email);
    expect((await confirm(tokenOf(verification?.body ?? "", "verify-email"))).status).toBe(422);
    expect((await confirm("zpr_garbage")).status).toBe(422);
  });

  it("a password shorter than 8 or longer than 1024 characters is 422 on password", async () => {
    for (const password of ["short", "x".repeat(1025)]) {
      const response = await confirm("zpr_whatever", password);
      expect(response.status).toBe(422);
      expect(((await response.json()) as { errors: object }).errors).toHaveProperty("password");
    }
  });

  it("operator-made accounts without a password set one this way", async () => {
    const email = newEmail("nopw");
    await t.admin("POST", "/accounts", { email });
    expect((await login(t, email, NEW_PASSWORD)).status).toBe(401);
    await forgot(email);
    const [mail] = await resetMails(email);
    expect((await confirm(tokenOf(mail?.body ?? "", "reset-password"))).status).toBe(200);
    expect((await login(t, email, NEW_PASSWORD)).status).toBe(200);
  });
});

describe("Authentication: /auth/register (payload: email, password, language?)", () => {
  it("201 with the login response, email_verified false; the account's language picks the mail's", async () => {
    const email = newEmail("reg");
    const response = await postJson(t, "/auth/register", { email, password: PASSWORD, language: "fr" });
    expect(response.status).toBe(201);
    const body = (await response.json()) as LoginResponse;
    expect(body).toMatchObject({ token: body.access_token, user: { email, email_verified: false } });
    const [mail] = await mailsTo(t, email);
    expect(mail).toMatchObject({
      subject: "Confirmez votre adresse e-mail",
      status: "pending",
      sent_at: null,
    });
    const account = await t.admin("GET", `/accounts/${body.user.id}`);
    expect(account.body).toMatchObject({ language: "fr", has_password: true, email_verified: false });
  });

  it.each([
    ["nothing", {}, ["email", "password"]],
    ["a short password", { email: "a@example.com", password: "1234567" }, ["password"]],
    ["a password over 1024 characters", { email: "a@example.com", password: "x".repeat(1025) }, ["password"]],
    ["an unknown language", { email: "a@example.com", password: PASSWORD, language: "es" }, ["language"]],
    ["not an email address", { email: "not-an-email", password: PASSWORD }, ["email"]],
    ["a number for email", { email: 5, password: PASSWORD }, ["email"]],
  ])("%s: 422 validation_error listing the fields", async (_name, payload, fields) => {
    const response = await postJson(t, "/auth/register", payload);
    expect(response.status).toBe(422);
    const body = (await response.json()) as { error: { code: string }; errors: Record<string, string[]> };
    expect(body.error.code).toBe("validation_error");
    expect(Object.keys(body.errors).sort()).toEqual(fields);
  });

  it("an email taken (in any case) is 422 with errors.email", async () => {
    const { user } = await register(t);
    const response = await postJson(t, "/auth/register", {
      email: user.email.toUpperCase(),
      password: PASSWORD,
    });
    expect(response.status).toBe(422);
    expect(await response.json()).toMatchObject({
      error: { code: "validation_error" },
      errors: { email: [expect.stringContaining("exists already")] },
    });
  });
});

describe("Authentication: /auth/resend-verification (signed in, unverified allowed)", () => {
  it("202 {sent: true} with a new mail; once a minute (429 with Retry-After); 200 {sent: false} once verified", async () => {
    const session = await register(t);
    const resend = () => postJson(t, "/auth/resend-verification", {}, session.access_token);
    const early = await resend();
    expect(early.status).toBe(429);
    expect(Number(early.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await early.json()).toEqual({ message: "Too Many Attempts." });

    clock.advance(61);
    const sent = await resend();
    expect(sent.status).toBe(202);
    expect(await sent.json()).toEqual({ sent: true, email_verified: false });
    const mails = await mailsTo(t, session.user.email);
    expect(mails).toHaveLength(2);

    // Both links work until one is used: follow the newest.
    const verified = await postJson(t, "/auth/verify-email", {
      token: tokenOf(mails[0]?.body ?? "", "verify-email"),
    });
    expect(verified.status).toBe(200);
    const done = await resend();
    expect(done.status).toBe(200);
    expect(await done.json()).toEqual({ sent: false, email_verified: true });
  });

  it("needs the access token", async () => {
    expect((await postJson(t, "/auth/resend-verification", {})).status).toBe(401);
  });

  it("a verification link expires after 7 days", async () => {
    const session = await register(t);
    const [mail] = await mailsTo(t, session.user.email);
    clock.advance(7 * 24 * 3600 + 1);
    const response = await postJson(t, "/auth/verify-email", {
      token: tokenOf(mail?.body ?? "", "verify-email"),
    });
    expect(response.status).toBe(422);
  });
});
