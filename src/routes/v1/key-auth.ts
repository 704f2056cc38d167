import type { FastifyInstance } from "fastify";
import type { ApiKeysService, KeyPrincipal } from "../../services/api-keys.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** The key that called the key API; set before anything else runs. */
    principal: KeyPrincipal | null;
  }
}

/** Checks the API key of every key-API route before the body is read or anything is counted. */
export function installKeyAuth(app: FastifyInstance, keys: ApiKeysService): void {
  app.addHook("onRequest", async (request) => {
    request.principal = await keys.authenticate(request.headers.authorization);
    // The key's id (never the key) goes into the request's log line.
    request.trace.keyId = request.principal.keyId;
  });
}
