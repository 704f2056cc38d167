import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreditsRepository } from "../../src/store/repositories/credits.ts";
import { creditBalances } from "../../src/store/schema.ts";
import { readJson } from "../helpers/read-json.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { STORE_KINDS } from "../helpers/test-store.ts";
import { billedTestRoutes, CHUNK_COST, STREAM_CHUNKS } from "./billed-test-routes.ts";

const HIGH_LIMITS = { slow: { multiplier: 1, requests_per_minute: 100_000 } };

function post(t: TestApp, key: string, path: string, body: unknown) {
  return t.fetch(path, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

describe.each(STORE_KINDS)("Money (%s): reserve the highest possible cost, settle or release", (store) => {
  let t: TestApp;
  let clock = Date.parse("2026-11-30T23:50:00Z");
  beforeAll(async () => {
    t = await startTestApp({
      store,
      now: () => new Date(clock),
      config: { tiers: HIGH_LIMITS },
      keyApiPlugins: [billedTestRoutes],
    });
  });
  afterAll(() => t.close());

  it("402 spending_limit_reached: 200 parallel requests against a limit that fits exactly 7 -> exactly 7 pass, overspend 0", async () => {
    const { key, keyId } = await t.newKey({ key: { monthly_limit: 7.5 } });
    const answers = await Promise.all(
      Array.from({ length: 200 }, () => post(t, key, "/v1/test-billed", { max: 1, cost: 1 })),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(7);
    expect(statuses.filter((s) => s === 402)).toHaveLength(193);
    const refused = await readJson(answers.find((a) => a.status === 402) as Response);
    expect(refused.error).toMatchObject({ code: "spending_limit_reached", type: "invalid_request_error" });
    const summary = await t.admin("GET", `/usage/summary?key_id=${keyId}`);
    expect(summary.body).toMatchObject({
      requests: 7,
      cost: 7,
      key_spend: { spent: 7, reserved: 0, monthly_limit: 7.5 },
    });
  });

  it("402 spending_limit_reached counts what the key spent before it had a limit (journaled records included)", async () => {
    const { key, keyId } = await t.newKey();
    // Without a limit nothing is reserved: the records go through the batch (the journal, embedded).
    for (let i = 0; i < 3; i++) {
      expect((await post(t, key, "/v1/test-billed", { max: 1, cost: 1 })).status).toBe(200);
    }
    expect((await t.admin("PATCH", `/keys/${keyId}`, { monthly_limit: 4 })).status).toBe(200);
    // 3 spent: one more fits, the next does not.
    expect((await post(t, key, "/v1/test-billed", { max: 1, cost: 1 })).status).toBe(200);
    const refused = await post(t, key, "/v1/test-billed", { max: 1, cost: 1 });
    expect(refused.status).toBe(402);
    expect((await readJson(refused)).error).toMatchObject({ code: "spending_limit_reached" });
  });

  it("operator usage summary: key_spend.reserved shows what a request in flight holds", async () => {
    const { key, keyId } = await t.newKey({ key: { monthly_limit: 100 } });
    const response = await t.fetch("/v1/test-stream", {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const during = await t.admin("GET", `/usage/summary?key_id=${keyId}`);
    expect(during.body.key_spend).toMatchObject({ spent: 0, reserved: STREAM_CHUNKS * CHUNK_COST });
    while (!(await reader.read()).done) {}
    await expect
      .poll(async () => (await t.admin("GET", `/usage/summary?key_id=${keyId}`)).body.key_spend)
      .toMatchObject({ spent: STREAM_CHUNKS * CHUNK_COST, reserved: 0 });
  });

  it("settles to the real cost, which frees the rest of the reservation for later requests", async () => {
    const { key, keyId } = await t.newKey({ key: { monthly_limit: 1 } });
    // Each may cost 0.5 and costs 0.25: three fit (0.75 spent), a fourth could overspend.
    for (let i = 0; i < 3; i++) {
      expect((await post(t, key, "/v1/test-billed", { max: 0.5, cost: 0.25 })).status).toBe(200);
    }
    expect((await post(t, key, "/v1/test-billed", { max: 0.5, cost: 0.25 })).status).toBe(402);
    // Lowering the highest possible cost makes it fit; then nothing is left at all.
    expect((await post(t, key, "/v1/test-billed", { max: 0.25, cost: 0.25 })).status).toBe(200);
    expect((await post(t, key, "/v1/test-billed", { max: 0.01, cost: 0.01 })).status).toBe(402);
    const records = await t.admin("GET", `/usage?key_id=${keyId}`);
    expect(records.body.data).toHaveLength(4);
    expect(records.body.data[0]).toMatchObject({
      object: "usage_record",
      request_id: expect.stringMatching(/^req_/),
      endpoint: "test.billed",
      model: "test-model",
      units: { things: 1 },
      cost: 0.25,
      outcome: "ok",
    });
  });

  it("a key without a limit holds nothing: 150 parallel requests leave 150 records and the exact month total", async () => {
    const { key, keyId } = await t.newKey();
    const answers = await Promise.all(
      Array.from({ length: 150 }, () => post(t, key, "/v1/test-billed", { max: 1, cost: 0.01 })),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const summary = await t.admin("GET", `/usage/summary?key_id=${keyId}`);
    expect(summary.body).toMatchObject({ requests: 150, key_spend: { reserved: 0, monthly_limit: null } });
    expect(summary.body.key_spend.spent).toBeCloseTo(1.5, 6);
    expect((await t.admin("GET", `/usage?key_id=${keyId}&limit=1000`)).body.data).toHaveLength(150);
  });

  it("the real cost is never more than what was reserved", async () => {
    const { key, keyId } = await t.newKey();
    expect((await post(t, key, "/v1/test-billed", { max: 0.5, cost: 9 })).status).toBe(200);
    expect((await t.admin("GET", `/usage?key_id=${keyId}`)).body.data[0].cost).toBe(0.5);
  });

  it("a failed request (502) is released in full and recorded at no cost; a 4xx refusal leaves nothing", async () => {
    const { key, keyId } = await t.newKey({ key: { monthly_limit: 1 } });
    const failed = await post(t, key, "/v1/test-billed", { max: 1, cost: 1, fail: true });
    expect(failed.status).toBe(502);
    expect((await post(t, key, "/v1/test-billed", { max: 1, cost: 1, invalid: true })).status).toBe(400);
    const records = (await t.admin("GET", `/usage?key_id=${keyId}`)).body.data;
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      outcome: "failed",
      cost: 0,
      request_id: failed.headers.get("x-request-id"),
    });
    // All of the limit is still there.
    expect((await post(t, key, "/v1/test-billed", { max: 1, cost: 1 })).status).toBe(200);
  });

  it("monthly limits follow the calendar month (UTC)", async () => {
    const { key } = await t.newKey({ key: { monthly_limit: 1 } });
    expect((await post(t, key, "/v1/test-billed", { max: 1, cost: 1 })).status).toBe(200);
    expect((await post(t, key, "/v1/test-billed", { max: 1, cost: 1 })).status).toBe(402);
    const before = clock;
    clock = Date.parse("2026-12-01T00:00:01Z");
    try {
      expect((await post(t, key, "/v1/test-billed", { max: 1, cost: 1 })).status).toBe(200);
    } finally {
      clock = before;
    }
  });

  it("a stream cut by the client leaves one usage record with the partial cost, and the reservation closed", async () => {
    const { key, keyId } = await t.newKey({ key: { monthly_limit: 10 } });
    const controller = new AbortController();
    const response = await t.fetch("/v1/test-stream", {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      signal: controller.signal,
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let text = "";
    while ((text.match(/chunk/g) ?? []).length < 3)
      text += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    let records: Array<{ cost: number; units: { chunks: number }; outcome: string }> = [];
    for (let i = 0; i < 100 && records.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      records = (await t.admin("GET", `/usage?key_id=${keyId}`)).body.data;
    }
    expect(records).toHaveLength(1);
    const [record] = records;
    expect(record?.outcome).toBe("partial");
    expect(record?.units.chunks).toBeGreaterThanOrEqual(3);
    expect(record?.units.chunks).toBeLessThan(STREAM_CHUNKS);
    expect(record?.cost).toBeCloseTo((record?.units.chunks ?? 0) * CHUNK_COST, 6);
    const summary = await t.admin("GET", `/usage/summary?key_id=${keyId}`);
    expect(summary.body.key_spend.reserved).toBe(0);
  });

  it("a stream that ends is billed once, in full", async () => {
    const { key, keyId } = await t.newKey();
    const response = await t.fetch("/v1/test-stream", {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
    });
    expect(await response.text()).toContain("[DONE]");
    await new Promise((resolve) => setTimeout(resolve, 50));
    const records = (await t.admin("GET", `/usage?key_id=${keyId}`)).body.data;
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ outcome: "ok", units: { chunks: STREAM_CHUNKS } });
  });

  it("operator usage: per key, per account, per month; errors name the field", async () => {
    const { key, keyId, accountId } = await t.newKey();
    await post(t, key, "/v1/test-billed", { max: 1, cost: 0.5 });
    await post(t, key, "/v1/test-billed", { max: 1, cost: 0.25 });
    const byAccount = await t.admin("GET", `/usage/summary?account_id=${accountId}&month=2026-11`);
    expect(byAccount.body).toEqual({
      object: "usage_summary",
      month: "2026-11",
      account_id: accountId,
      key_id: null,
      currency: "CHF",
      requests: 2,
      cost: 0.75,
      by_endpoint: [{ endpoint: "test.billed", model: "test-model", requests: 2, cost: 0.75 }],
      key_spend: null,
    });
    expect((await t.admin("GET", `/usage?account_id=${accountId}&month=2026-10`)).body.data).toEqual([]);
    expect((await t.admin("GET", `/usage?key_id=${keyId}&limit=1`)).body.data).toHaveLength(1);
    const badMonth = await t.admin("GET", "/usage?month=2026-13");
    expect(badMonth.status).toBe(400);
    expect(badMonth.body.error.param).toBe("month");
    expect((await t.admin("GET", "/usage?account_id=00000000-0000-4000-8000-000000000000")).status).toBe(404);
  });
});

describe.each(STORE_KINDS)("Money (%s): prepaid credits", (store) => {
  let t: TestApp;
  let clock = Date.parse("2026-11-21T12:00:00Z");
  beforeAll(async () => {
    t = await startTestApp({
      store,
      now: () => new Date(clock),
      config: { tiers: HIGH_LIMITS, installation: { prepaid: true, currency: "credits" } },
      keyApiPlugins: [billedTestRoutes],
    });
  });
  afterAll(() => t.close());

  it("402 insufficient_credits: 200 parallel requests against 3 credits -> exactly 3 pass; GET requests still answer", async () => {
    const { key, accountId } = await t.newKey();
    await t.admin("PUT", `/accounts/${accountId}/credits`, { balance: 3 });
    const answers = await Promise.all(
      Array.from({ length: 200 }, () => post(t, key, "/v1/test-billed", { max: 1, cost: 1 })),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(3);
    const refused = answers.filter((a) => a.status === 402);
    expect(refused).toHaveLength(197);
    expect((await readJson(refused[0] as Response)).error.code).toBe("insufficient_credits");
    expect((await t.admin("GET", `/accounts/${accountId}/credits`)).body).toMatchObject({
      balance: 0,
      held: 0,
    });
    expect((await t.fetch("/v1/models", { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
  });

  it("credits are held while a request runs and only the real cost is taken", async () => {
    const { key, accountId } = await t.newKey();
    await t.admin("PUT", `/accounts/${accountId}/credits`, { balance: 2 });
    expect((await post(t, key, "/v1/test-billed", { max: 1.5, cost: 0.4 })).status).toBe(200);
    expect((await t.admin("GET", `/accounts/${accountId}/credits`)).body).toMatchObject({
      balance: 1.6,
      held: 0,
    });
    // 1.6 left: a request that could cost 1.7 is refused even though it might cost less.
    expect((await post(t, key, "/v1/test-billed", { max: 1.7, cost: 0.1 })).status).toBe(402);
    expect((await post(t, key, "/v1/test-billed", { max: 1, cost: 1, fail: true })).status).toBe(502);
    expect((await t.admin("GET", `/accounts/${accountId}/credits`)).body).toMatchObject({
      balance: 1.6,
      held: 0,
    });
  });

  it("a reservation whose process died is given back by the sweep, and its credits with it", async () => {
    const { key, accountId, keyId } = await t.newKey();
    await t.admin("PUT", `/accounts/${accountId}/credits`, { balance: 5 });
    const response = await t.fetch("/v1/test-stream", {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    expect((await t.admin("GET", `/accounts/${accountId}/credits`)).body.held).toBeCloseTo(
      STREAM_CHUNKS * CHUNK_COST,
    );
    // Pretend the process died: its reservation outlives the hold time and the sweep gives it back.
    clock += 3600_000;
    expect(await t.app.services.billing.sweep()).toBe(1);
    expect((await t.admin("GET", `/accounts/${accountId}/credits`)).body).toMatchObject({
      balance: 5,
      held: 0,
    });
    const records = (await t.admin("GET", `/usage?key_id=${keyId}`)).body.data;
    expect(records).toMatchObject([{ outcome: "expired", cost: 0 }]);
    await reader.cancel();
    clock -= 3600_000;
  });

  it("docs/admin-api.md balance_below_zero: credits held by a request in flight cannot be taken away; once it ends they can", async () => {
    const { key, accountId } = await t.newKey();
    await t.admin("PUT", `/accounts/${accountId}/credits`, { balance: 1 });
    const response = await t.fetch("/v1/test-stream", {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const held = STREAM_CHUNKS * CHUNK_COST;
    expect((await t.admin("GET", `/accounts/${accountId}/credits`)).body).toMatchObject({ balance: 1, held });
    const below = await t.admin("PUT", `/accounts/${accountId}/credits`, { balance: held - 0.1 });
    expect(below.status).toBe(400);
    expect(below.body.error).toMatchObject({ code: "balance_below_zero", param: "balance" });
    const taken = await t.admin("POST", `/accounts/${accountId}/credits`, { amount: -(1 - held + 0.1) });
    expect(taken.body.error).toMatchObject({ code: "balance_below_zero", param: "amount" });
    // What is not held may go: the balance can come down to exactly what the request holds.
    const down = await t.admin("POST", `/accounts/${accountId}/credits`, { amount: -(1 - held) });
    expect(down.body).toMatchObject({ balance: held, held });
    while (!(await reader.read()).done) {}
    // The stream cost all it held: nothing is left, and nothing is held (this test route settles
    // right after its last byte, so the check waits for it).
    await expect
      .poll(async () => (await t.admin("GET", `/accounts/${accountId}/credits`)).body)
      .toMatchObject({ balance: 0, held: 0 });
    expect((await post(t, key, "/v1/test-billed", { max: 0.1, cost: 0.1 })).status).toBe(402);
  });

  it("402 insufficient_credits: credits added while requests run are usable at once", async () => {
    const { key, accountId } = await t.newKey();
    await t.admin("PUT", `/accounts/${accountId}/credits`, { balance: 2 });
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => post(t, key, "/v1/test-billed", { max: 1, cost: 1 })),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(2);
    expect((await t.admin("POST", `/accounts/${accountId}/credits`, { amount: 3 })).body).toMatchObject({
      balance: 3,
      held: 0,
    });
    const more = await Promise.all(
      Array.from({ length: 50 }, () => post(t, key, "/v1/test-billed", { max: 1, cost: 1 })),
    );
    expect(more.filter((a) => a.status === 200)).toHaveLength(3);
    expect((await t.admin("GET", `/accounts/${accountId}/credits`)).body).toMatchObject({
      balance: 0,
      held: 0,
    });
  });

  it("the balance is what the operator credited (the ledger of changes adds up to it) minus the records' costs", async () => {
    const { key, keyId, accountId } = await t.newKey();
    await t.admin("PUT", `/accounts/${accountId}/credits`, { balance: 1 });
    await post(t, key, "/v1/test-billed", { max: 0.3, cost: 0.3 });
    await post(t, key, "/v1/test-billed", { max: 0.3, cost: 0.2 });
    const credits = await t.admin("GET", `/accounts/${accountId}/credits`);
    expect(credits.body.balance).toBe(0.5);
    // Taking the balance below what is held is refused; here nothing is held, so 0.5 can go.
    expect((await t.admin("POST", `/accounts/${accountId}/credits`, { amount: -0.6 })).status).toBe(400);
    expect((await t.admin("POST", `/accounts/${accountId}/credits`, { amount: -0.5 })).body.balance).toBe(0);

    await t.app.services.billing.usageWritten();
    const records = await t.app.services.usage.list({ keyId }, { limit: 10, offset: 0 });
    const ledger = await new CreditsRepository(t.store.db).ledger(accountId, 100);
    expect(ledger.map((entry) => [entry.kind, entry.amountMicros, entry.balanceAfterMicros])).toEqual([
      ["add", -500_000, 0],
      ["set", 1_000_000, 1_000_000],
    ]);
    const [row] = await t.store.db
      .select()
      .from(creditBalances)
      .where(eq(creditBalances.accountId, accountId));
    expect(row?.creditedMicros).toBe(500_000);
    expect(row?.spentMicros).toBe(records.reduce((total, record) => total + record.costMicros, 0));
    expect(row?.spentMicros).toBe(500_000);
  });
});

describe("Money: usage of requests ending during a graceful shutdown is not lost", () => {
  it("a stream cut right before close is still recorded", async () => {
    const t = await startTestApp({ config: { tiers: HIGH_LIMITS }, keyApiPlugins: [billedTestRoutes] });
    const { key, keyId } = await t.newKey();
    const controller = new AbortController();
    const response = await t.fetch("/v1/test-stream", {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      signal: controller.signal,
    });
    await (response.body as ReadableStream<Uint8Array>).getReader().read();
    controller.abort();
    await t.app.close();
    const records = await t.app.services.usage.list({ keyId }, { limit: 10, offset: 0 });
    expect(records).toHaveLength(1);
    expect(records[0]?.outcome).toBe("partial");
    await t.store.close();
  });
});
