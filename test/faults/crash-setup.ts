import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { PASSWORD } from "../app/auth-fixtures.ts";
import { freePort } from "../helpers/free-port.ts";
import { type ChildStorage, ZonaChild } from "../helpers/zona-child.ts";

export const CRASH_MODEL = "crash-chat";
/** Reservations of killed processes expire this soon, so the sweep can be seen within the run. */
export const HOLD_SECONDS = 3;
/** The most one request of the experiment can cost (max_tokens 16 at the prices below). */
const TIGHT_LIMIT = 1;

/** A key of the experiment and what is known about it. */
export interface CrashKey {
  secret: string;
  keyId: string;
  accountId: string;
  /** The key's monthly limit in the currency, or null. */
  monthlyLimit: number | null;
}

/** An account of the experiment and the credits it was given (prepaid installations). */
export interface CrashAccount {
  id: string;
  credits: number;
}

/** Everything the load and the audit need: Zona, its keys and accounts, and how to clean up. */
export interface CrashSetup {
  zona: ZonaChild;
  adminToken: string;
  /** The embedded data folder; undefined in distributed mode. */
  dataDir: string | undefined;
  keys: CrashKey[];
  accounts: CrashAccount[];
  prepaid: boolean;
  remove(): void;
}

const BIG_TIER = { requests_per_minute: 100_000_000 };

/** What an experiment may change in the installation. */
export interface CrashOptions {
  /** `rate_limits.redis_timeout_ms` (5 s by default here: a busy machine must not fall back by itself). */
  redisTimeoutMs?: number;
  /** A text-embeddings-inference server: adds `bge-m3`, for knowledge bases. */
  embeddingUrl?: string;
  /** The installation's `knowledge` settings (how documents are read). */
  knowledge?: Record<string, unknown>;
  /** The prefix of the installation's keys in a shared Redis. */
  redisPrefix?: string;
}

function config(engineUrl: string, prepaid: boolean, options: CrashOptions): unknown {
  const embedding = options.embeddingUrl
    ? {
        model: { id: "bge-m3", kind: "embedding" },
        machine: {
          name: "tei",
          zone: "crash",
          protocol: "tei",
          url: options.embeddingUrl,
          models: ["bge-m3"],
        },
      }
    : undefined;
  return {
    installation: { name: "Zona crash", zones: [{ id: "crash" }], prepaid, default_tier: "slow" },
    tiers: {
      slow: { multiplier: 1, ...BIG_TIER },
      medium: { multiplier: 2, ...BIG_TIER },
      fast: { multiplier: 4, ...BIG_TIER },
      ludicrous: { multiplier: 8, ...BIG_TIER },
    },
    rate_limits: {
      endpoint_limits: { chat_completions: BIG_TIER.requests_per_minute },
      redis_timeout_ms: options.redisTimeoutMs ?? 5_000,
    },
    billing: { reservation_timeout_seconds: HOLD_SECONDS },
    ...(options.knowledge ? { knowledge: options.knowledge } : {}),
    ...(options.redisPrefix ? { server: { redis_prefix: options.redisPrefix } } : {}),
    models: [
      {
        id: CRASH_MODEL,
        kind: "chat",
        prices: { input_per_million_tokens: 1_000, output_per_million_tokens: 2_000 },
      },
      ...(embedding ? [embedding.model] : []),
    ],
    machines: [
      {
        name: "engine",
        zone: "crash",
        protocol: "openai",
        url: engineUrl,
        models: [CRASH_MODEL],
        capacity: 1024,
      },
      ...(embedding ? [embedding.machine] : []),
    ],
  };
}

/**
 * Starts a Zona child for the experiment and opens, through the operator API: keys without a limit,
 * keys with a limit never reached, and one key whose limit fits only a few dozen requests; on a
 * prepaid installation also an account whose credits run out during the load.
 */
export async function setUpCrash(options: {
  engineUrl: string;
  prepaid: boolean;
  /** Embedded (a fresh data folder) unless PostgreSQL and Redis are given. */
  shared?: { databaseUrl: string; redisUrl: string };
  installation?: CrashOptions;
}): Promise<CrashSetup> {
  const dir = mkdtempSync(join(tmpdir(), "zona-crash-"));
  const configFile = join(dir, "zona.yaml");
  writeFileSync(
    configFile,
    stringify(config(options.engineUrl, options.prepaid, options.installation ?? {})),
  );
  const storage: ChildStorage = options.shared ?? { dataDir: join(dir, "data") };
  const adminToken = randomBytes(24).toString("hex");
  const zona = new ZonaChild({ port: await freePort(), configFile, adminToken, storage });
  const remove = () => rmSync(dir, { recursive: true, force: true });
  try {
    await zona.start();
    const admin = async (path: string, body: unknown) => {
      const response = await fetch(`${zona.url}/admin/v1${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const answer = (await response.json()) as Record<string, unknown>;
      if (!response.ok) throw new Error(`${path}: ${response.status} ${JSON.stringify(answer)}`);
      return answer;
    };
    const tag = randomBytes(4).toString("hex");
    const account = async (name: string, credits: number): Promise<CrashAccount> => {
      const { id } = (await admin("/accounts", { email: `crash-${name}-${tag}@example.com` })) as {
        id: string;
      };
      if (options.prepaid) await admin(`/accounts/${id}/credits`, { amount: credits });
      return { id, credits: options.prepaid ? credits : 0 };
    };
    const key = async (owner: CrashAccount, monthlyLimit: number | null): Promise<CrashKey> => {
      const made = (await admin(`/accounts/${owner.id}/keys`, {
        name: `crash-${monthlyLimit ?? "none"}`,
        ...(monthlyLimit === null ? {} : { monthly_limit: monthlyLimit }),
      })) as { id: string; key: string };
      return { secret: made.key, keyId: made.id, accountId: owner.id, monthlyLimit };
    };
    const rich = await account("rich", 1_000_000);
    const poor = await account("poor", TIGHT_LIMIT);
    const keys = [
      await key(rich, null),
      await key(rich, null),
      await key(rich, null),
      await key(rich, 1_000_000),
      await key(rich, 1_000_000),
      await key(rich, TIGHT_LIMIT),
      // Prepaid: the poor account's credits run out; postpaid: a second account's key without a limit.
      await key(poor, null),
    ];
    const dataDir = "dataDir" in storage ? storage.dataDir : undefined;
    return { zona, adminToken, dataDir, keys, accounts: [rich, poor], prepaid: options.prepaid, remove };
  } catch (error) {
    await zona.kill9();
    remove();
    throw error;
  }
}

/** Opens an app-API user (verified, English) through the operator API and signs in: its access token. */
export async function signedInAppUser(setup: CrashSetup): Promise<string> {
  const email = `app-user-${randomBytes(4).toString("hex")}@example.com`;
  const account = await fetch(`${setup.zona.url}/admin/v1/accounts`, {
    method: "POST",
    headers: { authorization: `Bearer ${setup.adminToken}`, "content-type": "application/json" },
    body: JSON.stringify({ email, password: PASSWORD, email_verified: true, language: "en" }),
  });
  if (account.status !== 201) throw new Error(`account: ${account.status} ${await account.text()}`);
  const login = await fetch(`${setup.zona.url}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password: PASSWORD }),
  });
  return ((await login.json()) as { access_token: string }).access_token;
}
