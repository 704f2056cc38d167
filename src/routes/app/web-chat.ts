import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Language } from "../../config/names.ts";
import { LANGUAGES } from "../../config/schema.ts";
import { webChatModels } from "../../services/chat/web-models.ts";
import type { Services } from "../../services/create-services.ts";
import { bodyFields, FieldErrors, textField } from "../wire/app-fields.ts";
import { requireUser } from "./app-user.ts";

type WithId = { Params: { id: string } };

/**
 * The few endpoints of the app API that only the web chat uses: the signed-in user with
 * the account language (read and set), the chat models a signed-in user may pick, with the tiers,
 * a conversation read with the stopped answers marked, and archiving, which exists only in the web
 * chat (archived conversations are left out of `GET /chat/sessions`). Under `/api/v1/web/`, behind
 * the same access token and verified email as every app route (`/web/me` also for an address not
 * verified yet).
 */
export async function webChatRoutes(app: FastifyInstance, options: { services: Services }) {
  const { services } = options;
  const accountOf = (request: FastifyRequest) => requireUser(request).id;

  // Who is signed in, also before the email is verified: the web chat shows "check your mail".
  app.get("/web/me", { config: { allowUnverified: true } }, async (request) => {
    const user = requireUser(request);
    return { id: user.id, email: user.email, email_verified: user.emailVerified, language: user.language };
  });

  app.patch("/web/me", { config: { allowUnverified: true } }, async (request) => {
    const user = requireUser(request);
    const fields = bodyFields(request.body);
    const errors = new FieldErrors();
    const language = textField(fields, "language", { required: true, max: 8, oneOf: LANGUAGES }, errors);
    errors.check();
    const account = await services.appSessions.setLanguage(user.id, language as Language);
    return {
      id: account.id,
      email: account.email,
      email_verified: account.emailVerified,
      language: account.language,
    };
  });

  app.get("/web/models", async (request) => {
    requireUser(request);
    return webChatModels(services);
  });

  // The conversation with its messages, each saying whether its client stopped it (the app API's
  // message has no such field); the web chat reads conversations here.
  app.get<WithId>("/web/chat/sessions/:id", async (request) =>
    services.chat.getForWebChat(accountOf(request), request.params.id),
  );

  app.get("/web/chat/sessions/archived", async (request) => ({
    data: await services.chat.listArchived(accountOf(request)),
  }));

  app.post<WithId>("/web/chat/sessions/:id/archive", async (request) => ({
    ...(await services.chat.setArchived(accountOf(request), request.params.id, true)),
    archived: true,
  }));

  app.post<WithId>("/web/chat/sessions/:id/unarchive", async (request) => ({
    ...(await services.chat.setArchived(accountOf(request), request.params.id, false)),
    archived: false,
  }));
}
