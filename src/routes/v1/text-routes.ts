import type { FastifyInstance } from "fastify";
import type { Services } from "../../services/services.ts";
import { chatCompletionsRoutes } from "./chat-completions.ts";
import { completionsRoutes } from "./completions.ts";
import { embeddingsRoutes } from "./embeddings.ts";
import { rerankRoutes } from "./rerank.ts";
import { responsesRoutes } from "./responses.ts";

/**
 * The text endpoints of the key API (chat completions, completions, responses, embeddings, rerank)
 * over the text service and the catalogue; registered under `/v1` behind key auth and the limits.
 */
export async function textRoutes(app: FastifyInstance, options: { services: Services }) {
  await app.register(chatCompletionsRoutes, options);
  await app.register(completionsRoutes, options);
  await app.register(responsesRoutes, options);
  await app.register(embeddingsRoutes, options);
  await app.register(rerankRoutes, options);
}
