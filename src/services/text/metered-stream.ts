import type { TokenUsage } from "../../engines/types.ts";
import type { RequestTrace } from "../../trace/request-trace.ts";

/** How a stream ended, for billing. */
export interface StreamEnd {
  /** ok: it ended; partial: the consumer stopped (client gone); failed: the upstream broke off. */
  outcome: "ok" | "partial" | "failed";
  /** The upstream's own count, when its last chunk carried one. */
  usage: TokenUsage | undefined;
  /** Characters generated so far, to estimate a cut stream. */
  generatedCharacters: number;
}

interface Chunk {
  usage?: TokenUsage | null;
  choices: ReadonlyArray<{ delta?: { content?: string | null; tool_calls?: unknown[] }; text?: string }>;
}

/**
 * Passes a stream through while counting what it generated, and calls `onEnd` exactly once
 * however it ends: to the end, cut by the consumer or by `clientGone` (which stops the upstream
 * too), or broken off by the upstream. A stream that ran to its end finishes only once the promise
 * `onEnd` returns has settled (its usage record is written before the consumer sends the stream's
 * last event; if it rejects, so does the stream). The trace learns when the first generated token was sent.
 */
export function meteredStream<T extends Chunk>(
  first: T,
  rest: AsyncIterator<T>,
  clientGone: AbortSignal,
  onEnd: (end: StreamEnd) => Promise<void> | undefined,
  trace?: RequestTrace,
): AsyncIterable<T> {
  return {
    async *[Symbol.asyncIterator]() {
      let outcome: StreamEnd["outcome"] = "partial";
      let usage: TokenUsage | undefined;
      let characters = 0;
      const count = (chunk: T) => {
        if (chunk.usage) usage = chunk.usage;
        for (const choice of chunk.choices) characters += (choice.delta?.content ?? choice.text ?? "").length;
      };
      // The consumer asks for the next chunk once it has sent this one: that is when a token went out.
      const sent = (chunk: T) => {
        if (trace && trace.firstTokenMs === undefined && generates(chunk)) {
          trace.firstTokenMs = performance.now() - trace.startedAt;
        }
      };
      try {
        count(first);
        yield first;
        sent(first);
        for (;;) {
          const next = await rest.next();
          if (next.done) break;
          count(next.value);
          yield next.value;
          sent(next.value);
        }
        outcome = "ok";
      } catch (error) {
        // Cancelling the upstream because the client left breaks the stream too: that is a cut, not a failure.
        outcome = clientGone.aborted ? "partial" : "failed";
        throw error;
      } finally {
        const closing = onEnd({ outcome, usage, generatedCharacters: characters });
        if (outcome === "ok") await closing;
        else {
          // Nobody is left to tell that a cut stream's record could not be written (the sweep frees its money).
          closing?.catch(() => {});
          await rest.return?.().catch(() => {});
        }
      }
    },
  };
}

// A chunk with output: text, or the start of a tool call (not the first chunk's bare role).
function generates(chunk: Chunk): boolean {
  for (const choice of chunk.choices) {
    if (choice.text || choice.delta?.content || choice.delta?.tool_calls?.length) return true;
  }
  return false;
}
