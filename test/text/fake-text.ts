import type {
  ChatCall,
  ChatChunk,
  ChatCompletion,
  CompletionCall,
  RerankScore,
  TextChunk,
  TextCompletion,
  TokenUsage,
} from "../../src/engines/types.ts";
import { UpstreamError } from "../../src/engines/types.ts";
import type { ApiError } from "../../src/errors/catalogue.ts";
import type { GenerationContext, Placed, TextGeneration } from "../../src/services/text/text-generation.ts";

/** One call the fake received. */
export interface Received {
  method: keyof TextGeneration;
  input: unknown;
  context: GenerationContext;
}

/** How the fake's next streams behave. */
export type StreamMode =
  | { kind: "ok" }
  /** Yields this many content chunks, then fails as an upstream that dropped the connection. */
  | { kind: "fail-after"; chunks: number }
  /** Yields one chunk, then waits until the request's signal is aborted. */
  | { kind: "hang" };

const USAGE: TokenUsage = { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 };
const PIECES = ["Hel", "lo", "!"];

/**
 * A TextGeneration that records what the routes asked for and answers canned results: the text
 * "Hello!" (or `nextChat` when set), streams of three pieces ending with a finish chunk and the
 * usage chunk the real service always yields last, embeddings from the texts' lengths, and
 * rerank scores by shared words.
 */
export class FakeText implements TextGeneration {
  zone = "zone-a";
  received: Received[] = [];
  /** Thrown by the next call before anything starts (a 503, a 402...). */
  failNext: ApiError | undefined;
  streamMode: StreamMode = { kind: "ok" };
  /** The next non-streamed chat answer waits until the request's signal is aborted. */
  hangNext = false;
  /** Overrides the next non-streamed chat answer. */
  nextChat: Partial<ChatCompletion["choices"][number]> | undefined;
  /** Resolves with the signal state once a hanging stream was aborted. */
  aborted: Promise<void>;
  private markAborted: () => void = () => {};

  constructor() {
    this.aborted = this.resetAborted();
  }

  resetAborted(): Promise<void> {
    this.aborted = new Promise((resolve) => {
      this.markAborted = resolve;
    });
    return this.aborted;
  }

  /** The last call received. */
  last(): Received {
    const call = this.received.at(-1);
    if (!call) throw new Error("the fake received nothing");
    return call;
  }

  /** The params of the last chat or completion call. */
  lastParams(): Record<string, unknown> {
    return (this.last().input as ChatCall | CompletionCall).params;
  }

  reset(): void {
    this.received = [];
    this.failNext = undefined;
    this.streamMode = { kind: "ok" };
    this.nextChat = undefined;
    this.hangNext = false;
    this.zone = "zone-a";
  }

  async chat(call: ChatCall, context: GenerationContext): Promise<Placed<ChatCompletion>> {
    this.record("chat", call, context);
    if (this.hangNext) {
      this.hangNext = false;
      await this.untilAborted(context.signal);
      throw new UpstreamError("aborted", "the client went away");
    }
    const override = this.nextChat;
    this.nextChat = undefined;
    return this.placed({
      id: "chatcmpl-fake",
      object: "chat.completion",
      created: 1_767_225_600,
      model: call.model,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: "Hello!", ...override?.message },
          finish_reason: override?.finish_reason ?? "stop",
        },
      ],
      usage: USAGE,
    });
  }

  async chatStream(call: ChatCall, context: GenerationContext): Promise<Placed<AsyncIterable<ChatChunk>>> {
    this.record("chatStream", call, context);
    const base = {
      id: "chatcmpl-fake",
      object: "chat.completion.chunk" as const,
      created: 1_767_225_600,
      model: call.model,
    };
    const chunks: ChatChunk[] = PIECES.map((text, i) => ({
      ...base,
      choices: [
        {
          index: 0,
          delta: i === 0 ? { role: "assistant", content: text } : { content: text },
          finish_reason: null,
        },
      ],
    }));
    chunks.push({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] });
    chunks.push({ ...base, choices: [], usage: USAGE });
    return this.placed(this.stream(chunks, context.signal));
  }

  async complete(call: CompletionCall, context: GenerationContext): Promise<Placed<TextCompletion>> {
    this.record("complete", call, context);
    return this.placed({
      id: "cmpl-fake",
      object: "text_completion",
      created: 1_767_225_600,
      model: call.model,
      choices: [{ index: 0, text: "Hello!", finish_reason: "stop", logprobs: null }],
      usage: USAGE,
    });
  }

  async completeStream(
    call: CompletionCall,
    context: GenerationContext,
  ): Promise<Placed<AsyncIterable<TextChunk>>> {
    this.record("completeStream", call, context);
    const base = { id: "cmpl-fake", created: 1_767_225_600, model: call.model };
    const chunks: TextChunk[] = PIECES.map((text) => ({
      ...base,
      choices: [{ index: 0, text, finish_reason: null }],
    }));
    chunks.push({ ...base, choices: [{ index: 0, text: "", finish_reason: "stop" }] });
    chunks.push({ ...base, choices: [], usage: USAGE });
    return this.placed(this.stream(chunks, context.signal));
  }

  async embed(
    texts: string[],
    context: GenerationContext,
  ): Promise<Placed<{ vectors: number[][]; promptTokens: number }>> {
    this.record("embed", texts, context);
    return this.placed({ vectors: texts.map(vectorOf), promptTokens: texts.length * 2 });
  }

  async rerank(
    query: string,
    documents: string[],
    context: GenerationContext,
  ): Promise<Placed<RerankScore[]>> {
    this.record("rerank", { query, documents }, context);
    const words = new Set(query.toLowerCase().split(/\W+/));
    return this.placed(
      documents.map((document, index) => ({
        index,
        relevance_score:
          document
            .toLowerCase()
            .split(/\W+/)
            .filter((word) => words.has(word)).length /
            10 +
          index / 1000,
      })),
    );
  }

  private record(method: keyof TextGeneration, input: unknown, context: GenerationContext): void {
    this.received.push({ method, input, context });
    const failure = this.failNext;
    if (failure) {
      this.failNext = undefined;
      throw failure;
    }
  }

  private async untilAborted(signal: AbortSignal): Promise<void> {
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener("abort", () => resolve(), { once: true });
    });
    this.markAborted();
  }

  private placed<T>(result: T): Placed<T> {
    return { zone: this.zone, machine: "fake-1", result };
  }

  private async *stream<T>(chunks: T[], signal: AbortSignal): AsyncIterable<T> {
    const mode = this.streamMode;
    if (mode.kind === "hang") {
      yield chunks[0] as T;
      await this.untilAborted(signal);
      throw new UpstreamError("aborted", "the client went away");
    }
    for (const [i, chunk] of chunks.entries()) {
      if (mode.kind === "fail-after" && i === mode.chunks)
        throw new UpstreamError("protocol", "connection dropped");
      yield chunk;
    }
  }
}

/** The fake's embedding of a text: small values that survive float32 exactly. */
export function vectorOf(text: string): number[] {
  return [text.length / 8, -0.5, 0.25, (text.charCodeAt(0) % 16) / 16];
}
