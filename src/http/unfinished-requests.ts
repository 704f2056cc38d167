import type { FastifyInstance, FastifyRequest } from "fastify";

/** The status logged and counted for a request whose client left before its answer was complete. */
export const CLIENT_CLOSED_REQUEST = 499;

type Handler = (request: FastifyRequest, elapsedMs: number) => void;

const handlersOf = new WeakMap<FastifyInstance, Handler[]>();

/**
 * Calls `handler` once for every request whose connection closed before its answer was complete
 * (the client left mid-stream, or while the engine was still working). Fastify runs no
 * `onResponse` for those, and `onRequestAbort` only for requests whose body was not read. One
 * listener per request serves every handler of the app.
 */
export function onUnfinishedRequest(app: FastifyInstance, handler: Handler): void {
  const known = handlersOf.get(app);
  if (known) {
    known.push(handler);
    return;
  }
  const handlers = [handler];
  handlersOf.set(app, handlers);
  app.addHook("onRequest", (request, reply, done) => {
    const response = reply.raw;
    response.once("close", () => {
      if (response.writableFinished) return;
      const elapsedMs = performance.now() - request.trace.startedAt;
      for (const each of handlers) each(request, elapsedMs);
    });
    done();
  });
}
