import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readJson } from "../helpers/read-json.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { STORE_KINDS } from "../helpers/test-store.ts";

describe.each(STORE_KINDS)("Operator API round trips (%s)", (store) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      store,
      config: { installation: { zones: [{ id: "ch-ti" }, { id: "ch-zh" }], currency: "credits" } },
    });
  });
  afterAll(() => t.close());

  it("accounts: create, read, list, find by email case-insensitively, verify, disable, enable", async () => {
    const created = await t.admin("POST", "/accounts", {
      email: "Maria.Rossi@Example.com",
      password: "correct horse battery",
      language: "de",
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      object: "account",
      email: "Maria.Rossi@Example.com",
      email_verified: false,
      disabled: false,
      language: "de",
      has_password: true,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(JSON.stringify(created.body)).not.toContain("correct horse");
    const id = created.body.id;

    expect((await t.admin("GET", `/accounts/${id}`)).body.email).toBe("Maria.Rossi@Example.com");
    const byEmail = await t.admin("GET", "/accounts?email=maria.rossi@EXAMPLE.com");
    expect(byEmail.body.data.map((a: { id: string }) => a.id)).toEqual([id]);
    expect((await t.admin("GET", "/accounts")).body.data.some((a: { id: string }) => a.id === id)).toBe(true);

    expect((await t.admin("POST", `/accounts/${id}/verify-email`)).body.email_verified).toBe(true);
    expect((await t.admin("POST", `/accounts/${id}/disable`)).body.disabled).toBe(true);
    expect((await t.admin("POST", `/accounts/${id}/enable`)).body.disabled).toBe(false);
  });

  it("accounts: an email is unique whatever its case (409 email_taken)", async () => {
    await t.admin("POST", "/accounts", { email: "dup@example.com" });
    const again = await t.admin("POST", "/accounts", { email: "DUP@example.COM" });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({
      code: "email_taken",
      param: "email",
      type: "invalid_request_error",
    });
  });

  const badAccounts: Array<[string, Record<string, unknown>, string]> = [
    ["missing email", {}, "email"],
    ["email not an address", { email: "not-an-email" }, "email"],
    ["email not a string", { email: 42 }, "email"],
    ["password too short", { email: "p@example.com", password: "short" }, "password"],
    ["unknown language", { email: "l@example.com", language: "es" }, "language"],
    ["email_verified not a boolean", { email: "v@example.com", email_verified: "yes" }, "email_verified"],
  ];
  for (const [name, body, param] of badAccounts) {
    it(`accounts: 400 naming the field for ${name}`, async () => {
      const response = await t.admin("POST", "/accounts", body);
      expect(response.status).toBe(400);
      expect(response.body.error).toMatchObject({ type: "invalid_request_error", param });
    });
  }

  it("accounts: 404 for an unknown id and for something that is not an id", async () => {
    for (const id of ["00000000-0000-4000-8000-000000000000", "not-a-uuid"]) {
      const response = await t.admin("GET", `/accounts/${id}`);
      expect(response.status).toBe(404);
      expect(response.body.error).toMatchObject({ code: "not_found", message: expect.stringContaining(id) });
    }
  });

  it("keys: the secret is shown once, only a display prefix afterwards, and it authenticates", async () => {
    const account = await t.admin("POST", "/accounts", { email: "keys@example.com" });
    const created = await t.admin("POST", `/accounts/${account.body.id}/keys`, {
      name: "production",
      zones: ["ch-ti"],
      monthly_limit: 12.5,
      expires_at: "2099-12-31T23:59:59Z",
    });
    expect(created.status).toBe(201);
    const secret: string = created.body.key;
    expect(secret).toMatch(/^sk-[A-Za-z0-9_-]{43}$/);
    expect(created.body).toMatchObject({
      object: "api_key",
      account_id: account.body.id,
      name: "production",
      display_prefix: `${secret.slice(0, 11)}...`,
      zones: ["ch-ti"],
      monthly_limit: 12.5,
      requests_per_minute: null,
      expires_at: "2099-12-31T23:59:59.000Z",
      revoked_at: null,
      status: "active",
    });

    const shown = await t.admin("GET", `/keys/${created.body.id}`);
    const listed = await t.admin("GET", `/accounts/${account.body.id}/keys`);
    const all = await t.admin("GET", `/keys?account_id=${account.body.id}`);
    for (const text of [JSON.stringify(shown.body), JSON.stringify(listed.body), JSON.stringify(all.body)]) {
      expect(text).not.toContain(secret);
    }
    expect(shown.body.key).toBeUndefined();
    expect(listed.body.data).toHaveLength(1);
    expect(all.body.data).toEqual(listed.body.data);

    expect((await t.fetch("/v1/models", { headers: { authorization: `Bearer ${secret}` } })).status).toBe(
      200,
    );
    const revoked = await t.admin("POST", `/keys/${created.body.id}/revoke`);
    expect(revoked.body).toMatchObject({ status: "revoked", revoked_at: expect.any(String) });
    expect((await t.fetch("/v1/models", { headers: { authorization: `Bearer ${secret}` } })).status).toBe(
      401,
    );
    const again = await t.admin("POST", `/keys/${created.body.id}/revoke`);
    expect(again.body.revoked_at).toBe(revoked.body.revoked_at);
  });

  const badKeys: Array<[string, Record<string, unknown>, string]> = [
    ["missing name", {}, "name"],
    ["zone outside the installation", { name: "k", zones: ["us-east"] }, "zones"],
    ["empty zone list", { name: "k", zones: [] }, "zones"],
    ["zones not a list", { name: "k", zones: "ch-ti" }, "zones"],
    ["negative monthly limit", { name: "k", monthly_limit: -1 }, "monthly_limit"],
    ["monthly limit not a number", { name: "k", monthly_limit: "ten" }, "monthly_limit"],
    ["expiry in the past", { name: "k", expires_at: "2001-01-01T00:00:00Z" }, "expires_at"],
    ["expiry not a date", { name: "k", expires_at: "tomorrow" }, "expires_at"],
    ["requests per minute 0", { name: "k", requests_per_minute: 0 }, "requests_per_minute"],
    ["negative requests per minute", { name: "k", requests_per_minute: -5 }, "requests_per_minute"],
    ["fractional requests per minute", { name: "k", requests_per_minute: 2.5 }, "requests_per_minute"],
    ["requests per minute not a number", { name: "k", requests_per_minute: "many" }, "requests_per_minute"],
    ["requests per minute a boolean", { name: "k", requests_per_minute: true }, "requests_per_minute"],
    [
      "requests per minute over 1000000",
      { name: "k", requests_per_minute: 1_000_001 },
      "requests_per_minute",
    ],
  ];
  for (const [name, body, param] of badKeys) {
    it(`keys: 400 naming the field for ${name}`, async () => {
      const account = await t.admin("POST", "/accounts", {
        email: `bad-key-${param}-${Math.random()}@example.com`,
      });
      const response = await t.admin("POST", `/accounts/${account.body.id}/keys`, body);
      expect(response.status).toBe(400);
      expect(response.body.error).toMatchObject({ type: "invalid_request_error", param });
    });
  }

  it("keys: 404 for a key of an unknown account and for an unknown key", async () => {
    const unknown = "00000000-0000-4000-8000-000000000000";
    expect((await t.admin("POST", `/accounts/${unknown}/keys`, { name: "k" })).status).toBe(404);
    expect((await t.admin("GET", `/keys/${unknown}`)).status).toBe(404);
    expect((await t.admin("POST", `/keys/${unknown}/revoke`)).status).toBe(404);
    expect((await t.admin("PATCH", `/keys/${unknown}`, { requests_per_minute: 5 })).status).toBe(404);
    expect((await t.admin("PATCH", "/keys/not-a-key", { requests_per_minute: 5 })).status).toBe(404);
  });

  it("requests_per_minute is set at creation, shown on the key, changed and cleared with PATCH /keys/{id}", async () => {
    const account = await t.admin("POST", "/accounts", { email: "rpm@example.com" });
    const created = await t.admin("POST", `/accounts/${account.body.id}/keys`, {
      name: "big customer",
      requests_per_minute: 600,
    });
    expect(created.status).toBe(201);
    expect(created.body.requests_per_minute).toBe(600);
    const id: string = created.body.id;
    expect((await t.admin("GET", `/keys/${id}`)).body.requests_per_minute).toBe(600);
    expect((await t.admin("GET", `/accounts/${account.body.id}/keys`)).body.data[0].requests_per_minute).toBe(
      600,
    );
    // A numeric string (a form or the CLI) is read as the number; null in a create means the tier's.
    const fromForm = await t.admin("POST", `/accounts/${account.body.id}/keys`, {
      name: "form",
      requests_per_minute: "7",
    });
    expect(fromForm.body.requests_per_minute).toBe(7);
    const tierDefault = await t.admin("POST", `/accounts/${account.body.id}/keys`, {
      name: "tier",
      requests_per_minute: null,
    });
    expect(tierDefault.body.requests_per_minute).toBeNull();

    const raised = await t.admin("PATCH", `/keys/${id}`, { requests_per_minute: 1200 });
    expect(raised.status).toBe(200);
    expect(raised.body).toMatchObject({
      id,
      object: "api_key",
      name: "big customer",
      requests_per_minute: 1200,
    });
    const cleared = await t.admin("PATCH", `/keys/${id}`, { requests_per_minute: null });
    expect(cleared.body.requests_per_minute).toBeNull();
    expect((await t.admin("GET", `/keys/${id}`)).body.requests_per_minute).toBeNull();
  });

  it("PATCH /keys/{id} changes only the fields given; null clears zones, monthly_limit and expires_at", async () => {
    const account = await t.admin("POST", "/accounts", { email: "patch@example.com" });
    const created = await t.admin("POST", `/accounts/${account.body.id}/keys`, {
      name: "laptop",
      zones: ["ch-ti"],
      monthly_limit: 10,
      requests_per_minute: 30,
      expires_at: "2099-01-01T00:00:00Z",
    });
    const id: string = created.body.id;
    const unchanged = await t.admin("PATCH", `/keys/${id}`, {});
    expect(unchanged.status).toBe(200);
    expect(unchanged.body).toEqual((await t.admin("GET", `/keys/${id}`)).body);

    const renamed = await t.admin("PATCH", `/keys/${id}`, { name: "  desktop ", zones: ["ch-zh", "ch-zh"] });
    expect(renamed.body).toMatchObject({
      name: "desktop",
      zones: ["ch-zh"],
      monthly_limit: 10,
      requests_per_minute: 30,
      expires_at: "2099-01-01T00:00:00.000Z",
    });
    const cleared = await t.admin("PATCH", `/keys/${id}`, {
      zones: null,
      monthly_limit: null,
      expires_at: null,
    });
    expect(cleared.body).toMatchObject({
      name: "desktop",
      zones: null,
      monthly_limit: null,
      requests_per_minute: 30,
      expires_at: null,
      status: "active",
    });
    const set = await t.admin("PATCH", `/keys/${id}`, { monthly_limit: 2.5, expires_at: "2098-06-30" });
    expect(set.body).toMatchObject({ monthly_limit: 2.5, expires_at: "2098-06-30T00:00:00.000Z" });
  });

  const badUpdates: Array<[string, Record<string, unknown>, string]> = [
    ["requests per minute 0", { requests_per_minute: 0 }, "requests_per_minute"],
    ["fractional requests per minute", { requests_per_minute: 1.5 }, "requests_per_minute"],
    ["requests per minute not a number", { requests_per_minute: "none" }, "requests_per_minute"],
    ["requests per minute a list", { requests_per_minute: [5] }, "requests_per_minute"],
    ["empty name", { name: "  " }, "name"],
    ["zone outside the installation", { zones: ["us-east"] }, "zones"],
    ["negative monthly limit", { monthly_limit: -1 }, "monthly_limit"],
    ["expiry in the past", { expires_at: "2001-01-01T00:00:00Z" }, "expires_at"],
  ];
  for (const [name, body, param] of badUpdates) {
    it(`PATCH /keys/{id} answers 400 naming the field for ${name}, and changes nothing`, async () => {
      const account = await t.admin("POST", "/accounts", {
        email: `bad-update-${param}-${Math.random()}@example.com`,
      });
      const created = await t.admin("POST", `/accounts/${account.body.id}/keys`, {
        name: "k",
        requests_per_minute: 9,
      });
      const before = (await t.admin("GET", `/keys/${created.body.id}`)).body;
      // A valid field next to the bad one is not applied either.
      const response = await t.admin("PATCH", `/keys/${created.body.id}`, {
        ...body,
        monthly_limit: 3,
        ...body,
      });
      expect(response.status).toBe(400);
      expect(response.body.error).toMatchObject({ type: "invalid_request_error", param });
      expect((await t.admin("GET", `/keys/${created.body.id}`)).body).toEqual(before);
    });
  }

  it("credits: read, set, add, take away, and never below zero", async () => {
    const account = await t.admin("POST", "/accounts", { email: "credits@example.com" });
    const path = `/accounts/${account.body.id}/credits`;
    expect((await t.admin("GET", path)).body).toEqual({
      object: "credit_balance",
      account_id: account.body.id,
      balance: 0,
      held: 0,
      currency: "credits",
    });
    expect((await t.admin("PUT", path, { balance: 10.25 })).body.balance).toBe(10.25);
    expect((await t.admin("POST", path, { amount: 0.1, note: "bonus" })).body.balance).toBe(10.35);
    expect((await t.admin("POST", path, { amount: -0.35 })).body.balance).toBe(10);
    const below = await t.admin("POST", path, { amount: -10.01 });
    expect(below.status).toBe(400);
    expect(below.body.error).toMatchObject({ code: "balance_below_zero", param: "amount" });
    expect((await t.admin("GET", path)).body.balance).toBe(10);
    expect((await t.admin("PUT", path, { balance: -1 })).body.error.param).toBe("balance");
    expect((await t.admin("POST", path, {})).body.error.param).toBe("amount");
  });

  it("credits: concurrent top-ups all count (no lost update)", async () => {
    const account = await t.admin("POST", "/accounts", { email: "race@example.com" });
    const path = `/accounts/${account.body.id}/credits`;
    const results = await Promise.all(Array.from({ length: 25 }, () => t.admin("POST", path, { amount: 1 })));
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect((await t.admin("GET", path)).body.balance).toBe(25);
  });

  it("the operator API needs the admin token: 401 invalid_admin_token otherwise", async () => {
    for (const authorization of [undefined, "Bearer wrong-token", "Basic abc"]) {
      const response = await t.fetch(
        "/admin/v1/accounts",
        authorization ? { headers: { authorization } } : {},
      );
      expect(response.status).toBe(401);
      const body = await readJson(response);
      expect(body.error).toMatchObject({ code: "invalid_admin_token", type: "invalid_request_error" });
    }
  });
});

describe("Operator API is off when ZONA_ADMIN_TOKEN is unset", () => {
  it("answers 404 unknown_endpoint for every operator path", async () => {
    const t = await startTestApp({ config: { server: { admin_token: undefined } } });
    try {
      const response = await t.fetch("/admin/v1/accounts", { headers: { authorization: "Bearer anything" } });
      expect(response.status).toBe(404);
      expect((await readJson(response)).error.code).toBe("unknown_endpoint");
    } finally {
      await t.close();
    }
  });
});
