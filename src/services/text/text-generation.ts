import type { Payer } from "../../billing/payer.ts";
import type { TierName } from "../../config/schema.ts";
import type {
  ChatCall,
  ChatChunk,
  ChatCompletion,
  CompletionCall,
  RerankScore,
  TextChunk,
  TextCompletion,
} from "../../engines/types.ts";
import type { RequestTrace } from "../../trace/request-trace.ts";

/** Who asks, and how, for one request of the key API or the app API. */
export interface GenerationContext {
  requestId: string;
  principal: Payer;
  tier: TierName;
  /** The endpoint as usage records name it, e.g. `chat.completions`. */
  endpoint: string;
  /** Aborted when the client goes away: the upstream request is cancelled. */
  signal: AbortSignal;
  /** A machine family to try first (the app API's `backend`); the zones stay the same. */
  preferFamily?: string;
  /** The request's trace (machine, zone, tokens for its log line); absent for background work. */
  trace?: RequestTrace;
}

/** A result and where it was made: the zone goes into `X-Zona`. */
export interface Placed<T> {
  zone: string;
  machine: string;
  result: T;
}

/**
 * Text generation, embeddings and rerank for the routes of the key API: placement in the key's
 * zones, failover before the first byte, billing (reserve, settle, release). Failures are ApiErrors
 * of the catalogue (402, 404 model_not_found, 502 bad_gateway, 503 zone_unavailable /
 * model_unavailable / model_activation_required). A stream is returned once an upstream accepted
 * it; an error while iterating is an UpstreamError (the route then sends an `error` event and no
 * `[DONE]`). Streams always end with usage counted and the money settled, also when the client
 * goes away; a final chunk with `usage` (and no choices) is always yielded last, for the route to
 * forward when the client asked for `stream_options.include_usage`.
 */
export interface TextGeneration {
  /** Throws what `chat` would refuse before reaching a machine (model, 402), holding nothing. */
  checkChat?(call: ChatCall, context: GenerationContext): Promise<void>;
  chat(call: ChatCall, context: GenerationContext): Promise<Placed<ChatCompletion>>;
  chatStream(call: ChatCall, context: GenerationContext): Promise<Placed<AsyncIterable<ChatChunk>>>;
  complete(call: CompletionCall, context: GenerationContext): Promise<Placed<TextCompletion>>;
  completeStream(call: CompletionCall, context: GenerationContext): Promise<Placed<AsyncIterable<TextChunk>>>;
  /** Always the catalogue's embedding model (`bge-m3`). */
  embed(
    texts: string[],
    context: GenerationContext,
  ): Promise<Placed<{ vectors: number[][]; promptTokens: number }>>;
  /** Always the catalogue's rerank model (`bge-reranker-v2-m3`). */
  rerank(query: string, documents: string[], context: GenerationContext): Promise<Placed<RerankScore[]>>;
}
