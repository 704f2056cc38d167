import type { FastifyInstance } from "fastify";
import { API_KEY_PREFIX } from "../../auth/api-key-format.ts";
import { emailUnverified, unauthorized } from "../../errors/catalogue.ts";
import type { AppSessions } from "../../services/auth/app-sessions.ts";
import "./app-user.ts";

/**
 * Authentication of the app API (docs/app-auth.md): `Authorization: Bearer
 * <access token>` on every route but the public ones (`appPublic`); a missing, wrong or expired
 * token, an API key, or a disabled account is 401 `unauthorized`; an unverified email is 403
 * `email_unverified` except on the auth endpoints (`allowUnverified`). Sets `request.user`.
 */
export function installAppAuth(app: FastifyInstance, sessions: AppSessions): void {
  app.addHook("onRequest", async (request) => {
    const config = request.routeOptions.config;
    if (config?.appPublic) return;
    const header = request.headers.authorization;
    const match = typeof header === "string" ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    const token = match?.[1];
    if (!token) throw unauthorized();
    if (token.startsWith(API_KEY_PREFIX)) {
      throw unauthorized("API keys work on /v1 only; the app API needs a user's access token.");
    }
    const user = await sessions.userOfAccessToken(token);
    if (!user) throw unauthorized();
    request.user = user;
    if (!user.emailVerified && !config?.allowUnverified) throw emailUnverified();
  });
}
