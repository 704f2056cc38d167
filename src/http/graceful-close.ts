import type { FastifyInstance } from "fastify";

/**
 * Stops accepting connections and resolves once every request in flight has been answered.
 * Fastify closes the connections that are idle when closing starts; a keep-alive connection
 * whose request finishes later would keep the server open until the client hangs up, so idle
 * connections are swept until the server is closed.
 */
export async function closeGracefully(app: FastifyInstance): Promise<void> {
  const sweeper = setInterval(() => app.server.closeIdleConnections(), 50);
  try {
    await app.close();
  } finally {
    clearInterval(sweeper);
  }
}
