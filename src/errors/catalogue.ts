/**
 * The error catalogue: every error a client can see is built in this folder, so status, type and
 * code stay exactly as the API documents them; the domain throws them without knowing HTTP, and the
 * edge's handler (`http/error-handler.ts`) turns them into the shape of the API the request came in
 * on. One family per file: media (media-errors.ts), videos (video-errors.ts), knowledge bases
 * (knowledge-errors.ts), the rest here.
 */

/** How the body of an error is drawn. The numbers name the shapes: "shape 2" is the 422 with `errors`. */
export type ErrorShape =
  | "standard" // 1: {error: {message, type, code, param, request_id}}; app API: {error: {code, message}}
  | "validation" // 2: standard error plus top-level `message` and `errors`
  | "message-only" // 3, 4 and app 404: {message}
  | "html"; // 5: an HTML page

/** A failure with everything the client will see. */
export class ApiError extends Error {
  override name = "ApiError";
  readonly status: number;
  readonly type: string;
  readonly code: string | null;
  readonly param: string | null;
  readonly shape: ErrorShape;
  /** Fields at fault and their messages, for the validation shape. */
  readonly fieldErrors: Record<string, string[]> | undefined;
  readonly headers: Record<string, string>;
  /** Whether retrying the same request later can succeed (upstream failures). */
  readonly retryable: boolean;

  constructor(init: {
    status: number;
    message: string;
    type?: string;
    code?: string | null;
    param?: string | null;
    shape?: ErrorShape;
    fieldErrors?: Record<string, string[]>;
    headers?: Record<string, string>;
    retryable?: boolean;
  }) {
    super(init.message);
    this.status = init.status;
    this.type = init.type ?? (init.status >= 500 ? "server_error" : "invalid_request_error");
    this.code = init.code ?? null;
    this.param = init.param ?? null;
    this.shape = init.shape ?? "standard";
    this.fieldErrors = init.fieldErrors;
    this.headers = init.headers ?? {};
    this.retryable = init.retryable ?? false;
  }
}

/**
 * Whether clients must never retry this error as it is: every
 * 4xx but 408 and 429 (the request itself must change), 501, and 503 `model_activation_required`
 * (an operator must act). Such answers carry `x-should-retry: false`, which the official OpenAI
 * SDKs honour instead of their own rule (which retries 409, 501 and every 503).
 */
export function isFinal(error: ApiError): boolean {
  if (error.status >= 400 && error.status < 500) return error.status !== 408 && error.status !== 429;
  if (error.status === 501) return true;
  return error.status === 503 && error.code === "model_activation_required";
}

/** 401 of the key API: missing, malformed, unknown, revoked, expired key or disabled account. */
export function invalidApiKey(message: string): ApiError {
  return new ApiError({ status: 401, message, code: "invalid_api_key" });
}

/** 404 for any path that does not exist or exists only for other methods (never 405). */
export function unknownEndpoint(method: string, path: string): ApiError {
  return new ApiError({
    status: 404,
    message: `Unknown request URL: ${method} ${path}. Please check the URL and the method.`,
    code: "unknown_endpoint",
  });
}

/** 400 for a refused, unrecognised or invalid parameter. */
export function invalidRequest(message: string, options: { param?: string; code?: string } = {}): ApiError {
  return new ApiError({ status: 400, message, param: options.param ?? null, code: options.code ?? null });
}

/** 422 with the fields at fault (chat-completion validation on the key API, `validation_error` on the app API). */
export function validationFailed(fieldErrors: Record<string, string[]>): ApiError {
  const fields = Object.keys(fieldErrors);
  const first = fields[0] ?? null;
  const firstMessage = first ? fieldErrors[first]?.[0] : undefined;
  const more =
    fields.length > 1 ? ` (and ${fields.length - 1} more error${fields.length > 2 ? "s" : ""})` : "";
  return new ApiError({
    status: 422,
    message: `${firstMessage ?? "The given data was invalid."}${more}`,
    code: "invalid_value",
    param: first,
    shape: "validation",
    fieldErrors,
  });
}

/** 404 for a named item (account, key, conversation) that does not exist or is not the caller's. */
export function itemNotFound(message: string): ApiError {
  return new ApiError({ status: 404, message, code: "not_found" });
}

/** 409 when the item would clash with one that exists. */
export function conflict(message: string, code: string, param?: string): ApiError {
  return new ApiError({ status: 409, message, code, param: param ?? null });
}

/** 402: the request's highest possible cost does not fit in what is left of the key's monthly limit. */
export function spendingLimitReached(): ApiError {
  return new ApiError({
    status: 402,
    message:
      "This request could cost more than what is left of this key's monthly spending limit. Nothing was sent to a " +
      "model. Lower max_tokens, wait for the next month, or ask for a higher limit.",
    code: "spending_limit_reached",
  });
}

