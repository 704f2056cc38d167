import type { FastifyInstance } from "fastify";
import type { Services } from "../../services/services.ts";
import { operatorApi } from "./operator-api.ts";

/** The mail the service wrote (`?pending=true`: the outbox), so an operator without SMTP can pass links on. */
export async function adminMailRoutes(app: FastifyInstance, options: { services: Services }) {
  const operator = operatorApi(options.services.operator);
  app.get("/mail", (request) => operator.listMail(request.query));
}
