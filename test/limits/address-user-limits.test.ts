import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADDRESS_LIMITS, addressLimit } from "../../src/limits/address-limits.ts";
import { MemoryCounterStore } from "../../src/limits/memory-counter-store.ts";
import { installRouteLimiters } from "../../src/limits/route-limiters.ts";
import { TrustedNetworks } from "../../src/limits/trusted-networks.ts";
import { USER_LIMITS, userLimit } from "../../src/limits/user-limits.ts";
import { MetricsRegistry } from "../../src/metrics/metrics-registry.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { MINUTE_START, testClock } from "./limit-fixtures.ts";

const MINUTE = 60_000;

// Stand-ins for the app API's routes: they declare the real entries of the spec's tables.
function addressRoutes(app: FastifyInstance): void {
  app.post("/test/auth/login", { config: addressLimit("login") }, async () => ({ ok: 1 }));
  app.post("/test/auth/register", { config: addressLimit("register") }, async () => ({ ok: 1 }));
  app.post("/test/auth/refresh", { config: addressLimit("refresh") }, async () => ({ ok: 1 }));
  app.get("/test/images/file/:name", { config: addressLimit("imageFile") }, async () => ({ ok: 1 }));
}

function testUser(id: string) {
  return { id, email: `${id}@example.com`, emailVerified: true, language: "it" as const };
}

function userRoutes(app: FastifyInstance): void {
  void app.register(async (scope) => {
    // The app API's authentication will set request.user; here a header names the user.
    scope.addHook("onRequest", async (request) => {
      const id = request.headers["x-test-user"];
      request.user = typeof id === "string" ? testUser(id) : null;
    });
    scope.post("/test/audio/transcribe", { config: userLimit("transcribe") }, async () => ({ ok: 1 }));
    scope.post("/test/audio/synthesize", { config: userLimit("synthesize") }, async () => ({ ok: 1 }));
    scope.post("/test/rag/kb/docs", { config: userLimit("knowledgeBaseDocs") }, async () => ({ ok: 1 }));
  });
  // A route whose own onRequest hook signs the user in: the limiter still runs after it.
  app.post(
    "/test/chat/messages",
    {
      config: userLimit("chatMessages"),
      onRequest: async (request) => {
        request.user = testUser(String(request.headers["x-test-user"]));
      },
    },
    async () => ({ ok: 1 }),
  );
}

const statuses = async (n: number, call: () => Promise<Response>) => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await call()).status);
  return out;
};

