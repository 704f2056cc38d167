import type { FastifyReply, FastifyRequest } from "fastify";
import { serverError } from "../../errors/catalogue.ts";
import { abortWhenClientLeaves } from "../../http/event-stream-response.ts";
import type { GenerationContext } from "../../services/text/text-generation.ts";

/** A request's generation context and the controller that aborts it when the client goes away. */
export interface ContextHandle {
  context: GenerationContext;
  controller: AbortController;
}

/**
 * The context of one key-API request for the text service. Its signal is aborted when the
 * connection closes before the answer was written (the client went away), so the upstream request
 * is cancelled and the reservation settled for what was used.
 */
export function generationContext(
  request: FastifyRequest,
  reply: FastifyReply,
  endpoint: string,
): ContextHandle {
  const principal = request.principal;
  const tier = request.serviceTier;
  // Key authentication and the limiter run before every key-API route and set both.
  if (!principal || !tier) throw serverError();
  const controller = abortWhenClientLeaves(reply);
  return {
    context: {
      requestId: request.id,
      principal,
      tier,
      endpoint,
      signal: controller.signal,
      trace: request.trace,
    },
    controller,
  };
}

/**
 * Whether the body came as JSON. Without `Content-Type: application/json` it was read as a form
 * (or as nothing), which the chat-style endpoints answer with 422 for the missing fields rather than
 * 400 for the form's odd names.
 */
export function isJsonBody(request: FastifyRequest): boolean {
  const type = request.headers["content-type"];
  return typeof type === "string" && /^application\/json\s*(;|$)/i.test(type);
}
