/**
 * Pure translations between the internal (OpenAI) shapes and Ollama's native API: `/api/chat`,
 * `/api/generate` with `raw: true`, `/api/embed`. Ollama gives no ids, reports tokens as
 * `prompt_eval_count` / `eval_count`, and streams NDJSON ending with a `done: true` line.
 */
import type {
  ChatCall,
  ChatChunk,
  ChatCompletion,
  ChatMessage,
  CompletionCall,
  TextChunk,
  TextCompletion,
  TokenUsage,
} from "../types.ts";
import { UpstreamError } from "../types.ts";
import {
  expectPayload,
  isPayload,
  newId,
  nowSeconds,
  type Payload,
  stringField,
  throwIfErrorPayload,
  vectorField,
} from "./payload.ts";
import { toolCallCharacters, toolCallsOf } from "./tool-calls.ts";
import { estimateTokens, messageCharacters, tokenUsage, wholeCount } from "./usage-estimate.ts";

/** The body of `POST /api/chat`; `model` is the machine's name for the catalogue model. */
export function ollamaChatRequest(call: ChatCall, stream: boolean, model = call.model): Payload {
  const body: Payload = { model, messages: ollamaMessages(call.messages), stream };
  const options = ollamaOptions(call.params);
  if (options !== undefined) body.options = options;
  const format = ollamaFormat(call.params.response_format);
  if (format !== undefined) body.format = format;
  const tools = ollamaTools(call.params.tools);
  if (tools !== undefined) body.tools = tools;
  return body;
}

/** The body of `POST /api/generate`: the prompt goes to the model as it is, without a chat template. */
export function ollamaGenerateRequest(call: CompletionCall, stream: boolean, model = call.model): Payload {
  const body: Payload = { model, prompt: call.prompt, raw: true, stream };
  const options = ollamaOptions(call.params);
  if (options !== undefined) body.options = options;
  const format = ollamaFormat(call.params.response_format);
  if (format !== undefined) body.format = format;
  return body;
}

/** The body of `POST /api/embed`. */
export function ollamaEmbedRequest(model: string, texts: string[]): Payload {
  return { model, input: texts, truncate: true };
}

/**
 * Messages in Ollama's shape: text parts joined into `content`, images (data URIs) as base64 in
 * `images`, assistant tool calls with object arguments, tool results named by `tool_name` (the
 * function the `tool_call_id` points to). Images must arrive as data URIs: the service fetches
 * and checks addresses before any adapter sees them.
 */
export function ollamaMessages(messages: ChatMessage[]): Payload[] {
  const toolNames = new Map<string, string>();
  return messages.map((message) => {
    const out: Payload = { role: message.role, content: "" };
    const content = message.content;
    if (typeof content === "string") out.content = content;
    else if (content !== null) {
      const texts: string[] = [];
      const images: string[] = [];
      for (const part of content) {
        if (part.type === "text") texts.push(part.text);
        else images.push(dataUriBase64(part.image_url.url));
      }
      out.content = texts.join("\n");
      if (images.length > 0) out.images = images;
    }
    if (message.tool_calls !== undefined && message.tool_calls.length > 0) {
      out.tool_calls = message.tool_calls.map((call) => {
        toolNames.set(call.id, call.function.name);
        return {
          function: { name: call.function.name, arguments: argumentsObject(call.function.arguments) },
        };
      });
    }
    if (message.role === "tool" && message.tool_call_id !== undefined) {
      const name = toolNames.get(message.tool_call_id);
      if (name !== undefined) out.tool_name = name;
    }
    return out;
  });
}

/** The base64 payload of a data URI (`data:image/png;base64,...`). */
export function dataUriBase64(url: string): string {
  const comma = url.indexOf(",");
  if (!url.startsWith("data:") || comma === -1) {
    throw new TypeError(
      "Ollama takes images only as data URIs; fetch the address before calling the adapter",
    );
  }
  const meta = url.slice(5, comma);
  const data = url.slice(comma + 1);
  return meta.endsWith(";base64") ? data : Buffer.from(decodeURIComponent(data), "utf8").toString("base64");
}

