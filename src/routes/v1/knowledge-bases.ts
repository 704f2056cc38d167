import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { serverError } from "../../errors/catalogue.ts";
import { abortWhenClientLeaves } from "../../http/event-stream-response.ts";
import { endpointLimit } from "../../limits/endpoint-limits.ts";
import type { Services } from "../../services/services.ts";
import type { GenerationContext } from "../../services/text/text-generation.ts";
import { validateQuestion } from "../wire/validate-kb.ts";

/**
 * The knowledge bases of the key API (docs/knowledge-bases.md#key-api): `GET /v1/knowledge-bases`
 * lists the bases of the key's account and the shared ones that have a ready document (not
 * limited), `POST /v1/knowledge-bases/{slug}/ask` answers a question with its sources, in the
 * installation's zones, billed at the chat model's prices (30 a minute on the shared counter).
 */
export async function knowledgeBaseRoutes(app: FastifyInstance, options: { services: Services }) {
  const { services } = options;
  app.get("/knowledge-bases", async (request) => {
    const accountId = principalOf(request).accountId;
    const bases = await services.knowledgeBases.list(accountId);
    return {
      object: "list",
      data: bases
        .filter((base) => base.ready_documents > 0)
        .map((base) => ({
          id: base.slug,
          object: "knowledge_base",
          name: base.name,
          description: base.description,
          shared: base.shared,
          documents: base.ready_documents,
          created_at: Math.floor(Date.parse(base.created_at) / 1000),
        })),
    };
  });

  app.post<{ Params: { slug: string } }>(
    "/knowledge-bases/:slug/ask",
    { config: endpointLimit("knowledgeBaseAsk") },
    async (request, reply) => {
      const principal = principalOf(request);
      const base = await services.knowledgeBases.readable(principal.accountId, request.params.slug);
      const question = validateQuestion(request.body);
      const context = askContext(request, reply);
      const prepared = await services.kbAsk.prepare(base, question, context);
      const answer = await services.kbAsk.answer(prepared, context);
      reply.header("x-zona", answer.zone);
      return {
        object: "knowledge_base.answer",
        knowledge_base: base.slug,
        model: answer.model,
        answer: answer.answer,
        sources: answer.sources,
        usage: answer.usage,
      };
    },
  );
}

function principalOf(request: FastifyRequest) {
  const principal = request.principal;
  if (!principal) throw serverError();
  return principal;
}

/** The key pays, but a knowledge base is asked in the installation's zones, not only the key's. */
function askContext(request: FastifyRequest, reply: FastifyReply): GenerationContext {
  const principal = principalOf(request);
  const tier = request.serviceTier;
  if (!tier) throw serverError();
  return {
    requestId: request.id,
    principal: { ...principal, zones: null },
    tier,
    endpoint: "knowledge_bases.ask",
    signal: abortWhenClientLeaves(reply).signal,
    trace: request.trace,
  };
}
