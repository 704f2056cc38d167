import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";

/** A new request id: the service's own, never the client's. */
export function newRequestId(): string {
  return `req_${randomUUID().replaceAll("-", "")}`;
}

/** Puts the request id on every response, errors and 404s included. */
export function installRequestId(app: FastifyInstance): void {
  app.addHook("onRequest", (request, reply, done) => {
    reply.header("x-request-id", request.id);
    done();
  });
}
