import type { FastifyInstance } from "fastify";
import type { Operator } from "../../services/operator.ts";

type Id = { Params: { id: string } };

/** The catalogue of the operator API, and activation of models served on request. */
export async function adminModelRoutes(app: FastifyInstance, options: { operator: Operator }) {
  const { operator } = options;
  app.get("/models", () => operator.listModels());
  app.post<Id>("/models/:id/activate", (request) => operator.setModelActive(request.params.id, true));
  app.post<Id>("/models/:id/deactivate", (request) => operator.setModelActive(request.params.id, false));
}
