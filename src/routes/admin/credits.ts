import type { FastifyInstance } from "fastify";
import type { Services } from "../../services/services.ts";
import { operatorApi } from "./operator-api.ts";

type Id = { Params: { id: string } };

/** Prepaid credits of the operator API: read, set, add. */
export async function adminCreditRoutes(app: FastifyInstance, options: { services: Services }) {
  const operator = operatorApi(options.services.operator);
  app.get<Id>("/accounts/:id/credits", (request) => operator.getCredits(request.params.id));
  app.put<Id>("/accounts/:id/credits", (request) => operator.setCredits(request.params.id, request.body));
  app.post<Id>("/accounts/:id/credits", (request) => operator.addCredits(request.params.id, request.body));
}
