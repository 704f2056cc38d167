import type { FastifyInstance } from "fastify";
import { MAX_PASSWORD_LENGTH } from "../../auth/passwords.ts";
import { LANGUAGES } from "../../config/schema.ts";
import type { LoginResponse } from "../../contract/app-api.ts";
import { ApiError, validationFailed } from "../../errors/catalogue.ts";
import { addressLimit } from "../../limits/address-limits.ts";
import type { SignedIn } from "../../services/auth/sign-in.ts";
import type { Services } from "../../services/create-services.ts";
import { bodyFields, FieldErrors, type TextRule, textField } from "../wire/app-fields.ts";
import { requireUser } from "./app-user.ts";

const MIN_PASSWORD_LENGTH = 8;
const MAX_EMAIL_LENGTH = 254;
const MAX_TOKEN_LENGTH = 512;

/**
 * The auth endpoints of the app API: login,
 * refresh, logout, and the steps that go through mail (register, verify-email,
 * resend-verification, forgot-password, password-reset/confirm). See docs/app-auth.md.
 */
export async function appAuthRoutes(app: FastifyInstance, options: { services: Services }) {
  const { signIn, accountMails } = options.services;
  app.addHook("onClose", () => accountMails.close());

  app.post("/auth/login", { config: { appPublic: true, ...addressLimit("login") } }, async (request) => {
    const body = read(request.body, {
      email: { max: MAX_EMAIL_LENGTH },
      password: { max: MAX_PASSWORD_LENGTH },
    });
    return loginResponse(await signIn.login(body.email, body.password));
  });

  app.post("/auth/refresh", { config: { appPublic: true, ...addressLimit("refresh") } }, async (request) => {
    const body = read(request.body, { refresh_token: { max: MAX_TOKEN_LENGTH } });
    return loginResponse(await signIn.refresh(body.refresh_token));
  });

  app.post("/auth/logout", { config: { allowUnverified: true } }, async (request, reply) => {
    const body = read(request.body, { refresh_token: { max: MAX_TOKEN_LENGTH } });
    await signIn.logout(requireUser(request).id, body.refresh_token);
    return reply.code(204).send();
  });

  app.post(
    "/auth/register",
    { config: { appPublic: true, ...addressLimit("register") } },
    async (request, reply) => {
      const body = read(request.body, {
        email: { max: MAX_EMAIL_LENGTH },
        password: { min: MIN_PASSWORD_LENGTH, max: MAX_PASSWORD_LENGTH },
        language: { optional: true, max: 8, oneOf: LANGUAGES },
      });
      const signedIn = await asFieldErrors(() =>
        accountMails.register({
          email: body.email,
          password: body.password,
          ...(body.language !== undefined ? { language: body.language } : {}),
        }),
      );
      return reply.code(201).send(loginResponse(signedIn));
    },
  );

  // The mail's link opens the web chat's page, which calls one of these with the token.
  const verify = async (fields: unknown) => {
    const body = read(fields, { token: { max: MAX_TOKEN_LENGTH } });
    const user = await accountMails.verifyEmail(body.token);
    return { user: { id: user.id, email: user.email, email_verified: user.emailVerified } };
  };
  app.get("/auth/verify-email", { config: { appPublic: true } }, (request) => verify(request.query));
  app.post("/auth/verify-email", { config: { appPublic: true } }, (request) => verify(request.body));

  app.post("/auth/resend-verification", { config: { allowUnverified: true } }, async (request, reply) => {
    const sent = await accountMails.resendVerification(requireUser(request).id);
    return reply.code(sent ? 202 : 200).send({ sent, email_verified: !sent });
  });

  app.post(
    "/auth/forgot-password",
    { config: { appPublic: true, ...addressLimit("forgotPassword") } },
    async (request, reply) => {
      const body = read(request.body, { email: { max: MAX_EMAIL_LENGTH } });
      accountMails.forgotPassword(body.email);
      return reply.code(202).send({
        message: "If an account has this email address, a link to choose a new password is on its way.",
      });
    },
  );

  app.post(
    "/auth/password-reset/confirm",
    { config: { appPublic: true, ...addressLimit("passwordResetConfirm") } },
    async (request) => {
      const body = read(request.body, {
        token: { max: MAX_TOKEN_LENGTH },
        password: { min: MIN_PASSWORD_LENGTH, max: MAX_PASSWORD_LENGTH },
      });
      return loginResponse(await accountMails.resetPassword(body.token, body.password));
    },
  );
}

/**
 * The login response (docs/app-auth.md#login-response), exactly: the pair, the lifetimes, and three
 * fields of the user.
 */
export function loginResponse(signedIn: SignedIn): LoginResponse {
  return {
    token: signedIn.accessToken,
    access_token: signedIn.accessToken,
    refresh_token: signedIn.refreshToken,
    expires_in_seconds: signedIn.accessSeconds,
    access_expires_in_seconds: signedIn.accessSeconds,
    refresh_expires_in_seconds: signedIn.refreshSeconds,
    user: { id: signedIn.user.id, email: signedIn.user.email, email_verified: signedIn.user.emailVerified },
  };
}

type FieldRule = Omit<TextRule, "required"> & { optional?: boolean };
type Read<R extends Record<string, FieldRule>> = {
  [K in keyof R]: R[K] extends { optional: true } ? string | undefined : string;
};

/** Reads string fields; every field at fault is listed in one 422 `validation_error`. */
function read<const R extends Record<string, FieldRule>>(body: unknown, rules: R): Read<R> {
  const fields = bodyFields(body);
  const errors = new FieldErrors();
  const values: Record<string, string | undefined> = {};
  for (const [name, rule] of Object.entries(rules)) {
    values[name] = textField(fields, name, { ...rule, required: rule.optional !== true }, errors);
  }
  errors.check();
  return values as Read<R>;
}

/** The accounts service's refusals of a new account (email format, email taken) as 422 on the field. */
async function asFieldErrors<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof ApiError && error.param !== null && (error.status === 400 || error.status === 409)) {
      const message =
        error.code === "email_taken" ? "An account with this email address exists already." : error.message;
      throw validationFailed({ [error.param]: [message] });
    }
    throw error;
  }
}