/** 402: a prepaid installation and no credits left for this request. */
export function insufficientCredits(): ApiError {
  return new ApiError({
    status: 402,
    message: "There are not enough credits left on this account for this request. Add credits to continue.",
    code: "insufficient_credits",
  });
}

/** Whether a failure is a refusal to pay for the work: no credits left, or a key's monthly limit reached. */
export function isPaymentRefused(error: unknown): boolean {
  return (
    error instanceof ApiError &&
    (error.code === "insufficient_credits" || error.code === "spending_limit_reached")
  );
}

/**
 * What a failure means to the domain. The domain asks these instead of reading a status: the status
 * is how the HTTP edge draws a failure, and only this catalogue maps one to the other.
 */

/** Whether the service failed the request (no machine answered, a store or an engine failed), rather than refused it. */
export function isServiceFailure(error: unknown): error is ApiError {
  return error instanceof ApiError && error.status >= 500;
}

/** Whether the request was refused as it is (its input, its money, its rights), rather than failed by the service. */
export function isRefusal(error: unknown): error is ApiError {
  return error instanceof ApiError && error.status < 500;
}

/** Whether the item asked for does not exist, or is not the caller's. */
export function isNotFound(error: unknown): error is ApiError {
  return error instanceof ApiError && error.status === 404;
}

/** Whether nothing could serve the request now: every machine down or left out, a store not answering. */
export function isUnavailable(error: unknown): error is ApiError {
  return error instanceof ApiError && error.status === 503;
}

/** 401 of the operator API. */
export function invalidAdminToken(): ApiError {
  return new ApiError({
    status: 401,
    message: "The operator API needs Authorization: Bearer <ZONA_ADMIN_TOKEN>.",
    code: "invalid_admin_token",
  });
}

/** 413: the whole request is over the 64 MB limit; the body is an HTML page. */
export function payloadTooLarge(): ApiError {
  return new ApiError({ status: 413, message: "Request Entity Too Large", shape: "html" });
}

/** 500: a fault in the service; nothing internal is shown. */
export function serverError(): ApiError {
  return new ApiError({ status: 500, message: "Server Error", shape: "message-only" });
}

/**
 * 503: the database does not answer (restarting, unreachable). Its code is Zona's own; it
 * follows the other 503s (`server_error`) and asks for a retry in a few seconds, which the
 * official SDKs honour. Nothing was charged: a request whose usage cannot be written is not answered.
 */
export function serviceUnavailable(): ApiError {
  return new ApiError({
    status: 503,
    message: "The service cannot reach its database right now. Try again in a few seconds.",
    code: "service_unavailable",
    headers: { "retry-after": "2" },
    retryable: true,
  });
}

/** 400: the `X-Service-Tier` header names no tier; nothing was counted. */
export function unknownServiceTier(value: string, tiers: readonly string[]): ApiError {
  const shown = value.length > 40 ? `${value.slice(0, 40)}...` : value;
  return new ApiError({
    status: 400,
    message: `Invalid X-Service-Tier header: '${shown}'. Use one of: ${tiers.join(", ")}.`,
    code: "invalid_value",
    param: "X-Service-Tier",
  });
}

/** 429 of the tier limit: the standard error object, `Retry-After` until the next clock minute. */
export function tierRateLimitExceeded(
  tier: string,
  limit: number,
  retryAfterSeconds: number,
  ownLimit = false,
): ApiError {
  const rule = ownLimit
    ? `this API key allows ${limit} requests per minute`
    : `the ${tier} tier allows ${limit} requests per minute for this API key`;
  return new ApiError({
    status: 429,
    message: `Rate limit reached: ${rule}. Try again in ${retryAfterSeconds} seconds.`,
    type: "rate_limit_exceeded",
    code: "rate_limit_exceeded",
    headers: { "Retry-After": String(retryAfterSeconds) },
    retryable: true,
  });
}

/** 429 of the endpoint, address and user limits: `{"message":"Too Many Attempts."}` (shape 3). */
export function tooManyAttempts(headers: Record<string, string>): ApiError {
  return new ApiError({
    status: 429,
    message: "Too Many Attempts.",
    type: "rate_limit_exceeded",
    shape: "message-only",
    headers,
    retryable: true,
  });
}

/** 503: no machine in the allowed zones can serve the model now; the message names the zones. */
export function zoneUnavailable(model: string, zones: string[]): ApiError {
  return new ApiError({
    status: 503,
    message: `No machine in the zones ${zones.join(", ")} can serve ${model} now. Try again later.`,
    type: "zone_unavailable",
    code: "zone_unavailable",
    retryable: true,
  });
}

