import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { invalidAdminToken } from "../../http/errors.ts";

/** Lets through only requests bearing the operator token (compared in constant time). */
export function installAdminAuth(app: FastifyInstance, adminToken: string): void {
  const expected = digest(adminToken);
  app.addHook("onRequest", async (request) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "");
    if (!match?.[1] || !timingSafeEqual(digest(match[1]), expected)) throw invalidAdminToken();
  });
}

// Hashing first makes both sides the same length, so the comparison leaks nothing, not even the length.
function digest(token: string): Buffer {
  return createHash("sha256").update(token).digest();
}
