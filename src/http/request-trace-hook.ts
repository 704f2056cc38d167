import type { FastifyInstance } from "fastify";
import type { RequestTrace } from "../trace/request-trace.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** This request's trace (see RequestTrace). */
    trace: RequestTrace;
  }
}

/** Gives every request a fresh trace before anything else runs. */
export function installRequestTrace(app: FastifyInstance): void {
  app.decorateRequest("trace", null as unknown as RequestTrace);
  app.addHook("onRequest", (request, _reply, done) => {
    request.trace = { requestId: request.id, startedAt: performance.now() };
    done();
  });
}
