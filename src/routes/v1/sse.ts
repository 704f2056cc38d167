import type { FastifyReply, FastifyRequest } from "fastify";
import { UpstreamError } from "../../engines/types.ts";
import { ApiError } from "../../errors/catalogue.ts";
import { drained, openEventStream } from "../../http/event-stream-response.ts";
import type { Placed } from "../../services/text/text-generation.ts";

/** The object of the `error` event that ends a failed stream. */
export interface StreamErrorObject {
  message: string;
  type: string;
  code: string | null;
}

/**
 * Writes a stream of the key API as server-sent events: status 200 with the reply's headers so far
 * (`X-Request-Id`, rate-limit headers) and `X-Zona`, one `data: <json>` event per chunk that `map`
 * keeps (undefined drops it), then `data: [DONE]`. A failure while iterating ends the stream with one
 * `data: {"error": {...}}` event and no `[DONE]`; the status stays 200. When the client
 * goes away the loop stops and `controller` is aborted, which cancels the upstream. Never throws.
 */
export async function sendEventStream<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  placed: Placed<AsyncIterable<T>>,
  controller: AbortController,
  map: (chunk: T) => unknown,
): Promise<void> {
  const response = openEventStream(reply, placed.zone);
  let gone = response.destroyed;
  const onClose = () => {
    if (response.writableEnded) return;
    gone = true;
    controller.abort();
  };
  response.once("close", onClose);
  try {
    for await (const chunk of placed.result) {
      if (gone) break; // leaving the loop returns the iterator: the service settles what was used
      const data = map(chunk);
      if (data === undefined) continue;
      if (!response.write(`data: ${JSON.stringify(data)}\n\n`)) await drained(response);
    }
    if (!gone) response.end("data: [DONE]\n\n");
  } catch (error) {
    if (gone) return;
    request.log.warn({ err: error }, "stream failed after it started");
    response.end(`data: ${JSON.stringify({ error: streamError(error) })}\n\n`);
  } finally {
    if (!response.writableEnded && !response.destroyed) response.end();
    response.off("close", onClose);
  }
}

/** What the `error` event of a failed stream says: the catalogue's words, or a plain upstream failure. */
export function streamError(error: unknown): StreamErrorObject {
  if (error instanceof ApiError) return { message: error.message, type: error.type, code: error.code };
  const message =
    error instanceof UpstreamError && error.kind === "timeout"
      ? "The model stopped answering before the answer was complete (timeout)."
      : "The model stopped answering before the answer was complete.";
  return { message, type: "server_error", code: "upstream_error" };
}
