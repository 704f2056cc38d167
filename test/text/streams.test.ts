import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { zoneUnavailable } from "../../src/errors/catalogue.ts";
import { postThenHangUp, sseEvents, startTextApp, type TextApp } from "./text-app.ts";

const CHAT = { model: "gemma3.8-27b", messages: [{ role: "user", content: "Hi" }], stream: true };
const COMPLETION = { model: "gemma3.8-27b", prompt: "Say hi", stream: true };
const USAGE = { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 };

describe("streams of chat completions and completions (spec: Events, key-API stream; stream_options.include_usage)", () => {
  let a: TextApp;
  beforeAll(async () => {
    a = await startTextApp();
  });
  afterAll(() => a.close());
  beforeEach(() => a.fake.reset());

  const endpoints: Array<[string, string, Record<string, unknown>]> = [
    ["chat completions", "/v1/chat/completions", CHAT],
    ["completions", "/v1/completions", COMPLETION],
  ];

  for (const [name, path, request] of endpoints) {
    it(`${name}: SSE with X-Request-Id, X-Zona and rate-limit headers, chunks, then [DONE]; no usage without include_usage`, async () => {
      a.fake.zone = "zone-s";
      const answer = await a.post(path, request);
      expect(answer.status).toBe(200);
      expect(answer.headers.get("content-type")).toMatch(/^text\/event-stream/);
      expect(answer.headers.get("x-zona")).toBe("zone-s");
      expect(answer.headers.get("x-request-id")).toMatch(/^req_/);
      expect(answer.headers.get("x-ratelimit-limit")).toBe("60");
      expect(answer.text.endsWith("data: [DONE]\n\n")).toBe(true);
      const events = sseEvents(answer.text);
      expect(events.at(-1)).toBe("[DONE]");
      const chunks = events.slice(0, -1).map((event) => JSON.parse(event));
      expect(chunks).toHaveLength(4);
      for (const chunk of chunks) {
        expect(chunk.object).toBe("chat.completion.chunk");
        expect(chunk).not.toHaveProperty("usage");
      }
      expect(chunks.map((chunk) => chunk.choices[0].delta.content ?? "").join("")).toBe("Hello!");
      expect(chunks[0].choices[0].delta.role).toBe("assistant");
      expect(chunks.at(-1).choices[0].finish_reason).toBe("stop");
    });

    it(`${name}: stream_options.include_usage forwards the final usage chunk (no choices) before [DONE]`, async () => {
      const answer = await a.post(path, { ...request, stream_options: { include_usage: true } });
      expect(answer.status).toBe(200);
      const events = sseEvents(answer.text);
      expect(events.at(-1)).toBe("[DONE]");
      const chunks = events.slice(0, -1).map((event) => JSON.parse(event));
      expect(chunks).toHaveLength(5);
      expect(chunks.at(-1)).toMatchObject({ object: "chat.completion.chunk", choices: [], usage: USAGE });
      for (const chunk of chunks.slice(0, -1)) expect(chunk.usage).toBeNull();
    });

    it(`${name}: include_usage false drops the usage chunk`, async () => {
      const answer = await a.post(path, { ...request, stream_options: { include_usage: false } });
      const chunks = sseEvents(answer.text)
        .slice(0, -1)
        .map((event) => JSON.parse(event));
      expect(chunks.some((chunk) => chunk.usage)).toBe(false);
    });

    it(`${name}: a failure after the stream started gives one error event, no [DONE], status 200`, async () => {
      a.fake.streamMode = { kind: "fail-after", chunks: 2 };
      const answer = await a.post(path, request);
      expect(answer.status).toBe(200);
      const events = sseEvents(answer.text);
      expect(events).not.toContain("[DONE]");
      expect(events).toHaveLength(3);
      expect(JSON.parse(events[2] as string)).toEqual({
        error: { message: expect.any(String), type: "server_error", code: "upstream_error" },
      });
      expect(answer.text.endsWith("\n\n")).toBe(true);
    });

    it(`${name}: a failure before the stream started is an ordinary JSON error`, async () => {
      a.fake.failNext = zoneUnavailable("gemma3.8-27b", ["zone-a"]);
      const answer = await a.post(path, request);
      expect(answer.status).toBe(503);
      expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
      expect(answer.body.error).toMatchObject({ type: "zone_unavailable" });
    });

    it(`${name}: the client going away mid-stream aborts the signal given to the service`, async () => {
      a.fake.streamMode = { kind: "hang" };
      const aborted = a.fake.resetAborted();
      const first = await postThenHangUp(a.t.url, a.key, path, request, "first-bytes");
      expect(first).toContain("data: ");
      await aborted;
      expect(a.fake.last().context.signal.aborted).toBe(true);
    });
  }

  it("spec POST /v1/completions: text chunks become chat-completion chunks with the text in delta.content (and, for text-completion clients, in each choice's text)", async () => {
    const answer = await a.post("/v1/completions", COMPLETION);
    const chunks = sseEvents(answer.text)
      .slice(0, -1)
      .map((event) => JSON.parse(event));
    expect(chunks[0]).toEqual({
      id: "cmpl-fake",
      object: "chat.completion.chunk",
      created: 1_767_225_600,
      model: "gemma3.8-27b",
      choices: [
        {
          index: 0,
          delta: { role: "assistant", content: "Hel" },
          text: "Hel",
          finish_reason: null,
          logprobs: null,
        },
      ],
    });
    expect(chunks[1].choices[0].delta).toEqual({ content: "lo" });
    expect(chunks[1].choices[0].text).toBe("lo");
    expect(chunks[3].choices[0]).toEqual({
      index: 0,
      delta: {},
      text: "",
      finish_reason: "stop",
      logprobs: null,
    });
  });

  it("a non-streamed answer: the client going away aborts the signal given to the service", async () => {
    a.fake.hangNext = true;
    const aborted = a.fake.resetAborted();
    await postThenHangUp(
      a.t.url,
      a.key,
      "/v1/chat/completions",
      { ...CHAT, stream: false },
      () => a.fake.received.length > 0,
    );
    await aborted;
    expect(a.fake.last().context.signal.aborted).toBe(true);
  });

  it("a finished answer leaves the signal untouched", async () => {
    const answer = await a.post("/v1/chat/completions", { ...CHAT, stream: false });
    expect(answer.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(a.fake.last().context.signal.aborted).toBe(false);
  });
});
