import type { FastifyPluginAsync } from "fastify";
import { toMicros } from "../../src/billing/money.ts";
import { ApiError } from "../../src/errors/catalogue.ts";
import type { KeyPrincipal } from "../../src/services/api-keys.ts";

/** Cost of one chunk of the test stream. */
export const CHUNK_COST = 0.01;
/** Chunks the test stream sends when nobody cuts it. */
export const STREAM_CHUNKS = 50;

/**
 * Key-API routes that pay through the billing service the way real endpoints do (reserve -> run ->
 * settle or release), standing in for the engines until they exist.
 */
export const billedTestRoutes: FastifyPluginAsync = async (app) => {
  app.post("/test-billed", async (request) => {
    const body = request.body as { max: number; cost: number; fail?: boolean; invalid?: boolean };
    if (body.invalid) throw new ApiError({ status: 400, message: "refused before anything runs" });
    return app.services.billing.charge(
      {
        requestId: request.id,
        principal: request.principal as KeyPrincipal,
        endpoint: "test.billed",
        model: "test-model",
        maxCostMicros: toMicros(body.max),
      },
      async () => {
        if (body.fail)
          throw new ApiError({ status: 502, type: "bad_gateway", message: "no machine answered" });
        return { result: { ok: true }, measured: { costMicros: toMicros(body.cost), units: { things: 1 } } };
      },
    );
  });

  app.post("/test-stream", async (request, reply) => {
    const reservation = await app.services.billing.reserve({
      requestId: request.id,
      principal: request.principal as KeyPrincipal,
      endpoint: "test.stream",
      model: "test-model",
      maxCostMicros: toMicros(STREAM_CHUNKS * CHUNK_COST),
    });
    reply.hijack();
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) reply.raw.setHeader(name, value);
    }
    reply.raw.writeHead(200, { "content-type": "text/event-stream" });
    let sent = 0;
    const measured = (outcome: "ok" | "partial") => ({
      costMicros: toMicros(sent * CHUNK_COST),
      units: { chunks: sent },
      outcome,
    });
    const timer = setInterval(() => {
      if (sent >= STREAM_CHUNKS) {
        clearInterval(timer);
        reply.raw.end("data: [DONE]\n\n");
        void reservation.settle(measured("ok"));
        return;
      }
      sent += 1;
      reply.raw.write(`data: {"chunk":${sent}}\n\n`);
    }, 10);
    reply.raw.on("close", () => {
      clearInterval(timer);
      if (sent < STREAM_CHUNKS) void reservation.settle(measured("partial"));
    });
  });
};
