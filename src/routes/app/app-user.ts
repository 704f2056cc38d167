import type { FastifyRequest } from "fastify";
import type { Language } from "../../config/names.ts";
import { serverError } from "../../errors/catalogue.ts";

/** The signed-in user of an app API request. */
export interface AppUser {
  id: string;
  email: string;
  emailVerified: boolean;
  language: Language;
}

declare module "fastify" {
  interface FastifyRequest {
    /** The signed-in user of the app API; null until its authentication sets it. */
    user: AppUser | null;
  }
  interface FastifyContextConfig {
    /** App API: the route needs no access token (login, refresh, register, password reset). */
    appPublic?: boolean;
    /** App API: the route takes a user whose email is not verified yet (the auth endpoints). */
    allowUnverified?: boolean;
  }
}

/** The signed-in user of a request; the app API's authentication runs before every route that asks. */
export function requireUser(request: FastifyRequest): AppUser {
  if (!request.user) throw serverError();
  return request.user;
}
