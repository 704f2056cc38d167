import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createOpenAiAdapter } from "../../../src/engines/adapters/openai-adapter.ts";
import { UpstreamClient } from "../../../src/engines/http/upstream-client.ts";
import type { ChatCall, ChatChunk, CompletionCall, TextChunk } from "../../../src/engines/types.ts";
import { FakeOpenAiServer, fakeEmbedding, fakeMachine } from "../../fakes/index.ts";
import { failure } from "../upstream-failure.ts";

const fake = new FakeOpenAiServer();
let client: UpstreamClient;
let adapter: ReturnType<typeof createOpenAiAdapter>;
const signal = () => new AbortController().signal;
const machine = () => fakeMachine("openai", fake.url);

beforeAll(async () => {
  await fake.start();
  client = new UpstreamClient({ headersMs: 300 });
  adapter = createOpenAiAdapter(client);
});
afterAll(async () => {
  await client.close();
  await fake.close();
});
afterEach(async () => {
  await fake.setMode("normal", { omitUsage: false, chunkDelayMs: 0, chunks: undefined, dropAfterChunks: 2 });
  fake.clearRequests();
});

function chatCall(text: string, params: Record<string, unknown> = {}): ChatCall {
  return { model: "qwen3.8-27b", messages: [{ role: "user", content: text }], params };
}

async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
}

const WEATHER_TOOL = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather of a city",
    parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] },
  },
};

describe("openai adapter: chat", () => {
  it("returns a chat.completion in the internal shape with our model id and usage, passing params as they are", async () => {
    const params = {
      temperature: 0.2,
      top_p: 0.9,
      seed: 7,
      stop: ["zzz"],
      user: "u1",
      logit_bias: { "42": 1 },
    };
    const answer = await adapter.chat.chat(machine(), chatCall("Grüezi mitenand", params), signal());
    expect(Object.keys(answer).sort()).toEqual(["choices", "created", "id", "model", "object", "usage"]);
    expect(answer).toMatchObject({ object: "chat.completion", model: "qwen3.8-27b" });
    expect(answer.id).toMatch(/^chatcmpl-/);
    expect(answer.choices).toEqual([
      {
        index: 0,
        message: { role: "assistant", content: "echo: Grüezi mitenand" },
        finish_reason: "stop",
        logprobs: null,
      },
    ]);
    expect(answer.usage.completion_tokens).toBe(3);
    expect(answer.usage.total_tokens).toBe(answer.usage.prompt_tokens + 3);
    expect(fake.lastRequest.path).toBe("/v1/chat/completions");
    expect(fake.lastRequest.body).toEqual({
      ...params,
      model: "qwen3.8-27b",
      messages: [{ role: "user", content: "Grüezi mitenand" }],
      stream: false,
    });
  });

  it("does not double /v1 when the machine url already ends with it", async () => {
    await adapter.chat.chat(fakeMachine("openai", `${fake.url}/v1`), chatCall("hi"), signal());
    expect(fake.lastRequest.path).toBe("/v1/chat/completions");
  });

  it("cuts at max_tokens with finish_reason length", async () => {
    const answer = await adapter.chat.chat(
      machine(),
      chatCall("one two three four", { max_tokens: 2 }),
      signal(),
    );
    expect(answer.choices[0]?.message.content).toBe("echo: one");
    expect(answer.choices[0]?.finish_reason).toBe("length");
  });

  it("maps tool calls: id, type function, JSON-string arguments, finish_reason tool_calls", async () => {
    const call = chatCall("What is the weather in Bern?", { tools: [WEATHER_TOOL], tool_choice: "auto" });
    const answer = await adapter.chat.chat(machine(), call, signal());
    const choice = answer.choices[0];
    expect(choice?.finish_reason).toBe("tool_calls");
    expect(choice?.message.content).toBeNull();
    expect(choice?.message.tool_calls).toEqual([
      {
        id: expect.any(String),
        type: "function",
        function: { name: "get_weather", arguments: '{"location":"Bern"}' },
      },
    ]);
    expect(fake.lastRequest.body).toMatchObject({ tools: [WEATHER_TOOL], tool_choice: "auto" });
  });

  it("passes response_format through: json_object and json_schema answers are JSON", async () => {
    const asJson = await adapter.chat.chat(
      machine(),
      chatCall("hello", { response_format: { type: "json_object" } }),
      signal(),
    );
    expect(JSON.parse(asJson.choices[0]?.message.content ?? "")).toEqual({ echo: "hello" });
    const schema = {
      type: "object",
      properties: { city: { type: "string" }, days: { type: "integer" } },
      required: ["city", "days"],
    };
    const format = { type: "json_schema", json_schema: { name: "plan", schema, strict: true } };
    const bySchema = await adapter.chat.chat(
      machine(),
      chatCall("Chur", { response_format: format }),
      signal(),
    );
    expect(JSON.parse(bySchema.choices[0]?.message.content ?? "")).toEqual({ city: "Chur", days: 42 });
    expect(fake.lastRequest.body).toMatchObject({ response_format: format });
  });

  it("estimates usage when the upstream reports none", async () => {
    await fake.setMode("normal", { omitUsage: true });
    const answer = await adapter.chat.chat(machine(), chatCall("12345678"), signal());
    // prompt: 8 characters / 4; completion: "echo: 12345678" = 14 characters / 4, rounded up
    expect(answer.usage).toEqual({ prompt_tokens: 2, completion_tokens: 4, total_tokens: 6 });
  });
});

