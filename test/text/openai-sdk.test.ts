import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ChatCall } from "../../src/engines/types.ts";
import { modelUnavailable } from "../../src/errors/catalogue.ts";
import { vectorOf } from "./fake-text.ts";
import { startTextApp, TEXT_MODELS, type TextApp } from "./text-app.ts";

const MODEL = "gemma3.8-27b";
const HI = [{ role: "user" as const, content: "Hi" }];

describe("round trips through the official openai npm package", () => {
  let a: TextApp;
  let client: OpenAI;
  beforeAll(async () => {
    a = await startTextApp();
    client = new OpenAI({ apiKey: a.key, baseURL: `${a.t.url}/v1`, maxRetries: 0 });
  });
  afterAll(() => a.close());
  beforeEach(() => a.fake.reset());

  it("chat: a plain answer, with X-Zona on the response", async () => {
    a.fake.zone = "zone-sdk";
    const { data, response } = await client.chat.completions
      .create({ model: MODEL, messages: HI, max_completion_tokens: 50 })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe("Hello!");
    expect(data.usage?.total_tokens).toBe(14);
    expect(response.headers.get("x-zona")).toBe("zone-sdk");
    expect((a.fake.last().input as ChatCall).params).toEqual({ max_tokens: 50 });
  });

  it("chat: tools and a JSON schema pass through", async () => {
    await client.chat.completions.create({
      model: MODEL,
      messages: HI,
      tools: [
        { type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } },
      ],
      tool_choice: { type: "function", function: { name: "lookup" } },
      response_format: {
        type: "json_schema",
        json_schema: { name: "out", schema: { type: "object" }, strict: true },
      },
    });
    expect((a.fake.last().input as ChatCall).params).toMatchObject({
      tools: [{ type: "function", function: { name: "lookup" } }],
      tool_choice: { type: "function", function: { name: "lookup" } },
      response_format: { type: "json_schema", json_schema: { name: "out" } },
    });
  });

  it("chat: streaming with include_usage gives the text and a last chunk with usage", async () => {
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: HI,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe("Hello!");
    expect(usage).toEqual({ prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 });
  });

  it("chat: a stream that fails after it started raises an APIError in the loop", async () => {
    a.fake.streamMode = { kind: "fail-after", chunks: 1 };
    const stream = await client.chat.completions.create({ model: MODEL, messages: HI, stream: true });
    let text = "";
    const run = async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    };
    await expect(run()).rejects.toBeInstanceOf(OpenAI.APIError);
    expect(text).toBe("Hel");
  });

  it("completions: a plain answer and a stream", async () => {
    const completion = await client.completions.create({ model: MODEL, prompt: "Say hi", max_tokens: 5 });
    expect(completion.choices[0]?.text).toBe("Hello!");
    const stream = await client.completions.create({ model: MODEL, prompt: "Say hi", stream: true });
    let text = "";
    // The spec's stream chunks have the chat shape: the text is in delta.content.
    for await (const chunk of stream as AsyncIterable<unknown>) {
      const choice = (chunk as OpenAI.ChatCompletionChunk).choices[0];
      text += choice?.delta.content ?? "";
    }
    expect(text).toBe("Hello!");
  });

  it("spec POST /v1/completions, stream: true: the SDK's completions stream reads the answer from each choice's text, as the chat shape's delta.content holds it", async () => {
    const stream = await client.completions.create({ model: MODEL, prompt: "Say hi", stream: true });
    let text = "";
    let content = "";
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      text += choice?.text ?? "";
      content += (choice as unknown as OpenAI.ChatCompletionChunk.Choice | undefined)?.delta?.content ?? "";
      expect(chunk.object).toBe("chat.completion.chunk");
    }
    expect(text).toBe("Hello!");
    expect(content).toBe(text);
  });

  it("responses: create parses, with output_text, status and usage", async () => {
    const response = await client.responses.create({
      model: MODEL,
      input: "Hi",
      instructions: "Be brief.",
      max_output_tokens: 64,
      store: false,
    });
    expect(response.object).toBe("response");
    expect(response.status).toBe("completed");
    expect(response.output_text).toBe("Hello!");
    expect(response.usage?.total_tokens).toBe(14);
  });

  it("responses: an answer cut at max_output_tokens is incomplete", async () => {
    a.fake.nextChat = { finish_reason: "length" };
    const response = await client.responses.create({ model: MODEL, input: "Hi", max_output_tokens: 16 });
    expect(response.status).toBe("incomplete");
    expect(response.incomplete_details?.reason).toBe("max_output_tokens");
  });

  it("embeddings: float, and the SDK's default base64, decode to the same vectors", async () => {
    const input = ["alpha", "beta"];
    const floats = await client.embeddings.create({ model: "bge-m3", input, encoding_format: "float" });
    // Without encoding_format the SDK asks for base64 and decodes it itself.
    const decoded = await client.embeddings.create({ model: "bge-m3", input });
    expect(floats.data.map((item) => item.embedding)).toEqual(input.map(vectorOf));
    expect(decoded.data.map((item) => item.embedding)).toEqual(floats.data.map((item) => item.embedding));
    expect(a.fake.received.at(-1)?.input).toEqual(input);
    const explicit = await client.embeddings.create({ model: "bge-m3", input, encoding_format: "base64" });
    const bytes = Buffer.from(explicit.data[0]?.embedding as unknown as string, "base64");
    expect(Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4))).toEqual(
      vectorOf("alpha"),
    );
    expect(floats.model).toBe("bge-m3");
  });

  // The SDK raises the error class of the status, with the spec's type, code and param.
  // biome-ignore lint/suspicious/noExplicitAny: the SDK's error classes differ in their status type parameter.
  type ErrorClass = abstract new (...args: any[]) => InstanceType<typeof OpenAI.APIError>;
  const errors: Array<[string, () => Promise<unknown>, ErrorClass, number, Record<string, unknown>]> = [
    [
      "400 BadRequestError for a refused parameter (store)",
      () => client.chat.completions.create({ model: MODEL, messages: HI, store: true }),
      OpenAI.BadRequestError,
      400,
      { param: "store", type: "invalid_request_error" },
    ],
    [
      "400 BadRequestError for an unknown parameter",
      () => client.chat.completions.create({ model: MODEL, messages: HI, reasoning_effort: "low" }),
      OpenAI.BadRequestError,
      400,
      { param: "reasoning_effort", code: "unknown_parameter" },
    ],
    [
      "400 BadRequestError for embeddings over 32 texts",
      () => client.embeddings.create({ model: "bge-m3", input: Array.from({ length: 33 }, () => "t") }),
      OpenAI.BadRequestError,
      400,
      { param: "input" },
    ],
    [
      "404 NotFoundError for a model not in the catalogue",
      () => client.chat.completions.create({ model: "gpt-4o", messages: HI }),
      OpenAI.NotFoundError,
      404,
      { type: "model_not_found" },
    ],
    [
      "422 UnprocessableEntityError for an out-of-range value",
      () => client.chat.completions.create({ model: MODEL, messages: HI, temperature: 5 }),
      OpenAI.UnprocessableEntityError,
      422,
      { param: "temperature", code: "invalid_value" },
    ],
    [
      "501 InternalServerError (an APIError with status 501) for a streamed response",
      () => client.responses.create({ model: MODEL, input: "Hi", stream: true }),
      OpenAI.InternalServerError,
      501,
      { code: "stream_not_implemented" },
    ],
    [
      "503 InternalServerError for model_unavailable from the service",
      async () => {
        a.fake.failNext = modelUnavailable(MODEL);
        return client.chat.completions.create({ model: MODEL, messages: HI });
      },
      OpenAI.InternalServerError,
      503,
      { type: "model_unavailable" },
    ],
  ];
  for (const [title, call, errorClass, status, fields] of errors) {
    it(`the SDK raises ${title}`, async () => {
      const error = await call().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(errorClass);
      expect(error).toMatchObject({ status, ...fields });
      expect((error as InstanceType<typeof OpenAI.APIError>).requestID).toMatch(/^req_/);
    });
  }
});

describe("the openai package and rerank where turned off", () => {
  let a: TextApp;
  beforeAll(async () => {
    a = await startTextApp(TEXT_MODELS.filter((model) => model.kind !== "rerank"));
  });
  afterAll(() => a.close());

  it("raises an APIError with status 501 and type not_implemented", async () => {
    const client = new OpenAI({ apiKey: a.key, baseURL: `${a.t.url}/v1`, maxRetries: 0 });
    const error = await client
      .post("/rerank", { body: { query: "q", documents: ["d"] } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect(error).toMatchObject({ status: 501, type: "not_implemented" });
  });
});
