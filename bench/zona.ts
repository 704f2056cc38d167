import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { stringify } from "yaml";
import { type Child, startNode, tempDir } from "./children.ts";

/** The chat model the benchmark asks for. */
export const BENCH_MODEL = "bench-chat";

/** A running Zona and how to reach its operator API. */
export interface StartedZona {
  child: Child;
  url: string;
  adminToken: string;
  /** How it was started: a restart starts it again the same way, on the same data. */
  launch: ZonaLaunch;
}

/** The command line, environment (config file, data dir, port, DATABASE_URL...) and core of a Zona. */
export interface ZonaLaunch {
  /** The process's name in the benchmark's messages. */
  name: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cpu: number | undefined;
  cwd: string;
}

// Every tier allows far more than the benchmark sends: the tier limiter still counts every request.
const UNLIMITED_TIER = { requests_per_minute: 100_000_000 };

/**
 * The configuration of the benchmark: one zone, one priced chat model, one openai machine (the
 * fake). `prepaid`: requests need credits on their account (the billed runs' second Zona).
 */
function benchConfig(engineUrl: string, prepaid: boolean): unknown {
  return {
    installation: {
      name: "Zona bench",
      zones: [{ id: "bench", name: "Loopback" }],
      default_tier: "slow",
      prepaid,
    },
    tiers: {
      slow: { multiplier: 1, ...UNLIMITED_TIER },
      medium: { multiplier: 2, ...UNLIMITED_TIER },
      fast: { multiplier: 4, ...UNLIMITED_TIER },
      ludicrous: { multiplier: 8, ...UNLIMITED_TIER },
    },
    // Each Zona of a run keeps its own keys in a shared Redis (counters and money).
    server: { redis_prefix: `zona-bench-${randomBytes(4).toString("hex")}` },
    // The endpoint limiter still counts every request, against a limit the benchmark never reaches.
    rate_limits: { endpoint_limits: { chat_completions: UNLIMITED_TIER.requests_per_minute } },
    models: [
      {
        id: BENCH_MODEL,
        kind: "chat",
        prices: { input_per_million_tokens: 0.6, output_per_million_tokens: 2.4 },
      },
    ],
    machines: [
      {
        name: "fake-engine",
        zone: "bench",
        protocol: "openai",
        url: engineUrl,
        models: [BENCH_MODEL],
        capacity: 1024,
      },
    ],
  };
}

/**
 * Starts `node src/main.ts` with a generated config and a fresh temporary data dir (embedded
 * PGlite there, unless DATABASE_URL is set) and waits until it answers.
 */
export async function startZona(options: {
  engineUrl: string;
  cpu: number | undefined;
  cwd: string;
  /** Extra options for Zona's node (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /** A prepaid installation (`installation.prepaid`); postpaid without it. */
  prepaid?: boolean;
  /** The process's name in the benchmark's messages (default "zona"). */
  name?: string;
}): Promise<StartedZona> {
  const dir = tempDir("zona-bench-");
  const configFile = join(dir, "zona.yaml");
  writeFileSync(configFile, stringify(benchConfig(options.engineUrl, options.prepaid ?? false)));
  const port = await freePort();
  const adminToken = randomBytes(24).toString("hex");
  // The same V8 flags as `npm start` (docs/operations.md says what each saves).
  const launch: ZonaLaunch = {
    name: options.name ?? "zona",
    args: [
      "--max-semi-space-size=8",
      "--heap-growing-percent=60",
      "--liftoff-only",
      ...(options.nodeArgs ?? []),
      "src/main.ts",
    ],
    cpu: options.cpu,
    cwd: options.cwd,
    env: {
      ...process.env,
      ZONA_CONFIG: configFile,
      ZONA_DATA_DIR: join(dir, "data"),
      ZONA_ADMIN_TOKEN: adminToken,
      ZONA_LOG_LEVEL: "warn",
      HOST: "127.0.0.1",
      PORT: String(port),
    },
  };
  const child = spawnZona(launch);
  const url = `http://127.0.0.1:${port}`;
  await waitUntilHealthy(url, child);
  return { child, url, adminToken, launch };
}

/** Starts the Zona process of a launch and returns at once (it is not listening yet). */
export function spawnZona(launch: ZonaLaunch): Child {
  return startNode(launch.name, launch.args, { cpu: launch.cpu, cwd: launch.cwd, env: launch.env });
}

/** Opens an account through the operator API; its id. */
export async function openAccount(zona: StartedZona): Promise<string> {
  const email = `bench-${Date.now()}-${randomBytes(4).toString("hex")}@example.com`;
  const account = (await admin(zona, "POST", "/admin/v1/accounts", { email }, 201)) as { id: string };
  return account.id;
}

/**
 * Issues `count` API keys through the operator API, to `accountId` or to a new account.
 * `monthlyLimit`: each key's limit in the installation's currency; none without it.
 */
export async function issueKeys(
  zona: StartedZona,
  count: number,
  options: { accountId?: string; monthlyLimit?: number } = {},
): Promise<{
  accountId: string;
  secrets: string[];
}> {
  const account = options.accountId ?? (await openAccount(zona));
  const limit = options.monthlyLimit === undefined ? {} : { monthly_limit: options.monthlyLimit };
  const secrets: string[] = [];
  let issued = 0;
  const worker = async () => {
    while (issued < count) {
      const n = issued++;
      const path = `/admin/v1/accounts/${account}/keys`;
      const key = (await admin(zona, "POST", path, { name: `bench-${n}`, ...limit }, 201)) as { key: string };
      secrets.push(key.key);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return { accountId: account, secrets };
}

/** Sets an account's prepaid balance (`PUT /admin/v1/accounts/{id}/credits`). */
export async function setCredits(zona: StartedZona, accountId: string, balance: number): Promise<void> {
  await admin(zona, "PUT", `/admin/v1/accounts/${accountId}/credits`, { balance }, 200);
}

/**
 * Loads a key into Zona's key cache with a request that no rate limit counts and nothing bills
 * (`GET /v1/models`); sent to the engine or the stack floor, it only wakes their process.
 */
export async function warmKey(url: string, secret: string): Promise<void> {
  const response = await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${secret}` } });
  await response.arrayBuffer();
}

async function admin(
  zona: StartedZona,
  method: "POST" | "PUT",
  path: string,
  body: unknown,
  expected: number,
): Promise<unknown> {
  const response = await fetch(`${zona.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${zona.adminToken}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (response.status !== expected) {
    throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(answer)}`);
  }
  return answer;
}

async function waitUntilHealthy(url: string, child: Child): Promise<void> {
  const deadline = Date.now() + 60_000;
  let exitCode: number | null | undefined;
  void child.exited.then((code) => {
    exitCode = code;
  });
  while (Date.now() < deadline) {
    if (exitCode !== undefined)
      throw new Error(`${child.name} exited (${exitCode}) while starting:\n${child.output()}`);
    try {
      const response = await fetch(`${url}/healthz`);
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${child.name} did not answer /healthz within 60 s:\n${child.output()}`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
