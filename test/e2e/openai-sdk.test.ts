import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withCanary } from "../helpers/log-scan.ts";
import { CHAT_MODEL, type EngineStack, LOCAL_MODEL, startEngineStack, usageOf } from "./engine-stack.ts";

describe("The official openai package against the whole service (fake vLLM, Ollama and TEI behind it)", () => {
  let s: EngineStack;
  let client: OpenAI;
  let keyId: string;
  beforeAll(async () => {
    s = await startEngineStack();
    const made = await s.t.newKey();
    keyId = made.keyId;
    client = new OpenAI({ apiKey: made.key, baseURL: `${s.t.url}/v1`, maxRetries: 0 });
  });
  afterAll(() => s.close());

  it("chat completions: a plain answer with usage, billed once", async () => {
    const { data, response } = await client.chat.completions
      .create({ model: CHAT_MODEL, messages: [{ role: "user", content: withCanary("hello zona") }] })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe(`echo: ${withCanary("hello zona")}`);
    expect(data.usage?.completion_tokens).toBeGreaterThan(0);
    expect(response.headers.get("x-zona")).toMatch(/^ch-/);
    expect(response.headers.get("x-ratelimit-limit")).toBe("60");
  });

  it("chat completions: streaming with include_usage ends with a usage chunk", async () => {
    const stream = await client.chat.completions.create({
      model: CHAT_MODEL,
      messages: [{ role: "user", content: "stream these words" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe("echo: stream these words");
    expect(usage?.total_tokens).toBeGreaterThan(0);
  });

  it("chat completions: tools come back as tool calls", async () => {
    const answer = await client.chat.completions.create({
      model: CHAT_MODEL,
      messages: [{ role: "user", content: "What is the weather in Lugano?" }],
      tools: [
        {
          type: "function",
          function: {
            name: "get_weather",
            parameters: { type: "object", properties: { city: { type: "string" } } },
          },
        },
      ],
    });
    const call = answer.choices[0]?.message.tool_calls?.[0];
    expect(call?.type === "function" && call.function.name).toBe("get_weather");
    expect(answer.choices[0]?.finish_reason).toBe("tool_calls");
  });

  it("chat completions: a JSON schema answer parses", async () => {
    const answer = await client.chat.completions.create({
      model: CHAT_MODEL,
      messages: [{ role: "user", content: "give me a city" }],
      response_format: {
        type: "json_schema",
        json_schema: {
          name: "city",
          schema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
        },
      },
    });
    expect(JSON.parse(answer.choices[0]?.message.content ?? "")).toHaveProperty("name");
  });

  it("chat completions on a local-model server (Ollama)", async () => {
    const answer = await client.chat.completions.create({
      model: LOCAL_MODEL,
      messages: [{ role: "user", content: "ciao" }],
    });
    expect(answer.choices[0]?.message.content).toBe("echo: ciao");
  });

  it("completions: text, and a stream in chat-chunk shape", async () => {
    const answer = await client.completions.create({ model: CHAT_MODEL, prompt: withCanary("once upon") });
    expect(answer.choices[0]?.text).toContain("once upon");
    const stream = await client.completions.create({ model: CHAT_MODEL, prompt: "a time", stream: true });
    let text = "";
    for await (const chunk of stream as AsyncIterable<unknown>) {
      const delta = (chunk as { choices: Array<{ delta?: { content?: string } }> }).choices[0]?.delta
        ?.content;
      text += delta ?? "";
    }
    expect(text).toContain("a time");
  });

  it("responses: create parses, with usage", async () => {
    const response = await client.responses.create({
      model: CHAT_MODEL,
      input: withCanary("respond please"),
    });
    expect(response.status).toBe("completed");
    expect(response.output_text).toBe(`echo: ${withCanary("respond please")}`);
    expect(response.usage?.total_tokens).toBeGreaterThan(0);
  });

  it("embeddings: 1024 dimensions; float and base64 decode to the same vectors", async () => {
    const floats = await client.embeddings.create({
      model: "bge-m3",
      input: [withCanary("alpha"), "beta"],
      encoding_format: "float",
    });
    const base64 = await client.embeddings.create({ model: "anything", input: ["alpha", "beta"] });
    expect(floats.data).toHaveLength(2);
    expect(floats.data[0]?.embedding).toHaveLength(1024);
    expect(base64.data[1]?.embedding).toEqual(floats.data[1]?.embedding);
    expect(floats.model).toBe("bge-m3");
  });

  it("models: the catalogue", async () => {
    const ids = (await client.models.list()).data.map((m) => m.id);
    expect(ids).toEqual([CHAT_MODEL, LOCAL_MODEL, "bge-m3", "bge-reranker-v2-m3"]);
  });

  it("rerank over TEI answers sorted results", async () => {
    const response = await s.t.fetch("/v1/rerank", {
      method: "POST",
      headers: { authorization: `Bearer ${client.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({
        query: withCanary("red apple"),
        documents: ["a blue car", "a red apple", "apple pie"],
      }),
    });
    const body = (await response.json()) as { results: Array<{ index: number; relevance_score: number }> };
    expect(body.results[0]?.index).toBe(1);
  });

  it("every call above left one usage record", async () => {
    const records = await usageOf(s.t, keyId, 11);
    expect(records.length).toBeGreaterThanOrEqual(11);
    expect(new Set(records.map((r) => r.request_id)).size).toBe(records.length);
  });

  const errors: Array<[string, () => Promise<unknown>, abstract new (...args: never[]) => unknown]> = [
    [
      "400 BadRequestError (refused parameter)",
      () =>
        client.chat.completions.create({
          model: CHAT_MODEL,
          messages: [{ role: "user", content: "x" }],
          store: true,
        }),
      OpenAI.BadRequestError,
    ],
    [
      "401 AuthenticationError",
      () => new OpenAI({ apiKey: "sk-wrong", baseURL: `${s.t.url}/v1`, maxRetries: 0 }).models.list(),
      OpenAI.AuthenticationError,
    ],
    [
      "404 NotFoundError (model_not_found)",
      () => client.chat.completions.create({ model: "nope", messages: [{ role: "user", content: "x" }] }),
      OpenAI.NotFoundError,
    ],
    [
      "422 UnprocessableEntityError (max_tokens out of range)",
      () =>
        client.chat.completions.create({
          model: CHAT_MODEL,
          messages: [{ role: "user", content: "x" }],
          max_tokens: 9000,
        }),
      OpenAI.UnprocessableEntityError,
    ],
  ];
  for (const [title, call, kind] of errors) {
    it(`the SDK raises ${title}`, async () => {
      await expect(call()).rejects.toBeInstanceOf(kind);
    });
  }

  it("the SDK raises RateLimitError (429) and InternalServerError for 503 zone_unavailable", async () => {
    const limited = await s.t.newKey();
    const tight = new OpenAI({ apiKey: limited.key, baseURL: `${s.t.url}/v1`, maxRetries: 0 });
    const calls = Array.from({ length: 61 }, () =>
      tight.chat.completions
        .create({ model: CHAT_MODEL, messages: [{ role: "user", content: "x" }] })
        .catch((e) => e),
    );
    const results = await Promise.all(calls);
    expect(results.some((r) => r instanceof OpenAI.RateLimitError)).toBe(true);

    await s.ti1.setMode("refuse");
    await s.ti2.setMode("refuse");
    const tiOnly = await s.t.newKey({ key: { zones: ["ch-ti"] } });
    const zoned = new OpenAI({ apiKey: tiOnly.key, baseURL: `${s.t.url}/v1`, maxRetries: 0 });
    const error = await zoned.chat.completions
      .create({ model: CHAT_MODEL, messages: [{ role: "user", content: "x" }] })
      .catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect(error.status).toBe(503);
    expect(error.type).toBe("zone_unavailable");
    await s.ti1.setMode("normal");
    await s.ti2.setMode("normal");
  });
});