// Ollama wants arguments as an object; a string that is not a JSON object becomes {}.
function argumentsObject(text: string): Payload {
  try {
    const parsed: unknown = JSON.parse(text);
    return isPayload(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

const SAME_NAME_OPTIONS = ["temperature", "top_p", "seed", "presence_penalty", "frequency_penalty"];

/** Sampling parameters as Ollama `options` (undefined when none is set). */
export function ollamaOptions(params: Record<string, unknown>): Payload | undefined {
  const options: Payload = {};
  for (const name of SAME_NAME_OPTIONS) {
    if (params[name] !== undefined && params[name] !== null) options[name] = params[name];
  }
  if (typeof params.max_tokens === "number") options.num_predict = params.max_tokens;
  const stop = params.stop;
  if (typeof stop === "string") options.stop = [stop];
  else if (Array.isArray(stop) && stop.length > 0) options.stop = stop;
  return Object.keys(options).length > 0 ? options : undefined;
}

/** `response_format` as Ollama's `format`: "json" for json_object, the schema itself for json_schema. */
export function ollamaFormat(responseFormat: unknown): unknown {
  if (!isPayload(responseFormat)) return undefined;
  if (responseFormat.type === "json_object") return "json";
  if (responseFormat.type === "json_schema") {
    const spec = responseFormat.json_schema;
    return isPayload(spec) && isPayload(spec.schema) ? spec.schema : "json";
  }
  return undefined;
}

/** OpenAI function tools in Ollama's (identical) shape. */
export function ollamaTools(tools: unknown): Payload[] | undefined {
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  return tools.filter(
    (tool): tool is Payload => isPayload(tool) && tool.type === "function" && isPayload(tool.function),
  );
}

/** The OpenAI finish_reason of an Ollama answer. */
export function finishReason(doneReason: unknown, toolCalls: boolean): string {
  if (toolCalls) return "tool_calls";
  return doneReason === "length" ? "length" : "stop";
}

function createdOf(body: Payload): number {
  const at = stringField(body.created_at);
  const ms = at === undefined ? Number.NaN : Date.parse(at);
  return Number.isNaN(ms) ? nowSeconds() : Math.floor(ms / 1000);
}

function ollamaUsage(body: Payload, promptCharacters: number, generatedCharacters: number) {
  return tokenUsage(
    wholeCount(body.prompt_eval_count) ?? estimateTokens(promptCharacters),
    wholeCount(body.eval_count) ?? estimateTokens(generatedCharacters),
  );
}

/** A non-streamed `/api/chat` answer as the internal `chat.completion`. */
export function fromOllamaChat(raw: unknown, call: ChatCall): ChatCompletion {
  const body = expectPayload(raw, "an answer");
  throwIfErrorPayload(body);
  const message = expectPayload(body.message, "a message");
  const text = stringField(message.content) ?? "";
  const toolCalls = toolCallsOf(message.tool_calls);
  return {
    id: newId("chatcmpl-"),
    object: "chat.completion",
    created: createdOf(body),
    model: call.model,
    choices: [
      {
        index: 0,
        message: toolCalls
          ? { role: "assistant", content: text === "" ? null : text, tool_calls: toolCalls }
          : { role: "assistant", content: text },
        finish_reason: finishReason(body.done_reason, toolCalls !== undefined),
        logprobs: null,
      },
    ],
    usage: ollamaUsage(body, messageCharacters(call.messages), text.length + toolCallCharacters(toolCalls)),
  };
}

/**
 * The NDJSON lines of a streamed `/api/chat` answer as internal chunks: the role on the first,
 * each tool call whole (with an id and its index), the finish_reason on the `done` line, then a
 * chunk with usage and no choices. A stream that ends without `done` is a `protocol` failure.
 */
export async function* fromOllamaChatStream(
  lines: AsyncIterable<unknown>,
  call: ChatCall,
): AsyncGenerator<ChatChunk> {
  const id = newId("chatcmpl-");
  let created: number | undefined;
  let roleSent = false;
  let toolIndex = 0;
  let generated = 0;
  let usage: TokenUsage | undefined;
  for await (const raw of lines) {
    // Lines after `done` are ignored but read: a body read to its end keeps the connection reusable.
    if (usage !== undefined) continue;
    const line = expectPayload(raw, "a line");
    throwIfErrorPayload(line);
    created ??= createdOf(line);
    const message = isPayload(line.message) ? line.message : {};
    const content = stringField(message.content) ?? "";
    const toolCalls = toolCallsOf(message.tool_calls)?.map((tc) => ({ index: toolIndex++, ...tc }));
    generated += content.length + toolCallCharacters(toolCalls);
    const done = line.done === true;
    if (!done && content === "" && toolCalls === undefined && roleSent) continue;
    const delta: ChatChunk["choices"][number]["delta"] = {};
    if (!roleSent) delta.role = "assistant";
    if (content !== "" || (!roleSent && !done)) delta.content = content;
    if (toolCalls !== undefined) delta.tool_calls = toolCalls;
    roleSent = true;
    const finish = done ? finishReason(line.done_reason, toolIndex > 0) : null;
    yield {
      id,
      object: "chat.completion.chunk",
      created,
      model: call.model,
      choices: [{ index: 0, delta, finish_reason: finish }],
    };
    if (done) usage = ollamaUsage(line, messageCharacters(call.messages), generated);
  }
  if (usage === undefined)
    throw new UpstreamError("protocol", "the upstream stream ended before the answer was finished");
  yield {
    id,
    object: "chat.completion.chunk",
    created: created ?? nowSeconds(),
    model: call.model,
    choices: [],
    usage,
  };
}

/** A non-streamed `/api/generate` answer as the internal `text_completion`. */
export function fromOllamaGenerate(raw: unknown, call: CompletionCall): TextCompletion {
  const body = expectPayload(raw, "an answer");
  throwIfErrorPayload(body);
  const text = stringField(body.response) ?? "";
  return {
    id: newId("cmpl-"),
    object: "text_completion",
    created: createdOf(body),
    model: call.model,
    choices: [{ index: 0, text, finish_reason: finishReason(body.done_reason, false), logprobs: null }],
    usage: ollamaUsage(body, call.prompt.length, text.length),
  };
}

/** The NDJSON lines of a streamed `/api/generate` answer as internal text chunks, usage last. */
export async function* fromOllamaGenerateStream(
  lines: AsyncIterable<unknown>,
  call: CompletionCall,
): AsyncGenerator<TextChunk> {
  const id = newId("cmpl-");
  let created: number | undefined;
  let generated = 0;
  let usage: TokenUsage | undefined;
  for await (const raw of lines) {
    if (usage !== undefined) continue;
    const line = expectPayload(raw, "a line");
    throwIfErrorPayload(line);
    created ??= createdOf(line);
    const text = stringField(line.response) ?? "";
    generated += text.length;
    const done = line.done === true;
    if (!done && text === "") continue;
    const finish = done ? finishReason(line.done_reason, false) : null;
    yield { id, created, model: call.model, choices: [{ index: 0, text, finish_reason: finish }] };
    if (done) usage = ollamaUsage(line, call.prompt.length, generated);
  }
  if (usage === undefined)
    throw new UpstreamError("protocol", "the upstream stream ended before the answer was finished");
  yield { id, created: created ?? nowSeconds(), model: call.model, choices: [], usage };
}

/** The vectors of an `/api/embed` answer, and the prompt tokens it reported. */
export function fromOllamaEmbed(
  raw: unknown,
  count: number,
): { vectors: number[][]; promptTokens: number | null } {
  const body = expectPayload(raw, "an answer");
  throwIfErrorPayload(body);
  if (!Array.isArray(body.embeddings) || body.embeddings.length !== count) {
    throw new UpstreamError("protocol", `the upstream did not send ${count} embeddings`);
  }
  const vectors = body.embeddings.map((vector) => vectorField(vector, "an embedding"));
  return { vectors, promptTokens: wholeCount(body.prompt_eval_count) ?? null };
}
