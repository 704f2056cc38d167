import type { FastifyInstance } from "fastify";
import type { OperatorApi } from "./operator-api.ts";

/** The mail the service wrote (`?pending=true`: the outbox), so an operator without SMTP can pass links on. */
export async function adminMailRoutes(app: FastifyInstance, options: { operator: OperatorApi }) {
  const { operator } = options;
  app.get("/mail", (request) => operator.listMail(request.query));
}
