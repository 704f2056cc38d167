import type { ServerResponse } from "node:http";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ChatEvent } from "../../contract/app-api.ts";
import { drained, openEventStream } from "../../http/event-stream-response.ts";
import type { Exchange } from "../../services/chat/chat-exchange.ts";

/**
 * Writes the answer of `POST /chat/sessions/{id}/messages` (docs/app-chat.md#events): status 200 with the
 * reply's headers so far (`X-Request-Id`, rate-limit headers) and `X-Zona` when a machine took the
 * answer, then one `data: <json>` line and an empty line per event. The status stays 200 whatever
 * follows. When the client goes away the events are still read to their end without being written:
 * the exchange, whose signal stopped the upstream, then saves and settles what was generated.
 * A fault of the exchange itself ends the stream with `error` and `done`. Never throws.
 */
export async function sendChatEvents(
  request: FastifyRequest,
  reply: FastifyReply,
  exchange: Exchange,
  started: number,
): Promise<void> {
  const response = openEventStream(reply, exchange.zone);
  let ended = false;
  try {
    for await (const event of exchange.events) {
      await write(response, event);
      if (event.type === "done") ended = true;
    }
  } catch (error) {
    request.log.error({ err: error }, "chat answer failed after the stream started");
    if (!ended) {
      await write(response, {
        type: "error",
        code: "upstream_error",
        message: "The answer could not be completed.",
      });
      await write(response, {
        type: "done",
        prompt_tokens: 0,
        completion_tokens: 0,
        latency_ms: Math.round(performance.now() - started),
        outcome: "error",
        title_job_queued: false,
      });
    }
  } finally {
    if (!response.writableEnded && !response.destroyed) response.end();
  }
}

async function write(response: ServerResponse, event: ChatEvent): Promise<void> {
  if (response.destroyed || response.writableEnded) return;
  if (!response.write(`data: ${JSON.stringify(event)}\n\n`)) await drained(response);
}
