import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ChatCall } from "../../src/engines/types.ts";
import { dataUri, MAGIC, startTextApp, type TextApp } from "./text-app.ts";

const MODEL = "gemma3.8-27b";
const body = (extra: Record<string, unknown> = {}) => ({ model: MODEL, input: "Hi", ...extra });
const TOOL = {
  type: "function",
  name: "get_weather",
  description: "Weather",
  parameters: { type: "object" },
};
const CHAT_TOOL = {
  type: "function",
  function: { name: "get_weather", description: "Weather", parameters: { type: "object" } },
};

describe("POST /v1/responses (spec: honoured subset, stream 501, out of range 400, others ignored)", () => {
  let a: TextApp;
  beforeAll(async () => {
    a = await startTextApp();
  });
  afterAll(() => a.close());
  beforeEach(() => a.fake.reset());

  const lastCall = () => a.fake.last().input as ChatCall;

  it("answers the Responses object: a message item with output_text, usage in input/output tokens, X-Zona", async () => {
    a.fake.zone = "zone-r";
    const answer = await a.post("/v1/responses", body({ instructions: "Be brief.", max_output_tokens: 100 }));
    expect(answer.status, answer.text).toBe(200);
    expect(answer.headers.get("x-zona")).toBe("zone-r");
    expect(answer.body).toMatchObject({
      id: expect.stringMatching(/^resp_/),
      object: "response",
      created_at: 1_767_225_600,
      status: "completed",
      error: null,
      incomplete_details: null,
      instructions: "Be brief.",
      max_output_tokens: 100,
      model: MODEL,
      output: [
        {
          type: "message",
          id: expect.stringMatching(/^msg_/),
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text: "Hello!", annotations: [] }],
        },
      ],
      usage: { input_tokens: 11, output_tokens: 3, total_tokens: 14 },
    });
    expect(a.fake.last().method).toBe("chat");
    expect(a.fake.last().context.endpoint).toBe("responses");
  });

  it("status incomplete with incomplete_details max_output_tokens when the answer was cut at the limit", async () => {
    a.fake.nextChat = { finish_reason: "length" };
    const answer = await a.post("/v1/responses", body({ max_output_tokens: 1 }));
    expect(answer.body.status).toBe("incomplete");
    expect(answer.body.incomplete_details).toEqual({ reason: "max_output_tokens" });
    expect(answer.body.output[0].status).toBe("incomplete");
  });

  it("tool calls of the answer become function_call items", async () => {
    a.fake.nextChat = {
      finish_reason: "tool_calls",
      message: {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_9", type: "function", function: { name: "get_weather", arguments: '{"city":"Bern"}' } },
        ],
      },
    };
    const answer = await a.post("/v1/responses", body({ tools: [TOOL] }));
    expect(answer.body.output).toEqual([
      {
        type: "function_call",
        id: expect.stringMatching(/^fc_/),
        call_id: "call_9",
        name: "get_weather",
        arguments: '{"city":"Bern"}',
        status: "completed",
      },
    ]);
    expect(answer.body.tools).toEqual([TOOL]);
  });

  // Honoured: what the chat call receives.
  const honoured: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    ["honoured: max_output_tokens as max_tokens", { max_output_tokens: 64 }, { max_tokens: 64 }],
    ["honoured: temperature and top_p", { temperature: 0.3, top_p: 0.8 }, { temperature: 0.3, top_p: 0.8 }],
    [
      "honoured: text.format json_object",
      { text: { format: { type: "json_object" } } },
      { response_format: { type: "json_object" } },
    ],
    [
      "honoured: text.format json_schema (flat in Responses, nested in chat)",
      { text: { format: { type: "json_schema", name: "answer", schema: { type: "object" }, strict: true } } },
      {
        response_format: {
          type: "json_schema",
          json_schema: { name: "answer", schema: { type: "object" }, strict: true },
        },
      },
    ],
    [
      "honoured: text.format text is the default and passes nothing",
      { text: { format: { type: "text" } } },
      {},
    ],
    [
      "honoured: function tools and tool_choice auto",
      { tools: [TOOL], tool_choice: "auto" },
      { tools: [CHAT_TOOL], tool_choice: "auto" },
    ],
    [
      "honoured: tool_choice naming a function",
      { tools: [TOOL], tool_choice: { type: "function", name: "get_weather" } },
      { tools: [CHAT_TOOL], tool_choice: { type: "function", function: { name: "get_weather" } } },
    ],
    [
      "ignored: previous_response_id, store, metadata and every other field",
      {
        previous_response_id: "resp_1",
        store: true,
        metadata: { a: "b" },
        parallel_tool_calls: false,
        reasoning: { effort: "low" },
        include: ["reasoning.encrypted_content"],
        truncation: "auto",
        user: "u",
        service_tier: "flex",
        stream: false,
        something_new: 1,
      },
      {},
    ],
  ];
  for (const [title, extra, expected] of honoured) {
    it(title, async () => {
      const answer = await a.post("/v1/responses", body(extra));
      expect(answer.status, answer.text).toBe(200);
      expect(lastCall().params).toEqual(expected);
    });
  }

  it("input: a string is one user message; instructions become a leading system message", async () => {
    await a.post("/v1/responses", body({ instructions: "Be brief." }));
    expect(lastCall().messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hi" },
    ]);
  });

  it("input: a list of messages, with developer as system, parts as text, and function calls as tool turns", async () => {
    const input = [
      { role: "developer", content: "Use tools." },
      { type: "message", role: "user", content: [{ type: "input_text", text: "Weather in Bern?" }] },
      { type: "reasoning", id: "rs_1", summary: [] },
      { type: "function_call", call_id: "call_1", name: "get_weather", arguments: "{}" },
      { type: "function_call_output", call_id: "call_1", output: "sunny" },
      { role: "assistant", content: [{ type: "output_text", text: "It is sunny." }] },
      { role: "user", content: "Thanks" },
    ];
    const answer = await a.post("/v1/responses", body({ input, tools: [TOOL] }));
    expect(answer.status, answer.text).toBe(200);
    expect(lastCall().messages).toEqual([
      { role: "system", content: "Use tools." },
      { role: "user", content: [{ type: "text", text: "Weather in Bern?" }] },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "call_1", content: "sunny" },
      { role: "assistant", content: [{ type: "text", text: "It is sunny." }] },
      { role: "user", content: "Thanks" },
    ]);
  });

  it("input: an input_image on a vision model becomes an image_url part", async () => {
    const url = dataUri(MAGIC.png);
    const input = [{ role: "user", content: [{ type: "input_image", image_url: url, detail: "high" }] }];
    const answer = await a.post("/v1/responses", { model: "vision-27b", input });
    expect(answer.status, answer.text).toBe(200);
    expect(lastCall().messages[0]?.content).toEqual([
      { type: "image_url", image_url: { url, detail: "high" } },
    ]);
  });

  it("501 stream_not_implemented for stream: true", async () => {
    const answer = await a.post("/v1/responses", body({ stream: true }));
    expect(answer.status).toBe(501);
    expect(answer.body.error).toMatchObject({ code: "stream_not_implemented" });
    expect(a.fake.received).toEqual([]);
  });

  // Out of range and invalid values: 400 (not 422) naming the field.
  const refused: Array<[string, Record<string, unknown>, string]> = [
    ["400: model missing", { model: undefined }, "model"],
    ["400: input missing", { input: undefined }, "input"],
    ["400: input neither text nor a list", { input: 5 }, "input"],
    ["400: an empty input list", { input: [] }, "input"],
    ["400: an input item of an unknown type", { input: [{ type: "web_search_call" }] }, "input.0.type"],
    [
      "400: an input message of an unknown role",
      { input: [{ role: "robot", content: "x" }] },
      "input.0.role",
    ],
    [
      "400: an input_file part",
      { input: [{ role: "user", content: [{ type: "input_file", file_id: "f" }] }] },
      "input.0.content.0",
    ],
    ["400: max_output_tokens 0", { max_output_tokens: 0 }, "max_output_tokens"],
    ["400: max_output_tokens above 8192", { max_output_tokens: 9000 }, "max_output_tokens"],
    ["400: temperature above 2", { temperature: 3 }, "temperature"],
    ["400: top_p above 1", { top_p: 1.1 }, "top_p"],
    ["400: a built-in tool (own functions only)", { tools: [{ type: "web_search_preview" }] }, "tools"],
    ["400: a file_search tool", { tools: [TOOL, { type: "file_search", vector_store_ids: [] }] }, "tools"],
    [
      "400: tool_choice naming no tool",
      { tools: [TOOL], tool_choice: { type: "function", name: "nope" } },
      "tool_choice",
    ],
    ["400: tool_choice of a built-in tool", { tool_choice: { type: "web_search_preview" } }, "tool_choice"],
    ["400: text.format of an unknown type", { text: { format: { type: "xml" } } }, "text.format"],
    [
      "400: text.format json_schema without a name",
      { text: { format: { type: "json_schema", schema: {} } } },
      "text.format.name",
    ],
  ];
  for (const [title, extra, param] of refused) {
    it(title, async () => {
      const answer = await a.post("/v1/responses", body(extra));
      expect(answer.status, answer.text).toBe(400);
      expect(answer.body.error).toMatchObject({ type: "invalid_request_error", param });
      expect(answer.body).not.toHaveProperty("errors");
      expect(a.fake.received).toEqual([]);
    });
  }

  it("400 naming the part: an input_image on a model not flagged for images", async () => {
    const input = [{ role: "user", content: [{ type: "input_image", image_url: dataUri(MAGIC.png) }] }];
    const answer = await a.post("/v1/responses", { model: MODEL, input });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({
      code: "image_not_supported",
      param: "input.0.content.0.image_url",
    });
  });

  it("404 model_not_found for a model not in the catalogue", async () => {
    const answer = await a.post("/v1/responses", body({ model: "gpt-5" }));
    expect(answer.status).toBe(404);
    expect(answer.body.error.type).toBe("model_not_found");
  });

  it("400 naming model for a model that is not a chat model", async () => {
    const answer = await a.post("/v1/responses", body({ model: "bge-reranker-v2-m3" }));
    expect(answer.status).toBe(400);
    expect(answer.body.error.param).toBe("model");
  });

  it("local-model server: tool_choice is accepted and dropped", async () => {
    const answer = await a.post(
      "/v1/responses",
      body({ model: "local-8b", tools: [TOOL], tool_choice: "required" }),
    );
    expect(answer.status, answer.text).toBe(200);
    expect(lastCall().params).toEqual({ tools: [CHAT_TOOL] });
  });
});
