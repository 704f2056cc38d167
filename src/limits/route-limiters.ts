import type { FastifyInstance, FastifyReply, onRequestHookHandler } from "fastify";
import type { Limiter } from "../metrics/limit-metrics.ts";
import { TRUSTED_NETWORK_FACTOR } from "./address-limits.ts";
import { remainingHeaders, routeLimitReached } from "./limit-headers.ts";
import { LIMIT_WINDOW_MS, type LimiterDeps, type RouteLimit } from "./route-limits.ts";
import { clientAddress, type TrustedNetworks } from "./trusted-networks.ts";

/**
 * Address and user limits, which routes only declare (`addressLimit` / `userLimit` in their
 * config). The limiter is appended to the route's own onRequest hooks, so it runs after every
 * hook of its context and of the route itself (where the app API sets `request.user`), and still
 * before the body is read. Windows start with the first request counted.
 */
export function installRouteLimiters(app: FastifyInstance, deps: LimiterDeps & { trusted: TrustedNetworks }) {
  app.addHook("onRoute", (route) => {
    const { addressLimit, userLimit } = route.config ?? {};
    if (addressLimit && userLimit) {
      throw new Error(
        `${String(route.method)} ${route.url}: declare an address limit or a user limit, not both`,
      );
    }
    const limiter = addressLimit
      ? addressLimiter(addressLimit, deps)
      : userLimit
        ? userLimiter(userLimit, deps)
        : undefined;
    if (!limiter) return;
    const own = route.onRequest;
    route.onRequest = [...(own === undefined ? [] : Array.isArray(own) ? own : [own]), limiter];
  });
}

function addressLimiter(declared: RouteLimit, deps: LimiterDeps & { trusted: TrustedNetworks }) {
  const handler: onRequestHookHandler = async (request, reply) => {
    const address = clientAddress(request.ip);
    const wider = deps.trusted.contains(address);
    const limit = wider ? declared.limit * TRUSTED_NETWORK_FACTOR : declared.limit;
    await countToward(`address:${declared.counter}:${address}`, limit, reply, deps, "address");
  };
  return handler;
}

function userLimiter(declared: RouteLimit, deps: LimiterDeps) {
  const handler: onRequestHookHandler = async (request, reply) => {
    // No user means the route's authentication let the request through unsigned: nothing to count per.
    const userId = request.user?.id;
    if (userId === undefined) return;
    await countToward(`user:${declared.counter}:${userId}`, declared.limit, reply, deps, "user");
  };
  return handler;
}

async function countToward(
  key: string,
  limit: number,
  reply: FastifyReply,
  deps: LimiterDeps,
  limiter: Limiter,
): Promise<void> {
  const now = deps.now().getTime();
  const result = await deps.store.take([{ key, limit, windowMs: LIMIT_WINDOW_MS, kind: "from-first" }], now);
  if (!result.allowed) {
    deps.refused.inc({ limiter });
    throw routeLimitReached(limit, result.resetAt, now);
  }
  const counted = result.counters[0];
  if (counted) reply.headers(remainingHeaders(limit, counted.count));
}
