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

const clock = movableClock();
let t: TestApp;

beforeAll(async () => {
  t = await startAuthApp({ now: clock.now });
});
afterAll(() => t.close());

/** An account opened by the operator with a password (email verified unless told otherwise). */
async function operatorAccount(options: { password?: string | null; verified?: boolean } = {}) {
  const email = newEmail("op");
  const password = options.password === undefined ? PASSWORD : options.password;
  const created = await t.admin("POST", "/accounts", {
    email,
    email_verified: options.verified ?? true,
    ...(password === null ? {} : { password }),
  });
  if (created.status !== 201) throw new Error(JSON.stringify(created.body));
  return { id: created.body.id as string, email };
}

const voices = (token: string) =>
  t.fetch("/api/v1/audio/voices", { headers: { authorization: `Bearer ${token}` } });

describe("Login response (app API)", () => {
  it("token (= access_token), access_token, refresh_token, the three lifetimes, user {id, email, email_verified}; nothing else", async () => {
    const account = await operatorAccount();
    const response = await login(t, account.email);
    expect(response.status).toBe(200);
    const body = (await response.json()) as LoginResponse;
    expect(Object.keys(body).sort()).toEqual(
      [
        "access_expires_in_seconds",
        "access_token",
        "expires_in_seconds",
        "refresh_expires_in_seconds",
        "refresh_token",
        "token",
        "user",
      ].sort(),
    );
    expect(body).toEqual({
      token: body.access_token,
      access_token: expect.stringMatching(/^zat_/),
      refresh_token: expect.stringMatching(/^zrt_[A-Za-z0-9_-]{43}$/),
      expires_in_seconds: 86_400,
      access_expires_in_seconds: 86_400,
      refresh_expires_in_seconds: 2_592_000,
      user: { id: account.id, email: account.email, email_verified: true },
    });
    expect((await voices(body.token)).status).toBe(200);
  });

  it("the lifetimes follow app.access_token_seconds and app.refresh_token_seconds", async () => {
    const short = await startAuthApp({
      config: { app: { access_token_seconds: 600, refresh_token_seconds: 3600 } },
    });
    try {
      const created = await short.admin("POST", "/accounts", { email: newEmail(), password: PASSWORD });
      const body = (await (await login(short, created.body.email)).json()) as LoginResponse;
      expect(body).toMatchObject({
        expires_in_seconds: 600,
        access_expires_in_seconds: 600,
        refresh_expires_in_seconds: 3600,
      });
    } finally {
      await short.close();
    }
  });

  it("the email is matched without regard to case and surrounding spaces", async () => {
    const account = await operatorAccount();
    const response = await login(t, `  ${account.email.toUpperCase()} `);
    expect(response.status).toBe(200);
  });
});

describe("Authentication / App API: wrong credentials give 401 invalid_credentials", () => {
  const cases: Array<[string, () => Promise<{ email: string; password: string }>]> = [
    [
      "wrong password",
      async () => ({ email: (await operatorAccount()).email, password: "not the password" }),
    ],
    ["unknown email", async () => ({ email: newEmail("nobody"), password: PASSWORD })],
    [
      "an account without a password",
      async () => ({ email: (await operatorAccount({ password: null })).email, password: PASSWORD }),
    ],
    [
      "a disabled account with the right password",
      async () => {
        const account = await operatorAccount();
        await t.admin("POST", `/accounts/${account.id}/disable`);
        return { email: account.email, password: PASSWORD };
      },
    ],
  ];
  const messages = new Set<string>();
  it.each(cases)("%s", async (_name, make) => {
    const { email, password } = await make();
    const response = await postJson(t, "/auth/login", { email, password });
    expect(response.status).toBe(401);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body).toEqual({ error: { code: "invalid_credentials", message: expect.any(String) } });
    messages.add(body.error.message);
    // The same message whichever was wrong.
    expect(messages.size).toBe(1);
  });

  it("missing or non-string fields are 422 validation_error listing each field", async () => {
    const response = await postJson(t, "/auth/login", { email: 42 });
    expect(response.status).toBe(422);
    const body = (await response.json()) as { errors: Record<string, string[]>; error: { code: string } };
    expect(body.error.code).toBe("validation_error");
    expect(Object.keys(body.errors).sort()).toEqual(["email", "password"]);

    // Longer than any password can be: refused on the field before any credential check.
    const long = await postJson(t, "/auth/login", { email: newEmail(), password: "x".repeat(1025) });
    expect(long.status).toBe(422);
    expect(((await long.json()) as { errors: object }).errors).toHaveProperty("password");
  });
});

