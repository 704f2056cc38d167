import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startTextApp, type TextApp } from "./text-app.ts";

const LOCAL = "local-8b";
const OTHER = "gemma3.8-27b";
const HI = [{ role: "user", content: "Hi" }];
const TOOLS = [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }];

// Spec "Text generation parameters": "On models served by a local-model server, also `n` above 1,
// `logprobs`, `top_logprobs`, `logit_bias`, `parallel_tool_calls`" are refused with 400 naming the
// field. The refusal comes before the range and dependency checks, so a field alone, or
// with a value that would be out of range, is still the 400 naming it.
describe("local-model server refusals come before range and dependency checks (spec: Text generation parameters)", () => {
  let a: TextApp;
  beforeAll(async () => {
    a = await startTextApp();
  });
  afterAll(() => a.close());
  beforeEach(() => a.fake.reset());

  const refused: Array<
    [string, "/v1/chat/completions" | "/v1/completions", Record<string, unknown>, string]
  > = [
    [
      "chat: top_logprobs alone (no logprobs) is a 400 naming top_logprobs",
      "/v1/chat/completions",
      { top_logprobs: 2 },
      "top_logprobs",
    ],
    [
      "chat: top_logprobs out of range is a 400 naming top_logprobs",
      "/v1/chat/completions",
      { top_logprobs: 99 },
      "top_logprobs",
    ],
    ["chat: logprobs alone is a 400 naming logprobs", "/v1/chat/completions", { logprobs: true }, "logprobs"],
    [
      "chat: logprobs false is still a refused field",
      "/v1/chat/completions",
      { logprobs: false },
      "logprobs",
    ],
    [
      "chat: logprobs mistyped is a 400 naming logprobs",
      "/v1/chat/completions",
      { logprobs: "yes" },
      "logprobs",
    ],
    ["chat: n above 1 is a 400 naming n", "/v1/chat/completions", { n: 2 }, "n"],
    ["chat: n above its range (50) is a 400 naming n", "/v1/chat/completions", { n: 50 }, "n"],
    [
      "chat: logit_bias is a 400 naming logit_bias",
      "/v1/chat/completions",
      { logit_bias: { "1": 5 } },
      "logit_bias",
    ],
    [
      "chat: logit_bias out of range is a 400 naming logit_bias",
      "/v1/chat/completions",
      { logit_bias: { "1": 500 } },
      "logit_bias",
    ],
    [
      "chat: parallel_tool_calls alone (no tools) is a 400 naming it",
      "/v1/chat/completions",
      { parallel_tool_calls: true },
      "parallel_tool_calls",
    ],
    [
      "chat: parallel_tool_calls mistyped is a 400 naming it",
      "/v1/chat/completions",
      { tools: TOOLS, parallel_tool_calls: "yes" },
      "parallel_tool_calls",
    ],
    [
      "chat: a refused field wins over another field out of range",
      "/v1/chat/completions",
      { temperature: 5, top_logprobs: 3 },
      "top_logprobs",
    ],
    [
      "chat: the first refused field in the body's order is named",
      "/v1/chat/completions",
      { logit_bias: { "1": 1 }, n: 4 },
      "logit_bias",
    ],
    ["completions: n above its range (50) is a 400 naming n", "/v1/completions", { n: 50 }, "n"],
    [
      "completions: logprobs out of range (9) is a 400 naming logprobs",
      "/v1/completions",
      { logprobs: 9 },
      "logprobs",
    ],
    [
      "completions: logit_bias out of range is a 400 naming logit_bias",
      "/v1/completions",
      { logit_bias: { "1": -500 } },
      "logit_bias",
    ],
  ];
  it.each(refused)("%s", async (_title, path, extra, param) => {
    const input = path === "/v1/chat/completions" ? { messages: HI } : { prompt: "Hi" };
    const answer = await a.post(path, { model: LOCAL, ...input, ...extra });
    expect(answer.status, answer.text).toBe(400);
    expect(answer.body.error).toMatchObject({
      type: "invalid_request_error",
      param,
      code: expect.stringMatching(/^unsupported_/),
    });
    expect(answer.body.error.message).toContain(param);
    expect(a.fake.received).toEqual([]);
  });

  // Spec: "A value out of range gives 422" on every other model; nothing changes there.
  const otherModel: Array<[string, Record<string, unknown>, string]> = [
    [
      "other models: top_logprobs without logprobs is a 422 naming top_logprobs",
      { top_logprobs: 2 },
      "top_logprobs",
    ],
    [
      "other models: top_logprobs out of range is a 422",
      { logprobs: true, top_logprobs: 99 },
      "top_logprobs",
    ],
    ["other models: n out of range is a 422", { n: 50 }, "n"],
    ["other models: logit_bias out of range is a 422", { logit_bias: { "1": 500 } }, "logit_bias"],
    [
      "other models: parallel_tool_calls mistyped is a 422",
      { tools: TOOLS, parallel_tool_calls: "yes" },
      "parallel_tool_calls",
    ],
  ];
  it.each(otherModel)("%s", async (_title, extra, field) => {
    const answer = await a.post("/v1/chat/completions", { model: OTHER, messages: HI, ...extra });
    expect(answer.status, answer.text).toBe(422);
    expect(Object.keys(answer.body.errors)).toEqual([field]);
    expect(a.fake.received).toEqual([]);
  });

  it("local-model server: a value out of range of an honoured field is still a 422", async () => {
    const answer = await a.post("/v1/chat/completions", { model: LOCAL, messages: HI, temperature: 5 });
    expect(answer.status, answer.text).toBe(422);
    expect(Object.keys(answer.body.errors)).toEqual(["temperature"]);
  });

  it("accepted, no effect: top_logprobs alone with stream: true on a local-model-server model", async () => {
    const answer = await a.post("/v1/chat/completions", {
      model: LOCAL,
      messages: HI,
      stream: true,
      top_logprobs: 2,
    });
    expect(answer.status, answer.text).toBe(200);
    expect(a.fake.last().method).toBe("chatStream");
  });
});