describe("openai adapter: chatStream", () => {
  it("streams chunks in the internal shape, asks for usage and yields it last in a chunk without choices", async () => {
    const stream = await adapter.chat.chatStream(
      machine(),
      chatCall("eins zwei drei", { temperature: 0 }),
      signal(),
    );
    const chunks = await collect(stream);
    expect(fake.lastRequest.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0,
    });
    const first = chunks[0] as ChatChunk;
    expect(first.choices[0]?.delta.role).toBe("assistant");
    for (const chunk of chunks) {
      expect(chunk).toMatchObject({ object: "chat.completion.chunk", model: "qwen3.8-27b", id: first.id });
    }
    const text = chunks.flatMap((c) => c.choices.map((choice) => choice.delta.content ?? "")).join("");
    expect(text).toBe("echo: eins zwei drei");
    const last = chunks.at(-1) as ChatChunk;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({ prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 });
    expect(chunks.slice(0, -1).every((c) => c.usage === undefined)).toBe(true);
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe("stop");
  });

  it("estimates the usage of the last chunk when the upstream sends none", async () => {
    await fake.setMode("normal", { omitUsage: true });
    const chunks = await collect(await adapter.chat.chatStream(machine(), chatCall("12345678"), signal()));
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 2, completion_tokens: 4, total_tokens: 6 },
    });
  });

  it("streams tool-call deltas with finish_reason tool_calls", async () => {
    const call = chatCall("weather in Lugano?", { tools: [WEATHER_TOOL] });
    const chunks = await collect(await adapter.chat.chatStream(machine(), call, signal()));
    const deltas = chunks.flatMap((c) => c.choices.flatMap((choice) => choice.delta.tool_calls ?? []));
    expect(deltas[0]).toMatchObject({ index: 0, type: "function", function: { name: "get_weather" } });
    const args = deltas
      .map((d) => (d as { function: { arguments?: string } }).function.arguments ?? "")
      .join("");
    expect(JSON.parse(args)).toEqual({ location: "Lugano" });
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe("tool_calls");
  });

  it("resolves only after the upstream accepted: refused, 500, hanging and aborted calls reject before any chunk", async () => {
    await fake.setMode("refuse");
    expect((await failure(adapter.chat.chatStream(machine(), chatCall("x"), signal()))).kind).toBe("connect");
    await fake.setMode("error500");
    const status = await failure(adapter.chat.chatStream(machine(), chatCall("x"), signal()));
    expect([status.kind, status.status, status.retryable]).toEqual(["status", 500, true]);
    await fake.setMode("hang");
    expect((await failure(adapter.chat.chatStream(machine(), chatCall("x"), signal()))).kind).toBe("timeout");
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const aborted = await failure(adapter.chat.chatStream(machine(), chatCall("x"), controller.signal));
    expect([aborted.kind, aborted.retryable]).toEqual(["aborted", false]);
  });

  it("throws an UpstreamError from the iterator when the upstream drops the connection after N chunks", async () => {
    await fake.setMode("dropMidStream", { dropAfterChunks: 3 });
    const stream = await adapter.chat.chatStream(machine(), chatCall("a b c d e f g"), signal());
    const received: ChatChunk[] = [];
    const error = await failure(
      (async () => {
        for await (const chunk of stream) received.push(chunk);
      })(),
    );
    expect(received).toHaveLength(3);
    expect(error.kind).toBe("connect");
  });

  it("throws aborted from the iterator when the signal fires mid-stream", async () => {
    await fake.setMode("normal", { chunkDelayMs: 30, chunks: 20 });
    const controller = new AbortController();
    const stream = await adapter.chat.chatStream(machine(), chatCall("slowly"), controller.signal);
    let count = 0;
    const error = await failure(
      (async () => {
        for await (const _ of stream) if (++count === 2) controller.abort();
      })(),
    );
    expect(error.kind).toBe("aborted");
  });

  it("streams exactly `chunks` content pieces when the fake is set to (the benchmark uses 64)", async () => {
    await fake.setMode("normal", { chunks: 64 });
    const chunks = await collect(await adapter.chat.chatStream(machine(), chatCall("bench"), signal()));
    const pieces = chunks.filter((c) => (c.choices[0]?.delta.content ?? "") !== "");
    expect(pieces).toHaveLength(64);
    expect(chunks.at(-1)?.usage?.completion_tokens).toBe(64);
  });

  it("reuses keep-alive connections for streams read to their end", async () => {
    for (let i = 0; i < 20; i++)
      await collect(await adapter.chat.chatStream(machine(), chatCall(`n${i}`), signal()));
    expect(fake.requests).toHaveLength(20);
    expect(fake.connections).toBeLessThanOrEqual(2);
  });

  it("closes the upstream stream when the consumer stops early", async () => {
    await fake.setMode("normal", { chunkDelayMs: 20, chunks: 50 });
    const stream = await adapter.chat.chatStream(machine(), chatCall("stop early"), signal());
    for await (const _ of stream) break;
    await expect.poll(() => fake.abandonedStreams).toBe(1);
  });
});

