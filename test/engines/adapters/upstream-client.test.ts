import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { UpstreamClient } from "../../../src/engines/http/upstream-client.ts";
import { openAiPath, rootPath } from "../../../src/engines/http/upstream-target.ts";
import { FakeOpenAiServer, fakeMachine } from "../../fakes/index.ts";
import { failure } from "../upstream-failure.ts";

const fake = new FakeOpenAiServer();
let client: UpstreamClient;

beforeAll(async () => {
  await fake.start();
  client = new UpstreamClient({ headersMs: 300, bodyMs: 300 });
});
afterAll(async () => {
  await client.close();
  await fake.close();
});
afterEach(async () => {
  await fake.setMode("normal", { errorStatus: 500, apiKey: undefined, chunkDelayMs: 0 });
  fake.clearRequests();
});

const chatBody = { model: "m", messages: [{ role: "user", content: "hi" }] };

function call(
  overrides: { signal?: AbortSignal; api_key?: string; url?: string; body?: unknown; path?: string } = {},
) {
  const machine = fakeMachine(
    "openai",
    overrides.url ?? fake.url,
    overrides.api_key ? { api_key: overrides.api_key } : {},
  );
  return {
    machine,
    path: overrides.path ?? openAiPath(machine, "/chat/completions"),
    body: "body" in overrides ? overrides.body : chatBody,
    signal: overrides.signal ?? new AbortController().signal,
  };
}

describe("upstream targets", () => {
  it("adds /v1 to a server root but not to a url that already ends with /v1", () => {
    expect(openAiPath(fakeMachine("openai", "http://h:8000"), "/chat/completions")).toBe(
      "/v1/chat/completions",
    );
    expect(openAiPath(fakeMachine("openai", "http://h:8000/"), "/embeddings")).toBe("/v1/embeddings");
    expect(openAiPath(fakeMachine("openai", "http://h:8000/v1/"), "/completions")).toBe("/v1/completions");
    expect(openAiPath(fakeMachine("openai", "http://h/llm/v1"), "/completions")).toBe("/llm/v1/completions");
    expect(rootPath(fakeMachine("tei", "http://h:8080/tei/"), "/embed")).toBe("/tei/embed");
  });
});

describe("UpstreamClient", () => {
  it("posts JSON and sends the machine's api_key as a bearer token", async () => {
    await fake.setMode("normal", { apiKey: "sk-upstream" });
    const answer = await client.json(call({ api_key: "sk-upstream" }));
    expect(answer).toMatchObject({ object: "chat.completion" });
    expect(fake.lastRequest.headers.authorization).toBe("Bearer sk-upstream");
    expect(fake.lastRequest.body).toEqual(chatBody);
    expect(fake.lastRequest.headers["content-type"]).toBe("application/json");
  });

  it("GETs when there is no body", async () => {
    const answer = await client.json(call({ body: undefined, path: "/v1/models" }));
    expect(answer).toMatchObject({ object: "list" });
    expect(fake.lastRequest.method).toBe("GET");
  });

  it("maps a refused connection to connect, retryable", async () => {
    await fake.setMode("refuse");
    const error = await failure(client.json(call()));
    expect(error.kind).toBe("connect");
    expect(error.retryable).toBe(true);
    expect(error.message).not.toContain("127.0.0.1");
  });

  it("keeps reusing keep-alive connections after the machine refused and came back", async () => {
    await fake.setMode("refuse");
    await failure(client.json(call()));
    await fake.setMode("normal");
    fake.clearRequests();
    for (let i = 0; i < 20; i++) await client.json(call());
    expect(fake.requests).toHaveLength(20);
    expect(fake.connections).toBeLessThanOrEqual(2);
  });

  it("maps a 500 to status 500, retryable, with the upstream's message and neither url nor key", async () => {
    await fake.setMode("error500");
    const error = await failure(client.json(call({ api_key: "sk-secret" })));
    expect(error.kind).toBe("status");
    expect(error.status).toBe(500);
    expect(error.retryable).toBe(true);
    expect(error.message).toContain("fake failure");
    expect(error.message).not.toContain(fake.url);
    expect(error.message).not.toContain("sk-secret");
  });

  it("maps a 400 and a 401 to status failures that are not retryable, and a 429 to a retryable one", async () => {
    for (const [status, retryable] of [
      [400, false],
      [401, false],
      [429, true],
    ] as const) {
      await fake.setMode("error500", { errorStatus: status });
      const error = await failure(client.json(call()));
      expect([error.kind, error.status, error.retryable]).toEqual(["status", status, retryable]);
    }
  });

  it("maps a server that never answers to timeout after the headers timeout", async () => {
    await fake.setMode("hang");
    const started = Date.now();
    const error = await failure(client.json(call()));
    expect(error.kind).toBe("timeout");
    expect(error.retryable).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("waits for a slow first byte within the headers timeout and times out beyond it", async () => {
    await fake.setMode("slow", { slowMs: 100 });
    await expect(client.json(call())).resolves.toMatchObject({ object: "chat.completion" });
    // undici's headers and body timers tick about twice a second: a timeout fires up to ~1 s late.
    await fake.setMode("slow", { slowMs: 2_500 });
    expect((await failure(client.json(call()))).kind).toBe("timeout");
  });

  it("maps an already aborted signal to aborted without sending anything", async () => {
    const controller = new AbortController();
    controller.abort();
    const error = await failure(client.json(call({ signal: controller.signal })));
    expect(error.kind).toBe("aborted");
    expect(error.retryable).toBe(false);
    expect(fake.requests).toHaveLength(0);
  });

  it("maps a signal aborted while waiting to aborted, and a signal timeout to timeout", async () => {
    await fake.setMode("hang");
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    expect((await failure(client.json(call({ signal: controller.signal })))).kind).toBe("aborted");
    expect((await failure(client.json(call({ signal: AbortSignal.timeout(50) })))).kind).toBe("timeout");
  });

  it("maps a body that is not JSON to protocol", async () => {
    const error = await failure(client.json(call({ body: undefined, path: "/health" })));
    expect(error.kind).toBe("protocol");
  });

  it("maps a JSON body cut off mid-way to a retryable connect failure", async () => {
    await fake.setMode("dropMidStream");
    const error = await failure(client.json(call()));
    expect(error.kind).toBe("connect");
    expect(error.retryable).toBe(true);
  });

  it("times out a stream that goes silent for longer than the body timeout", async () => {
    await fake.setMode("normal", { chunkDelayMs: 2_500 });
    const body = await client.stream(call({ body: { ...chatBody, stream: true } }), "text/event-stream");
    const error = await failure(
      (async () => {
        for await (const _ of body) {
          // read until it fails
        }
      })(),
    );
    expect(error.kind).toBe("timeout");
  });
});
