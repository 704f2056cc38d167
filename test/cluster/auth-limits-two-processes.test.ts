import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PASSWORD } from "../app/auth-fixtures.ts";
import { freePort } from "../helpers/free-port.ts";
import { ADMIN_TOKEN, startTestApp } from "../helpers/test-app.ts";
import { createTestDatabase } from "../helpers/test-store.ts";
import { ZonaChild } from "../helpers/zona-child.ts";
import { dropKeys } from "../limits/limit-fixtures.ts";

/**
 * "login, register, reset and refresh limits hold across instances". Two real Zona
 * processes behind one (simulated) reverse proxy share PostgreSQL and Redis; requests from one
 * client address, spread over both and sent at once, are admitted exactly up to the spec's limit in
 * total (spec "Rate limits": per address, auth 10 a minute shared by login, register,
 * forgot-password and password-reset confirm, refresh 60; twenty times wider from trusted networks).
 * Run with TEST_DATABASE_URL and TEST_REDIS_URL (as .ci/run sets them); skipped without.
 */

const shared = Boolean(process.env.TEST_DATABASE_URL && process.env.TEST_REDIS_URL);
const TRUSTED = "10.0.0.0/8";

/** Starts `src/main.ts` on a free port against the shared PostgreSQL and Redis. */
async function startServer(databaseUrl: string, configFile: string): Promise<ZonaChild> {
  const server = new ZonaChild({
    port: await freePort(),
    configFile,
    adminToken: ADMIN_TOKEN,
    storage: { databaseUrl, redisUrl: process.env.TEST_REDIS_URL as string },
  });
  await server.start();
  return server;
}

/** One request of a case: the path under /api/v1 and its JSON body. */
type Call = [path: string, body: Record<string, string>];

/** The outcome of a burst: statuses per instance, and the 429 answers' shape. */
interface Burst {
  admitted: [number, number];
  refused: [number, number];
  other: number[];
  limitHeader: string | null;
  refusalBodies: string[];
}

/** Admitted and refused per instance, printed with LIMITS_REPORT=1 for docs/reliability.md. */
const figures: string[] = [];
afterAll(() => {
  if (process.env.LIMITS_REPORT) console.info(figures.join("\n"));
});

let serial = 0;
/** A client address no other case uses (so each case starts with empty counters). */
const freshAddress = (network = "203.0") => {
  serial += 1;
  return `${network}.${Math.floor(serial / 250) % 250}.${(serial % 250) + 1}`;
};