describe("Authentication / App API: 401 unauthorized", () => {
  it.each([
    ["no Authorization header", () => undefined],
    ["a garbage token", () => "garbage"],
    ["a forged access token", () => "zat_eyJzdWIiOiJ4IiwiaWF0IjoxLCJleHAiOjk5OTk5OTk5OTl9.bad"],
    ["a refresh token used as access token", async () => (await register(t)).refresh_token],
  ] as Array<[string, () => Promise<string | undefined> | string | undefined]>)("%s", async (_name, make) => {
    const token = await make();
    const response = await t.fetch("/api/v1/audio/voices", {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ error: { code: "unauthorized", message: expect.any(String) } });
  });

  it("an API key gets 401 on the app API", async () => {
    const { key } = await t.newKey();
    const response = await voices(key);
    expect(response.status).toBe(401);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
  });

  it("an expired access token: 401 after access_expires_in_seconds; the refresh token still gives a new pair", async () => {
    const account = await operatorAccount();
    const session = (await (await login(t, account.email)).json()) as LoginResponse;
    clock.advance(86_400 - 5);
    expect((await voices(session.access_token)).status).toBe(200);
    clock.advance(10);
    const expired = await voices(session.access_token);
    expect(expired.status).toBe(401);
    expect(((await expired.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
    const refreshed = await postJson(t, "/auth/refresh", { refresh_token: session.refresh_token });
    expect(refreshed.status).toBe(200);
    expect((await voices(((await refreshed.json()) as LoginResponse).access_token)).status).toBe(200);
  });

  it("a disabled account: its access token is 401 at once, its refresh token too", async () => {
    const account = await operatorAccount();
    const session = (await (await login(t, account.email)).json()) as LoginResponse;
    expect((await voices(session.access_token)).status).toBe(200);
    await t.admin("POST", `/accounts/${account.id}/disable`);
    expect((await voices(session.access_token)).status).toBe(401);
    const refresh = await postJson(t, "/auth/refresh", { refresh_token: session.refresh_token });
    expect(refresh.status).toBe(401);
    expect(((await refresh.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
    // Enabled again, the refresh token (not retired by the refused attempt) works again.
    await t.admin("POST", `/accounts/${account.id}/enable`);
    expect((await postJson(t, "/auth/refresh", { refresh_token: session.refresh_token })).status).toBe(200);
  });
});

describe("Authentication / App API: 403 email_unverified until the email is verified", () => {
  it("an unverified account signs in (the tokens are issued); other endpoints answer 403", async () => {
    const account = await operatorAccount({ verified: false });
    const response = await login(t, account.email);
    expect(response.status).toBe(200);
    const session = (await response.json()) as LoginResponse;
    expect(session.user.email_verified).toBe(false);
    const refused = await voices(session.access_token);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({
      error: { code: "email_unverified", message: expect.any(String) },
    });
  });

  it("a registered user: 403 before following the mail's link, 200 right after, with the same access token", async () => {
    const signedUp = await register(t);
    expect((await voices(signedUp.access_token)).status).toBe(403);
    const [mail] = await mailsTo(t, signedUp.user.email);
    const verified = await postJson(t, "/auth/verify-email", {
      token: tokenOf(mail?.body ?? "", "verify-email"),
    });
    expect(verified.status).toBe(200);
    expect((await voices(signedUp.access_token)).status).toBe(200);
    const again = (await (await login(t, signedUp.user.email)).json()) as LoginResponse;
    expect(again.user.email_verified).toBe(true);
  });
});
