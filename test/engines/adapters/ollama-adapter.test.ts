import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createOllamaAdapter } from "../../../src/engines/adapters/ollama-adapter.ts";
import { UpstreamClient } from "../../../src/engines/http/upstream-client.ts";
import type { ChatEngine, EngineAdapter } from "../../../src/engines/modalities.ts";
import type { ChatCall, ChatChunk, CompletionCall } from "../../../src/engines/types.ts";
import { FakeOllamaServer, fakeEmbedding, fakeMachine } from "../../fakes/index.ts";
import { failure } from "../upstream-failure.ts";

const fake = new FakeOllamaServer();
let client: UpstreamClient;
let adapter: ReturnType<typeof createOllamaAdapter>;
const signal = () => new AbortController().signal;
const machine = () => fakeMachine("ollama", fake.url);

beforeAll(async () => {
  await fake.start();
  client = new UpstreamClient({ headersMs: 300 });
  adapter = createOllamaAdapter(client);
});
afterAll(async () => {
  await client.close();
  await fake.close();
});
afterEach(async () => {
  await fake.setMode("normal", { omitUsage: false, dropAfterChunks: 2 });
  fake.clearRequests();
});

function chatCall(text: string, params: Record<string, unknown> = {}): ChatCall {
  return { model: "gemma3.8-4b", messages: [{ role: "user", content: text }], params };
}

async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
}

function chat(): ChatEngine["chat"] {
  return adapter.chat.chat;
}
function chatStream(): ChatEngine["chatStream"] {
  return adapter.chat.chatStream;
}

describe("ollama adapter: chat", () => {
  it("calls /api/chat without streaming and returns a chat.completion with usage from the eval counts", async () => {
    const answer = await chat()(
      machine(),
      chatCall("Allegra", { temperature: 0.1, max_tokens: 64 }),
      signal(),
    );
    expect(fake.lastRequest.path).toBe("/api/chat");
    expect(fake.lastRequest.body).toEqual({
      model: "gemma3.8-4b",
      messages: [{ role: "user", content: "Allegra" }],
      stream: false,
      options: { temperature: 0.1, num_predict: 64 },
    });
    expect(Object.keys(answer).sort()).toEqual(["choices", "created", "id", "model", "object", "usage"]);
    expect(answer.id).toMatch(/^chatcmpl-/);
    expect(answer).toMatchObject({ object: "chat.completion", model: "gemma3.8-4b" });
    expect(answer.choices).toEqual([
      {
        index: 0,
        message: { role: "assistant", content: "echo: Allegra" },
        finish_reason: "stop",
        logprobs: null,
      },
    ]);
    expect(answer.usage).toEqual({ prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 });
  });

  it("sends images from data URIs as base64 `images`", async () => {
    const png = Buffer.from("fake png bytes").toString("base64");
    const call: ChatCall = {
      model: "gemma3.8-4b",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "describe" },
            { type: "image_url", image_url: { url: `data:image/png;base64,${png}` } },
          ],
        },
      ],
      params: {},
    };
    const answer = await chat()(machine(), call, signal());
    expect(fake.lastRequest.body).toMatchObject({
      messages: [{ role: "user", content: "describe", images: [png] }],
    });
    expect(answer.choices[0]?.message.content).toBe("echo: describe [1 image]");
  });

  it("maps Ollama tool calls back with generated ids and JSON-string arguments", async () => {
    const tool = {
      type: "function",
      function: {
        name: "get_weather",
        parameters: { type: "object", properties: { location: { type: "string" } } },
      },
    };
    const answer = await chat()(machine(), chatCall("weather in Sion", { tools: [tool] }), signal());
    expect(fake.lastRequest.body).toMatchObject({ tools: [tool] });
    expect(answer.choices[0]).toEqual({
      index: 0,
      message: {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: expect.stringMatching(/^call_/),
            type: "function",
            function: { name: "get_weather", arguments: '{"location":"Sion"}' },
          },
        ],
      },
      finish_reason: "tool_calls",
      logprobs: null,
    });
  });

  it("asks for format json (json_object) and the schema (json_schema), answering JSON", async () => {
    const asJson = await chat()(
      machine(),
      chatCall("hey", { response_format: { type: "json_object" } }),
      signal(),
    );
    expect(fake.lastRequest.body).toMatchObject({ format: "json" });
    expect(JSON.parse(asJson.choices[0]?.message.content ?? "")).toEqual({ echo: "hey" });
    const schema = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] };
    const format = { type: "json_schema", json_schema: { name: "r", schema } };
    const bySchema = await chat()(machine(), chatCall("hey", { response_format: format }), signal());
    expect(fake.lastRequest.body).toMatchObject({ format: schema });
    expect(JSON.parse(bySchema.choices[0]?.message.content ?? "")).toEqual({ ok: true });
  });

  it("reports finish_reason length when num_predict cut the answer", async () => {
    const answer = await chat()(machine(), chatCall("a b c d", { max_tokens: 2 }), signal());
    expect(answer.choices[0]).toMatchObject({ message: { content: "echo: a" }, finish_reason: "length" });
  });
});

