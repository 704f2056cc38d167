import type { FastifyInstance } from "fastify";
import type { Services } from "../../services/services.ts";
import { operatorApi } from "./operator-api.ts";

type Id = { Params: { id: string } };

/** The catalogue of the operator API, and activation of models served on request. */
export async function adminModelRoutes(app: FastifyInstance, options: { services: Services }) {
  const operator = operatorApi(options.services.operator);
  app.get("/models", () => operator.listModels());
  app.post<Id>("/models/:id/activate", (request) => operator.setModelActive(request.params.id, true));
  app.post<Id>("/models/:id/deactivate", (request) => operator.setModelActive(request.params.id, false));
}

type Slug = { Params: { slug: string } };

/** Knowledge bases of the operator API: all of them, and which are shared with every key. */
export async function adminKnowledgeBaseRoutes(app: FastifyInstance, options: { services: Services }) {
  const operator = operatorApi(options.services.operator);
  app.get("/knowledge-bases", () => operator.listKnowledgeBases());
  app.post<Slug>("/knowledge-bases/:slug/share", (request) =>
    operator.setKnowledgeBaseShared(request.params.slug, true),
  );
  app.post<Slug>("/knowledge-bases/:slug/unshare", (request) =>
    operator.setKnowledgeBaseShared(request.params.slug, false),
  );
}
