/**
 * Pure translations between the internal shapes and OpenAI-compatible servers (vLLM, SGLang,
 * llama.cpp server, TGI). The internal shapes are OpenAI's, so this is mostly normalising: our
 * model id, no server-specific extras, usage always present.
 */
import type {
  ChatCall,
  ChatChunk,
  ChatCompletion,
  CompletionCall,
  RerankScore,
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
  numberField,
  type Payload,
  stringField,
  throwIfErrorPayload,
  vectorField,
} from "./payload.ts";
import { toolCallCharacters, toolCallsOf } from "./tool-calls.ts";
import { estimateTokens, messageCharacters, reportedUsage, tokenUsage } from "./usage-estimate.ts";

/**
 * The body of `POST /v1/chat/completions`; streams always ask for usage. `model` is the machine's
 * name for the catalogue model (see served-models.ts).
 */
export function chatRequest(call: ChatCall, stream: boolean, model = call.model): Payload {
  const body: Payload = { ...call.params, model, messages: call.messages, stream };
  if (stream) body.stream_options = { include_usage: true };
  else delete body.stream_options;
  return body;
}

// Chat-only parameters that the legacy completions endpoint does not know.
const NOT_FOR_COMPLETIONS = new Set([
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "logprobs",
  "top_logprobs",
]);

/**
 * The body of `POST /v1/completions`. The parameters arrive as for chat; the legacy endpoint's
 * `logprobs` is the number of top log-probabilities, so chat's `logprobs: true` plus
 * `top_logprobs` becomes that number.
 */
export function completionRequest(call: CompletionCall, stream: boolean, model = call.model): Payload {
  const body: Payload = {};
  for (const [name, value] of Object.entries(call.params)) {
    if (!NOT_FOR_COMPLETIONS.has(name)) body[name] = value;
  }
  const { logprobs, top_logprobs: top } = call.params;
  if (typeof logprobs === "number") body.logprobs = logprobs;
  else if (logprobs === true) body.logprobs = typeof top === "number" ? top : 0;
  body.model = model;
  body.prompt = call.prompt;
  body.stream = stream;
  if (stream) body.stream_options = { include_usage: true };
  else delete body.stream_options;
  return body;
}

function choicesOf(body: Payload): unknown[] {
  if (!Array.isArray(body.choices))
    throw new UpstreamError("protocol", "the upstream sent an answer without choices");
  return body.choices;
}

/** A non-streamed chat answer as the internal `chat.completion`. */
export function toChatCompletion(raw: unknown, call: ChatCall): ChatCompletion {
  const body = expectPayload(raw, "an answer");
  throwIfErrorPayload(body);
  let generated = 0;
  const choices = choicesOf(body).map((rawChoice, i) => {
    const choice = expectPayload(rawChoice, "a choice");
    const message = isPayload(choice.message) ? choice.message : {};
    const content = stringField(message.content) ?? null;
    const toolCalls = toolCallsOf(message.tool_calls);
    generated += (content?.length ?? 0) + toolCallCharacters(toolCalls);
    const out: ChatCompletion["choices"][number] = {
      index: numberField(choice.index) ?? i,
      message: toolCalls
        ? { role: "assistant", content, tool_calls: toolCalls }
        : { role: "assistant", content },
      finish_reason: stringField(choice.finish_reason) ?? null,
      logprobs: choice.logprobs ?? null,
    };
    return out;
  });
  return {
    id: stringField(body.id) ?? newId("chatcmpl-"),
    object: "chat.completion",
    created: numberField(body.created) ?? nowSeconds(),
    model: call.model,
    choices,
    usage: usageOrEstimate(body.usage, messageCharacters(call.messages), generated),
  };
}

function usageOrEstimate(raw: unknown, promptCharacters: number, generatedCharacters: number): TokenUsage {
  const prompt = () => estimateTokens(promptCharacters);
  const completion = () => estimateTokens(generatedCharacters);
  return reportedUsage(raw, prompt, completion) ?? tokenUsage(prompt(), completion());
}

