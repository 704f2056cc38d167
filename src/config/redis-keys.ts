import type { Config } from "./schema.ts";

/** Where each part of Zona keeps its keys in Redis, under `server.redis_prefix`. */
export function redisKeyPrefixes(config: Config): { counters: string; money: string; jobs: string } {
  const prefix = config.server.redis_prefix;
  return { counters: `${prefix}:rl:`, money: `${prefix}:money:`, jobs: `${prefix}:jobs` };
}
