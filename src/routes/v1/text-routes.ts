import type { FastifyPluginAsync } from "fastify";
import { chatCompletionsRoutes } from "./chat-completions.ts";
import { completionsRoutes } from "./completions.ts";
import { embeddingsRoutes } from "./embeddings.ts";
import { rerankRoutes } from "./rerank.ts";
import { responsesRoutes } from "./responses.ts";
import type { TextRouteDeps } from "./text-context.ts";

/**
 * The text endpoints of the key API (chat completions, completions, responses, embeddings, rerank)
 * over a text service and the catalogue; registered under `/v1` behind key auth and the limits.
 */
export function textRoutes(deps: TextRouteDeps): FastifyPluginAsync {
  const plugin: FastifyPluginAsync = async (app) => {
    await app.register(chatCompletionsRoutes(deps));
    await app.register(completionsRoutes(deps));
    await app.register(responsesRoutes(deps));
    await app.register(embeddingsRoutes(deps));
    await app.register(rerankRoutes(deps));
  };
  TEXT_PLUGINS.add(plugin);
  return plugin;
}

const TEXT_PLUGINS = new WeakSet<FastifyPluginAsync>();

/** Whether a plugin is a set of text routes: one given to the app as an extra (a test's, over a fake service) replaces the built-in set. */
export function isTextRoutes(plugin: FastifyPluginAsync): boolean {
  return TEXT_PLUGINS.has(plugin);
}
