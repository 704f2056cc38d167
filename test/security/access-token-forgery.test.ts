import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccessTokens } from "../../src/auth/access-tokens.ts";
import { type AppUserHandle, signedInUser } from "../app/app-helpers.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

describe("Access tokens that Zona did not issue are refused (OWASP API2:2023; spec Authentication / App API: 401 unauthorized when the token is wrong or expired)", () => {
  let t: TestApp;
  let owner: AppUserHandle;
  let victim: AppUserHandle;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await signedInUser(t);
    victim = await signedInUser(t);
  });
  afterAll(() => t?.close());

  /** The pieces of the owner's real token: `zat_` + claims + `.` + MAC. */
  function parts(): { claims: { sub: string; iat: number; exp: number }; body: string; mac: string } {
    const [body = "", mac = ""] = owner.token.slice(4).split(".");
    return { claims: JSON.parse(Buffer.from(body, "base64url").toString("utf8")), body, mac };
  }

  const forgeries: Array<[string, () => string]> = [
    [
      "the claims changed to another account, the MAC kept",
      () => {
        const { claims, mac } = parts();
        return `zat_${b64({ ...claims, sub: victim.accountId })}.${mac}`;
      },
    ],
    [
      "the expiry pushed a year ahead, the MAC kept",
      () => {
        const { claims, mac } = parts();
        return `zat_${b64({ ...claims, exp: claims.exp + 365 * 86_400 })}.${mac}`;
      },
    ],
    [
      "signed with another installation's secret",
      () => new AccessTokens(randomBytes(32)).sign(victim.accountId, new Date(), 3600),
    ],
    ["no MAC at all (alg none)", () => `zat_${parts().body}.`],
    ["only the claims", () => `zat_${parts().body}`],
    ["a JWT with alg none", () => `${b64({ alg: "none", typ: "JWT" })}.${b64({ sub: victim.accountId })}.`],
    ["a JWT with alg none behind the prefix", () => `zat_${b64({ alg: "none" })}.${parts().body}.`],
    ["the MAC of another token", () => `zat_${parts().body}.${victim.token.split(".")[1] ?? ""}`],
    [
      "the MAC in base64 with padding",
      () => {
        const { body, mac } = parts();
        return `zat_${body}.${Buffer.from(mac, "base64url").toString("base64")}`;
      },
    ],
    ["a MAC one character short", () => owner.token.slice(0, -1)],
    ["an extra segment", () => `${owner.token}.x`],
    [
      "claims that are not JSON, with their own MAC of another key",
      () => `zat_${Buffer.from("not json").toString("base64url")}.${parts().mac}`,
    ],
    ["the refresh-token prefix", () => `zrt_${randomBytes(32).toString("base64url")}`],
    ["an API key's prefix", () => `sk-${randomBytes(24).toString("hex")}`],
    ["8 KB of token", () => `zat_${"A".repeat(8192)}.${"B".repeat(43)}`],
  ];

  it.each(
    forgeries,
  )("%s: 401 unauthorized in the app API's shape, nothing of the account shown", async (_name, make) => {
    const response = await t.fetch("/api/v1/chat/sessions", {
      headers: { authorization: `Bearer ${make()}` },
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ error: { code: "unauthorized", message: expect.any(String) } });
  });

  it("the real tokens still work (the forgeries above were refused for what they are)", async () => {
    for (const user of [owner, victim]) expect((await user.fetch("/chat/sessions")).status).toBe(200);
  });
});
