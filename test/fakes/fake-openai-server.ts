import {
  base64Vector,
  conversationCharacters,
  fakeEmbedding,
  type Generation,
  type GenerationInput,
  generate,
  lastUserText,
  promptTokens,
  wordOverlap,
} from "./fake-generation.ts";
import {
  type FakeProtocol,
  type FakeReply,
  type FakeRequest,
  FakeServer,
  type FakeSettings,
} from "./fake-server.ts";

type Json = Record<string, unknown>;

const SSE = "text/event-stream";
let serial = 0;

function isJson(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function json(status: number, body: unknown): FakeReply {
  return { type: "json", status, body };
}

// vLLM's error body (recent versions nest it under `error`).
function errorBody(status: number, message: string): unknown {
  const type = status === 404 ? "NotFoundError" : status >= 500 ? "InternalServerError" : "BadRequestError";
  return { error: { message, type, param: null, code: status } };
}

function sse(events: unknown[]): FakeReply {
  const pieces = events.map((event) => `data: ${JSON.stringify(event)}\n\n`);
  pieces.push("data: [DONE]\n\n");
  return { type: "stream", contentType: SSE, pieces };
}

function formatOf(responseFormat: unknown): GenerationInput["format"] {
  if (!isJson(responseFormat)) return "text";
  if (responseFormat.type === "json_object") return "json";
  if (responseFormat.type === "json_schema" && isJson(responseFormat.json_schema)) {
    return { schema: responseFormat.json_schema.schema };
  }
  return "text";
}

function stopsOf(stop: unknown): string[] | undefined {
  if (typeof stop === "string") return [stop];
  return Array.isArray(stop) ? stop.filter((s): s is string => typeof s === "string") : undefined;
}

function numberOf(value: unknown): number | undefined {
  return typeof value === "number" ? value : undefined;
}

function usage(prompt: number, completion: number): Json {
  return {
    prompt_tokens: prompt,
    total_tokens: prompt + completion,
    completion_tokens: completion,
    prompt_tokens_details: null,
  };
}

function now(): number {
  return Math.floor(Date.now() / 1000);
}

function chat(body: Json, settings: FakeSettings): FakeReply {
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0)
    return json(400, errorBody(400, "messages is required"));
  const generation = generate({
    text: lastUserText(messages),
    tools: body.tools,
    format: formatOf(body.response_format),
    maxTokens: numberOf(body.max_tokens) ?? numberOf(body.max_completion_tokens),
    stop: stopsOf(body.stop),
    chunks: settings.chunks,
  });
  const prompt = promptTokens(conversationCharacters(messages));
  const id = `chatcmpl-fake${++serial}`;
  const created = now();
  const model = body.model;
  const toolCalls = generation.toolCall
    ? [
        {
          id: `chatcmpl-tool-fake${serial}`,
          type: "function",
          function: {
            name: generation.toolCall.name,
            arguments: JSON.stringify(generation.toolCall.arguments),
          },
        },
      ]
    : [];
  if (body.stream === true) {
    const base = { id, object: "chat.completion.chunk", created, model };
    const events: unknown[] = [
      {
        ...base,
        choices: [
          { index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null },
        ],
      },
    ];
    for (const piece of generation.pieces) {
      events.push({
        ...base,
        choices: [{ index: 0, delta: { content: piece }, logprobs: null, finish_reason: null }],
      });
    }
    for (const [index, call] of toolCalls.entries()) {
      const start = {
        index,
        id: call.id,
        type: "function",
        function: { name: call.function.name, arguments: "" },
      };
      events.push({
        ...base,
        choices: [{ index: 0, delta: { tool_calls: [start] }, logprobs: null, finish_reason: null }],
      });
      const args = { index, function: { arguments: call.function.arguments } };
      events.push({
        ...base,
        choices: [{ index: 0, delta: { tool_calls: [args] }, logprobs: null, finish_reason: null }],
      });
    }
    events.push({
      ...base,
      choices: [
        { index: 0, delta: {}, logprobs: null, finish_reason: generation.finishReason, stop_reason: null },
      ],
    });
    const options = isJson(body.stream_options) ? body.stream_options : {};
    if (options.include_usage === true && !settings.omitUsage) {
      events.push({ ...base, choices: [], usage: usage(prompt, generation.completionTokens) });
    }
    return sse(events);
  }
  const n = numberOf(body.n) ?? 1;
  const choices = Array.from({ length: n }, (_, index) => ({
    index,
    message: {
      role: "assistant",
      reasoning_content: null,
      content: generation.toolCall ? null : generation.content,
      tool_calls: toolCalls,
    },
    logprobs: null,
    finish_reason: generation.finishReason,
    stop_reason: null,
  }));
  return json(200, {
    id,
    object: "chat.completion",
    created,
    model,
    choices,
    ...(settings.omitUsage ? {} : { usage: usage(prompt, generation.completionTokens * n) }),
    prompt_logprobs: null,
  });
}