describe("openai adapter: completions", () => {
  const call: CompletionCall = {
    model: "qwen3.8-27b",
    prompt: "Once upon",
    params: { max_tokens: 50, temperature: 1 },
  };

  it("complete returns a text_completion with our model id and usage", async () => {
    const answer = await adapter.completion.complete(machine(), call, signal());
    expect(Object.keys(answer).sort()).toEqual(["choices", "created", "id", "model", "object", "usage"]);
    expect(answer).toMatchObject({ object: "text_completion", model: "qwen3.8-27b" });
    expect(answer.choices).toEqual([
      { index: 0, text: "echo: Once upon", finish_reason: "stop", logprobs: null },
    ]);
    expect(answer.usage).toEqual({ prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 });
    expect(fake.lastRequest.path).toBe("/v1/completions");
    expect(fake.lastRequest.body).toEqual({
      max_tokens: 50,
      temperature: 1,
      model: "qwen3.8-27b",
      prompt: "Once upon",
      stream: false,
    });
  });

  it("completeStream yields text chunks and a last chunk with usage and no choices", async () => {
    const chunks = await collect(await adapter.completion.completeStream(machine(), call, signal()));
    expect(fake.lastRequest.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const text = chunks.flatMap((c: TextChunk) => c.choices.map((choice) => choice.text)).join("");
    expect(text).toBe("echo: Once upon");
    expect(chunks.at(-1)).toEqual({
      id: chunks[0]?.id,
      created: expect.any(Number),
      model: "qwen3.8-27b",
      choices: [],
      usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 },
    });
  });
});

describe("openai adapter: embeddings and rerank", () => {
  it("embed returns the vectors in input order and the prompt tokens", async () => {
    const texts = ["erste", "zweite", "dritte"];
    const result = await adapter.embeddings.embed(machine(), "bge-m3", texts, signal());
    expect(result.vectors).toEqual(texts.map((text) => fakeEmbedding(text, 1024)));
    expect(result.promptTokens).toBe(6);
    expect(fake.lastRequest.body).toEqual({ model: "bge-m3", input: texts, encoding_format: "float" });
  });

  it("rerank returns relevance scores by document index", async () => {
    const scores = await adapter.rerank.rerank(
      machine(),
      "bge-reranker-v2-m3",
      "red apple",
      ["green pear", "red apple pie"],
      signal(),
    );
    expect(scores).toEqual([
      { index: 1, relevance_score: 1 },
      { index: 0, relevance_score: 0 },
    ]);
  });
});
