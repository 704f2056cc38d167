import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { UpstreamError } from "../engines/types.ts";
import {
  ApiError,
  isFinal,
  payloadTooLarge,
  serverError,
  serviceUnavailable,
  unknownEndpoint,
} from "../errors/catalogue.ts";
import { databaseUnavailableCause } from "../store/database-unavailable.ts";
import { htmlErrorPage } from "./html-pages.ts";
import { lingerBeforeClose } from "./linger-close.ts";
import { type Surface, surfaceOf } from "./surface.ts";

/**
 * Installs the one error handler and the one not-found handler of the service. `before`, when
 * given, runs before an error is answered and may name another error to answer instead (a request
 * whose rate limits were still to be taken answers their 429).
 */
export function installErrorHandling(
  app: FastifyInstance,
  options: { before?: (request: FastifyRequest) => Promise<ApiError | undefined> | undefined } = {},
): void {
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?", 1)[0] ?? "/";
    return sendError(request, reply, unknownEndpoint(request.method, path));
  });
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const instead = options.before?.(request);
    if (instead) return instead.then((limited) => (limited ? sendError(request, reply, limited) : answer()));
    return answer();
    function answer(): FastifyReply {
      const unavailable = databaseUnavailableCause(error);
      const apiError = unavailable ? serviceUnavailable() : toApiError(error);
      if (unavailable)
        request.log.warn({ reason: unavailable.message }, "the database did not answer; answered 503");
      else if (apiError.status >= 500 && !(error instanceof ApiError) && !cancelledByClient(error, reply)) {
        request.log.error({ err: error }, "unexpected failure");
      }
      return sendError(request, reply, apiError);
    }
  });
  // A client that goes away before its answer is complete is no fault of the service: one info
  // line, without a stack; the upstream call it cancels is not logged again (above).
  app.addHook("onRequest", (request, reply, done) => {
    reply.raw.once("close", () => {
      if (!reply.raw.writableFinished)
        request.log.info("the client went away before the answer was complete");
    });
    done();
  });
  // Node's own 400 for an HTTP/1.1 request without Host has an empty body (the server is made with
  // `requireHostHeader: false`), so the service refuses it here, in the API's error shape.
  app.addHook("onRequest", (request, _reply, done) => {
    if (request.raw.httpVersion === "1.1" && request.headers.host === undefined) {
      const message = "An HTTP/1.1 request needs a Host header.";
      done(new ApiError({ status: 400, message, code: "missing_host" }));
    } else done();
  });
}

/**
 * Fastify's `frameworkErrors`: a URL the router cannot read (a bad percent-escape such as `%zz`, or a
 * path parameter over its length limit) is answered in the API's error shape, with the request id, rather
 * than in Fastify's own body (key-api-fuzz).
 */
export function sendFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header("x-request-id", request.id);
  if (error.code === "FST_ERR_BAD_URL") {
    const message = "The request URL is not valid: it has a malformed percent-encoding.";
    sendError(request, reply, new ApiError({ status: 400, message, code: "invalid_url" }));
  } else if (error.code === "FST_ERR_MAX_PARAM_LENGTH") {
    const message = "The request URL has a path segment that is too long.";
    sendError(request, reply, new ApiError({ status: 414, message, code: "invalid_url" }));
  } else {
    sendError(request, reply, serverError());
  }
}

/**
 * Fastify's `clientErrorHandler`: a request Node's HTTP parser refuses (headers over its limit, a bad
 * Content-Length or Transfer-Encoding, bytes that are not HTTP) is answered like Fastify's default,
 * but in the APIs' error shape. The path may be unknown, so the body suits both APIs: `code` and
 * `message` for the app API, `type` and `param` besides for the key and operator APIs.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const [status, code, message] =
    error.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? [408, "request_timeout", "The request was not received in time."]
      : error.code === "HPE_HEADER_OVERFLOW"
        ? [431, "request_header_fields_too_large", "The request's headers are too large."]
        : [400, "bad_request", "The request is not valid HTTP."];
  const body = JSON.stringify({ error: { message, type: "invalid_request_error", code, param: null } });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/** The upstream call was cancelled because the client closed the connection. */
function cancelledByClient(error: unknown, reply: FastifyReply): boolean {
  return (
    error instanceof UpstreamError &&
    error.kind === "aborted" &&
    reply.raw.destroyed &&
    !reply.raw.writableFinished
  );
}

/** Sends an error in the shape of the API the request came in on. */
export function sendError(request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  reply.code(error.status).headers(error.headers);
  if (isFinal(error)) reply.header("x-should-retry", "false");
  if (error.status === 413) lingerBeforeClose(reply.raw);
  if (error.shape === "html") {
    return reply.type("text/html; charset=utf-8").send(htmlErrorPage(error.status, request.id));
  }
  return reply
    .type("application/json; charset=utf-8")
    .send(errorBody(error, surfaceOf(request.url), request.id));
}

/**
 * Turns an answer about to be sent (in an `onSend` hook) into an error: its status and headers
 * set, the body to send instead returned.
 */
export function replaceWithError(request: FastifyRequest, reply: FastifyReply, error: ApiError): string {
  reply.removeHeader("content-length");
  reply.removeHeader("x-should-retry");
  reply.code(error.status).headers(error.headers);
  if (isFinal(error)) reply.header("x-should-retry", "false");
  reply.type("application/json; charset=utf-8");
  return JSON.stringify(errorBody(error, surfaceOf(request.url), request.id));
}

/** The JSON body of an error for one API (docs/admin-api.md#errors, docs/app-auth.md#errors). */
export function errorBody(error: ApiError, surface: Surface, requestId: string): Record<string, unknown> {
  if (error.shape === "message-only") return { message: error.message };
  if (surface === "app") {
    if (error.status === 404 && error.code === "not_found") return { message: error.message };
    if (error.shape === "validation") {
      return {
        message: error.message,
        error: { code: "validation_error", message: error.message },
        errors: error.fieldErrors ?? {},
      };
    }
    // The app API names every engine that did not answer one way.
    const code = error.status === 502 ? "upstream_unavailable" : (error.code ?? error.type);
    return { error: { code, message: error.message } };
  }
  const standard = {
    error: {
      message: error.message,
      type: error.type,
      code: error.code,
      param: error.param,
      request_id: requestId,
    },
  };
  if (error.shape === "validation") {
    return { ...standard, message: error.message, errors: error.fieldErrors ?? {} };
  }
  return standard;
}

/** Maps anything thrown to the catalogue; what is not known becomes a bare 500. */
function toApiError(error: FastifyError): ApiError {
  if (error instanceof ApiError) return error;
  if (error.code === "FST_ERR_CTP_BODY_TOO_LARGE") return payloadTooLarge();
  const status = error.statusCode ?? 500;
  // Fastify's own client errors (bad Content-Length, aborted body...) are safe to describe.
  if (error.code?.startsWith("FST_") && status >= 400 && status < 500) {
    return new ApiError({ status: status === 415 ? 400 : status, message: error.message });
  }
  return serverError();
}
