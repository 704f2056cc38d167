import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawRequest } from "../helpers/raw-http.ts";
import { readJson } from "../helpers/read-json.ts";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../helpers/test-app.ts";

const MB = 1024 * 1024;

describe("Errors / Shapes and Endpoints: 404 unknown_endpoint, 413 HTML, 500 Server Error", () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await startTestApp({
      extend: (app) => {
        app.get("/test-boom", () => {
          const error = new Error("connect ECONNREFUSED 10.1.2.3:5432 at /srv/zona/secret.ts") as Error & {
            statusCode?: number;
          };
          throw error;
        });
      },
    });
    key = (await t.newKey()).key;
  });
  afterAll(() => t.close());

  const auth = () => ({ authorization: `Bearer ${key}` });

  // Spec "Endpoints": unsupported features answer 404 unknown_endpoint, and /v1/rag/... does not exist.
  const unsupported: Array<[string, string]> = [
    ["POST", "/v1/assistants"],
    ["GET", "/v1/assistants/asst_1"],
    ["POST", "/v1/threads"],
    ["POST", "/v1/threads/thread_1/runs"],
    ["POST", "/v1/batches"],
    ["GET", "/v1/files"],
    ["POST", "/v1/files"],
    ["POST", "/v1/fine_tuning/jobs"],
    ["POST", "/v1/images/edits"],
    ["POST", "/v1/images/variations"],
    ["POST", "/v1/videos/video_1/remix"],
    ["POST", "/v1/videos/edits"],
    ["POST", "/v1/videos/extensions"],
    ["POST", "/v1/videos/characters"],
    ["POST", "/v1/audio/translations"],
    ["POST", "/v1/moderations"],
    ["GET", "/v1/realtime"],
    ["POST", "/v1/realtime/sessions"],
    ["POST", "/v1/vector_stores"],
    ["GET", "/v1/rag/kb"],
    ["POST", "/v1/rag/kb/docs/chat"],
    ["GET", "/v2/models"],
  ];

  for (const [method, path] of unsupported) {
    it(`404 unknown_endpoint for an unsupported feature: ${method} ${path}`, async () => {
      for (const headers of [auth(), {}]) {
        const response = await t.fetch(path, { method, headers });
        expect(response.status).toBe(404);
        const body = await readJson(response);
        expect(body).toEqual({
          error: {
            message: expect.stringContaining(`${method} ${path}`),
            type: "invalid_request_error",
            code: "unknown_endpoint",
            param: null,
            request_id: response.headers.get("x-request-id"),
          },
        });
      }
    });
  }

  for (const method of ["POST", "PUT", "PATCH", "DELETE"]) {
    it(`404 unknown_endpoint, never 405, for a path that exists for another method: ${method} /v1/models`, async () => {
      const response = await t.fetch("/v1/models", { method, headers: auth() });
      expect(response.status).toBe(404);
      expect((await readJson(response)).error.code).toBe("unknown_endpoint");
    });
  }

  it("404 unknown_endpoint on the operator API for a wrong method", async () => {
    const response = await t.fetch("/admin/v1/accounts", {
      method: "DELETE",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(response.status).toBe(404);
    expect((await readJson(response)).error.code).toBe("unknown_endpoint");
  });

  it("app API shape 6 for an unknown app path: {error: {code, message}}", async () => {
    const response = await t.fetch("/api/v1/nothing-here");
    expect(response.status).toBe(404);
    expect(await readJson(response)).toEqual({
      error: { code: "unknown_endpoint", message: expect.stringContaining("/api/v1/nothing-here") },
    });
  });

  it("shape 4: an unexpected failure is 500 {message: 'Server Error'} and leaks nothing", async () => {
    const response = await t.fetch("/test-boom");
    expect(response.status).toBe(500);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({ message: "Server Error" });
    expect(text).not.toMatch(/ECONNREFUSED|secret|stack/);
    expect(response.headers.get("x-request-id")).toMatch(/^req_/);
  });

  it("shape 5: a request declaring more than 64 MB is refused with 413 HTML before the body is read", async () => {
    const response = await rawRequest(`${t.url}/admin/v1/accounts`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        "content-type": "application/json",
        "content-length": 64 * MB + 1,
      },
      chunk: Buffer.alloc(256 * 1024, 0x20),
      chunks: 8,
    });
    expect(response.status).toBe(413);
    expect(response.headers["content-type"]).toMatch(/^text\/html/);
    expect(response.body).toMatch(/<html[\s\S]*413/);
    expect(response.headers["x-request-id"]).toMatch(/^req_/);
  });

  it("shape 5: a chunked body that grows past 64 MB is cut off with 413 HTML, without buffering it all", async () => {
    const response = await rawRequest(`${t.url}/admin/v1/accounts`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        "content-type": "application/json",
        "transfer-encoding": "chunked",
      },
      chunk: Buffer.alloc(1 * MB, 0x20),
      chunks: 80,
    });
    expect(response.status).toBe(413);
    expect(response.headers["content-type"]).toMatch(/^text\/html/);
    expect(response.bytesSent).toBeLessThan(80 * MB);
  });

  it("a body of exactly 64 MB is not refused for its size", async () => {
    const response = await rawRequest(`${t.url}/admin/v1/accounts`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        "content-type": "application/json",
        "content-length": 64 * MB,
      },
      chunk: Buffer.alloc(1 * MB, 0x20),
      chunks: 64,
    });
    expect(response.status).toBe(400);
  });

  const malformed: Array<[string, string, string]> = [
    ["invalid JSON", "application/json", '{"email": "x@example.com",'],
    ["a JSON array", "application/json", "[1,2]"],
    ["a JSON string", "application/json", '"hello"'],
    ["no JSON content type (read as a form)", "text/plain", '{"email":"x@example.com"}'],
    ["an unknown content type", "application/octet-stream", "\u0000\u0001"],
    ["an empty body", "application/json", ""],
  ];
  for (const [name, contentType, body] of malformed) {
    it(`malformed bodies never give a 500: ${name} gives a 400 in the standard shape`, async () => {
      const response = await t.fetch("/admin/v1/accounts", {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": contentType },
        body,
      });
      expect(response.status).toBe(400);
      const json = await readJson(response);
      expect(json.error.type).toBe("invalid_request_error");
    });
  }

  it("a URL-encoded form is read as fields", async () => {
    const response = await t.fetch("/admin/v1/accounts", {
      method: "POST",
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "email=form%40example.com&email_verified=true",
    });
    expect(response.status).toBe(201);
    expect(await readJson(response)).toMatchObject({ email: "form@example.com", email_verified: true });
  });
});
