import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LoginResponse } from "../../src/contract/app-api.ts";
import { loggerOptions } from "../../src/http/logger.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { mailsTo, newEmail, postJson, startSmtpServer, TRUSTED_LOOPBACK, tokenOf } from "./auth-fixtures.ts";

describe("Authentication: tokens and passwords never reach the log", () => {
  const lines: string[] = [];
  let t: TestApp;
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  beforeAll(async () => {
    // A server that refuses every mail, so that the failure path logs too.
    smtp = await startSmtpServer({ refuse: true });
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    t = await startTestApp({
      config: { ...TRUSTED_LOOPBACK, app: { mail: { smtp_url: smtp.url } } },
      logger: pino(loggerOptions("debug"), sink),
    });
  });
  afterAll(async () => {
    await t.close();
    await smtp.close();
  });

  it("register, verify, login, refresh, logout, forgot, reset: the log holds none of the secrets", async () => {
    const email = newEmail("log");
    const password = "secret-password-41";
    const newPassword = "secret-password-42";
    const signedUp = (await (
      await postJson(t, "/auth/register", { email, password })
    ).json()) as LoginResponse;
    const verifyToken = tokenOf((await mailsTo(t, email))[0]?.body ?? "", "verify-email");
    await t.fetch(`/api/v1/auth/verify-email?token=${verifyToken}`);
    const session = (await (await postJson(t, "/auth/login", { email, password })).json()) as LoginResponse;
    const next = (await (
      await postJson(t, "/auth/refresh", { refresh_token: session.refresh_token })
    ).json()) as LoginResponse;
    await postJson(t, "/auth/refresh", { refresh_token: session.refresh_token }); // reuse: logged as a warning
    await postJson(t, "/auth/logout", { refresh_token: next.refresh_token }, next.access_token);
    await postJson(t, "/auth/forgot-password", { email });
    const resetToken = tokenOf((await mailsTo(t, email))[0]?.body ?? "", "reset-password");
    const reset = await postJson(t, "/auth/password-reset/confirm", {
      token: resetToken,
      password: newPassword,
    });
    expect(reset.status).toBe(200);

    const log = lines.join("");
    expect(log).toContain("mail not sent"); // the refusing server was logged
    expect(log).toContain("refresh token was used again");
    for (const secret of [
      password,
      newPassword,
      verifyToken,
      resetToken,
      signedUp.access_token,
      signedUp.refresh_token,
      session.refresh_token,
      next.refresh_token,
      next.access_token,
    ]) {
      expect(log).not.toContain(secret);
    }
  });
});
