import type { FastifyInstance } from "fastify";
import type { ChatChunk, TextChunk } from "../../engines/types.ts";
import { endpointLimit } from "../../limits/endpoint-limits.ts";
import type { Services } from "../../services/services.ts";
import { streamedChunk } from "./chat-completions.ts";
import { sendEventStream } from "./sse.ts";
import { generationContext, isJsonBody } from "./text-context.ts";
import { validateCompletion } from "./wire/validate-completion.ts";

/**
 * `POST /v1/completions`: a `text_completion` answer, or a stream of chat-completion chunks
 * with the text in `delta.content`; each streamed choice also carries it as `text`, where the
 * text-completion clients (the `openai` SDK's `completions.create`, LangChain's `OpenAI`) read it.
 */
export async function completionsRoutes(app: FastifyInstance, options: { services: Services }) {
  const { services } = options;
  app.post("/completions", { config: endpointLimit("completions") }, async (request, reply) => {
    const valid = validateCompletion(request.body, {
      json: isJsonBody(request),
      catalogue: services.catalogue,
    });
    const { context, controller } = generationContext(request, reply, "completions");
    if (valid.stream) {
      const placed = await services.text.completeStream(valid.call, context);
      const toChat = chatChunkConverter();
      await sendEventStream(request, reply, placed, controller, (chunk) =>
        streamedChunk(toChat(chunk), valid.includeUsage),
      );
      return reply;
    }
    const placed = await services.text.complete(valid.call, context);
    return reply.header("x-zona", placed.zone).send(placed.result);
  });
}

/**
 * Turns the text chunks of one stream into chat chunks, each choice's text both in `delta.content`
 * and as `text`; the first chunk of each choice names the role.
 */
export function chatChunkConverter(): (chunk: TextChunk) => ChatChunk {
  const started = new Set<number>();
  return (chunk) => {
    const out: ChatChunk = {
      id: chunk.id,
      object: "chat.completion.chunk",
      created: chunk.created,
      model: chunk.model,
      choices: chunk.choices.map((choice) => {
        const delta: ChatChunk["choices"][number]["delta"] = {};
        if (!started.has(choice.index)) {
          started.add(choice.index);
          delta.role = "assistant";
        }
        if (choice.text !== "") delta.content = choice.text;
        return {
          index: choice.index,
          delta,
          text: choice.text,
          finish_reason: choice.finish_reason,
          logprobs: null,
        };
      }),
    };
    if (chunk.usage !== undefined) out.usage = chunk.usage;
    return out;
  };
}
