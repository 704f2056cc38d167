import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ChatCall } from "../../src/engines/types.ts";
import { modelUnavailable } from "../../src/errors/catalogue.ts";
import { startTextApp, type TextApp } from "./text-app.ts";

const MODEL = "gemma3.8-27b";
const HI = [{ role: "user", content: "Hi" }];
const body = (extra: Record<string, unknown> = {}) => ({ model: MODEL, messages: HI, ...extra });
const TOOLS = [
  {
    type: "function",
    function: { name: "get_weather", description: "Weather", parameters: { type: "object" } },
  },
];

describe("POST /v1/chat/completions parameters (spec: Text generation parameters)", () => {
  let a: TextApp;
  beforeAll(async () => {
    a = await startTextApp();
  });
  afterAll(() => a.close());
  beforeEach(() => a.fake.reset());

  const lastCall = () => a.fake.last().input as ChatCall;

  // Honoured: each row sends parameters and checks what reached the service.
  const honoured: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    ["honoured: temperature", { temperature: 0.7 }, { temperature: 0.7 }],
    [
      "honoured: temperature at its bounds 0 and 2",
      { temperature: 2, top_p: 0 },
      { temperature: 2, top_p: 0 },
    ],
    ["honoured: top_p", { top_p: 0.9 }, { top_p: 0.9 }],
    ["honoured: max_tokens up to 8192", { max_tokens: 8192 }, { max_tokens: 8192 }],
    [
      "honoured: max_completion_tokens is normalised to max_tokens",
      { max_completion_tokens: 200 },
      { max_tokens: 200 },
    ],
    [
      "honoured: max_completion_tokens wins over max_tokens when both are sent",
      { max_tokens: 50, max_completion_tokens: 60 },
      { max_tokens: 60 },
    ],
    ["honoured: stop as a string", { stop: "END" }, { stop: "END" }],
    ["honoured: stop as a list", { stop: ["a", "b"] }, { stop: ["a", "b"] }],
    ["honoured: n from 1 to 8", { n: 8 }, { n: 8 }],
    ["honoured: seed", { seed: 42 }, { seed: 42 }],
    [
      "honoured: presence_penalty and frequency_penalty",
      { presence_penalty: 1.5, frequency_penalty: -2 },
      { presence_penalty: 1.5, frequency_penalty: -2 },
    ],
    ["honoured: logit_bias", { logit_bias: { "50256": -100 } }, { logit_bias: { "50256": -100 } }],
    [
      "honoured: logprobs and top_logprobs",
      { logprobs: true, top_logprobs: 5 },
      { logprobs: true, top_logprobs: 5 },
    ],
    [
      "honoured: tools, tool_choice and parallel_tool_calls",
      { tools: TOOLS, tool_choice: "auto", parallel_tool_calls: false },
      { tools: TOOLS, tool_choice: "auto", parallel_tool_calls: false },
    ],
    [
      "honoured: tool_choice naming one of the tools",
      { tools: TOOLS, tool_choice: { type: "function", function: { name: "get_weather" } } },
      { tools: TOOLS, tool_choice: { type: "function", function: { name: "get_weather" } } },
    ],
    [
      "honoured: response_format json_object",
      { response_format: { type: "json_object" } },
      { response_format: { type: "json_object" } },
    ],
    [
      "honoured: response_format json_schema",
      {
        response_format: {
          type: "json_schema",
          json_schema: { name: "answer", schema: { type: "object" }, strict: true },
        },
      },
      {
        response_format: {
          type: "json_schema",
          json_schema: { name: "answer", schema: { type: "object" }, strict: true },
        },
      },
    ],
    [
      "honoured: response_format text (the OpenAI default)",
      { response_format: { type: "text" } },
      { response_format: { type: "text" } },
    ],
    ["honoured: user", { user: "user-1" }, { user: "user-1" }],
  ];
  for (const [title, extra, expected] of honoured) {
    it(title, async () => {
      const answer = await a.post("/v1/chat/completions", body(extra));
      expect(answer.status, answer.text).toBe(200);
      expect(lastCall().params).toEqual(expected);
    });
  }

  // Accepted but not passed on: they change nothing upstream.
  const dropped: Array<[string, Record<string, unknown>]> = [
    ["accepted, not passed on: service_tier auto", { service_tier: "auto" }],
    ["accepted, not passed on: service_tier default", { service_tier: "default" }],
    [
      "accepted, not passed on: stream false and stream_options",
      { stream: false, stream_options: { include_usage: true } },
    ],
    [
      "accepted, not passed on: null values read as absent",
      { temperature: null, max_tokens: null, tools: null },
    ],
  ];
  for (const [title, extra] of dropped) {
    it(title, async () => {
      const answer = await a.post("/v1/chat/completions", body(extra));
      expect(answer.status, answer.text).toBe(200);
      expect(lastCall().params).toEqual({});
    });
  }

  it("input: messages with the roles system, user, assistant (tool calls) and tool reach the service", async () => {
    const messages = [
      { role: "system", content: "Be brief." },
      { role: "user", content: [{ type: "text", text: "Weather?" }] },
      {
        role: "assistant",
        content: null,
        refusal: null, // as the SDK returns it: fields beyond the message shape are dropped
        tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "call_1", content: "sunny" },
    ];
    const answer = await a.post("/v1/chat/completions", { model: MODEL, messages, tools: TOOLS });
    expect(answer.status, answer.text).toBe(200);
    expect(lastCall().messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: [{ type: "text", text: "Weather?" }] },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "call_1", content: "sunny" },
    ]);
  });

  it("answers the service's chat.completion with X-Zona naming the zone that served it", async () => {
    a.fake.zone = "zone-b";
    const answer = await a.post("/v1/chat/completions", body());
    expect(answer.status).toBe(200);
    expect(answer.headers.get("x-zona")).toBe("zone-b");
    expect(answer.headers.get("x-request-id")).toMatch(/^req_/);
    expect(answer.body).toMatchObject({
      object: "chat.completion",
      model: MODEL,
      choices: [{ index: 0, message: { role: "assistant", content: "Hello!" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 },
    });
  });

  it("the service gets the request id, the key, the tier of X-Service-Tier and the endpoint", async () => {
    const answer = await a.post("/v1/chat/completions", body(), { headers: { "x-service-tier": "fast" } });
    expect(answer.status).toBe(200);
    const { context } = a.fake.last();
    expect(context.requestId).toBe(answer.headers.get("x-request-id"));
    expect(context.tier).toBe("fast");
    expect(context.endpoint).toBe("chat.completions");
    expect(context.principal.keyId).toEqual(expect.any(String));
    expect(context.signal.aborted).toBe(false);
  });

  it("errors of the service (503 model_unavailable) reach the client as they are", async () => {
    a.fake.failNext = modelUnavailable(MODEL);
    const answer = await a.post("/v1/chat/completions", body());
    expect(answer.status).toBe(503);
    expect(answer.body.error).toMatchObject({ type: "model_unavailable", code: "model_unavailable" });
  });

  // Refused with 400 naming the field.
  const refused: Array<[string, Record<string, unknown>, string, string]> = [
    ["refused 400: any unlisted name (unknown_parameter)", { foo: 1 }, "foo", "unknown_parameter"],
    [
      "refused 400: an OpenAI parameter the spec does not list (reasoning_effort)",
      { reasoning_effort: "low" },
      "reasoning_effort",
      "unknown_parameter",
    ],
    ["refused 400: metadata", { metadata: { a: "b" } }, "metadata", "unsupported_parameter"],
    ["refused 400: store", { store: true }, "store", "unsupported_parameter"],
    ["refused 400: store even when false", { store: false }, "store", "unsupported_parameter"],
    ["refused 400: functions", { functions: [{ name: "f" }] }, "functions", "unsupported_parameter"],
    ["refused 400: function_call", { function_call: "auto" }, "function_call", "unsupported_parameter"],
    ["refused 400: modalities", { modalities: ["text", "audio"] }, "modalities", "unsupported_parameter"],
    ["refused 400: audio", { audio: { voice: "alloy", format: "mp3" } }, "audio", "unsupported_parameter"],
    [
      "refused 400: prediction",
      { prediction: { type: "content", content: "x" } },
      "prediction",
      "unsupported_parameter",
    ],
    [
      "refused 400: web_search_options",
      { web_search_options: {} },
      "web_search_options",
      "unsupported_parameter",
    ],
    ["refused 400: n above 1 with stream: true", { n: 2, stream: true }, "n", "unsupported_value"],
    [
      "refused 400: service_tier other than auto or default",
      { service_tier: "flex" },
      "service_tier",
      "invalid_value",
    ],
    [
      "refused 400: the first unknown name in the client's order is named",
      { zzz: 1, aaa: 2 },
      "zzz",
      "unknown_parameter",
    ],
  ];
  for (const [title, extra, param, code] of refused) {
    it(title, async () => {
      const answer = await a.post("/v1/chat/completions", body(extra));
      expect(answer.status, answer.text).toBe(400);
      expect(answer.body).toEqual({
        error: {
          message: expect.any(String),
          type: "invalid_request_error",
          code,
          param,
          request_id: answer.headers.get("x-request-id"),
        },
      });
      expect(a.fake.received).toEqual([]);
    });
  }

  it("refused 400: an unknown X-Service-Tier header (the limiter)", async () => {
    const answer = await a.post("/v1/chat/completions", body(), { headers: { "x-service-tier": "warp" } });
    expect(answer.status).toBe(400);
    expect(answer.body.error.param).toBe("X-Service-Tier");
  });

  // Out of range, wrong type or missing: 422 in shape 2.
  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ["422: model missing", { model: undefined }, "model"],
    ["422: model not a string", { model: 42 }, "model"],
    ["422: messages missing", { messages: undefined }, "messages"],
    ["422: messages empty", { messages: [] }, "messages"],
    ["422: messages not a list", { messages: "Hi" }, "messages"],
    [
      "422: a role outside system, user, assistant, tool",
      { messages: [{ role: "developer", content: "x" }] },
      "messages.0.role",
    ],
    ["422: a message without content", { messages: [{ role: "user" }] }, "messages.0.content"],
    [
      "422: a tool message without tool_call_id",
      { messages: [{ role: "tool", content: "x" }] },
      "messages.0.tool_call_id",
    ],
    [
      "422: an unknown content part type",
      { messages: [{ role: "user", content: [{ type: "input_audio" }] }] },
      "messages.0.content.0.type",
    ],
    [
      "422: an image part outside a user message",
      {
        messages: [
          {
            role: "system",
            content: [{ type: "image_url", image_url: { url: "https://example.com/a.png" } }],
          },
        ],
      },
      "messages.0.content.0.type",
    ],
    ["422: temperature above 2", { temperature: 2.5 }, "temperature"],
    ["422: temperature below 0", { temperature: -0.1 }, "temperature"],
    ["422: temperature as a string", { temperature: "0.5" }, "temperature"],
    ["422: top_p above 1", { top_p: 1.5 }, "top_p"],
    ["422: max_tokens 0", { max_tokens: 0 }, "max_tokens"],
    ["422: max_tokens above 8192", { max_tokens: 8193 }, "max_tokens"],
    ["422: max_tokens not an integer", { max_tokens: 1.5 }, "max_tokens"],
    ["422: max_completion_tokens above 8192", { max_completion_tokens: 9000 }, "max_completion_tokens"],
    ["422: n 0", { n: 0 }, "n"],
    ["422: n above 8", { n: 9 }, "n"],
    ["422: seed not an integer", { seed: 1.5 }, "seed"],
    ["422: presence_penalty above 2", { presence_penalty: 3 }, "presence_penalty"],
    ["422: frequency_penalty below -2", { frequency_penalty: -3 }, "frequency_penalty"],
    ["422: logit_bias value above 100", { logit_bias: { "1": 101 } }, "logit_bias"],
    ["422: logit_bias keyed by words", { logit_bias: { hello: 1 } }, "logit_bias"],
    ["422: logprobs not a boolean", { logprobs: "yes" }, "logprobs"],
    ["422: top_logprobs above 20", { logprobs: true, top_logprobs: 21 }, "top_logprobs"],
    ["422: top_logprobs without logprobs", { top_logprobs: 2 }, "top_logprobs"],
    ["422: more than 4 stop sequences", { stop: ["a", "b", "c", "d", "e"] }, "stop"],
    ["422: stop not text", { stop: 5 }, "stop"],
    ["422: parallel_tool_calls not a boolean", { parallel_tool_calls: "no" }, "parallel_tool_calls"],
    ["422: a tool that is not a function", { tools: [{ type: "code_interpreter" }] }, "tools.0.type"],
    [
      "422: a tool function without a valid name",
      { tools: [{ type: "function", function: { name: "no spaces" } }] },
      "tools.0.function.name",
    ],
    [
      "422: tool_choice naming no tool",
      { tools: TOOLS, tool_choice: { type: "function", function: { name: "other" } } },
      "tool_choice",
    ],
    ["422: tool_choice required without tools", { tool_choice: "required" }, "tool_choice"],
    ["422: tool_choice of an unknown mode", { tool_choice: "sometimes" }, "tool_choice"],
    ["422: response_format of an unknown type", { response_format: { type: "xml" } }, "response_format"],
    [
      "422: response_format json_schema without a name",
      { response_format: { type: "json_schema", json_schema: { schema: {} } } },
      "response_format.json_schema.name",
    ],
    ["422: user not a string", { user: 5 }, "user"],
    ["422: stream not a boolean", { stream: "yes" }, "stream"],
    ["422: stream_options not an object", { stream: true, stream_options: true }, "stream_options"],
    [
      "422: stream_options.include_usage not a boolean",
      { stream: true, stream_options: { include_usage: "yes" } },
      "stream_options.include_usage",
    ],
  ];
  for (const [title, extra, param] of invalid) {
    it(title, async () => {
      const answer = await a.post("/v1/chat/completions", body(extra));
      expect(answer.status, answer.text).toBe(422);
      expect(answer.body).toEqual({
        error: {
          message: expect.any(String),
          type: "invalid_request_error",
          code: "invalid_value",
          param,
          request_id: answer.headers.get("x-request-id"),
        },
        message: answer.body.error.message,
        errors: { [param]: [expect.any(String)] },
      });
      expect(a.fake.received).toEqual([]);
    });
  }

  it("422 shape 2 lists every field at fault; param and message name the first", async () => {
    const answer = await a.post("/v1/chat/completions", { temperature: 9, n: 0 });
    expect(answer.status).toBe(422);
    expect(Object.keys(answer.body.errors)).toEqual(["model", "messages", "temperature", "n"]);
    expect(answer.body.error.param).toBe("model");
    expect(answer.body.message).toBe("The model field is required. (and 3 more errors)");
  });

  // Bodies that are not JSON: read as a form or as empty, they give 422, never 400.
  const notJson: Array<[string, string, string]> = [
    ["422 for a body that is not valid JSON", "application/json", '{"model": "gemma3.8-27b", "messages": ['],
    ["422 for a JSON body sent as text/plain (read as empty)", "text/plain", JSON.stringify(body())],
    [
      "422 for a JSON body sent as a form: its odd field names are not a 400",
      "application/x-www-form-urlencoded",
      JSON.stringify(body()),
    ],
    [
      "422 for a form with the right names (messages cannot be a list of objects)",
      "application/x-www-form-urlencoded",
      "model=gemma3.8-27b&messages=Hi&foo=1",
    ],
    ["422 for a JSON array body", "application/json", "[1, 2]"],
    ["422 for an empty body", "application/json", ""],
  ];
  for (const [title, contentType, raw] of notJson) {
    it(title, async () => {
      const answer = await a.post("/v1/chat/completions", raw, {
        raw: true,
        headers: { "content-type": contentType },
      });
      expect(answer.status, answer.text).toBe(422);
      expect(answer.body.error).toMatchObject({ type: "invalid_request_error", code: "invalid_value" });
      expect(answer.body.errors.messages).toBeDefined();
    });
  }

  // The order of checks: what OpenAI would report first.
  const order: Array<[string, Record<string, unknown>, number, string]> = [
    ["order: an unknown name (400) before out-of-range values (422)", { foo: 1, temperature: 9 }, 400, "foo"],
    ["order: an unknown name (400) before a missing model (422)", { model: undefined, foo: 1 }, 400, "foo"],
    [
      "order: out-of-range values (422) before an unknown model (404)",
      { model: "nope", temperature: 9 },
      422,
      "temperature",
    ],
    [
      "order: out-of-range values (422) before n above 1 with stream (400)",
      { n: 2, stream: true, temperature: 9 },
      422,
      "temperature",
    ],
    [
      "order: n above 1 with stream (400) before an unknown model (404)",
      { model: "nope", n: 2, stream: true },
      400,
      "n",
    ],
    [
      "order: an unknown model (404) before model-specific refusals",
      { model: "nope", logprobs: true },
      404,
      "model",
    ],
  ];
  for (const [title, extra, status, param] of order) {
    it(title, async () => {
      const answer = await a.post("/v1/chat/completions", body(extra));
      expect(answer.status, answer.text).toBe(status);
      expect(answer.body.error.param).toBe(param);
    });
  }

  it("404 model_not_found for a model not in the catalogue", async () => {
    const answer = await a.post("/v1/chat/completions", body({ model: "gpt-4o" }));
    expect(answer.status).toBe(404);
    expect(answer.body.error).toMatchObject({
      type: "model_not_found",
      code: "model_not_found",
      param: "model",
    });
    expect(answer.body.error.message).toContain("gpt-4o");
  });

  for (const model of ["bge-m3", "tts-1"]) {
    it(`400 naming model for a catalogue model that is not a chat model: ${model}`, async () => {
      const answer = await a.post("/v1/chat/completions", body({ model }));
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({ type: "invalid_request_error", param: "model" });
    });
  }

  // Local-model-server models: more refusals, tool_choice dropped.
  const local: Array<[string, Record<string, unknown>, string]> = [
    ["local-model server: n above 1 refused with 400", { n: 2 }, "n"],
    ["local-model server: logprobs refused with 400", { logprobs: true }, "logprobs"],
    [
      "local-model server: top_logprobs refused with 400",
      { top_logprobs: 2, logprobs: true },
      "top_logprobs",
    ],
    ["local-model server: logit_bias refused with 400", { logit_bias: { "1": 5 } }, "logit_bias"],
    [
      "local-model server: parallel_tool_calls refused with 400",
      { tools: TOOLS, parallel_tool_calls: true },
      "parallel_tool_calls",
    ],
  ];
  for (const [title, extra, param] of local) {
    it(title, async () => {
      const answer = await a.post("/v1/chat/completions", body({ model: "local-8b", ...extra }));
      expect(answer.status, answer.text).toBe(400);
      expect(answer.body.error).toMatchObject({
        type: "invalid_request_error",
        param,
        code: expect.stringMatching(/^unsupported_/),
      });
      expect(a.fake.received).toEqual([]);
    });
  }

  it("local-model server: tool_choice is accepted and dropped, tools stay", async () => {
    const answer = await a.post(
      "/v1/chat/completions",
      body({ model: "local-8b", tools: TOOLS, tool_choice: "required" }),
    );
    expect(answer.status, answer.text).toBe(200);
    expect(lastCall().params).toEqual({ tools: TOOLS });
  });

  it("local-model server: n of 1 and the other honoured parameters pass", async () => {
    const answer = await a.post(
      "/v1/chat/completions",
      body({ model: "local-8b", n: 1, temperature: 0.2, max_tokens: 10 }),
    );
    expect(answer.status, answer.text).toBe(200);
    expect(lastCall().params).toEqual({ n: 1, temperature: 0.2, max_tokens: 10 });
  });

  it("accepted, no effect: logprobs and top_logprobs with stream: true are dropped", async () => {
    const answer = await a.post(
      "/v1/chat/completions",
      body({ stream: true, logprobs: true, top_logprobs: 3, seed: 1 }),
    );
    expect(answer.status).toBe(200);
    expect(a.fake.last().method).toBe("chatStream");
    expect(lastCall().params).toEqual({ seed: 1 });
  });

  it("accepted, no effect: logprobs with stream: true on a local-model-server model (dropped before the local refusals)", async () => {
    const answer = await a.post(
      "/v1/chat/completions",
      body({ model: "local-8b", stream: true, logprobs: true }),
    );
    expect(answer.status).toBe(200);
    expect(lastCall().params).toEqual({});
  });
});