/** What a stream transform keeps between events. */
interface StreamState {
  id: string | undefined;
  created: number | undefined;
  usage: unknown;
  finished: boolean;
  generated: number;
}

/** Reads the envelope of one stream event; returns its choices (empty for a usage-only event). */
function streamEvent(raw: unknown, state: StreamState): unknown[] {
  const event = expectPayload(raw, "an event");
  throwIfErrorPayload(event);
  state.id ??= stringField(event.id);
  state.created ??= numberField(event.created);
  if (isPayload(event.usage)) state.usage = event.usage;
  return Array.isArray(event.choices) ? event.choices : [];
}

function endOfStream(state: StreamState, promptCharacters: number, idPrefix: string) {
  // A clean end without any finish_reason (or usage) means the upstream gave up half-way.
  if (!state.finished && state.usage === undefined) {
    throw new UpstreamError("protocol", "the upstream stream ended before the answer was finished");
  }
  return {
    id: state.id ?? newId(idPrefix),
    created: state.created ?? nowSeconds(),
    usage: usageOrEstimate(state.usage, promptCharacters, state.generated),
  };
}

/**
 * The events of a streamed chat answer as internal chunks. Usage is taken off whichever event
 * carried it (vLLM sends a separate event, TGI and llama.cpp put it on the last choice) and
 * yielded in a final chunk without choices, estimated when the upstream sent none.
 */
export async function* toChatChunks(
  events: AsyncIterable<unknown>,
  call: ChatCall,
): AsyncGenerator<ChatChunk> {
  const state = newStreamState();
  for await (const { id, created, choices } of streamChoices(events, state, "chatcmpl-")) {
    yield {
      id,
      object: "chat.completion.chunk",
      created,
      model: call.model,
      choices: choices.map((rawChoice, i) => {
        const choice = expectPayload(rawChoice, "a choice");
        const delta = isPayload(choice.delta) ? choice.delta : {};
        const out: ChatChunk["choices"][number]["delta"] = {};
        if (delta.role === "assistant") out.role = "assistant";
        if (typeof delta.content === "string" || delta.content === null) out.content = delta.content;
        if (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) out.tool_calls = delta.tool_calls;
        state.generated += (out.content?.length ?? 0) + deltaToolCharacters(out.tool_calls);
        const finish = stringField(choice.finish_reason) ?? null;
        if (finish !== null) state.finished = true;
        const mapped: ChatChunk["choices"][number] = {
          index: numberField(choice.index) ?? i,
          delta: out,
          finish_reason: finish,
        };
        if (choice.logprobs !== undefined && choice.logprobs !== null) mapped.logprobs = choice.logprobs;
        return mapped;
      }),
    };
  }
  const end = endOfStream(state, messageCharacters(call.messages), "chatcmpl-");
  yield {
    id: end.id,
    object: "chat.completion.chunk",
    created: end.created,
    model: call.model,
    choices: [],
    usage: end.usage,
  };
}

function deltaToolCharacters(calls: unknown[] | undefined): number {
  let count = 0;
  for (const call of calls ?? []) {
    const fn = isPayload(call) && isPayload(call.function) ? call.function : undefined;
    count += (stringField(fn?.name)?.length ?? 0) + (stringField(fn?.arguments)?.length ?? 0);
  }
  return count;
}

function newStreamState(): StreamState {
  return { id: undefined, created: undefined, usage: undefined, finished: false, generated: 0 };
}

/** The choices of every stream event that carries some, with the stream's id and creation time. */
async function* streamChoices(
  events: AsyncIterable<unknown>,
  state: StreamState,
  idPrefix: string,
): AsyncGenerator<{ id: string; created: number; choices: unknown[] }> {
  for await (const raw of events) {
    const choices = streamEvent(raw, state);
    if (choices.length === 0) continue;
    state.id ??= newId(idPrefix);
    state.created ??= nowSeconds();
    yield { id: state.id, created: state.created, choices };
  }
}

