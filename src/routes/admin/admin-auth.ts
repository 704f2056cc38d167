import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { invalidAdminToken } from "../../errors/catalogue.ts";

/** The bearer tokens the operator API accepts; at least one is set. */
export interface AdminCredentials {
  /** ZONA_ADMIN_TOKEN: from any address. */
  adminToken?: string | undefined;
  /** The credential the server wrote into its data folder for the `zona` command: from this machine only. */
  localToken?: string | undefined;
}

/** Lets through only requests bearing an operator credential (compared in constant time). */
export function installAdminAuth(app: FastifyInstance, credentials: AdminCredentials): void {
  const admin = credentials.adminToken ? digest(credentials.adminToken) : undefined;
  const local = credentials.localToken ? digest(credentials.localToken) : undefined;
  app.addHook("onRequest", async (request) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "");
    if (!match?.[1]) throw invalidAdminToken();
    const given = digest(match[1]);
    const asAdmin = admin !== undefined && timingSafeEqual(given, admin);
    const asLocal = local !== undefined && timingSafeEqual(given, local);
    if (!asAdmin && !(asLocal && fromThisMachine(request))) throw invalidAdminToken();
  });
}

/**
 * Whether the request comes from this machine: its connection (loopback, or from an address of this
 * machine to itself) and, behind a trusted proxy, the client the proxy names. A copy of the data
 * folder taken elsewhere (a backup) then cannot be used from another machine while the server runs.
 */
function fromThisMachine(request: FastifyRequest): boolean {
  const socket = request.socket;
  const local = (address: string | undefined) =>
    address !== undefined &&
    (address === "::1" || /^(::ffff:)?127\./.test(address) || address === socket.localAddress);
  return local(socket.remoteAddress) && local(request.ip);
}

// Hashing first makes both sides the same length, so the comparison leaks nothing, not even the length.
function digest(token: string): Buffer {
  return createHash("sha256").update(token).digest();
}
