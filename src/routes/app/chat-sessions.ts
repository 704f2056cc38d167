import type { FastifyInstance, FastifyRequest } from "fastify";
import { userLimit } from "../../limits/user-limits.ts";
import type { Services } from "../../services/create-services.ts";
import { requireUser } from "./app-user.ts";
import { sendChatEvents } from "./chat-event-stream.ts";
import { userContext } from "./user-context.ts";
import { validateCreateSession, validateRename, validateSendMessage } from "./validate-chat-sessions.ts";

type WithId = { Params: { id: string } };

/**
 * Chat sessions of the app API (docs/app-chat.md): conversations kept on the server and a
 * message's answer streamed as server-sent events. A conversation that is missing, another user's
 * or has a malformed id is 404 `{message}`; it is checked before the body (422 `validation_error`).
 */
export async function chatSessionRoutes(app: FastifyInstance, options: { services: Services }) {
  const { services } = options;
  const userId = (request: FastifyRequest) => requireUser(request).id;

  app.get("/chat/sessions", (request) => services.chat.list(userId(request)));

  app.post("/chat/sessions", async (request, reply) => {
    const fields = validateCreateSession(request.body);
    return reply.code(201).send(await services.chat.create(userId(request), fields));
  });

  app.get<WithId>("/chat/sessions/:id", (request) => services.chat.get(userId(request), request.params.id));

  app.patch<WithId>("/chat/sessions/:id", async (request) => {
    const conversation = await services.chat.find(userId(request), request.params.id);
    return services.chat.rename(conversation, validateRename(request.body));
  });

  app.delete<WithId>("/chat/sessions/:id", async (request, reply) => {
    await services.chat.delete(userId(request), request.params.id);
    return reply.code(204).send();
  });

  app.post<WithId>(
    "/chat/sessions/:id/messages",
    { config: userLimit("chatMessages") },
    async (request, reply) => {
      const started = performance.now();
      const conversation = await services.chat.find(userId(request), request.params.id);
      const message = validateSendMessage(request.body);
      const { tier: _tier, ...context } = userContext(request, reply, "app.chat");
      const exchange = await services.chat.send(conversation, message, context);
      await sendChatEvents(request, reply, exchange, started);
      return reply;
    },
  );
}
