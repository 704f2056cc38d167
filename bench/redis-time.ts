import { Redis } from "ioredis";

/**
 * Redis's own time in scripts (`EVALSHA` and `EVAL` in `INFO commandstats`), read before and after a
 * run: what the requests of that run cost Redis's one thread. Zona talks to Redis through scripts
 * only on its hot path; the commands a script runs are counted inside its time (and again under their
 * own names, which are left out).
 */
export class RedisTime {
  private readonly redis: Redis;

  constructor(url: string) {
    this.redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
  }

  /** Microseconds Redis has spent in scripts since its start (or its last CONFIG RESETSTAT). */
  async micros(): Promise<number> {
    const info = await this.redis.info("commandstats");
    let total = 0;
    for (const match of info.matchAll(/^cmdstat_(?:evalsha|eval):calls=\d+,usec=(\d+)/gm)) {
      total += Number(match[1]);
    }
    return total;
  }

  close(): void {
    this.redis.disconnect();
  }
}