describe("Rate limits / Per address: counted per client address, window from the first request", () => {
  let t: TestApp;
  const clock = testClock();
  beforeAll(async () => {
    t = await startTestApp({
      config: {
        server: { trust_proxy: true },
        installation: { trusted_networks: ["10.0.0.0/8", "2001:db8::/32", "192.0.2.7"] },
      },
      now: clock.now,
      extend: addressRoutes,
    });
  });
  afterAll(() => t.close());

  const post = (path: string, from: string) =>
    t.fetch(`/test/auth/${path}`, { method: "POST", headers: { "x-forwarded-for": from } });

  it("the tables hold the spec's address limits: image links 120 own, auth 10 shared, refresh 60 own", () => {
    expect(ADDRESS_LIMITS).toEqual({
      imageFile: { counter: "image-file", limit: 120 },
      login: { counter: "auth", limit: 10 },
      register: { counter: "auth", limit: 10 },
      forgotPassword: { counter: "auth", limit: 10 },
      passwordResetConfirm: { counter: "auth", limit: 10 },
      refresh: { counter: "auth-refresh", limit: 60 },
    });
  });

  it("10 auth requests per minute, then 429 Too Many Attempts. with the four headers; the auth counter is shared", async () => {
    clock.set(MINUTE_START + 7_000);
    const from = "203.0.113.5";
    for (let i = 1; i <= 10; i++) {
      const response = await post(i % 2 ? "login" : "register", from);
      expect(response.status).toBe(200);
      expect(response.headers.get("x-ratelimit-limit")).toBe("10");
      expect(response.headers.get("x-ratelimit-remaining")).toBe(String(10 - i));
    }
    for (const path of ["login", "register"]) {
      const refused = await post(path, from);
      expect(refused.status).toBe(429);
      expect(await refused.text()).toBe('{"message":"Too Many Attempts."}');
      expect(refused.headers.get("retry-after")).toBe("60");
      expect(refused.headers.get("x-ratelimit-limit")).toBe("10");
      expect(refused.headers.get("x-ratelimit-remaining")).toBe("0");
      expect(refused.headers.get("x-ratelimit-reset")).toBe(String((MINUTE_START + 7_000 + MINUTE) / 1000));
    }
    expect((await post("refresh", from)).status).toBe(200); // its own counter
    expect((await post("login", "203.0.113.6")).status).toBe(200); // another address
    clock.set(MINUTE_START + 7_000 + MINUTE);
    expect((await post("login", from)).status).toBe(200);
  });

  it("image file links: 120 per minute on their own counter", async () => {
    clock.set(MINUTE_START + 10 * MINUTE);
    const get = () => t.fetch("/test/images/file/a.png", { headers: { "x-forwarded-for": "198.51.100.9" } });
    expect(new Set(await statuses(120, get))).toEqual(new Set([200]));
    const refused = await get();
    expect(refused.status).toBe(429);
    expect(refused.headers.get("x-ratelimit-limit")).toBe("120");
  });

  const trusted: Array<[string, string]> = [
    ["an IPv4 CIDR", "10.20.30.40"],
    ["an IPv6 CIDR", "2001:db8::42"],
    ["a bare address", "192.0.2.7"],
    ["an IPv4-mapped IPv6 address in an IPv4 CIDR", "::ffff:10.9.8.7"],
  ];
  for (const [what, from] of trusted) {
    it(`trusted networks get 20 times wider address limits: ${what} (${from})`, async () => {
      clock.set(MINUTE_START + 20 * MINUTE);
      const first = await post("login", from);
      expect(first.headers.get("x-ratelimit-limit")).toBe("200");
      expect(new Set(await statuses(199, () => post("login", from)))).toEqual(new Set([200]));
      const refused = await post("login", from);
      expect(refused.status).toBe(429);
      expect(refused.headers.get("x-ratelimit-limit")).toBe("200");
    });
  }

  it("an IPv4-mapped IPv6 address counts as its IPv4 address; a neighbour outside the networks gets 10", async () => {
    clock.set(MINUTE_START + 30 * MINUTE);
    expect((await post("login", "10.1.1.1")).headers.get("x-ratelimit-remaining")).toBe("199");
    expect((await post("login", "::ffff:10.1.1.1")).headers.get("x-ratelimit-remaining")).toBe("198");
    expect((await post("login", "11.1.1.1")).headers.get("x-ratelimit-limit")).toBe("10");
    expect((await post("login", "2001:db9::1")).headers.get("x-ratelimit-limit")).toBe("10");
  });
});

describe("Rate limits / Per address: a trusted network without a proxy (the connection's own address)", () => {
  const clock = testClock();
  const apps: Record<string, TestApp> = {};
  beforeAll(async () => {
    apps.trusted = await startTestApp({
      config: { installation: { trusted_networks: ["127.0.0.1"] } },
      now: clock.now,
      extend: addressRoutes,
    });
    apps.untrusted = await startTestApp({
      config: { installation: { trusted_networks: ["10.0.0.0/8"] } },
      now: clock.now,
      extend: addressRoutes,
    });
  });
  afterAll(async () => {
    await apps.trusted?.close();
    await apps.untrusted?.close();
  });

  it("127.0.0.1 trusted: the 11th login passes; not trusted: it gets 429", async () => {
    for (const [name, expected] of [
      ["trusted", 200],
      ["untrusted", 429],
    ] as const) {
      const app = apps[name];
      if (!app) throw new Error(name);
      const login = () => app.fetch("/test/auth/login", { method: "POST" });
      expect(new Set(await statuses(10, login))).toEqual(new Set([200]));
      expect((await login()).status).toBe(expected);
    }
  });
});

