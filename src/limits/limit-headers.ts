import { type ApiError, tooManyAttempts } from "../errors/catalogue.ts";

/** Whole seconds from `now` until `resetAt` (epoch ms), at least 1: what `Retry-After` says. */
export function secondsUntil(resetAt: number, now: number): number {
  return Math.max(1, Math.ceil((resetAt - now) / 1000));
}

/** `X-RateLimit-Limit` and `X-RateLimit-Remaining` of a counted request. */
export function remainingHeaders(limit: number, count: number): Record<string, string> {
  return { "X-RateLimit-Limit": String(limit), "X-RateLimit-Remaining": String(Math.max(0, limit - count)) };
}

/** The 429 of a route limit (endpoint, address, user), with its four headers. */
export function routeLimitReached(limit: number, resetAt: number, now: number): ApiError {
  return tooManyAttempts({
    "Retry-After": String(secondsUntil(resetAt, now)),
    "X-RateLimit-Limit": String(limit),
    "X-RateLimit-Remaining": "0",
    "X-RateLimit-Reset": String(Math.ceil(resetAt / 1000)),
  });
}