function completion(body: Json, settings: FakeSettings): FakeReply {
  const prompt = Array.isArray(body.prompt) && body.prompt.length === 1 ? body.prompt[0] : body.prompt;
  if (typeof prompt !== "string") return json(400, errorBody(400, "prompt must be a string"));
  const generation: Generation = generate({
    text: prompt,
    format: formatOf(body.response_format),
    maxTokens: numberOf(body.max_tokens),
    stop: stopsOf(body.stop),
    chunks: settings.chunks,
  });
  const id = `cmpl-fake${++serial}`;
  const created = now();
  const promptCount = promptTokens(prompt.length);
  const base = { id, object: "text_completion", created, model: body.model };
  if (body.stream === true) {
    const events: unknown[] = generation.pieces.map((text) => ({
      ...base,
      choices: [{ index: 0, text, logprobs: null, finish_reason: null, stop_reason: null }],
    }));
    events.push({
      ...base,
      choices: [
        { index: 0, text: "", logprobs: null, finish_reason: generation.finishReason, stop_reason: null },
      ],
    });
    const options = isJson(body.stream_options) ? body.stream_options : {};
    if (options.include_usage === true && !settings.omitUsage) {
      events.push({ ...base, choices: [], usage: usage(promptCount, generation.completionTokens) });
    }
    return sse(events);
  }
  return json(200, {
    ...base,
    choices: [
      {
        index: 0,
        text: generation.content,
        logprobs: null,
        finish_reason: generation.finishReason,
        stop_reason: null,
      },
    ],
    ...(settings.omitUsage ? {} : { usage: usage(promptCount, generation.completionTokens) }),
  });
}

function embeddings(body: Json, settings: FakeSettings): FakeReply {
  const input = typeof body.input === "string" ? [body.input] : body.input;
  if (!Array.isArray(input) || input.length === 0) return json(400, errorBody(400, "input is required"));
  const texts = input.map((item) => (typeof item === "string" ? item : JSON.stringify(item)));
  const base64 = body.encoding_format === "base64";
  const data = texts.map((text, index) => {
    const vector = fakeEmbedding(text, settings.dimensions);
    return { index, object: "embedding", embedding: base64 ? base64Vector(vector) : vector };
  });
  const tokens = texts.reduce((sum, text) => sum + promptTokens(text.length), 0);
  return json(200, {
    id: `embd-fake${++serial}`,
    object: "list",
    created: now(),
    model: body.model,
    data,
    usage: { prompt_tokens: tokens, total_tokens: tokens, completion_tokens: 0 },
  });
}

function rerank(body: Json): FakeReply {
  const query = body.query;
  const documents = Array.isArray(body.documents)
    ? body.documents.map((d) =>
        typeof d === "string" ? d : isJson(d) && typeof d.text === "string" ? d.text : "",
      )
    : undefined;
  if (typeof query !== "string" || documents === undefined) {
    return json(400, errorBody(400, "query and documents are required"));
  }
  const results = documents
    .map((text, index) => ({ index, document: { text }, relevance_score: wordOverlap(query, text) }))
    .sort((a, b) => b.relevance_score - a.relevance_score);
  const topN = numberOf(body.top_n);
  const tokens = documents.reduce((sum, text) => sum + promptTokens(query.length + text.length), 0);
  return json(200, {
    id: `rerank-fake${++serial}`,
    model: body.model,
    usage: { total_tokens: tokens },
    results: topN === undefined ? results : results.slice(0, topN),
  });
}

const openAiProtocol: FakeProtocol = {
  errorBody,
  handle(request: FakeRequest, settings: FakeSettings): FakeReply {
    const { method, path } = request;
    if (method === "GET" && path === "/health") return { type: "empty", status: 200 };
    if (method === "GET" && path === "/v1/models") {
      const data = (settings.models ?? ["fake-model"]).map((id) => ({
        id,
        object: "model",
        created: 1_767_225_600,
        owned_by: "vllm",
        root: id,
        parent: null,
        max_model_len: 32_768,
      }));
      return json(200, { object: "list", data });
    }
    const handler = {
      "/v1/chat/completions": chat,
      "/v1/completions": completion,
      "/v1/embeddings": embeddings,
      "/v1/rerank": rerank,
    }[path];
    if (method !== "POST" || handler === undefined) return json(404, { detail: "Not Found" });
    const body = request.body;
    if (!isJson(body)) return json(400, errorBody(400, "the body must be a JSON object"));
    if (typeof body.model !== "string") return json(400, errorBody(400, "model is required"));
    if (settings.models !== undefined && !settings.models.includes(body.model)) {
      return json(404, errorBody(404, `The model \`${body.model}\` does not exist.`));
    }
    return handler(body, settings);
  },
};

/**
 * A fake vLLM-style OpenAI-compatible server: `/v1/chat/completions` (JSON and SSE),
 * `/v1/completions`, `/v1/embeddings` (float or base64), `/v1/rerank`, `/v1/models`, `/health`.
 */
export class FakeOpenAiServer extends FakeServer {
  constructor(settings: Partial<FakeSettings> = {}) {
    super(openAiProtocol, settings);
  }
}