/** A non-streamed completions answer as the internal `text_completion`. */
export function toTextCompletion(raw: unknown, call: CompletionCall): TextCompletion {
  const body = expectPayload(raw, "an answer");
  throwIfErrorPayload(body);
  let generated = 0;
  const choices = choicesOf(body).map((rawChoice, i) => {
    const choice = expectPayload(rawChoice, "a choice");
    const text = stringField(choice.text) ?? "";
    generated += text.length;
    return {
      index: numberField(choice.index) ?? i,
      text,
      finish_reason: stringField(choice.finish_reason) ?? null,
      logprobs: choice.logprobs ?? null,
    };
  });
  return {
    id: stringField(body.id) ?? newId("cmpl-"),
    object: "text_completion",
    created: numberField(body.created) ?? nowSeconds(),
    model: call.model,
    choices,
    usage: usageOrEstimate(body.usage, call.prompt.length, generated),
  };
}

/** The events of a streamed completions answer as internal text chunks, usage last (as for chat). */
export async function* toTextChunks(
  events: AsyncIterable<unknown>,
  call: CompletionCall,
): AsyncGenerator<TextChunk> {
  const state = newStreamState();
  for await (const { id, created, choices } of streamChoices(events, state, "cmpl-")) {
    yield {
      id,
      created,
      model: call.model,
      choices: choices.map((rawChoice, i) => {
        const choice = expectPayload(rawChoice, "a choice");
        const text = stringField(choice.text) ?? "";
        state.generated += text.length;
        const finish = stringField(choice.finish_reason) ?? null;
        if (finish !== null) state.finished = true;
        return { index: numberField(choice.index) ?? i, text, finish_reason: finish };
      }),
    };
  }
  const end = endOfStream(state, call.prompt.length, "cmpl-");
  yield { id: end.id, created: end.created, model: call.model, choices: [], usage: end.usage };
}

/** The body of `POST /v1/embeddings`. */
export function embeddingsRequest(model: string, texts: string[]): Payload {
  return { model, input: texts, encoding_format: "float" };
}

/** The vectors of an embeddings answer in input order, and the prompt tokens it reported. */
export function fromEmbeddings(
  raw: unknown,
  count: number,
): { vectors: number[][]; promptTokens: number | null } {
  const body = expectPayload(raw, "an answer");
  throwIfErrorPayload(body);
  if (!Array.isArray(body.data) || body.data.length !== count) {
    throw new UpstreamError("protocol", `the upstream did not send ${count} embeddings`);
  }
  const vectors: number[][] = new Array(count);
  body.data.forEach((rawItem, i) => {
    const item = expectPayload(rawItem, "an embedding");
    const index = numberField(item.index) ?? i;
    if (index < 0 || index >= count || vectors[index] !== undefined) {
      throw new UpstreamError("protocol", "the upstream sent embeddings with wrong indexes");
    }
    vectors[index] = vectorField(item.embedding, "an embedding");
  });
  const usage = isPayload(body.usage) ? body.usage : undefined;
  const promptTokens = numberField(usage?.prompt_tokens) ?? numberField(usage?.total_tokens) ?? null;
  return { vectors, promptTokens };
}

/** The body of `POST /v1/rerank` (vLLM, llama.cpp server: the Jina/Cohere shape). */
export function rerankRequest(model: string, query: string, documents: string[]): Payload {
  return { model, query, documents };
}

/** The scores of a rerank answer, in the upstream's order. */
export function fromRerank(raw: unknown, count: number): RerankScore[] {
  const body = expectPayload(raw, "an answer");
  throwIfErrorPayload(body);
  if (!Array.isArray(body.results))
    throw new UpstreamError("protocol", "the upstream sent a rerank answer without results");
  return body.results.map((rawResult) => {
    const result = expectPayload(rawResult, "a rerank result");
    const index = numberField(result.index);
    const score = numberField(result.relevance_score);
    if (index === undefined || index < 0 || index >= count || score === undefined) {
      throw new UpstreamError("protocol", "the upstream sent a rerank result without index or score");
    }
    return { index, relevance_score: score };
  });
}
