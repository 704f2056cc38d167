import type { FastifyInstance } from "fastify";
import type { Services } from "../../services/services.ts";
import { operatorApi } from "./operator-api.ts";

type Id = { Params: { id: string } };

/** API keys of the operator API; the secret is in the answer of the create call only. */
export async function adminKeyRoutes(app: FastifyInstance, options: { services: Services }) {
  const operator = operatorApi(options.services.operator);
  app.post<Id>("/accounts/:id/keys", async (request, reply) =>
    reply.code(201).send(await operator.createKey(request.params.id, request.body)),
  );
  app.get<Id>("/accounts/:id/keys", (request) => operator.listKeys({ account_id: request.params.id }));
  app.get("/keys", (request) => operator.listKeys(request.query));
  app.get<Id>("/keys/:id", (request) => operator.getKey(request.params.id));
  app.patch<Id>("/keys/:id", (request) => operator.updateKey(request.params.id, request.body));
  app.post<Id>("/keys/:id/revoke", (request) => operator.revokeKey(request.params.id));
}
