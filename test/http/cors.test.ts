import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAiServer } from "../fakes/index.ts";
import { readJson } from "../helpers/read-json.ts";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../helpers/test-app.ts";

const CHAT = "gemma3.8-27b";
const ALLOWED = "https://chat.example.com";
const OTHER = "https://evil.example.net";
const SDK_HEADERS = "authorization, content-type, x-stainless-os, x-stainless-retry-count";

function config(engineUrl: string, origins: string[]) {
  return {
    server: { cors_origins: origins },
    installation: { zones: [{ id: "ch" }], fallback_zone: "ch", content_checks: { ch: "none" } },
    models: [
      { id: CHAT, kind: "chat" },
      { id: "tts-1", kind: "tts" },
    ],
    machines: [
      { name: "gpu", zone: "ch", protocol: "openai", url: engineUrl, models: [CHAT] },
      { name: "speech", zone: "ch", protocol: "espeak", models: ["tts-1"] },
    ],
  };
}

const preflight = (
  t: TestApp,
  path: string,
  origin: string | undefined,
  headers: Record<string, string> = {},
) =>
  t.fetch(path, {
    method: "OPTIONS",
    headers: {
      ...(origin === undefined ? {} : { origin }),
      "access-control-request-method": "POST",
      "access-control-request-headers": SDK_HEADERS,
      ...headers,
    },
  });

function corsHeaders(response: Response): Record<string, string> {
  const found: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name.startsWith("access-control-")) found[name] = value;
  });
  return found;
}

describe("CORS is off by default", () => {
  const engine = new FakeOpenAiServer();
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    const started = await engine.start();
    t = await startTestApp({ config: config(started.url, []) });
    key = (await t.newKey()).key;
  });
  afterAll(async () => {
    await t.close();
    await engine.close();
  });

  it.each([
    "/v1/chat/completions",
    "/api/v1/chat/sessions",
  ])("a preflight to %s is 404 unknown_endpoint, with no CORS header", async (path) => {
    const response = await preflight(t, path, ALLOWED);
    expect(response.status).toBe(404);
    expect((await readJson(response)).error.code).toBe("unknown_endpoint");
    expect(corsHeaders(response)).toEqual({});
  });

  it("an answer to a request with an Origin has no CORS header", async () => {
    const response = await t.fetch("/v1/models", {
      headers: { origin: ALLOWED, authorization: `Bearer ${key}` },
    });
    expect(response.status).toBe(200);
    expect(corsHeaders(response)).toEqual({});
    expect(response.headers.get("vary")).toBeNull();
  });
});

