import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readJson } from "../helpers/read-json.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

const DAY = 86_400_000;

describe("Authentication / Key API: 401 invalid_request_error / invalid_api_key", () => {
  let t: TestApp;
  let clock = Date.now();
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp({ now: () => new Date(clock) });
    keys.valid = (await t.newKey()).key;
    const revoked = await t.newKey();
    await t.admin("POST", `/keys/${revoked.keyId}/revoke`);
    keys.revoked = revoked.key;
    keys.expiring = (await t.newKey({ key: { expires_at: new Date(clock + DAY).toISOString() } })).key;
    const disabled = await t.newKey();
    await t.admin("POST", `/accounts/${disabled.accountId}/disable`);
    keys.disabled = disabled.key;
  });
  afterAll(() => t.close());

  const cases: Array<{ rule: string; authorization: () => string | undefined; message: RegExp }> = [
    { rule: "missing header", authorization: () => undefined, message: /didn't provide an API key/ },
    { rule: "empty header", authorization: () => "", message: /didn't provide an API key/ },
    { rule: "not Bearer auth", authorization: () => `Basic ${keys.valid}`, message: /header format/ },
    { rule: "Bearer without token", authorization: () => "Bearer ", message: /header format/ },
    { rule: "malformed key (too short)", authorization: () => "Bearer sk-short", message: /key format/ },
    {
      rule: "an app user token sent to /v1 (invalid key format)",
      authorization: () => "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
      message: /Invalid API key format/,
    },
    {
      rule: "unknown key",
      authorization: () => `Bearer sk-${"A".repeat(43)}`,
      message: /Incorrect API key provided: sk-AAAAAAAA\.\.\.$/,
    },
    { rule: "revoked key", authorization: () => `Bearer ${keys.revoked}`, message: /revoked/ },
    { rule: "account disabled", authorization: () => `Bearer ${keys.disabled}`, message: /disabled/ },
  ];

  for (const { rule, authorization, message } of cases) {
    it(`refuses: ${rule}`, async () => {
      const value = authorization();
      const response = await t.fetch(
        "/v1/models",
        value === undefined ? {} : { headers: { authorization: value } },
      );
      expect(response.status).toBe(401);
      const body = await readJson(response);
      expect(body).toEqual({
        error: {
          message: expect.stringMatching(message),
          type: "invalid_request_error",
          code: "invalid_api_key",
          param: null,
          request_id: response.headers.get("x-request-id"),
        },
      });
    });
  }

  it("refuses an expired key once its expiry has passed, and accepts it before", async () => {
    const call = () => t.fetch("/v1/models", { headers: { authorization: `Bearer ${keys.expiring}` } });
    expect((await call()).status).toBe(200);
    clock += 2 * DAY;
    const response = await call();
    expect(response.status).toBe(401);
    expect((await readJson(response)).error).toMatchObject({ code: "invalid_api_key", message: /expired/ });
  });

  it("accepts a valid key, with the scheme in any case", async () => {
    const response = await t.fetch("/v1/models", { headers: { authorization: `bearer ${keys.valid}` } });
    expect(response.status).toBe(200);
  });

  it("a re-enabled account's key works again", async () => {
    const { key, accountId } = await t.newKey();
    await t.admin("POST", `/accounts/${accountId}/disable`);
    const headers = { authorization: `Bearer ${key}` };
    expect((await t.fetch("/v1/models", { headers })).status).toBe(401);
    await t.admin("POST", `/accounts/${accountId}/enable`);
    expect((await t.fetch("/v1/models", { headers })).status).toBe(200);
  });
});