describe("Rate limits / App API per signed-in user: one shared counter, each call against its own limit", () => {
  let t: TestApp;
  const clock = testClock();
  beforeAll(async () => {
    t = await startTestApp({ now: clock.now, extend: userRoutes });
  });
  afterAll(() => t.close());

  const post = (path: string, user?: string) =>
    t.fetch(`/test/${path}`, { method: "POST", headers: user ? { "x-test-user": user } : {} });

  it("the table holds the spec's user limits, all on one counter", () => {
    expect(USER_LIMITS).toEqual({
      chatMessages: { counter: "user", limit: 30 },
      createKnowledgeBase: { counter: "user", limit: 30 },
      knowledgeBaseDocs: { counter: "user", limit: 10 },
      knowledgeBaseChat: { counter: "user", limit: 30 },
      transcribe: { counter: "user", limit: 30 },
      synthesize: { counter: "user", limit: 60 },
    });
  });

  it("docs stop at 10, transcribe and chat at 30, synthesize at 60, all counted on the one counter", async () => {
    clock.set(MINUTE_START);
    const user = "user-1";
    expect(new Set(await statuses(10, () => post("rag/kb/docs", user)))).toEqual(new Set([200]));
    const docs = await post("rag/kb/docs", user);
    expect(docs.status).toBe(429);
    expect(await docs.text()).toBe('{"message":"Too Many Attempts."}');
    expect(docs.headers.get("x-ratelimit-limit")).toBe("10");
    expect(docs.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(docs.headers.get("retry-after")).toBe("60");
    expect(docs.headers.get("x-ratelimit-reset")).toBe(String((MINUTE_START + MINUTE) / 1000));

    const transcribe = await post("audio/transcribe", user);
    expect(transcribe.status).toBe(200);
    expect(transcribe.headers.get("x-ratelimit-remaining")).toBe("19");
    expect(new Set(await statuses(10, () => post("audio/transcribe", user)))).toEqual(new Set([200]));
    expect(new Set(await statuses(9, () => post("chat/messages", user)))).toEqual(new Set([200]));
    expect((await post("audio/transcribe", user)).status).toBe(429);
    expect((await post("chat/messages", user)).status).toBe(429);
    expect(new Set(await statuses(30, () => post("audio/synthesize", user)))).toEqual(new Set([200]));
    expect((await post("audio/synthesize", user)).status).toBe(429);
  });

  it("each user has a counter of their own", async () => {
    clock.set(MINUTE_START + 10 * MINUTE);
    expect(new Set(await statuses(10, () => post("rag/kb/docs", "user-2")))).toEqual(new Set([200]));
    expect((await post("rag/kb/docs", "user-2")).status).toBe(429);
    expect((await post("rag/kb/docs", "user-3")).status).toBe(200);
  });

  it("a request with no signed-in user counts toward no user counter", async () => {
    const response = await post("audio/transcribe");
    expect(response.status).toBe(200);
    expect(response.headers.get("x-ratelimit-limit")).toBeNull();
  });

  it("a route cannot declare both an address and a user limit", async () => {
    const app = Fastify();
    installRouteLimiters(app, {
      store: new MemoryCounterStore(),
      now: () => new Date(),
      refused: new MetricsRegistry().counter("refused", "test"),
      trusted: new TrustedNetworks([]),
    });
    expect(() =>
      app.post("/test/both", { config: { ...addressLimit("login"), ...userLimit("transcribe") } }, () => 1),
    ).toThrow(/address limit or a user limit/);
    await app.close();
  });
});
