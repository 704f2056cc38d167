import type { ServerResponse } from "node:http";
import type { FastifyRequest } from "fastify";
import type { KbEvent, KbSource } from "../../contract/app-api.ts";
import type { ChatChunk } from "../../engines/types.ts";
import { UpstreamError } from "../../engines/types.ts";
import { drained } from "../../http/event-stream-response.ts";

/**
 * Writes the answer of `POST /rag/kb/{slug}/chat` as server-sent events, as chat sessions do
 * (`data: <json>` lines, status 200 whatever follows): first `sources` (the passages
 * the model was given, numbered as the answer cites them), then `delta` pieces, then `done`; a
 * model that stops mid-answer gives `error` then `done` with `outcome` `error`. When the client goes
 * away the chunks are still read to their end (the text service then settles what was generated).
 * Never throws.
 */
export async function sendKbEvents(
  request: FastifyRequest,
  response: ServerResponse,
  sources: KbSource[],
  chunks: AsyncIterable<ChatChunk>,
  started: number,
): Promise<void> {
  let promptTokens = 0;
  let completionTokens = 0;
  try {
    await write(response, { type: "sources", sources });
    try {
      for await (const chunk of chunks) {
        if (chunk.usage) {
          promptTokens = chunk.usage.prompt_tokens;
          completionTokens = chunk.usage.completion_tokens;
        }
        for (const choice of chunk.choices) {
          const piece = choice.delta.content;
          if (piece) await write(response, { type: "delta", text: piece });
        }
      }
    } catch (error) {
      if (!(error instanceof UpstreamError))
        request.log.error({ err: error }, "knowledge-base answer failed");
      await write(response, {
        type: "error",
        code: "upstream_error",
        message: "The model stopped answering before the answer was complete.",
      });
      await write(response, done(0, 0, started, "error"));
      return;
    }
    await write(response, done(promptTokens, completionTokens, started, "ok"));
  } finally {
    if (!response.writableEnded && !response.destroyed) response.end();
  }
}

function done(prompt: number, completion: number, started: number, outcome: "ok" | "error"): KbEvent {
  return {
    type: "done",
    prompt_tokens: prompt,
    completion_tokens: completion,
    latency_ms: Math.round(performance.now() - started),
    outcome,
  };
}

async function write(response: ServerResponse, event: KbEvent): Promise<void> {
  if (response.destroyed || response.writableEnded) return;
  if (!response.write(`data: ${JSON.stringify(event)}\n\n`)) await drained(response);
}
