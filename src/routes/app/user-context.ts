import type { FastifyReply, FastifyRequest } from "fastify";
import type { Payer } from "../../billing/payer.ts";
import { abortWhenClientLeaves } from "../../http/event-stream-response.ts";
import type { GenerationContext } from "../../services/text/text-generation.ts";
import { requireUser } from "./app-user.ts";

/**
 * The generation context of a signed-in user: the account pays (no key, so no key's monthly limit),
 * in the installation's zones, at the slow tier unless the caller says otherwise. Its signal is
 * aborted when the connection closes before the answer was written (the client went away).
 */
export function userContext(
  request: FastifyRequest,
  reply: FastifyReply,
  endpoint: string,
): GenerationContext {
  const user = requireUser(request);
  const payer: Payer = { keyId: null, accountId: user.id, zones: null, monthlyLimitMicros: null };
  const controller = abortWhenClientLeaves(reply);
  return {
    requestId: request.id,
    principal: payer,
    tier: "slow",
    endpoint,
    signal: controller.signal,
    trace: request.trace,
  };
}
