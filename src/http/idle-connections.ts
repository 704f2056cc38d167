import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";

const SWEEP_EVERY_MS = 50;

/**
 * Lets `app.close()` finish as soon as the requests in flight are answered. Node closes the
 * connections that are idle when closing starts; a keep-alive connection whose request ends later,
 * or a connection a client opened and never used (fetch opens spare ones), would hold the close
 * until a timeout. While closing, every connection without a request in flight is closed.
 */
export function closeIdleConnectionsOnClose(app: FastifyInstance): void {
  const idle = new Set<Socket>();
  app.server.on("connection", (socket: Socket) => {
    idle.add(socket);
    socket.once("close", () => idle.delete(socket));
  });
  app.server.on("request", (request, response) => {
    const socket = request.socket;
    idle.delete(socket);
    response.once("close", () => {
      if (!socket.destroyed) idle.add(socket);
    });
  });
  let sweeper: NodeJS.Timeout | undefined;
  app.addHook("preClose", (done) => {
    const sweep = () => {
      for (const socket of idle) socket.destroy();
      idle.clear();
    };
    sweep();
    sweeper = setInterval(sweep, SWEEP_EVERY_MS);
    done();
  });
  app.addHook("onClose", (_instance, done) => {
    if (sweeper) clearInterval(sweeper);
    done();
  });
}
