import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAiServer } from "../fakes/index.ts";
import { capturedLogger, lineWhere } from "../helpers/log-lines.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

const MODEL = "gemma3.8-27b";

describe("the request's log line (key id, model, machine, zone, status, upstream latency, tokens)", () => {
  const fake = new FakeOpenAiServer();
  const log = capturedLogger();
  let t: TestApp;
  let key: string;
  let keyId: string;
  beforeAll(async () => {
    await fake.start();
    t = await startTestApp({
      logger: log.logger,
      config: {
        installation: { zones: [{ id: "ch" }] },
        models: [{ id: MODEL, kind: "chat" }],
        machines: [{ name: "gpu-1", zone: "ch", protocol: "openai", url: fake.url, models: [MODEL] }],
      },
      extend: (app) => {
        app.get("/test-quiet", { config: { quiet: true } }, () => ({ ok: true }));
      },
    });
    ({ key, keyId } = await t.newKey());
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });

  const chat = (stream: boolean) =>
    t.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: MODEL,
        stream,
        messages: [{ role: "user", content: "count the stars" }],
      }),
    });
  const lineOf = (response: Response) => {
    const requestId = response.headers.get("x-request-id");
    return lineWhere(log.lines, (l) => l.msg === "request" && l.request_id === requestId);
  };

  it.each([
    { rule: "an answer in one piece", stream: false },
    { rule: "a streamed answer (tokens as settled at its end)", stream: true },
  ])("$rule: one info line with everything the trace learnt", async ({ stream }) => {
    const response = await chat(stream);
    expect(response.status).toBe(200);
    const body = await response.text();
    const line = await lineOf(response);
    expect(line).toMatchObject({
      level: 30,
      method: "POST",
      path: "/v1/chat/completions",
      status: 200,
      key_id: keyId,
      model: MODEL,
      tier: "slow",
      machine: "gpu-1",
      zone: "ch",
    });
    expect(line.ms).toBeGreaterThanOrEqual(0);
    expect(line.upstream_ms).toBeGreaterThanOrEqual(0);
    expect(line.prompt_tokens).toBeGreaterThan(0);
    expect(line.completion_tokens).toBeGreaterThan(0);
    if (!stream) {
      const usage = JSON.parse(body).usage;
      expect(line).toMatchObject({
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
      });
    }
    expect(log.text()).not.toContain(key);
    expect(log.text()).not.toContain("count the stars");
  });

  it("a request with a wrong key: the line has its status and no key id, and the key never appears", async () => {
    const wrong = "sk-zona-this-is-not-a-real-key-000000";
    const response = await t.fetch("/v1/models", { headers: { authorization: `Bearer ${wrong}` } });
    expect(response.status).toBe(401);
    const line = await lineOf(response);
    expect(line.status).toBe(401);
    expect(line).not.toHaveProperty("key_id");
    expect(line).not.toHaveProperty("machine");
    expect(log.text()).not.toContain(wrong);
  });

  it("a route configured quiet (health checks) writes no line; the others do", async () => {
    const quiet = await t.fetch("/test-quiet");
    expect(quiet.status).toBe(200);
    const loud = await t.fetch("/v1/models", { headers: { authorization: `Bearer ${key}` } });
    await lineOf(loud);
    const quietId = quiet.headers.get("x-request-id");
    expect(log.lines.filter((l) => l.request_id === quietId)).toEqual([]);
  });

  it("a client that leaves mid-stream still gets its one line, with status 499 (client closed request)", async () => {
    fake.configure({ chunkDelayMs: 100 });
    try {
      const controller = new AbortController();
      const response = await t.fetch("/v1/chat/completions", {
        method: "POST",
        signal: controller.signal,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: MODEL, stream: true, messages: [{ role: "user", content: "count" }] }),
      });
      const requestId = response.headers.get("x-request-id");
      await (response.body as ReadableStream<Uint8Array>).getReader().read();
      controller.abort();
      const line = await lineWhere(log.lines, (l) => l.msg === "request" && l.request_id === requestId);
      expect(line).toMatchObject({ status: 499, key_id: keyId, model: MODEL, machine: "gpu-1" });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(log.lines.filter((l) => l.msg === "request" && l.request_id === requestId)).toHaveLength(1);
    } finally {
      fake.configure({ chunkDelayMs: 0 });
    }
  });
});
