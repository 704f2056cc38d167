import type { FastifyInstance } from "fastify";
import type { Services } from "../../services/services.ts";
import { operatorApi } from "./operator-api.ts";

type Id = { Params: { id: string } };

/** Accounts of the operator API. */
export async function adminAccountRoutes(app: FastifyInstance, options: { services: Services }) {
  const operator = operatorApi(options.services.operator);
  app.post("/accounts", async (request, reply) =>
    reply.code(201).send(await operator.createAccount(request.body)),
  );
  app.get("/accounts", (request) => operator.listAccounts(request.query));
  app.get<Id>("/accounts/:id", (request) => operator.getAccount(request.params.id));
  app.post<Id>("/accounts/:id/disable", (request) => operator.setAccountDisabled(request.params.id, true));
  app.post<Id>("/accounts/:id/enable", (request) => operator.setAccountDisabled(request.params.id, false));
  app.post<Id>("/accounts/:id/verify-email", (request) => operator.verifyEmail(request.params.id));
}
