import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loggerOptions } from "../../src/http/logger.ts";
import { readJson } from "../helpers/read-json.ts";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../helpers/test-app.ts";

describe("What the service does: X-Request-Id on every response, the service's own value", () => {
  let t: TestApp;
  let key: string;
  const lines: string[] = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...String(chunk).split("\n").filter(Boolean));
        done();
      },
    });
    t = await startTestApp({
      logger: pino(loggerOptions("info"), sink),
      extend: (app) => {
        app.get("/test-boom", () => {
          throw new Error("boom");
        });
      },
    });
    key = (await t.newKey()).key;
  });
  afterAll(() => t.close());

  const requests: Array<{ name: string; path: string; init?: () => RequestInit; status: number }> = [
    {
      name: "200 models",
      path: "/v1/models",
      init: () => ({ headers: { authorization: `Bearer ${key}` } }),
      status: 200,
    },
    { name: "401 no key", path: "/v1/models", status: 401 },
    { name: "404 unknown endpoint", path: "/v1/assistants", status: 404 },
    { name: "404 outside every API", path: "/nowhere", status: 404 },
    { name: "500 unexpected failure", path: "/test-boom", status: 500 },
    {
      name: "401 operator API",
      path: "/admin/v1/accounts",
      init: () => ({ headers: { authorization: "Bearer wrong" } }),
      status: 401,
    },
    { name: "200 health", path: "/healthz", status: 200 },
  ];

  for (const { name, path, init, status } of requests) {
    it(`carries a fresh X-Request-Id (${name})`, async () => {
      const response = await t.fetch(path, init?.() ?? {});
      expect(response.status).toBe(status);
      expect(response.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{32}$/);
    });
  }

  it("ignores the client's X-Request-Id in the response and only logs it", async () => {
    const response = await t.fetch("/v1/models", {
      headers: { authorization: `Bearer ${key}`, "x-request-id": "client-chosen-id-42" },
    });
    const id = response.headers.get("x-request-id");
    expect(id).not.toBe("client-chosen-id-42");
    expect(id).toMatch(/^req_/);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const line = lines
      .map((l) => JSON.parse(l))
      .find((entry) => entry.request_id === id && entry.msg === "request");
    expect(line).toMatchObject({ client_request_id: "client-chosen-id-42", status: 200, path: "/v1/models" });
  });

  it("the error body's request_id is the header's value", async () => {
    const response = await t.fetch("/v1/models", { headers: { "x-request-id": "mine" } });
    const body = await readJson(response);
    expect(body.error.request_id).toBe(response.headers.get("x-request-id"));
  });

  it("every request gets its own id", async () => {
    const ids = await Promise.all(
      Array.from({ length: 20 }, async () => (await t.fetch("/healthz")).headers.get("x-request-id")),
    );
    expect(new Set(ids).size).toBe(20);
  });

  it("never logs API keys, the admin token or passwords", async () => {
    await t.admin("POST", "/accounts", { email: "logs@example.com", password: "a-very-secret-pass" });
    await t.fetch("/v1/models", { headers: { authorization: `Bearer ${key}` } });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const all = lines.join("\n");
    expect(all).not.toContain(key);
    expect(all).not.toContain(key.slice(3, 20));
    expect(all).not.toContain(ADMIN_TOKEN);
    expect(all).not.toContain("a-very-secret-pass");
  });

  it("logs an unexpected failure with its request id", async () => {
    const response = await t.fetch("/test-boom");
    const id = response.headers.get("x-request-id");
    await new Promise((resolve) => setTimeout(resolve, 20));
    const entry = lines.map((l) => JSON.parse(l)).find((e) => e.request_id === id && e.level === 50);
    expect(entry?.err?.message).toBe("boom");
  });
});
