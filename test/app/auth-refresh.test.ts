import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LoginResponse } from "../../src/contract/app-api.ts";
import type { TestApp } from "../helpers/test-app.ts";
import { STORE_KINDS } from "../helpers/test-store.ts";
import { login, movableClock, postJson, register, startAuthApp, verifiedUser } from "./auth-fixtures.ts";

const refresh = (t: TestApp, token: string) => postJson(t, "/auth/refresh", { refresh_token: token });
const voices = (t: TestApp, token: string) =>
  t.fetch("/api/v1/audio/voices", { headers: { authorization: `Bearer ${token}` } });

async function signIn(t: TestApp, email: string): Promise<LoginResponse> {
  const response = await login(t, email);
  if (response.status !== 200) throw new Error(`login: ${response.status}`);
  return (await response.json()) as LoginResponse;
}

describe.each(STORE_KINDS)("Refresh tokens (States and transitions) on %s", (kind) => {
  const clock = movableClock();
  let t: TestApp;
  beforeAll(async () => {
    t = await startAuthApp({ store: kind, now: clock.now });
  });
  afterAll(() => t.close());

  it("login or refresh: a new pair is issued and the refresh token sent is retired", async () => {
    const { user } = await register(t);
    const first = await signIn(t, user.email);
    const second = await refresh(t, first.refresh_token);
    expect(second.status).toBe(200);
    const pair = (await second.json()) as LoginResponse;
    expect(pair.refresh_token).toMatch(/^zrt_/);
    expect(pair.refresh_token).not.toBe(first.refresh_token);
    expect(pair.user).toEqual(user);
    const third = await refresh(t, pair.refresh_token);
    expect(third.status).toBe(200);
  });

  it("a retired token used again revokes every refresh token of the account (401); other accounts keep theirs", async () => {
    const { user } = await verifiedUser(t);
    const phone = await signIn(t, user.email);
    const laptop = await signIn(t, user.email);
    const other = await signIn(t, (await register(t)).user.email);
    const rotated = (await (await refresh(t, phone.refresh_token)).json()) as LoginResponse;

    const reused = await refresh(t, phone.refresh_token);
    expect(reused.status).toBe(401);
    expect(await reused.json()).toEqual({ error: { code: "unauthorized", message: expect.any(String) } });

    // The whole account must sign in again: the rotated token and the other device's token are revoked.
    expect((await refresh(t, rotated.refresh_token)).status).toBe(401);
    expect((await refresh(t, laptop.refresh_token)).status).toBe(401);
    expect((await refresh(t, other.refresh_token)).status).toBe(200);
    // Access tokens are not stored: they work until they expire.
    expect((await voices(t, rotated.access_token)).status).toBe(200);
    // Signing in again works.
    expect((await refresh(t, (await signIn(t, user.email)).refresh_token)).status).toBe(200);
  });

  it("concurrent refreshes with one token: at most one succeeds, all revoked (N=50 in parallel over HTTP)", async () => {
    const { user } = await register(t);
    const session = await signIn(t, user.email);
    const otherDevice = await signIn(t, user.email);
    const answers = await Promise.all(Array.from({ length: 50 }, () => refresh(t, session.refresh_token)));
    const statuses = answers.map((answer) => answer.status);
    const winners = answers.filter((answer) => answer.status === 200);
    expect(winners.length).toBeLessThanOrEqual(1);
    // And the first to retire it does get its pair.
    expect(winners.length).toBe(1);
    expect(winners.length + statuses.filter((status) => status === 401).length).toBe(50);
    // The losers used a retired token: reuse revokes every refresh token, the winner's new one too.
    for (const winner of winners) {
      const pair = (await winner.json()) as LoginResponse;
      expect((await refresh(t, pair.refresh_token)).status).toBe(401);
    }
    // Every refresh token of the account, the other device's too.
    expect((await refresh(t, otherDevice.refresh_token)).status).toBe(401);
  });

  it("an expired refresh token is 401 and is not taken for reuse", async () => {
    const { user } = await register(t);
    const old = await signIn(t, user.email);
    const fresh = await signIn(t, user.email);
    clock.advance(2_592_000 + 1);
    expect((await refresh(t, old.refresh_token)).status).toBe(401);
    expect((await refresh(t, fresh.refresh_token)).status).toBe(401);
    // Nothing was revoked by the expired token: a new sign-in's token works.
    expect((await refresh(t, (await signIn(t, user.email)).refresh_token)).status).toBe(200);
  });

  it("garbage, a missing field, an access token in refresh_token: 401 or 422, never 500", async () => {
    const { access_token } = await register(t);
    expect((await refresh(t, "zrt_nothing")).status).toBe(401);
    expect((await refresh(t, access_token)).status).toBe(401);
    expect((await refresh(t, "x".repeat(400))).status).toBe(401);
    const missing = await postJson(t, "/auth/refresh", {});
    expect(missing.status).toBe(422);
    expect(((await missing.json()) as { errors: object }).errors).toHaveProperty("refresh_token");
  });
});

describe("POST /auth/logout (States and transitions: that refresh token revoked)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startAuthApp();
  });
  afterAll(() => t.close());

  it("204; that refresh token is revoked, the user's others are not; the access token stays valid until it expires", async () => {
    const { user } = await verifiedUser(t);
    const phone = await signIn(t, user.email);
    const laptop = await signIn(t, user.email);
    const response = await postJson(
      t,
      "/auth/logout",
      { refresh_token: phone.refresh_token },
      phone.access_token,
    );
    expect(response.status).toBe(204);
    expect((await refresh(t, phone.refresh_token)).status).toBe(401);
    expect((await refresh(t, laptop.refresh_token)).status).toBe(200);
    expect((await voices(t, phone.access_token)).status).toBe(200);
  });

  it("an unverified user may log out (the auth endpoints take unverified users)", async () => {
    const session = await register(t);
    expect((await voices(t, session.access_token)).status).toBe(403);
    const response = await postJson(
      t,
      "/auth/logout",
      { refresh_token: session.refresh_token },
      session.access_token,
    );
    expect(response.status).toBe(204);
    expect((await refresh(t, session.refresh_token)).status).toBe(401);
  });

  it("a logged-out token sent to refresh is 401 and does not end the account's other sessions", async () => {
    const { user } = await register(t);
    const phone = await signIn(t, user.email);
    const laptop = await signIn(t, user.email);
    await postJson(t, "/auth/logout", { refresh_token: phone.refresh_token }, phone.access_token);
    expect((await refresh(t, phone.refresh_token)).status).toBe(401);
    expect((await refresh(t, laptop.refresh_token)).status).toBe(200);
  });

  it("another user's refresh token is left alone (the answer is the same 204)", async () => {
    const mine = await register(t);
    const theirs = await register(t);
    const response = await postJson(
      t,
      "/auth/logout",
      { refresh_token: theirs.refresh_token },
      mine.access_token,
    );
    expect(response.status).toBe(204);
    expect((await refresh(t, theirs.refresh_token)).status).toBe(200);
  });

  it("needs the access token (401 without, 401 with an API key) and the refresh_token field (422)", async () => {
    const session = await register(t);
    expect((await postJson(t, "/auth/logout", { refresh_token: session.refresh_token })).status).toBe(401);
    const { key } = await t.newKey();
    expect((await postJson(t, "/auth/logout", { refresh_token: session.refresh_token }, key)).status).toBe(
      401,
    );
    const missing = await postJson(t, "/auth/logout", {}, session.access_token);
    expect(missing.status).toBe(422);
    expect((await refresh(t, session.refresh_token)).status).toBe(200);
  });
});
