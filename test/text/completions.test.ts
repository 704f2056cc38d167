import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { CompletionCall } from "../../src/engines/types.ts";
import { startTextApp, type TextApp } from "./text-app.ts";

const MODEL = "gemma3.8-27b";
const body = (extra: Record<string, unknown> = {}) => ({
  model: MODEL,
  prompt: "Once upon a time",
  ...extra,
});

describe("POST /v1/completions (spec: prompt a string or a list with one string; other parameters as chat)", () => {
  let a: TextApp;
  beforeAll(async () => {
    a = await startTextApp();
  });
  afterAll(() => a.close());
  beforeEach(() => a.fake.reset());

  const lastCall = () => a.fake.last().input as CompletionCall;

  it("answers the text_completion shape with X-Zona", async () => {
    a.fake.zone = "zone-c";
    const answer = await a.post("/v1/completions", body());
    expect(answer.status).toBe(200);
    expect(answer.headers.get("x-zona")).toBe("zone-c");
    expect(answer.body).toEqual({
      id: "cmpl-fake",
      object: "text_completion",
      created: 1_767_225_600,
      model: MODEL,
      choices: [{ index: 0, text: "Hello!", finish_reason: "stop", logprobs: null }],
      usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 },
    });
    expect(a.fake.last().context.endpoint).toBe("completions");
  });

  const prompts: Array<[string, unknown, string]> = [
    ["prompt: a string", "Hello", "Hello"],
    ["prompt: a list with one string", ["Hello"], "Hello"],
    ["prompt: an empty string is passed on", "", ""],
  ];
  for (const [title, prompt, expected] of prompts) {
    it(title, async () => {
      const answer = await a.post("/v1/completions", body({ prompt }));
      expect(answer.status, answer.text).toBe(200);
      expect(lastCall().prompt).toBe(expected);
    });
  }

  const honoured: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    [
      "honoured as chat: temperature and top_p",
      { temperature: 1.2, top_p: 0.5 },
      { temperature: 1.2, top_p: 0.5 },
    ],
    ["honoured as chat: max_tokens", { max_tokens: 16 }, { max_tokens: 16 }],
    [
      "honoured as chat: max_completion_tokens normalised to max_tokens",
      { max_completion_tokens: 32 },
      { max_tokens: 32 },
    ],
    ["honoured as chat: stop, n, seed", { stop: ["\n"], n: 2, seed: 7 }, { stop: ["\n"], n: 2, seed: 7 }],
    [
      "honoured as chat: penalties and logit_bias",
      { presence_penalty: 0.5, frequency_penalty: 0.5, logit_bias: { "42": 1 } },
      { presence_penalty: 0.5, frequency_penalty: 0.5, logit_bias: { "42": 1 } },
    ],
    ["honoured: logprobs as the completions count (0 to 5)", { logprobs: 5 }, { logprobs: 5 }],
    [
      "honoured as chat: user; service_tier auto not passed on",
      { user: "u", service_tier: "auto" },
      { user: "u" },
    ],
  ];
  for (const [title, extra, expected] of honoured) {
    it(title, async () => {
      const answer = await a.post("/v1/completions", body(extra));
      expect(answer.status, answer.text).toBe(200);
      expect(lastCall().params).toEqual(expected);
    });
  }

  const refused: Array<[string, Record<string, unknown>, string, string]> = [
    ["400: a prompt list with more than one string", { prompt: ["a", "b"] }, "prompt", "invalid_value"],
    [
      "400: chat's messages are not a completions parameter",
      { messages: [] },
      "messages",
      "unknown_parameter",
    ],
    ["400: tools are not a completions parameter", { tools: [] }, "tools", "unknown_parameter"],
    ["400: suffix (unlisted)", { suffix: "end" }, "suffix", "unknown_parameter"],
    ["400: echo (unlisted)", { echo: true }, "echo", "unknown_parameter"],
    ["400: best_of (unlisted)", { best_of: 2 }, "best_of", "unknown_parameter"],
    ["400 as chat: store", { store: true }, "store", "unsupported_parameter"],
    ["400 as chat: metadata", { metadata: {} }, "metadata", "unsupported_parameter"],
    ["400 as chat: n above 1 with stream", { n: 2, stream: true }, "n", "unsupported_value"],
    [
      "400 as chat: service_tier other than auto or default",
      { service_tier: "priority" },
      "service_tier",
      "invalid_value",
    ],
  ];
  for (const [title, extra, param, code] of refused) {
    it(title, async () => {
      const answer = await a.post("/v1/completions", body(extra));
      expect(answer.status, answer.text).toBe(400);
      expect(answer.body.error).toMatchObject({ type: "invalid_request_error", param, code });
      expect(a.fake.received).toEqual([]);
    });
  }

  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ["422: prompt missing", { prompt: undefined }, "prompt"],
    ["422: model missing", { model: undefined }, "model"],
    ["422: prompt as token ids", { prompt: [1, 2, 3] }, "prompt"],
    ["422: prompt as lists of token ids", { prompt: [[1, 2]] }, "prompt"],
    ["422: prompt an empty list", { prompt: [] }, "prompt"],
    ["422: prompt a number", { prompt: 5 }, "prompt"],
    ["422 as chat: temperature above 2", { temperature: 3 }, "temperature"],
    ["422 as chat: max_tokens above 8192", { max_tokens: 10_000 }, "max_tokens"],
    ["422 as chat: n above 8", { n: 9 }, "n"],
    ["422: logprobs above 5", { logprobs: 6 }, "logprobs"],
    ["422: logprobs as a boolean (the completions count is a number)", { logprobs: true }, "logprobs"],
  ];
  for (const [title, extra, param] of invalid) {
    it(title, async () => {
      const answer = await a.post("/v1/completions", body(extra));
      expect(answer.status, answer.text).toBe(422);
      expect(answer.body.error).toMatchObject({
        type: "invalid_request_error",
        code: "invalid_value",
        param,
      });
      expect(answer.body.errors[param]).toHaveLength(1);
    });
  }

  it("422 for a form body, whatever its names", async () => {
    const answer = await a.post("/v1/completions", "prompt[]=a&prompt[]=b&weird=1", {
      raw: true,
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(answer.status).toBe(422);
    expect(answer.body.errors.model).toBeDefined();
  });

  it("404 model_not_found for a model not in the catalogue", async () => {
    const answer = await a.post("/v1/completions", body({ model: "davinci-002" }));
    expect(answer.status).toBe(404);
    expect(answer.body.error.type).toBe("model_not_found");
  });

  it("400 naming model for a model that is not a chat model", async () => {
    const answer = await a.post("/v1/completions", body({ model: "bge-m3" }));
    expect(answer.status).toBe(400);
    expect(answer.body.error.param).toBe("model");
  });

  const local: Array<[string, Record<string, unknown>, string]> = [
    ["local-model server: n above 1 refused", { n: 3 }, "n"],
    ["local-model server: logprobs refused", { logprobs: 1 }, "logprobs"],
    ["local-model server: logit_bias refused", { logit_bias: { "1": 1 } }, "logit_bias"],
  ];
  for (const [title, extra, param] of local) {
    it(title, async () => {
      const answer = await a.post("/v1/completions", body({ model: "local-8b", ...extra }));
      expect(answer.status, answer.text).toBe(400);
      expect(answer.body.error.param).toBe(param);
    });
  }

  it("accepted, no effect: logprobs with stream: true is dropped", async () => {
    const answer = await a.post("/v1/completions", body({ stream: true, logprobs: 2 }));
    expect(answer.status).toBe(200);
    expect(a.fake.last().method).toBe("completeStream");
    expect(lastCall().params).toEqual({});
  });
});
