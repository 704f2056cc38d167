import { describe, expect, it } from "vitest";
import {
  fromOllamaChat,
  fromOllamaChatStream,
  ollamaChatRequest,
  ollamaGenerateRequest,
} from "../../../src/engines/adapters/ollama-transforms.ts";
import type { ChatCall } from "../../../src/engines/types.ts";

const PNG = "iVBORw0KGgo=";

async function* lines(...items: unknown[]): AsyncGenerator<unknown> {
  for (const item of items) yield item;
}

async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
}

describe("ollama transforms: requests", () => {
  it("turns messages, sampling params, json_schema and tools into the /api/chat body", () => {
    const schema = { type: "object", properties: { a: { type: "string" } } };
    const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }];
    const call: ChatCall = {
      model: "gemma3.8-4b",
      messages: [
        { role: "system", content: "be brief" },
        {
          role: "user",
          content: [
            { type: "text", text: "what is" },
            { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
            { type: "text", text: "this?" },
          ],
        },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "call_1",
              type: "function",
              function: { name: "get_weather", arguments: '{"location":"Bern"}' },
            },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: "sunny" },
      ],
      params: {
        temperature: 0.3,
        top_p: 0.8,
        seed: 4,
        max_tokens: 99,
        stop: "END",
        presence_penalty: 0.1,
        frequency_penalty: 0.2,
        tool_choice: "auto",
        response_format: { type: "json_schema", json_schema: { name: "x", schema } },
        tools,
      },
    };
    expect(ollamaChatRequest(call, true)).toEqual({
      model: "gemma3.8-4b",
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "what is\nthis?", images: [PNG] },
        {
          role: "assistant",
          content: "",
          tool_calls: [{ function: { name: "get_weather", arguments: { location: "Bern" } } }],
        },
        { role: "tool", content: "sunny", tool_name: "get_weather" },
      ],
      stream: true,
      options: {
        temperature: 0.3,
        top_p: 0.8,
        seed: 4,
        presence_penalty: 0.1,
        frequency_penalty: 0.2,
        num_predict: 99,
        stop: ["END"],
      },
      format: schema,
      tools,
    });
  });

  it("uses format json for json_object, and raw /api/generate for completions", () => {
    expect(
      ollamaGenerateRequest(
        { model: "m", prompt: "Once", params: { response_format: { type: "json_object" }, max_tokens: 5 } },
        false,
      ),
    ).toEqual({
      model: "m",
      prompt: "Once",
      raw: true,
      stream: false,
      options: { num_predict: 5 },
      format: "json",
    });
    expect(ollamaChatRequest({ model: "m", messages: [], params: {} }, false)).toEqual({
      model: "m",
      messages: [],
      stream: false,
    });
  });

  it("refuses image addresses that are not data URIs (the service fetches them first)", () => {
    const call: ChatCall = {
      model: "m",
      messages: [
        { role: "user", content: [{ type: "image_url", image_url: { url: "https://example.com/a.png" } }] },
      ],
      params: {},
    };
    expect(() => ollamaChatRequest(call, false)).toThrow(TypeError);
  });
});

describe("ollama transforms: answers", () => {
  const call: ChatCall = { model: "ours", messages: [{ role: "user", content: "12345678" }], params: {} };

  it("maps an answer with tool calls: generated ids, JSON-string arguments, finish_reason tool_calls, usage from counts", () => {
    const answer = fromOllamaChat(
      {
        model: "upstream",
        created_at: "2026-03-01T10:00:00.123Z",
        message: {
          role: "assistant",
          content: "",
          tool_calls: [{ function: { name: "f", arguments: { a: 1 } } }],
        },
        done: true,
        done_reason: "stop",
        prompt_eval_count: 11,
        eval_count: 7,
      },
      call,
    );
    expect(answer).toEqual({
      id: expect.stringMatching(/^chatcmpl-/),
      object: "chat.completion",
      created: Math.floor(Date.parse("2026-03-01T10:00:00.123Z") / 1000),
      model: "ours",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: expect.stringMatching(/^call_/),
                type: "function",
                function: { name: "f", arguments: '{"a":1}' },
              },
            ],
          },
          finish_reason: "tool_calls",
          logprobs: null,
        },
      ],
      usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
    });
  });

  it("maps done_reason length and estimates counts Ollama left out (cached prompts)", () => {
    const answer = fromOllamaChat(
      { message: { role: "assistant", content: "abcd" }, done: true, done_reason: "length", eval_count: 1 },
      call,
    );
    expect(answer.choices[0]?.finish_reason).toBe("length");
    expect(answer.usage).toEqual({ prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 });
  });

  it("streams: role first, content deltas, finish on done, usage last; an error line or a missing done fails", async () => {
    const chunks = await collect(
      fromOllamaChatStream(
        lines(
          { message: { role: "assistant", content: "Hal" }, done: false },
          { message: { role: "assistant", content: "" }, done: false },
          { message: { role: "assistant", content: "lo" }, done: false },
          {
            message: { role: "assistant", content: "" },
            done: true,
            done_reason: "stop",
            prompt_eval_count: 3,
            eval_count: 2,
          },
        ),
        call,
      ),
    );
    expect(chunks.map((c) => c.choices)).toEqual([
      [{ index: 0, delta: { role: "assistant", content: "Hal" }, finish_reason: null }],
      [{ index: 0, delta: { content: "lo" }, finish_reason: null }],
      [{ index: 0, delta: {}, finish_reason: "stop" }],
      [],
    ]);
    expect(chunks.at(-1)?.usage).toEqual({ prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 });
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    const failed = await collect(fromOllamaChatStream(lines({ error: "model crashed" }), call)).catch(
      (e: unknown) => e,
    );
    expect(failed).toMatchObject({ kind: "status", status: 500 });
    const early = await collect(
      fromOllamaChatStream(lines({ message: { content: "x" }, done: false }), call),
    ).catch((e: unknown) => e);
    expect(early).toMatchObject({ kind: "protocol" });
  });
});
