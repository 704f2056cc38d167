import {
  conversationCharacters,
  fakeEmbedding,
  type GenerationInput,
  generate,
  lastUserText,
  promptTokens,
} from "./fake-generation.ts";
import {
  type FakeProtocol,
  type FakeReply,
  type FakeRequest,
  FakeServer,
  type FakeSettings,
} from "./fake-server.ts";

type Json = Record<string, unknown>;

const NDJSON = "application/x-ndjson";

function isJson(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function json(status: number, body: unknown): FakeReply {
  return { type: "json", status, body };
}

function errorBody(_status: number, message: string): unknown {
  return { error: message };
}

function ndjson(lines: unknown[]): FakeReply {
  return { type: "stream", contentType: NDJSON, pieces: lines.map((line) => `${JSON.stringify(line)}\n`) };
}

function formatOf(format: unknown): GenerationInput["format"] {
  if (format === "json") return "json";
  return isJson(format) ? { schema: format } : "text";
}

function counts(settings: FakeSettings, prompt: number, completion: number): Json {
  const timings = { total_duration: 1_000_000, load_duration: 100_000 };
  if (settings.omitUsage) return timings;
  return {
    ...timings,
    prompt_eval_count: prompt,
    prompt_eval_duration: 200_000,
    eval_count: completion,
    eval_duration: 700_000,
  };
}

// The images of the last user message (Ollama puts base64 images on the message).
function lastUserImages(messages: unknown[]): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (isJson(message) && message.role === "user")
      return Array.isArray(message.images) ? message.images.length : 0;
  }
  return 0;
}

function chat(body: Json, settings: FakeSettings): FakeReply {
  const messages = body.messages;
  if (!Array.isArray(messages)) return json(400, errorBody(400, "messages is required"));
  const options = isJson(body.options) ? body.options : {};
  const images = lastUserImages(messages);
  const text = lastUserText(messages);
  const generation = generate({
    text: images > 0 ? `${text} [${images} image${images === 1 ? "" : "s"}]` : text,
    tools: body.tools,
    format: formatOf(body.format),
    maxTokens: typeof options.num_predict === "number" ? options.num_predict : undefined,
    stop: Array.isArray(options.stop)
      ? options.stop.filter((s): s is string => typeof s === "string")
      : undefined,
    chunks: settings.chunks,
  });
  const base = { model: body.model, created_at: new Date().toISOString() };
  const doneReason = generation.finishReason === "length" ? "length" : "stop";
  const usage = counts(settings, promptTokens(conversationCharacters(messages)), generation.completionTokens);
  const toolCalls = generation.toolCall
    ? [{ function: { index: 0, name: generation.toolCall.name, arguments: generation.toolCall.arguments } }]
    : undefined;
  if (body.stream === false) {
    const message = {
      role: "assistant",
      content: generation.content,
      ...(toolCalls ? { tool_calls: toolCalls } : {}),
    };
    return json(200, { ...base, message, done_reason: doneReason, done: true, ...usage });
  }
  const lines: unknown[] = generation.pieces.map((content) => ({
    ...base,
    message: { role: "assistant", content },
    done: false,
  }));
  if (toolCalls)
    lines.push({ ...base, message: { role: "assistant", content: "", tool_calls: toolCalls }, done: false });
  lines.push({
    ...base,
    message: { role: "assistant", content: "" },
    done_reason: doneReason,
    done: true,
    ...usage,
  });
  return ndjson(lines);
}

function generateText(body: Json, settings: FakeSettings): FakeReply {
  if (typeof body.prompt !== "string") return json(400, errorBody(400, "prompt is required"));
  const options = isJson(body.options) ? body.options : {};
  const generation = generate({
    text: body.prompt,
    format: formatOf(body.format),
    maxTokens: typeof options.num_predict === "number" ? options.num_predict : undefined,
    stop: Array.isArray(options.stop)
      ? options.stop.filter((s): s is string => typeof s === "string")
      : undefined,
    chunks: settings.chunks,
  });
  const base = { model: body.model, created_at: new Date().toISOString() };
  const doneReason = generation.finishReason === "length" ? "length" : "stop";
  const usage = counts(settings, promptTokens(body.prompt.length), generation.completionTokens);
  if (body.stream === false) {
    return json(200, {
      ...base,
      response: generation.content,
      done: true,
      done_reason: doneReason,
      context: [1, 2, 3],
      ...usage,
    });
  }
  const lines: unknown[] = generation.pieces.map((response) => ({ ...base, response, done: false }));
  lines.push({ ...base, response: "", done: true, done_reason: doneReason, context: [1, 2, 3], ...usage });
  return ndjson(lines);
}

function embed(body: Json, settings: FakeSettings): FakeReply {
  const input = typeof body.input === "string" ? [body.input] : body.input;
  if (!Array.isArray(input) || !input.every((item) => typeof item === "string")) {
    return json(400, errorBody(400, "invalid input type"));
  }
  const embeddings = input.map((text) => fakeEmbedding(text, settings.dimensions));
  const tokens = input.reduce((sum, text) => sum + promptTokens(text.length), 0);
  const usage = settings.omitUsage ? {} : { prompt_eval_count: tokens };
  return json(200, {
    model: body.model,
    embeddings,
    total_duration: 1_000_000,
    load_duration: 100_000,
    ...usage,
  });
}

// Ollama reads a name without a tag as `<name>:latest`.
function withTag(name: string): string {
  return name.slice(name.lastIndexOf("/") + 1).includes(":") ? name : `${name}:latest`;
}

function sameModel(pulled: string, asked: string): boolean {
  return withTag(pulled) === withTag(asked);
}

const ollamaProtocol: FakeProtocol = {
  errorBody,
  handle(request: FakeRequest, settings: FakeSettings): FakeReply {
    const { method, path } = request;
    if (method === "GET" && path === "/") return { type: "empty", status: 200 };
    if (method === "GET" && path === "/api/version") return json(200, { version: "0.12.6" });
    if (method === "GET" && path === "/api/tags") {
      const models = (settings.models ?? ["fake-model"]).map(withTag).map((name) => ({
        name,
        model: name,
        modified_at: "2026-01-01T00:00:00Z",
        size: 1_000_000,
        digest: "0".repeat(64),
        details: { format: "gguf", family: "fake", parameter_size: "1B", quantization_level: "Q4_K_M" },
      }));
      return json(200, { models });
    }
    const handler = { "/api/chat": chat, "/api/generate": generateText, "/api/embed": embed }[path];
    if (method !== "POST" || handler === undefined) return json(404, errorBody(404, "404 page not found"));
    const body = request.body;
    if (!isJson(body)) return json(400, errorBody(400, "invalid JSON body"));
    const model = body.model;
    if (typeof model !== "string" || model.length === 0)
      return json(400, errorBody(400, "model is required"));
    if (settings.models !== undefined && !settings.models.some((name) => sameModel(name, model))) {
      return json(404, errorBody(404, `model "${model}" not found, try pulling it first`));
    }
    return handler(body, settings);
  },
};

/**
 * A fake Ollama server (native API): `/api/chat`, `/api/generate` (NDJSON or JSON), `/api/embed`,
 * `/api/tags` (the `models` pulled, each with its tag), `/api/version`. With `models` set, another
 * name is refused with Ollama's 404; a name without a tag is the `:latest` one.
 */
export class FakeOllamaServer extends FakeServer {
  constructor(settings: Partial<FakeSettings> = {}) {
    super(ollamaProtocol, settings);
  }
}