describe("CORS for listed origins on the key API and the app API", () => {
  const engine = new FakeOpenAiServer();
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    const started = await engine.start();
    t = await startTestApp({
      config: {
        ...config(started.url, [ALLOWED, "http://localhost:5173"]),
        tiers: { slow: { multiplier: 1, requests_per_minute: 5 } },
      },
    });
    key = (await t.newKey()).key;
  });
  afterAll(async () => {
    await t.close();
    await engine.close();
  });

  const preflightPaths = [
    "/v1/chat/completions",
    "/v1/models/gemma2.5:1.5b",
    "/v1/audio/speech",
    "/v1",
    "/api/v1/chat/sessions",
    "/api/v1/auth/login",
  ];
  it.each(
    preflightPaths,
  )("a preflight from a listed origin to %s is 204 with the origin, methods, the asked headers and a max age", async (path) => {
    const response = await preflight(t, path, ALLOWED);
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
    const headers = corsHeaders(response);
    expect(headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(headers["access-control-allow-methods"]).toContain("POST");
    expect(headers["access-control-allow-methods"]).toContain("DELETE");
    expect(headers["access-control-allow-headers"]).toBe(
      "authorization, content-type, x-stainless-os, x-stainless-retry-count",
    );
    expect(Number(headers["access-control-max-age"])).toBeGreaterThan(0);
    expect(response.headers.get("vary")).toContain("Origin");
  });

  it("a listed origin matches whatever the case of its host", async () => {
    const response = await preflight(t, "/v1/models", "HTTP://LOCALHOST:5173");
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe("HTTP://LOCALHOST:5173");
  });

  it("preflights need no key and count toward no limit (12 to a route limited to 10 per address)", async () => {
    for (let i = 0; i < 12; i++) {
      expect((await preflight(t, "/api/v1/auth/login", ALLOWED)).status).toBe(204);
    }
    const login = await t.fetch("/api/v1/auth/login", {
      method: "POST",
      headers: { origin: ALLOWED, "content-type": "application/json" },
      body: JSON.stringify({ email: "nobody@example.com", password: "not the password" }),
    });
    expect(login.status).toBe(401);
    expect(login.headers.get("access-control-allow-origin")).toBe(ALLOWED);
  });

  it("a preflight from an origin not listed is 403 origin_not_allowed, with no CORS header", async () => {
    const response = await preflight(t, "/v1/chat/completions", OTHER);
    expect(response.status).toBe(403);
    expect((await readJson(response)).error).toMatchObject({ code: "origin_not_allowed" });
    expect(corsHeaders(response)).toEqual({});
  });

  it("an OPTIONS request that is no preflight (no Origin, or no Access-Control-Request-Method) is 404 unknown_endpoint", async () => {
    const withoutOrigin = await preflight(t, "/v1/chat/completions", undefined);
    expect(withoutOrigin.status).toBe(404);
    const plain = await t.fetch("/v1/chat/completions", { method: "OPTIONS", headers: { origin: ALLOWED } });
    expect(plain.status).toBe(404);
    expect((await readJson(plain)).error.code).toBe("unknown_endpoint");
  });

  it("the operator API has no CORS: a preflight there is 404, an answer carries no CORS header", async () => {
    const response = await preflight(t, "/admin/v1/accounts", ALLOWED);
    expect(response.status).toBe(404);
    expect(corsHeaders(response)).toEqual({});
    const answer = await t.fetch("/admin/v1/accounts", {
      headers: { origin: ALLOWED, authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(answer.status).toBe(200);
    expect(corsHeaders(answer)).toEqual({});
  });

  it("an answer to a listed origin carries the origin, Vary: Origin and the exposed headers", async () => {
    const response = await t.fetch("/v1/models", {
      headers: { origin: ALLOWED, authorization: `Bearer ${key}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    expect(response.headers.get("vary")).toContain("Origin");
    const exposed = (response.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(", ");
    for (const name of [
      "x-request-id",
      "x-zona",
      "x-ratelimit-limit",
      "x-ratelimit-remaining",
      "x-ratelimit-reset",
      "retry-after",
      "x-voice",
      "x-duration-seconds",
      "x-should-retry",
    ]) {
      expect(exposed).toContain(name);
    }
  });

  const errors: Array<[string, string, Record<string, string>, number]> = [
    ["401 of the key API (no key)", "/v1/models", {}, 401],
    ["404 unknown_endpoint", "/v1/assistants", {}, 404],
    ["401 of the app API", "/api/v1/chat/sessions", {}, 401],
  ];
  it.each(
    errors,
  )("an error answer to a listed origin carries the CORS headers too: %s", async (_n, path, h, status) => {
    const response = await t.fetch(path, { headers: { origin: ALLOWED, ...h } });
    expect(response.status).toBe(status);
    expect(response.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    expect(response.headers.get("access-control-expose-headers")).toContain("X-Request-Id");
  });

  it("a 429 to a listed origin carries them, so the page can read Retry-After", async () => {
    const own = (await t.newKey()).key;
    let last: Response | undefined;
    for (let i = 0; i < 6; i++) {
      last = await t.fetch("/v1/models", { headers: { origin: ALLOWED, authorization: `Bearer ${own}` } });
    }
    expect(last?.status).toBe(429);
    expect(last?.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    expect(last?.headers.get("retry-after")).not.toBeNull();
  });

  it("a server-sent event stream to a listed origin carries them", async () => {
    const response = await t.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { origin: ALLOWED, authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: CHAT, stream: true, messages: [{ role: "user", content: "hello" }] }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(response.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    expect(response.headers.get("vary")).toContain("Origin");
    expect(await response.text()).toContain("data: [DONE]");
  });

  it("an audio answer to a listed origin carries them", async () => {
    const response = await t.fetch("/v1/audio/speech", {
      method: "POST",
      headers: { origin: ALLOWED, authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tts-1", voice: "amy", input: "Hello.", response_format: "wav" }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^audio\//);
    expect(response.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(0);
  });

  it("an answer to an origin not listed, or without an Origin, carries no CORS header", async () => {
    for (const headers of [{ origin: OTHER }, {}]) {
      const response = await t.fetch("/v1/models", {
        headers: { ...headers, authorization: `Bearer ${key}` },
      });
      expect(response.status).toBe(200);
      expect(corsHeaders(response)).toEqual({});
    }
  });
});

describe("CORS with '*' allows every origin", () => {
  const engine = new FakeOpenAiServer();
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    const started = await engine.start();
    t = await startTestApp({ config: config(started.url, ["*"]) });
    key = (await t.newKey()).key;
  });
  afterAll(async () => {
    await t.close();
    await engine.close();
  });

  it("a preflight from any origin is 204 with Access-Control-Allow-Origin: *", async () => {
    const response = await preflight(t, "/v1/chat/completions", OTHER);
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("access-control-allow-headers")).toContain("x-stainless-os");
  });

  it("an answer to any origin carries Access-Control-Allow-Origin: *; one without an Origin none", async () => {
    const response = await t.fetch("/v1/models", {
      headers: { origin: OTHER, authorization: `Bearer ${key}` },
    });
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    const plain = await t.fetch("/v1/models", { headers: { authorization: `Bearer ${key}` } });
    expect(corsHeaders(plain)).toEqual({});
  });
});
