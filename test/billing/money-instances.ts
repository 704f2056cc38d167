import { openStore } from "../../src/store/open-store.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { redisStoreUnderTest } from "../limits/limit-fixtures.ts";
import { billedTestRoutes } from "./billed-test-routes.ts";

const HIGH_LIMITS = { slow: { multiplier: 1, requests_per_minute: 100_000 } };

/**
 * Instances of one installation: apps on one PostgreSQL database and one Redis (the same key
 * prefix), with the billed test routes; each has its own store, closed by the caller.
 */
export async function moneyInstances(options: {
  count: number;
  databaseUrl: string;
  redisUrl: string;
  prefix: string;
  prepaid: boolean;
}): Promise<TestApp[]> {
  const apps: TestApp[] = [];
  for (let i = 0; i < options.count; i++) {
    const counters = await redisStoreUnderTest(options.redisUrl, options.prefix);
    apps.push(
      await startTestApp({
        store: await openStore({ databaseUrl: options.databaseUrl }),
        counterStore: counters.store,
        config: {
          tiers: HIGH_LIMITS,
          ...(options.prepaid ? { installation: { prepaid: true, currency: "credits" } } : {}),
        },
        keyApiPlugins: [billedTestRoutes],
      }),
    );
  }
  return apps;
}