describe("ollama adapter: chatStream", () => {
  it("streams NDJSON as chat chunks, finish_reason on the last choice chunk, usage last without choices", async () => {
    const chunks = await collect(await chatStream()(machine(), chatCall("eins zwei"), signal()));
    expect(fake.lastRequest.body).toMatchObject({ stream: true });
    expect(chunks[0]?.choices[0]?.delta).toEqual({ role: "assistant", content: "echo:" });
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("echo: eins zwei");
    for (const chunk of chunks)
      expect(chunk).toMatchObject({
        id: chunks[0]?.id,
        object: "chat.completion.chunk",
        model: "gemma3.8-4b",
      });
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe("stop");
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 },
    });
  });

  it("streams tool calls as whole deltas with index and id", async () => {
    const tool = { type: "function", function: { name: "get_weather", parameters: { type: "object" } } };
    const chunks = await collect(
      await chatStream()(machine(), chatCall("weather in Thun", { tools: [tool] }), signal()),
    );
    const calls = chunks.flatMap((c) => c.choices.flatMap((choice) => choice.delta.tool_calls ?? []));
    expect(calls).toEqual([
      {
        index: 0,
        id: expect.stringMatching(/^call_/),
        type: "function",
        function: { name: "get_weather", arguments: '{"location":"Thun"}' },
      },
    ]);
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe("tool_calls");
  });

  it("estimates usage when Ollama reports no counts", async () => {
    await fake.setMode("normal", { omitUsage: true });
    const chunks = await collect(await chatStream()(machine(), chatCall("12345678"), signal()));
    expect(chunks.at(-1)?.usage).toEqual({ prompt_tokens: 2, completion_tokens: 4, total_tokens: 6 });
  });

  it("rejects before the first chunk on refuse (connect), 500 (status), hang (timeout) and abort (aborted)", async () => {
    await fake.setMode("refuse");
    expect((await failure(chatStream()(machine(), chatCall("x"), signal()))).kind).toBe("connect");
    await fake.setMode("error500");
    const status = await failure(chatStream()(machine(), chatCall("x"), signal()));
    expect([status.kind, status.status, status.retryable]).toEqual(["status", 500, true]);
    expect(status.message).toContain("fake failure");
    await fake.setMode("hang");
    expect((await failure(chatStream()(machine(), chatCall("x"), signal()))).kind).toBe("timeout");
    const controller = new AbortController();
    controller.abort();
    expect((await failure(chatStream()(machine(), chatCall("x"), controller.signal))).kind).toBe("aborted");
  });

  it("throws an UpstreamError from the iterator when the connection drops after N lines", async () => {
    await fake.setMode("dropMidStream", { dropAfterChunks: 2 });
    const stream = await chatStream()(machine(), chatCall("a b c d e"), signal());
    const received: ChatChunk[] = [];
    const error = await failure(
      (async () => {
        for await (const chunk of stream) received.push(chunk);
      })(),
    );
    expect(received).toHaveLength(2);
    expect(error.kind).toBe("connect");
  });

  it("answers 404 for a model the server does not have, not retryable", async () => {
    await fake.setMode("normal", { models: ["other"] });
    const error = await failure(chat()(machine(), chatCall("x"), signal()));
    expect([error.kind, error.status, error.retryable]).toEqual(["status", 404, false]);
    expect(error.message).toContain("not found");
    fake.configure({ models: undefined });
  });
});

describe("ollama adapter: completions and embeddings", () => {
  const call: CompletionCall = { model: "gemma3.8-4b", prompt: "Es war einmal", params: { stop: ["\n\n"] } };

  it("complete uses raw /api/generate and returns a text_completion", async () => {
    const answer = await adapter.completion.complete(machine(), call, signal());
    expect(fake.lastRequest.path).toBe("/api/generate");
    expect(fake.lastRequest.body).toEqual({
      model: "gemma3.8-4b",
      prompt: "Es war einmal",
      raw: true,
      stream: false,
      options: { stop: ["\n\n"] },
    });
    expect(answer).toMatchObject({ object: "text_completion", model: "gemma3.8-4b" });
    expect(answer.id).toMatch(/^cmpl-/);
    expect(answer.choices).toEqual([
      { index: 0, text: "echo: Es war einmal", finish_reason: "stop", logprobs: null },
    ]);
    expect(answer.usage).toEqual({ prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 });
  });

  it("completeStream yields text chunks and usage last", async () => {
    const stream = await adapter.completion.completeStream(machine(), call, signal());
    const chunks = await collect(stream);
    expect(fake.lastRequest.body).toMatchObject({ raw: true, stream: true });
    expect(chunks.map((c) => c.choices[0]?.text ?? "").join("")).toBe("echo: Es war einmal");
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe("stop");
    expect(chunks.at(-1)).toEqual({
      id: chunks[0]?.id,
      created: expect.any(Number),
      model: "gemma3.8-4b",
      choices: [],
      usage: { prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 },
    });
  });

  it("embed calls /api/embed and returns the vectors and prompt_eval_count", async () => {
    const texts = ["eins", "zwei"];
    const result = await adapter.embeddings.embed(machine(), "bge-m3", texts, signal());
    expect(fake.lastRequest.body).toEqual({ model: "bge-m3", input: texts, truncate: true });
    expect(result).toEqual({ vectors: texts.map((t) => fakeEmbedding(t, 1024)), promptTokens: 2 });
  });

  it("has no rerank (Ollama has none)", () => {
    const offers: EngineAdapter = adapter;
    expect(offers.rerank).toBeUndefined();
  });
});
