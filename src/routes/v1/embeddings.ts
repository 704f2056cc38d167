import type { FastifyInstance } from "fastify";
import { endpointLimit } from "../../limits/endpoint-limits.ts";
import type { Services } from "../../services/services.ts";
import { generationContext } from "./text-context.ts";
import { validateEmbeddings } from "./wire/validate-embeddings.ts";

/** `POST /v1/embeddings`: always the catalogue's embedding model, vectors as floats or base64. */
export async function embeddingsRoutes(app: FastifyInstance, options: { services: Services }) {
  const { services } = options;
  app.post("/embeddings", { config: endpointLimit("embeddings") }, async (request, reply) => {
    const valid = validateEmbeddings(request.body);
    const { context } = generationContext(request, reply, "embeddings");
    const placed = await services.text.embed(valid.texts, context);
    const { vectors, promptTokens } = placed.result;
    return reply.header("x-zona", placed.zone).send({
      object: "list",
      data: vectors.map((vector, index) => ({
        object: "embedding",
        index,
        embedding: valid.encoding === "base64" ? base64Vector(vector) : vector,
      })),
      model: services.catalogue.firstOfKind("embedding")?.id ?? "bge-m3",
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    });
  });
}

/** A vector as OpenAI's `base64` encoding has it: little-endian float32 values, base64-encoded. */
export function base64Vector(vector: readonly number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((value, i) => {
    bytes.writeFloatLE(value, i * 4);
  });
  return bytes.toString("base64");
}
