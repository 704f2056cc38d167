import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LoginResponse } from "../../src/contract/app-api.ts";
import type { TestApp } from "../helpers/test-app.ts";
import {
  login,
  mailsTo,
  newEmail,
  PASSWORD,
  postJson,
  startAuthApp,
  startSmtpServer,
  tokenOf,
} from "./auth-fixtures.ts";

describe("Auth endpoints: the whole journey through a real SMTP server (app.mail.smtp_url)", () => {
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let t: TestApp;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    t = await startAuthApp({
      config: {
        app: {
          public_url: "https://chat.example.ch/",
          mail: { smtp_url: smtp.url, from: "Zona <no-reply@example.ch>" },
        },
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await smtp.close();
  });

  it("register -> verification mail -> verify -> login -> refresh -> logout", async () => {
    const email = newEmail("journey");

    // Register: 201 with the login response; the client is signed in, the email not verified yet.
    const registered = await postJson(t, "/auth/register", { email, password: PASSWORD, language: "en" });
    expect(registered.status).toBe(201);
    const signedUp = (await registered.json()) as LoginResponse;
    expect(signedUp.user).toEqual({ id: expect.any(String), email, email_verified: false });
    const unverified = await t.fetch("/api/v1/audio/voices", {
      headers: { authorization: `Bearer ${signedUp.access_token}` },
    });
    expect(unverified.status).toBe(403);

    // The verification mail reaches the SMTP server, in the account's language, with the web chat's link.
    const mail = await smtp.next(email);
    expect(mail.from).toBe("no-reply@example.ch");
    expect(mail.to).toEqual([email]);
    expect(mail.subject).toBe("Confirm your email address");
    expect(mail.text).toMatch(/https:\/\/chat\.example\.ch\/verify-email\?token=zev_[A-Za-z0-9_-]{43}\n/);
    const token = tokenOf(mail.text, "verify-email");

    // The outbox keeps a record of it, marked sent.
    const [recorded] = await mailsTo(t, email);
    expect(recorded).toMatchObject({ status: "sent", sent_at: expect.any(String), last_error: null });

    // Verify (GET, as the web chat's page calls it with the token of the link).
    const verified = await t.fetch(`/api/v1/auth/verify-email?token=${encodeURIComponent(token)}`);
    expect(verified.status).toBe(200);
    expect(await verified.json()).toEqual({ user: { id: signedUp.user.id, email, email_verified: true } });

    // The access token from registration works at once on endpoints that need a verified email.
    const nowVerified = await t.fetch("/api/v1/audio/voices", {
      headers: { authorization: `Bearer ${signedUp.access_token}` },
    });
    expect(nowVerified.status).toBe(200);

    // Login.
    const loggedIn = await login(t, email);
    expect(loggedIn.status).toBe(200);
    const session = (await loggedIn.json()) as LoginResponse;
    expect(session.user.email_verified).toBe(true);

    // Refresh: a new pair.
    const refreshed = await postJson(t, "/auth/refresh", { refresh_token: session.refresh_token });
    expect(refreshed.status).toBe(200);
    const next = (await refreshed.json()) as LoginResponse;
    expect(next.refresh_token).not.toBe(session.refresh_token);
    expect(next.user).toEqual({ id: signedUp.user.id, email, email_verified: true });

    // Logout: the refresh token is revoked; the access token keeps working until it expires.
    const loggedOut = await postJson(
      t,
      "/auth/logout",
      { refresh_token: next.refresh_token },
      next.access_token,
    );
    expect(loggedOut.status).toBe(204);
    expect(await loggedOut.text()).toBe("");
    expect((await postJson(t, "/auth/refresh", { refresh_token: next.refresh_token })).status).toBe(401);
    const stillWorks = await t.fetch("/api/v1/audio/voices", {
      headers: { authorization: `Bearer ${next.access_token}` },
    });
    expect(stillWorks.status).toBe(200);
  });

  it("the verification link works once; a second click answers the same for the verified account", async () => {
    const email = newEmail("twice");
    await postJson(t, "/auth/register", { email, password: PASSWORD });
    const token = tokenOf((await smtp.next(email)).text, "verify-email");
    const first = await postJson(t, "/auth/verify-email", { token });
    expect(first.status).toBe(200);
    const again = await postJson(t, "/auth/verify-email", { token });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(await first.json());

    const garbage = await postJson(t, "/auth/verify-email", { token: "zev_not-a-token" });
    expect(garbage.status).toBe(422);
    expect(await garbage.json()).toEqual({
      message: expect.any(String),
      error: { code: "validation_error", message: expect.any(String) },
      errors: { token: [expect.any(String)] },
    });
  });

  it("mail texts are in the account's language (it, en, de, fr; rm reads Italian)", async () => {
    const subjects: Record<string, string> = {
      it: "Conferma il tuo indirizzo email",
      de: "Bestätigen Sie Ihre E-Mail-Adresse",
      fr: "Confirmez votre adresse e-mail",
      rm: "Conferma il tuo indirizzo email",
    };
    for (const [language, subject] of Object.entries(subjects)) {
      const email = newEmail(`lang-${language}`);
      await postJson(t, "/auth/register", { email, password: PASSWORD, language });
      const mail = await smtp.next(email);
      expect(mail.subject).toBe(subject);
      expect(mail.text).toContain("https://chat.example.ch/verify-email?token=zev_");
    }
  });
});

describe("Auth endpoints: an SMTP server that refuses does not fail the request", () => {
  it("register answers 201; the mail stays in the outbox with last_error, listed as pending", async () => {
    const smtp = await startSmtpServer({ refuse: true });
    const t = await startAuthApp({ config: { app: { mail: { smtp_url: smtp.url } } } });
    try {
      const email = newEmail("refused");
      const response = await postJson(t, "/auth/register", { email, password: PASSWORD });
      expect(response.status).toBe(201);
      const [mail] = await mailsTo(t, email);
      expect(mail).toMatchObject({
        status: "failed",
        sent_at: null,
        last_error: expect.stringContaining("550"),
      });
      expect(mail?.body).toContain("/verify-email?token=zev_");
      const pending = await t.admin("GET", "/mail?pending=true");
      expect(pending.body.data.map((m: { to: string }) => m.to)).toContain(email);
    } finally {
      await t.close();
      await smtp.close();
    }
  });
});
