import type { FastifyPluginAsync } from "fastify";
import type { ChatChunk } from "../../engines/types.ts";
import { endpointLimit } from "../../limits/endpoint-limits.ts";
import { sendEventStream } from "./sse.ts";
import { generationContext, isJsonBody, type TextRouteDeps } from "./text-context.ts";
import { validateChat } from "./wire/validate-chat.ts";

/** `POST /v1/chat/completions`: an answer, or a stream of chunks (docs/text-api.md#chat-completions). */
export function chatCompletionsRoutes(deps: TextRouteDeps): FastifyPluginAsync {
  return async (app) => {
    app.post("/chat/completions", { config: endpointLimit("chatCompletions") }, async (request, reply) => {
      const valid = validateChat(request.body, { json: isJsonBody(request), catalogue: deps.catalogue });
      const { context, controller } = generationContext(request, reply, "chat.completions");
      if (valid.stream) {
        const placed = await deps.text.chatStream(valid.call, context);
        await sendEventStream(request, reply, placed, controller, (chunk) =>
          streamedChunk(chunk, valid.includeUsage),
        );
        return reply;
      }
      const placed = await deps.text.chat(valid.call, context);
      return reply.header("x-zona", placed.zone).send(placed.result);
    });
  };
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
