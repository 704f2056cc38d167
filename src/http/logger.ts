import type { FastifyInstance } from "fastify";
import type { LoggerOptions } from "pino";

/** Options of the service's JSON logger; secrets are never written. */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    base: { service: "zona" },
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

/** One log line per request, with the request id and the client's own id if it sent one. */
export function installAccessLog(app: FastifyInstance): void {
  app.addHook("onResponse", (request, reply, done) => {
    const clientId = request.headers["x-request-id"];
    request.log.info(
      {
        method: request.method,
        path: request.url.split("?", 1)[0],
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 100) / 100,
        ...(typeof clientId === "string" ? { client_request_id: clientId.slice(0, 200) } : {}),
      },
      "request",
    );
    done();
  });
}
