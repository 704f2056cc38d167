import type { FastifyInstance, FastifyRequest } from "fastify";

/** The status logged and counted for a request whose client left before its answer was complete. */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * Calls `handler` once for every request whose connection closed before its answer was complete
 * (the client left mid-stream, or while the engine was still working). Fastify runs no
 * `onResponse` for those, and `onRequestAbort` only for requests whose body was not read.
 */
export function onUnfinishedRequest(
  app: FastifyInstance,
  handler: (request: FastifyRequest, elapsedMs: number) => void,
): void {
  app.addHook("onRequest", (request, reply, done) => {
    const response = reply.raw;
    response.once("close", () => {
      if (!response.writableFinished) handler(request, performance.now() - request.trace.startedAt);
    });
    done();
  });
}