/** 503: no machine can serve the model now (an installation without zones). */
export function modelUnavailable(model: string, reason?: string): ApiError {
  return new ApiError({
    status: 503,
    message: `No machine can serve ${model} now${reason ? ` (${reason})` : ""}. Try again later or use another model.`,
    type: "model_unavailable",
    code: "model_unavailable",
    retryable: true,
  });
}

/** 503: the model is served on request and is not loaded. */
export function modelActivationRequired(model: string): ApiError {
  return new ApiError({
    status: 503,
    message: `${model} is available on request and is not loaded now. Ask the operator to activate it.`,
    type: "model_activation_required",
    code: "model_activation_required",
  });
}

/** 502: no machine answered (each one tried failed). */
export function badGateway(
  message = "No machine answered the request. Try again with growing pauses.",
): ApiError {
  return new ApiError({ status: 502, message, type: "bad_gateway", code: "bad_gateway", retryable: true });
}

/** 404: the model is not in the catalogue (checked after the request's own validation). */
export function modelNotFound(id: string): ApiError {
  const shown = id.length > 128 ? `${id.slice(0, 128)}...` : id;
  return new ApiError({
    status: 404,
    message: `The model '${shown}' does not exist. GET /v1/models lists the models served here.`,
    type: "model_not_found",
    code: "model_not_found",
    param: "model",
  });
}

/** 400: a parameter this API does not know (OpenAI's wording, so clients recognise it). */
export function unknownParameter(name: string): ApiError {
  return new ApiError({
    status: 400,
    message: `Unrecognized request argument supplied: ${name}`,
    code: "unknown_parameter",
    param: name,
  });
}

/** 400: a known parameter this service refuses (always, or on this model, or in this combination). */
export function unsupportedParameter(name: string, message: string): ApiError {
  return new ApiError({ status: 400, message, code: "unsupported_parameter", param: name });
}

/** 400: a value this service refuses although the shape is valid (`n` above 1 with `stream`, a tier name). */
export function unsupportedValue(name: string, message: string): ApiError {
  return new ApiError({ status: 400, message, code: "unsupported_value", param: name });
}

/** 400: the model exists but is of another kind than the endpoint serves. */
export function wrongModelKind(id: string, wanted: string): ApiError {
  return new ApiError({
    status: 400,
    message: `The model '${id}' is not a ${wanted} model and cannot be used with this endpoint.`,
    code: "invalid_model",
    param: "model",
  });
}

/** 400: an image part sent to a model that does not read images. */
export function imageNotSupported(param: string, model: string): ApiError {
  return new ApiError({
    status: 400,
    message: `The model '${model}' does not accept images; remove the image_url part or use a model that reads images.`,
    code: "image_not_supported",
    param,
  });
}

/** 400: an image that cannot be used (format, size, address). */
export function unacceptableImage(param: string, reason: string): ApiError {
  return new ApiError({
    status: 400,
    message: `Unacceptable image: ${reason}`,
    code: "invalid_image",
    param,
  });
}

/** 501: `stream: true` on `POST /v1/responses`. */
export function streamNotImplemented(): ApiError {
  return new ApiError({
    status: 501,
    message:
      "Streaming is not available on /v1/responses. Send stream: false, or use /v1/chat/completions to stream.",
    type: "invalid_request_error",
    code: "stream_not_implemented",
    param: "stream",
  });
}

/** 501: rerank is turned off on this installation (no rerank model in the catalogue). */
export function rerankNotImplemented(): ApiError {
  return new ApiError({
    status: 501,
    message: "Rerank is not available on this installation.",
    type: "not_implemented",
    code: "not_implemented",
  });
}

/** 401 of the app API: the token is missing, wrong or expired, or the account is disabled. */
export function unauthorized(
  message = "Sign in again: the access token is missing, invalid or expired.",
): ApiError {
  return new ApiError({ status: 401, message, code: "unauthorized" });
}

/** 401 of the app API's login: no account with that email and password. */
export function invalidCredentials(): ApiError {
  return new ApiError({
    status: 401,
    message: "The email or the password is wrong.",
    code: "invalid_credentials",
  });
}

/** 403: a CORS preflight from a browser page whose origin is not in `server.cors_origins`. */
export function originNotAllowed(origin: string): ApiError {
  const shown = origin.length > 200 ? `${origin.slice(0, 200)}...` : origin;
  return new ApiError({
    status: 403,
    message: `Browser pages of ${shown} may not call this API: the origin is not in the installation's allowed origins.`,
    code: "origin_not_allowed",
  });
}

/** 403 of the app API: the account's email address is not verified yet. */
export function emailUnverified(): ApiError {
  return new ApiError({
    status: 403,
    message: "Verify your email address first: follow the link in the mail we sent you.",
    code: "email_unverified",
  });
}
