// Helpers of answers written straight to the socket: server-sent events and their clients.
import type { ServerResponse } from "node:http";
import type { FastifyReply } from "fastify";

/**
 * A controller aborted when the connection closes before the answer was written (the client went
 * away), so that the upstream request is cancelled and the money settled for what was used.
 */
export function abortWhenClientLeaves(reply: FastifyReply): AbortController {
  const controller = new AbortController();
  const response = reply.raw;
  if (response.destroyed) controller.abort();
  else {
    response.once("close", () => {
      if (!response.writableEnded) controller.abort();
    });
  }
  return controller;
}

/** Resolves when a response that refused a write can take more, or has closed. */
export function drained(response: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      response.off("drain", done);
      response.off("close", done);
      resolve();
    };
    response.on("drain", done);
    response.on("close", done);
  });
}

/**
 * Takes the response over from Fastify and starts a `text/event-stream`: status 200 with the
 * headers the reply has so far (`X-Request-Id`, rate-limit headers) and `X-Zona` when a zone
 * served it. The status cannot change once this ran.
 */
export function openEventStream(reply: FastifyReply, zone: string | null): ServerResponse {
  reply.hijack();
  const response = reply.raw;
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) response.setHeader(name, value);
  }
  response.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
    ...(zone !== null ? { "x-zona": zone } : {}),
  });
  response.flushHeaders();
  return response;
}
