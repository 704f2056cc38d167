import type { FastifyBaseLogger, FastifyInstance, FastifyPluginAsync } from "fastify";
import { buildApp } from "../../src/app.ts";
import { setScryptCostForTests } from "../../src/auth/passwords.ts";
import { parseConfig } from "../../src/config/load.ts";
import type { Config } from "../../src/config/schema.ts";
import type { JobQueue } from "../../src/jobs/job-queue.ts";
import type { CounterStore } from "../../src/limits/counter-store.ts";
import type { Store } from "../../src/store/database.ts";
import { dropKeys, redisStoreUnderTest, TEST_REDIS_URL } from "../limits/limit-fixtures.ts";
import { flushRunLog, testAppLogger } from "./run-log.ts";
import { openTestStore } from "./test-store.ts";

/** The operator token every test app uses. */
export const ADMIN_TOKEN = "test-admin-token-0123456789";

/**
 * The scrypt cost of the passwords the test apps hash: 16 MiB and about 50 ms a hash instead of
 * OWASP's 128 MiB and 0.4 s (test/auth/passwords.test.ts checks OWASP's, the production default).
 * Still far above a request's own time, so the login timing test compares scrypt against scrypt
 * (a known email's stored hash and the throwaway one are both made at this cost).
 */
export const TEST_SCRYPT_COST = { N: 2 ** 14, r: 8, p: 1 } as const;

/** A running app on a loopback port, with helpers to call it. */
export interface TestApp {
  app: FastifyInstance;
  store: Store;
  config: Config;
  url: string;
  /** Calls the app over real HTTP. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** Calls the operator API with the admin token; JSON in and out. */
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are checked by assertions, not by types.
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** Opens an account (email verified) with one key and returns both. */
  newKey(options?: {
    email?: string;
    key?: Record<string, unknown>;
  }): Promise<{ accountId: string; keyId: string; key: string }>;
  close(): Promise<void>;
}

let counter = 0;

/** Builds the real app over a fresh store and listens on a free loopback port. */
export async function startTestApp(
  options: {
    config?: Record<string, unknown>;
    /** A fresh store of this kind, or a store shared with other apps (not closed by this one). */
    store?: "pglite" | "postgres" | Store;
    now?: () => Date;
    logger?: FastifyBaseLogger;
    /** Adds routes before the app starts (for failures that no real route can produce). */
    extend?: (app: FastifyInstance) => void;
    /** Routes under /v1 behind the key API's authentication and limits. */
    keyApiPlugins?: FastifyPluginAsync[];
    /** Rate-limit counters instead of the configured ones; the app closes them. */
    counterStore?: CounterStore;
    /** A background-job queue instead of the configured one; the app closes it. */
    jobQueue?: JobQueue;
    /** A queue of jobs that survive a restart instead of the configured one; the app closes it. */
    durableQueue?: JobQueue;
    /** How a configuration reload reads the configuration. */
    loadConfig?: () => Config;
    /** The address the app listens on (default 127.0.0.1); the test calls it on 127.0.0.1 anyway. */
    listenHost?: string;
  } = {},
): Promise<TestApp> {
  setScryptCostForTests(TEST_SCRYPT_COST);
  const raw = options.config ?? {};
  const config = parseConfig({
    ...raw,
    server: { log_level: "silent", admin_token: ADMIN_TOKEN, ...((raw.server as object) ?? {}) },
  });
  const shared = typeof options.store === "object";
  const store = typeof options.store === "object" ? options.store : await openTestStore(options.store);
  // Every app logs into the run's log file, which the global teardown scans (test/logs/global-setup.ts).
  const logger = testAppLogger(options.logger);
  // PostgreSQL as the distributed mode runs it: with Redis beside it (counters and money), when present.
  const redis =
    options.store === "postgres" && TEST_REDIS_URL && !options.counterStore
      ? await redisStoreUnderTest(TEST_REDIS_URL)
      : undefined;
  const counterStore = options.counterStore ?? redis?.store;
  const app = await buildApp({
    config,
    store,
    ...(options.now ? { now: options.now } : {}),
    ...(logger ? { logger } : {}),
    ...(options.keyApiPlugins ? { keyApiPlugins: options.keyApiPlugins } : {}),
    ...(counterStore ? { counterStore } : {}),
    ...(options.jobQueue ? { jobQueue: options.jobQueue } : {}),
    ...(options.durableQueue ? { durableQueue: options.durableQueue } : {}),
    ...(options.loadConfig ? { loadConfig: options.loadConfig } : {}),
  });
  options.extend?.(app);
  await app.listen({ port: 0, host: options.listenHost ?? "127.0.0.1" });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;

  const call = (path: string, init?: RequestInit) => fetch(`${url}${path}`, init);
  const admin: TestApp["admin"] = async (method, path, body) => {
    const response = await call(`/admin/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
  const newKey: TestApp["newKey"] = async (opts = {}) => {
    counter += 1;
    const email = opts.email ?? `user${counter}-${Date.now()}@example.com`;
    const account = await admin("POST", "/accounts", { email, email_verified: true });
    if (account.status !== 201) throw new Error(`account: ${JSON.stringify(account.body)}`);
    const key = await admin("POST", `/accounts/${account.body.id}/keys`, { name: "test", ...opts.key });
    if (key.status !== 201) throw new Error(`key: ${JSON.stringify(key.body)}`);
    return { accountId: account.body.id, keyId: key.body.id, key: key.body.key };
  };
  return {
    app,
    store,
    config,
    url,
    fetch: call,
    admin,
    newKey,
    async close() {
      try {
        await app.close();
        if (!shared) await store.close();
        if (redis && TEST_REDIS_URL) await dropKeys(TEST_REDIS_URL, redis.prefix);
      } finally {
        flushRunLog();
      }
    },
  };
}
