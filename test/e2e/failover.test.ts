import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { readJson } from "../helpers/read-json.ts";
import { CHAT_MODEL, type EngineStack, postJson, startEngineStack, usageOf } from "./engine-stack.ts";

const chat = (content = "hello there", extra: Record<string, unknown> = {}) => ({
  model: CHAT_MODEL,
  messages: [{ role: "user", content }],
  ...extra,
});

describe("Engines: placement in the key's zones, failover before the first byte (spec Errors 502/503, DESIGN Engines)", () => {
  let s: EngineStack;
  let tiKey: { key: string; keyId: string };
  beforeAll(async () => {
    s = await startEngineStack();
    tiKey = await s.t.newKey({ key: { zones: ["ch-ti"] } });
  });
  afterAll(() => s.close());
  afterEach(async () => {
    for (const fake of [s.ti1, s.ti2, s.zh1]) await fake.setMode("normal");
    for (const machine of s.t.app.services.engines.machines) machine.breaker.success();
  });

  it("runs only in the key's zones and says which one in X-Zona", async () => {
    for (let i = 0; i < 6; i++) {
      const response = await postJson(s.t, tiKey.key, "/v1/chat/completions", chat());
      expect(response.status).toBe(200);
      expect(response.headers.get("x-zona")).toBe("ch-ti");
    }
    expect(s.zh1.requestsTo("/v1/chat/completions")).toHaveLength(0);
    // Both Ticino machines took a share.
    expect(s.ti1.requestsTo("/v1/chat/completions").length).toBeGreaterThan(0);
    expect(s.ti2.requestsTo("/v1/chat/completions").length).toBeGreaterThan(0);
  });

  it("first machine down -> the answer comes from the second, charged once, with its zone", async () => {
    const { key, keyId } = await s.t.newKey({ key: { zones: ["ch-ti"] } });
    await s.ti1.setMode("refuse");
    for (let i = 0; i < 4; i++) {
      const response = await postJson(s.t, key, "/v1/chat/completions", chat());
      expect(response.status).toBe(200);
      expect(response.headers.get("x-zona")).toBe("ch-ti");
    }
    const records = await usageOf(s.t, keyId, 4);
    expect(records).toHaveLength(4);
    for (const record of records)
      expect(record).toMatchObject({ machine: "ti-2", zone: "ch-ti", outcome: "ok" });
  });

  it("a machine answering 500 is skipped for the next one", async () => {
    await s.ti1.setMode("error500");
    for (let i = 0; i < 4; i++) {
      expect((await postJson(s.t, tiKey.key, "/v1/chat/completions", chat())).status).toBe(200);
    }
  });

  it("all machines of the key's zones down -> 503 zone_unavailable naming the zones, though another zone has the model", async () => {
    await s.ti1.setMode("refuse");
    await s.ti2.setMode("refuse");
    const { key, keyId } = await s.t.newKey({ key: { zones: ["ch-ti"] } });
    const response = await postJson(s.t, key, "/v1/chat/completions", chat());
    expect(response.status).toBe(503);
    const body = await readJson(response);
    expect(body.error).toMatchObject({ type: "zone_unavailable", message: expect.stringContaining("ch-ti") });
    expect(s.zh1.requestsTo("/v1/chat/completions")).toHaveLength(0);
    // Refused before anything ran: released, recorded at no cost.
    const records = await usageOf(s.t, keyId, 1);
    expect(records.every((r) => r.cost === 0)).toBe(true);
  });

  it("every machine of the zones answering errors -> 502 bad_gateway", async () => {
    await s.ti1.setMode("error500");
    await s.ti2.setMode("error500");
    const response = await postJson(s.t, tiKey.key, "/v1/chat/completions", chat());
    expect(response.status).toBe(502);
    expect((await readJson(response)).error.type).toBe("bad_gateway");
  });

  it("a key without zones may use every zone of the installation", async () => {
    await s.ti1.setMode("refuse");
    await s.ti2.setMode("refuse");
    const { key } = await s.t.newKey();
    const response = await postJson(s.t, key, "/v1/chat/completions", chat());
    expect(response.status).toBe(200);
    expect(response.headers.get("x-zona")).toBe("ch-zh");
  });

  it("a stream that breaks off after the first byte carries an error event, no [DONE], status 200, one usage record", async () => {
    const { key, keyId } = await s.t.newKey({ key: { zones: ["ch-ti"] } });
    await s.ti1.setMode("dropMidStream");
    await s.ti2.setMode("dropMidStream");
    s.ti1.configure({ dropAfterChunks: 3 });
    s.ti2.configure({ dropAfterChunks: 3 });
    const response = await postJson(
      s.t,
      key,
      "/v1/chat/completions",
      chat("one two three four five six", { stream: true }),
    );
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toMatch(/^data: \{"error":/m);
    expect(text).not.toContain("[DONE]");
    const records = await usageOf(s.t, keyId, 1);
    expect(records).toHaveLength(1);
  });

  it("a client that goes away mid-stream stops the upstream; what was generated is billed (partial)", async () => {
    const { key, keyId } = await s.t.newKey({ key: { zones: ["ch-ti"] } });
    for (const fake of [s.ti1, s.ti2]) fake.configure({ chunks: 40, chunkDelayMs: 20 });
    const response = await postJson(s.t, key, "/v1/chat/completions", chat("a b c d", { stream: true }));
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    await reader.read();
    await reader.cancel();
    const records = await usageOf(s.t, keyId, 1);
    expect(records[0], JSON.stringify(records)).toMatchObject({ outcome: "partial" });
    expect(records[0].units.output_tokens).toBeGreaterThan(0);
    for (let i = 0; i < 50 && s.ti1.abandonedStreams + s.ti2.abandonedStreams === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(s.ti1.abandonedStreams + s.ti2.abandonedStreams).toBeGreaterThan(0);
    for (const fake of [s.ti1, s.ti2]) fake.configure({ chunks: undefined, chunkDelayMs: 0 });
  });
});

describe("Money through the real endpoints: tokens x tier, highest possible cost reserved", () => {
  let s: EngineStack;
  beforeAll(async () => {
    s = await startEngineStack();
  });
  afterAll(() => s.close());

  it("charges input and output tokens at the model's prices times the tier multiplier", async () => {
    const { key, keyId } = await s.t.newKey();
    const slow = await postJson(s.t, key, "/v1/chat/completions", chat("price me"));
    const body = await readJson(slow);
    const fast = await postJson(s.t, key, "/v1/chat/completions", chat("price me"), {
      "X-Service-Tier": "fast",
    });
    expect(fast.status).toBe(200);
    const records = await usageOf(s.t, keyId, 2);
    const { prompt_tokens: p, completion_tokens: c } = body.usage;
    const slowCost = (p * 1 + c * 2) / 1e6;
    const costs = records.map((r) => r.cost).sort((x: number, y: number) => x - y);
    expect(costs[0]).toBeCloseTo(slowCost, 6);
    expect(costs[1]).toBeCloseTo(slowCost * 4, 6);
    expect(records[0].units).toEqual({ input_tokens: p, output_tokens: c });
  });

  it("402 spending_limit_reached when the highest possible cost does not fit; lowering max_tokens makes it fit", async () => {
    // 8192 output tokens at 2 per million is 0.016384: a limit of 0.001 cannot hold that.
    const { key } = await s.t.newKey({ key: { monthly_limit: 0.001 } });
    for (const fake of [s.ti1, s.ti2, s.zh1]) fake.clearRequests();
    const refused = await postJson(s.t, key, "/v1/chat/completions", chat());
    expect(refused.status).toBe(402);
    expect((await readJson(refused)).error.code).toBe("spending_limit_reached");
    const sent = [s.ti1, s.ti2, s.zh1].reduce(
      (n, fake) => n + fake.requestsTo("/v1/chat/completions").length,
      0,
    );
    expect(sent).toBe(0);
    const fits = await postJson(s.t, key, "/v1/chat/completions", chat("hi", { max_tokens: 16 }));
    expect(fits.status).toBe(200);
  });
});

describe("Engines: a machine that does not answer in time before the first byte is skipped", () => {
  let s: EngineStack;
  beforeAll(async () => {
    s = await startEngineStack({ config: { engines: { first_byte_timeout_ms: 300 } } });
  });
  afterAll(() => s.close());

  it("hang on the first machine -> the answer comes from the next one; hang everywhere -> 502 bad_gateway", async () => {
    const { key } = await s.t.newKey({ key: { zones: ["ch-ti"] } });
    await s.ti1.setMode("hang");
    for (let i = 0; i < 2; i++) {
      const response = await postJson(s.t, key, "/v1/chat/completions", chat());
      expect(response.status).toBe(200);
      await response.text();
    }
    await s.ti2.setMode("hang");
    for (const machine of s.t.app.services.engines.machines) machine.breaker.success();
    const response = await postJson(s.t, key, "/v1/chat/completions", chat());
    expect(response.status).toBe(502);
    expect((await readJson(response)).error.message).toMatch(/in time/);
  }, 20_000);
});
