import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { rerankNotImplemented } from "../../errors/catalogue.ts";
import { endpointLimit } from "../../limits/endpoint-limits.ts";
import type { Services } from "../../services/services.ts";
import { estimateTokens } from "../../services/text/token-bounds.ts";
import { generationContext } from "./text-context.ts";
import { validateRerank } from "./wire/validate-rerank.ts";

/**
 * `POST /v1/rerank`: always the catalogue's rerank model; 501 `not_implemented` where the catalogue
 * has none. The answer is the Cohere/Jina shape that LiteLLM and TEI clients read:
 * `{id, model, results: [{index, relevance_score, document?: {text}}], usage: {total_tokens}}`,
 * best first, cut to `top_n`.
 */
export async function rerankRoutes(app: FastifyInstance, options: { services: Services }) {
  const { services } = options;
  app.post("/rerank", { config: endpointLimit("rerank") }, async (request, reply) => {
    const model = services.catalogue.firstOfKind("rerank");
    if (!model) throw rerankNotImplemented();
    const valid = validateRerank(request.body);
    const { context } = generationContext(request, reply, "rerank");
    const placed = await services.text.rerank(valid.query, valid.documents, context);
    const results = [...placed.result]
      .sort((a, b) => b.relevance_score - a.relevance_score)
      .slice(0, valid.topN)
      .map(({ index, relevance_score }) => {
        const text = valid.documents[index];
        return valid.returnDocuments && text !== undefined
          ? { index, relevance_score, document: { text } }
          : { index, relevance_score };
      });
    // The same estimate the service bills: the query is read once with every document.
    const tokens = valid.documents.reduce(
      (sum, d) => sum + estimateTokens(valid.query) + estimateTokens(d),
      0,
    );
    return reply.header("x-zona", placed.zone).send({
      id: randomUUID(),
      model: model.id,
      results,
      usage: { total_tokens: tokens },
    });
  });
}
