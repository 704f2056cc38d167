import type { Config } from "../config/schema.ts";

/** One machine of the configuration: where an engine runs and what it serves. */
export type MachineConfig = Config["machines"][number];

/** A part of a chat message's content (text or image), in the OpenAI shape. */
export type ContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string; detail?: "auto" | "low" | "high" } };

/** A chat message as validated, in the OpenAI shape. */
export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | ContentPart[] | null;
  name?: string;
  tool_calls?: Array<{ id: string; type: "function"; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

/** Token counts as OpenAI reports them. */
export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/**
 * A validated chat request, as the adapters receive it. `params` holds only the honoured
 * parameters under their OpenAI names (temperature, top_p, max_tokens, stop, n, seed,
 * presence_penalty, frequency_penalty, logit_bias, logprobs, top_logprobs, parallel_tool_calls,
 * tools, tool_choice, response_format, user); `max_completion_tokens` arrives as `max_tokens`.
 */
export interface ChatCall {
  /** The catalogue id, which is also the model name upstream. */
  model: string;
  messages: ChatMessage[];
  params: Record<string, unknown>;
}

/** A validated text-completion request (`/v1/completions`). */
export interface CompletionCall {
  model: string;
  prompt: string;
  params: Record<string, unknown>;
}

/** The OpenAI `chat.completion` object, as every adapter returns it whatever its upstream speaks. */
export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: { role: "assistant"; content: string | null; tool_calls?: ChatMessage["tool_calls"] };
    finish_reason: string | null;
    logprobs?: unknown;
  }>;
  usage: TokenUsage;
}

/** The OpenAI `chat.completion.chunk` object; the last one of a stream may carry `usage`. */
export interface ChatChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: Array<{
    index: number;
    delta: { role?: "assistant"; content?: string | null; tool_calls?: unknown[] };
    finish_reason: string | null;
    logprobs?: unknown;
  }>;
  usage?: TokenUsage | null;
}

/** The OpenAI `text_completion` object (non-streamed `/v1/completions`). */
export interface TextCompletion {
  id: string;
  object: "text_completion";
  created: number;
  model: string;
  choices: Array<{ index: number; text: string; finish_reason: string | null; logprobs: unknown }>;
  usage: TokenUsage;
}

/** One streamed piece of a text completion; the last one may carry `usage`. */
export interface TextChunk {
  id: string;
  created: number;
  model: string;
  choices: Array<{ index: number; text: string; finish_reason: string | null }>;
  usage?: TokenUsage | null;
}

/** What a rerank upstream answers: a relevance score per document index. */
export interface RerankScore {
  index: number;
  relevance_score: number;
}

/**
 * One upstream protocol. An adapter only translates between the internal (OpenAI) shapes above and
 * what its servers speak; it never sees the client's reply. A streaming method resolves once the
 * upstream has accepted the request (status and headers received) and rejects with an
 * UpstreamError before that, so the router can still fail over; errors while iterating are thrown
 * from the iterator. Every method honours `signal` (the client went away, or a timeout).
 */
export interface EngineAdapter {
  chat?(machine: MachineConfig, call: ChatCall, signal: AbortSignal): Promise<ChatCompletion>;
  chatStream?(machine: MachineConfig, call: ChatCall, signal: AbortSignal): Promise<AsyncIterable<ChatChunk>>;
  complete?(machine: MachineConfig, call: CompletionCall, signal: AbortSignal): Promise<TextCompletion>;
  completeStream?(
    machine: MachineConfig,
    call: CompletionCall,
    signal: AbortSignal,
  ): Promise<AsyncIterable<TextChunk>>;
  embed?(
    machine: MachineConfig,
    model: string,
    texts: string[],
    signal: AbortSignal,
  ): Promise<{ vectors: number[][]; promptTokens: number | null }>;
  rerank?(
    machine: MachineConfig,
    model: string,
    query: string,
    documents: string[],
    signal: AbortSignal,
  ): Promise<RerankScore[]>;
}

/** How an upstream call failed; `beforeFirstByte` failures can move to the next machine. */
export type UpstreamFailure = "connect" | "timeout" | "status" | "protocol" | "aborted";

/** A failure of an upstream server, typed so the router can decide on failover and circuit breaking. */
export class UpstreamError extends Error {
  override name = "UpstreamError";
  readonly kind: UpstreamFailure;
  /** The upstream HTTP status, for `status` failures. */
  readonly status: number | undefined;
  /** Whether another machine (or a later retry) may succeed: connection failures, timeouts and 5xx. */
  readonly retryable: boolean;
  constructor(kind: UpstreamFailure, message: string, status?: number) {
    super(message);
    this.kind = kind;
    this.status = status;
    this.retryable =
      kind !== "aborted" && (kind !== "status" || status === undefined || status >= 500 || status === 429);
  }
}
