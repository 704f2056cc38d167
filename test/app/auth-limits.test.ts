import { afterEach, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { movableClock, postJson } from "./auth-fixtures.ts";

// No trusted network here: the address limits of the spec apply to 127.0.0.1 as they are.
let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const AUTH_PATHS = ["/auth/login", "/auth/register", "/auth/forgot-password", "/auth/password-reset/confirm"];

describe("Rate limits / Per address: app /auth/login, /register, /forgot-password, /password-reset/confirm 10 a minute", () => {
  it.each(
    AUTH_PATHS,
  )("%s: 10 requests pass (counted together with the others), then 429 Too Many Attempts.", async (path) => {
    const clock = movableClock();
    t = await startTestApp({ now: clock.now });
    const app = t;
    // Empty bodies: answered 422 without hashing a password, yet counted like any request.
    for (let i = 0; i < 10; i++) {
      const other = AUTH_PATHS[i % AUTH_PATHS.length] ?? path;
      const response = await postJson(app, other, {});
      expect(response.status).toBe(422);
      expect(response.headers.get("x-ratelimit-limit")).toBe("10");
    }
    const refused = await postJson(app, path, {});
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ message: "Too Many Attempts." });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.headers.get("x-ratelimit-remaining")).toBe("0");

    // Refresh has its own counter; the window ends after a minute.
    expect((await postJson(app, "/auth/refresh", {})).status).toBe(422);
    clock.advance(61);
    expect((await postJson(app, path, {})).status).toBe(422);
  });

  it("/auth/refresh: 60 a minute, then 429", async () => {
    t = await startTestApp();
    const app = t;
    const answers = await Promise.all(
      Array.from({ length: 60 }, () => postJson(app, "/auth/refresh", { refresh_token: "zrt_unknown" })),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(60).fill(401));
    const refused = await postJson(app, "/auth/refresh", { refresh_token: "zrt_unknown" });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ message: "Too Many Attempts." });
    // The other auth endpoints have their own counter.
    expect((await postJson(app, "/auth/login", {})).status).toBe(422);
  });

  it("verify-email is not address-limited (its tokens cannot be guessed)", async () => {
    t = await startTestApp();
    const app = t;
    for (let i = 0; i < 12; i++) {
      expect((await postJson(app, "/auth/verify-email", { token: "zev_x" })).status).toBe(422);
    }
  });
});
