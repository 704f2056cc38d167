import type { FastifyInstance } from "fastify";
import type { ChatChunk } from "../../engines/types.ts";
import { endpointLimit } from "../../limits/endpoint-limits.ts";
import type { Services } from "../../services/services.ts";
import { sendEventStream } from "./sse.ts";
import { generationContext, isJsonBody } from "./text-context.ts";
import { validateChat } from "./wire/validate-chat.ts";

/** `POST /v1/chat/completions`: an answer, or a stream of chunks (docs/text-api.md#chat-completions). */
export async function chatCompletionsRoutes(app: FastifyInstance, options: { services: Services }) {
  const { services } = options;
  app.post("/chat/completions", { config: endpointLimit("chatCompletions") }, async (request, reply) => {
    const valid = validateChat(request.body, { json: isJsonBody(request), catalogue: services.catalogue });
    const { context, controller } = generationContext(request, reply, "chat.completions");
    if (valid.stream) {
      const placed = await services.text.chatStream(valid.call, context);
      await sendEventStream(request, reply, placed, controller, (chunk) =>
        streamedChunk(chunk, valid.includeUsage),
      );
      return reply;
    }
    const placed = await services.text.chat(valid.call, context);
    return reply.header("x-zona", placed.zone).send(placed.result);
  });
}

/**
 * A chunk as the client sees it: the service's final usage chunk (no choices) only with
 * `stream_options.include_usage`, and then `usage: null` on the others, as OpenAI sends them.
 */
export function streamedChunk(chunk: ChatChunk, includeUsage: boolean): ChatChunk | undefined {
  if (chunk.choices.length === 0) return includeUsage && chunk.usage ? chunk : undefined;
  if (includeUsage) return chunk.usage === null ? chunk : { ...chunk, usage: null };
  if (!("usage" in chunk)) return chunk;
  const { usage: _usage, ...rest } = chunk;
  return rest;
}
