import type { FastifyInstance } from "fastify";
import type { Config } from "../../config/schema.ts";
import type { Services } from "../../services/create-services.ts";
import { installAppAuth } from "./app-auth.ts";
import { appAudioRoutes } from "./audio.ts";
import { appAuthRoutes } from "./auth.ts";
import { chatSessionRoutes } from "./chat-sessions.ts";
import { knowledgeBaseRoutes } from "./knowledge-bases.ts";
import { webChatRoutes } from "./web-chat.ts";

/**
 * The app API under `/api/v1`: a signed-in user's access token on every route but
 * the public auth ones, a verified email on every route but the auth ones, and the per-user limits
 * that routes declare.
 */
export async function appApiRoutes(app: FastifyInstance, options: { config: Config; services: Services }) {
  installAppAuth(app, options.services.appSessions);
  await app.register(appAudioRoutes, { config: options.config, services: options.services });
  await app.register(appAuthRoutes, { services: options.services });
  await app.register(chatSessionRoutes, { services: options.services });
  await app.register(knowledgeBaseRoutes, { services: options.services });
  await app.register(webChatRoutes, { services: options.services });
}
