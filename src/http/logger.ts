import type { FastifyInstance, FastifyRequest } from "fastify";
import type { LoggerOptions } from "pino";
import type { RequestTrace } from "../trace/request-trace.ts";
import { serializeError } from "./log-errors.ts";
import { CLIENT_CLOSED_REQUEST, onUnfinishedRequest } from "./unfinished-requests.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /** Leaves the route out of the access log (health checks polled every few seconds). */
    quiet?: boolean;
  }
}

/** Options of the service's JSON logger; secrets are never written. */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    base: { service: "zona" },
    serializers: { err: serializeError },
    redact: {
      paths: [
        "req.headers.authorization",
        "headers.authorization",
        "authorization",
        "password",
        "*.password",
        "api_key",
        "*.api_key",
        "key",
        "*.key",
        "admin_token",
        "*.admin_token",
      ],
      censor: "[redacted]",
    },
  };
}

/**
 * One log line per request: the request id, the client's own id if it sent one, and what the
 * request's trace learnt on the way (key id, never the key; model, machine, zone, upstream time,
 * tokens, cost), only the fields that were set. Routes configured `quiet` are not logged.
 */
export function installAccessLog(app: FastifyInstance): void {
  app.addHook("onResponse", (request, reply, done) => {
    logRequest(request, reply.statusCode, reply.elapsedTime);
    done();
  });
  onUnfinishedRequest(app, (request, elapsedMs) => logRequest(request, CLIENT_CLOSED_REQUEST, elapsedMs));
}

const INFO_OR_LOWER = new Set(["info", "debug", "trace"]);

function logRequest(request: FastifyRequest, status: number, elapsedMs: number): void {
  // The line is not even built when the level leaves it out (the hot path runs at warn in benchmarks).
  if (!INFO_OR_LOWER.has(request.log.level) || request.routeOptions.config?.quiet === true) return;
  const clientId = request.headers["x-request-id"];
  const trace = request.trace;
  request.log.info(
    {
      method: request.method,
      path: request.url.split("?", 1)[0],
      status,
      ms: Math.round(elapsedMs * 100) / 100,
      ...(typeof clientId === "string" ? { client_request_id: clientId.slice(0, 200) } : {}),
      ...(trace ? traceFields(trace) : {}),
    },
    "request",
  );
}

// Only what was set: a request refused before its key was read has no key id, one without a machine no zone.
function traceFields(trace: RequestTrace): Record<string, string | number> {
  const fields: Record<string, string | number> = {};
  if (trace.keyId !== undefined) fields.key_id = trace.keyId;
  if (trace.model !== undefined) fields.model = trace.model;
  if (trace.tier !== undefined) fields.tier = trace.tier;
  if (trace.machine !== undefined) fields.machine = trace.machine;
  if (trace.zone !== undefined) fields.zone = trace.zone;
  if (trace.upstreamMs !== undefined) fields.upstream_ms = trace.upstreamMs;
  if (trace.firstTokenMs !== undefined) fields.first_token_ms = trace.firstTokenMs;
  if (trace.promptTokens !== undefined) fields.prompt_tokens = trace.promptTokens;
  if (trace.completionTokens !== undefined) fields.completion_tokens = trace.completionTokens;
  if (trace.cost !== undefined) fields.cost = trace.cost;
  return fields;
}
