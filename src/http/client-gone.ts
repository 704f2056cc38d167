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
