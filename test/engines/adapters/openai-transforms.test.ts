import { describe, expect, it } from "vitest";
import {
  chatRequest,
  completionRequest,
  fromEmbeddings,
  toChatChunks,
  toChatCompletion,
} from "../../../src/engines/adapters/openai-transforms.ts";
import type { ChatCall } from "../../../src/engines/types.ts";
import { UpstreamError } from "../../../src/engines/types.ts";
import { base64Vector } from "../../fakes/index.ts";

const call: ChatCall = {
  model: "ours",
  messages: [{ role: "user", content: "12345678" }],
  params: { temperature: 1 },
};

async function* events(...items: unknown[]): AsyncGenerator<unknown> {
  for (const item of items) yield item;
}

async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
}

const chunk = (delta: unknown, finish: string | null = null, extra: object = {}) => ({
  id: "chatcmpl-up",
  object: "chat.completion.chunk",
  created: 1_700_000_000,
  model: "upstream-name",
  choices: [{ index: 0, delta, finish_reason: finish }],
  ...extra,
});

describe("openai transforms: requests", () => {
  it("chat requests carry the params unchanged; streams always ask for usage", () => {
    expect(
      chatRequest({ ...call, params: { temperature: 1, stream_options: { include_usage: false } } }, true),
    ).toEqual({
      temperature: 1,
      model: "ours",
      messages: call.messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(chatRequest({ ...call, params: { stream_options: { include_usage: true } } }, false)).toEqual({
      model: "ours",
      messages: call.messages,
      stream: false,
    });
  });

  it("completion requests drop chat-only params and turn chat logprobs into the legacy count", () => {
    const params = {
      tools: [],
      tool_choice: "auto",
      parallel_tool_calls: true,
      logprobs: true,
      top_logprobs: 3,
      seed: 1,
    };
    expect(completionRequest({ model: "ours", prompt: "p", params }, false)).toEqual({
      seed: 1,
      logprobs: 3,
      model: "ours",
      prompt: "p",
      stream: false,
    });
    expect(
      completionRequest({ model: "ours", prompt: "p", params: { logprobs: false } }, false),
    ).not.toHaveProperty("logprobs");
  });
});

describe("openai transforms: answers", () => {
  it("normalises a vLLM answer: our model id, no server extras, empty tool_calls dropped", () => {
    const answer = toChatCompletion(
      {
        id: "chatcmpl-up",
        object: "chat.completion",
        created: 1_700_000_000,
        model: "upstream-name",
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: "hi", reasoning_content: null, tool_calls: [] },
            logprobs: null,
            finish_reason: "stop",
            stop_reason: null,
          },
        ],
        usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6, prompt_tokens_details: null },
        prompt_logprobs: null,
        kv_transfer_params: null,
      },
      call,
    );
    expect(answer).toEqual({
      id: "chatcmpl-up",
      object: "chat.completion",
      created: 1_700_000_000,
      model: "ours",
      choices: [
        { index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop", logprobs: null },
      ],
      usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
    });
  });

  it("rejects an answer without choices and reports an error object as a status failure", () => {
    expect(() => toChatCompletion({ id: "x" }, call)).toThrow(UpstreamError);
    const thrown = (() => {
      try {
        toChatCompletion(
          { object: "error", message: "model overloaded", type: "ServiceUnavailable", code: 503 },
          call,
        );
      } catch (error) {
        return error;
      }
    })();
    expect(thrown).toBeInstanceOf(UpstreamError);
    expect(thrown).toMatchObject({ kind: "status", status: 503 });
  });

  it("orders embeddings by index and decodes base64 vectors", () => {
    const a = [0.5, -0.25];
    const b = [1, 0];
    const result = fromEmbeddings(
      {
        data: [
          { index: 1, embedding: base64Vector(b) },
          { index: 0, embedding: a },
        ],
        usage: { prompt_tokens: 4 },
      },
      2,
    );
    expect(result).toEqual({ vectors: [a, b], promptTokens: 4 });
    expect(() => fromEmbeddings({ data: [{ index: 0, embedding: a }] }, 2)).toThrow(UpstreamError);
  });
});

describe("openai transforms: streams", () => {
  it("moves usage sent on the finishing chunk (TGI, llama.cpp) to a last chunk without choices", async () => {
    const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };
    const chunks = await collect(
      toChatChunks(
        events(chunk({ role: "assistant", content: "a" }), chunk({ content: "b" }, "stop", { usage })),
        call,
      ),
    );
    expect(chunks).toEqual([
      {
        id: "chatcmpl-up",
        object: "chat.completion.chunk",
        created: 1_700_000_000,
        model: "ours",
        choices: [{ index: 0, delta: { role: "assistant", content: "a" }, finish_reason: null }],
      },
      {
        id: "chatcmpl-up",
        object: "chat.completion.chunk",
        created: 1_700_000_000,
        model: "ours",
        choices: [{ index: 0, delta: { content: "b" }, finish_reason: "stop" }],
      },
      {
        id: "chatcmpl-up",
        object: "chat.completion.chunk",
        created: 1_700_000_000,
        model: "ours",
        choices: [],
        usage,
      },
    ]);
  });

  it("estimates usage from characters when the stream has none: prompt/4 and generated/4, at least 1", async () => {
    const chunks = await collect(toChatChunks(events(chunk({ content: "x" }), chunk({}, "stop")), call));
    expect(chunks.at(-1)?.usage).toEqual({ prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 });
  });

  it("fails with protocol when the stream ends before any finish_reason, and with status on an error event", async () => {
    const early = await collect(toChatChunks(events(chunk({ content: "x" })), call)).catch((e: unknown) => e);
    expect(early).toMatchObject({ kind: "protocol" });
    const errorEvent = { error: { message: "CUDA out of memory", type: "InternalServerError", code: 500 } };
    const failed = await collect(toChatChunks(events(chunk({ content: "x" }), errorEvent), call)).catch(
      (e: unknown) => e,
    );
    expect(failed).toBeInstanceOf(UpstreamError);
    expect(failed).toMatchObject({ kind: "status", status: 500 });
  });
});