describe.skipIf(!shared)(
  "Auth limits across instances: two Zona processes sharing PostgreSQL and Redis (spec Rate limits / Per address)",
  () => {
    let servers: [ZonaChild, ZonaChild];
    let database: { url: string; drop(): Promise<void> };
    let dir: string;
    let email: string;
    let prefix = "";

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), "zona-auth-limits-"));
      const config = join(dir, "zona.yaml");
      // Its own Redis prefix: nobody else's counters, in this run or a parallel one, are shared.
      prefix = `zona-test-auth-${randomBytes(4).toString("hex")}`;
      await writeFile(
        config,
        [
          "server:",
          "  trust_proxy: true",
          `  redis_prefix: ${prefix}`,
          "installation:",
          `  trusted_networks: ["${TRUSTED}"]`,
          "rate_limits:",
          // A busy machine must not push the limiter into its in-process fallback (tested on its own).
          "  redis_timeout_ms: 5000",
          "",
        ].join("\n"),
      );
      database = await createTestDatabase();
      servers = (await Promise.all([
        startServer(database.url, config),
        startServer(database.url, config),
      ])) as [ZonaChild, ZonaChild];
      email = `limits-${randomBytes(4).toString("hex")}@example.com`;
      const registered = await post(servers[0], freshAddress("198.18"), [
        "/auth/register",
        { email, password: PASSWORD },
      ]);
      expect(registered.status).toBe(201);
    }, 90_000);

    afterAll(async () => {
      await Promise.all((servers ?? []).map((server) => server.stop()));
      await database?.drop();
      if (prefix) await dropKeys(process.env.TEST_REDIS_URL ?? "", `${prefix}:`);
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    /** A request as the proxy forwards it: `forwardedFor` is the X-Forwarded-For header it sends on. */
    function post(server: ZonaChild, forwardedFor: string, [path, body]: Call): Promise<Response> {
      return fetch(`${server.url}/api/v1${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": forwardedFor },
        body: JSON.stringify(body),
      });
    }

    /** Sends every call at once, alternating between the two instances; notes the figures. */
    async function burst(calls: Call[], forwardedFor: (i: number) => string): Promise<Burst> {
      const result = await sendAll(calls, forwardedFor);
      const name = expect.getState().currentTestName?.split(" > ").at(-1)?.split(":")[0] ?? "";
      figures.push(
        `${name}: ${calls.length} requests, admitted ${total(result.admitted)} (${result.admitted.join(" + ")}), ` +
          `refused ${total(result.refused)} (${result.refused.join(" + ")}), 5xx ${result.other.length}`,
      );
      return result;
    }

    async function sendAll(calls: Call[], forwardedFor: (i: number) => string): Promise<Burst> {
      const result: Burst = {
        admitted: [0, 0],
        refused: [0, 0],
        other: [],
        limitHeader: null,
        refusalBodies: [],
      };
      await Promise.all(
        calls.map(async (call, i) => {
          const which = (i % 2) as 0 | 1;
          const response = await post(servers[which] as ZonaChild, forwardedFor(i), call);
          const text = await response.text();
          if (response.status === 429) {
            result.refused[which] += 1;
            result.refusalBodies.push(text);
            expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
          } else if (response.status >= 500) {
            result.other.push(response.status);
          } else {
            result.admitted[which] += 1;
            result.limitHeader = response.headers.get("x-ratelimit-limit");
          }
        }),
      );
      return result;
    }

    const total = ([a, b]: [number, number]) => a + b;
    const bogusConfirm: Call = ["/auth/password-reset/confirm", { token: "zpr_unknown", password: PASSWORD }];
    // Refused as invalid before a password is hashed (a password under 8 characters), yet counted.
    const cheapRegister = (): Call => [
      "/auth/register",
      { email: `r-${randomBytes(4).toString("hex")}@example.com`, password: "short" },
    ];
    const forgot: Call = ["/auth/forgot-password", { email: "nobody@example.com" }];

    it("login with a wrong password, 24 at once over both instances from one address: exactly 10 admitted (401), 14 refused (429)", async () => {
      const address = freshAddress();
      const calls = Array.from(
        { length: 24 },
        (): Call => ["/auth/login", { email, password: `${PASSWORD}-wrong` }],
      );
      const outcome = await burst(calls, () => address);
      expect(outcome.other).toEqual([]);
      expect(total(outcome.admitted)).toBe(10);
      expect(total(outcome.refused)).toBe(14);
      expect(outcome.limitHeader).toBe("10");
      expect(new Set(outcome.refusalBodies)).toEqual(new Set(['{"message":"Too Many Attempts."}']));
    }, 60_000);

    it.each([
      ["register", cheapRegister],
      ["forgot-password", () => forgot],
      ["password-reset confirm", () => bogusConfirm],
    ])(
      "%s alone, 30 at once over both instances from one address: exactly 10 admitted",
      async (_name, make) => {
        const address = freshAddress();
        const outcome = await burst(
          Array.from({ length: 30 }, () => make()),
          () => address,
        );
        expect(outcome.other).toEqual([]);
        expect([total(outcome.admitted), total(outcome.refused)]).toEqual([10, 20]);
      },
      60_000,
    );

    it("the four share one counter across both instances: 40 mixed requests from one address, exactly 10 admitted", async () => {
      const address = freshAddress();
      const mix: Call[] = Array.from({ length: 40 }, (_, i): Call => {
        const kinds: Call[] = [["/auth/login", {}], cheapRegister(), forgot, bogusConfirm];
        return kinds[i % 4] as Call;
      });
      const outcome = await burst(mix, () => address);
      expect(outcome.other).toEqual([]);
      expect([total(outcome.admitted), total(outcome.refused)]).toEqual([10, 30]);
    }, 60_000);

    it("refresh: 150 unknown tokens at once over both instances from one address: exactly 60 admitted (401), 90 refused; its counter is its own", async () => {
      const address = freshAddress();
      const calls = Array.from(
        { length: 150 },
        (): Call => ["/auth/refresh", { refresh_token: "zrt_unknown" }],
      );
      const outcome = await burst(calls, () => address);
      expect(outcome.other).toEqual([]);
      expect([total(outcome.admitted), total(outcome.refused)]).toEqual([60, 90]);
      expect(outcome.limitHeader).toBe("60");
      // The auth counter of that address is untouched by the refreshes.
      expect((await post(servers[1], address, ["/auth/login", {}])).status).toBe(422);
    }, 60_000);

    it(`from a trusted network (${TRUSTED}) the auth limit is 200 in total: 240 at once, exactly 200 admitted`, async () => {
      const address = freshAddress("10.9");
      const outcome = await burst(
        Array.from({ length: 240 }, (): Call => ["/auth/login", {}]),
        () => address,
      );
      expect(outcome.other).toEqual([]);
      expect([total(outcome.admitted), total(outcome.refused)]).toEqual([200, 40]);
      expect(outcome.limitHeader).toBe("200");
    }, 60_000);

    it("X-Forwarded-For: the client's own entries before the proxy's are not believed (a fresh or a trusted address per request gets no new counter)", async () => {
      const address = freshAddress();
      const spoofed = (i: number) =>
        i % 2 === 0 ? `198.51.100.${i % 250}, ${address}` : `10.1.2.${i % 250}, ${address}`;
      const outcome = await burst(
        Array.from({ length: 30 }, (): Call => ["/auth/login", {}]),
        spoofed,
      );
      expect(outcome.other).toEqual([]);
      expect([total(outcome.admitted), total(outcome.refused)]).toEqual([10, 20]);
      expect(outcome.limitHeader).toBe("10");
    }, 60_000);
  },
);

describe("X-Forwarded-For on one instance (runs without PostgreSQL and Redis): only the proxy's own entry counts", () => {
  it("30 logins whose header starts with a new or a trusted address each time: 10 admitted, limit 10", async () => {
    const t = await startTestApp({
      config: { server: { trust_proxy: true }, installation: { trusted_networks: [TRUSTED] } },
    });
    try {
      const statuses: number[] = [];
      const limits = new Set<string | null>();
      for (let i = 0; i < 30; i++) {
        const first = i % 2 === 0 ? `198.51.100.${i}` : `10.1.2.${i}`;
        const response = await t.fetch("/api/v1/auth/login", {
          method: "POST",
          headers: { "content-type": "application/json", "x-forwarded-for": `${first}, 203.0.113.77` },
          body: "{}",
        });
        await response.arrayBuffer();
        statuses.push(response.status);
        if (response.status !== 429) limits.add(response.headers.get("x-ratelimit-limit"));
      }
      expect(statuses.filter((status) => status === 422)).toHaveLength(10);
      expect(statuses.filter((status) => status === 429)).toHaveLength(20);
      expect([...limits]).toEqual(["10"]);
    } finally {
      await t.close();
    }
  });
});
