import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { originNotAllowed, unknownEndpoint } from "../errors/catalogue.ts";
import { PREFIX, surfaceOf } from "./surface.ts";

// The headers of Zona's answers a browser page may read (the SDKs read the limits and the retry hint).
const EXPOSED_HEADERS = [
  "X-Request-Id",
  "X-Zona",
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
  "Retry-After",
  "X-Voice",
  "X-Duration-Seconds",
  "X-Should-Retry",
].join(", ");
const ALLOWED_METHODS = "GET, POST, PUT, PATCH, DELETE";
// When a preflight names no headers: what the APIs read from a browser.
const DEFAULT_ALLOWED_HEADERS = "Authorization, Content-Type, X-Service-Tier, X-Request-Id";
const MAX_AGE_SECONDS = "600";
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;

/**
 * CORS for the key API (`/v1`) and the app API (`/api/v1`), for the origins `origins()` lists
 * (`server.cors_origins`, read per request so a reload holds at once; `*` is every origin). With
 * none listed nothing changes: no CORS header, and an OPTIONS request is 404 `unknown_endpoint`.
 * Otherwise a preflight is answered 204 (403 `origin_not_allowed` for an origin not listed) before
 * any key check or limit, and every answer to a listed origin, errors and streams included, carries
 * `Access-Control-Allow-Origin` and the exposed headers. The operator API never gets CORS.
 */
export function installCors(app: FastifyInstance, origins: () => readonly string[]): void {
  // onRequest, before any other hook can refuse, so errors carry the headers too; streams written
  // on the raw response copy the reply's headers (event-stream-response.ts).
  app.addHook("onRequest", (request, reply, done) => {
    const allowed = origins();
    if (allowed.length > 0 && isCorsPath(request.url)) {
      reply.header("vary", "Origin");
      const origin = grantedOrigin(request.headers.origin, allowed);
      if (origin !== undefined) {
        reply.header("access-control-allow-origin", origin);
        reply.header("access-control-expose-headers", EXPOSED_HEADERS);
      }
    }
    done();
  });

  const preflight = async (request: FastifyRequest, reply: FastifyReply) => {
    const allowed = origins();
    const origin = request.headers.origin;
    const method = request.headers["access-control-request-method"];
    if (allowed.length === 0 || typeof origin !== "string" || typeof method !== "string") {
      throw unknownEndpoint(request.method, request.url.split("?", 1)[0] ?? "/");
    }
    if (grantedOrigin(origin, allowed) === undefined) throw originNotAllowed(origin);
    return reply
      .code(204)
      .headers({
        "access-control-allow-methods": ALLOWED_METHODS,
        "access-control-allow-headers": requestedHeaders(request) ?? DEFAULT_ALLOWED_HEADERS,
        "access-control-max-age": MAX_AGE_SECONDS,
        vary: "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
      })
      .send();
  };
  for (const prefix of [PREFIX.key, PREFIX.app]) {
    app.options(prefix, preflight);
    app.options(`${prefix}/*`, preflight);
  }
}

function isCorsPath(url: string): boolean {
  const surface = surfaceOf(url);
  return surface === "key" || surface === "app";
}

/** The `Access-Control-Allow-Origin` value for a request's origin, or undefined when it is not allowed. */
function grantedOrigin(origin: string | undefined, allowed: readonly string[]): string | undefined {
  if (origin === undefined) return undefined;
  if (allowed.includes("*")) return "*";
  const wanted = origin.toLowerCase();
  return allowed.some((entry) => entry.toLowerCase() === wanted) ? origin : undefined;
}

/**
 * The headers the preflight asks for, echoed: the SDKs send their own (`x-stainless-*`), and
 * `Authorization` is never covered by a `*`. Names that are not header names are dropped.
 */
function requestedHeaders(request: FastifyRequest): string | undefined {
  const asked = request.headers["access-control-request-headers"];
  if (typeof asked !== "string") return undefined;
  const names = asked
    .split(",")
    .map((name) => name.trim())
    .filter((name) => HEADER_NAME.test(name));
  return names.length > 0 ? names.join(", ") : undefined;
}
